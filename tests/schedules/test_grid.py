"""The terminal grid and the purity of the package."""

import subprocess
import sys

from hlopipe.schedules import align, format_grid, get


def test_grid_layout():
    assert format_grid(align(get("gpipe", 2, 2))).splitlines() == [
        "step    0   1   2   3   4   5",
        "rank 0  0F0 0F1 .   .   0B0 0B1",
        "rank 1  .   1F0 1F1 1B0 1B1",
    ]


def test_grid_marks_and_cuts():
    lines = format_grid(get("gpipe", 2, 2), marks={1: 1}, upto={1: 1}).splitlines()
    assert lines[2] == "rank 1  1F0   >1F1< ...  <-- here"


def test_schedules_imports_no_jax_and_nothing_else_of_hlopipe():
    code = (
        "import sys, hlopipe.schedules as s; s.simulate(s.get('zb-v', 2, 4)); "
        "print(sorted(m for m in sys.modules if m.startswith(('hlopipe', 'jax', 'matplotlib'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    assert all(
        m.startswith(("hlopipe.schedules", "hlopipe.errors")) or m == "hlopipe" for m in loaded
    )
