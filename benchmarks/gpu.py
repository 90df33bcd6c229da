"""hlopipe's key ratios on one accelerator, in one short run (issue 52, part 3).

    .venv/bin/python benchmarks/gpu.py            # full sizes on a GPU, CPU sizes on a CPU
    .venv/bin/python benchmarks/gpu.py --small    # CPU sizes anywhere (make test's smoke run)

Rows, each a ratio of medians over interleaved repetitions (every repetition times each side
once, in alternating order, so that load drifting hits both alike):

1. rehydrated / original run time of ``jit(value_and_grad)`` of a Llama-shaped loss
   (``hlopipe.models.llama``; full size: 16 layers, width 2048, GQA 32/8 heads, vocabulary
   32000, batch 4 x 1024 tokens, bf16: ~1.2B parameters): from the exported StableHLO, and from
   the program XLA compiled (``compiled.as_text()``, the ``after_optimizations`` form; on a GPU
   it carries the GPU compiler's cuBLAS/cuDNN/Triton calls, ``rehydrate/ops/gpu.py``);
2. a 1-stage pipeline (``hlopipe.runtime.Pipeline``, 8 microbatches, SGD) / a plain loop of
   ``jit(value_and_grad)`` per microbatch, on an MLP whose batch is set for a ~1 ms and a
   ~10 ms plain step, with the pipeline's host time per action (the step's issuing time over
   its actions, ``StepMetrics.wall_s``);
3. a 1-stage ``Generator`` / a plain loop over the jitted decode step at batch 1 and 16 on a
   Llama shape (full size: Llama 3.2 1B's, 16 layers, width 2048, MLP 8192, 32/8 heads,
   vocabulary 128256: 1.24B parameters, random weights), greedy; its tokens must equal the
   loop's; with the generator's host time per action (``GenerateMetrics``);
4. ``hlopipe plan``'s prediction for row 1's model on this one device (``planner.estimate`` at
   tp = pp = dp = 1, no recompute, the program's batch, attention costed as written: XLA runs
   the einsums and softmax, not a fused kernel) against a training step of it measured here:
   ``jit`` of value_and_grad and an Adam update, on fp32 master weights cast to the model's
   dtype inside the step (the precision policy the planner assumes: 16-bit parameters with fp32
   master weights, gradients and moments), parameters and optimizer state donated. Step time
   against the wall clock (median), memory against XLA's memory analysis of the compiled step
   (arguments + outputs - aliased + temporaries; the planner's allocator allowance left out,
   as XLA's analysis counts buffers, not fragmentation). On a CPU the planner's ``cpu`` device
   is a nominal host (10^11 FLOP/s, 2 x 10^10 B/s), so the time ratio says little there.

On a CPU backend (or with ``--small``) every size is small and repetitions few: the run checks
that the script works (tests/test_gpu_benchmark.py runs it in ``make test``), not speed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

import hlopipe
from hlopipe import planner
from hlopipe.models import llama, llama_decode
from hlopipe.models.llama_decode import LlamaShape
from hlopipe.planfile import Layout, Recompute


class Sizes(NamedTuple):
    """What one run measures at."""

    loss: llama.LlamaConfig  # the rehydration ratio's model
    mlp_width: int  # the pipeline ratio's MLP
    mlp_batch0: int  # its batch before calibration
    step_targets_ms: tuple[float, ...]  # the plain steps the batch is calibrated to
    decode: LlamaShape  # the generation ratio's model
    decode_batches: tuple[int, ...]
    decode_tokens: int
    reps: int
    dtype: Any


# Llama 3.2 1B's shape (Meta's model card: 16 layers, width 2048, 32 query and 8 K/V heads,
# MLP 8192, vocabulary 128256; 1.24B parameters with an untied head)
LLAMA_1B = LlamaShape(layers=16, d=2048, ff=8192, heads=32, kv_heads=8, vocab=128256, max_len=256)
FULL = Sizes(
    loss=llama.LlamaConfig(
        layers=16,
        d=2048,
        ff=8192,
        heads=32,
        kv_heads=8,
        vocab=32000,
        seq=1024,
        batch=4,
        dtype=jnp.bfloat16,
    ),
    mlp_width=2048,
    mlp_batch0=1024,
    step_targets_ms=(1.0, 10.0),
    decode=LLAMA_1B,
    decode_batches=(1, 16),
    decode_tokens=64,
    reps=15,
    dtype=jnp.bfloat16,
)
SMALL = Sizes(
    loss=llama.LlamaConfig(layers=1, d=16, ff=32, heads=2, vocab=32, seq=8),
    mlp_width=64,
    mlp_batch0=64,
    step_targets_ms=(1.0, 10.0),
    decode=LlamaShape(layers=1, d=32, ff=64, heads=2, kv_heads=1, vocab=64, max_len=8),
    decode_batches=(1, 16),
    decode_tokens=6,
    reps=3,
    dtype=jnp.float32,
)
M = 8  # the pipeline's microbatches


class Row(NamedTuple):
    name: str
    value: float
    unit: str  # "x" for a ratio
    note: str


class Report(NamedTuple):
    rows: list[Row]
    tokens_equal: dict[int, bool]  # per decode batch: the generator's tokens == the loop's


def _ready(x: Any) -> Any:
    return jax.block_until_ready(x)


def _paired(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, list[float]]:
    """Seconds of each of ``fns`` (its result waited for), ``reps`` interleaved repetitions
    (ABAB.., BABA..) after one warm-up call each."""
    for fn in fns.values():
        _ready(fn())
    keys = list(fns)
    times: dict[str, list[float]] = {k: [] for k in keys}
    for rep in range(reps):
        for k in keys if rep % 2 == 0 else keys[::-1]:
            t0 = time.perf_counter()
            _ready(fns[k]())
            times[k].append(time.perf_counter() - t0)
    return times


def _ratio(times: dict[str, list[float]], num: str, den: str) -> float:
    return statistics.median(a / b for a, b in zip(times[num], times[den], strict=True))


def _ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


# ---- 1. rehydrated / original ------------------------------------------------------------------


def rehydration_rows(sizes: Sizes) -> list[Row]:
    cfg = sizes.loss
    # one compiled initialisation (eager jax.random would compile each op on its own)
    params = jax.jit(llama.init, static_argnums=1)(jax.random.key(0), cfg)
    tokens = np.random.default_rng(1).integers(0, cfg.vocab, (cfg.batch, cfg.seq), np.int32)
    labels = np.roll(tokens, -1, axis=1)
    vg = jax.jit(jax.value_and_grad(llama.loss_fn(cfg)))
    compiled = vg.lower(params, tokens, labels).compile()
    leaves = jax.tree.leaves((params, tokens, labels))
    n_params = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))
    exported = hlopipe.load(jax.export.export(vg)(params, tokens, labels).serialize())
    from_export = jax.jit(hlopipe.rehydrate(exported))
    fns: dict[str, Callable[[], Any]] = {
        "original": lambda: compiled(params, tokens, labels),
        "exported": lambda: from_export(*leaves),
    }
    compiled_text = compiled.as_text()
    refused = ""
    try:
        optimized = hlopipe.load(compiled_text.encode())
        from_compiled = jax.jit(hlopipe.rehydrate(optimized))
        jax.eval_shape(from_compiled, *leaves)
        fns["compiled"] = lambda: from_compiled(*leaves)
    except hlopipe.HlopipeError as e:  # a kernel hlopipe refuses: the row says which
        refused = str(e).splitlines()[0][:160]
    times = _paired(fns, sizes.reps)
    # the rehydrated programs compute what the original does: every output (the loss and the
    # gradients) within a relative L2 distance (bf16 at full size: the programs are compiled
    # apart, their roundings differ)
    want = np.concatenate(
        [np.ravel(np.asarray(x, np.float32)) for x in jax.tree.leaves(fns["original"]())]
    )
    distance = {}
    for k in fns:
        got = np.concatenate(
            [np.ravel(np.asarray(x, np.float32)) for x in jax.tree.leaves(fns[k]())]
        )
        distance[k] = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        if not distance[k] <= 5e-2:
            raise SystemExit(
                f"the rehydrated program ({k}) differs from the original: {distance[k]:.2e}"
            )
    what = (
        f"Llama {cfg.layers} layers, d {cfg.d}, {n_params / 1e9:.2f}B params, batch "
        f"{cfg.batch}x{cfg.seq}, {jnp.dtype(cfg.dtype).name}"
    )
    rows = [
        Row(
            "rehydrated (exported StableHLO) / original",
            _ratio(times, "exported", "original"),
            "x",
            f"value_and_grad; {what}; original {_ms(times['original']):.2f} ms; outputs "
            f"within {distance['exported']:.1e} (relative L2)",
        ),
    ]
    if "compiled" in fns:
        rows.append(
            Row(
                "rehydrated (XLA's optimised HLO) / original",
                _ratio(times, "compiled", "original"),
                "x",
                f"the program XLA compiled for {jax.default_backend()} (compiled.as_text()); "
                f"outputs within {distance['compiled']:.1e}",
            )
        )
    else:
        rows.append(
            Row("rehydrated (XLA's optimised HLO) / original", math.nan, "x", f"refused: {refused}")
        )
    return rows


# ---- 4. hlopipe plan's prediction / the measured step ------------------------------------------


def planner_device(device: Any) -> str | None:
    """The planner's device name (``stages.DEVICES``) of a JAX device, ``None`` if none."""
    if device.platform == "cpu":
        return "cpu"
    kind = str(getattr(device, "device_kind", "")).lower()
    for key, name in (("h200", "h200"), ("h100", "h100"), ("b200", "b200"), ("mi300", "mi300x")):
        if key in kind:
            return name
    if "a100" in kind:
        return "a100-80gb" if "80" in kind else "a100-40gb"
    return None


