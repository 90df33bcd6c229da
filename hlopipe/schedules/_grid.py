"""The rank x step grid, and the one function every schedule error is built with."""

from __future__ import annotations

from collections.abc import Mapping

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import Schedule


def format_grid(
    schedule: Schedule,
    marks: Mapping[int, int] | None = None,
    upto: Mapping[int, int] | None = None,
) -> str:
    """The schedule as a rank x step grid of text, ``.`` for an idle slot.

    Args:
      schedule: the schedule to draw.
      marks: rank -> step of a cell to point at; the cell is shown as ``>2B3<`` and its row
        ends with ``<-- here``.
      upto: rank -> step after which that rank's row is cut (``...``), for partial grids.

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
    width = max((len(rows[r]) for r in rows), default=0)
    cell_w = max([len(c) for cells in rows.values() for c in cells] + [len(str(width - 1)), 1])
    label_w = len(f"rank {schedule.num_ranks - 1}")
    header = "step".ljust(label_w) + "  " + " ".join(str(t).ljust(cell_w) for t in range(width))
    lines = [header.rstrip()]
    for r in range(schedule.num_ranks):
        line = f"rank {r}".ljust(label_w) + "  " + " ".join(c.ljust(cell_w) for c in rows[r])
        if r in marks:
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
