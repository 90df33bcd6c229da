"""Gather and scatter in JAX's default mode (64-bit types off), with the 64-bit indices
PyTorch and TensorFlow programs carry (test_slicing.py runs with 64-bit types on)."""

from __future__ import annotations

import jax
import numpy as np

import hlopipe

GATHER_S64 = """
ENTRY main {
  x = f32[4,6] parameter(0)
  i = s64[3] parameter(1)
  ROOT g = f32[4,3] gather(x, i), offset_dims={0}, collapsed_slice_dims={1},
    start_index_map={1}, index_vector_dim=1, slice_sizes={4,1}
}
"""


def test_gather_with_64_bit_indices_differentiates_in_default_mode() -> None:
    """PyTorch/TensorFlow index with s64; JAX transposes the gather outside the 64-bit scope
    the program runs in. Indices beyond int32 clamp as XLA's do."""
    assert not jax.config.read("jax_enable_x64")
    f = hlopipe.load(GATHER_S64).as_function()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    i = np.array([5, -(2**40), 2**40], np.int64)
    ct = np.arange(12, dtype=np.float32).reshape(4, 3)
    # (not through a jit of the caller's: JAX truncates int64 arguments at its boundary)
    np.testing.assert_array_equal(f(x, i), x[:, [5, 0, 5]])
    g = jax.grad(lambda x: (f(x, i) * ct).sum())(x)
    want = np.zeros_like(x)
    for col, j in enumerate([5, 0, 5]):
        want[:, j] += ct[:, col]
    np.testing.assert_array_equal(g, want)
