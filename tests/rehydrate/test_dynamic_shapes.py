"""Programs with dynamic shapes (``tensor<?x...>``): a shape-polymorphic jax.export artifact
rehydrates for every size its arguments come in (traced again per size), its shape
assertions checked; a dynamic result shape computed at run time is refused by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import hlopipe
from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate import rehydrate


def f(x):
    return jnp.tanh(x).sum(0) * x.shape[0], jnp.broadcast_to(x[:1], x.shape)


@pytest.fixture(scope="module")
def exported():
    (b,) = export.symbolic_shape("b")
    return export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 3), jnp.float32))


@pytest.mark.parametrize("form", ["text", "serialized"])
def test_shape_polymorphic_export_runs_at_each_size(exported, form):
    src = exported.mlir_module() if form == "text" else bytes(exported.serialize())
    assert "tensor<?x3xf32>" in exported.mlir_module()
    g = rehydrate(hlopipe.load(src))
    for n in (4, 2, 7):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / 5
        for got, want in zip(g(x), f(x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(RehydrateError, match="Expected value >= 1 for dimension variable 'b'"):
        g(np.zeros((0, 3), np.float32))
    with pytest.raises(RehydrateError, match=r"argument 0 is f32\[4,2\], expected f32\[\?,3\]"):
        g(np.zeros((4, 2), np.float32))


RUNTIME_SHAPE = """
func.func @main(%x: tensor<3xi64>) -> tensor<?xi32> {
  %s = stablehlo.slice %x [0:1] : (tensor<3xi64>) -> tensor<1xi64>
  %r = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi64>) -> tensor<?xi32>
  return %r : tensor<?xi32>
}
"""


def test_a_dynamic_shape_computed_at_run_time_is_refused():
    g = rehydrate(hlopipe.load(RUNTIME_SHAPE))
    with pytest.raises(UnsupportedOpError, match=r"stablehlo.dynamic_iota at .*run time"):
        g(np.array([2, 3, 4]))
