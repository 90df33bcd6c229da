"""A small model (a ~3 ms step): the host's share of a short step (issue 25, part 4).

1 stage on 1 device against plain ``jit(value_and_grad)`` on the same microbatches, side by
side in one process: every repetition times each variant once, in alternating order, and the
rows give the median of the per-repetition ratios with their quartiles and extremes (load
drifting between repetitions hits both sides of a ratio alike). The host time per action
beyond JAX is split within each step: the step's host time minus the time inside its calls
into JAX (each wrapped in a timer whose own cost is measured and taken off), in wall time and
in the issuing thread's CPU time (which the machine's load does not inflate).

Run: ``python benchmarks/small_step.py [width] [clip]`` (or ``python benchmarks/runtime.py
small [width] [clip]``); ``benchmarks/runtime.py`` prints these rows in its table, and the
same model in 2 stages on a device each (rows with sends between ranks; only those:
``python benchmarks/small_step.py ranks [stages]``).
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from hlopipe import schedules
from hlopipe.runtime import Pipeline

M = 8  # microbatches

SMALL_WIDTH, SMALL_BATCH, SMALL_REPEATS = 384, 64, 41
SMALL_CLIP = False  # "small clip": the pipeline clips by global norm before SGD (plain does not)


def _small_loss(p, batch):
    x, y = batch
    h = x
    for w in p["ws"]:
        h = jnp.tanh(h @ w)
    return jnp.mean((h @ p["out"] - y) ** 2)


def _small_setup():
    ks = jax.random.split(jax.random.key(0), 5)
    d = SMALL_WIDTH
    params = {"ws": [jax.random.normal(k, (d, d)) / np.sqrt(d) for k in ks[:3]],
              "out": jax.random.normal(ks[3], (d, 16)) / np.sqrt(d)}  # fmt: skip
    kx, ky = jax.random.split(ks[4])
    batch = (np.asarray(jax.random.normal(kx, (SMALL_BATCH, d))),
             np.asarray(jax.random.normal(ky, (SMALL_BATCH, 16))))  # fmt: skip
    return params, batch


def _small_plain(params, batch, *, host_slicing: bool):
    """``jit(value_and_grad)`` per microbatch, gradients summed, then SGD, on one device. With
    ``host_slicing`` the loop also slices the (NumPy) batch on the host each step and fetches
    its losses as floats; without, the microbatches are on the device ahead and nothing is
    fetched."""
    vg = jax.jit(jax.value_and_grad(_small_loss))
    add = jax.jit(lambda a, b: jax.tree.map(jnp.add, a, b), donate_argnums=0)
    update = jax.jit(lambda p, g: jax.tree.map(lambda x, y: x - 0.01 * y / M, p, g),
                     donate_argnums=(0,))  # fmt: skip
    b = SMALL_BATCH // M
    dev = jax.devices()[0]
    mbs = [jax.device_put(jax.tree.map(lambda x, i=i: x[i * b : (i + 1) * b], batch), dev)
           for i in range(M)]  # fmt: skip
    st = {"p": jax.device_put(params, dev), "losses": None}

    def step():
        acc, losses = None, []
        for i in range(M):
            mb = (
                jax.tree.map(lambda x, i=i: x[i * b : (i + 1) * b], batch)
                if host_slicing
                else mbs[i]
            )
            loss, g = vg(st["p"], mb)
            losses.append(loss)
            acc = g if acc is None else add(acc, g)
        st["p"] = update(st["p"], acc)
        if host_slicing:
            st["losses"] = [float(x) for x in losses]
        return st["p"]

    return step


class _JaxTimer:
    """Times every call into JAX a pipeline step makes (its executables, the prologues,
    ``jax.device_put``, the loss reduction, the optimizer's functions) by wrapping each in a
    timer; :meth:`restore` unwraps them. ``inside``: seconds inside the calls since the last
    :meth:`reset`; ``calls``: how many. The wrapper's own cost outside its timed window is
    measured by :meth:`calibrate` (a wrapped no-op) and taken off. ``clock``: wall time
    (``time.perf_counter``), or this thread's CPU time (``time.thread_time``: what the host
    spends, not counting the time the machine's load takes the core away)."""

    def __init__(self, pipe: Pipeline, clock) -> None:
        self.inside, self.calls, self.per_call, self.clock = 0.0, 0, 0.0, clock
        self.moving, self.moves = 0.0, 0  # of it, inside the sends between ranks
        self.depth = 0  # timed calls running (a call inside another is not counted twice)
        self.pipe, runner = pipe, pipe._runner(train=True)
        self.saved = (runner.stream._prepared, [p.fn for p in runner.prologues], jax.device_put,
                      pipe._reduce_losses, dict(pipe.param_store._opt_fns))  # fmt: skip
        ops = [ins.op for ins in runner.prog.instrs]
        runner.stream._prepared = [(n, fn and self.wrap(fn, move=ops[n] == "send"), *rest)
                                   for n, fn, *rest in runner.stream._prepared]  # fmt: skip
        for p in runner.prologues:
            p.fn = self.wrap(p.fn)
        jax.device_put = self.wrap(jax.device_put)
        pipe._reduce_losses = self.wrap(pipe._reduce_losses)
        for s, (init, phases) in self.saved[4].items():
            pipe.param_store._opt_fns[s] = (init, [self.wrap(f) for f in phases])

    def wrap(self, f, move: bool = False):
        clock = self.clock

        def timed(*a, **k):
            if self.depth and not move:  # inside another timed call (a send's jax.device_put)
                return f(*a, **k)
            self.depth += 1
            t0 = clock()
            try:
                out = f(*a, **k)
            finally:
                self.depth -= 1
            t = clock() - t0
            self.inside += t
            self.calls += 1
            if move:
                self.moving += t
                self.moves += 1
            return out

        return timed

    def reset(self) -> None:
        self.inside, self.calls, self.moving, self.moves = 0.0, 0, 0.0, 0

    def calibrate(self, n: int = 2000) -> None:
        noop, clock = self.wrap(lambda: None), self.clock
        self.reset()
        t0 = clock()
        for _ in range(n):
            noop()
        self.per_call = (clock() - t0 - self.inside) / n
        self.reset()

    def restore(self) -> None:
        runner = self.pipe._runner(train=True)
        runner.stream._prepared = self.saved[0]
        for p, fn in zip(runner.prologues, self.saved[1], strict=True):
            p.fn = fn
        jax.device_put = self.saved[2]
        self.pipe._reduce_losses = self.saved[3]
        self.pipe.param_store._opt_fns.update(self.saved[4])


def _host_beyond_jax(pipe: Pipeline, st: dict, batch, n_actions: int, repeats: int,
                     clock=time.perf_counter) -> dict:  # fmt: skip
    """Per step, issued and not waited for (the devices idle when it starts): host seconds of
    the step by ``clock``, seconds inside JAX's calls, and the rest per action (the wrappers'
    own cost taken off). Medians and (min, max) over ``repeats`` steps, each split within one
    step."""
    timer = _JaxTimer(pipe, clock)
    try:
        timer.calibrate()
        host, inside, beyond, per_move, calls, moves = [], [], [], [], 0, 0
        for _ in range(repeats):
            jax.block_until_ready(st["s"].values)
            timer.reset()
            t0 = clock()
            st["s"], st["m"] = pipe.step(st["s"], batch)
            h = clock() - t0
            calls, moves = timer.calls, timer.moves
            host.append(h)
            inside.append(timer.inside)
            beyond.append((h - timer.inside - calls * timer.per_call) / n_actions)
            per_move.append(timer.moving / moves if moves else 0.0)
        jax.block_until_ready(st["s"].values)
    finally:
        timer.restore()
    return {"host": statistics.median(host), "inside": statistics.median(inside),
            "beyond": statistics.median(beyond), "spread": (min(beyond), max(beyond)),
            "calls": calls, "wrapper": timer.per_call, "moves": moves,
            "per_move": statistics.median(per_move),
            "per_action": statistics.median(host) / n_actions}  # fmt: skip


def _jax_dispatch_us(repeats: int = 2000) -> float:
    """Host µs of one call of a tiny jitted executable (a scalar add), median over blocks of
    calls: JAX's own dispatch on this machine, for scale."""
    f = jax.jit(lambda x: x + 1.0)
    x = jax.device_put(np.float32(0), jax.devices()[0])
    jax.block_until_ready(f(x))
    per = []
    for _ in range(repeats // 100):
        t0 = time.perf_counter()
        for _ in range(100):
            y = f(x)
        per.append((time.perf_counter() - t0) / 100)
        jax.block_until_ready(y)
    return statistics.median(per) * 1e6


def _small_optimizer() -> Any:
    """SGD, or with ``small [width] clip`` SGD after a global-norm clip (a step in phases)."""
    if SMALL_CLIP:
        return optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.01))
    return optax.sgd(0.01)


