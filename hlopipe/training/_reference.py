"""The reference a pipelined run is checked against: the same training on one device."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from hlopipe.training._plan import TrainingPlan


def train_one_device(
    plan: TrainingPlan, optimizer: Any, steps: int, batches: Iterable[Any] | None = None
) -> list[float]:
    """The losses of ``steps`` training steps on one device from the plan's initial values:
    the program's loss averaged over the microbatches, ``jax.value_and_grad``, ``optimizer``
    (an optax transformation) on the floating-point parameters; integer parameters and the
    frozen constants stay as they are. Each step takes the next of ``batches`` (full
    batches, one array per batch argument), or the plan's one batch."""
    import jax
    import jax.numpy as jnp
    import optax

    f = plan.flat()
    m, mb = plan.num_microbatches, plan.microbatch
    params = list(plan.params)
    train = [k for k, p in enumerate(params) if np.issubdtype(np.asarray(p).dtype, np.inexact)]

    def loss(trained: list[Any], fixed: list[Any], batch: list[Any]) -> Any:
        full = list(fixed)
        for k, v in zip(train, trained, strict=True):
            full[k] = v
        # the microbatches stacked on a new leading axis, scanned: the program is traced and
        # compiled once whatever m is (a loop of m calls inlined it m times); the carry sums
        # the losses in microbatch order, the mean over m taken after
        stacked = [b[: m * mb].reshape(m, mb, *b.shape[1:]) for b in batch]

        def add(total: Any, micro: list[Any]) -> tuple[Any, None]:
            out = f(*full, *micro)
            return total + (out[0] if isinstance(out, tuple) else out), None

        first = plan.program.out_avals[0]  # the loss: the program's first output
        total, _ = jax.lax.scan(add, jnp.zeros(first.shape, first.dtype), stacked)
        return total / m

    @jax.jit
    def step(trained: Any, st: Any, fixed: Any, batch: Any) -> Any:
        value, g = jax.value_and_grad(loss)(trained, fixed, batch)
        u, st = optimizer.update(g, st, trained)
        return optax.apply_updates(trained, u), st, value

    dev = jax.local_devices()[0]
    trained = jax.device_put([jnp.asarray(params[k]) for k in train], dev)
    fixed = jax.device_put([jnp.asarray(p) for p in params], dev)
    fixed_batch = [plan.batch] if batches is None else None
    source = iter(batches) if batches is not None else itertools.cycle(fixed_batch or [])
    st = optimizer.init(trained)
    losses = []
    for _ in range(steps):
        batch = jax.device_put([jnp.asarray(b) for b in next(source)], dev)
        trained, st, value = step(trained, st, fixed, batch)
        losses.append(float(value))
    return losses
