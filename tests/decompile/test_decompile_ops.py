"""Many lax ops in one program each, decompiled in both styles, against the rehydrated
program and the JAX function: every emitter writes a call that computes the same values,
with no more equations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from decompile_helpers import (
    as_tuple,
    assert_close,
    equations,
    from_source,
    program_of,
    ruff_errors,
)
from jax import lax

from hlopipe.decompile import decompile

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 6)).astype(np.float32)
P = (np.abs(A) + 0.5).astype(np.float32)
N = RNG.integers(-20, 20, (4, 6)).astype(np.int32)
IDX = np.array([[3], [0], [5]], np.int32)


def _elementwise(a, p, n):
    return (
        lax.erf(a),
        lax.expm1(a) + lax.log1p(p) + lax.atan2(a, p) + lax.pow(p, a) + lax.integer_pow(a, 3),
        lax.sign(a) + lax.round(a) + lax.floor(a) + lax.ceil(a) + lax.is_finite(a),
        lax.rem(n, 3) + lax.shift_left(n, 2) + lax.shift_right_arithmetic(n, 1),
        lax.population_count(n) + lax.clz(n),
        lax.reduce_precision(a, 5, 10),
        lax.bitcast_convert_type(a, jnp.int32),
        lax.clamp(-0.5, a, 0.5),
        lax.nextafter(a, p),
    )


def _shapes(a, n):
    return (
        lax.rev(a, (1,)),
        lax.pad(a, 1.5, [(1, 2, 1), (0, -1, 0)]),
        lax.concatenate([a, a * 2, a[:, :2]], 1),
        lax.dynamic_update_slice(a, a[:2, :3] * 3, (n[0, 0] % 3, 2)),
        lax.dynamic_slice(a, (n[1, 1] % 2, 1), (2, 3)),
        lax.broadcast_in_dim(a[:, 0], (3, 4, 2), (1,)),
        lax.squeeze(a[None, :1], (0,)),
        lax.expand_dims(a, (0, 2)),
        lax.iota(jnp.int32, 5) + lax.broadcasted_iota(jnp.int32, (5, 3), 0)[:, 0],
        jnp.split(a, [2, 5], axis=1)[1],
        lax.select_n(n % 3, a, a * 2, a * 3),
    )


def _reductions(a, n):
    return (
        a.prod(axis=1),
        a.min(axis=0),
        jnp.argmax(a, axis=1),
        jnp.argmin(a, axis=0),
        (a > 0).all(axis=1),
        (a > 0).any(axis=0),
        lax.cumsum(a, axis=1),
        lax.cummax(a, axis=0, reverse=True),
        lax.reduce_window(a, -jnp.inf, lax.max, (2, 2), (1, 2), "SAME"),
        lax.reduce_window(a, 0.0, lax.add, (2, 3), (2, 1), "VALID"),
        n.sum(axis=1),
        jnp.bitwise_xor.reduce(n, axis=0),
    )


def _indexing(a, idx):
    dn = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    return (
        a[idx[:, 0]],
        jnp.take_along_axis(a, jnp.argsort(a, axis=1), axis=1),
        lax.scatter_add(a, idx, jnp.ones((3, 6), a.dtype), dn),
        lax.scatter(a, idx, jnp.full((3, 6), 7.0, a.dtype), dn),
        lax.scatter_max(a, idx, jnp.full((3, 6), 0.3, a.dtype), dn),
        a.at[idx[:, 0], 2].set(-1.0),
        lax.sort((a, a * 2), dimension=1, num_keys=1),
        lax.top_k(a, 2),
    )


def _conv(x, w):
    return (
        lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        lax.conv_general_dilated(
            x,
            w,
            (2, 1),
            [(1, 0), (0, 1)],
            rhs_dilation=(1, 2),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        ),
    )


def _control(a, n):
    def body(c):
        i, x = c
        return i + 1, jnp.sin(x) + 0.1

    k, y = lax.while_loop(lambda c: c[0] < n[0, 0] % 5 + 2, body, (0, a))  # dynamic trips
    z = lax.cond(a.sum() > 0, lambda t: t * 2, lambda t: -t, y)
    s = lax.switch(n[0, 1] % 3, [jnp.sin, jnp.cos, lambda t: t], z)
    _, ys = lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(6), a, reverse=True)
    f = lax.fori_loop(0, 4, lambda i, t: t * 0.5 + i, a)
    return k, y, z, s, ys, f


CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    ("elementwise", _elementwise, (A, P, N)),
    ("shapes", _shapes, (A, N)),
    ("reductions", _reductions, (A, N)),
    ("indexing", _indexing, (A, IDX)),
    (
        "conv",
        _conv,
        (
            RNG.standard_normal((2, 5, 5, 3)).astype(np.float32),
            RNG.standard_normal((3, 3, 3, 4)).astype(np.float32),
        ),
    ),
    ("control", _control, (A, N)),
]


@pytest.mark.parametrize("style", ["lax", "jnp"])
@pytest.mark.parametrize(("name", "fn", "args"), CASES, ids=[c[0] for c in CASES])
def test_ops(
    name: str, fn: Callable[..., Any], args: tuple[Any, ...], style: str, tmp_path: Path
) -> None:
    prog = program_of(fn, *args)
    d = decompile(prog, style=style)
    assert ruff_errors(d.source, tmp_path) == ""
    g = from_source(d)
    want = jax.jit(prog.as_function())(*args)
    assert_close(as_tuple(jax.jit(g)(*args)), as_tuple(want), rtol=1e-6)
    assert_close(as_tuple(jax.jit(g)(*args)), jax.tree.leaves(jax.jit(fn)(*args)), rtol=1e-5)
    mine = equations(jax.make_jaxpr(g)(*args))
    theirs = equations(jax.make_jaxpr(prog.as_function())(*args))
    # (lax.slice of a whole array and the dynamic-loop guard write no equation)
    assert mine <= theirs


@pytest.mark.parametrize("fmt", ["jax-export", "hlo-opt"])
def test_fft_convolution_decompiles_and_runs(fmt: str) -> None:
    # a held-out FFT-based convolution crashed the generated code: fft_type (an IntEnum) was
    # written as a number, and lax's lowering reads its .name
    def conv(x, k):
        n = x.shape[-1] + k.shape[-1] - 1
        return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)

    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    k = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    if fmt == "jax-export":
        data = jax.export.export(jax.jit(conv))(x, k).serialize()
    else:
        data = jax.jit(conv).lower(x, k).compile().as_text().encode()
    src = decompile(data).source
    assert "lax.FftType.RFFT" in src and "lax.FftType.IRFFT" in src, src
    ns: dict = {}
    exec(src, ns)
    np.testing.assert_allclose(ns["main"](x, k), conv(x, k), rtol=1e-5, atol=1e-6)


def test_every_emitter_family_is_imported_by_the_package() -> None:
    # one module per primitive family under decompile/emitters/, each registered on import
    import pkgutil
    import sys

    from hlopipe.decompile import emitters

    families = [m.name for m in pkgutil.iter_modules(emitters.__path__)]
    assert len(families) >= 10, families
    missing = [n for n in families if f"hlopipe.decompile.emitters.{n}" not in sys.modules]
    assert missing == [], f"not imported in decompile/emitters/__init__.py: {missing}"
