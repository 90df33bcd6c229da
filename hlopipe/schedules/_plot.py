"""Pictures of a timeline: a Gantt chart (matplotlib) and a Chrome trace (Perfetto)."""

from __future__ import annotations

import json
import os
from typing import Any

from hlopipe.errors import ScheduleError
from hlopipe.schedules._decode import phase_of
from hlopipe.schedules._ir import COMM_KINDS, COMPUTE_KINDS, Kind, Schedule
from hlopipe.schedules._simulate import Timeline

COLOURS = {
    Kind.F: "#4C72B0",
    Kind.B: "#55A868",
    Kind.I: "#2E8B57",
    Kind.W: "#C44E52",
    Kind.RECV_F: "#9A9A9A",
    Kind.RECV_B: "#9A9A9A",
    Kind.SEND_F: "#9A9A9A",
    Kind.SEND_B: "#9A9A9A",
}
# an F and its B run as one executable (a measured timeline's ``fused``): one box, own colour
FUSED_COLOUR = "#8172B2"
_FUSED_LABEL = "FB (forward + backward fused)"
_LABELS = {
    Kind.F: "F (forward)",
    Kind.B: "B (backward)",
    Kind.I: "I (input grad)",
    Kind.W: "W (weight grad)",
    Kind.OVERLAP_F_B: "F&B overlap (F above, B below)",
}
_DPI = 110


def _shade(colour: str, chunk: int, chunks: int) -> str:
    """``colour`` lightened for a rank's later chunks (stages), so the chunks of a V or of
    interleaved stages read apart: chunk 0 as is, the last one 45% towards white."""
    if chunks <= 1 or chunk == 0:
        return colour
    f = 0.45 * chunk / (chunks - 1)
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * f):02X}" for c in rgb)


def plot(
    timeline: Timeline,
    path: str | os.PathLike[str],
    title: str | None = None,
    unit: str | None = None,
) -> None:
    """Draw ``timeline`` as a Gantt chart: ranks as rows, a colour per kind, microbatch numbers
    in the boxes where they fit.

    The title sits inside the figure, the legend below the plot (never over the bars), the
    time axis is labelled with ``unit`` (default ``timeline.unit``: cost units when simulated,
    ms when measured). An F that ran fused with its B (``timeline.fused``) is one FB box in
    a colour of its own (the B has no time of its own to draw). An OVERLAP_F_B is one box,
    its forward's colour above its backward's;
    when a rank holds several stages (a V, interleaved stages) each later chunk is a lighter
    shade of the kind's colour and the legend names the chunks; transfers that took time (a
    receive waiting, a measured send) are thin grey bars under the row. The width grows with
    the number of boxes up to a cap, and labels are left out of boxes too narrow for them,
    so 16 ranks x 64 microbatches stays readable. The format follows the file name
    (``.png``, ``.svg``, ``.pdf``). Imports matplotlib, and only here.

    >>> from hlopipe.schedules import get, simulate
    >>> plot(simulate(get("1f1b", 4, 8)), "/tmp/1f1b.png")  # doctest: +SKIP
    """
    _figure(timeline, title, unit).savefig(os.fspath(path), dpi=_DPI)


