"""One process of a checkpointing job, for tests/runtime/test_checkpoint_processes.py (and the
pipeline those tests build in their own process).

Run under ``hlopipe launch --nproc N --devices-per-process K -- python this.py ...``: trains
the small GPT of tests/runtime/_mp_util.py with AdamW, cut into ``4 / --layers-per-stage``
stages on stage meshes of ``--stage-devices`` devices, and prints ``LOSS <step> <loss>`` per
step (process 0). ``--save-at k --ckpt DIR`` saves after step k and trains on;
``--restore DIR`` starts from the newest checkpoint there; ``--params-out F`` saves the final
parameters (process 0) as an ``.npz``; ``--scan``: the GPT's blocks in one ``lax.scan``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import hlopipe
from hlopipe.runtime import distributed

CFG_KW = dict(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=4, d_ff=32)
BATCH = 16
M = 4


def batches(steps: int) -> list:
    import jax

    from hlopipe.models import gpt

    cfg = gpt.GPTConfig(**CFG_KW)
    return [gpt.batch(jax.random.key(100 + k), BATCH, cfg) for k in range(steps)]


def build(layers_per_stage: int, stage_devices: int, devices: list, scan: bool = False) -> tuple:
    """The pipeline and the initial parameters (the same in every process and test); with
    ``scan`` the GPT's blocks are one stacked ``lax.scan``, cut by ranges of layers into as
    many stages as ranks fit on ``devices``."""
    import jax
    import optax

    from hlopipe.models import gpt, gpt_scan

    cfg = gpt.GPTConfig(**CFG_KW)
    if scan:
        loss_fn = functools.partial(gpt_scan.loss, cfg=cfg)
        params = gpt_scan.init(jax.random.key(0), cfg)
    else:
        loss_fn = functools.partial(
            gpt.loss, cfg=cfg, boundary=hlopipe.stage_boundary, layers_per_stage=layers_per_stage
        )
        params = gpt.init(jax.random.key(0), cfg)
    pipe = hlopipe.Pipeline(
        loss_fn, params, batches(1)[0], schedule="1f1b", num_microbatches=M, devices=devices,
        stage_mesh_shape=(stage_devices,), optimizer=optax.adamw(1e-2), recv_timeout=60.0,
    )  # fmt: skip
    return pipe, params


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--layers-per-stage", type=int, default=1)
    ap.add_argument("--stage-devices", type=int, default=1)
    ap.add_argument("--save-at", type=int, default=0)
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--restore", default="")
    ap.add_argument("--params-out", default="")
    ap.add_argument("--scan", action="store_true", help="the GPT with its blocks in a lax.scan")
    args = ap.parse_args()
    distributed.initialize()
    import jax
    import numpy as np

    pipe, params = build(args.layers_per_stage, args.stage_devices, jax.devices(), args.scan)
    state = pipe.restore(args.restore) if args.restore else pipe.init(params)
    data = batches(args.steps)
    me = jax.process_index()
    for k in range(state.step, args.steps):
        state, metrics = pipe.step(state, data[k])
        if me == 0:
            print(f"LOSS {k + 1} {metrics.loss!r}", flush=True)
        if k + 1 == args.save_at:
            pipe.save(state, args.ckpt)
    if args.params_out:
        gathered = jax.tree_util.tree_leaves(pipe.gather_params(state))
        if me == 0:
            np.savez(args.params_out, *gathered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
