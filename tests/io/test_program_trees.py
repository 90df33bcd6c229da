"""Program.arg_names and pytree-in/pytree-out functions of jax.export artifacts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import RehydrateError


def loss(params, batch):
    h = jnp.tanh(batch["x"] @ params["w"] + params["b"])
    return {"loss": jnp.mean((h - batch["y"]) ** 2), "h": h}


PARAMS = {"w": jnp.full((3, 2), 0.5, jnp.float32), "b": jnp.zeros((2,), jnp.float32)}
BATCH = {"x": jnp.arange(12.0, dtype=jnp.float32).reshape(4, 3) / 10, "y": jnp.ones((4, 2))}


@pytest.fixture(scope="module")
def exported() -> bytes:
    return bytes(jax.export.export(jax.jit(loss))(PARAMS, BATCH).serialize())


def test_jax_export_takes_and_returns_its_pytrees(exported) -> None:
    prog = hlopipe.load(exported)
    got = prog.as_function()(PARAMS, BATCH)
    want = loss(PARAMS, BATCH)
    assert set(got) == {"loss", "h"}
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-6)
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-6)
    g = jax.grad(lambda p: prog.as_function()(p, BATCH)["loss"])(PARAMS)
    g_want = jax.grad(lambda p: loss(p, BATCH)["loss"])(PARAMS)
    np.testing.assert_allclose(g["w"], g_want["w"], rtol=1e-5)
    flat = prog.as_function(flat=True)(*jax.tree.leaves((PARAMS, BATCH)))
    assert isinstance(flat, tuple) and len(flat) == 2  # leaves of {"h", "loss"}, sorted
    np.testing.assert_allclose(flat[1], want["loss"], rtol=1e-6)


def test_wrong_structure_names_both_trees(exported) -> None:
    f = hlopipe.load(exported).as_function()
    with pytest.raises(RehydrateError, match="flat=True"):
        f(PARAMS, [BATCH["x"], BATCH["y"]])


def test_arg_names_from_every_format(exported) -> None:
    assert hlopipe.load(exported).arg_names == ["[0]['b']", "[0]['w']", "[1]['x']", "[1]['y']"]
    low = jax.jit(loss).lower(PARAMS, BATCH)
    named = hlopipe.load(low.as_text(debug_info=True)).arg_names
    assert named == ["params['b']", "params['w']", "batch['x']", "batch['y']"]
    hlo = hlopipe.load(low.as_text(dialect="hlo")).arg_names
    assert hlo == ["params__b__", "params__w__", "batch__x__", "batch__y__"]
    text = (
        "HloModule m\nENTRY e {\n  Arg_0.1 = f32[2] parameter(0)\n"
        "  ROOT n = f32[2] negate(Arg_0.1)\n}\n"
    )
    assert hlopipe.load(text).arg_names == [None]
