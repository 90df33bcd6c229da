"""A process killed during training: every other one stops with an error naming it, in
bounded time, and nothing is left running."""

from __future__ import annotations

import io
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
from _mp_util import Job, no_process_left

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess


def _wait_for(job: Job, pattern: str, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, job.text, re.M)
        if m:
            return m
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} within {timeout} s:\n{job.text[-4000:]}")


# Process 0 hosts the coordination service: losing it is a different path (the survivors'
# calls to the service fail) from losing any other process (its heartbeat stops).
@pytest.mark.parametrize("lost", [1, 0], ids=["process1", "process0-coordinator"])
def test_killed_process_is_named_by_every_other(lost):
    job = Job(3, ["--steps", "50", "--stage-devices", "1"], devices=2)
    pids = [p.pid for p in job.procs]
    try:
        _wait_for(job, r"^\[rank 0\] LOSS 2 ", 150)
        victim = int(_wait_for(job, rf"^\[rank {lost}\] PID (\d+)", 5).group(1))
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        code = job.wait(90)
        elapsed = time.monotonic() - killed_at
    finally:
        for p in job.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert code != 0
    for rank in {0, 1, 2} - {lost}:
        named = rf"^\[rank {rank}\] .*lost process {lost}\b"
        assert re.search(named, job.text, re.M), job.text[-4000:]
    # every survivor ended on its own (non-zero) before the launcher's grace ran out
    assert all(p.returncode not in (None, 0) for p in job.procs), [p.returncode for p in job.procs]
    assert elapsed < 60, f"took {elapsed:.1f} s"
    assert no_process_left(pids)


# host_service=False: process 0 hosts the coordination service, as under srun.
@pytest.mark.parametrize(
    "host_service", [True, False], ids=["launcher-service", "process0-service"]
)
def test_waiting_on_a_slow_peer_neither_fails_nor_hangs(host_service):
    # kv_get checks the peers every second while it waits. That check must not be the
    # coordination service's get_live_nodes: it is a barrier, so process 0 would wait there
    # for process 1 to make the same call, which it never does (the hang this guards against).
    code = launch(
        [sys.executable, str(Path(__file__).with_name("_slow_peer_job.py")), "4"],
        nproc=2, heartbeat_timeout=10, grace=5, timeout=60, out=(out := io.StringIO()),
        host_service=host_service,
    )  # fmt: skip
    assert code == 0, out.getvalue()[-3000:]
    assert re.search(r"^\[rank 0\] GOT 42$", out.getvalue(), re.M), out.getvalue()[-3000:]
