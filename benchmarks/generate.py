"""Pipelined generation: tokens/s of a decode step split into S stages with k groups in
flight, against one device at the same per-group batch (k groups one after the other) and at
batch k*b (one group); inter-token latency; measured busy fraction against the simulated one;
bytes sent per token against the theory (activations and feedback only).

Run: ``python benchmarks/generate.py [--stages 4] [--groups 1,2,4,8] [--tokens 32]``
(8 simulated CPU devices). Each row: the median of ``--reps`` timed generations after a warm-up
one (compilation excluded). Measured busy fraction: each stage's step timed alone
(``Session.profile``) times its actions, over the wall time; simulated: ``schedules.decode``
simulated with those per-stage costs.

``python benchmarks/generate.py host [--reps 15]``: the generator's host time per token against
a plain Python loop over the jitted decode step (a tiny GPT: batch 2, 4 layers, d 32, cache 24,
exported with ``jax.export``, cache donated, no markers; a start and 23 tokens). Two paths: the
tokens read once at the end (``generate`` against a loop reading its tokens once), and every
step's tokens read as they come (``stream``, a server's path, against a loop reading each
token). Rows: 1 stage, 1 group against the loop; 2 stages x 2 groups against the loop running
the unsplit step for the 2 groups in turn. Each repetition runs every variant once, in
alternating order; the ratio and the time per token beyond the loop are medians over the
repetitions, in wall time and in the calling thread's CPU time (which other jobs on the machine
do not inflate).
"""

from __future__ import annotations

# ruff: noqa: E402 (the CPU device count is set before JAX starts)
import argparse
import statistics
import sys
import time

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp
import numpy as np

import hlopipe
from hlopipe import schedules
from hlopipe.generate import Generator
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig(vocab=256, max_len=128, d_model=128, n_heads=4, n_layers=8, d_ff=512)


def _programs(batch: int, stages: int):
    params = gd.init(jax.random.key(0), CFG)
    per = CFG.n_layers // stages
    cuts = tuple(range(per, CFG.n_layers, per)) if stages > 1 else ()
    ex = (params, gd.empty_cache(batch, CFG), jnp.zeros(batch, jnp.int32), jnp.int32(0))
    dec = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=cuts), donate_argnums=1)
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=cuts))
    d = hlopipe.load(jax.export.export(dec)(*ex).serialize())
    p = hlopipe.load(jax.export.export(pre)(params, jnp.zeros((batch, 8), jnp.int32)).serialize())
    return d, p, params


