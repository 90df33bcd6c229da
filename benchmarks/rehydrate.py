"""Rehydration cost: compiled run time and trace time against the original JAX, and trace time
per op as modules grow. First, per format, ``hlopipe.load`` against the bare parse a user could
call (jaxlib's HLO parser + XLA's HLO -> StableHLO converter + MLIR's parser;
``jax.export.deserialize`` + MLIR's parser; MLIR's parser).

Per model: the compiled run time of the rehydrated program over the original's (median of
RUNS runs after warm-up, the two timed alternately in one loop), and the time to rehydrate and
trace to a jaxpr over ``jax.make_jaxpr`` of the original Python. Then synthetic chains of 1k,
10k and 100k element-wise ops: load, read into records (ModuleIR) and trace, per op.

    .venv/bin/python benchmarks/rehydrate.py [--runs 20] [--sizes 1000,10000,100000] [--load-only]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path
from typing import Any

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


# ---- loading vs the bare parse -----------------------------------------------------------------

LOAD_FORMATS = ("hlo", "hlo-opt", "hlo-proto", "stablehlo", "mlir-bytecode", "jax-export")


def bare_parse(fmt: str, data: str | bytes) -> Any:
    """What a user could call to get an MLIR module: jaxlib's parsers and XLA's converter."""
    from jax.extend import mlir as jex_mlir
    from jaxlib.mlir import ir

    from hlopipe import _jax_compat

    if fmt in ("hlo", "hlo-opt"):
        hlo = _jax_compat.hlo_module_from_text(data)
        data = jex_mlir.hlo_to_stablehlo(hlo.as_serialized_hlo_module_proto())
    elif fmt == "hlo-proto":
        hlo = _jax_compat.hlo_module_from_proto(data)
        data = jex_mlir.hlo_to_stablehlo(hlo.as_serialized_hlo_module_proto())
    elif fmt == "jax-export":
        data = jax.export.deserialize(bytearray(data)).mlir_module()
    with _bare_context():
        return ir.Module.parse(data)


@functools.cache
def _bare_context() -> Any:
    from hlopipe.io import _xla

    return _xla.make_context()  # made once: a user parsing many programs would keep one


def load_ratio(name: str, fmt: str, runs: int) -> tuple[float, float]:
    """Median hlopipe.load and median bare parse of model ``name`` in ``fmt`` (alternated)."""
    data = zoo_programs.source(name, fmt)
    hlopipe.load(data)  # warm-up: imports, the guard process
    bare_parse(fmt, data)
    t_l, t_b = [], []
    for i in range(runs):
        pair = [(hlopipe.load, t_l), (lambda d: bare_parse(fmt, d), t_b)]
        for fn, acc in pair if i % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            fn(data)
            acc.append(time.perf_counter() - t0)
    return statistics.median(t_l), statistics.median(t_b)


def load_table(models: list[str], runs: int) -> Table:
    table = Table(title=f"hlopipe.load vs the bare parse (median of {runs} runs, alternated)")
    for col in ("model", "format", "bytes", "hlopipe.load", "bare parse", "ratio"):
        table.add_column(col, justify="left" if col in ("model", "format") else "right")
    for name in models:
        for fmt in LOAD_FORMATS:
            tl, tb = load_ratio(name, fmt, runs)
            size = len(zoo_programs.source(name, fmt))
            table.add_row(
                name, fmt, f"{size:,}", f"{tl * 1e3:.2f} ms", f"{tb * 1e3:.2f} ms", f"{tl / tb:.2f}"
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--models", default=",".join(zoo_programs.CASES))
    parser.add_argument(
        "--load-only", action="store_true", help="only the table of load vs bare parse"
    )
    parser.add_argument("--load-models", default="mlp,transformer")
    args = parser.parse_args()
    console = Console()

    console.print(load_table(args.load_models.split(","), max(args.runs, 5)))
    if args.load_only:
        return

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
