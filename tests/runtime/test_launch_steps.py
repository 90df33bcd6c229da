"""The steps of ``hlopipe launch`` alone: starting a child with its prefixed output, the
supervision loop (first failure, timeout, grace, stop), the exit code of a signal."""

from __future__ import annotations

import io
import signal
import sys
import time

from hlopipe.runtime.launch import _Job, exit_code, supervise


def _job(*scripts: str) -> tuple[_Job, io.StringIO]:
    out = io.StringIO()
    job = _Job(out)
    for rank, script in enumerate(scripts):
        job.start(rank, [sys.executable, "-c", script], {})
    return job, out


def test_exit_code_of_a_signal_is_128_plus_it() -> None:
    assert exit_code(3) == 3
    assert exit_code(-signal.SIGKILL) == 128 + signal.SIGKILL


def test_output_is_prefixed_and_all_success_is_zero() -> None:
    job, out = _job("print('a'); print('b')", "print('c')")
    try:
        assert supervise(job, timeout=60, grace=5, start=time.monotonic()) == 0
    finally:
        job.stop()
    lines = sorted(out.getvalue().splitlines())
    assert lines == ["[rank 0] a", "[rank 0] b", "[rank 1] c"]


def test_first_failure_wins_and_the_rest_are_stopped_after_grace() -> None:
    job, _ = _job("import sys; sys.exit(5)", "import time; time.sleep(600)")
    start = time.monotonic()
    try:
        assert supervise(job, timeout=None, grace=0.5, start=start) == 5
    finally:
        job.stop()
    assert time.monotonic() - start < 30
    assert job.procs[1].returncode == -signal.SIGTERM  # SIGTERM once grace ran out


def test_timeout_is_124() -> None:
    job, out = _job("import time; time.sleep(600)")
    try:
        assert supervise(job, timeout=0.5, grace=0.5, start=time.monotonic()) == 124
    finally:
        job.stop()
    assert "timed out after 0.5 s" in out.getvalue()
