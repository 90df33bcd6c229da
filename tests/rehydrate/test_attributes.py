"""Attributes a rule does not know (issue 11, item 2): discardable ones are dropped in one place
for every op, the ones that may change what an op computes are refused by name."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import UnsupportedOpError

# As TensorFlow and XLA's own tests write HLO: frontend attributes, instruction shardings,
# metadata and a dot algorithm on ordinary instructions.
HLO = """HloModule m, entry_computation_layout={(f32[2,3]{1,0}, f32[3,4]{1,0})->f32[2,4]{1,0}}

ENTRY main {
  a = f32[2,3]{1,0} parameter(0), sharding={replicated}
  b = f32[3,4]{1,0} parameter(1)
  d = f32[2,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0},
    frontend_attributes={_xla_x="1"}, sharding={replicated}, algorithm=dot_f32_f32_f32
  t = f32[2,4]{1,0} tanh(d), frontend_attributes={_xla_y="2"}, metadata={op_name="x"}
  ROOT e = f32[2,4]{1,0} add(t, d), frontend_attributes={foo="bar"}, sharding={maximal device=0}
}
"""

A = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
B = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def test_frontend_attributes_shardings_and_dot_algorithm_are_dropped() -> None:
    p = hlopipe.load(HLO.encode())
    text = p.to_text()
    assert "mhlo.frontend_attributes" in text and "algorithm" in text
    assert 'mhlo.sharding = "{replicated}"} :' in text  # on the dot itself
    f = hlopipe.rehydrate(p)
    d = A @ B
    np.testing.assert_allclose(jax.jit(f)(A, B), np.tanh(d) + d, rtol=1e-6)
    g = jax.grad(lambda a: f(a, B).sum())(A)
    np.testing.assert_allclose(g, (1 - np.tanh(d) ** 2 + 1) @ B.T, rtol=1e-5)


DISCARDABLE = """
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<3x2xf32> {
  %0 = chlo.broadcast_add %x, %y {broadcast_dimensions = array<i64: 1>, tf.device = "cpu:0",
        mhlo.original_value = "{x}"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] {mhlo.frontend_attributes = {a = "b"},
        some.dialect_attr = 3 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = stablehlo.reduce_precision %1, format = e8m23 {xla.hint = unit} : tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}
"""


def test_dialect_prefixed_attributes_are_dropped_for_every_op() -> None:
    f = hlopipe.rehydrate(DISCARDABLE)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(jax.jit(f)(x, y), (x + y).T)


UNKNOWN = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] {flip_signs = true}
    : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
"""


def test_unknown_attribute_that_may_change_values_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedOpError) as err:
        hlopipe.rehydrate(UNKNOWN)  # before anything runs
    msg = str(err.value)
    assert "stablehlo.transpose" in msg and "'flip_signs'" in msg and "is not supported" in msg
    assert ":3" in msg or ":4" in msg  # the op's line
