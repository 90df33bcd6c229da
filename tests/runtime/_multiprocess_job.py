"""One process of a multi-process training job, for tests/runtime/test_multiprocess*.py.

Run under ``hlopipe launch --nproc N --devices-per-process K -- python this.py ...``. Trains the
small GPT of tests/runtime/test_pipeline.py (4 stages, a tied embedding) and prints one line
``LOSS <step> <loss>`` per step (process 0 only), ``PID <pid>`` first, so that a test can
kill it. ``--save-at k --ckpt DIR`` saves after step k; ``--restore DIR`` resumes from there.
``--mesh 2x2`` gives every stage a (2 data x 2 model) mesh with Megatron-style parameter specs.

Several scenarios on one process layout run in one job (one process start, one
``jax.distributed`` start): their argument lists separated by ``+``, each with ``--label NAME``;
process 0 prints ``SCENARIO NAME`` before each, and the losses of each are tagged with their
schedule (``Job.section`` and ``Job.losses`` in _mp_util.py read them).
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import hlopipe
from hlopipe.runtime import distributed

CFG_KW = dict(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=4, d_ff=32)
BATCH = 16
M = 4


def optimizer(name: str):
    """The optimizer called ``name`` (``--optimizer``; the tests' one-device reference builds
    the same one)."""
    import optax

    return _table().get(name, lambda: optax.sgd(0.05, momentum=0.9))()


def _weight_matrices(params):
    """By path: the layers' weight matrices (not the norms, the biases or the embeddings)."""
    import jax

    def is_matrix(path, _):
        return jax.tree_util.keystr(path).endswith(("['qkv']", "['proj']", "['fc1']", "['fc2']"))

    return jax.tree_util.tree_map_with_path(is_matrix, params)


def _stacked_matrices(params):
    """Muon's dimension numbers: the stacked weight matrices [layers, in, out] as matrices
    from axis 1 to axis 2, everything else (None) to adam."""
    import jax
    from optax.contrib import MuonDimensionNumbers

    def dims(path, _):
        if jax.tree_util.keystr(path).endswith(("['qkv']", "['proj']", "['fc1']", "['fc2']")):
            return MuonDimensionNumbers(reduction_axis=1, output_axis=2)
        return None

    return jax.tree_util.tree_map_with_path(dims, params)


def _by_ndim(params):
    import jax

    return jax.tree.map(lambda x: "matrix" if x.ndim >= 2 else "rest", params)


def _table() -> dict[str, Any]:
    """Issue 48's optimizer table (and the older rows), each row a factory."""
    import jax
    import optax

    def matrices(p):
        return jax.tree.map(lambda x: x.ndim >= 2, p)

    return {
        "adamw": lambda: optax.adamw(1e-2),
        "adamw-clip": lambda: optax.chain(optax.clip_by_global_norm(0.5), optax.adamw(1e-2)),
        "sgd-clip": lambda: optax.chain(
            optax.clip_by_global_norm(0.5), optax.sgd(0.05, momentum=0.9)
        ),
        "finite-multisteps": finite_multisteps,
        # state shaped by the parameters' shapes (Newton-Schulz on matrices)
        "muon": lambda: optax.contrib.muon(1e-2),
        # the same on the scanned GPT's stacked blocks: each layer's weight matrix
        # orthogonalised alone (the stacked axis a batch axis), adam for the rest (plain muon
        # would orthogonalise the stacked biases and gains, [layers, d], as matrices)
        "muon-stacked": lambda: optax.contrib.muon(
            1e-2, muon_weight_dimension_numbers=_stacked_matrices
        ),
        # trust ratios over whole parameters
        "lamb": lambda: optax.lamb(1e-2),
        # factored second moments (every matrix here has both dimensions >= 8)
        "adafactor": lambda: optax.adafactor(1e-2, min_dim_size_to_factor=8),
        # a learning rate estimated from sums over every parameter (it grows within 3 steps)
        "prodigy": lambda: optax.contrib.prodigy(1.0, estim_lr0=1e-3, estim_lr_coef=10.0),
        "clip-lion": lambda: optax.chain(optax.clip_by_global_norm(0.5), optax.lion(1e-3)),
        # a warmup-cosine schedule, weight decay masked by path
        "schedule-masked-decay": lambda: optax.adamw(
            optax.warmup_cosine_decay_schedule(0.0, 1e-2, 2, 4),
            weight_decay=0.1,
            mask=_weight_matrices,
        ),
        "ema": lambda: optax.chain(optax.ema(0.5), optax.scale(-0.05)),
        "schedule-free": lambda: optax.contrib.schedule_free_adamw(1e-2, warmup_steps=1),
        # weight decay masked by shape, then labels chosen by ndim (momentum, so a state, on
        # the matrices only; not Adam, whose sign-like steps on near-zero gradients here
        # amplify the order of the microbatches' sums past 1e-5 in the parameters)
        "by-ndim": lambda: optax.chain(
            optax.masked(optax.add_decayed_weights(0.1), matrices),
            optax.multi_transform(
                {"matrix": optax.sgd(0.05, momentum=0.9), "rest": optax.sgd(0.05)}, _by_ndim
            ),
        ),
    }


