"""Pictures of a timeline: a Gantt chart (matplotlib) and a Chrome trace (Perfetto)."""

from __future__ import annotations

import json
import os

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import COMPUTE_KINDS, Kind
from hlopipe.schedules._simulate import Timeline

COLOURS = {
    Kind.F: "#4C72B0",
    Kind.B: "#55A868",
    Kind.I: "#8DD3A0",
    Kind.W: "#C44E52",
    Kind.RECV_F: "#DDDDDD",
    Kind.RECV_B: "#DDDDDD",
}
_LABELS = {Kind.F: "F", Kind.B: "B", Kind.I: "I (input grad)", Kind.W: "W (weight grad)"}


def plot(timeline: Timeline, path: str | os.PathLike[str], title: str | None = None) -> None:
    """Draw ``timeline`` as a Gantt chart: ranks as rows, a colour per kind, microbatch numbers
    in the boxes (with the stage, ``s3``, when a rank holds several stages). The format follows
    the file name (``.png``, ``.svg``, ``.pdf``). Imports matplotlib, and only here.

    >>> from hlopipe.schedules import get, simulate
    >>> plot(simulate(get("1f1b", 4, 8)), "/tmp/1f1b.png")  # doctest: +SKIP
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ScheduleError("plotting needs matplotlib: pip install 'hlopipe[plot]'") from e

    schedule = timeline.schedule
    p = schedule.num_ranks
    multi = schedule.num_stages > p
    span = max(timeline.makespan, 1e-9)
    # Width follows the number of boxes per rank, not the time unit (a measured timeline in
    # milliseconds would otherwise make a picture metres wide).
    boxes = max(
        (sum(1 for a, _, _ in ev if a.kind in COMPUTE_KINDS) for ev in timeline.events.values()),
        default=1,
    )
    fig = Figure(figsize=(min(4 + boxes * 0.35, 28), 1.2 + 0.55 * p))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    kinds_seen: set[Kind] = set()
    for r, events in timeline.events.items():
        for a, start, end in events:
            if a.kind not in COMPUTE_KINDS or end <= start:
                continue
            kinds_seen.add(a.kind)
            colour = COLOURS[a.kind]
            ax.barh(
                r,
                end - start,
                left=start,
                height=0.8,
                color=colour,
                edgecolor="white",
                linewidth=0.6,
            )
            label = f"{a.microbatch}" if not multi else f"{a.microbatch}\ns{a.stage}"
            if (end - start) / span > 0.006:
                ax.text(
                    (start + end) / 2,
                    r,
                    label,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if a.kind in (Kind.F, Kind.B, Kind.W) else "black",
                )
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_xlim(0, span)
    ax.set_xlabel("time (cost units)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=COLOURS[k], label=_LABELS[k]) for k in _LABELS if k in kinds_seen]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title(
        title
        or (
            f"{schedule.name}: {p} ranks, {schedule.num_microbatches} microbatches, "
            f"{schedule.num_stages} stages — makespan {timeline.makespan:g}, "
            f"bubble {timeline.bubble_fraction:.1%}"
        ),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=110)


def to_chrome_trace(
    timeline: Timeline, path: str | os.PathLike[str] | None = None, unit_us: float = 1000.0
) -> dict:
    """``timeline`` as a Chrome trace (open it in https://ui.perfetto.dev or chrome://tracing).

    One thread per rank; one cost unit is ``unit_us`` microseconds. Writes JSON to ``path``
    when given, and returns the trace either way.

    >>> from hlopipe.schedules import get, simulate
    >>> len(to_chrome_trace(simulate(get("gpipe", 2, 1)))["traceEvents"]) > 0
    True
    """
    schedule = timeline.schedule
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": schedule.name}}
    ]
    for r in range(schedule.num_ranks):
        events.append(
            {"name": "thread_name", "ph": "M", "pid": 0, "tid": r, "args": {"name": f"rank {r}"}}
        )
    for r, evs in timeline.events.items():
        for a, start, end in evs:
            events.append(
                {
                    "name": str(a),
                    "cat": a.kind.value,
                    "ph": "X",
                    "pid": 0,
                    "tid": r,
                    "ts": start * unit_us,
                    "dur": (end - start) * unit_us,
                    "args": {"stage": a.stage, "microbatch": a.microbatch, "kind": a.kind.value},
                }
            )
    trace = {"traceEvents": events, "displayTimeUnit": "ms"}
    if path is not None:
        with open(path, "w") as f:
            json.dump(trace, f)
    return trace
