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
import re
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
    """argparse, but usage errors follow the one-line ``error: ...`` / exit 2 convention, and
    a mistyped choice (a subcommand) gets a "did you mean"."""

    def error(self, message: str):  # type: ignore[override]
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = [c.strip(" '") for c in m.group(2).split(",")]
            message = f"{message}{_did_you_mean(m.group(1), choices)}"
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def _did_you_mean(word: str, choices: Any) -> str:
    """``" (did you mean 'x'?)"`` when a choice is close to ``word``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(word).lower(), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_output_file(path: str, flag: str, suffixes: Sequence[str] | None = None) -> None:
    """Before any work: ``path`` can be written as a file (its folder exists, it is not a
    folder, its suffix is one of ``suffixes``)."""
    from pathlib import Path

    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise HlopipeError(
            f"{flag} {path}: the format follows the file name; use one of "
            f"{', '.join(suffixes[:3])} (not {p.suffix or 'no suffix'!r})"
        )
    if p.is_dir():
        raise HlopipeError(f"{flag} {path}: is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise HlopipeError(f"{flag} {path}: the folder {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise HlopipeError(f"{flag} {path}: cannot write there (permission denied)")


def _check_output_dir(path: str, flag: str) -> None:
    """Before any work: ``path`` is a folder or can become one (its parent exists)."""
    from pathlib import Path

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise HlopipeError(f"{flag} {path}: is a file, not a folder; give a folder name")
    if not p.exists() and not p.parent.is_dir():
        raise HlopipeError(
            f"{flag} {path}: its parent folder {p.parent} does not exist; create it first"
        )
    if not os.access(p if p.exists() else p.parent, os.W_OK):
        raise HlopipeError(f"{flag} {path}: cannot write there (permission denied)")


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
        code = int(args._handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except HlopipeError as e:
        if debug:
            traceback.print_exc()
        msg = str(e)
        print(f"error: {_one_line(e, args.command)}" if not debug else f"error: {msg}",
              file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`hlopipe inspect --json | head`): stop quietly; stdout now
        # goes nowhere so that the flush at exit does not fail again
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0


def _one_line(e: BaseException, command: str | None = None) -> str:
    """The error as one line: its lines joined, whitespace collapsed, and the library's
    keyword arguments named by the command's flags."""
    return _in_cli_terms(" ".join(str(e).split()), command)


# per command: the Python keyword a library error names -> the flag that sets it
_FLAGS = {
    "num_microbatches": "--microbatches",
    "stage_mesh_shape": "--stage-devices",
    "virtual_stages": "--virtual-stages",
    "num_stages": "--stages",
    "num_params": "--params",
    "num_outputs": "--outputs",
}
_FLAGS_OF = {
    "train": ("num_microbatches", "stage_mesh_shape", "virtual_stages", "num_stages"),
    "split": ("num_stages", "num_params", "num_outputs"),
    "schedule": ("num_microbatches",),
}


def _in_cli_terms(msg: str, command: str | None) -> str:
    msg = msg.replace("module=NAME (--module NAME)", "--module NAME")
    msg = re.sub(r" \(CLI: [^)]*\)", "", msg)  # a hint for CLI users, once the flags are named
    for key in _FLAGS_OF.get(command or "", ()):
        flag = _FLAGS[key]
        msg = re.sub(rf"\b{key}=\((\d+),?\)", rf"{flag} \1", msg)
        msg = re.sub(rf"\b{key}=(\S+?)([,;)]|\s|$)", rf"{flag} \1\2", msg)
        msg = re.sub(rf"\b{key}\b", flag, msg)
    return msg


def _load(path: str, module: str | None) -> Any:
    """``io.load`` for a command's FILE and --module, with a "did you mean" for the module."""
    from pathlib import Path

    from hlopipe import io

    if module is not None and Path(path).is_dir():
        names = list(io.dump_modules(path))
        if names and not any(module in n for n in names):
            short = [n.split(".", 1)[-1] for n in names]
            raise HlopipeError(
                f"--module {module}: no module of {path} matches{_did_you_mean(module, short)}; "
                f"modules: {', '.join(short)}"
            )
    return io.load(path, module=module)


# ---------------------------------------------------------------------------------------------
# Subcommands. Each room adds its own pair below; keep them in this order:
# inspect, run (io/rehydrate) · schedule (schedules) · conformance (conformance) ·
# split (stages) · train, demo (runtime) · launch (distributed).
# ---------------------------------------------------------------------------------------------


# -- schedule (schedules) ---------------------------------------------------------------------