def finite_multisteps():
    """``apply_if_finite`` over ``MultiSteps`` (an update every 2 steps) over clipped SGD, the
    embedding's gradient made infinite at the second step: every stage, in every process,
    must skip that step (one all-finite flag over the parameters), and the accumulation
    counter must agree across them."""
    import jax.numpy as jnp
    import optax

    def poison(u, count, p=None):
        return {**u, "embed": u["embed"] * jnp.where(count == 1, jnp.inf, 1.0)}, count + 1

    inner = optax.MultiSteps(
        optax.chain(optax.clip_by_global_norm(0.5), optax.sgd(0.05, momentum=0.9)), 2
    )
    return optax.chain(
        optax.GradientTransformation(lambda p: jnp.zeros([], jnp.int32), poison),
        optax.apply_if_finite(inner.gradient_transformation(), 3),
    )


def megatron_specs(params):
    from jax.sharding import PartitionSpec as P

    layer = {
        "ln1": {"g": P(), "b": P()}, "qkv": P(None, "model"), "proj": P("model", None),
        "ln2": {"g": P(), "b": P()}, "fc1": P(None, "model"), "fc1_b": P("model"),
        "fc2": P("model", None), "fc2_b": P(),
    }  # fmt: skip
    return {"embed": P(), "pos": P(), "layers": [layer] * len(params["layers"]),
            "ln_f": {"g": P(), "b": P()}}  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--stage-devices", type=int, default=1)
    ap.add_argument("--layers-per-stage", type=int, default=1, help="2: 2 stages of 2 layers")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--mesh", default="", help="2x2: (data, model) stage meshes, Megatron specs")
    ap.add_argument("--save-at", type=int, default=0)
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--restore", default="")
    ap.add_argument("--sleep-after", type=int, default=0, help="sleep after this step")
    ap.add_argument("--infer-out", default="", help="infer instead of training; save in DIR")
    ap.add_argument("--params-out", default="", help="save the trained parameters in DIR")
    ap.add_argument("--label", default="", help="the scenario's name (several in one job)")
    ap.add_argument(
        "--model", default="markers", choices=["markers", "scan"],
        help="scan: the GPT's blocks stacked and run by one lax.scan, cut by iterations",
    )  # fmt: skip
    return ap


def main() -> int:
    groups: list[list[str]] = [[]]
    for a in sys.argv[1:]:
        if a == "+":
            groups.append([])
        else:
            groups[-1].append(a)
    scenarios = [parser().parse_args(g) for g in groups]
    if os.environ.get("HLOPIPE_TEST_DUMP_AFTER"):
        import faulthandler

        faulthandler.dump_traceback_later(float(os.environ["HLOPIPE_TEST_DUMP_AFTER"]))
    distributed.initialize()
    import jax

    print(f"PID {os.getpid()}", flush=True)
    for args in scenarios:
        if args.label and jax.process_index() == 0:
            print(f"SCENARIO {args.label}", flush=True)
        scenario(args, tagged=len(scenarios) > 1)
    return 0


def scenario(args, tagged: bool) -> None:
    """One training (a schedule after the other) or inference, as ``args`` say."""
    import jax

    from hlopipe.models import gpt, gpt_scan

    cfg = gpt.GPTConfig(**CFG_KW)
    if args.model == "scan":  # no markers: the stages are ranges of the loop's iterations
        loss_fn = functools.partial(gpt_scan.loss, cfg=cfg)
        params = gpt_scan.init(jax.random.key(0), cfg)
    else:
        loss_fn = functools.partial(
            gpt.loss, cfg=cfg, boundary=hlopipe.stage_boundary,
            layers_per_stage=args.layers_per_stage,
        )  # fmt: skip
        params = gpt.init(jax.random.key(0), cfg)
    batches = [gpt.batch(jax.random.key(100 + k), BATCH, cfg) for k in range(args.steps)]
    mesh: dict = {"stage_mesh_shape": (args.stage_devices,)}
    if args.mesh:
        shape = tuple(int(x) for x in args.mesh.split("x"))
        mesh = {"stage_mesh_shape": shape, "stage_mesh_axes": ("data", "model"),
                "param_specs": megatron_specs(params)}  # fmt: skip
    for name in args.schedule.split(","):
        train(args, name, loss_fn, params, batches, mesh, tagged)


# The pipelines of this job by (schedule, stage devices, layers per stage, mesh, model,
# optimizer):
# a scenario of the same layout as an earlier one (inference after training) uses the earlier
# one's pipeline, from a fresh state (init or restore), instead of compiling it again.
_PIPELINES: dict[tuple, Any] = {}


