"""``hlopipe.decompile(program)`` is the public way to decompile (docs/architecture.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import hlopipe


def test_hlopipe_decompile_is_callable_and_is_the_package():
    text = jax.jit(lambda x: jnp.tanh(x) * 2.0).lower(jnp.ones((3,))).as_text()
    prog = hlopipe.load(text)
    got = hlopipe.decompile(prog, style="lax")
    assert isinstance(got, hlopipe.decompile.Decompiled)
    assert "tanh" in got.source and got.source == prog.to_python(style="lax")
    assert "hlopipe.decompile" in repr(hlopipe.decompile)  # still the package
    assert "decompile" in dir(hlopipe)
