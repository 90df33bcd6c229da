"""Structural ops: reshape, broadcast, transpose, concatenate, iota, and XLA's layout bitcast."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe

CASES = [
    ("reshape", lambda x: x.reshape(4, 6)),
    ("transpose", lambda x: jnp.transpose(x, (2, 0, 1))),
    ("broadcast", lambda x: jnp.broadcast_to(x[:, None], (2, 5, 3, 4))),
    ("concatenate", lambda x: jnp.concatenate([x, 2 * x], axis=1)),
    ("iota", lambda x: x + jnp.arange(4.0)),
    ("reverse", lambda x: x[:, ::-1]),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, fn):
    x = jnp.arange(24.0).reshape(2, 3, 4)
    f = hlopipe.load(jax.jit(fn).lower(x).as_text()).as_function()
    np.testing.assert_array_equal(jax.jit(f)(x), fn(x))
    g = jax.grad(lambda x: (f(x) ** 2).sum())(x)
    np.testing.assert_allclose(g, jax.grad(lambda x: (fn(x) ** 2).sum())(x))


def _bitcast_module(src: str, dst: str) -> str:
    return f"""
func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {{
  %0 = mhlo.bitcast %x {{source_layout = dense<{src}> : tensor<2xindex>,
                        result_layout = dense<{dst}> : tensor<2xindex>}}
       : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}}"""


@pytest.mark.parametrize(
    "src,dst,expect",
    [
        # default layouts: the row-major buffer read as 3x2
        ("[1, 0]", "[1, 0]", lambda x: x.reshape(3, 2)),
        # a column-major operand: its buffer is x.T's rows
        ("[0, 1]", "[1, 0]", lambda x: x.T.reshape(-1).reshape(3, 2)),
        # a column-major result: the row-major buffer fills columns
        ("[1, 0]", "[0, 1]", lambda x: x.reshape(-1).reshape(2, 3).T),
    ],
)
def test_layout_bitcast(src, dst, expect):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = hlopipe.load(_bitcast_module(src, dst)).as_function()
    np.testing.assert_array_equal(f(x), expect(x))


def test_bitcast_in_compiled_hlo():
    def fn(x):
        return (jnp.transpose(x, (1, 0, 2)).reshape(6, 4) * 2).T

    x = jnp.arange(24.0).reshape(2, 3, 4)
    text = jax.jit(fn).lower(x).compile().as_text()
    f = hlopipe.load(text).as_function()
    np.testing.assert_array_equal(f(x), fn(x))


# TensorFlow's TopKV2 sets dimensions of static shapes to their own size.
SET_DIM = """
func.func @main(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %n = stablehlo.constant dense<SIZE> : tensor<i32>
  %y = stablehlo.set_dimension_size %x, %n, dim = 1
       : (tensor<4x6xf32>, tensor<i32>) -> tensor<4x6xf32>
  %z = stablehlo.sine %y : tensor<4x6xf32>
  return %z : tensor<4x6xf32>
}
"""


def test_set_dimension_size_to_the_static_size_is_a_no_op() -> None:
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    f = hlopipe.load(SET_DIM.replace("SIZE", "6")).as_function()
    np.testing.assert_allclose(jax.jit(f)(x), np.sin(x), rtol=1e-6)
    g = jax.grad(lambda x: f(x).sum())(x)
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-6)


def test_set_dimension_size_to_a_smaller_size_is_refused_by_name() -> None:
    f = hlopipe.load(SET_DIM.replace("SIZE", "3")).as_function()
    with pytest.raises(hlopipe.UnsupportedOpError, match=r"set_dimension_size at .* 6 to 3"):
        f(np.zeros((4, 6), np.float32))
