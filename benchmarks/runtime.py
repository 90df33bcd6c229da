"""Pipeline runtime: dispatch overhead, controller cost per action, measured vs simulated
bubbles, and the MPMD runtime against a plain-JAX SPMD pipeline (shard_map + ppermute).

Run: ``python benchmarks/runtime.py`` (8 simulated CPU devices). Prints one rich table; every
time is the median of several steps after a warm-up step. Normal steps are timed (every action
issued asynchronously); bubbles come from separate profiled steps (``step(..., profile=True)``,
each action waited for and timed), compared with the schedule simulated with those costs.
``mesh_table``: parallelism inside a stage (collectives of merged vs forward-first sharding,
2-D stage meshes vs 1-D and plain jit). Only that table: ``python benchmarks/runtime.py mesh``.
``xfer_rows``: a cross-process transfer of one (microbatch, stage pair) against a bare
``ppermute`` of the same bytes, in a 2-process job it starts with ``hlopipe launch`` (rows of
the main table; only those: ``python benchmarks/runtime.py xfer``).
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
import time

import jax

if "--xfer-worker" not in sys.argv:  # a worker gets its devices from hlopipe launch
    jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp
import numpy as np
import optax
import small_step  # benchmarks/small_step.py (this script's folder is on the path)
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from rich.console import Console
from rich.table import Table

import hlopipe
from hlopipe import schedules
from hlopipe.models import gpt
from hlopipe.runtime import Pipeline

CFG = gpt.GPTConfig(vocab=64, seq=32, d_model=64, n_heads=4, n_layers=4, d_ff=256)
BATCH, M, P = 32, 8, 4
REPEATS = 7
OPT = optax.sgd(1e-2)


SCHEDULES = ("gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zb-v")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _median_step(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up (compiles)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def plain_microbatched(params, batch):
    """jax.jit(value_and_grad) per microbatch, gradients summed, then the update: one device."""
    vg = jax.jit(jax.value_and_grad(functools.partial(gpt.loss, cfg=CFG)))
    add = jax.jit(lambda a, b: jax.tree.map(jnp.add, a, b), donate_argnums=0)

    @functools.partial(jax.jit, donate_argnums=(1,))
    def update(g, s, p):
        g = jax.tree.map(lambda x: x / M, g)
        u, s = OPT.update(g, s, p)
        return optax.apply_updates(p, u), s

    b = BATCH // M
    mbs = [jax.tree.map(lambda x, i=i: x[i * b : (i + 1) * b], batch) for i in range(M)]
    state = {"p": params, "s": OPT.init(params)}

    def step():
        acc = None
        for mb in mbs:
            _, g = vg(state["p"], mb)
            acc = g if acc is None else add(acc, g)
        state["p"], state["s"] = update(acc, state["s"], state["p"])
        jax.block_until_ready(state["p"])

    return step


def pipeline_step(pipe: Pipeline, params, batch):
    st = {"s": pipe.init(params)}

    def step():
        st["s"], st["m"] = pipe.step(st["s"], batch)
        # the step returns without waiting (its loss is read only when asked for): wait for
        # its updated parameters and optimizer state, as the plain steps wait for theirs
        jax.block_until_ready((st["s"].values, st["s"].opt_states))

    return step, st


def spmd_pipeline(params, batch, devices):
    """A GPipe-style SPMD pipeline in plain JAX: the blocks stacked on a 'stage' mesh axis,
    microbatches shifted between stages with ppermute inside shard_map; jax.grad through it."""
    mesh = Mesh(np.array(devices[:P]), ("stage",))
    b = BATCH // M
    stacked = jax.tree.map(lambda *ls: jnp.stack(ls), *params["layers"])
    rest = {k: v for k, v in params.items() if k != "layers"}

    def blocks(stacked_local, xs):
        p = jax.tree.map(lambda a: a[0], stacked_local)
        idx = jax.lax.axis_index("stage")
        state = jnp.zeros(xs.shape[1:], xs.dtype)
        outs = jnp.zeros_like(xs)
        for t in range(M + P - 1):
            inp = jnp.where(idx == 0, xs[min(t, M - 1)], state)
            out = gpt.block(p, inp, CFG.n_heads)
            k = t - (P - 1)
            if k >= 0:
                outs = outs.at[k].set(jnp.where(idx == P - 1, out, 0.0))
            state = jax.lax.ppermute(out, "stage", [(i, (i + 1) % P) for i in range(P)])
        return jax.lax.psum(outs, "stage")

    smap = jax.shard_map(
        blocks,
        mesh=mesh,
        in_specs=(PartitionSpec("stage"), PartitionSpec()),
        out_specs=PartitionSpec(),
    )

    def loss(stacked, rest, batch):
        tokens, targets = batch
        x = rest["embed"][tokens] + rest["pos"][: tokens.shape[1]]
        ys = smap(stacked, x.reshape(M, b, *x.shape[1:])).reshape(x.shape)
        lg = gpt.layer_norm(rest["ln_f"], ys) @ rest["embed"].T
        logp = jax.nn.log_softmax(lg, axis=-1)
        return -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0].mean()

    stage_sh = NamedSharding(mesh, PartitionSpec("stage"))
    rep = NamedSharding(mesh, PartitionSpec())
    st = {
        "stacked": jax.device_put(stacked, stage_sh),
        "rest": jax.device_put(rest, rep),
    }
    st["s"] = jax.jit(OPT.init)((st["stacked"], st["rest"]))
    data = jax.device_put(batch, rep)

    @jax.jit
    def train(stacked, rest, s, batch):
        loss_v, g = jax.value_and_grad(loss, argnums=(0, 1))(stacked, rest, batch)
        u, s = OPT.update(g, s, (stacked, rest))
        (stacked, rest) = optax.apply_updates((stacked, rest), u)
        return stacked, rest, s, loss_v

    def step():
        st["stacked"], st["rest"], st["s"], st["loss"] = train(
            st["stacked"], st["rest"], st["s"], data
        )
        jax.block_until_ready(st["loss"])

    ref = float(gpt.loss(params, batch, CFG))
    got = float(jax.jit(loss)(st["stacked"], st["rest"], data))
    return step, abs(ref - got)


def main() -> None:
    console = Console()
    params = gpt.init(jax.random.key(0), CFG)
    batch = gpt.batch(jax.random.key(1), BATCH, CFG)
    devs = jax.devices()
    rows: list[tuple[str, str, str]] = []

    # 1. dispatch overhead: the pipeline with 1 stage on 1 device vs plain jit, same microbatches
    one = Pipeline(functools.partial(gpt.loss, cfg=CFG), params, batch, num_stages=1,
                   schedule="1f1b", num_microbatches=M, devices=devs[:1],
                   optimizer=OPT)  # fmt: skip
    plain = plain_microbatched(params, batch)
    step, st = pipeline_step(one, params, batch)
    plain(), step()
    t_plain_l, t_one_l = [], []
    for _ in range(REPEATS):  # interleaved, so that load changes hit both alike
        t_plain_l.append(_timed(plain))
        t_one_l.append(_timed(step))
    t_plain, t_one = statistics.median(t_plain_l), statistics.median(t_one_l)
    n_actions = sum(
        len([a for a in r if a]) for r in schedules.lower(one.schedule).actions.values()
    )
    res = one._last_result
    assert res is not None
    rows.append(
        ("plain jit(value_and_grad), 1 device", f"{t_plain * 1e3:.2f} ms", f"{M} microbatches")
    )
    rows.append(("pipeline, 1 stage on 1 device (1f1b)", f"{t_one * 1e3:.2f} ms",
                 f"ratio {t_one / t_plain:.3f} (goal <= 1.05)"))  # fmt: skip
    rows.append(("controller overhead per action", f"{(t_one - t_plain) / n_actions * 1e6:.0f} µs",
                 f"(pipeline - plain) / {n_actions} actions; issuing the stream alone "
                 f"{res.dispatch_ms / n_actions * 1e3:.0f} µs per action"))  # fmt: skip

    # 2. step time of each schedule (normal steps) and measured vs simulated bubble (profiled
    #    steps), 4 stages on 4 devices
    staged_fn = functools.partial(gpt.loss, cfg=CFG, boundary=hlopipe.stage_boundary,
                                  layers_per_stage=1)  # fmt: skip
    t_mpmd = None
    for name in SCHEDULES:
        ranks = P // 2 if name in ("interleaved-1f1b", "zb-v") else P
        pipe = Pipeline(staged_fn, params, batch, schedule=name, num_microbatches=M,
                        devices=devs[:ranks], optimizer=OPT)  # fmt: skip
        step, st = pipeline_step(pipe, params, batch)
        step()
        ts = [_timed(step) for _ in range(REPEATS)]
        meas, sim = [], []
        for _ in range(max(REPEATS // 2, 1)):
            st["s"], metrics = pipe.step(st["s"], batch, profile=True)
            tl = metrics.timeline
            meas.append(tl.bubble_fraction)
            sim_tl = schedules.simulate(pipe.schedule, tl.costs)
            sim.append(sim_tl.bubble_fraction)
        t = statistics.median(ts)
        b_meas, b_sim = statistics.median(meas), statistics.median(sim)
        if name == "gpipe":
            t_mpmd = t
        simulated = schedules.simulate(pipe.schedule).makespan
        rows.append((f"{name}, {pipe.schedule.num_stages} stages on {ranks} ranks x {M} mb",
                     f"step {t * 1e3:.1f} ms",
                     f"simulated makespan (unit costs) {simulated:g}; bubble "
                     f"{b_meas:.1%} measured (profiled) / {b_sim:.1%} simulated with "
                     f"measured costs = {b_meas / max(b_sim, 1e-9):.2f}"))  # fmt: skip

    # 3. MPMD (this runtime, GPipe) vs an SPMD pipeline in plain JAX, same model and microbatches
    spmd_step, dloss = spmd_pipeline(params, batch, devs)
    t_spmd = _median_step(spmd_step)
    assert t_mpmd is not None
    rows.append(("SPMD pipeline (shard_map + ppermute)", f"{t_spmd * 1e3:.1f} ms",
                 f"GPipe order, {P} stages; loss vs model {dloss:.1e}"))  # fmt: skip
    rows.append(("hlopipe MPMD pipeline (GPipe)", f"{t_mpmd * 1e3:.1f} ms",
                 f"ratio to SPMD {t_mpmd / t_spmd:.2f}"))  # fmt: skip

    # 4. a small model (a ~3 ms step): the host's share
    rows += small_step.small_rows()
    rows += small_step.ranks_rows(2)

    # 5. cross-process transfers: one (microbatch, stage pair) vs a bare collective
    rows += xfer_rows()

    table = Table(title=f"hlopipe runtime — GPT d={CFG.d_model} L={CFG.n_layers}, batch {BATCH}, "
                  f"median of {REPEATS} steps, {len(devs)} CPU devices")  # fmt: skip
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_column("notes")
    for r in rows:
        table.add_row(*r)
    console.print(table)


# -- cross-process transfers (issue 13) -------------------------------------------------------

XFER_REPEATS = 30


def xfer_worker() -> None:
    """One process of the 2-process transfer job: process 0 sends, process 1 receives, one
    device each. Times, interleaved (so that load changes hit all alike): the values of one
    (microbatch, stage pair) through ``Links`` (one collective), the same values one collective
    each (as before issue 13), and a bare ``ppermute`` of the same bytes."""
    from hlopipe.runtime import distributed

    distributed.initialize()
    from hlopipe.runtime._comm import Links

    me = jax.process_index()
    first = {int(d.process_index): d for d in reversed(jax.devices())}
    results = {}
    for label, shape in (("GPT boundary", (BATCH // M, CFG.seq, CFG.d_model)),
                         ("d=1024 seq=512 mb=4", (4, 512, 1024))):  # fmt: skip
        results[label] = _xfer_times(Links(), me, first, shape)
    if me == 0:
        print("RESULT " + json.dumps(results), flush=True)


def _xfer_times(links, me: int, first: dict, shape: tuple[int, ...]) -> dict[str, float]:
    src, dst = Mesh(np.array([first[0]]), ("data",)), Mesh(np.array([first[1]]), ("data",))
    avals = [jax.ShapeDtypeStruct(shape, np.float32)] * 2  # two values, as with a skip
    shs = [NamedSharding(dst, PartitionSpec())] * 2
    vals = None
    if me == 0:
        vals = [jax.device_put(np.full(shape, k + 1.0, np.float32), first[0]) for k in (0, 1)]
    pair = Mesh(np.array([first[0], first[1]]), ("pp",))
    sh = NamedSharding(pair, PartitionSpec("pp"))
    n = 2 * int(np.prod(shape))
    bare = jax.jit(
        jax.shard_map(
            lambda x: jax.lax.ppermute(x, "pp", [(0, 1)]),
            mesh=pair,
            in_specs=PartitionSpec("pp"),
            out_specs=PartitionSpec("pp"),
        )
    )
    bare = bare.lower(jax.ShapeDtypeStruct((2 * n,), np.float32, sharding=sh)).compile()
    local = jax.device_put(np.ones((n,), np.float32), first[me])
    g = jax.make_array_from_single_device_arrays((2 * n,), sh, [local])

    def grouped():
        return links.transfer(vals, src, dst, avals, shs)

    def apart():
        for k in range(2):
            links.transfer(None if vals is None else vals[k : k + 1], src, dst,
                           avals[k : k + 1], shs[k : k + 1])  # fmt: skip

    def plain():
        jax.block_until_ready(bare(g))

    out = grouped()
    if me == 1:
        np.testing.assert_array_equal(np.asarray(out[1]), np.full(shape, 2.0, np.float32))
    apart(), plain()
    times: dict[str, list[float]] = {"grouped": [], "apart": [], "bare": []}
    for _ in range(XFER_REPEATS):
        times["grouped"].append(_timed(grouped))
        times["apart"].append(_timed(apart))
        times["bare"].append(_timed(plain))
    result = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    result["bytes"] = n * 4
    return result


def xfer_rows() -> list[tuple[str, str, str]]:
    """The transfer job's rows: one (microbatch, stage pair)'s two values across processes."""
    import io

    from hlopipe.runtime.launch import launch

    out = io.StringIO()
    code = launch([sys.executable, __file__, "--xfer-worker"], nproc=2, devices_per_process=1,
                  timeout=600, out=out)  # fmt: skip
    line = next((ln for ln in out.getvalue().splitlines() if " RESULT " in ln), None)
    if code or line is None:
        print(out.getvalue()[-3000:])
        raise SystemExit(f"the transfer job failed (exit {code})")
    rows = []
    for label, r in json.loads(line.split(" RESULT ", 1)[1]).items():
        rows.append((f"cross-process transfer, 2 values ({label}, {r['bytes'] / 1024:.0f} KiB)",
                     f"{r['grouped']:.0f} µs",
                     f"ratio to a bare ppermute of the same bytes ({r['bare']:.0f} µs) "
                     f"{r['grouped'] / r['bare']:.2f} (goal <= 2); one collective per value "
                     f"{r['apart']:.0f} µs"))  # fmt: skip
    return rows


# -- parallelism inside a stage (issue 12) ---------------------------------------------------


def megatron_specs(params):
    """Column-split the first matmul of each pair, row-split the second, on "model"."""
    P_ = PartitionSpec
    layer = {
        "ln1": {"g": P_(), "b": P_()}, "qkv": P_(None, "model"), "proj": P_("model", None),
        "ln2": {"g": P_(), "b": P_()}, "fc1": P_(None, "model"), "fc1_b": P_("model"),
        "fc2": P_("model", None), "fc2_b": P_(),
    }  # fmt: skip
    return {"embed": P_(), "pos": P_(), "layers": [layer] * len(params["layers"]),
            "ln_f": {"g": P_(), "b": P_()}}  # fmt: skip


def _collectives(compiled_list) -> tuple[int, int]:
    from hlopipe.runtime._compile import collective_counts

    n = b = 0
    for c in compiled_list:
        for cnt, nbytes in collective_counts(c).values():
            n, b = n + cnt, b + nbytes
    return n, b


def _forward_first(ex):
    """The stage's F and B compiled the old way: the forward alone lets propagation lay out
    its residuals, the backward is pinned to whatever it chose."""
    from jax.extend.core import jaxpr_as_fun

    fb = ex.autodiff
    O = fb.num_outputs
    sds = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in fb.forward_jaxpr.in_avals]
    fwd = jaxpr_as_fun(fb.forward_jaxpr)
    f = jax.jit(lambda *a: tuple(fwd(*a)),
                in_shardings=(*ex.param_shardings, *ex.input_shardings),
                out_shardings=(*ex.output_shardings, *[None] * fb.num_residuals),
                keep_unused=True).lower(*sds).compile()  # fmt: skip
    res_sh = list(f.output_shardings)[O:]
    bwd = jaxpr_as_fun(fb.backward_jaxpr)
    b_sds = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in fb.backward_jaxpr.in_avals]
    b = jax.jit(lambda *a: tuple(bwd(*a)),
                in_shardings=(*ex.param_shardings, *res_sh, *ex.out_ct_shardings),
                out_shardings=(*ex.input_ct_shardings, *ex.acc_shardings),
                keep_unused=True).lower(*b_sds).compile()  # fmt: skip
    return f, b


def plain_jit_2d(params, batch, devices, shape):
    """The same model and optimizer under one jax.jit on a (data x model) mesh, Megatron
    specs, the batch split on data: tensor and data parallelism without a pipeline."""
    mesh = Mesh(np.array(devices[: shape[0] * shape[1]]).reshape(shape), ("data", "model"))
    p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), megatron_specs(params),
                        is_leaf=lambda x: isinstance(x, PartitionSpec))  # fmt: skip
    b_sh = NamedSharding(mesh, PartitionSpec("data"))
    loss = functools.partial(gpt.loss, cfg=CFG)

    @functools.partial(jax.jit, donate_argnums=(0, 1), out_shardings=(p_sh, None, None))
    def step(p, s, b):
        value, g = jax.value_and_grad(loss)(p, b)
        u, s = OPT.update(g, s, p)
        return optax.apply_updates(p, u), s, value

    st = {"p": jax.device_put(jax.device_get(params), p_sh)}  # own buffers: they are donated
    st["s"] = OPT.init(st["p"])
    b = jax.device_put(batch, b_sh)

    def run():
        st["p"], st["s"], value = step(st["p"], st["s"], b)
        jax.block_until_ready(value)

    return run


def mesh_table(console, params, batch, devs) -> None:
    """Per-stage collectives (merged vs forward-first sharding) and step times of 2 stages x a
    (2 data x 2 model) mesh against plain jit on the same 2-D mesh and the pipeline with 1-D
    (data-parallel) stages."""
    from hlopipe.runtime._compile import ExecKind

    staged_fn = functools.partial(gpt.loss, cfg=CFG, boundary=hlopipe.stage_boundary,
                                  layers_per_stage=CFG.n_layers // 2)  # fmt: skip
    two_d = Pipeline(staged_fn, params, batch, schedule="1f1b", num_microbatches=M,
                     devices=devs[:8], stage_mesh_shape=(2, 2),
                     stage_mesh_axes=("data", "model"), param_specs=megatron_specs(params),
                     optimizer=OPT)  # fmt: skip
    one_d = Pipeline(staged_fn, params, batch, schedule="1f1b", num_microbatches=M,
                     devices=devs[:8], stage_mesh_shape=(4,), optimizer=OPT)  # fmt: skip
    t2 = _median_step(pipeline_step(two_d, params, batch)[0])
    t1 = _median_step(pipeline_step(one_d, params, batch)[0])
    tj4 = _median_step(plain_jit_2d(params, batch, devs, (2, 2)))
    tj8 = _median_step(plain_jit_2d(params, batch, devs, (4, 2)))

    title = (f"parallelism in a stage — GPT d={CFG.d_model} L={CFG.n_layers}, batch {BATCH}, "
             f"{M} microbatches, 1F1B, Megatron specs, median of {REPEATS} steps")  # fmt: skip
    table = Table(title=title)
    for col in ("what", "collectives (count / KiB)", "step", "notes"):
        table.add_column(col, justify="left" if col in ("what", "notes") else "right")
    for ex in two_d.execs:
        s = ex.stage.index
        for what, (n, b), note in [
            ("merged F+B program", _collectives([ex.get(ExecKind.MERGED)]),
             "compiled once, never run"),
            ("F + B, merged sharding", _collectives([ex.get(ExecKind.F), ex.get(ExecKind.B)]),
             "shardings read from the merged program"),
            ("F + B, forward-first", _collectives(_forward_first(ex)),
             "forward chooses, backward pinned to it"),
        ]:  # fmt: skip
            table.add_row(f"stage {s}: {what}", f"{n} / {b / 1024:.1f}", "", note)
    table.add_row("pipeline 2 stages x (2 data x 2 model)", "", f"{t2 * 1e3:.1f} ms", "8 devices")
    table.add_row("pipeline 2 stages x (4 data)", "", f"{t1 * 1e3:.1f} ms",
                  f"8 devices; 2-D / 1-D {t2 / t1:.2f}")  # fmt: skip
    table.add_row("plain jit, (2 data x 2 model), no pipeline", "", f"{tj4 * 1e3:.1f} ms",
                  f"4 devices; pipeline 2-D / this {t2 / tj4:.2f}")  # fmt: skip
    table.add_row("plain jit, (4 data x 2 model), no pipeline", "", f"{tj8 * 1e3:.1f} ms",
                  f"8 devices; pipeline 2-D / this {t2 / tj8:.2f}")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    if sys.argv[1:2] == ["small"]:  # "small [width] [clip]": see small_step.py
        small_step.main(sys.argv[2:])
        sys.exit(0)
    if sys.argv[1:] == ["--xfer-worker"]:
        xfer_worker()
        sys.exit(0)
    if sys.argv[1:] == ["xfer"]:
        for row in xfer_rows():
            print(" | ".join(row))
        sys.exit(0)
    if sys.argv[1:] != ["mesh"]:
        main()
    params = gpt.init(jax.random.key(0), CFG)
    mesh_table(Console(), params, gpt.batch(jax.random.key(1), BATCH, CFG), jax.devices())
