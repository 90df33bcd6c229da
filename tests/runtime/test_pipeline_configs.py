"""Configurations a user meets that the GPT tests do not: dtypes, PRNG keys, loops a stage
cannot differentiate, structured optimizers, 64-bit programs. Small models, few steps; each
compared with JAX on one device or expected to fail with a clear error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe.runtime import Pipeline


def _params(dtype=jnp.float32):
    k = jax.random.split(jax.random.key(0), 2)
    return {
        "w0": (jax.random.normal(k[0], (5, 7)) / 2).astype(dtype),
        "w1": (jax.random.normal(k[1], (7, 3)) / 2).astype(dtype),
    }


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x.astype(p["w0"].dtype) @ p["w0"]))
    return jnp.mean((h @ p["w1"] - y.astype(h.dtype)) ** 2).astype(jnp.float32)


def _batch(n=8, seed=1):
    k = jax.random.split(jax.random.key(seed), 2)
    return jax.random.normal(k[0], (n, 5)), jax.random.normal(k[1], (n, 3))


def test_checkpoint_of_bfloat16_parameters_restores_them_bit_for_bit(tmp_path):
    """NumPy stores bfloat16 (an ml_dtypes type) as raw bytes; restore reads it back as
    bfloat16, parameters and adam's moments alike (it used to fail on dtype '|V2')."""
    params = _params(jnp.bfloat16)
    pipe = Pipeline(_loss, params, _batch(), num_microbatches=2, devices=jax.devices()[:2],
                    optimizer=optax.adam(1e-2))  # fmt: skip
    state, _ = pipe.step(pipe.init(params), _batch())
    pipe.save(state, tmp_path)
    back = pipe.restore(tmp_path)
    for a, b in zip(jax.tree.leaves(pipe.gather_params(state)),
                    jax.tree.leaves(pipe.gather_params(back))):  # fmt: skip
        assert b.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
    _, m1 = pipe.step(state, _batch(seed=2))
    _, m2 = pipe.step(back, _batch(seed=2))
    assert m1.loss == m2.loss
