"""The README's main job (``make demo`` -> ``hlopipe demo``).

1. Loads the tiny GPT loss shipped as HLO text in the package, rehydrates it into a JAX
   function, and checks it against the original JAX model: the loss value, the gradient norm
   and the largest difference of value and gradients.
2. Pipeline-trains that HLO file: split at its 3 stage markers into 4 stages, 1F1B, on 8
   simulated CPU devices (4 stages x 2 data-parallel devices), a few dozen adam steps with a
   progress bar; then the same training of the JAX model on one device, the largest loss
   difference, and the measured timeline of the last step written to a PNG it names.

``main`` asks for 8 CPU devices (``jax.config.update("jax_num_cpu_devices", 8)``) before
anything initialises a JAX backend; that only works if nothing in the process has touched
devices yet, so call it first (the ``hlopipe demo`` command does). With fewer devices the
pipeline part uses one device per stage.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from importlib import resources
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def demo_files() -> tuple[Any, dict[str, Any]]:
    data = resources.files("hlopipe.models") / "data"
    meta = json.loads((data / "tiny_gpt_loss.json").read_text())
    return data / "tiny_gpt_loss.hlo", meta


def run_rehydration_demo(print_fn: Any = print) -> dict[str, float]:
    """Rehydrate the shipped HLO and compare with the original model; returns the numbers."""
    from hlopipe.io import load
    from hlopipe.models import gpt

    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(meta["param_seed"]), cfg)
    batch = gpt.batch(jax.random.key(meta["batch_seed"]), meta["batch"], cfg)

    t0 = time.perf_counter()
    prog = load(path.read_text())
    f = prog.as_function()
    t_load = time.perf_counter() - t0
    print_fn(
        f"loaded {path.name}: {prog.format}, {sum(prog.op_counts().values())} ops, "
        f"{len(prog.in_avals)} arguments, {prog.stage_markers()} stage markers "
        f"({t_load * 1e3:.0f} ms)"
    )
    print_fn(f"next, look inside it: hlopipe inspect {path}")

    leaves, treedef = jax.tree.flatten((params, batch))

    def rehydrated_loss(params: Any, batch: Any) -> jax.Array:
        return f(*jax.tree.leaves((params, batch)))

    def original_loss(params: Any, batch: Any) -> jax.Array:
        return gpt.loss(params, batch, cfg)

    del leaves, treedef
    print_fn(
        "compiling value_and_grad of the rehydrated and of the original loss with XLA "
        "(some seconds on CPU)..."
    )
    v_r, g_r = jax.jit(jax.value_and_grad(rehydrated_loss))(params, batch)
    v_o, g_o = jax.jit(jax.value_and_grad(original_loss))(params, batch)
    gnorm = float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(g_r))))
    dv = abs(float(v_r) - float(v_o))
    dg = max(
        float(jnp.max(jnp.abs(a - b)))
        for a, b in zip(jax.tree.leaves(g_r), jax.tree.leaves(g_o), strict=True)
    )
    print_fn(f"loss (rehydrated)      {float(v_r):.6f}")
    print_fn(f"loss (original JAX)    {float(v_o):.6f}")
    print_fn(f"gradient norm          {gnorm:.6f}")
    print_fn(f"max |difference|       value {dv:.2e}, gradients {dg:.2e}")
    return {
        "loss": float(v_r),
        "grad_norm": gnorm,
        "max_value_diff": dv,
        "max_grad_diff": dg,
        "ok": float(np.isfinite(gnorm)),
    }


DEMO_DEVICES = 8
DEMO_STEPS = 30
DEMO_MICROBATCHES = 4
DEMO_LR = 1e-2


def run_pipeline_demo(
    console: Any, steps: int | None = None, plot_path: str | None = None
) -> dict[str, Any]:
    """Train the shipped HLO loss with 1F1B on 4 stages x 2 devices and compare with one
    device; returns the numbers (losses, max difference, plot path). ``steps``: DEMO_STEPS
    when not given (read when called: a test of ``hlopipe demo`` trains fewer)."""
    import optax

    from hlopipe.models import gpt
    from hlopipe.runtime import Pipeline

    steps = DEMO_STEPS if steps is None else steps
    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(meta["param_seed"]), cfg)
    m = DEMO_MICROBATCHES
    batches = [gpt.batch(jax.random.key(1000 + k), meta["batch"] * m, cfg) for k in range(steps)]
    devices = jax.devices()
    group = 2 if len(devices) >= 8 else 1
    opt = optax.adam(DEMO_LR)

    console.print(
        f"splitting {path.name} at its markers and compiling each stage's forward and backward "
        f"for its {group} device{'s' if group > 1 else ''}..."
    )
    t0 = time.perf_counter()
    pipe = Pipeline(
        str(path),
        params,
        batches[0],
        schedule="1f1b",
        num_microbatches=m,
        devices=devices[: 4 * group],
        stage_mesh_shape=(group,),
        optimizer=opt,
    )
    t_build = time.perf_counter() - t0
    # the pipeline's own lines (one per rank) first, then a blank line, then what it trains
    console.print(f"{pipe}\n")
    console.print(
        f"built in {t_build:.1f} s; training with adam({DEMO_LR}), "
        f"{len(batches[0][0])} sequences per step"
    )
    losses, t_train = _train_pipelined(console, pipe, params, batches)
    t0 = time.perf_counter()
    ref = _train_one_device(params, batches, cfg, opt, devices[0])
    t_one = time.perf_counter() - t0
    diff = max(abs(a - b) for a, b in zip(losses, ref, strict=True))
    console.print(
        f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {steps} steps; pipeline: "
        f"{_clock(t_train)} training, as the bar shows, after {t_build:.1f} s splitting and "
        f"compiling; one device: {t_one:.1f} s, compiling included"
    )
    console.print(f"max |loss difference| pipeline vs one device: {diff:.2e}")
    out = _show_timeline(console, pipe, plot_path)
    return {"losses": losses, "reference": ref, "max_loss_diff": diff, "plot": out}


def _clock(seconds: float) -> str:
    """``seconds`` as the progress bar shows elapsed time (``0:00:05``), then exactly."""
    from datetime import timedelta

    return f"{timedelta(seconds=int(seconds))} ({seconds:.1f} s)"


def _train_pipelined(
    console: Any, pipe: Any, params: Any, batches: list[Any]
) -> tuple[list[float], float]:
    """One pipeline step per batch, with a progress bar; the last step is profiled. Returns
    the losses and the seconds the bar ran (what its elapsed column shows)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    state = pipe.init(params)
    losses: list[float] = []
    with Progress(
        TextColumn("[bold]pipeline 1F1B"),
        BarColumn(),
        TextColumn("step {task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("train", total=len(batches), loss="…")
        for k, b in enumerate(batches):
            # the last step is profiled: its measured timeline is drawn below
            state, metrics = pipe.step(state, b, profile=k == len(batches) - 1)
            losses.append(metrics.loss)
            progress.update(task, advance=1, loss=f"{metrics.loss:.4f}")
        bar = progress.tasks[0]
        shown = bar.finished_time if bar.finished else bar.elapsed  # what TimeElapsedColumn shows
    return losses, shown or 0.0


def _train_one_device(params: Any, batches: list[Any], cfg: Any, opt: Any, dev: Any) -> list[float]:
    """The same training of the JAX model on one device: its loss per step."""
    import optax

    from hlopipe.models import gpt

    @jax.jit
    def step(p: Any, s: Any, b: Any) -> Any:
        loss, g = jax.value_and_grad(gpt.loss)(p, b, cfg)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    p1 = jax.device_put(params, dev)
    s1 = opt.init(p1)
    ref: list[float] = []
    for b in batches:
        p1, s1, loss = step(p1, s1, jax.device_put(b, dev))
        ref.append(float(loss))
    return ref


def _show_timeline(console: Any, pipe: Any, plot_path: str | None) -> str:
    """Plot the last step's measured timeline beside the simulated bubble; returns the path."""
    from hlopipe import schedules

    tl = pipe.timeline()
    sim = schedules.simulate(pipe.schedule, tl.costs)
    out = plot_path or os.path.join(tempfile.gettempdir(), "hlopipe-demo-timeline.png")
    schedules.plot(
        tl,
        out,
        title=(
            f"measured 1F1B step on {pipe.placement.num_ranks} ranks x "
            f"{pipe.placement.group_size} CPU devices (ms): bubble {tl.bubble_fraction:.0%}, "
            f"simulated with measured costs {sim.bubble_fraction:.0%}"
        ),
    )
    console.print(
        f"measured bubble {tl.bubble_fraction:.1%} (simulated with the measured per-stage "
        f"costs: {sim.bubble_fraction:.1%}); the last step's measured timeline, a picture:"
    )
    console.print(f"  {out}", soft_wrap=True)
    if jax.devices()[0].platform == "cpu":
        ideal = schedules.simulate(
            pipe.schedule,
            {schedules.CostKey(schedules.Kind.F): 1.0, schedules.CostKey(schedules.Kind.B): 2.0},
        ).bubble_fraction
        console.print(
            "why the bubble is large here: each stage of this tiny model computes for well "
            "under a millisecond, so the fixed cost of each action and of each transfer "
            "between device groups weighs as much as the work, and the simulated CPU devices "
            f"share this machine's cores; the schedule's own bubble (compute only, B = 2F) is "
            f"{ideal:.0%} and shrinks with more microbatches."
        )
    return out


def _ask_for_cpu_devices(n: int) -> None:
    # a backend already up keeps its devices; the demo then uses the devices there are
    with contextlib.suppress(RuntimeError):  # what JAX raises once a backend is up
        jax.config.update("jax_num_cpu_devices", n)


def demo_console(file: Any = None) -> Any:
    """The demo's console: on a terminal, its width; piped or redirected, long lines stay
    whole (rich would wrap them at 80 columns)."""
    from rich.console import Console

    out = file or sys.stdout
    return Console(file=file, highlight=False, soft_wrap=not out.isatty())


def main() -> int:
    # Before anything initialises a backend (see the module docstring).
    _ask_for_cpu_devices(DEMO_DEVICES)
    console = demo_console()
    console.rule("[bold]hlopipe demo 1/2: rehydrate a tiny GPT loss from HLO text")
    out = run_rehydration_demo(console.print)
    ok = out["max_value_diff"] <= 1e-5 and out["max_grad_diff"] <= 1e-5
    console.print(
        "[green]rehydrated program matches the original[/]"
        if ok
        else "[red]rehydrated program differs from the original[/]"
    )
    console.rule("[bold]hlopipe demo 2/2: pipeline-train the HLO file on 8 CPU devices")
    res = run_pipeline_demo(console)
    same = res["max_loss_diff"] <= 1e-4
    console.print(
        "[green]pipeline training matches one-device training[/]"
        if same
        else "[red]pipeline training differs from one-device training[/]"
    )
    return 0 if ok and same else 1