def plan_rows(sizes: Sizes) -> list[Row]:
    cfg = sizes.loss
    dev = jax.devices()[0]
    name = planner_device(dev)
    if name is None:
        note = f"no planner device for {getattr(dev, 'device_kind', dev.platform)!r}"
        return [Row(f"hlopipe plan / measured, {w}", math.nan, "x", note)
                for w in ("step time", "memory")]  # fmt: skip
    loss = llama.loss_fn(cfg)
    params = jax.jit(llama.init, static_argnums=1)(jax.random.key(0), cfg)
    dtypes = jax.tree.map(lambda x: x.dtype, params)
    master = jax.tree.map(lambda x: x.astype(jnp.float32), params)
    del params
    tokens = np.random.default_rng(2).integers(0, cfg.vocab, (cfg.batch, cfg.seq), np.int32)
    labels = np.roll(tokens, -1, axis=1)
    opt = optax.adam(1e-4)

    def train_step(m: Any, state: Any, tok: Any, lab: Any) -> Any:
        cast = lambda w: loss(jax.tree.map(lambda a, t: a.astype(t), w, dtypes), tok, lab)  # noqa: E731
        value, grads = jax.value_and_grad(cast)(m)
        updates, state = opt.update(grads, state, m)
        return optax.apply_updates(m, updates), state, value

    step = jax.jit(train_step, donate_argnums=(0, 1))
    st = {"m": master, "s": jax.jit(opt.init)(master)}
    compiled = step.lower(st["m"], st["s"], tokens, labels).compile()
    mem = compiled.memory_analysis()
    measured_bytes = (
        mem.argument_size_in_bytes
        + mem.output_size_in_bytes
        - mem.alias_size_in_bytes
        + mem.temp_size_in_bytes
    )

    def run_step() -> Any:
        st["m"], st["s"], value = compiled(st["m"], st["s"], tokens, labels)
        return value

    measured_s = statistics.median(_paired({"step": run_step}, sizes.reps)["step"])
    abstract = llama.abstract_args(cfg)
    profile = planner.profile_program(loss, *abstract, attention_fused=False)
    layout = Layout(tp=1, pp=1, dp=1, cp=1, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                    virtual_stages=1, microbatch_size=cfg.batch, microbatches=1)  # fmt: skip
    est = planner.estimate(profile, layout, planner.cluster_spec(name, 1), fused_attention=False)
    predicted_bytes = est.memory.total - est.memory.allocator
    m = est.memory
    return [
        Row(
            "hlopipe plan / measured, step time",
            est.step_time_s / measured_s,
            "x",
            f"planner device {name!r}: predicted {est.step_time_s * 1e3:.3g} ms, measured "
            f"{measured_s * 1e3:.3g} ms (value_and_grad + Adam, fp32 master weights)",
        ),
        Row(
            "hlopipe plan / measured, memory",
            predicted_bytes / measured_bytes,
            "x",
            f"predicted {_size(predicted_bytes)} (params {_size(m.params)}, grads "
            f"{_size(m.grads)}, optimizer {_size(m.optimizer)}, activations "
            f"{_size(m.activations)}, temporary {_size(m.temporary)}); XLA's analysis "
            f"{_size(measured_bytes)}",
        ),
    ]


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