def _add_schedule(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        nargs="?",
        help="schedule name: gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2, zb-v, "
        "interleaved-zb, dualpipev, inference (case-insensitive); 'auto' ranks them all by "
        "simulated step time; omit it with --from",
    )
    p.add_argument(
        "--from",
        dest="from_file",
        default=None,
        metavar="FILE",
        help="read the schedule from a file: torch.distributed.pipelining's CSV (one row per "
        "rank, compute-only or with SEND/RECV) or hlopipe's own CSV/text",
    )
    p.add_argument(
        "--to-torch",
        default=None,
        metavar="FILE",
        help="write the schedule as torch.distributed.pipelining's CSV (compute-only; with "
        "--with-comms, with sends and receives)",
    )
    p.add_argument(
        "--with-comms", action="store_true", help="--to-torch writes the lowered schedule"
    )
    p.add_argument("--ranks", type=int, default=4, help="pipeline ranks (default 4)")
    p.add_argument("--microbatches", type=int, default=8, help="microbatches (default 8)")
    p.add_argument(
        "--virtual", type=int, default=None, help="stages per rank (default: the schedule's own)"
    )
    p.add_argument(
        "--costs",
        default=None,
        help="costs such as F=1,B=2,W=1,send=0.1 (F@3=1.5: stage 3's F; F&B=2.5: an overlap)",
    )
    p.add_argument(
        "--memory-limit",
        type=float,
        default=None,
        metavar="N",
        help="auto: most activations a rank may hold, in microbatches through one rank's share "
        "of the model (1F1B's rank 0 holds --ranks)",
    )
    p.add_argument(
        "--try-microbatches",
        default=None,
        metavar="LIST",
        help="auto: other microbatch counts to try, such as 4,16 (costs are for --microbatches)",
    )
    p.add_argument("--plot", default=None, metavar="PATH", help="write a Gantt chart (.png/.svg)")
    p.add_argument("--trace", default=None, metavar="PATH", help="write a Chrome trace (.json)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the grid")


def _read_schedule_file(path: str):  # -> schedules.Schedule
    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ScheduleError(f"cannot read schedule file {path}: {e.strerror or e}") from e
    name = os.path.splitext(os.path.basename(path))[0]
    if text.startswith("# hlopipe-schedule "):
        second = text.split("\n", 2)[1] if "\n" in text else ""
        if second.startswith("rank,"):
            return schedules.Schedule.from_csv(text)
        return schedules.Schedule.from_text(text)
    return schedules.Schedule.from_torch_csv(text, name=name)


@_register("schedule", help="generate, check and simulate a pipeline schedule")(_add_schedule)
def _cmd_schedule(args: argparse.Namespace) -> int:
    import json

    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    if args.plot:
        _check_output_file(args.plot, "--plot", _PLOT_SUFFIXES)
    if args.trace:
        _check_output_file(args.trace, "--trace", (".json",))
    costs = schedules.parse_costs(args.costs) if args.costs else None
    if args.from_file and args.name:
        raise ScheduleError("give a schedule name or --from FILE, not both")
    if args.name is not None and args.name.strip().lower() == "auto":
        return _schedule_auto(args, costs)
    if args.from_file:
        schedule = _read_schedule_file(args.from_file)
    elif args.name:
        schedule = schedules.get(args.name, args.ranks, args.microbatches, args.virtual)
    else:
        raise ScheduleError("name a schedule (see --help), or read one with --from FILE")
    schedules.validate(schedule)
    lowered = schedule if schedule.is_lowered else schedules.lower(schedule)
    schedules.validate(lowered)
    schedule = schedule.compute_only() if schedule.is_lowered else schedule
    timeline = schedules.simulate(lowered, costs)
    if args.to_torch:
        text = (lowered if args.with_comms else schedule).to_torch_csv()
        try:
            with open(args.to_torch, "w", newline="") as f:
                f.write(text)
        except OSError as e:
            raise ScheduleError(f"cannot write {args.to_torch}: {e.strerror or e}") from e
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
    for label, path in (("plot", args.plot), ("trace", args.trace), ("torch CSV", args.to_torch)):
        if path:
            console.print(f"{label} written to {path}")
    return 0


