"""The multi-process tests' helpers (tests/runtime/_mp_util.py) on made-up job output: a job
that runs several scenarios is checked scenario by scenario, and a failure names which."""

from __future__ import annotations

import io
import types

import pytest
from _mp_util import Job, check_scenarios

TEXT = """[rank 0] PID 1
[rank 1] PID 2
[rank 0] SCENARIO a
[rank 0] LOSS 1 0.5 schedule 1f1b
[rank 1] SCENARIO-like line of another process
[rank 0] SCENARIO b
[rank 0] LOSS 1 0.25 schedule zb-h1
"""


def _job(text: str) -> Job:
    job = Job.__new__(Job)
    job.out = io.StringIO(text)
    job.procs = []
    return job


def test_a_section_is_process_0s_lines_of_its_scenario():
    job = _job(TEXT)
    assert job.section("a") == "[rank 0] LOSS 1 0.5 schedule 1f1b"
    assert job.section("b") == "[rank 0] LOSS 1 0.25 schedule zb-h1"
    assert job.section("c") == ""
    assert job.losses("zb-h1") == {1: 0.25}


def _fails(msg: str) -> types.FunctionType:
    def check() -> None:
        raise AssertionError(msg)

    return check


def test_check_scenarios_names_each_failing_scenario_and_where_the_job_stopped():
    job = _job(TEXT)
    check_scenarios(job, 0, {"a": lambda: None, "b": lambda: None})
    with pytest.raises(AssertionError) as info:
        check_scenarios(job, 0, {"a": _fails("losses differ"), "b": lambda: None})
    assert "failed scenarios: ['a']" in str(info.value) and "--- a: losses differ" in str(
        info.value
    )
    # the job died in b: c never ran; both are named, and the exit code
    with pytest.raises(AssertionError) as info:
        check_scenarios(job, 1, {"a": lambda: None, "b": _fails("no loss 2"), "c": lambda: None})
    msg = str(info.value)
    assert "exit code 1 (it exited with 1 in scenario 'b')" in msg, msg
    assert "failed scenarios: ['b', 'c']" in msg and "--- c: not run" in msg, msg