# ---- 2. 1-stage pipeline / plain loop ---------------------------------------------------------


def _mlp_loss(p: Any, batch: Any) -> Any:
    x, y = batch
    h = x
    for w in p["ws"]:
        h = jnp.tanh(h @ w)
    return jnp.mean((h @ p["out"] - y) ** 2)


def _mlp(width: int, batch: int, dtype: Any) -> tuple[Any, Any]:
    ks = jax.random.split(jax.random.key(0), 6)
    params = {
        "ws": [
            (jax.random.normal(k, (width, width)) / np.sqrt(width)).astype(dtype) for k in ks[:3]
        ],
        "out": (jax.random.normal(ks[3], (width, 16)) / np.sqrt(width)).astype(dtype),
    }
    data = (
        np.asarray(jax.random.normal(ks[4], (batch, width)), dtype),
        np.asarray(jax.random.normal(ks[5], (batch, 16)), dtype),
    )
    return params, data


def _plain_step(params: Any, data: Any) -> Callable[[], Any]:
    """``jit(value_and_grad)`` per microbatch (on the device ahead), gradients summed, SGD."""
    vg = jax.jit(jax.value_and_grad(_mlp_loss))
    add = jax.jit(lambda a, b: jax.tree.map(jnp.add, a, b), donate_argnums=0)
    update = jax.jit(
        lambda p, g: jax.tree.map(lambda x, y: x - 0.01 * y / M, p, g), donate_argnums=0
    )
    b = data[0].shape[0] // M
    mbs = [
        jax.device_put(jax.tree.map(lambda x, i=i: x[i * b : (i + 1) * b], data)) for i in range(M)
    ]
    st = {"p": jax.device_put(params)}

    def step() -> Any:
        acc = None
        for mb in mbs:
            _, g = vg(st["p"], mb)
            acc = g if acc is None else add(acc, g)
        st["p"] = update(st["p"], acc)
        return st["p"]

    return step


