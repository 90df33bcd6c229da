"""Linear algebra: the LAPACK custom calls JAX emits on CPU (through jnp.linalg, compared with
JAX itself, values and grad), and stablehlo.cholesky / triangular_solve from hand-written
programs against numpy."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from hlopipe.rehydrate._rehydrate import rehydrate

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)
RNG = np.random.default_rng(0)


def _gen(dt: Any, shape: tuple[int, ...] = (2, 4, 4)) -> np.ndarray:
    a = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dt)


def _spd(dt: Any) -> np.ndarray:
    a = _gen(dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)).astype(dt)


class Case(NamedTuple):
    name: str
    fn: Any
    make: Any
    grad: bool = False


CASES = [
    Case("cholesky", jnp.linalg.cholesky, _spd, grad=True),
    Case("qr", jnp.linalg.qr, _gen),
    Case("eigh", jnp.linalg.eigh, _spd),
    Case("svd", jnp.linalg.svd, _gen),
    Case(
        "svd_reduced",
        lambda a: jnp.linalg.svd(a, full_matrices=False),
        lambda d: _gen(d, (2, 5, 3)),
    ),
    Case("svdvals", lambda a: jnp.linalg.svd(a, compute_uv=False), _gen),
    Case("lu_factor", jax.scipy.linalg.lu_factor, _gen),
    Case("eig", jnp.linalg.eig, _gen),
    Case("schur", lambda a: jax.scipy.linalg.schur(a[0]), _gen),
    Case("hessenberg", lambda a: jax.scipy.linalg.hessenberg(a[0]), _gen),
    Case("tridiagonal", lax.linalg.tridiagonal, _spd),
    Case(
        "tridiagonal_solve",
        lambda a: lax.linalg.tridiagonal_solve(a[0, 0], a[0, 1], a[0, 2], a[0]),
        _gen,
    ),
    Case(
        "trsm",
        lambda a: lax.linalg.triangular_solve(
            a, a[..., :2], left_side=True, lower=False, transpose_a=True, conjugate_a=True
        ),
        _spd,
    ),
]
DTYPES = [np.float64, np.complex64]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_lapack_targets(case: Case, dt: Any) -> None:
    a = case.make(dt)
    f = rehydrate(jax.jit(case.fn).lower(a).as_text())
    tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-10
    want = jax.tree.leaves(case.fn(a))
    for got in (jax.tree.leaves(f(a)), jax.tree.leaves(jax.jit(f)(a))):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
    if case.grad and dt == np.float64:  # (jnp.linalg.solve/inv add while loops: slow here)
        loss = lambda fn: lambda x: jnp.sum(jnp.sin(fn(x)))  # noqa: E731
        np.testing.assert_allclose(
            jax.grad(loss(f))(a), jax.grad(loss(case.fn))(a), rtol=1e-10, atol=1e-12
        )


def _chol_program(lower: bool) -> str:
    return f"""func.func @main(%a: tensor<3x3xf64>) -> tensor<3x3xf64> {{
      %0 = stablehlo.cholesky %a, lower = {str(lower).lower()} : tensor<3x3xf64>
      return %0 : tensor<3x3xf64>
    }}"""


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_op(lower: bool) -> None:
    a = _spd(np.float64)[0, :3, :3]
    got = np.asarray(rehydrate(_chol_program(lower))(a))
    want = np.linalg.cholesky(a)
    if lower:
        np.testing.assert_allclose(np.tril(got), want, rtol=1e-12)
    else:
        np.testing.assert_allclose(np.triu(got), want.T, rtol=1e-12)


@pytest.mark.parametrize("mode", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower,unit", [(True, False), (False, True)])
def test_triangular_solve_op(mode: str, left_side: bool, lower: bool, unit: bool) -> None:
    text = f"""func.func @main(%a: tensor<3x3xcomplex<f64>>, %b: tensor<3x3xcomplex<f64>>)
        -> tensor<3x3xcomplex<f64>> {{
      %0 = "stablehlo.triangular_solve"(%a, %b) {{left_side = {str(left_side).lower()},
        lower = {str(lower).lower()}, unit_diagonal = {str(unit).lower()},
        transpose_a = #stablehlo<transpose {mode}>}}
        : (tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>) -> tensor<3x3xcomplex<f64>>
      return %0 : tensor<3x3xcomplex<f64>>
    }}"""
    a = _gen(np.complex128, (3, 3)) + 3 * np.eye(3)
    b = _gen(np.complex128, (3, 3))
    x = np.asarray(rehydrate(text)(a, b))
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - np.diag(np.diag(t)) + np.eye(3)
    op = {"NO_TRANSPOSE": t, "TRANSPOSE": t.T, "ADJOINT": t.conj().T}[mode]
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, rtol=1e-10, atol=1e-10)


def test_einsum_ops() -> None:
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>)
        -> (tensor<2x4xf32>, tensor<3x2xf32>) {
      %0 = "stablehlo.einsum"(%a, %b) {einsum_config = "ij,jk->ik"}
           : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %1 = "stablehlo.unary_einsum"(%a) {einsum_config = "ij->ji"}
           : (tensor<2x3xf32>) -> tensor<3x2xf32>
      return %0, %1 : tensor<2x4xf32>, tensor<3x2xf32>
    }"""
    a, b = _gen(np.float32, (2, 3)), _gen(np.float32, (3, 4))
    mm, tr = rehydrate(text)(a, b)
    np.testing.assert_allclose(mm, a @ b, rtol=1e-5)
    np.testing.assert_array_equal(tr, a.T)


def test_int4_dot_general_widens_first():
    """i4 x i4 -> i32 (XLA on CPU rejects JAX's direct int4 dot with a wider result) and
    i4 x i4 -> i4 (wraps)."""
    import ml_dtypes

    a = np.array([[7, -8, 3], [1, 2, -1]], ml_dtypes.int4)
    b = np.array([[7, 1], [-8, 2], [3, 3]], ml_dtypes.int4)
    want = a.astype(np.int32) @ b.astype(np.int32)
    for out, expected in (("i32", want), ("i4", want.astype(np.int8) << 4 >> 4)):
        text = f"""func.func @main(%a: tensor<2x3xi4>, %b: tensor<3x2xi4>) -> tensor<2x2x{out}> {{
          %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
              : (tensor<2x3xi4>, tensor<3x2xi4>) -> tensor<2x2x{out}>
          return %r : tensor<2x2x{out}>
        }}"""
        got = jax.jit(rehydrate(text))(a, b)
        np.testing.assert_array_equal(np.asarray(got).astype(np.int32), expected)


# XLA's own Qr / ProductOfElementaryHouseholderReflectors custom calls (TensorFlow's Qr,
# MatrixInverse, MatrixSolve): LAPACK's compact form, differentiable.
XLA_QR = """
func.func @main(%a: tensor<2x{m}x{n}xf32>) -> (tensor<2x{m}x{n}xf32>, tensor<2x{m}x{n}xf32>) {{
  %t = stablehlo.custom_call @Qr(%a) : (tensor<2x{m}x{n}xf32>)
      -> tuple<tensor<2x{m}x{n}xf32>, tensor<2x{k}xf32>>
  %c = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2x{m}x{n}xf32>, tensor<2x{k}xf32>>)
      -> tensor<2x{m}x{n}xf32>
  %taus = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2x{m}x{n}xf32>, tensor<2x{k}xf32>>)
      -> tensor<2x{k}xf32>
  %q = stablehlo.custom_call @ProductOfElementaryHouseholderReflectors(%c, %taus)
      : (tensor<2x{m}x{n}xf32>, tensor<2x{k}xf32>) -> tensor<2x{m}x{n}xf32>
  return %c, %q : tensor<2x{m}x{n}xf32>, tensor<2x{m}x{n}xf32>
}}
"""


@pytest.mark.parametrize(("m", "n"), [(3, 3), (5, 3)])
def test_xla_qr_custom_calls_match_and_differentiate(m: int, n: int) -> None:
    import hlopipe

    f = hlopipe.load(XLA_QR.format(m=m, n=n, k=min(m, n))).as_function()
    a = np.random.default_rng(3).standard_normal((2, m, n)).astype(np.float32)
    compact, q = jax.jit(f)(a)
    q_ref, r_ref = jnp.linalg.qr(a)
    np.testing.assert_allclose(q, q_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jnp.triu(compact[:, :n]), r_ref, rtol=1e-4, atol=1e-5)
    ct_q = np.random.default_rng(4).standard_normal(q.shape).astype(np.float32)
    ct_r = np.random.default_rng(5).standard_normal(r_ref.shape).astype(np.float32)

    def loss(a):
        c, q = f(a)
        return (q * ct_q).sum() + (jnp.triu(c[:, :n]) * ct_r).sum()

    def ref(a):
        q, r = jnp.linalg.qr(a)
        return (q * ct_q).sum() + (r * ct_r).sum()

    got = jax.jit(jax.grad(loss))(a)
    np.testing.assert_allclose(got, jax.grad(ref)(a), rtol=2e-3, atol=2e-4)


def test_lapack_qr_custom_calls_differentiate() -> None:
    """``jnp.linalg.qr`` lowers to the LAPACK geqrf/orgqr custom calls on CPU; rehydrated,
    they differentiate like JAX's qr (JAX itself has no derivative of geqrf)."""
    import hlopipe

    def f(a):
        q, r = jnp.linalg.qr(a)
        return (q * jnp.arange(16.0).reshape(4, 4)).sum() + (r * r).sum()

    a = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    text = jax.jit(f).lower(a).as_text()
    assert "lapack_sgeqrf_ffi" in text
    g = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.grad(g)(a), jax.grad(f)(a), rtol=1e-3, atol=1e-4)


# XLA's own linear-algebra custom calls (PyTorch/XLA's inv, slogdet, eigh), in HLO text
_XLA_LINALG = """HloModule xla_linalg

ENTRY main {
  a = f32[2,4,4] parameter(0)
  qr = (f32[2,4,4], f32[2,4]) custom-call(a), custom_call_target="Qr"
  h = f32[2,4,4] get-tuple-element(qr), index=0
  taus = f32[2,4] get-tuple-element(qr), index=1
  q = f32[2,4,4] custom-call(h, taus), custom_call_target="ProductOfElementaryHouseholderReflectors"
  s = f32[2,4,4] parameter(1)
  eigh = (f32[2,4,4], f32[2,4]) custom-call(s), custom_call_target="Eigh",
    backend_config="1,1,100,0.000001"
  v = f32[2,4,4] get-tuple-element(eigh), index=0
  w = f32[2,4] get-tuple-element(eigh), index=1
  ROOT out = (f32[2,4,4], f32[2,4,4], f32[2,4,4], f32[2,4]) tuple(h, q, v, w)
}
"""


def test_xla_qr_eigh_custom_calls() -> None:
    import hlopipe

    f = hlopipe.load(_XLA_LINALG.encode()).as_function()
    a, s = _gen(np.float32), _spd(np.float32)
    h, q, v, w = jax.jit(f)(a, s)
    want_q, want_r = np.linalg.qr(a.astype(np.float64))
    # the same Householder reflections as LAPACK: Q and R with LAPACK's signs
    np.testing.assert_allclose(q, want_q, atol=1e-5)
    np.testing.assert_allclose(np.triu(h), want_r, atol=1e-5)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s.astype(np.float64)), rtol=1e-5)
    # eigenvectors: columns, each up to its sign
    np.testing.assert_allclose(v @ (w[..., None] * np.swapaxes(v, -1, -2)), s, atol=1e-4)
    # the eigenvalues differentiate (JAX's eigh), and so does the Householder QR
    g = jax.grad(lambda s: f(a, s)[3].sum())(s)
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(4), s.shape), atol=1e-5)
    g = jax.jit(jax.grad(lambda a: f(a, s)[1].sum()))(a)
    want = jax.grad(lambda a: jnp.linalg.qr(a)[0].sum())(a)
    np.testing.assert_allclose(g, want, rtol=2e-3, atol=2e-4)