def _paired(fns: dict, base: str, repeats: int, steps: int = 1) -> dict[str, list[float]]:
    """Seconds per step of each of ``fns`` (``steps`` steps back to back, one wait at the
    end), interleaved: every repetition times each once, in alternating order (ABC, CBA, ...),
    so that load drifting hits all alike. Returns the times, and per other function the ratio
    to ``base`` within each repetition (``"<name>/<base>"``)."""
    keys = list(fns)
    times: dict[str, list[float]] = {k: [] for k in keys}
    for k in keys:  # warm-up
        jax.block_until_ready(fns[k]())
    for rep in range(repeats):
        for k in keys if rep % 2 == 0 else keys[::-1]:
            fn = fns[k]
            t0 = time.perf_counter()
            for _ in range(steps):
                out = fn()
            jax.block_until_ready(out)
            times[k].append((time.perf_counter() - t0) / steps)
    for k in keys:
        if k != base:
            times[f"{k}/{base}"] = [a / b for a, b in zip(times[k], times[base], strict=True)]
    return times


def _spread(xs: list[float]) -> str:
    """``median (quartiles q1-q3; min-max)`` of ratios."""
    q = statistics.quantiles(xs, n=4)
    return f"{statistics.median(xs):.3f} (IQR {q[0]:.3f}-{q[2]:.3f}; {min(xs):.3f}-{max(xs):.3f})"