def _time_plain(width: int, batch: int, dtype: Any) -> float:
    step = _plain_step(*_mlp(width, batch, dtype))
    times = _paired({"plain": step}, 3)["plain"]
    return statistics.median(times)


def pipeline_rows(sizes: Sizes) -> list[Row]:
    w, b0 = sizes.mlp_width, sizes.mlp_batch0
    t0 = _time_plain(w, b0, sizes.dtype)
    rows = []
    for target in sizes.step_targets_ms:
        batch, t = b0, t0
        # the plain step grows about linearly with the batch once the device is busy; a
        # device not yet busy at the first guess gets a second (full sizes only: each guess
        # compiles the plain step again)
        rounds = 1 if sizes is SMALL else 2
        for r in range(rounds):
            batch = max(M, round(batch * target * 1e-3 / t / M) * M)
            if r < rounds - 1:
                t = _time_plain(w, batch, sizes.dtype)
        rows += _pipeline_rows_at(sizes, target, batch)
    return rows


def _pipeline_rows_at(sizes: Sizes, target: float, batch: int) -> list[Row]:
    w = sizes.mlp_width
    params, data = _mlp(w, batch, sizes.dtype)
    pipe = hlopipe.Pipeline(
        _mlp_loss,
        params,
        data,
        num_stages=1,
        schedule="1f1b",
        num_microbatches=M,
        devices=jax.devices()[:1],
        optimizer=optax.sgd(0.01),
    )
    st = {"s": pipe.init(params)}
    walls: list[float] = []

    def pipe_step() -> Any:
        st["s"], m = pipe.step(st["s"], data)
        walls.append(m.wall_s)
        return st["s"].values

    times = _paired({"plain": _plain_step(params, data), "pipe": pipe_step}, sizes.reps)
    actions = hlopipe.schedules.lower(pipe.schedule).actions.values()
    n_actions = sum(len([a for a in r if a]) for r in actions)
    plain_ms, issue = _ms(times["plain"]), statistics.median(walls)
    return [
        Row(
            f"1-stage pipeline / plain loop, ~{target:g} ms step",
            _ratio(times, "pipe", "plain"),
            "x",
            f"plain {plain_ms:.2f} ms (MLP d {w}, batch {batch}, {M} microbatches)",
        ),
        Row(
            f"pipeline host time per action, ~{target:g} ms step",
            issue / n_actions * 1e6,
            "us",
            f"a step issued in {issue * 1e3:.2f} ms for {n_actions} actions",
        ),
    ]


