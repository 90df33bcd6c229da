"""chlo rules: rehydrate what JAX lowers for each special function and compare with JAX
(values jitted and eager, grad, vmap); the broadcasting ops and mulhi from hand-written
programs."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from hlopipe.rehydrate._rehydrate import rehydrate

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)


class Case(NamedTuple):
    name: str
    fn: Any
    args: tuple[Any, ...]
    grad: bool = True


X = jnp.linspace(0.1, 0.9, 7)
Z = (X + 0.3j * X[::-1]).astype(jnp.complex128)
CASES = [
    Case("acos", lax.acos, (X,)),
    Case("acosh", lax.acosh, (X + 1.5,)),
    Case("asin", lax.asin, (X,), grad=False),
    Case("asinh", lax.asinh, (X,), grad=False),
    Case("atan", lax.atan, (X,), grad=False),
    Case("atanh", lax.atanh, (X,)),
    Case("cosh", lax.cosh, (X,)),
    Case("sinh", lax.sinh, (X,), grad=False),
    Case("acos_complex", lax.acos, (Z,), grad=False),
    Case("tan_complex", lax.tan, (Z,), grad=False),
    Case("erf", lax.erf, (X,), grad=False),
    Case("erfc", lax.erfc, (X,), grad=False),
    Case("erf_inv", lax.erf_inv, (X,)),
    Case("lgamma", lax.lgamma, (X * 5,)),
    Case("digamma", lax.digamma, (X * 5,), grad=False),
    Case("polygamma", lambda x: lax.polygamma(jnp.ones_like(x), x), (X * 5,), grad=False),
    Case("zeta", lambda x: lax.zeta(x + 2.0, x), (X,), grad=False),
    Case("bessel_i1e", lax.bessel_i1e, (X,), grad=False),
    Case("igamma", lambda x: lax.igamma(x * 3, x), (X,), grad=False),
    Case("betainc", lambda x: lax.betainc(x + 1, 2 * x + 1, x), (X,), grad=False),
    Case("next_after", lambda x: lax.nextafter(x, jnp.zeros_like(x)), (X,), grad=False),
    Case("square", lax.square, (X,), grad=False),
    Case("top_k", lambda x: lax.top_k(x, 3), (jnp.sin(jnp.arange(12.0)).reshape(3, 4),), False),
]


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree.leaves(x)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_against_jax(case: Case) -> None:
    f = rehydrate(jax.jit(case.fn).lower(*case.args).as_text())
    want = _leaves(case.fn(*case.args))
    for got in (_leaves(f(*case.args)), _leaves(jax.jit(f)(*case.args))):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    if case.grad:
        g_want = jax.grad(lambda *a: jnp.sum(case.fn(*a)))(*case.args)
        g_got = jax.grad(lambda *a: jnp.sum(f(*a)))(*case.args)
        np.testing.assert_allclose(g_got, g_want, rtol=1e-12)
        batch = jnp.stack([case.args[0], case.args[0] * 0.5])
        np.testing.assert_allclose(jax.vmap(f)(batch), jax.vmap(case.fn)(batch), rtol=1e-13)


def test_broadcasting_ops() -> None:
    text = """func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %s: tensor<f32>,
        %p: tensor<2x1xi1>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = chlo.broadcast_add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = chlo.broadcast_compare %x, %s {comparison_direction = #chlo<comparison_direction GT>}
           : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
      %2 = chlo.broadcast_select %p, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>)
           -> tensor<2x3xf32>
      %3 = chlo.broadcast_multiply %x, %y {broadcast_dimensions = array<i64: 1>}
           : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10.0, 20.0, 30.0], np.float32)
    p = np.array([[True], [False]])
    add, gt, sel, mul = rehydrate(text)(x, y, np.float32(2.5), p)
    np.testing.assert_array_equal(add, x + y)
    np.testing.assert_array_equal(gt, x > 2.5)
    np.testing.assert_array_equal(sel, np.where(p, x, y))
    np.testing.assert_array_equal(mul, x * y)


@pytest.mark.parametrize("t,dt", [("i32", np.int32), ("ui32", np.uint32), ("i8", np.int8)])
def test_mulhi(t: str, dt: Any) -> None:
    text = f"""func.func @main(%x: tensor<6x{t}>, %y: tensor<6x{t}>) -> tensor<6x{t}> {{
      %0 = "chlo.mulhi"(%x, %y) : (tensor<6x{t}>, tensor<6x{t}>) -> tensor<6x{t}>
      return %0 : tensor<6x{t}>
    }}"""
    info = np.iinfo(dt)
    x = np.array([info.min, info.max, -1 if info.min else 1, 7, info.max // 3, 0]).astype(dt)
    y = np.array([info.min, info.max, info.max, -5 if info.min else 5, 3, 9]).astype(dt)
    bits = info.bits
    want = np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y, strict=True)]).astype(dt)
    np.testing.assert_array_equal(rehydrate(text)(x, y), want)