def _small_fns(pipe: Pipeline, st: dict, params, batch) -> dict:
    """The step functions compared: plain JAX (microbatches on the device ahead), plain JAX
    slicing on the host and fetching its losses, the pipeline given the NumPy batch, and the
    pipeline given the batch on its device ahead (as plain's microbatches are)."""
    on_dev = jax.device_put(batch, jax.devices()[0])

    def pipe_step(b=batch):
        st["s"], st["m"] = pipe.step(st["s"], b)
        return st["s"].values

    return {"plain": _small_plain(params, batch, host_slicing=False),
            "host": _small_plain(params, batch, host_slicing=True),
            "pipe": pipe_step, "pipe_dev": functools.partial(pipe_step, on_dev)}  # fmt: skip


def small_rows() -> list[tuple[str, str, str]]:
    """1 stage on 1 device against plain JAX on a ~3 ms step, side by side in one process
    (interleaved repetitions; medians of per-repetition ratios, with their spread), and the
    host time the pipeline spends per action beyond its calls into JAX."""
    params, batch = _small_setup()
    pipe = Pipeline(_small_loss, params, batch, num_stages=1, schedule="1f1b",
                    num_microbatches=M, devices=jax.devices()[:1],
                    optimizer=_small_optimizer())  # fmt: skip
    st = {"s": pipe.init(params)}
    fns = _small_fns(pipe, st, params, batch)
    one = _paired(fns, "plain", SMALL_REPEATS)
    n_actions = sum(
        len([a for a in r if a]) for r in schedules.lower(pipe.schedule).actions.values()
    )
    split = _host_beyond_jax(pipe, st, batch, n_actions, SMALL_REPEATS)
    cpu = _host_beyond_jax(pipe, st, batch, n_actions, SMALL_REPEATS, time.thread_time)
    dispatch = _jax_dispatch_us()
    # enqueued back to back: K steps, one wait at the end, the pipeline and plain alike
    chain = _paired({k: fns[k] for k in ("plain", "pipe", "pipe_dev")}, "plain", 9, steps=10)
    med = {k: statistics.median(v) * 1e3 for k, v in one.items() if "/" not in k}
    lo, hi = split["spread"]
    return [
        ("small model: plain jit(value_and_grad), 1 device", f"{med['plain']:.2f} ms",
         f"{M} microbatches on the device ahead, d={SMALL_WIDTH}, batch {SMALL_BATCH}; "
         f"{SMALL_REPEATS} repetitions, each timing every row below once (interleaved)"),
        ("small model: plain loop slicing on host, fetching losses", f"{med['host']:.2f} ms",
         f"ratio to plain {_spread(one['host/plain'])}"),
        ("small model: pipeline, 1 stage on 1 device, NumPy batch", f"{med['pipe']:.2f} ms",
         f"ratio to plain {_spread(one['pipe/plain'])} (goal <= 1.05)"),
        ("small model: pipeline, batch on its device ahead", f"{med['pipe_dev']:.2f} ms",
         f"ratio to plain {_spread(one['pipe_dev/plain'])} (goal <= 1.05)"),
        ("small model: 10 steps enqueued, one wait",
         f"{statistics.median(chain['pipe']) * 1e3:.2f} ms",
         f"per step; ratio to plain enqueued alike {_spread(chain['pipe/plain'])}; "
         f"batch on device {_spread(chain['pipe_dev/plain'])}"),
        ("small model: host time per action beyond JAX", f"{split['beyond'] * 1e6:.1f} µs",
         f"(goal <= 20) min-max {lo * 1e6:.1f}-{hi * 1e6:.1f} over {SMALL_REPEATS} steps; "
         f"a step issued in {split['host'] * 1e3:.2f} ms for {n_actions} actions, "
         f"{split['inside'] * 1e3:.2f} ms of it inside {split['calls']} JAX calls (on CPU a "
         f"small program also runs inside its call); timer {split['wrapper'] * 1e6:.2f} µs "
         f"a call taken off; a tiny jitted call here {dispatch:.1f} µs"),
        ("small model: the same in CPU time of the issuing thread",
         f"{cpu['beyond'] * 1e6:.1f} µs",
         f"min-max {cpu['spread'][0] * 1e6:.1f}-{cpu['spread'][1] * 1e6:.1f}; step "
         f"{cpu['host'] * 1e3:.2f} ms, inside JAX {cpu['inside'] * 1e3:.2f} ms, timer "
         f"{cpu['wrapper'] * 1e6:.2f} µs a call taken off (load takes no CPU time from it)"),
    ]  # fmt: skip