def _run(gen: Generator, groups: int, batch: int, tokens: int, reps: int) -> dict:
    gen = gen.with_groups(groups)
    prompts = np.asarray(gd.prompts(jax.random.key(1), groups, batch, 8, CFG))
    gen.start(prompts).generate(tokens)  # warm-up: compiles
    rows = []
    for _ in range(reps):
        session = gen.start(prompts)
        jax.block_until_ready([v for regs in session._regs for v in regs if v is not None])
        session.generate(tokens)
        assert session.metrics is not None  # set by generate
        rows.append(session.metrics)
    m = min(rows, key=lambda r: r.wall_s) if reps == 1 else rows[len(rows) // 2]
    wall = statistics.median(r.wall_s for r in rows)
    steps = tokens - 1  # the first token is the prefill's
    costs = session.profile()
    S = len(gen.plans)
    measured = [c * steps * groups / wall for c in costs]
    sim = schedules.simulate(
        schedules.decode(S, groups, steps), {f"F@{s}": c for s, c in enumerate(costs)}
    )
    simulated = [sim.busy[r] / sim.makespan for r in range(S)]
    sent = m.decode_bytes_sent
    per_token = (sent.activations + sent.feedback) / (steps * groups)
    theory = gen.bytes_per_token()
    return dict(
        tok_s=groups * batch * steps / wall,
        itl_ms=wall / steps * 1e3,
        host_us=m.host_per_action_s * 1e6,
        busy=np.mean(measured),
        sim_busy=np.mean(simulated),
        bytes=per_token,
        theory=theory.activations + theory.feedback,
        state=sent.state,
    )


def _mesh(shape: str, params) -> dict:
    """Stage mesh keywords: "2x2" is (data 2 x model 2) with Megatron-style specs."""
    if not shape:
        return {}
    from jax.sharding import PartitionSpec as P

    ln = {"g": P(), "b": P()}
    cols, rows = P(None, "model"), P("model", None)
    layer = dict(ln1=ln, qkv=cols, proj=rows, ln2=ln, fc1=cols, fc2=rows)
    specs = dict(embed=P(), pos=P(), layers=[layer] * len(params["layers"]), ln_f=ln, head=cols)
    dims = tuple(int(x) for x in shape.split("x"))
    return dict(stage_mesh_shape=dims, stage_mesh_axes=("data", "model"), param_specs=specs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--groups", default="1,2,4,8")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--stage-mesh", default="", help="DxM: each stage on a (data x model) mesh")
    a = ap.parse_args()
    ks = [int(x) for x in a.groups.split(",")]
    S, b = a.stages, a.batch
    dec, pre, params = _programs(b, S)
    split = Generator(dec, params, prefill=pre, **_mesh(a.stage_mesh, params))
    dec1, pre1, _ = _programs(b, 1)
    one = Generator(dec1, params, prefill=pre1, num_stages=1)
    print(
        f"model: {CFG.n_layers} layers, d_model {CFG.d_model}, vocab {CFG.vocab}; per-group "
        f"batch {b}; {a.tokens} tokens; CPU devices ({jax.devices()[0].platform})"
    )
    head = (
        f"{'setup':<22}{'tok/s':>9}{'ITL ms':>9}{'host us/act':>12}{'busy meas':>10}"
        f"{'busy sim':>9}{'B/token':>9}{'theory':>8}{'state B':>8}"
    )
    print(head)
    for k in ks:
        for name, gen, bb, kk in (
            (f"{S} stages x {k} groups", split, b, k),
            (f"1 device, {k} x b={b}", one, b, k),
        ):
            r = _run(gen, kk, bb, a.tokens, a.reps)
            print(
                f"{name:<22}{r['tok_s']:>9.0f}{r['itl_ms']:>9.2f}{r['host_us']:>12.0f}"
                f"{r['busy']:>10.2f}{r['sim_busy']:>9.2f}{r['bytes']:>9.0f}{r['theory']:>8}"
                f"{r['state']:>8}"
            )
        if k > 1:
            decK, preK, _ = _programs(b * k, 1)
            big = Generator(decK, params, prefill=preK, num_stages=1)
            r = _run(big, 1, b * k, a.tokens, a.reps)
            print(f"{f'1 device, b={b * k}':<22}{r['tok_s']:>9.0f}{r['itl_ms']:>9.2f}"
                  f"{r['host_us']:>12.0f}{r['busy']:>10.2f}{r['sim_busy']:>9.2f}")  # fmt: skip


HOST_CFG = gd.DecodeConfig(max_len=24)
HOST_B, HOST_N = 2, 23


def _host_programs():
    params = gd.init(jax.random.key(0), HOST_CFG)
    step = jax.jit(gd.decode_fn(HOST_CFG), donate_argnums=1)
    ex = (params, gd.empty_cache(HOST_B, HOST_CFG), jnp.zeros(HOST_B, jnp.int32), jnp.int32(0))
    return hlopipe.load(jax.export.export(step)(*ex).serialize()), params, step


def _timed(fn) -> tuple[float, float, np.ndarray]:
    w, c = time.perf_counter(), time.thread_time()
    out = fn()
    return time.perf_counter() - w, time.thread_time() - c, out


def _loop(step, params, first: np.ndarray, streamed: bool):
    """The plain loop: each group's cache placed, ``HOST_N`` steps of every group in turn
    (positions as Python ints), the tokens read each step (``streamed``) or once at the end."""
    empty = jax.tree.map(np.asarray, gd.empty_cache(HOST_B, HOST_CFG))

    def run() -> np.ndarray:
        G = first.shape[0]
        caches = [jax.device_put(empty) for _ in range(G)]
        toks = list(jax.device_put(list(first)))
        out: list[list] = [[] for _ in range(G)]
        for t in range(HOST_N):
            for g in range(G):
                toks[g], caches[g] = step(params, caches[g], toks[g], t)
                out[g].append(np.asarray(toks[g]) if streamed else toks[g])
        host = out if streamed else [jax.device_get(row) for row in out]
        return np.stack([np.stack(row, axis=-1) for row in host])

    return run


def _gen(gen: Generator, first: np.ndarray, streamed: bool):
    def run() -> np.ndarray:
        session = gen.start(tokens=first, position=0)
        if streamed:
            return np.stack(list(session.stream(HOST_N)), axis=-1)
        return session.generate(HOST_N)

    return run


def host_main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="generate.py host")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args(argv)
    dec, params, step = _host_programs()
    placed = jax.device_put(params)
    rng = np.random.default_rng(0)
    print(
        f"tiny GPT decode step: batch {HOST_B}, {HOST_CFG.n_layers} layers, d "
        f"{HOST_CFG.d_model}, cache {HOST_CFG.max_len}; a start + {HOST_N} tokens; "
        f"{jax.devices()[0].platform} devices; medians of {a.reps} alternated repetitions"
    )
    print(
        f"{'setup':<26}{'path':<10}{'gen ms':>8}{'loop ms':>8}{'ratio':>7}{'us/tok':>8}"
        f"{'CPU ratio':>10}{'CPU us/tok':>11}"
    )
    for S, G in ((1, 1), (2, 2)):
        gen = Generator(dec, params, num_stages=S, groups=G)
        first = rng.integers(0, HOST_CFG.vocab, (G, HOST_B)).astype(np.int32)
        for streamed in (False, True):
            variants = [_gen(gen, first, streamed), _loop(step, placed, first, streamed)]
            got = [v() for v in variants]  # warm-up (compiles), and the tokens compared
            if not np.array_equal(got[0], got[1]):
                raise SystemExit(f"{S} stages x {G} groups: the tokens differ from the loop's")
            runs: list[list[tuple[float, float]]] = [[], []]
            for r in range(a.reps):
                for k in (0, 1) if r % 2 == 0 else (1, 0):
                    w, c, _ = _timed(variants[k])
                    runs[k].append((w, c))
            toks = HOST_N * G
            cols = []
            for i in (0, 1):  # wall, thread CPU
                ratio = statistics.median(g[i] / lp[i] for g, lp in zip(*runs, strict=True))
                beyond = statistics.median(
                    (g[i] - lp[i]) / toks for g, lp in zip(*runs, strict=True)
                )
                cols.append((ratio, beyond * 1e6))
            gms, lms = (statistics.median(x[0] for x in rs) * 1e3 for rs in runs)
            name = f"{S} stage{'s' * (S > 1)} x {G} group{'s' * (G > 1)}"
            print(
                f"{name:<26}{'stream' if streamed else 'generate':<10}{gms:>8.2f}{lms:>8.2f}"
                f"{cols[0][0]:>7.2f}{cols[0][1]:>8.1f}{cols[1][0]:>10.2f}{cols[1][1]:>11.1f}"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["host"]:
        host_main(sys.argv[2:])
    else:
        main()
