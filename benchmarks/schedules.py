"""Every schedule's bubble, peak activations and generate + validate + simulate time.

Costs F = I = W = 1 (a full B = 2), free transfers. Prints a rich table; not a test.

    .venv/bin/python benchmarks/schedules.py
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from hlopipe import schedules
from hlopipe.errors import ScheduleError

COSTS = {"F": 1.0, "I": 1.0, "W": 1.0, "send": 0.0}
VIRTUAL = {"interleaved-1f1b": 2, "looped-bfs": 2, "zb-v": 2}


def measure(name: str, p: int, m: int) -> tuple[schedules.Timeline, float]:
    start = time.perf_counter()
    s = schedules.get(name, p, m, VIRTUAL.get(name, 1))
    schedules.validate(s)
    lowered = schedules.lower(s)
    schedules.validate(lowered)
    timeline = schedules.simulate(lowered, COSTS)
    return timeline, time.perf_counter() - start


def main() -> None:
    table = Table(title="hlopipe schedules (F = I = W = 1, B = 2; v = 2 where looped)")
    for col in ("schedule", "p", "m", "bubble", "span bubble", "peak act. (max/min)", "ms"):
        table.add_column(col, justify="left" if col == "schedule" else "right")
    for p in (4, 8):
        for m in (8, 32):
            for name in schedules.names():
                try:
                    t, secs = measure(name, p, m)
                except ScheduleError as e:
                    table.add_row(name, str(p), str(m), f"refused: {e}", "", "", "")
                    continue
                peaks = t.peak_activations.values()
                table.add_row(
                    name,
                    str(p),
                    str(m),
                    f"{t.bubble_fraction:.3f}",
                    f"{t.span_bubble_fraction:.3f}",
                    f"{max(peaks)}/{min(peaks)}",
                    f"{secs * 1e3:.1f}",
                )
            table.add_section()
    console = Console()
    console.print(table)
    worst = max(measure(name, 8, 128)[1] for name in schedules.names())
    console.print(
        f"p=8, m=128: slowest generate + validate + lower + simulate: {worst * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
