"""`hlopipe schedule`: generate, check, simulate and rank pipeline schedules (over `schedules`)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from hlopipe.cli._common import PLOT_SUFFIXES, Command, check_output_file

if TYPE_CHECKING:
    from hlopipe.schedules import CostKey


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


def _cmd_schedule(args: argparse.Namespace) -> int:
    """generate, check and simulate a pipeline schedule"""
    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    if args.plot:
        check_output_file(args.plot, "--plot", PLOT_SUFFIXES)
    if args.trace:
        check_output_file(args.trace, "--trace", (".json",))
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
    _print_schedule(args, schedule, timeline)
    return 0


def _print_schedule(args: argparse.Namespace, schedule: Any, timeline: Any) -> None:
    """The schedule as JSON (--json), or its grid and simulated figures."""
    import json

    from hlopipe import schedules

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
            "costs": {str(k): v for k, v in timeline.costs.items()},
            **summary,
        }
        print(json.dumps(doc, indent=1))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    # wrapped into blocks of steps that fit the terminal (COLUMNS, else 80 when piped)
    grid = Text(schedules.format_grid(schedules.align(schedule), width=console.width))
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
        f"(within each rank's span {timeline.span_bubble_fraction:.2%})",
        soft_wrap=True,
    )
    console.print(f"peak activations per rank: {peaks}", soft_wrap=True)
    given = schedules.parse_costs(args.costs) if args.costs else None
    console.print(_costs_line(given), soft_wrap=True)
    for label, path in (("plot", args.plot), ("trace", args.trace), ("torch CSV", args.to_torch)):
        if path:
            console.print(f"{label} written to {path}")


def _costs_line(given: dict[CostKey, float] | None) -> str:
    """The costs the simulation used, and where they came from."""
    from hlopipe import schedules

    used = schedules.resolve_costs(given)
    text = " ".join(f"{k}={v:g}" for k, v in used.items())
    if not given:
        return f"costs assumed: {text} (the defaults; set them with --costs)"
    return f"costs: {text} (from --costs {','.join(f'{k}={v:g}' for k, v in given.items())})"


def _schedule_auto(args: argparse.Namespace, costs: dict[CostKey, float] | None) -> int:
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
    _print_ranking(args, ranked)
    print(_costs_line(costs))
    best = next((c for c in ranked if c.fits), None)
    if best is None:
        raise ScheduleError(f"no schedule for {args.ranks} ranks")
    print(
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


def _print_ranking(args: argparse.Namespace, ranked: list[Any]) -> None:
    """The ranked candidates as a table, fastest first."""
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
    Console(highlight=False).print(table)


COMMAND = Command("schedule", _add_schedule, _cmd_schedule, num_microbatches="--microbatches")