def _schedule_auto(args: argparse.Namespace, costs: dict[str, float] | None) -> int:
    import json

    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    counts = None
    if args.try_microbatches:
        try:
            extra = [int(x) for x in args.try_microbatches.split(",") if x.strip()]
        except ValueError as e:
            raise ScheduleError(
                f"--try-microbatches: expected integers such as 4,16, got {args.try_microbatches!r}"
            ) from e
        counts = sorted({args.microbatches, *extra})
    ranked = schedules.rank_candidates(
        args.ranks,
        args.microbatches,
        costs,
        memory_limit=args.memory_limit,
        microbatch_counts=counts,
    )
    if ranked and not ranked[0].fits:
        least = min(c.memory for c in ranked)
        raise ScheduleError(
            f"no schedule fits memory_limit={args.memory_limit:g}: the least any needs is "
            f"{least:g} (try more microbatches with --try-microbatches)"
        )
    if args.json:
        print(json.dumps([c.as_dict() for c in ranked], indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    limit = "none" if args.memory_limit is None else str(args.memory_limit)
    table = Table(
        title=f"schedules for {args.ranks} ranks, {args.microbatches} microbatches "
        f"(memory limit: {limit}), fastest first"
    )
    for col in ("#", "schedule", "v", "m", "makespan", "bubble", "memory", "fits"):
        table.add_column(col, justify="left" if col == "schedule" else "right")
    for i, c in enumerate(ranked):
        table.add_row(
            str(i + 1) if c.fits else "-",
            c.name,
            str(c.virtual_stages),
            str(c.num_microbatches),
            f"{c.makespan:g}",
            f"{c.bubble_fraction:.1%}",
            str(c.peak_activations),
            "yes" if c.fits else "no",
        )
    console = Console(highlight=False)
    console.print(table)
    best = next((c for c in ranked if c.fits), None)
    if best is None:
        raise ScheduleError(f"no schedule for {args.ranks} ranks")
    console.print(
        f"best: {best.name} (v={best.virtual_stages}, m={best.num_microbatches}), "
        f"makespan {best.makespan:g}"
    )
    if args.plot or args.trace:
        timeline = schedules.simulate(schedules.lower(best.schedule), costs)
        if args.plot:
            schedules.plot(timeline, args.plot)
        if args.trace:
            schedules.to_chrome_trace(timeline, args.trace)
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
        _print_stage_arguments(args.file)
        return 0
    from hlopipe.io import format_aval
    from hlopipe.rehydrate import module_ir, scan_unsupported

    prog = _load(args.file, args.module)
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
        "inputs": [format_aval(a) for a in prog.in_avals],
        "input_names": _stage_file_names(args.file, len(prog.in_avals)) or prog.arg_names,
        "outputs": [format_aval(a) for a in prog.out_avals],
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
    if any(info["input_names"]):
        console.print(f"inputs ({len(info['inputs'])}):")
        width = max(len(n or "") for n in info["input_names"])
        for i, (n, a) in enumerate(zip(info["input_names"], info["inputs"], strict=True)):
            console.print(f"  {i:>3}  {n or '-':<{width}}  {a}", soft_wrap=True)
    else:
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


def _print_stage_arguments(manifest: str) -> None:
    """Each stage's file arguments by name, in order (see docs/stage-files.md)."""
    import json
    from pathlib import Path

    m = json.loads(Path(manifest).read_text())
    print("stage file arguments, in order: the program arguments it reads, then what it receives")
    for st in m["stages"]:
        names = [a["path"] for a in st.get("arguments", st.get("params", []))]
        recv = [f"stage {r['from_stage']} output {r['output']}" for r in st["inputs"]]
        print(
            f"  stage {st['index']}: {', '.join(names) or '-'}"
            + (f" | received: {', '.join(recv)}" if recv else "")
        )


def _stage_file_names(path: str, n: int) -> list[str] | None:
    """For a stage file written by `split`, its arguments' names from the manifest next to
    it: the program arguments it reads, then ``from stage S output J`` for what it receives."""
    import json
    from pathlib import Path

    manifest = Path(path).parent / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        m = json.loads(manifest.read_text())
        for st in m.get("stages", []):
            if st.get("file") == Path(path).name:
                names = [a["path"] for a in st.get("arguments", st.get("params", []))]
                names += [
                    f"from stage {r['from_stage']} output {r['output']}" for r in st["inputs"]
                ]
                return names if len(names) == n else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


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

    from hlopipe.io import TokenType

    if args.outputs:
        _check_output_file(args.outputs, "--outputs", (".npz",))
    prog = _load(args.file, args.module)
    avals = [a for a in prog.in_avals if not isinstance(a, TokenType)]
    from hlopipe.rehydrate import module_ir, uses_64bit

    # 64-bit mode for this run only (never left on for the caller)
    x64 = args.x64 or uses_64bit(module_ir(prog))
    with jax.enable_x64(True) if x64 else contextlib.nullcontext():
        return _run_loaded(args, prog, avals)


def _run_loaded(args: argparse.Namespace, prog: Any, avals: list) -> int:
    import jax
    import numpy as np

    from hlopipe.errors import HlopipeError
    from hlopipe.io import format_aval

    fn = prog.as_function(flat=True)
    if args.inputs:
        data = dict(zip(*_npz_named(args.inputs, "--inputs"), strict=True))
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
        print(f"out{i}: {format_aval(jax.ShapeDtypeStruct(arr.shape, arr.dtype))}{stats}")
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


# -- decompile (decompile) --------------------------------------------------------------------


def _add_decompile(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program (any format) or a dump folder")
    p.add_argument("-o", "--output", required=True, metavar="OUT.py", help="the module to write")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument(
        "--style",
        choices=("jnp", "lax"),
        default="jnp",
        help="jnp: idiomatic folds where exact (default); lax: one lax call per equation",
    )


@_register("decompile", "write a program back as readable JAX source (a .py defining main)")(
    _add_decompile
)
def _cmd_decompile(args: argparse.Namespace) -> int:
    from pathlib import Path

    import hlopipe
    from hlopipe.decompile import decompile

    out = Path(args.output)
    if out.suffix != ".py":
        raise HlopipeError(f"-o {args.output}: the output must be a .py file")
    if not out.parent.is_dir():
        raise HlopipeError(f"-o {args.output}: the folder {out.parent} does not exist")
    prog = hlopipe.load(args.file, module=args.module)
    result = decompile(prog, style=args.style, constants_file=out.stem + ".npz")
    try:
        written = result.save(out)
    except OSError as e:
        raise HlopipeError(f"-o {args.output}: cannot write: {e}") from e
    lines = len(result.source.splitlines())
    print(f"wrote {', '.join(map(str, written))} ({lines} lines, def main)")
    return 0


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
    p.add_argument("--module", help="in a dump folder, the module to pick")
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
    from hlopipe import stages

    if args.merge or args.unmerge:
        return _split_files(args)
    if not args.file:
        raise HlopipeError("split needs a FILE with --at-markers or --stages")
    _check_output_dir(args.output, "-o")
    program = _load(args.file, args.module)
    if args.at_markers and program.stage_markers() == 0:
        why = (
            "it is HLO after XLA's optimisation passes (is_scheduled=true), and XLA removes "
            "the markers' optimization barriers when it compiles: compile with "
            "compiler_options=hlopipe.marker.KEEP_MARKERS to keep them, or split the program "
            "before optimisation (jax.jit(f).lower(...).as_text(), or the "
            "before_optimizations file of a dump)"
            if program.optimized
            else "add hlopipe.stage_boundary(...) where a stage ends"
        )
        raise HlopipeError(
            f"{args.file}: --at-markers, but the program has no stage_boundary markers: {why}; "
            "or pass --stages N to choose cut points automatically"
        )
    with _x64_if_needed(program):
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
    _check_output_dir(args.output, "-o")
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


# -- conformance (conformance) ----------------------------------------------------------------


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
        help="StableHLO's own tolerances (1e-4 absolute, 1 ULP) instead of the default per-type "
        "ULP bounds (4 ULPs for 32/64-bit floats, no absolute floor)",
    )
    p.add_argument(
        "--reference",
        choices=("xla",),
        help="also compile each test with XLA and report files where rehydration does worse",
    )
    p.add_argument("-k", metavar="SUBSTRING", help="only files whose path contains SUBSTRING")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="processes (default 1)")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="stop a file that runs longer and report it as an error (default: no limit)",
    )
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

    from hlopipe import conformance as conf

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
            timeout=args.timeout,
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
    p.add_argument(
        "file",
        help="an XLA program of a loss: arguments params..., then one microbatch; its first "
        "output a scalar loss, a mean over the batch",
    )
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument(
        "--params",
        metavar="NPZ",
        help="initial parameters, arrays in argument order (default: initialised by role)",
    )
    p.add_argument(
        "--data",
        metavar="NPZ",
        help="one full batch, arrays in argument order: full batch = microbatches x the "
        "program's batch (default: one fixed synthetic batch)",
    )
    p.add_argument(
        "--batch-args",
        metavar="N|I,J,...",
        help="which arguments are the (micro)batch: N, the last N; or their positions (from 0, "
        "comma-separated: '0,1' for a program taking x, labels, then parameters); default: "
        "the trailing integer arguments, else the last one",
    )
    p.add_argument("--schedule", default="1f1b", help="schedule name (see 'hlopipe schedule')")
    p.add_argument("--microbatches", type=int, default=4, help="microbatches per step (4)")
    p.add_argument("--virtual-stages", type=int, help="stages per rank (schedule default)")
    p.add_argument(
        "--stages",
        type=int,
        help="stages to cut into when the program has no markers (default: one per device)",
    )
    p.add_argument(
        "--stage-devices",
        type=int,
        help="devices per stage, data parallel (default: the most that the devices allow and "
        "that divide the program's batch)",
    )
    p.add_argument(
        "--cpu-devices", type=int, metavar="N", help=f"on CPU, simulate N devices ({_CPU_DEVICES})"
    )
    p.add_argument("--steps", type=int, default=10, help="training steps (10)")
    p.add_argument("--optimizer", choices=("adam", "adamw", "sgd"), default="adam")
    p.add_argument("--lr", type=float, default=1e-2, help="learning rate (0.01)")
    p.add_argument("--int-high", type=int, default=2, help="synthetic integer data in [0, N) (2)")
    p.add_argument("--seed", type=int, default=0, help="seed of parameters and synthetic data")
    p.add_argument(
        "--check", action="store_true", help="also train on one device and compare the losses"
    )
    p.add_argument("--save", metavar="DIR", help="checkpoint the final state into DIR")
    p.add_argument("--resume", metavar="DIR", help="start from the newest checkpoint in DIR")
    p.add_argument("--plot", metavar="PNG", help="write the measured timeline of the last step")


