"""The small GPT the runtime's equality tests train (test_pipeline.py, test_new_schedules.py):
its config, batches, parameters, its split at the markers (once per test session, so compiled
stage executables are shared), and single-device training with JAX as the oracle."""

from __future__ import annotations

import functools

import jax
import numpy as np
import optax

import hlopipe
from hlopipe.models import gpt

CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=4, d_ff=32)
BATCH = 16
M = 4
OPT = optax.sgd(0.05, momentum=0.9)  # one object: jitted updates are cached per optimizer
loss_fn = functools.partial(gpt.loss, cfg=CFG, boundary=hlopipe.stage_boundary, layers_per_stage=1)


def batches(n: int) -> list:
    return [gpt.batch(jax.random.key(100 + k), BATCH, CFG) for k in range(n)]


@functools.cache
def params():
    return gpt.init(jax.random.key(0), CFG)


@functools.cache
def staged():
    mb = jax.tree.map(lambda x: x[: BATCH // M], batches(1)[0])
    return hlopipe.split(loss_fn, params(), mb)


@functools.cache
def reference(steps: int, opt=OPT):
    """Single-device training: value_and_grad of the full-batch loss, then the optimizer."""

    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    p, s = params(), opt.init(params())
    losses = []
    for b in batches(steps):
        p, s, loss = step(p, s, b)
        losses.append(float(loss))
    return losses, p


def train(pipe, steps: int):
    """``steps`` steps of ``pipe`` from :func:`params`: the losses and the final parameters."""
    state = pipe.init(params())
    losses = []
    for b in batches(steps):
        state, metrics = pipe.step(state, b)
        losses.append(metrics.loss)
    return losses, jax.device_get(state.params)


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def assert_same_training(losses, trained, steps: int, opt=OPT) -> None:
    """Losses within 1e-5 and every parameter within 1e-5 (relative norm) of
    :func:`reference`."""
    ref_losses, ref_params = reference(steps, opt)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    flat_ref = jax.tree_util.tree_flatten_with_path(ref_params)[0]
    worst = max((_rel(a, b), jax.tree_util.keystr(k)) for a, (k, b) in
                zip(jax.tree.leaves(trained), flat_ref, strict=True))  # fmt: skip
    assert worst[0] <= 1e-5, f"parameter {worst[1]} differs by {worst[0]:.2e} (relative)"
