"""The cost model against closed forms derived here from shapes, and its caches' lifetimes."""

from __future__ import annotations

import gc
import math
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from hlopipe.marker import stage_boundary
from hlopipe.stages._cost import eqn_cost, jaxpr_cost
from hlopipe.stages._jaxpr import contains_marker

F32 = 4  # bytes per float32 element


def _one_eqn(fn, *args, primitive):
    closed = jax.make_jaxpr(fn)(*args)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == primitive]
    return eqn


def _zeros(*shape):
    return jnp.zeros(shape, jnp.float32)


def test_dot_general_batched_with_two_contracting_dims():
    b, m, k1, k2, n = 3, 5, 7, 2, 11
    lhs, rhs = _zeros(b, m, k1, k2), _zeros(b, k1, k2, n)
    dims = (((2, 3), (1, 2)), ((0,), (0,)))
    eqn = _one_eqn(lambda x, y: lax.dot_general(x, y, dims), lhs, rhs, primitive="dot_general")
    flops, nbytes = eqn_cost(eqn)
    # one multiply and one add per (batch, row, column, contracted pair)
    assert flops == 2 * b * m * n * k1 * k2
    assert nbytes == F32 * (b * m * k1 * k2 + b * k1 * k2 * n + b * m * n)


def test_dot_general_plain_matmul_and_vector():
    m, k, n = 4, 9, 6
    eqn = _one_eqn(jnp.matmul, _zeros(m, k), _zeros(k, n), primitive="dot_general")
    assert eqn_cost(eqn) == (2 * m * k * n, F32 * (m * k + k * n + m * n))
    eqn = _one_eqn(jnp.dot, _zeros(k), _zeros(k), primitive="dot_general")
    assert eqn_cost(eqn) == (2 * k, F32 * (k + k + 1))


def _out_len(size, k, stride, lo, hi, dilation=1):
    return (size + lo + hi - (dilation * (k - 1) + 1)) // stride + 1


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_convolution_nchw_groups_strides_padding(groups):
    n, c, h, w = 2, 6, 11, 9
    o, kh, kw = 12, 3, 2
    strides, padding = (2, 1), ((1, 2), (0, 1))
    lhs, rhs = _zeros(n, c, h, w), _zeros(o, c // groups, kh, kw)

    def f(x, k):
        return lax.conv_general_dilated(
            x, k, strides, padding, feature_group_count=groups,
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )  # fmt: skip

    eqn = _one_eqn(f, lhs, rhs, primitive="conv_general_dilated")
    ho = _out_len(h, kh, 2, 1, 2)
    wo = _out_len(w, kw, 1, 0, 1)
    assert eqn.outvars[0].aval.shape == (n, o, ho, wo)
    flops, nbytes = eqn_cost(eqn)
    # each output element sums (C / groups) * kh * kw products: a multiply and an add each
    assert flops == 2 * n * o * ho * wo * (c // groups) * kh * kw
    assert nbytes == F32 * (n * c * h * w + o * (c // groups) * kh * kw + n * o * ho * wo)


def test_convolution_channels_last_kernel_hwio():
    # The output feature dimension of the kernel is last here: a model that took dim 0 as the
    # output features would count kh * (C/G) * O per output instead of kh * kw * (C/G).
    n, h, w, c, o, kh, kw, groups = 1, 8, 8, 4, 10, 3, 5, 2
    lhs, rhs = _zeros(n, h, w, c), _zeros(kh, kw, c // groups, o)

    def f(x, k):
        return lax.conv_general_dilated(
            x, k, (1, 1), "SAME", feature_group_count=groups,
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )  # fmt: skip

    eqn = _one_eqn(f, lhs, rhs, primitive="conv_general_dilated")
    flops, _ = eqn_cost(eqn)
    assert flops == 2 * n * h * w * o * (c // groups) * kh * kw


def test_elementwise_reduction_movement_and_scan():
    x = _zeros(6, 5)
    closed = jax.make_jaxpr(lambda a: (jnp.sin(a), a.sum(), a.T))(x)
    costs = {e.primitive.name: eqn_cost(e) for e in closed.jaxpr.eqns}
    assert costs["sin"] == (30, F32 * 60)
    assert costs["reduce_sum"] == (30, F32 * 31)
    assert costs["transpose"] == (0, F32 * 60)

    def body(carry, _):
        return carry @ carry, None

    m, length = 8, 7
    closed = jax.make_jaxpr(lambda a: lax.scan(body, a, None, length=length)[0])(_zeros(m, m))
    flops, nbytes = jaxpr_cost(closed)
    assert flops == length * 2 * m**3
    assert nbytes == length * F32 * 3 * m * m


def _marked_jaxpr():
    def fn(a):
        a = jnp.sin(a) * 2.0
        return stage_boundary(a) + 1.0

    # fn dies on return: jax's own tracing cache holds the jaxpr only while fn lives
    return jax.make_jaxpr(fn)(np.float32(1.0))


def test_caches_do_not_keep_jaxprs_alive():
    closed = _marked_jaxpr()
    assert contains_marker(closed.jaxpr)
    assert jaxpr_cost(closed)[0] == 3
    assert jaxpr_cost(closed) == jaxpr_cost(closed.jaxpr)  # a cache hit answers the same
    ref = weakref.ref(closed.jaxpr)
    del closed
    gc.collect()
    assert ref() is None, "a module-level cache still holds the jaxpr"


def test_flops_scale_with_sizes_not_a_constant():
    sizes = [(2, 3, 4), (5, 7, 9)]
    got = []
    for m, k, n in sizes:
        eqn = _one_eqn(jnp.matmul, _zeros(m, k), _zeros(k, n), primitive="dot_general")
        got.append(eqn_cost(eqn)[0])
    assert got == [2 * math.prod(s) for s in sizes]
