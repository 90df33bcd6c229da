"""The ``hlopipe`` command.

Each subcommand is a pair of functions, ``_add_<name>(subparsers)`` that declares its
arguments and ``_cmd_<name>(args) -> int`` that runs it. Errors a user can cause are
:class:`~hlopipe.errors.HlopipeError`; they print one ``error: ...`` line and exit 2 (with a
traceback under ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from hlopipe.errors import HlopipeError

# name -> (adder, handler); filled by the _register decorator below.
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {}


def _register(name: str, help: str):
    def deco(adder: Callable[[argparse.ArgumentParser], None]):
        def wrap(handler: Callable[[argparse.Namespace], int]):
            _COMMANDS[name] = (adder, handler)
            handler.__doc__ = help
            return handler

        return wrap

    return deco


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors follow the one-line ``error: ...`` / exit 2 convention."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hlopipe", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, (adder, handler) in _COMMANDS.items():
        p = sub.add_parser(name, help=handler.__doc__, description=handler.__doc__)
        p.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks on errors",
        )
        adder(p)
        p.set_defaults(_handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # XLA's C++ INFO logs would drown the output.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return int(args._handler(args) or 0)
    except HlopipeError as e:
        if debug:
            traceback.print_exc()
        msg = " ".join(str(e).split("\n")[0].split()) if not debug else str(e)
        print(f"error: {_one_line(e)}" if not debug else f"error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _one_line(e: BaseException) -> str:
    """The error as one line: its lines joined, whitespace collapsed."""
    return " ".join(str(e).split())


# ---------------------------------------------------------------------------------------------
# Subcommands. Each room adds its own pair below; keep them in this order:
# inspect, run (io/rehydrate) · schedule (schedules) · conformance (rehydrate) ·
# split (stages) · train, demo (runtime) · launch (distributed).
# ---------------------------------------------------------------------------------------------


# -- schedule (schedules) ---------------------------------------------------------------------


def _add_schedule(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        help="schedule name: gpipe, 1f1b, interleaved-1f1b, looped-bfs, "
        "zb-h1, zb-h2, zb-v, inference (case-insensitive)",
    )
    p.add_argument("--ranks", type=int, default=4, help="pipeline ranks (default 4)")
    p.add_argument("--microbatches", type=int, default=8, help="microbatches (default 8)")
    p.add_argument(
        "--virtual", type=int, default=None, help="stages per rank (default: the schedule's own)"
    )
    p.add_argument(
        "--costs", default=None, help="costs such as F=1,B=2,W=1,send=0.1 (F@3=1.5: stage 3's F)"
    )
    p.add_argument("--plot", default=None, metavar="PATH", help="write a Gantt chart (.png/.svg)")
    p.add_argument("--trace", default=None, metavar="PATH", help="write a Chrome trace (.json)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the grid")


@_register("schedule", help="generate, check and simulate a pipeline schedule")(_add_schedule)
def _cmd_schedule(args: argparse.Namespace) -> int:
    import json

    from hlopipe import schedules

    costs = schedules.parse_costs(args.costs) if args.costs else None
    schedule = schedules.get(args.name, args.ranks, args.microbatches, args.virtual)
    schedules.validate(schedule)
    lowered = schedules.lower(schedule)
    schedules.validate(lowered)
    timeline = schedules.simulate(lowered, costs)
    if args.plot:
        schedules.plot(timeline, args.plot)
    if args.trace:
        schedules.to_chrome_trace(timeline, args.trace)
    summary = {
        "makespan": timeline.makespan,
        "bubble_fraction": timeline.bubble_fraction,
        "span_bubble_fraction": timeline.span_bubble_fraction,
        "peak_activations": timeline.peak_activations,
    }
    if args.json:
        doc = {
            "name": schedule.name,
            "num_ranks": schedule.num_ranks,
            "num_stages": schedule.num_stages,
            "num_microbatches": schedule.num_microbatches,
            "stage_to_rank": list(schedule.stage_to_rank),
            "actions": {r: [str(a) for a in row if a] for r, row in schedule.actions.items()},
            "costs": timeline.costs,
            **summary,
        }
        print(json.dumps(doc, indent=1))
        return 0
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    grid = Text(schedules.format_grid(schedules.align(schedule)))
    for kind, style in (("F", "blue"), ("B", "green"), ("I", "cyan"), ("W", "magenta")):
        grid.highlight_regex(rf"\b\d+{kind}\d+\b", style)
    console.print(
        f"[bold]{schedule.name}[/]: {schedule.num_ranks} ranks, {schedule.num_stages} stages, "
        f"{schedule.num_microbatches} microbatches (grid: one step per action)"
    )
    console.print(grid, soft_wrap=True)
    peaks = " ".join(str(timeline.peak_activations[r]) for r in range(schedule.num_ranks))
    console.print(
        f"makespan {timeline.makespan:g}  bubble {timeline.bubble_fraction:.2%}  "
        f"(within each rank's span {timeline.span_bubble_fraction:.2%})  "
        f"peak activations per rank: {peaks}",
        soft_wrap=True,
    )
    for label, path in (("plot", args.plot), ("trace", args.trace)):
        if path:
            console.print(f"{label} written to {path}")
    return 0


# ---- inspect, run (io / rehydrate) ------------------------------------------------------------


def _add_inspect(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program (any format), a dump folder, or a manifest.json")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--no-cost", action="store_true", help="skip XLA's cost analysis")


@_register("inspect", "show a program's format, signature, ops, cost, markers, unsupported ops")(
    _add_inspect
)
def _cmd_inspect(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    if Path(args.file).name == "manifest.json":
        from hlopipe import stages

        print(stages.format_manifest(args.file))
        return 0
    from hlopipe.io import load
    from hlopipe.io._program import _fmt_aval
    from hlopipe.rehydrate import module_ir, scan_unsupported

    prog = load(args.file, module=args.module)
    counts = prog.op_counts(entry_only=False)
    cost: dict[str, float] = {}
    if not args.no_cost:
        try:
            cost = prog.cost_analysis()
        except Exception as e:  # cost analysis is informative only
            cost = {"error": str(e).splitlines()[0]}  # type: ignore[dict-item]
    unsupported = scan_unsupported(module_ir(prog), prog.entry)
    info = {
        "file": args.file,
        "format": prog.format,
        "entry": prog.entry,
        "inputs": [_fmt_aval(a) for a in prog.in_avals],
        "outputs": [_fmt_aval(a) for a in prog.out_avals],
        "ops": dict(counts.most_common()),
        "flops": cost.get("flops"),
        "bytes_accessed": cost.get("bytes accessed"),
        "stage_markers": prog.stage_markers(),
        "unsupported": [{"op": n, "count": c, "first": loc} for n, c, loc in unsupported],
    }
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    console.print(f"[bold]{args.file}[/]  format [cyan]{prog.format}[/]  entry @{prog.entry}")
    console.print(f"inputs : ({', '.join(info['inputs'])})", soft_wrap=True)
    console.print(f"outputs: ({', '.join(info['outputs'])})", soft_wrap=True)
    if info["flops"] is not None:
        console.print(
            f"cost   : {info['flops']:.4g} FLOPs, {info['bytes_accessed']:.4g} bytes "
            "accessed (XLA cost analysis, before optimisation)"
        )
    console.print(f"stage markers: {info['stage_markers']}")
    table = Table("op", "count", title=f"{sum(counts.values())} ops")
    for name, n in counts.most_common():
        table.add_row(name, str(n))
    console.print(table)
    if unsupported:
        console.print(f"[red]unsupported ops ({len(unsupported)}):[/]")
        for name, n, loc in unsupported:
            console.print(f"  {name}  x{n}  first at {loc}", soft_wrap=True)
    else:
        console.print("[green]every op has a rehydration rule[/]")
    return 0


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program (any format) or a dump folder")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument("--inputs", help=".npz with the arguments (arg0, arg1, ... or in order)")
    p.add_argument("--outputs", help="write the results to this .npz")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--no-jit", action="store_true", help="run op by op instead of jitted")
    p.add_argument("--x64", action="store_true", help="enable 64-bit types (auto when needed)")


@_register("run", "rehydrate a program and run it on given or random inputs")(_add_run)
def _cmd_run(args: argparse.Namespace) -> int:
    import jax

    from hlopipe.io import TokenType, load

    prog = load(args.file, module=args.module)
    avals = [a for a in prog.in_avals if not isinstance(a, TokenType)]
    from hlopipe.rehydrate import module_ir
    from hlopipe.rehydrate._rehydrate import _uses_64bit

    # 64-bit mode for this run only (never left on for the caller)
    x64 = args.x64 or _uses_64bit(module_ir(prog))
    with jax.enable_x64(True) if x64 else contextlib.nullcontext():
        return _run_loaded(args, prog, avals)


def _run_loaded(args: argparse.Namespace, prog: Any, avals: list) -> int:
    import jax
    import numpy as np

    from hlopipe.errors import HlopipeError
    from hlopipe.io._program import _fmt_aval

    fn = prog.as_function()
    if args.inputs:
        try:
            data = np.load(args.inputs)
        except (OSError, ValueError) as e:
            raise HlopipeError(f"{args.inputs}: cannot read as .npz: {e}") from None
        keys = list(data.keys())
        if len(keys) != len(avals):
            raise HlopipeError(
                f"{args.inputs} holds {len(keys)} arrays, the program takes {len(avals)}"
            )
        named = [f"arg{i}" for i in range(len(avals))]
        values = [data[k] for k in (named if set(named) <= set(keys) else keys)]
    else:
        values = _random_inputs(avals, args.seed)
    run = fn if args.no_jit else jax.jit(fn)
    out = run(*values)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        arr = np.asarray(o)
        stats = ""
        if arr.size and arr.dtype.kind in "fiu":
            stats = (
                f"  mean {arr.astype(np.float64).mean():.6g}  min {arr.min():.6g}  "
                f"max {arr.max():.6g}"
            )
        print(f"out{i}: {_fmt_aval(jax.ShapeDtypeStruct(arr.shape, arr.dtype))}{stats}")
        if arr.size <= 8:
            print(f"  {arr.tolist()}")
    if args.outputs:
        arrays = {f"out{i}": np.asarray(o) for i, o in enumerate(outs)}
        np.savez(args.outputs, **arrays)  # type: ignore[arg-type]
        print(f"outputs written to {args.outputs}")
    return 0


def _random_inputs(avals: list, seed: int) -> list:
    import numpy as np

    rng = np.random.default_rng(seed)
    values = []
    for a in avals:
        dt = np.dtype(a.dtype)
        if dt == np.dtype(bool):
            values.append(rng.random(a.shape) < 0.5)
        elif dt.kind in "iu":
            values.append(rng.integers(0, 4, a.shape).astype(dt))
        elif dt.kind == "c":
            values.append(
                (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)).astype(dt)
            )
        else:
            values.append(rng.standard_normal(a.shape).astype(dt))
    return values


# ---- demo -------------------------------------------------------------------------------------


def _add_demo(p: argparse.ArgumentParser) -> None:
    del p


@_register(
    "demo", "the main job: rehydrate a tiny GPT loss from HLO, then pipeline-train it on 8 CPUs"
)(_add_demo)
def _cmd_demo(args: argparse.Namespace) -> int:
    from hlopipe.demo import main as demo_main

    return demo_main()


# -- split (stages) ---------------------------------------------------------------------------


def _add_split(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file", nargs="?", help="an XLA program (HLO / StableHLO text or proto, jax.export, ...)"
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--at-markers", action="store_true", help="cut at stage_boundary markers")
    how.add_argument("--stages", type=int, metavar="N", help="choose N cost-balanced stages")
    how.add_argument(
        "--merge",
        nargs=2,
        metavar=("FWD", "BWD"),
        help="merge a forward module (params, inputs) -> (outputs, residuals) and a backward "
        "module (params, residuals, cotangents) -> results into one: DIR/merged.* + .json",
    )
    how.add_argument(
        "--unmerge",
        metavar="MERGED",
        help="cut a merged module back into DIR/forward.* and DIR/backward.*, with the "
        "merged compile's shardings pinned on the residuals (needs --mesh or its .json)",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    p.add_argument("--format", choices=("hlo", "stablehlo"), default="hlo", help="module format")
    p.add_argument(
        "--no-autodiff", action="store_true", help="skip the per-stage forward/backward modules"
    )
    p.add_argument(
        "--mesh",
        metavar="AxB",
        help="--merge/--unmerge: device mesh shape, e.g. 2x2 (axes 'data','model'); "
        "parameters are sharded along the last axis, inputs' first dimension along the first",
    )
    p.add_argument("--params", type=int, metavar="N", help="--merge: leading parameter count")
    p.add_argument("--outputs", type=int, metavar="N", help="--merge: forward output count")
    p.add_argument(
        "--layout", metavar="JSON", help="--unmerge: the layout file (default: MERGED's .json)"
    )


@_register("split", help="cut a program into pipeline stages; write modules + manifest.json")(
    _add_split
)
def _cmd_split(args: argparse.Namespace) -> int:
    from hlopipe import io, stages

    if args.merge or args.unmerge:
        return _split_files(args)
    if not args.file:
        raise HlopipeError("split needs a FILE with --at-markers or --stages")
    program = io.load(args.file)
    staged = stages.split(program, num_stages=args.stages)
    argnums = None if args.no_autodiff else tuple(range(len(program.in_avals)))
    path = staged.export(args.output, format=args.format, argnums=argnums)
    print(stages.format_manifest(path), end="")
    print(f"wrote {path}")
    return 0


def _split_files(args: argparse.Namespace) -> int:
    """``split --merge FWD BWD`` / ``split --unmerge MERGED``."""
    import json
    from pathlib import Path

    from hlopipe import stages

    if args.file:
        raise HlopipeError("--merge/--unmerge take their modules as option values, not FILE")
    meta: dict[str, Any] = {}
    layout_path = None
    if args.unmerge:
        layout_path = args.layout or str(Path(args.unmerge).with_suffix(".json"))
        try:
            meta = json.loads(Path(layout_path).read_text())
        except (OSError, ValueError) as e:
            raise HlopipeError(
                f"{layout_path}: cannot read the merge layout ({e}); pass --layout"
            ) from e
    shape = _mesh_shape(args.mesh) if args.mesh else tuple((meta.get("mesh") or {}).values())
    mesh = _make_mesh(shape) if shape else None
    if args.merge:
        from hlopipe import io

        fwd, bwd = io.load(args.merge[0]), io.load(args.merge[1])
        p_sh = x_sh = None
        if mesh is not None:
            lay = stages.infer_layout(fwd, bwd, num_params=args.params, num_outputs=args.outputs)
            avals = fwd.in_avals
            p_sh = [_default_sharding(a, mesh, "param") for a in avals[: lay.num_params]]
            x_sh = [_default_sharding(a, mesh, "input") for a in avals[lay.num_params :]]
        merged = stages.merge_files(
            fwd, bwd, num_params=args.params, num_outputs=args.outputs, mesh=mesh,
            param_shardings=p_sh, input_shardings=x_sh, format=args.format,
        )  # fmt: skip
        path = merged.write(args.output)
        print(f"merged {merged.layout}")
        _print_shardings("residual", merged.residual_shardings)
        print(f"wrote {path} and {Path(path).with_suffix('.json')}")
        return 0
    parts = stages.split_merged(args.unmerge, meta, mesh=mesh, format=args.format)
    f, b = parts.write(args.output)
    print(f"split {parts.layout}")
    _print_shardings("residual", parts.residual_shardings)
    print(f"wrote {f} and {b}")
    return 0


def _mesh_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise HlopipeError(f"--mesh {text!r}: expected sizes joined by 'x', such as 2x2")
    return shape


def _make_mesh(shape: Sequence[int]) -> Any:
    import contextlib
    import math

    import jax
    import numpy as np

    n = math.prod(shape)
    with contextlib.suppress(Exception):  # on CPU, as many devices as the mesh needs
        jax.config.update("jax_num_cpu_devices", max(n, 8))
    devices = jax.devices()
    if len(devices) < n:
        raise HlopipeError(f"a {'x'.join(map(str, shape))} mesh needs {n} devices, found "
                           f"{len(devices)}")  # fmt: skip
    names = ("data", "model") if len(shape) == 2 else tuple(f"a{i}" for i in range(len(shape)))
    return jax.sharding.Mesh(np.array(devices[:n]).reshape(shape), names)


def _default_sharding(aval: Any, mesh: Any, kind: str) -> Any:
    """Parameters: the last divisible dimension of a matrix (or larger) along the last mesh
    axis. Inputs: the first dimension along the first mesh axis. Else replicated."""
    from jax.sharding import NamedSharding, PartitionSpec

    spec: list[str | None] = [None] * len(aval.shape)
    name = mesh.axis_names[-1 if kind == "param" else 0]
    size = int(mesh.shape[name])
    dims = range(len(aval.shape) - 1, -1, -1) if kind == "param" else range(min(1, len(spec)))
    if kind != "param" or len(aval.shape) >= 2:
        for d in dims:
            if aval.shape[d] % size == 0:
                spec[d] = name
                break
    return NamedSharding(mesh, PartitionSpec(*spec))


def _print_shardings(what: str, shardings: Sequence[Any] | None) -> None:
    for k, s in enumerate(shardings or []):
        print(f"  {what} {k}: {getattr(s, 'spec', s)}")


# -- conformance (rehydrate) ------------------------------------------------------------------


def _add_conformance(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="StableHLO test files or folders (searched for *.mlir); format detected per file",
    )
    p.add_argument("--json", metavar="FILE", help="write every file's result as JSON")
    p.add_argument("--no-jit", action="store_true", help="run eagerly only (default: jit+eager)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="StableHLO's own tolerances (1e-4 absolute, 1 ULP) instead of 4 ULPs / 1e-4 "
        "absolute-or-relative",
    )
    p.add_argument(
        "--reference",
        choices=("xla",),
        help="also compile each test with XLA and report files where rehydration does worse",
    )
    p.add_argument("-k", metavar="SUBSTRING", help="only files whose path contains SUBSTRING")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="processes (default 1)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every file's status")


@_register("conformance", help="run StableHLO conformance tests through rehydration")(
    _add_conformance
)
def _cmd_conformance(args: argparse.Namespace) -> int:
    import contextlib
    import json

    import jax

    # run_parallel tests need a mesh of CPU devices; settable only before JAX starts
    with contextlib.suppress(Exception):
        jax.config.update("jax_num_cpu_devices", 8)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from hlopipe.rehydrate import conformance as conf

    files = conf.collect_files(args.paths, k=args.k)
    if not files:
        raise HlopipeError(f"no .mlir file matches -k {args.k!r}")
    if args.jobs < 1:
        raise HlopipeError("--jobs must be at least 1")
    console = Console(highlight=False, stderr=False)
    progress = Progress(
        TextColumn("[bold]conformance"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed [red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    counts = {"passed": 0, "failed": 0}
    with progress:
        task = progress.add_task("run", total=len(files), passed=0, failed=0)

        def on_result(r: conf.FileResult) -> None:
            counts["failed" if r.failed else "passed"] += r.status != "skipped"
            progress.update(task, advance=1, passed=counts["passed"], failed=counts["failed"])

        results = conf.run_files(
            files,
            jobs=args.jobs,
            on_result=on_result,
            jit=not args.no_jit,
            eager=True,
            strict=args.strict,
            reference=args.reference,
        )
    style = {"pass": "green", "fail": "red", "error": "red", "unsupported": "yellow"}
    for r in results:
        if r.failed or args.verbose:
            first = r.message.splitlines()[0] if r.message else ""
            console.print(
                f"[{style.get(r.status, 'dim')}]{r.status:<11}[/] {r.path}"
                + (f"  {first}" if first else ""),
                soft_wrap=True,
            )
    if args.reference:
        worse = [r for r in results if r.worse_than_reference]
        console.print(f"worse than XLA: {len(worse)} file(s)")
        for r in worse:
            console.print(f"  {r.path}", soft_wrap=True)
    if args.json:
        doc = {
            "summary": conf.summary_line(results),
            "strict": args.strict,
            "modes": ["eager"] if args.no_jit else ["jit", "eager"],
            "families": conf.family_table(results),
            "files": [r.to_json() for r in results],
        }
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    print(conf.summary_line(results))
    return 1 if any(r.failed for r in results) else 0


# -- train (runtime) ---------------------------------------------------------------------------


def _add_train(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program of a loss; arguments: params..., then batch...")
    p.add_argument(
        "--batch-args",
        type=int,
        metavar="N",
        help="how many trailing arguments are the (micro)batch; default: the trailing integer "
        "arguments, else 1",
    )
    p.add_argument("--schedule", default="1f1b", help="schedule name (see 'hlopipe schedule')")
    p.add_argument("--microbatches", type=int, default=4, help="microbatches per step")
    p.add_argument("--virtual-stages", type=int, help="stages per rank (schedule default)")
    p.add_argument("--stages", type=int, help="stages to cut into when there are no markers")
    p.add_argument("--stage-devices", type=int, default=1, help="devices per stage (data parallel)")
    p.add_argument("--cpu-devices", type=int, metavar="N", help="simulate N CPU devices")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--optimizer", choices=("adam", "adamw", "sgd"), default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--params", metavar="NPZ", help="initial parameters, in argument order")
    p.add_argument("--data", metavar="NPZ", help="one full batch, in argument order")
    p.add_argument("--int-high", type=int, default=2, help="random integer data in [0, N)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", metavar="PNG", help="write the measured timeline of the last step")


@_register("train", "pipeline-train the loss program in a file on the local devices")(_add_train)
def _cmd_train(args: argparse.Namespace) -> int:
    import contextlib

    import jax

    if args.cpu_devices:
        with contextlib.suppress(Exception):  # a backend that is up keeps its devices
            jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    import numpy as np
    import optax

    from hlopipe import io, schedules
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.runtime import Pipeline

    program = io.load(args.file)
    avals: list[Any] = list(program.in_avals)
    nb = args.batch_args
    if nb is None:
        nb = 0
        while nb < len(avals) and np.issubdtype(np.dtype(avals[-1 - nb].dtype), np.integer):
            nb += 1
        nb = nb or 1
    if not 0 < nb < len(avals):
        raise RuntimeConfigError(
            f"--batch-args={nb}: the program has {len(avals)} arguments; the batch must be "
            "some of the last ones and at least one argument must be a parameter"
        )
    p_avals, b_avals = avals[:-nb], avals[-nb:]
    rng = np.random.default_rng(args.seed)
    m = args.microbatches

    def random(aval: Any, lead: int = 1) -> np.ndarray:
        shape = (aval.shape[0] * lead, *aval.shape[1:]) if lead > 1 else tuple(aval.shape)
        dt = np.dtype(aval.dtype)
        if np.issubdtype(dt, np.integer):
            return rng.integers(0, args.int_high, shape).astype(dt)
        return (rng.standard_normal(shape) * 0.02).astype(dt)

    def npz(path: str, n: int, what: str) -> list[np.ndarray]:
        with np.load(path) as f:
            arrays = [f[k] for k in f.files]
        if len(arrays) != n:
            raise RuntimeConfigError(f"{path}: {len(arrays)} arrays, the {what} has {n}")
        return arrays

    params = (
        npz(args.params, len(p_avals), "parameters")
        if args.params
        else [random(a) for a in p_avals]
    )
    batch = npz(args.data, nb, "batch") if args.data else [random(a, m) for a in b_avals]
    opt = {"adam": optax.adam, "adamw": optax.adamw, "sgd": optax.sgd}[args.optimizer](args.lr)
    pipe = Pipeline(
        args.file,
        params,
        batch,
        num_stages=args.stages,
        schedule=args.schedule,
        num_microbatches=m,
        virtual_stages=args.virtual_stages,
        stage_mesh_shape=(args.stage_devices,),
        optimizer=opt,
    )
    print(pipe)
    state = pipe.init(params)
    for k in range(args.steps):
        step_batch = batch if args.data or k == 0 else [random(a, m) for a in b_avals]
        # the last step is profiled (each action waited for and timed) for the timeline
        state, metrics = pipe.step(state, step_batch, profile=k == args.steps - 1)
        print(
            f"step {k + 1:4d}  loss {metrics.loss:.6f}  grad norm {metrics.grad_norm:.4f}  "
            f"{metrics.step_time * 1e3:8.1f} ms"
        )
    tl = pipe.timeline()
    print(f"measured bubble of the last step: {tl.bubble_fraction:.1%}")
    if args.plot:
        schedules.plot(tl, args.plot)
        print(f"wrote {args.plot}")
    return 0


# -- launch (distributed) ---------------------------------------------------------------------


def _add_launch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nproc", type=int, required=True, help="processes to start")
    p.add_argument(
        "--devices-per-process", type=int, default=1, metavar="K", help="CPU devices each"
    )
    p.add_argument(
        "--heartbeat-timeout", type=int, default=10, metavar="S",
        help="seconds without a heartbeat before a process counts as lost (default 10)",
    )  # fmt: skip
    p.add_argument(
        "--grace", type=float, default=30.0, metavar="S",
        help="after a failure, seconds the others get to stop on their own (default 30)",
    )  # fmt: skip
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...: what each process runs")


@_register("launch", "start N local processes of one jax.distributed job (CPU, gloo)")(_add_launch)
def _cmd_launch(args: argparse.Namespace) -> int:
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.runtime.launch import launch

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise RuntimeConfigError("no command to launch: hlopipe launch --nproc N -- CMD ...")
    if args.nproc < 1 or args.devices_per_process < 1:
        raise RuntimeConfigError("--nproc and --devices-per-process must be at least 1")
    return launch(
        cmd,
        nproc=args.nproc,
        devices_per_process=args.devices_per_process,
        heartbeat_timeout=args.heartbeat_timeout,
        grace=args.grace,
    )