# ---- 3. 1-stage Generator / plain decode loop -------------------------------------------------


def generation_rows(sizes: Sizes) -> tuple[list[Row], dict[int, bool]]:
    s, dtype = sizes.decode, sizes.dtype
    params = jax.jit(llama_decode.init, static_argnums=(1, 2))(jax.random.key(0), s, dtype)
    step = jax.jit(llama_decode.decode_fn(s), donate_argnums=1)
    rows, equal = [], {}
    for batch in sizes.decode_batches:
        batch_rows, equal[batch] = _generation_rows_at(sizes, params, step, batch)
        rows += batch_rows
    return rows, equal


def _generation_rows_at(sizes: Sizes, params: Any, step: Any, batch: int) -> tuple[list[Row], bool]:
    s, dtype, n = sizes.decode, sizes.dtype, sizes.decode_tokens
    placed = jax.device_put(params)
    avals = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype),
        (params, llama_decode.empty_cache(batch, s, dtype)),
    )
    exported = jax.export.export(step)(
        *avals, jax.ShapeDtypeStruct((batch,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32)
    )
    gen = hlopipe.Generator(hlopipe.load(exported.serialize()), params, num_stages=1)
    first = np.random.default_rng(batch).integers(0, s.vocab, (1, batch)).astype(np.int32)
    metrics: list[Any] = []

    def generate() -> np.ndarray:
        session = gen.start(tokens=first, position=0)
        out = session.generate(n)
        metrics.append(session.metrics)
        return out

    def loop() -> np.ndarray:
        cache = llama_decode.empty_cache(batch, s, dtype)
        tok = jax.device_put(first[0])
        out = []
        for t in range(n):
            tok, cache = step(placed, cache, tok, t)
            out.append(tok)
        return np.stack([np.asarray(t) for t in out], axis=-1)[None]

    equal = bool(np.array_equal(generate(), loop()))
    times = _paired({"loop": loop, "generator": generate}, sizes.reps)
    host = statistics.median(m.host_per_action_s for m in metrics) * 1e6
    note = (
        f"loop {_ms(times['loop']) / n:.2f} ms/token; Llama {s.layers} layers, d {s.d}, "
        f"{s.num_params() / 1e9:.2f}B params, {n} tokens; tokens {'equal' if equal else 'DIFFER'}"
    )
    return [
        Row(
            f"1-stage Generator / plain decode loop, batch {batch}",
            _ratio(times, "generator", "loop"),
            "x",
            note,
        ),
        Row(f"Generator host time per action, batch {batch}", host, "us", ""),
    ], equal


def run(small: bool | None = None) -> Report:
    """Every row; ``small``: CPU sizes (default: on a CPU backend)."""
    if small is None:
        small = jax.default_backend() == "cpu"
    sizes = SMALL if small else FULL
    rows = rehydration_rows(sizes) + pipeline_rows(sizes)
    gen_rows, equal = generation_rows(sizes)
    return Report(rows + gen_rows + plan_rows(sizes), equal)


def print_table(report: Report) -> None:
    device = jax.devices()[0]
    print(f"hlopipe on {device.platform} ({getattr(device, 'device_kind', '?')})")
    print(f"{'measure':<54}{'value':>10}  note")
    for r in report.rows:
        value = f"{r.value:.3f}x" if r.unit == "x" else f"{r.value:.1f} {r.unit}"
        print(f"{r.name:<54}{value:>10}  {r.note}")


def main(argv: list[str]) -> Report:
    ap = argparse.ArgumentParser(prog="benchmarks/gpu.py")
    ap.add_argument("--small", action="store_true", help="CPU sizes whatever the backend")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    report = run(True if a.small else None)
    print_table(report)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if not all(report.tokens_equal.values()):
        raise SystemExit("the Generator's tokens differ from the plain loop's")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