def _figure(timeline: Timeline, title: str | None = None, unit: str | None = None):  # -> Figure
    """The matplotlib Figure :func:`plot` saves."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch, Rectangle
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ScheduleError("plotting needs matplotlib: pip install 'hlopipe[plot]'") from e

    schedule = timeline.schedule
    p = schedule.num_ranks
    chunks = max(len(schedule.stages_of(r)) for r in range(p)) if p else 1
    chunk_of = {s: schedule.stages_of(r).index(s) for r in range(p) for s in schedule.stages_of(r)}
    span = max(timeline.makespan, 1e-9)
    unit = unit or timeline.unit
    # Width follows the number of boxes per rank, not the time unit (a measured timeline in
    # milliseconds would otherwise make a picture metres wide).
    boxes = max(
        (sum(1 for a, _, _ in ev if a.kind in COMPUTE_KINDS) for ev in timeline.events.values()),
        default=1,
    )
    width = min(5 + boxes * 0.3, 36)
    height = 1.6 + 0.45 * p
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    left = min(0.9 / width, 0.2)
    title = title or (
        f"{schedule.name}: {p} ranks, {schedule.num_microbatches} microbatches, "
        f"{schedule.num_stages} stages — step {timeline.makespan:.4g} {unit}, "
        f"bubble {timeline.bubble_fraction:.1%}"
    )
    lines = _title_lines(fig, title, width * (1 - left) - 0.15)
    # Room for the title above (one line of it or more) and the legend below, in inches
    # converted to figure fractions; the figure grows by the extra title lines.
    height += 0.2 * (len(lines) - 1)
    fig.set_size_inches(width, height)
    top = 1 - (0.35 + 0.2 * len(lines)) / height
    bottom = 0.95 / height
    ax = fig.add_axes((left, bottom, 1 - left - 0.15 / width, top - bottom))
    px_per_unit = ax.get_position().width * width * _DPI / span
    fontsize = 7 if p <= 8 else 6
    kinds_seen, transfers, fused = _draw_events(
        ax, Rectangle, timeline, chunk_of, chunks, px_per_unit, fontsize
    )
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)], fontsize=8)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_xlim(0, span)
    ax.set_xlabel(f"time ({unit})", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)

    _legend(fig, Patch, kinds_seen, transfers, fused, chunks, width)
    fig.text(left, 1 - 0.12 / height, "\n".join(lines), ha="left", va="top", **_TITLE_FONT)
    return fig


_TITLE_FONT: dict[str, Any] = {"fontsize": 10, "weight": "bold"}


def _title_lines(fig: Any, title: str, room: float) -> list[str]:
    """``title`` broken into lines that each fit in ``room`` inches of ``fig`` (measured with
    the figure's renderer, so a long title is never cut off at the right edge)."""
    import textwrap

    probe = fig.text(0, 0, title, **_TITLE_FONT)
    wide = probe.get_window_extent(renderer=fig.canvas.get_renderer()).width / fig.dpi
    probe.remove()
    if wide <= room:
        return [title]
    return textwrap.wrap(title, max(int(len(title) * room / wide * 0.95), 20))


def _draw_events(
    ax: Any,
    Rectangle: Any,
    timeline: Timeline,
    chunk_of: dict[int, int],
    chunks: int,
    px_per_unit: float,
    fontsize: int,
) -> tuple[set[Kind], bool, bool]:
    """Draw each rank's boxes (and thin transfer bars) on ``ax``; returns the kinds drawn,
    whether any transfer took time and whether any fused FB was drawn."""
    kinds_seen: set[Kind] = set()
    transfers = fused = False

    def label(x0: float, x1: float, y: float, text: str, dark: bool) -> None:
        # The whole label if it fits, else the microbatch alone, else nothing.
        for option in (text, text.split("\n")[0].split("s")[0]):
            chars = max(len(t) for t in option.split("\n"))
            needed = chars * fontsize * 0.62 * _DPI / 72 + 2
            if (x1 - x0) * px_per_unit >= needed:
                ax.text((x0 + x1) / 2, y, option, ha="center", va="center", fontsize=fontsize,
                        color="white" if dark else "black", clip_on=True)  # fmt: skip
                return

    for r, events in timeline.events.items():
        for a, start, end in events:
            if end <= start:
                continue
            if a.kind in COMM_KINDS:
                transfers = True
                ax.add_patch(
                    Rectangle((start, r + 0.3), end - start, 0.12, color=COLOURS[a.kind], lw=0)
                )
                continue
            if a.kind is Kind.OVERLAP_F_B:
                kinds_seen.add(a.kind)
                fwd, bwd = a.parts
                for part, y0 in ((fwd, r - 0.4), (bwd, r)):
                    colour = _shade(COLOURS[part.kind], chunk_of[part.stage], chunks)
                    ax.add_patch(Rectangle((start, y0), end - start, 0.4, color=colour,
                                           ec="white", lw=0.5))  # fmt: skip
                    text = (
                        f"{part.microbatch}" if chunks == 1 else f"{part.microbatch}s{part.stage}"
                    )
                    label(start, end, y0 + 0.2, text, True)
                ax.add_patch(Rectangle((start, r - 0.4), end - start, 0.8, fill=False,
                                       ec="black", lw=0.8))  # fmt: skip
                continue
            is_fb = a.kind in (Kind.F, Kind.B) and (a.stage, a.microbatch) in timeline.fused
            if is_fb and a.kind is Kind.B:
                continue  # ran inside its F's box (its own event is the bookkeeping after it)
            if is_fb:
                fused = True
            else:
                kinds_seen.add(a.kind)
            base = FUSED_COLOUR if is_fb else COLOURS[a.kind]
            colour = _shade(base, chunk_of[a.stage], chunks)
            ax.add_patch(
                Rectangle((start, r - 0.4), end - start, 0.8, color=colour, ec="white", lw=0.5)
            )
            text = f"{a.microbatch}" if chunks == 1 else f"{a.microbatch}\ns{a.stage}"
            label(start, end, r, text, chunk_of[a.stage] < 2 or chunks <= 2)
    return kinds_seen, transfers, fused


def _legend(
    fig: Any,
    Patch: Any,
    kinds_seen: set[Kind],
    transfers: bool,
    fused: bool,
    chunks: int,
    width: float,
) -> None:
    """The legend under the plot: one entry per kind drawn (per chunk when there are several),
    and the fused FB when one was drawn."""
    handles = []
    entries: list[tuple[Kind | None, str]] = [(k, t) for k, t in _LABELS.items() if k in kinds_seen]
    if fused:  # after the F and B entries
        at = sum(1 for k, _ in entries if k in (Kind.F, Kind.B))
        entries.insert(at, (None, _FUSED_LABEL))
    for k, text in entries:
        if k is Kind.OVERLAP_F_B:
            handles.append(Patch(facecolor="white", edgecolor="black", label=text))
            continue
        colour = FUSED_COLOUR if k is None else COLOURS[k]
        for c in range(chunks if chunks > 1 else 1):
            suffix = "" if chunks == 1 else f", chunk {c}"
            handles.append(Patch(color=_shade(colour, c, chunks), label=text + suffix))
    if transfers:
        handles.append(Patch(color=COLOURS[Kind.RECV_F], label="transfer / waiting to receive"))
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(len(handles), max(1, int(width // 2.2))),
        fontsize=8,
        frameon=False,
    )


def to_chrome_trace(
    timeline: Timeline, path: str | os.PathLike[str] | None = None, unit_us: float = 1000.0
) -> dict:
    """``timeline`` as a Chrome trace (open it in https://ui.perfetto.dev or chrome://tracing).

    One thread per rank; one cost unit is ``unit_us`` microseconds. An F that ran fused with
    its B (``timeline.fused``) is named ``<stage>FB<microbatch>``, category ``FB``. Writes
    JSON to ``path`` when given, and returns the trace either way.

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
            fb = a.kind is Kind.F and (a.stage, a.microbatch) in timeline.fused
            events.append(
                {
                    # an F that ran fused with its B: the event spans both
                    "name": f"{a.stage}FB{a.microbatch}" if fb else str(a),
                    "cat": "FB" if fb else a.kind.value,
                    "ph": "X",
                    "pid": 0,
                    "tid": r,
                    "ts": start * unit_us,
                    "dur": (end - start) * unit_us,
                    "args": {
                        "stage": a.stage,
                        "microbatch": a.microbatch,
                        "kind": a.kind.value,
                        **({"parts": [str(x) for x in a.parts]} if len(a.parts) > 1 else {}),
                        **_decode_args(schedule, a.microbatch),
                    },
                }
            )
    trace = {"traceEvents": events, "displayTimeUnit": "ms"}
    if path is not None:
        with open(path, "w") as f:
            json.dump(trace, f)
    return trace


def _decode_args(schedule: Schedule, microbatch: int) -> dict:
    """A decode schedule's microbatch as its group and token step."""
    g = schedule.feedback_groups
    if not g:
        return {}
    return {
        "group": microbatch % g,
        "step": microbatch // g,
        "phase": phase_of(schedule, microbatch),
    }
