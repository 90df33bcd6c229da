"""The issue's training configuration on 16 CPU devices, compared with one device.

Run as a script (its own process: the test session has 8 devices, this needs 16):
``python _mesh_job.py SCHEDULE...``. A tiny GPT with Megatron-style ``param_specs`` (attention
and MLP weights split column- then row-wise on ``"model"``), 4 ranks x a (2 data x 2 model)
mesh, trained with sgd + clip_by_global_norm: the losses and the parameters must equal the same
training on one device (1e-5); with 1F1B, adamw + clip too (the losses: Adam amplifies ulps of
the gradients in the parameters). Prints ``OK <schedule>`` for each, or raises.
"""

from __future__ import annotations

import functools
import sys

import jax

jax.config.update("jax_num_cpu_devices", 16)

import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import hlopipe  # noqa: E402
from hlopipe.models import gpt  # noqa: E402
from hlopipe.runtime import Pipeline  # noqa: E402

STEPS = 2
BATCH = 16
M = 4


def megatron_specs(params: dict) -> dict:
    """Column-split the first matmul of each pair, row-split the second, on ``"model"``."""
    layer = {
        "ln1": {"g": P(), "b": P()},
        "qkv": P(None, "model"),
        "proj": P("model", None),
        "ln2": {"g": P(), "b": P()},
        "fc1": P(None, "model"),
        "fc1_b": P("model"),
        "fc2": P("model", None),
        "fc2_b": P(),
    }
    return {
        "embed": P(),
        "pos": P(),
        "layers": [layer for _ in params["layers"]],
        "ln_f": {"g": P(), "b": P()},
    }


# max_norm below the gradients' norm, so that the clip acts in every step; (optimizer, whether
# the parameters are compared too, the schedules it trains with). SGD with momentum carries a
# wrong clip scale or gradient into the parameters, so every schedule is checked with it; the
# issue's adamw (losses only: Adam amplifies ulps of the gradients in the parameters) once.
OPTIMIZERS = [
    (optax.chain(optax.clip_by_global_norm(0.5), optax.adamw(1e-2)), False, ("1f1b",)),
    (optax.chain(optax.clip_by_global_norm(0.5), optax.sgd(0.1, momentum=0.9)), True, None),
]


@functools.cache
def one_device(stages: int, k: int):
    """The one-device training of ``model(stages)`` with ``OPTIMIZERS[k]``: (losses, params);
    computed once for the schedules that train the same model (1F1B and ZB-H1)."""
    loss_fn, params, batches, _ = model(stages)
    return reference(loss_fn, params, batches, OPTIMIZERS[k][0])


def reference(loss_fn, params, batches, opt):
    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    s = opt.init(params)
    losses = []
    for b in batches:
        params, s, loss = step(params, s, b)
        losses.append(float(loss))
    return losses, params


@functools.cache
def model(stages: int):
    """A GPT of ``stages`` blocks cut after each; the staged program is shared by every run on
    it, so that they reuse its compiled executables."""
    cfg = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=stages, d_ff=32)
    loss_fn = functools.partial(
        gpt.loss, cfg=cfg, boundary=hlopipe.stage_boundary, layers_per_stage=1
    )
    params = gpt.init(jax.random.key(0), cfg)
    batches = [gpt.batch(jax.random.key(100 + k), BATCH, cfg) for k in range(STEPS)]
    mb = jax.tree.map(lambda x: x[: BATCH // M], batches[0])
    return loss_fn, params, batches, hlopipe.split(loss_fn, params, mb)


def main(schedule: str) -> None:
    stages = 8 if schedule.startswith("interleaved") else 4
    _, params, batches, staged = model(stages)
    for k, (opt, check_params, schedules) in enumerate(OPTIMIZERS):
        if schedules is not None and schedule not in schedules:
            continue
        ref_losses, ref_params = one_device(stages, k)
        pipe = Pipeline(
            staged, params, batches[0], schedule=schedule, num_microbatches=M,
            devices=jax.devices()[:16], stage_mesh_shape=(2, 2),
            stage_mesh_axes=("data", "model"), param_specs=megatron_specs(params),
            optimizer=opt,
        )  # fmt: skip
        assert pipe.schedule.num_ranks == 4 and pipe.staged.num_stages == stages
        state = pipe.init(params)
        qkv = state.params["layers"][0]["qkv"]
        assert qkv.sharding.spec == P(None, "model"), qkv.sharding
        assert len(qkv.sharding.device_set) == 4
        losses = []
        for b in batches:
            state, metrics = pipe.step(state, b)
            losses.append(metrics.loss)
        print(schedule, "losses", losses, "reference", ref_losses, flush=True)
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
        if check_params:
            got = jax.tree.leaves(jax.device_get(state.params))
            for g, w in zip(got, jax.tree.leaves(ref_params), strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    print("OK", schedule, flush=True)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        main(name)