def ranks_rows(stages: int = 2) -> list[tuple[str, str, str]]:
    """``stages`` stages on one device each (1F1B) against plain JAX on one device, on the
    small model: the step's ratio, the host time per action (whole, and beyond JAX), and the
    host time of each send between ranks (one call per send point and receiving rank)."""
    params, batch = _small_setup()
    pipe = Pipeline(_small_loss, params, batch, num_stages=stages, schedule="1f1b",
                    num_microbatches=M, devices=jax.devices()[:stages],
                    optimizer=_small_optimizer())  # fmt: skip
    st = {"s": pipe.init(params)}
    fns = _small_fns(pipe, st, params, batch)
    one = _paired({k: fns[k] for k in ("plain", "pipe")}, "plain", SMALL_REPEATS)
    n_actions = sum(
        len([a for a in r if a]) for r in schedules.lower(pipe.schedule).actions.values()
    )
    wall = _host_beyond_jax(pipe, st, batch, n_actions, SMALL_REPEATS)
    cpu = _host_beyond_jax(pipe, st, batch, n_actions, SMALL_REPEATS, time.thread_time)
    name = f"small model, {stages} stages x 1 device"
    return [
        (f"{name}: pipeline / plain (1 device)", f"{_spread(one['pipe/plain'])}",
         f"pipeline {statistics.median(one['pipe']) * 1e3:.2f} ms, plain "
         f"{statistics.median(one['plain']) * 1e3:.2f} ms; {SMALL_REPEATS} interleaved "
         "repetitions"),
        (f"{name}: host time per action", f"{wall['per_action'] * 1e6:.1f} µs",
         f"CPU {cpu['per_action'] * 1e6:.1f} µs; beyond JAX {wall['beyond'] * 1e6:.1f} µs "
         f"(CPU {cpu['beyond'] * 1e6:.1f}); a step issued in {wall['host'] * 1e3:.2f} ms "
         f"for {n_actions} actions"),
        (f"{name}: host time per send", f"{wall['per_move'] * 1e6:.1f} µs",
         f"CPU {cpu['per_move'] * 1e6:.1f} µs; {wall['moves']} sends a step (each one call "
         "moving a send point's values to one rank)"),
    ]  # fmt: skip


def main(argv: list[str]) -> None:
    """``[width] [clip]``: print the rows, one per line."""
    global SMALL_WIDTH, SMALL_CLIP
    if argv and argv[0] == "ranks":  # "ranks [stages]": only the rows with sends
        for row in ranks_rows(int(argv[1]) if argv[1:] else 2):
            print(" | ".join(row))
        return
    SMALL_CLIP = "clip" in argv
    if argv and argv[0] != "clip":
        SMALL_WIDTH = int(argv[0])
    for row in small_rows():
        print(" | ".join(row))


if __name__ == "__main__":
    jax.config.update("jax_num_cpu_devices", 8)  # as benchmarks/runtime.py: ranks on devices
    main(sys.argv[1:])
