"""The rank x step grid, and the one function every schedule error is built with."""

from __future__ import annotations

from collections.abc import Mapping

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import Schedule


def format_grid(
    schedule: Schedule,
    marks: Mapping[int, int] | None = None,
    upto: Mapping[int, int] | None = None,
    width: int | None = None,
) -> str:
    """The schedule as a rank x step grid of text, ``.`` for an idle slot.

    Args:
      schedule: the schedule to draw.
      marks: rank -> step of a cell to point at; the cell is shown as ``>2B3<`` and its row
        ends with ``<-- here``.
      upto: rank -> step after which that rank's row is cut (``...``), for partial grids.
      width: the most characters a line may have (a terminal's width): each step's column
        is then as wide as its own widest cell, and the steps are wrapped into blocks of
        lines that fit, one under the other, each with its own ``step`` header. Default: one
        block, every column as wide as the widest cell.

    >>> from hlopipe.schedules import align, get
    >>> print(format_grid(align(get("gpipe", 2, 1))))
    step    0   1   2   3
    rank 0  0F0 .   .   0B0
    rank 1  .   1F0 1B0
    """
    marks = marks or {}
    upto = upto or {}
    rows: dict[int, list[str]] = {}
    for r in range(schedule.num_ranks):
        cells = ["." if a is None else str(a) for a in schedule.actions[r]]
        if r in marks and marks[r] < len(cells):
            cells[marks[r]] = f">{cells[marks[r]]}<"
        if r in upto and upto[r] + 1 < len(cells):
            cells = [*cells[: upto[r] + 1], "..."]
        rows[r] = cells
    steps = max((len(rows[r]) for r in rows), default=0)
    label_w = len(f"rank {schedule.num_ranks - 1}")
    if width is None:
        cell_w = max([len(c) for cells in rows.values() for c in cells] + [len(str(steps - 1)), 1])
        return _block(rows, range(steps), [cell_w] * steps, label_w, marks)
    col_w = [
        max([len(str(t))] + [len(rows[r][t]) for r in rows if t < len(rows[r])])
        for t in range(steps)
    ]
    blocks, start, used = [], 0, label_w + 2
    for t in range(steps):
        if t > start and used + col_w[t] > width:
            blocks.append(range(start, t))
            start, used = t, label_w + 2
        used += col_w[t] + 1
    blocks.append(range(start, steps))
    return "\n\n".join(_block(rows, b, col_w, label_w, marks) for b in blocks)


def _block(
    rows: Mapping[int, list[str]],
    steps: range,
    col_w: list[int],
    label_w: int,
    marks: Mapping[int, int],
) -> str:
    """The grid's lines for the steps ``steps`` (columns ``col_w`` wide)."""

    def cells(texts: list[str]) -> str:
        return " ".join(texts[t].ljust(col_w[t]) if t < len(texts) else "" for t in steps)

    lines = [("step".ljust(label_w) + "  " + cells([str(t) for t in range(steps.stop)])).rstrip()]
    for r, row in rows.items():
        line = f"rank {r}".ljust(label_w) + "  " + cells(row)
        if r in marks and marks[r] in steps:
            line = line.rstrip() + "  <-- here"
        lines.append(line.rstrip())
    return "\n".join(lines)


def schedule_error(
    schedule: Schedule,
    rank: int | None,
    step: int | None,
    message: str,
    *,
    marks: Mapping[int, int] | None = None,
    upto: Mapping[int, int] | None = None,
) -> ScheduleError:
    """The error for a problem at (rank, step): ``rank 1, step 5: <message>`` and the grid.

    Every error of the validator and the simulator goes through here, so they all read alike.
    """
    where = ""
    if rank is not None:
        where = f"rank {rank}, step {step}: " if step is not None else f"rank {rank}: "
    if marks is None and rank is not None and step is not None:
        marks = {rank: step}
    grid = format_grid(schedule, marks=marks, upto=upto)
    return ScheduleError(f"{where}{message}\nin schedule {schedule.name!r}:\n{grid}")