def train(args, name, loss_fn, params, batches, mesh, tagged=False) -> None:
    """Train with schedule ``name``; print its losses (tagged with the schedule when the job
    runs several, one after the other); save the parameters with ``--params-out``."""
    import jax
    import numpy as np

    tag = f" schedule {name}" if tagged or "," in args.schedule else ""
    key = (name, args.stage_devices, args.layers_per_stage, args.mesh, args.model, args.optimizer)
    pipe = _PIPELINES.get(key)
    same_layout = [p for k, p in _PIPELINES.items() if k[:-1] == key[:-1]]
    if pipe is None and same_layout:  # the stages compiled already: another optimizer only
        pipe = _PIPELINES[key] = same_layout[0].with_optimizer(optimizer(args.optimizer))
    if pipe is None:
        pipe = _PIPELINES[key] = hlopipe.Pipeline(
            loss_fn, params, batches[0], schedule=name, num_microbatches=M,
            devices=jax.devices(), optimizer=optimizer(args.optimizer), recv_timeout=60.0,
            **mesh,
        )  # fmt: skip
    if jax.process_index() == 0:
        print(pipe, flush=True)
        if args.model == "scan":  # the stages holding rows of the stacked blocks' qkv
            w = pipe.plan.caller_names.index("['blocks']['qkv']")
            pieces = pipe.plan.param_pieces
            rows_on = sorted({st.index for st in pipe.staged.stages for i in st.params_needed
                              if i < pipe.num_params and pieces[i].source == w
                              and pieces[i].start is not None})  # fmt: skip
            print(f"LOOP ROWS ON STAGES {rows_on}", flush=True)
    if args.restore:
        state = pipe.restore(args.restore)
    else:
        state = pipe.init(params)
    if args.infer_out:
        from hlopipe.models import gpt

        infer(args, gpt.GPTConfig(**CFG_KW), pipe, state, params, batches[0])
        return
    # the bytes of the values this process's cross-process sends carry (its program's)
    act = sum(
        math.prod(a.shape) * np.dtype(a.dtype).itemsize
        for _, ins in pipe._cross_process_sends(train=True)
        for a in ins.avals
    )
    for k in range(state.step, args.steps):
        state, metrics = pipe.step(state, batches[k])
        if jax.process_index() == 0:
            print(
                f"LOSS {k + 1} {metrics.loss!r} xfer_ms {pipe.last_transfer_seconds * 1e3:.1f}"
                f" xfer_bytes {pipe.last_transfer_bytes} act_bytes {act}"
                f" gnorm {metrics.grad_norm!r}{tag}",
                flush=True,
            )
        if args.save_at and k + 1 == args.save_at:
            pipe.save(state, args.ckpt)
            if jax.process_index() == 0:
                print(f"SAVED {k + 1}", flush=True)
        if args.sleep_after and k + 1 == args.sleep_after:
            time.sleep(600)
    if args.params_out:
        gathered = jax.tree_util.tree_leaves(pipe.gather_params(state))
        if jax.process_index() == 0:
            np.savez(os.path.join(args.params_out, f"params-{name}.npz"), *gathered)


def infer(args, cfg, pipe, state, params, batch) -> None:
    """Every process saves what infer() gives it: the mean loss of ``batch``, and the logits
    of its tokens from a second, forward-only pipeline."""
    import jax
    import numpy as np

    from hlopipe.models import gpt

    loss = pipe.infer(state, batch)

    def logits_fn(p, tokens):
        return gpt.logits(
            p, tokens, cfg, hlopipe.stage_boundary, layers_per_stage=args.layers_per_stage
        )

    fwd = hlopipe.Pipeline(
        logits_fn, params, batch[0], schedule="inference", num_microbatches=M,
        devices=jax.devices(), stage_mesh_shape=(args.stage_devices,), recv_timeout=60.0,
    )  # fmt: skip
    logits = fwd.infer(fwd.init(params), batch[0])
    me = jax.process_index()
    np.save(os.path.join(args.infer_out, f"loss{me}.npy"), np.asarray(loss))
    np.save(os.path.join(args.infer_out, f"logits{me}.npy"), np.asarray(logits))
    # one training step, then every parameter in every process
    state, _ = pipe.step(state, batch)
    held = [x is not None for x in jax.tree_util.tree_leaves(state.params, is_leaf=_is_none)]
    np.save(os.path.join(args.infer_out, f"held{me}.npy"), np.asarray(held))
    gathered = jax.tree_util.tree_leaves(pipe.gather_params(state))
    np.savez(os.path.join(args.infer_out, f"params{me}.npz"), *gathered)
    print("INFERRED", flush=True)


def _is_none(x) -> bool:
    return x is None


if __name__ == "__main__":
    sys.exit(main())
