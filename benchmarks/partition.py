"""Stage compiler benchmark: split + partition time vs program size, predicted vs measured.

1. Programs of about 1k, 10k and 50k equations (a deep residual MLP, traced once): time of
   ``split_jaxpr`` (cost model, repeated-layer search, exact partitioner, building the stages),
   split into phases. Tracing with ``jax.make_jaxpr`` is shown apart: it is JAX's cost.
2. A 4-stage split of a wider MLP: each stage's predicted compute time (roofline with FLOP and
   byte rates measured here) against its measured time (jitted, median of several runs).
3. A Llama-shaped loss at 7B's width (``hlopipe.models.llama``: d 4096, ff 11008, seq 2048,
   vocab 32000, bf16; mask, fill and rotary tables built once and read by every layer),
   lowered with abstract arguments and split by the cost model from its HLO text and from
   Python: the bytes sent between stages per microbatch, against the residual stream's
   (what must cross), and the time to lower, load and split. ``--llama-only`` runs this alone.
4. A Llama-shaped loss at 70B's dimensions (``llama.LLAMA_70B``: d 8192, ff 28672, 64 heads
   sharing 8 K/V heads, bf16) at 8, 32 and 80 layers, from abstract arguments: JAX's time to
   lower it beside hlopipe's time to load the HLO text and split it, and to split it from
   Python (trace + split); the fastest of three runs each (a new function each time, so
   JAX's tracing cache does not shorten the lowering); the layers per stage.
   ``--split-time`` runs this alone.

Run: ``.venv/bin/python benchmarks/partition.py``
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from hlopipe.stages import CostModel, split_jaxpr
from hlopipe.stages._cost import eqn_costs
from hlopipe.stages._partition import (
    candidate_boundaries,
    crossing_bytes,
    find_repeated_run,
    partition,
)


def _deep_mlp(n_layers: int, width: int):
    def f(ws, x):
        for w in ws:
            x = x + jnp.tanh(x @ w) * 0.5  # 4 equations per layer
        return jnp.sum(x * x)

    ws = [jax.ShapeDtypeStruct((width, width), jnp.float32)] * n_layers
    return f, ws, jax.ShapeDtypeStruct((8, width), jnp.float32)


def _median_time(fn, args, reps: int = 7) -> float:
    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def scaling(console: Console) -> None:
    table = Table(title="split + partition time (4 stages)")
    for col in (
        "equations",
        "trace (JAX)",
        "cost model",
        "layers",
        "partition (DP)",
        "total split",
    ):
        table.add_column(col, justify="right")
    for layers in (250, 2500, 12500):
        f, ws, x = _deep_mlp(layers, 8)
        t0 = time.perf_counter()
        closed = jax.make_jaxpr(f)(ws, x)
        t_trace = time.perf_counter() - t0
        eqns = closed.jaxpr.eqns
        n = len(eqns)
        t0 = time.perf_counter()
        flops, _ = eqn_costs(eqns)
        cross = crossing_bytes(eqns, closed.jaxpr.outvars)
        t_cost = time.perf_counter() - t0
        t0 = time.perf_counter()
        run = find_repeated_run(eqns, cross)
        cands = candidate_boundaries(n, cross, run)
        t_layers = time.perf_counter() - t0
        t0 = time.perf_counter()
        cb = np.asarray(cands)
        prefix = np.concatenate([[0.0], np.cumsum(flops)])
        partition(np.diff(prefix[cb]), cross[cb] / 1e10, 4)
        t_part = time.perf_counter() - t0
        t0 = time.perf_counter()
        staged = split_jaxpr(closed, num_stages=4)
        t_total = time.perf_counter() - t0
        assert staged.num_stages == 4
        table.add_row(
            f"{n:,}",
            f"{t_trace:.2f} s",
            f"{t_cost * 1e3:.0f} ms",
            f"{t_layers * 1e3:.0f} ms",
            f"{t_part * 1e3:.0f} ms",
            f"{t_total:.2f} s",
        )
    console.print(table)


def calibrate() -> CostModel:
    """FLOP rate from a large matmul, byte rate from a large elementwise op, on this machine."""
    a = jnp.ones((1024, 1024), jnp.float32)
    t = _median_time(jax.jit(lambda a: a @ a), (a,))
    flops = 2 * 1024**3 / t
    b = jnp.ones((8 * 1024 * 1024,), jnp.float32)
    t = _median_time(jax.jit(lambda b: b * 2.0 + 1.0), (b,))
    return CostModel(flops_per_s=flops, bytes_per_s=2 * b.nbytes / t, link_bytes_per_s=1e10)


def predicted_vs_measured(console: Console) -> None:
    cm = calibrate()
    width, layers = 512, 16
    f, ws, x = _deep_mlp(layers, width)
    x = jax.ShapeDtypeStruct((256, width), jnp.float32)
    closed = jax.make_jaxpr(f)(ws, x)
    staged = split_jaxpr(closed, num_stages=4, cost_model=cm)
    key = jax.random.key(0)
    flat = [
        jax.random.normal(jax.random.fold_in(key, i), a.shape) * 0.05
        for i, a in enumerate(staged.in_avals)
    ]
    table = Table(
        title=f"predicted vs measured per-stage compute ({layers}-layer MLP, width {width}, "
        f"batch 256; roofline at {cm.flops_per_s / 1e9:.1f} GFLOP/s, "
        f"{cm.bytes_per_s / 1e9:.1f} GB/s)"
    )
    for col in ("stage", "eqns", "GFLOP", "predicted", "measured", "measured/predicted"):
        table.add_column(col, justify="right")
    outs: list[list] = []
    for st in staged.stages:
        params = [flat[i] for i in st.params_needed]
        inputs = [outs[r.src][r.output] for r in st.receives]
        fn = jax.jit(st.fn)
        t = _median_time(fn, (*params, *inputs))
        outs.append(list(fn(*params, *inputs)))
        assert st.cost is not None
        table.add_row(
            str(st.index),
            str(st.num_eqns),
            f"{st.cost.flops / 1e9:.2f}",
            f"{st.cost.compute_time * 1e3:.2f} ms",
            f"{t * 1e3:.2f} ms",
            f"{t / st.cost.compute_time:.2f}",
        )
    console.print(table)


def llama_sends(console: Console, sizes: tuple[tuple[int, int], ...]) -> None:
    import hlopipe
    from hlopipe.models import llama

    table = Table(title="Llama-shaped loss at 7B width: bytes sent between stages per microbatch")
    for col in ("source", "layers", "stages", "sent / microbatch", "residual stream", "ratio",
                "lower (JAX)", "load + split"):  # fmt: skip
        table.add_column(col, justify="right")
    for source in ("HLO text", "Python"):
        for layers, stages in sizes:
            cfg = llama.LLAMA_7B._replace(layers=layers)
            fn, args = llama.loss_fn(cfg), llama.abstract_args(cfg)
            t0 = time.perf_counter()
            text = jax.jit(fn).lower(*args).as_text("hlo") if source == "HLO text" else ""
            t1 = time.perf_counter()
            if source == "HLO text":
                staged = hlopipe.split(hlopipe.load(text), num_stages=stages)
            else:
                staged = hlopipe.split(fn, *args, num_stages=stages)
            t2 = time.perf_counter()
            sent = sum(st.cost.recv_bytes for st in staged.stages if st.cost is not None)
            residual = (stages - 1) * cfg.batch * cfg.seq * cfg.d * jnp.dtype(cfg.dtype).itemsize
            table.add_row(
                source, str(layers), str(stages), f"{sent / 2**20:,.1f} MiB",
                f"{residual / 2**20:,.1f} MiB", f"{sent / residual:.2f}x",
                f"{t1 - t0:.1f} s" if text else "-", f"{t2 - t1:.1f} s",
            )  # fmt: skip
    console.print(table)


def _fastest(fn, reps: int = 3):
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def split_time(console: Console) -> None:
    import hlopipe
    from hlopipe.models import llama

    table = Table(title="Llama-shaped loss at 70B dimensions: split time beside JAX's lowering")
    for col in ("layers", "stages", "lower (JAX)", "load HLO", "load + split",
                "load + split / lower",
                "Python: trace + split", "layers per stage", "sent / microbatch"):  # fmt: skip
        table.add_column(col, justify="right")
    for layers, stages in ((8, 4), (32, 8), (80, 16)):
        cfg = llama.LLAMA_70B._replace(layers=layers)
        args = llama.abstract_args(cfg)

        def lower(cfg=cfg, args=args):  # a new function each time: no tracing cache hit
            return jax.jit(llama.loss_fn(cfg)).lower(*args).as_text("hlo")

        t_lower, text = _fastest(lower)
        t_load, _ = _fastest(functools.partial(hlopipe.load, text))

        def load_split(text=text, stages=stages):  # a new Program each time: nothing cached
            return hlopipe.split(hlopipe.load(text), num_stages=stages)

        t_both, staged = _fastest(load_split)

        def from_python(cfg=cfg, args=args, stages=stages):
            return hlopipe.split(llama.loss_fn(cfg), *args, num_stages=stages)

        t_py, _ = _fastest(from_python)
        sent = sum(st.cost.recv_bytes for st in staged.stages if st.cost is not None)
        table.add_row(
            str(layers), str(stages), f"{t_lower:.2f} s", f"{t_load:.2f} s", f"{t_both:.2f} s",
            f"{t_both / t_lower:.2f}x", f"{t_py:.2f} s",
            ",".join(str(st.layers) for st in staged.stages), f"{sent / 2**20:,.0f} MiB",
        )  # fmt: skip
    console.print(table)


def main() -> None:
    import sys

    console = Console(width=160)
    if "--split-time" in sys.argv:
        split_time(console)
        return
    if "--llama-only" not in sys.argv:
        scaling(console)
        predicted_vs_measured(console)
    llama_sends(console, ((8, 4), (32, 8)))
    split_time(console)


if __name__ == "__main__":
    main()
