"""Multi-process step time: the same pipeline on 1, 2 and 4 local processes.

Run: ``python benchmarks/multihost.py`` (starts its own jobs with ``hlopipe launch``). The
model, the schedule and the 8 CPU devices stay the same; only how the devices are spread over
processes changes (1x8, 2x4, 4x2), for two placements:

* ``whole``: 4 stages on meshes of 2 devices; with 4 processes each holds one whole stage;
* ``spanning``: 2 stages on meshes of 4 devices (data parallel); with 4 processes each
  stage's mesh spans 2 processes (its gradient all-reduce runs between them, and activations
  cross shard by shard).

So the difference is what crossing processes costs: gloo collectives instead of
``device_put`` and in-process collectives, the link thread (or, for a spanning rank, the
program-order thread) that orders them, and sharing the loss and the gradient norm.

Columns: median step time over the timed steps and its ratio to 1 process (same placement);
time process 0 spent in cross-process transfers per step (issue to completion, including
waiting for the peer); how many transfers (one per microbatch and stage pair) it took part in
per step and the bytes they carried. Not a pass/fail test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def worker(args: argparse.Namespace) -> int:
    from hlopipe.runtime import distributed

    distributed.initialize()
    import jax
    import optax

    import hlopipe
    from hlopipe.models import gpt

    cfg = gpt.GPTConfig(vocab=32, seq=16, d_model=32, n_heads=2, n_layers=4, d_ff=64)
    loss_fn = functools.partial(
        gpt.loss, cfg=cfg, boundary=hlopipe.stage_boundary, layers_per_stage=args.layers
    )
    params = gpt.init(jax.random.key(0), cfg)
    batch = gpt.batch(jax.random.key(1), 32, cfg)
    pipe = hlopipe.Pipeline(
        loss_fn, params, batch, schedule=args.schedule, num_microbatches=8,
        devices=jax.devices(), optimizer=optax.sgd(0.01), stage_mesh_shape=(args.mesh,),
    )  # fmt: skip
    state = pipe.init(params)
    times, xfer, count = [], [], []
    for k in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        state, metrics = pipe.step(state, batch)
        dt = time.perf_counter() - t0
        if k >= args.warmup:
            times.append(dt)
            xfer.append(pipe.last_transfer_seconds)
            count.append(len(pipe._cross_process_sends(train=True)))
    if jax.process_index() == 0:
        mine = [ins for _, ins in pipe._cross_process_sends(train=True)]
        print("RESULT " + json.dumps({
            "step_ms": statistics.median(times) * 1e3,
            "xfer_ms": statistics.median(xfer) * 1e3,
            "transfers": len(mine),
            "values": sum(len(ins.outs) for ins in mine),
            "bytes": pipe.last_transfer_bytes,
            "loss": metrics.loss,
        }), flush=True)  # fmt: skip
    return 0


# placement -> (stages' mesh size, layers per stage): 8 devices in all
PLACEMENTS = {"whole": (2, 1), "spanning": (4, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--procs", default="1,2,4")
    ap.add_argument("--placements", default="whole,spanning")
    ap.add_argument("--mesh", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--layers", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    rows = []
    for placement in args.placements.split(","):
        for n in [int(x) for x in args.procs.split(",")]:
            rows.append((placement, n, _job(args, placement, n)))
    _table(rows, args.schedule)
    return 0


def _job(args: argparse.Namespace, placement: str, n: int) -> dict:
    """Process 0's results of one job of ``n`` processes with ``placement``."""
    import io

    from hlopipe.runtime.launch import launch

    mesh, layers = PLACEMENTS[placement]
    out = io.StringIO()
    cmd = [sys.executable, __file__, "--worker", "--schedule", args.schedule, "--steps",
           str(args.steps), "--warmup", str(args.warmup), "--mesh", str(mesh), "--layers",
           str(layers)]  # fmt: skip
    code = launch(cmd, nproc=n, devices_per_process=8 // n, timeout=900, out=out)
    line = next((ln for ln in out.getvalue().splitlines() if " RESULT " in ln), None)
    if code or line is None:
        print(out.getvalue()[-3000:])
        raise SystemExit(f"the {n}-process {placement} job failed (exit {code})")
    return dict(json.loads(line.split(" RESULT ", 1)[1]))


def _table(rows: list[tuple[str, int, dict]], schedule: str) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"GPT, 8 CPU devices, {schedule}, 8 microbatches")
    for c in ("placement", "processes", "devices/process", "step ms", "vs 1 process",
              "xfer ms/step (proc 0)", "transfers/step (proc 0)", "values/step (proc 0)",
              "bytes/step (proc 0)", "loss"):  # fmt: skip
        t.add_column(c, justify="right")
    base = {p: r["step_ms"] for p, n, r in rows if n == 1}
    for p, n, r in rows:
        mesh, _ = PLACEMENTS[p]
        label = f"{p}: {8 // mesh} stages x ({mesh},)"
        ratio = f"{r['step_ms'] / base[p]:.2f}x" if p in base else "-"
        t.add_row(label, str(n), str(8 // n), f"{r['step_ms']:.1f}", ratio, f"{r['xfer_ms']:.1f}",
                  str(r["transfers"]), str(r["values"]), str(r["bytes"]),
                  f"{r['loss']:.6f}")  # fmt: skip
    Console(width=160).print(t)


if __name__ == "__main__":
    sys.exit(main())
