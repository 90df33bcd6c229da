"""Multi-process step time: the same pipeline on 1, 2 and 4 local processes.

Run: ``python benchmarks/multihost.py`` (starts its own jobs with ``hlopipe launch``). The
model, the 4 stages (one CPU device each) and the schedule stay the same; only how the 4
devices are spread over processes changes (1x4, 2x2, 4x1), so the difference is what crossing
processes costs: gloo ``ppermute`` collectives instead of ``device_put``, the link thread that
orders them, and the coordinator round trips for the loss and the gradient norm.

Columns: median step time over the timed steps; time process 0's link thread spent in
cross-process transfers per step (issue to completion, including waiting for the peer); how
many transfers (one per microbatch and stage pair, each carrying its values) process 0 took
part in per step. Not a pass/fail test.
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
        gpt.loss, cfg=cfg, boundary=hlopipe.stage_boundary, layers_per_stage=1
    )
    params = gpt.init(jax.random.key(0), cfg)
    batch = gpt.batch(jax.random.key(1), 32, cfg)
    pipe = hlopipe.Pipeline(
        loss_fn, params, batch, schedule=args.schedule, num_microbatches=8,
        devices=jax.devices(), optimizer=optax.sgd(0.01),
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
            count.append(len(pipe._cross_process_sends("train")))
    if jax.process_index() == 0:
        mine = [ins for _, ins in pipe._cross_process_sends("train")]
        print("RESULT " + json.dumps({
            "step_ms": statistics.median(times) * 1e3,
            "xfer_ms": statistics.median(xfer) * 1e3,
            "transfers": len(mine),
            "values": sum(len(ins.outs) for ins in mine),
            "loss": metrics.loss,
        }), flush=True)  # fmt: skip
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--procs", default="1,2,4")
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    import io

    from rich.console import Console
    from rich.table import Table

    from hlopipe.runtime.launch import launch

    rows = []
    for n in [int(x) for x in args.procs.split(",")]:
        out = io.StringIO()
        cmd = [sys.executable, __file__, "--worker", "--schedule", args.schedule,
               "--steps", str(args.steps), "--warmup", str(args.warmup)]  # fmt: skip
        code = launch(cmd, nproc=n, devices_per_process=4 // n, timeout=600, out=out)
        line = next((ln for ln in out.getvalue().splitlines() if " RESULT " in ln), None)
        if code or line is None:
            print(out.getvalue()[-3000:])
            raise SystemExit(f"the {n}-process job failed (exit {code})")
        rows.append((n, json.loads(line.split(" RESULT ", 1)[1])))
    base = rows[0][1]["step_ms"]
    t = Table(title=f"GPT, 4 stages x 1 CPU device, {args.schedule}, 8 microbatches")
    for c in (
        "processes",
        "devices/process",
        "step ms",
        "vs 1 process",
        "cross-process transfer ms/step (proc 0)",
        "transfers/step (proc 0; one per microbatch and stage pair)",
        "values/step (proc 0)",
        "loss",
    ):
        t.add_column(c, justify="right")
    for n, r in rows:
        t.add_row(str(n), str(4 // n), f"{r['step_ms']:.1f}", f"{r['step_ms'] / base:.2f}x",
                  f"{r['xfer_ms']:.1f}", str(r["transfers"]), str(r["values"]),
                  f"{r['loss']:.6f}")  # fmt: skip
    Console(width=140).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
