"""stablehlo.convolution: every attribute (layouts, strides, padding, dilations, window
reversal, feature and batch groups, preferred element type) against StableHLO's reference
interpreter, and JAX convolutions (grouped, transposed, 1-D/3-D) with grad and vmap.
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

F32 = np.float32
_rng = np.random.default_rng(0)


def _f(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(F32)


class Case(NamedTuple):
    name: str
    lhs: np.ndarray
    rhs: np.ndarray
    # (lhs spec, rhs spec, out spec) as in #stablehlo.conv, e.g. ("b01f", "01io", "b01f")
    specs: tuple[str, str, str]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    reversal: tuple[bool, ...]
    feature_groups: int = 1
    batch_groups: int = 1
    out_type: str = ""  # the result element type when it differs from the operands'
    # "reference": stablehlo.eval_module; "xla": the module compiled by XLA — for i8 x i8 ->
    # i32, which the reference interpreter computes in i8 (wrapping) before widening, where
    # XLA (and lax with preferred_element_type) accumulates in i32
    oracle: str = "reference"


_MLIR_T = {np.dtype(F32): "f32", np.dtype(np.int8): "i8", np.dtype(np.int32): "i32"}


def _t(shape: tuple[int, ...], et: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{et}>" if shape else f"tensor<{et}>"


def _arr(et: str, values: tuple) -> str:
    return f"array<{et}: {', '.join(values)}>" if values else f"array<{et}>"


def _spec(s: str) -> str:
    return "[" + ", ".join(s) + "]"


def _jax_specs(case: Case) -> lax.ConvDimensionNumbers:
    def pos(spec: str, a: str, b: str) -> tuple[int, ...]:
        spatial = sorted((c for c in spec if c.isdigit()), key=int)
        return (spec.index(a), spec.index(b), *(spec.index(c) for c in spatial))

    lhs, rhs, out = case.specs
    return lax.ConvDimensionNumbers(pos(lhs, "b", "f"), pos(rhs, "o", "i"), pos(out, "b", "f"))


def _jax_conv(case: Case, lhs: Any, rhs: Any) -> Any:
    spatial = [case.specs[1].index(c) for c in sorted(c for c in case.specs[1] if c.isdigit())]
    rev = tuple(d for d, r in zip(spatial, case.reversal, strict=True) if r)
    return lax.conv_general_dilated(
        lhs,
        lax.rev(rhs, rev) if rev else rhs,
        case.strides,
        case.padding,
        case.lhs_dilation,
        case.rhs_dilation,
        _jax_specs(case),
        case.feature_groups,
        case.batch_groups,
        preferred_element_type=jnp.int32 if case.out_type == "i32" else None,
    )


def _module(case: Case) -> str:
    et = _MLIR_T[case.lhs.dtype]
    out = jax.eval_shape(lambda a, b: _jax_conv(case, a, b), case.lhs, case.rhs)
    out_t = _t(out.shape, case.out_type or et)
    lhs_t, rhs_t = _t(case.lhs.shape, et), _t(case.rhs.shape, et)
    pad = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in case.padding) + "]"
    n = len(case.strides)
    rev = tuple("true" if r else "false" for r in case.reversal)
    return (
        f"func.func @main(%x: {lhs_t}, %w: {rhs_t}) -> {out_t} {{\n"
        f'  %0 = "stablehlo.convolution"(%x, %w) <{{'
        f"dimension_numbers = #stablehlo.conv<{_spec(case.specs[0])}x{_spec(case.specs[1])}"
        f"->{_spec(case.specs[2])}>, "
        f"feature_group_count = {case.feature_groups} : i64, "
        f"batch_group_count = {case.batch_groups} : i64, "
        f"window_strides = {_arr('i64', tuple(map(str, case.strides)))}, "
        + (f"padding = dense<{pad}> : tensor<{n}x2xi64>, " if n else "")  # absent: no padding
        + f"lhs_dilation = {_arr('i64', tuple(map(str, case.lhs_dilation)))}, "
        f"rhs_dilation = {_arr('i64', tuple(map(str, case.rhs_dilation)))}, "
        f"window_reversal = {_arr('i1', rev)}}}> : ({lhs_t}, {rhs_t}) -> {out_t}\n"
        f"  return %0 : {out_t}\n}}\n"
    )


CASES = [
    Case(
        "nhwc_all_window_attributes",
        _f(2, 7, 6, 3),
        _f(3, 2, 3, 4),
        ("b01f", "01io", "b01f"),
        (2, 1),
        ((1, 2), (0, 1)),
        (1, 2),
        (2, 1),
        (True, False),
    ),
    Case(
        "odd_layouts_feature_groups",
        _f(4, 5, 2),  # [f, 0, b]
        _f(3, 2, 6),  # [0, i, o]: 4 input features in 2 groups, 6 outputs
        ("f0b", "0io", "bf0"),
        (1,),
        ((2, 0),),
        (2,),
        (1,),
        (True,),
        feature_groups=2,
    ),
    Case(
        "batch_groups",
        _f(4, 3, 5, 5),  # NCHW, 4 = 2 batch groups of 2
        _f(6, 3, 2, 2),  # OIHW, 6 outputs = 2 groups of 3
        ("bf01", "oi01", "bf01"),
        (1, 2),
        ((0, 0), (1, 1)),
        (1, 1),
        (1, 1),
        (False, True),
        batch_groups=2,
    ),
    Case(
        "int8_to_int32",
        _rng.integers(-128, 128, (1, 6, 2)).astype(np.int8),
        _rng.integers(-128, 128, (3, 2, 2)).astype(np.int8),
        ("b0f", "0io", "b0f"),
        (1,),
        ((1, 1),),
        (1,),
        (1,),
        (False,),
        out_type="i32",
        oracle="xla",
    ),
    Case(
        "no_spatial_dims",
        _f(3, 4),
        _f(4, 5),
        ("bf", "io", "bf"),
        (),
        (),
        (),
        (),
        (),
    ),
]


def _reference(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    with make_context():
        module = ir.Module.parse(text)
        attrs = [ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u") for a in args]
        return [np.asarray(r) for r in stablehlo.eval_module(module, attrs)]


def _xla(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    exe = compile_stablehlo(text.replace("func.func @main", "func.func public @main"))
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_against_reference_interpreter(case: Case) -> None:
    text = _module(case)
    (want,) = (_reference if case.oracle == "reference" else _xla)(text, (case.lhs, case.rhs))
    fn = hlopipe.load(text).as_function()
    for got in (fn(case.lhs, case.rhs), jax.jit(fn)(case.lhs, case.rhs)):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- JAX as the oracle ----------------------------------------------------------------------


class JaxCase(NamedTuple):
    name: str
    fn: Any
    args: tuple[np.ndarray, ...]


JAX_CASES = [
    JaxCase(
        "depthwise_nhwc",
        lambda x, w: lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3
        ),
        (_f(2, 6, 5, 3), _f(3, 3, 1, 6)),
    ),
    JaxCase(
        "conv_transpose",
        lambda x, w: lax.conv_transpose(
            x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        ),
        (_f(1, 4, 3, 2), _f(3, 3, 2, 4)),
    ),
    JaxCase(
        "conv1d_dilated_ncw",
        lambda x, w: lax.conv_general_dilated(x, w, (2,), [(2, 1)], rhs_dilation=(2,)),
        (_f(2, 3, 11), _f(4, 3, 3)),
    ),
    JaxCase(
        "conv3d",
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1, 2), "VALID"),
        (_f(1, 2, 4, 4, 5), _f(3, 2, 2, 2, 2)),
    ),
]


@pytest.mark.parametrize("case", JAX_CASES, ids=[c.name for c in JAX_CASES])
def test_against_jax(case: JaxCase) -> None:
    text = jax.jit(case.fn).lower(*case.args).as_text()
    fn = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.jit(fn)(*case.args), case.fn(*case.args), rtol=1e-5, atol=1e-5)

    def loss(f: Any) -> Any:
        return lambda *a: jnp.sum(jnp.sin(f(*a)))

    want = jax.grad(loss(case.fn), argnums=(0, 1))(*case.args)
    got = jax.jit(jax.grad(loss(fn), argnums=(0, 1)))(*case.args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    x, w = case.args
    xs = np.stack([x, -x])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(fn, (0, None)))(xs, w),
        jax.vmap(case.fn, (0, None))(xs, w),
        rtol=1e-5,
        atol=1e-5,
    )
