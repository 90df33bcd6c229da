"""benchmarks/gpu.py at CPU size (its smoke run in ``make test``): every number it prints is
finite (the planner's predicted step time and memory against the measured step's included),
the generator's tokens equal the plain decode loop's, and it prints its table."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu


@pytest.mark.slow  # several seconds: it compiles every program it times
def test_gpu_benchmark_runs_at_cpu_size(capsys: pytest.CaptureFixture[str]) -> None:
    report = gpu.main(["--small"])
    names = [r.name for r in report.rows]
    for needed in (
        "rehydrated (exported StableHLO) / original",
        "rehydrated (XLA's optimised HLO) / original",
        "1-stage pipeline / plain loop, ~1 ms step",
        "1-stage pipeline / plain loop, ~10 ms step",
        "pipeline host time per action, ~1 ms step",
        "1-stage Generator / plain decode loop, batch 1",
        "1-stage Generator / plain decode loop, batch 16",
        "Generator host time per action, batch 16",
        "hlopipe plan / measured, step time",
        "hlopipe plan / measured, memory",
    ):
        assert needed in names
    for row in report.rows:
        assert math.isfinite(row.value) and row.value > 0, row
    assert report.tokens_equal == {1: True, 16: True}
    out = capsys.readouterr().out
    for row in report.rows:
        assert row.name in out
