"""Windowed reductions: reduce_window (monoids with any init, generic and variadic regions)
and select_and_scatter (pooling gradients, any select/scatter region, padding).

Two oracles: StableHLO's reference interpreter (``stablehlo.eval_module``) for hand-written
programs, and JAX for values, ``jax.grad`` and ``jax.vmap`` of a small CNN-style pipeline.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

import hlopipe
from hlopipe.io._xla import compile_stablehlo, make_context

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)

F32, I32 = np.float32, np.int32
_rng = np.random.default_rng(0)


def _f(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(F32)


def _ties(*shape: int) -> np.ndarray:
    """Small integers as floats: windows with repeated maxima test tie-breaking."""
    return _rng.integers(-2, 3, shape).astype(F32)


class Case(NamedTuple):
    name: str
    body: str  # the body of @main, ending with the op whose results are %0
    sig: str
    args: tuple[np.ndarray, ...]
    # "reference": stablehlo.eval_module; "xla": the module compiled by XLA, where the
    # reference interpreter departs from the specification (select_and_scatter adds a non-zero
    # init value twice to every chosen element; the spec and XLA add it once), and where
    # rehydration gives XLA's answer and the specification another (reduce_window with a
    # non-neutral init value and padding or base dilation: XLA skips padded positions and
    # holes, the specification reduces the init value there)
    oracle: str = "reference"


def _binary(op: str, t: str) -> str:
    return (
        f"({{\n ^bb0(%p: tensor<{t}>, %q: tensor<{t}>):\n"
        f"  %r = {op} %p, %q : tensor<{t}>\n  stablehlo.return %r : tensor<{t}>\n }})"
    )


def _select(direction: str, t: str, ctype: str = "FLOAT") -> str:
    return (
        f"({{\n ^bb0(%p: tensor<{t}>, %q: tensor<{t}>):\n"
        f"  %r = stablehlo.compare {direction}, %p, %q, {ctype} "
        f": (tensor<{t}>, tensor<{t}>) -> tensor<i1>\n"
        "  stablehlo.return %r : tensor<i1>\n })"
    )


# (value, index) pairs: keep the larger value, the smaller index on ties
_ARGMAX = """({
 ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
  %gt = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %eq = stablehlo.compare EQ, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %lt = stablehlo.compare LT, %ai, %bi : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %tie = stablehlo.and %eq, %lt : tensor<i1>
  %first = stablehlo.or %gt, %tie : tensor<i1>
  %r = stablehlo.select %first, %a, %b : tensor<i1>, tensor<f32>
  %ri = stablehlo.select %first, %ai, %bi : tensor<i1>, tensor<i32>
  stablehlo.return %r, %ri : tensor<f32>, tensor<i32>
 })"""

# acc * 2 + x: neither associative nor commutative in general, but exact on these inputs
_AFFINE = """({
 ^bb0(%p: tensor<f32>, %q: tensor<f32>):
  %two = stablehlo.constant dense<2.0> : tensor<f32>
  %m = stablehlo.multiply %p, %two : tensor<f32>
  %r = stablehlo.add %m, %q : tensor<f32>
  stablehlo.return %r : tensor<f32>
 })"""


def _rw(attrs: str, region: str, types: str, operands: str = "%x, %v", n: int = 1) -> str:
    results = "%0" if n == 1 else f"%0:{n}"
    return f'{results} = "stablehlo.reduce_window"({operands}) <{{{attrs}}}> {region} : {types}\n'


def _sas(attrs: str, select: str, scatter: str, types: str) -> str:
    return (
        f'%0 = "stablehlo.select_and_scatter"(%x, %s, %v) <{{{attrs}}}> '
        f"({select[1:-1]}, {scatter[1:-1]}) : {types}\n"
    )


_ALL = (
    "window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 1>, "
    "base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 2>, "
    "padding = dense<[[1, 0], [2, 1]]> : tensor<2x2xi64>"
)
_RW_T = "(tensor<4x5xf32>, tensor<f32>) -> tensor<4x4xf32>"
_SAS_PAD = (
    "window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 2, 2>, "
    "padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>"
)

CASES = [
    Case(
        "reduce_window_add_init_dilations_padding",
        _rw(_ALL, _binary("stablehlo.add", "f32"), _RW_T),
        "(%x: tensor<4x5xf32>, %v: tensor<f32>) -> tensor<4x4xf32>",
        (_f(4, 5), np.array(1.5, F32)),
        oracle="xla",
    ),
    Case(
        "reduce_window_max_init_above_values",
        _rw(_ALL, _binary("stablehlo.maximum", "f32"), _RW_T),
        "(%x: tensor<4x5xf32>, %v: tensor<f32>) -> tensor<4x4xf32>",
        (_f(4, 5), np.array(0.25, F32)),
    ),
    Case(
        "reduce_window_min_identity_constant",
        "%v = stablehlo.constant dense<0x7F800000> : tensor<f32>\n"
        + _rw(_ALL, _binary("stablehlo.minimum", "f32"), _RW_T),
        "(%x: tensor<4x5xf32>) -> tensor<4x4xf32>",
        (_f(4, 5),),
    ),
    Case(
        "reduce_window_mul_int_padding",
        _rw(
            "window_dimensions = array<i64: 3>, padding = dense<[[2, 1]]> : tensor<1x2xi64>",
            _binary("stablehlo.multiply", "i32"),
            "(tensor<6xi32>, tensor<i32>) -> tensor<7xi32>",
        ),
        "(%x: tensor<6xi32>, %v: tensor<i32>) -> tensor<7xi32>",
        (np.array([3, -2, 5, 1, 7, -1], I32), np.array(2, I32)),
        oracle="xla",
    ),
    Case(
        "reduce_window_or_bool",
        _rw(
            "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 2>",
            _binary("stablehlo.or", "i1"),
            "(tensor<3x4xi1>, tensor<i1>) -> tensor<2x2xi1>",
        ),
        "(%x: tensor<3x4xi1>, %v: tensor<i1>) -> tensor<2x2xi1>",
        (_rng.random((3, 4)) < 0.3, np.array(False)),
    ),
    Case(
        "reduce_window_int8_sum_wraps",
        _rw(
            "window_dimensions = array<i64: 4>",
            _binary("stablehlo.add", "i8"),
            "(tensor<6xi8>, tensor<i8>) -> tensor<3xi8>",
        ),
        "(%x: tensor<6xi8>, %v: tensor<i8>) -> tensor<3xi8>",
        (np.array([100, 100, -100, 27, 90, 1], np.int8), np.array(5, np.int8)),
    ),
    Case(
        "reduce_window_variadic_argmax",
        _rw(
            "window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 1, 2>, "
            "padding = dense<[[0, 1], [1, 1]]> : tensor<2x2xi64>",
            _ARGMAX,
            "(tensor<3x5xf32>, tensor<3x5xi32>, tensor<f32>, tensor<i32>) "
            "-> (tensor<3x3xf32>, tensor<3x3xi32>)",
            "%x, %i, %v, %w",
            2,
        ),
        "(%x: tensor<3x5xf32>, %i: tensor<3x5xi32>, %v: tensor<f32>, %w: tensor<i32>) "
        "-> (tensor<3x3xf32>, tensor<3x3xi32>)",
        (
            _ties(3, 5),
            np.arange(15, dtype=I32).reshape(3, 5),
            np.array(-np.inf, F32),
            np.array(-1, I32),
        ),
    ),
    Case(
        "reduce_window_affine_region",
        _rw(
            "window_dimensions = array<i64: 3>, window_strides = array<i64: 3>",
            _AFFINE,
            "(tensor<6xf32>, tensor<f32>) -> tensor<2xf32>",
        ),
        "(%x: tensor<6xf32>, %v: tensor<f32>) -> tensor<2xf32>",
        (np.array([1, 0, 0, 0, 0, 0], F32), np.array(0, F32)),
    ),
    Case(
        "select_and_scatter_ge_add",
        _sas(
            "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>",
            _select("GE", "f32"),
            _binary("stablehlo.add", "f32"),
            "(tensor<4x6xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<4x6xf32>",
        ),
        "(%x: tensor<4x6xf32>, %s: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<4x6xf32>",
        (_ties(4, 6), _f(2, 3), np.array(0.5, F32)),
        "xla",
    ),
    Case(
        "select_and_scatter_le_overlapping",
        _sas(
            "window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 1, 1>",
            _select("LE", "f32"),
            _binary("stablehlo.add", "f32"),
            "(tensor<4x5xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<4x5xf32>",
        ),
        "(%x: tensor<4x5xf32>, %s: tensor<2x4xf32>, %v: tensor<f32>) -> tensor<4x5xf32>",
        (_ties(4, 5), _f(2, 4), np.array(0, F32)),
    ),
    Case(
        "select_and_scatter_ge_padding",
        _sas(
            _SAS_PAD,
            _select("GE", "f32"),
            _binary("stablehlo.add", "f32"),
            "(tensor<5x6xf32>, tensor<3x3xf32>, tensor<f32>) -> tensor<5x6xf32>",
        ),
        "(%x: tensor<5x6xf32>, %s: tensor<3x3xf32>, %v: tensor<f32>) -> tensor<5x6xf32>",
        # negative values: a padding value of 0 would win every border window
        (-np.abs(_f(5, 6)) - 1, _f(3, 3), np.array(0, F32)),
    ),
    Case(
        "select_and_scatter_gt_mul_int",
        _sas(
            _SAS_PAD,
            _select("GT", "i32", "SIGNED"),
            _binary("stablehlo.multiply", "i32"),
            "(tensor<5x6xi32>, tensor<3x3xi32>, tensor<i32>) -> tensor<5x6xi32>",
        ),
        "(%x: tensor<5x6xi32>, %s: tensor<3x3xi32>, %v: tensor<i32>) -> tensor<5x6xi32>",
        (
            _rng.integers(-2, 3, (5, 6)).astype(I32),
            _rng.integers(-3, 4, (3, 3)).astype(I32),
            np.array(1, I32),
        ),
    ),
    Case(
        "select_and_scatter_large_window_loop",
        _sas(
            "window_dimensions = array<i64: 5, 5>, window_strides = array<i64: 3, 3>, "
            "padding = dense<[[2, 2], [0, 1]]> : tensor<2x2xi64>",
            _select("GE", "f32"),
            _binary("stablehlo.add", "f32"),
            "(tensor<7x8xf32>, tensor<3x2xf32>, tensor<f32>) -> tensor<7x8xf32>",
        ),
        "(%x: tensor<7x8xf32>, %s: tensor<3x2xf32>, %v: tensor<f32>) -> tensor<7x8xf32>",
        (_ties(7, 8), _f(3, 2), np.array(0, F32)),
    ),
    Case(
        "select_and_scatter_window_all_padding",
        _sas(
            "window_dimensions = array<i64: 2>, window_strides = array<i64: 2>, "
            "padding = dense<[[3, 0]]> : tensor<1x2xi64>",
            _select("GE", "f32"),
            _binary("stablehlo.add", "f32"),
            "(tensor<3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>",
        ),
        "(%x: tensor<3xf32>, %s: tensor<3xf32>, %v: tensor<f32>) -> tensor<3xf32>",
        (_f(3), _f(3), np.array(0, F32)),
    ),
]


def _module(case: Case) -> str:
    body = "  " + case.body.replace("\n", "\n  ")
    out = case.sig.split("->", 1)[1].strip().strip("()")
    n = out.count("tensor<")
    values = ", ".join(f"%0#{k}" for k in range(n)) if n > 1 else "%0"
    return f"func.func @main{case.sig} {{\n{body}return {values} : {out}\n}}\n"


def _reference(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    with make_context():
        module = ir.Module.parse(text)
        attrs = [ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u") for a in args]
        return [np.asarray(r) for r in stablehlo.eval_module(module, attrs)]


def _xla(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    exe = compile_stablehlo(text.replace("func.func @main", "func.func public @main"))
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


def _as_list(out: Any) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, tuple | list) else (out,))]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_against_reference_interpreter(case: Case) -> None:
    text = _module(case)
    want = (_reference if case.oracle == "reference" else _xla)(text, case.args)
    fn = hlopipe.load(text).as_function()
    for got in (_as_list(fn(*case.args)), _as_list(jax.jit(fn)(*case.args))):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


# ---- JAX as the oracle: a CNN-style pipeline, its gradient and vmap --------------------------


def _cnn(x: Any, w1: Any, w2: Any) -> Any:
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
    y = jnp.tanh(y)
    # max pool 3x3 stride 2 with SAME padding, then average pool 2x2
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    y = lax.conv_general_dilated(
        y, w2, (2, 1), [(1, 0), (0, 1)], rhs_dilation=(1, 2), dimension_numbers=dn
    )
    y = lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID") / 4.0
    return jnp.sum(y**2, axis=(1, 2, 3))


def _pool_only(x: Any) -> Any:
    m = lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID")
    n = lax.reduce_window(x, jnp.inf, lax.min, (3, 2), (1, 1), [(1, 1), (0, 1)])
    return jnp.sum(m**2) + jnp.sum(jnp.sin(n))


def test_cnn_pipeline_values_grad_vmap() -> None:
    x, w1, w2 = _f(2, 9, 8, 3), _f(3, 3, 3, 4) * 0.3, _f(2, 3, 4, 5) * 0.3
    text = jax.jit(_cnn).lower(x, w1, w2).as_text()
    fn = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.jit(fn)(x, w1, w2), _cnn(x, w1, w2), rtol=1e-5, atol=1e-6)

    def loss(f: Any) -> Any:
        return lambda *a: jnp.sum(f(*a))

    want = jax.grad(loss(_cnn), argnums=(0, 1, 2))(x, w1, w2)
    got = jax.jit(jax.grad(loss(fn), argnums=(0, 1, 2)))(x, w1, w2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(fn, (0, None, None)))(xs, w1, w2),
        jax.vmap(_cnn, (0, None, None))(xs, w1, w2),
        rtol=1e-5,
        atol=1e-5,
    )


def test_pooling_gradient_program_rehydrates() -> None:
    # the gradient program itself (select_and_scatter, pads) rehydrated, and differentiated
    # once more (second order through the rehydrated select_and_scatter)
    x = _ties(6, 5) + 0.01 * _f(6, 5)
    grad = jax.grad(_pool_only)
    text = jax.jit(grad).lower(x).as_text()
    assert "select_and_scatter" in text
    fn = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.jit(fn)(x), grad(x), rtol=1e-5, atol=1e-6)
    v = _f(6, 5)
    hvp_want = jax.jvp(grad, (x,), (v,))[1]
    hvp_got = jax.jit(lambda x, v: jax.jvp(fn, (x,), (v,))[1])(x, v)
    np.testing.assert_allclose(hvp_got, hvp_want, rtol=1e-4, atol=1e-5)


def test_general_select_and_scatter_gradient() -> None:
    # a GT select (not JAX's GE) takes the general path: still differentiable in the source
    case = CASES[[c.name for c in CASES].index("select_and_scatter_ge_padding")]
    text = _module(case).replace("compare GE", "compare GT")
    fn = jax.jit(hlopipe.load(text).as_function())
    x, s, v = case.args

    def f(s: Any) -> Any:
        return jnp.sum(jnp.sin(fn(x, s, v)))

    got = jax.jit(jax.grad(f))(s)
    out0 = fn(x, np.zeros_like(s), v)
    # d/ds sum(sin(out)) = cos(out) at each window's chosen position
    cos = jnp.cos(fn(x, s, v))
    want = [
        jnp.sum(cos * (fn(x, np.eye(9, dtype=F32)[k].reshape(3, 3), v) - out0)) for k in range(9)
    ]
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-5, atol=1e-6)
