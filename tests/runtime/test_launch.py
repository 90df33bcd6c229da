"""``hlopipe launch`` on its own (no jax.distributed): environment, exit codes, output, and
that no child outlives the launcher, however the launcher ends."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from _mp_util import no_process_left

from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime.launch import launch

# Each child prints its pid and environment, then behaves as argv says.
CHILD = """
import os, sys, time
e = os.environ
print("PID", os.getpid(), e["HLOPIPE_PROCESS_ID"], e["HLOPIPE_NUM_PROCESSES"],
      e["HLOPIPE_CPU_DEVICES"], e["HLOPIPE_COORDINATOR"], flush=True)
if sys.argv[1] == "sleep":
    time.sleep(600)
sys.exit(int(sys.argv[1]) if e["HLOPIPE_PROCESS_ID"] == "1" else 0)
"""


def test_children_get_the_job_environment_and_the_first_failure_is_returned():
    out = io.StringIO()
    code = launch([sys.executable, "-c", CHILD, "3"], nproc=3, devices_per_process=2, out=out)
    assert code == 3
    pattern = r"^\[rank (\d)\] PID \d+ (\d) (\d) (\d) (127\.0\.0\.1:\d+)$"
    lines = re.findall(pattern, out.getvalue(), re.M)
    assert sorted((r, p, n, d) for r, p, n, d, _ in lines) == [
        ("0", "0", "3", "2"), ("1", "1", "3", "2"), ("2", "2", "3", "2"),
    ]  # fmt: skip
    assert len({addr for *_, addr in lines}) == 1  # one coordinator for all


def test_all_succeed_gives_zero():
    assert launch([sys.executable, "-c", CHILD, "0"], nproc=2, out=io.StringIO()) == 0


def test_timeout_stops_everything_with_124():
    out = io.StringIO()
    start = time.monotonic()
    code = launch([sys.executable, "-c", CHILD, "sleep"], nproc=2, timeout=3, grace=1, out=out)
    assert code == 124
    assert time.monotonic() - start < 30
    pids = [int(p) for p in re.findall(r"PID (\d+)", out.getvalue())]
    assert len(pids) == 2 and no_process_left(pids)


def _launcher_with_sleeping_children() -> tuple[subprocess.Popen, list[int]]:
    cli = "import sys; from hlopipe.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", cli, "launch", "--nproc", "2", "--",
           sys.executable, "-c", CHILD, "sleep"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = []
    deadline = time.monotonic() + 60
    while len(pids) < 2 and time.monotonic() < deadline:
        m = re.search(r"PID (\d+)", proc.stdout.readline())
        if m:
            pids.append(int(m.group(1)))
    assert len(pids) == 2
    return proc, pids


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if no_process_left(pids):
            return True
        time.sleep(0.1)
    return False


def test_terminating_the_launcher_stops_its_children():
    proc, pids = _launcher_with_sleeping_children()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    assert _gone_within(pids, 10)


def test_killing_the_launcher_kills_its_children():
    proc, pids = _launcher_with_sleeping_children()
    proc.kill()  # no chance to clean up: the children die with their parent (Linux)
    proc.wait(30)
    try:
        assert _gone_within(pids, 10)
    finally:
        for p in pids:
            if os.path.exists(f"/proc/{p}"):
                os.kill(p, signal.SIGKILL)


def test_a_command_that_cannot_start_is_a_clear_error():
    with pytest.raises(RuntimeConfigError, match=r"cannot start process 0: '/nonexistent/prog'"):
        launch(["/nonexistent/prog"], nproc=2, out=io.StringIO())
    cli = "import sys; from hlopipe.cli import main; sys.exit(main())"
    r = subprocess.run([sys.executable, "-c", cli, "launch", "--nproc", "2", "--",
                        "/nonexistent/prog"], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: cannot start process 0: '/nonexistent/prog': No such file or directory; check "
        "the command after --"
    ]
