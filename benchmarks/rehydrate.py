"""Rehydration cost: compiled run time and trace time against the original JAX, and trace time
per op as modules grow.

Per model: the compiled run time of the rehydrated program over the original's (median of
RUNS runs after warm-up, the two timed alternately in one loop), and the time to rehydrate and
trace to a jaxpr over ``jax.make_jaxpr`` of the original Python. Then synthetic chains of 1k,
10k and 100k element-wise ops: load, read into records (ModuleIR) and trace, per op.

    .venv/bin/python benchmarks/rehydrate.py [--runs 20] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rehydrate"))
import zoo_programs

import hlopipe
from hlopipe.rehydrate import module_ir


def _block(x):
    return jax.block_until_ready(x)


def run_ratio(name: str, runs: int) -> tuple[float, float]:
    c = zoo_programs.case(name)
    f = hlopipe.load(zoo_programs.source(name, "stablehlo")).as_function()
    orig, rehy = jax.jit(c.fn), jax.jit(f)
    for _ in range(3):
        _block(orig(*c.args))
        _block(rehy(*c.args))
    t_o, t_r = [], []
    for i in range(runs):
        pair = [(orig, t_o), (rehy, t_r)]
        for fn, acc in pair if i % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            _block(fn(*c.args))
            acc.append(time.perf_counter() - t0)
    mo, mr = statistics.median(t_o), statistics.median(t_r)
    return mo, mr


def trace_ratio(name: str, reps: int = 5) -> tuple[float, float]:
    c = zoo_programs.case(name)
    text = zoo_programs.source(name, "stablehlo")
    t_o, t_r = [], []
    for _ in range(reps):
        fn = lambda *a: c.fn(*a)  # noqa: E731  (a new function: make_jaxpr caches per function)
        t0 = time.perf_counter()
        jax.make_jaxpr(fn)(*c.args)
        t_o.append(time.perf_counter() - t0)
        prog = hlopipe.load(text)  # loading (MLIR parsing) is not counted: it is not tracing
        t0 = time.perf_counter()
        jax.make_jaxpr(prog.as_function())(*c.args)
        t_r.append(time.perf_counter() - t0)
    return statistics.median(t_o), statistics.median(t_r)


def chain(n: int) -> str:
    """A StableHLO module of n element-wise ops in a chain (plus a few constants)."""
    ops = ["stablehlo.add", "stablehlo.multiply", "stablehlo.tanh", "stablehlo.subtract"]
    lines = [
        "func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {",
        "  %c = stablehlo.constant dense<0.5> : tensor<8xf32>",
    ]
    prev = "%x"
    for i in range(n):
        op = ops[i % len(ops)]
        if op == "stablehlo.tanh":
            lines.append(f"  %v{i} = {op} {prev} : tensor<8xf32>")
        else:
            lines.append(f"  %v{i} = {op} {prev}, %c : tensor<8xf32>")
        prev = f"%v{i}"
    lines += [f"  return {prev} : tensor<8xf32>", "}"]
    return "\n".join(lines)


def per_op(n: int) -> dict[str, float]:
    text = chain(n)
    t0 = time.perf_counter()
    prog = hlopipe.load(text)
    t1 = time.perf_counter()
    module_ir(prog)
    t2 = time.perf_counter()
    jax.make_jaxpr(prog.as_function())(np.ones(8, np.float32))
    t3 = time.perf_counter()
    return {"load": (t1 - t0) / n, "records": (t2 - t1) / n, "trace": (t3 - t2) / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--models", default=",".join(zoo_programs.CASES))
    args = parser.parse_args()
    console = Console()

    table = Table(title=f"rehydrated vs original (median of {args.runs} runs after warm-up)")
    for col in (
        "model",
        "run orig",
        "run rehydrated",
        "run ratio",
        "trace orig",
        "trace rehy.",
        "trace ratio",
    ):
        table.add_column(col, justify="right" if col != "model" else "left")
    for name in args.models.split(","):
        mo, mr = run_ratio(name, args.runs)
        to, tr = trace_ratio(name)
        table.add_row(
            name,
            f"{mo * 1e6:.1f} µs",
            f"{mr * 1e6:.1f} µs",
            f"{mr / mo:.2f}",
            f"{to * 1e3:.1f} ms",
            f"{tr * 1e3:.1f} ms",
            f"{tr / to:.2f}",
        )
    console.print(table)

    table = Table(title="synthetic chains: time per op")
    for col in ("ops", "load (parse)", "read records", "trace to jaxpr", "trace vs smallest"):
        table.add_column(col, justify="right")
    base = None
    for n in [int(s) for s in args.sizes.split(",")]:
        runs = [per_op(n) for _ in range(2)]  # the better of two: the machine is shared
        r = {k: min(x[k] for x in runs) for k in runs[0]}
        base = base or r["trace"]
        table.add_row(
            f"{n:,}",
            f"{r['load'] * 1e6:.1f} µs",
            f"{r['records'] * 1e6:.1f} µs",
            f"{r['trace'] * 1e6:.1f} µs",
            f"{r['trace'] / base:.2f}x",
        )
    console.print(table)


if __name__ == "__main__":
    main()