_CPU_DEVICES = 8  # on CPU, `train` and `demo` simulate this many devices unless told otherwise
_PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".webp", ".tif", ".tiff")


@_register("train", "pipeline-train the loss program in a file on the local devices")(_add_train)
def _cmd_train(args: argparse.Namespace) -> int:
    import jax

    from hlopipe.errors import RuntimeConfigError

    # 1. everything that can be wrong with the command line, before any compiling.
    for flag in ("microbatches", "steps", "stages", "stage_devices", "cpu_devices"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise RuntimeConfigError(f"--{flag.replace('_', '-')} must be at least 1, not {value}")
    if args.plot:
        _check_output_file(args.plot, "--plot", _PLOT_SUFFIXES)
    if args.save:
        _check_output_dir(args.save, "--save")
    if args.resume:
        from hlopipe.runtime._checkpoint import latest_step

        if latest_step(args.resume) is None:
            raise RuntimeConfigError(
                f"--resume {args.resume}: no checkpoint there (train with --save DIR first)"
            )
    _check_schedule_name(args.schedule)
    with contextlib.suppress(Exception):  # CPU only; a backend already up keeps its devices
        jax.config.update("jax_num_cpu_devices", args.cpu_devices or _CPU_DEVICES)

    program = _load(args.file, args.module)
    with _x64_if_needed(program):
        plan = _train_plan(args, program)
        _print_plan(plan)
        return _train(args, plan)


@contextlib.contextmanager
def _x64_if_needed(program: Any) -> Any:
    """A program with 64-bit types (TensorFlow's and PyTorch's int64 labels) is split and
    trained in JAX's 64-bit mode: set globally (the runtime's compile and rank threads must
    see it too, which ``jax.enable_x64`` does not reach), and put back after."""
    import jax

    from hlopipe.rehydrate import module_ir, uses_64bit

    before = bool(jax.config.read("jax_enable_x64"))
    if uses_64bit(module_ir(program)):
        jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def _check_schedule_name(name: str) -> None:
    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    try:
        schedules.get(name, 1, 1)
    except ScheduleError:
        raise ScheduleError(
            f"--schedule {name!r} is not a schedule{_did_you_mean(name, schedules.GENERATORS)}; "
            f"valid names: {', '.join(schedules.GENERATORS)}"
        ) from None
    except Exception:  # a known name that needs more ranks than one: fine here
        pass


def _train_plan(args: argparse.Namespace, program: Any) -> dict[str, Any]:
    """What `train` will run: arguments split into parameters and batch, initial values, stages,
    devices; each choice with the words that explain it."""
    import numpy as np

    from hlopipe.io import format_aval

    avals: list[Any] = list(program.in_avals)
    nb, p_avals, b_avals, order = _batch_split(args, avals)
    # from here on the arguments are (parameters..., batch...); `order` maps them back
    names = [program.arg_names[i] or f"argument {i}" for i in order]
    fn = _reordered(program, order)
    mb = int(b_avals[0].shape[0])
    m = args.microbatches
    rng = np.random.default_rng(args.seed)
    params, init_note = _initial_params(args, program, order, names, p_avals, rng)
    # data: from --data, or one fixed synthetic batch that a model can learn by heart
    if args.data:
        batch = _read_npz(args.data, "--data", b_avals, names[len(p_avals) :], m)
        data_note = f"from {args.data}, the same batch every step"
    else:
        batch = [_synthetic(a, m, args.int_high, rng) for a in b_avals]
        data_note = (
            "one fixed synthetic batch, the same every step, so the loss should fall: "
            f"integers in [0, {args.int_high}), floats ~ N(0, 1) (--data FILE.npz for yours)"
        )
    layout = _stage_layout(args, program, mb)
    S, devices = layout["stages"], layout["devices"]
    return {
        "program": program if fn is None else fn,
        "flat": program.as_function(flat=True) if fn is None else fn.flat,
        "names": names,
        "p_avals": p_avals,
        "b_avals": b_avals,
        "params": params,
        "batch": batch,
        "num_stages": None if layout["markers"] else S,
        "stages": S,
        "devices": devices,
        "group": layout["group"],
        "microbatch": mb,
        "notes": {
            "program": f"{args.file}: {len(avals)} arguments = {len(p_avals)} parameters "
            f"({sum(int(np.prod(a.shape)) for a in p_avals):,} values) + a microbatch of "
            f"{nb} ({', '.join(format_aval(a) for a in b_avals)}"
            + (")" if fn is None else f", arguments {', '.join(map(str, order[-nb:]))})"),
            "stages": layout["stage_note"],
            "devices": layout["device_note"],
            "schedule": f"{args.schedule}, {m} microbatches of {mb} = a batch of {m * mb} per "
            "step (full batch = microbatches x the program's batch)",
            "params": init_note,
            "data": data_note,
            "optimizer": f"{args.optimizer}(lr={args.lr:g}), {args.steps} steps"
            + (f", resuming from {args.resume}" if args.resume else ""),
        },
    }


def _batch_split(
    args: argparse.Namespace, avals: list[Any]
) -> tuple[int, list[Any], list[Any], list[int]]:
    """Which arguments are the batch (--batch-args: the last N, or positions; else the
    trailing integer ones, else the last one); the parameter and batch avals, and the order
    (parameter positions, then batch positions)."""
    import numpy as np

    from hlopipe.errors import RuntimeConfigError
    from hlopipe.io import format_aval

    n = len(avals)
    spec = args.batch_args
    if spec is None:
        nb = 0
        while nb < n and np.issubdtype(np.dtype(avals[-1 - nb].dtype), np.integer):
            nb += 1
        b_idx = list(range(n - (nb or 1), n))
    elif str(spec).strip().isdigit():
        nb = int(spec)
        if not 0 < nb < n:
            raise RuntimeConfigError(
                f"--batch-args {nb}: the program has {n} arguments; the batch must be "
                "some of the last ones and at least one argument must be a parameter"
            )
        b_idx = list(range(n - nb, n))
    else:
        try:
            b_idx = [int(x) for x in str(spec).split(",")]
        except ValueError:
            raise RuntimeConfigError(
                f"--batch-args {spec!r}: give a count N (the last N arguments) or positions "
                "from 0, comma-separated ('0,1')"
            ) from None
        bad = [i for i in b_idx if not 0 <= i < n]
        if bad or len(set(b_idx)) != len(b_idx) or len(b_idx) >= n:
            raise RuntimeConfigError(
                f"--batch-args {spec}: positions must be distinct, from 0 to {n - 1} (the "
                f"program has {n} arguments), and leave at least one parameter"
            )
    nb = len(b_idx)
    p_idx = [i for i in range(n) if i not in b_idx]
    p_avals, b_avals = [avals[i] for i in p_idx], [avals[i] for i in b_idx]
    if any(not a.shape for a in b_avals):
        raise RuntimeConfigError(
            f"arguments {', '.join(map(str, b_idx))} "
            f"({', '.join(format_aval(a) for a in b_avals)}) "
            "are taken as the batch, but a scalar has no batch axis; set --batch-args"
        )
    return nb, p_avals, b_avals, p_idx + b_idx


def _reordered(program: Any, order: list[int]) -> Any:
    """``None`` when the program takes (parameters..., batch...) already; else a loss function
    ``(params list, batch list)`` calling the program with its arguments in their places (its
    ``flat`` attribute: the same over flat arguments)."""
    if order == sorted(order):
        return None
    f = program.as_function(flat=True)

    def flat(*leaves: Any) -> Any:
        full: list[Any] = [None] * len(order)
        for i, v in zip(order, leaves, strict=True):
            full[i] = v
        return f(*full)

    def loss(params: list[Any], batch: list[Any]) -> Any:
        return flat(*params, *batch)

    loss.flat = flat  # type: ignore[attr-defined]
    return loss


def _initial_params(
    args: argparse.Namespace,
    program: Any,
    order: list[int],
    names: list[str],
    p_avals: list[Any],
    rng: Any,
) -> tuple[list[Any], str]:
    """Parameters from --params, or initialised by role where the names show it; and a note."""
    if args.params:
        params = _read_npz(args.params, "--params", p_avals, names[: len(p_avals)], 1)
        return params, f"from {args.params}"
    params = []
    roles: dict[str, int] = {}
    for i, a in zip(order[: len(p_avals)], p_avals, strict=True):
        value, role = _init_by_role(program.arg_names[i] or None, a, rng)
        params.append(value)
        roles[role] = roles.get(role, 0) + 1
    by_role = ", ".join(f"{n} {r}" for r, n in roles.items())
    if "integer parameters = 0" in roles and args.batch_args is None:
        by_role += (
            "; integer arguments are usually data (token ids, labels): give the batch's "
            "positions with --batch-args I,J"
        )
    if any(program.arg_names[i] for i in order[: len(p_avals)]):
        return params, (
            f"initialised by role from the argument names: {by_role} (--params FILE.npz "
            "to start from yours)"
        )
    return params, (
        "RANDOM -- pass --params FILE.npz (arrays in argument order) to train from real "
        "values: the program carries no argument names, so no parameter's role can be "
        f"seen ({by_role})"
    )


def _stage_layout(args: argparse.Namespace, program: Any, mb: int) -> dict[str, Any]:
    """Stages (at the markers, --stages, or one per device group), ranks and devices per stage,
    with the notes that explain them."""
    import jax

    from hlopipe import schedules
    from hlopipe.errors import RuntimeConfigError

    markers = program.stage_markers()
    v = args.virtual_stages or schedules.default_virtual_stages(args.schedule)
    devices = jax.local_devices()
    platform = devices[0].platform
    if markers:
        S = markers + 1
        if args.stages and args.stages != S:
            raise RuntimeConfigError(
                f"--stages {args.stages}: the program has {markers} stage markers, which make "
                f"{S} stages; leave --stages out"
            )
        stage_note = f"{S}, at the program's {markers} stage markers"
    elif args.stages:
        S = args.stages
        stage_note = f"{S} (--stages), cost-balanced: the program has no stage markers"
    else:
        S = max(len(devices) // (args.stage_devices or 1), 1) * v
        stage_note = (
            f"{S}, cost-balanced, one per device{' group' if args.stage_devices else ''}: the "
            "program has no stage markers (--stages N to choose)"
        )
    if S % v:
        raise RuntimeConfigError(
            f"schedule {args.schedule!r} puts {v} stages on each rank, {S} stages are not a "
            "multiple of it; choose --virtual-stages or --stages"
        )
    ranks = S // v
    group = args.stage_devices
    if group is None:
        group = max((g for g in range(1, len(devices) // ranks + 1) if mb % g == 0), default=1)
    if ranks * group > len(devices):
        hint = " (--cpu-devices N)" if platform == "cpu" else ""
        raise RuntimeConfigError(
            f"{ranks} ranks x {group} devices per stage need {ranks * group} devices, there are "
            f"{len(devices)}{hint}"
        )
    simulated = " (simulated; --cpu-devices N)" if platform == "cpu" and len(devices) > 1 else ""
    device_note = (
        f"{ranks} ranks x {group} {platform.upper()} device(s) of the {len(devices)} "
        f"local ones{simulated}" + (", data parallel inside each stage" if group > 1 else "")
    )
    return {
        "markers": markers,
        "stages": S,
        "devices": devices[: ranks * group],
        "group": group,
        "stage_note": stage_note,
        "device_note": device_note,
    }


def _print_plan(plan: dict[str, Any]) -> None:
    for key, text in plan["notes"].items():
        print(f"{key:<10}{text}")


def _init_by_role(name: str | None, aval: Any, rng: Any) -> tuple[Any, str]:
    """An initial value for a parameter whose name (``params['ln1']['g']``, ``fc1_b``, ...)
    may show its role: norm scales 1, biases 0, matrices ~ N(0, 1/fan_in); without a role,
    matrices as such and vectors 0."""
    import math
    import re

    import numpy as np

    dt = np.dtype(aval.dtype)
    shape = tuple(aval.shape)
    if not np.issubdtype(dt, np.inexact):
        return np.zeros(shape, dt), "integer parameters = 0"
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", name or "") if w]
    last = words[-1] if words else ""
    normish = any(w.startswith(("ln", "norm", "layernorm", "rmsnorm", "bn")) for w in words)
    if last in ("g", "gamma", "scale", "scales") or (
        last in ("w", "weight") and normish and len(shape) == 1
    ):
        return np.ones(shape, dt), "norm scales = 1"
    if last in ("b", "bias", "biases", "beta") or len(shape) < 2:
        return np.zeros(shape, dt), "biases = 0" if last else "vectors = 0"
    fan_in = math.prod(shape[:-1])
    std = 1.0 / math.sqrt(max(fan_in, 1))
    return (rng.standard_normal(shape) * std).astype(dt), "matrices ~ N(0, 1/fan_in)"


def _synthetic(aval: Any, m: int, int_high: int, rng: Any) -> Any:
    import numpy as np

    shape = (aval.shape[0] * m, *aval.shape[1:])
    dt = np.dtype(aval.dtype)
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, int_high, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _read_npz(path: str, flag: str, avals: list[Any], names: list[str], m: int) -> list[Any]:
    """The arrays of an .npz in order, each checked against its argument (``m``: the
    microbatches a batch array holds along its leading axis)."""
    import jax
    import numpy as np

    from hlopipe.errors import RuntimeConfigError
    from hlopipe.io import format_aval

    arrays = _npz_arrays(path, flag)
    if len(arrays) != len(avals):
        raise RuntimeConfigError(
            f"{flag} {path}: {len(arrays)} arrays, the program has {len(avals)} "
            f"{'parameters' if m == 1 else 'batch arguments'}"
        )
    for k, (x, a, n) in enumerate(zip(arrays, avals, names, strict=True)):
        want = (a.shape[0] * m, *a.shape[1:]) if m > 1 else tuple(a.shape)
        if tuple(x.shape) != want or x.dtype != np.dtype(a.dtype):
            rule = (
                f" (full batch = {m} microbatches x the program's batch of {a.shape[0]})"
                if m > 1
                else ""
            )
            got = format_aval(jax.ShapeDtypeStruct(x.shape, x.dtype))
            exp = format_aval(jax.ShapeDtypeStruct(want, a.dtype))
            raise RuntimeConfigError(
                f"{flag} {path}: array {k} ({n}) is {got}, expected {exp}{rule}"
            )
    return arrays


def _npz_named(path: str, flag: str) -> tuple[list[str], list[Any]]:
    """The names and arrays of an .npz file, in order; one error line when it is not one."""
    import zipfile

    import numpy as np

    try:
        f = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise HlopipeError(f"{flag} {path}: cannot read it as .npz ({e})") from None
    if not hasattr(f, "files"):
        raise HlopipeError(f"{flag} {path}: a single .npy array, not an .npz file (np.savez)")
    with f:
        return list(f.files), [f[k] for k in f.files]


def _npz_arrays(path: str, flag: str) -> list[Any]:
    return _npz_named(path, flag)[1]


def _train(args: argparse.Namespace, plan: dict[str, Any]) -> int:
    import time

    import optax

    from hlopipe import schedules
    from hlopipe.runtime import Pipeline

    opt = {"adam": optax.adam, "adamw": optax.adamw, "sgd": optax.sgd}[args.optimizer](args.lr)
    params, batch = plan["params"], plan["batch"]
    pipe = Pipeline(
        plan["program"],
        params,
        batch,
        num_stages=plan["num_stages"],
        schedule=args.schedule,
        num_microbatches=args.microbatches,
        virtual_stages=args.virtual_stages,
        devices=plan["devices"],
        stage_mesh_shape=(plan["group"],),
        optimizer=opt,
    )
    state = pipe.restore(args.resume) if args.resume else pipe.init(params)
    if args.resume:
        print(f"resumed step {state.step} from {args.resume}")
    print(f"compiling {pipe.staged.num_stages} stages' forward and backward (in step 1)...")
    losses: list[float] = []
    for k in range(args.steps):
        t0 = time.perf_counter()
        # the last step is profiled (each action waited for and timed) for the timeline
        state, metrics = pipe.step(state, batch, profile=k == args.steps - 1)
        losses.append(float(metrics.loss))
        print(
            f"step {state.step:4d}  loss {metrics.loss:.6f}  grad norm {metrics.grad_norm:.4f}  "
            f"{(time.perf_counter() - t0) * 1e3:8.1f} ms"
        )
    tl = pipe.timeline()
    fell = losses[-1] < losses[0]
    print(
        f"ran {pipe!r}: {args.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}"
        + ("" if fell or args.steps < 2 else " (it did not fall: check the data and --lr)")
        + f"; measured bubble of the last step {tl.bubble_fraction:.1%}"
    )
    code = 0
    if args.check:
        ref = _train_one_device(args, plan, opt, state.step - args.steps)
        diff = max(abs(a - b) for a, b in zip(losses, ref, strict=True))
        ok = diff <= 1e-4 * max(1.0, max(abs(x) for x in ref))
        print(
            f"check: the same {args.steps} steps on one device: loss {ref[0]:.4f} -> "
            f"{ref[-1]:.4f}; max |loss difference| {diff:.2e} "
            + ("(match)" if ok else "(DIFFERENT)")
        )
        code = 0 if ok else 1
    if args.save:
        print(f"checkpoint written to {pipe.save(state, args.save)}")
    if args.plot:
        schedules.plot(tl, args.plot)
        print(f"timeline written to {args.plot}")
    return code


def _train_one_device(args: argparse.Namespace, plan: dict[str, Any], opt: Any, start: int) -> list:
    """The losses of the same training run on one device: the program's loss averaged over
    the microbatches, ``jax.value_and_grad``, the same optimizer on the float parameters."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    if start:
        raise HlopipeError("--check compares from initial values; leave out --resume with it")
    f = plan["flat"]
    m, mb = args.microbatches, plan["microbatch"]
    params = list(plan["params"])
    train = [k for k, p in enumerate(params) if np.issubdtype(np.asarray(p).dtype, np.inexact)]

    def loss(trained: list[Any], fixed: list[Any], batch: list[Any]) -> Any:
        full = list(fixed)
        for k, v in zip(train, trained, strict=True):
            full[k] = v
        total = 0.0
        for i in range(m):
            out = f(*full, *[b[i * mb : (i + 1) * mb] for b in batch])
            total = total + (out[0] if isinstance(out, tuple) else out)
        return total / m

    @jax.jit
    def step(trained: Any, st: Any, fixed: Any, batch: Any) -> Any:
        value, g = jax.value_and_grad(loss)(trained, fixed, batch)
        u, st = opt.update(g, st, trained)
        return optax.apply_updates(trained, u), st, value

    dev = jax.local_devices()[0]
    trained = jax.device_put([jnp.asarray(params[k]) for k in train], dev)
    fixed = jax.device_put([jnp.asarray(p) for p in params], dev)
    batch = jax.device_put([jnp.asarray(b) for b in plan["batch"]], dev)
    st = opt.init(trained)
    losses = []
    for _ in range(args.steps):
        trained, st, value = step(trained, st, fixed, batch)
        losses.append(float(value))
    return losses


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
    import tempfile

    fd, log_path = tempfile.mkstemp(prefix="hlopipe-launch-", suffix=".log")
    out = _LaunchOutput(os.fdopen(fd, "a", buffering=1), sys.stdout)
    # the coordination service runs in this process: its C++ logs (fd 2) go to the log too
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    try:
        code = launch(
            cmd,
            nproc=args.nproc,
            devices_per_process=args.devices_per_process,
            heartbeat_timeout=args.heartbeat_timeout,
            grace=args.grace,
            out=out,  # type: ignore[arg-type]  # write() and flush() are all it uses
        )
    except BaseException:
        os.unlink(log_path)
        raise
    finally:
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        out.log.close()
    if code == 0:
        os.unlink(log_path)
        return 0
    kept = f"{out.hidden} lines of JAX/XLA logs and C++ stacks kept out; " if out.hidden else ""
    print(
        f"error: the job failed with exit code {code} (the first process to fail; the others "
        f"were stopped); {kept}every process's full output: {log_path}",
        file=sys.stderr,
    )
    return code


class _LaunchOutput:
    """Where `launch` streams the processes' ``[rank i] ...`` lines: all of them into a log
    file; to the terminal all but the C++ side's logs (glog lines such as ``E1130
    12:00:00.1 123 coordination_service.cc:42] ...``) and stack dumps, which the log keeps."""

    _GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]")
    _PREFIX = re.compile(r"^\[rank (\d+)\] ?")

    def __init__(self, log: Any, terminal: Any) -> None:
        self.log, self.terminal = log, terminal
        self.in_stack: set[str] = set()
        self.in_log: set[str] = set()
        self.hidden = 0
        self._partial = ""

    def write(self, text: str) -> int:
        self.log.write(text)
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            if self._noise(line):
                self.hidden += 1
            else:
                self.terminal.write(line + "\n")
        return len(text)

    # lines that continue a multi-line C++ log message (task lists, status payloads)
    _CONTINUATION = re.compile(
        r"^(\s.*|[\d, ]*|.*(type\.googleapis\.com/|RPC: /|/job:|Check the task logs|"
        r"stopped sending heartbeats).*)$"
    )

    def _noise(self, line: str) -> bool:
        m = self._PREFIX.match(line)
        rank, body = (m.group(1), line[m.end() :]) if m else ("", line)
        if self._GLOG.match(body):
            self.in_log.add(rank)
            return True
        if rank in self.in_log:
            if self._CONTINUATION.match(body):
                return True
            self.in_log.discard(rank)
        if "*** Begin stack trace ***" in body or "*** Check failure stack trace: ***" in body:
            self.in_stack.add(rank)
            return True
        if rank in self.in_stack:
            if "*** End stack trace ***" in body:
                self.in_stack.discard(rank)
            elif body.strip() and not body.startswith((" ", "\t", "@")):
                self.in_stack.discard(rank)
                return bool(self._GLOG.match(body))
            return True
        return bool(self._GLOG.match(body))

    def flush(self) -> None:
        self.log.flush()
        self.terminal.flush()
