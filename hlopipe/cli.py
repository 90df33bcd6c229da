"""The ``hlopipe`` command.

Each subcommand is a pair of functions, ``_add_<name>(subparsers)`` that declares its
arguments and ``_cmd_<name>(args) -> int`` that runs it. Errors a user can cause are
:class:`~hlopipe.errors.HlopipeError`; they print one ``error: ...`` line and exit 2 (with a
traceback under ``--debug``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence

from hlopipe.errors import HlopipeError

# name -> (adder, handler); filled by the _register decorator below.
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {}


def _register(name: str, help: str):  # noqa: A002 - argparse's word
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
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks on errors")
        adder(p)
        p.set_defaults(_handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
