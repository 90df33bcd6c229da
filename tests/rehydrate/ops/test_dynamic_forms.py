"""The ``dynamic_*`` forms of ops with an integer attribute given as an operand
(``rehydrate._known.attributes_as_operands``): the static rule run with the operand's value,
its attributes still checked by name, and a value computed at run time refused."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import UnsupportedOpError


def _conv(pad_operand: str, extra: str = "") -> str:
    return f"""func.func @main(%lhs: tensor<1x1x5xf32>, %rhs: tensor<1x1x2xf32>,
        %p: tensor<1x2xi64>) -> tensor<1x1x3xf32> {{
      {pad_operand}
      %r = "stablehlo.dynamic_conv"(%lhs, %rhs, %pad) {{
        dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>,
        batch_group_count = 1 : i64, feature_group_count = 1 : i64,
        window_strides = array<i64: 2>, rhs_dilation = array<i64: 2>{extra}
      }} : (tensor<1x1x5xf32>, tensor<1x1x2xf32>, tensor<1x2xi64>) -> tensor<1x1x3xf32>
      return %r : tensor<1x1x3xf32>
    }}"""


CONSTANT = "%pad = stablehlo.constant dense<[[2, 0]]> : tensor<1x2xi64>"
LHS = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
RHS = np.array([[[1.0, -2.0]]], np.float32)
P = np.array([[2, 0]], np.int64)


def test_dynamic_conv_is_the_convolution_with_its_constant_padding() -> None:
    fn = hlopipe.rehydrate(_conv(CONSTANT))
    want = lax.conv_general_dilated(
        LHS, RHS, (2,), [(2, 0)], rhs_dilation=(2,), dimension_numbers=("NCH", "OIH", "NCH")
    )
    for f in (fn, jax.jit(fn)):
        np.testing.assert_array_equal(f(LHS, RHS, P), want)


def test_dynamic_conv_refuses_an_attribute_convolution_does_not_take() -> None:
    with pytest.raises(UnsupportedOpError, match=r"stablehlo\.dynamic_conv.*'flip'"):
        hlopipe.rehydrate(_conv(CONSTANT, ", flip = true"))


def test_dynamic_conv_refuses_padding_computed_at_run_time() -> None:
    fn = hlopipe.rehydrate(_conv("%pad = stablehlo.add %p, %p : tensor<1x2xi64>"))
    with pytest.raises(UnsupportedOpError, match="dynamic_conv with padding computed at run"):
        jax.jit(fn)(LHS, RHS, P)
