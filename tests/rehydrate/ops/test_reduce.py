"""Variadic reductions and their derivatives (issue 11, item 6).

JAX has no derivative for a variadic ``lax.reduce``; rehydration makes the selecting forms
(arg-max / arg-min as (value, index) pairs) differentiable, keeping the program's own
tie-breaking, and refuses the rest by name. The oracle is JAX: ``lax.argmax``/``argmin`` with
the value taken at the index (lowest index on ties, as XLA's and JAX's regions pick).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import UnsupportedOpError

# ties (5, 5), (3, 3), an all -inf row and a column of equal values
X = jnp.array(
    [[1.0, 5.0, 2.0, 5.0], [3.0, 3.0, 0.0, -1.0], [-jnp.inf] * 4, [2.0, -4.0, 2.0, 7.0]],
    jnp.float32,
)
W = jnp.array([1.0, 2.0, 3.0, 4.0], jnp.float32)


def _arg_reduce(x, axis: int, greater: bool):
    """(value, index) through a variadic lax.reduce, as JAX's own argmax lowering writes it."""
    idx = lax.broadcasted_iota(jnp.int32, x.shape, axis)

    def comp(a, b):
        (av, ai), (bv, bi) = a, b
        better = (bv > av) if greater else (bv < av)
        pick = better | ((bv == av) & (bi < ai))
        return lax.select(pick, bv, av), lax.select(pick, bi, ai)

    init = jnp.float32(-jnp.inf if greater else jnp.inf)
    return lax.reduce((x, idx), (init, jnp.int32(0)), comp, (axis,))


def _reference(x, axis: int, greater: bool):
    i = (lax.argmax if greater else lax.argmin)(x, axis, jnp.int32)
    v = jnp.squeeze(jnp.take_along_axis(x, jnp.expand_dims(i, axis), axis), axis)
    return v, i


@pytest.mark.parametrize("greater", [True, False], ids=["argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1])
def test_value_index_reduce_values_and_gradients(axis: int, greater: bool) -> None:
    def prog(x):
        return _arg_reduce(x, axis, greater)

    f = hlopipe.rehydrate(jax.jit(prog).lower(X).as_text())
    for got in (f(X), jax.jit(f)(X)):
        want = _reference(X, axis, greater)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])

    def loss(fn):
        return lambda x: jnp.sum(jnp.where(jnp.isfinite(fn(x)[0]), fn(x)[0], 0.0) * W)

    g = jax.jit(jax.grad(loss(f)))(X)
    np.testing.assert_array_equal(g, jax.grad(loss(lambda x: _reference(x, axis, greater)))(X))
    # vmap over a batch of matrices
    batch = jnp.stack([X, -X])
    got = jax.vmap(f)(batch)
    want = jax.vmap(lambda x: _reference(x, axis, greater))(batch)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])


def test_jax_argmax_program_keeps_its_tie_breaking() -> None:
    # JAX's own argmax region (NaN first, then lowest index on ties), value result used
    text = jax.jit(lambda x: lax.argmax(x, 1, jnp.int32)).lower(X).as_text()
    assert "stablehlo.reduce" in text
    f = hlopipe.rehydrate(text)
    np.testing.assert_array_equal(f(X), jnp.argmax(X, axis=1))


def test_variadic_reduce_that_does_not_select_refuses_grad_by_name() -> None:
    def sums(x):
        def comp(a, b):
            return a[0] + b[0], a[1] + b[1] * b[1]

        return lax.reduce((x, x), (jnp.float32(0), jnp.float32(0)), comp, (1,))

    f = hlopipe.rehydrate(jax.jit(sums).lower(X[:2]).as_text())
    x = X[:2]
    s, q = jax.jit(f)(x)
    np.testing.assert_allclose(s, jnp.sum(x, 1))
    np.testing.assert_allclose(q, jnp.sum(x * x, 1))
    with pytest.raises(UnsupportedOpError, match=r"stablehlo\.reduce at .*no derivative"):
        jax.grad(lambda x: f(x)[0].sum())(x)


def test_value_index_reduce_over_every_dim_in_64_bit_mode() -> None:
    # a reduce over all dimensions (scalar results), rehydrated with 64-bit mode on
    def prog(x):
        return _arg_reduce(x.reshape(-1), 0, True)

    with jax.enable_x64(True):
        f = hlopipe.rehydrate(jax.jit(prog).lower(X).as_text())
        v, i = jax.jit(f)(X)
        assert int(i) == int(jnp.argmax(X)) and float(v) == float(jnp.max(X))
        g = jax.grad(lambda x: f(x)[0])(X)
    want = np.zeros(X.shape, np.float32)
    want[np.unravel_index(int(jnp.argmax(X)), X.shape)] = 1
    np.testing.assert_array_equal(g, want)
