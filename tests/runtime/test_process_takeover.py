"""A library does not take over the process: ``sys.excepthook``, ``atexit`` and the ``os._exit``
timer only under ``hlopipe launch`` or with ``initialize(take_over_process=True)``; otherwise a
lost peer raises, and the heartbeat still tells the others how this process ended."""

from __future__ import annotations

import io
import os
import sys
import threading
from typing import Any

import pytest

from hlopipe.runtime import distributed
from hlopipe.runtime.launch import launch


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Record what the watchdog registers instead of letting it touch this pytest process."""
    seen: dict[str, list[Any]] = {"atexit": [], "timers": []}
    monkeypatch.setattr(distributed.atexit, "register", seen["atexit"].append)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)

    class Timer:
        def __init__(self, after: float, fn: Any, args: Any = ()) -> None:
            seen["timers"].append((after, fn, args))
            self.daemon = False

        def start(self) -> None:
            pass

    monkeypatch.setattr(distributed.threading, "Timer", Timer)
    monkeypatch.setattr(distributed, "_watchdog", None)
    return seen


def _watchdog(take_over: bool) -> distributed._Watchdog:
    before = sys.excepthook
    distributed._start_watchdog(10, take_over)
    wd = distributed._watchdog
    assert wd is not None
    wd.stop.set()  # no job in this process: its thread ends at its next beat
    wd.join(5)
    assert (sys.excepthook is not before) == take_over
    return wd


def test_a_library_installs_no_hook_and_does_not_exit(hooks) -> None:
    wd = _watchdog(take_over=False)
    assert hooks["atexit"] == []
    wd.lost(1, "no heartbeat")
    # no os._exit: the error is raised where the runtime waits
    assert [t for t in hooks["timers"] if t[1] is os._exit] == []
    assert distributed.lost_peer_error() is wd.error
    assert "lost process 1" in str(wd.error)


def test_taking_over_installs_the_hooks_and_exits_after_a_lost_peer(hooks) -> None:
    wd = _watchdog(take_over=True)
    assert len(hooks["atexit"]) == 1
    wd.lost(1, "no heartbeat")
    assert [args for _, fn, args in hooks["timers"] if fn is os._exit] == [(1,)]


def test_a_failing_lost_peer_listener_surfaces_after_every_listener_is_told(hooks) -> None:
    """A bug in a listener (hlopipe's own: a run's ``mailbox.fail``) is raised, not swallowed;
    the listeners after it are still told, and the bounded exit is still armed."""
    wd = _watchdog(take_over=True)
    told: list[Any] = []

    def buggy(err: Any) -> None:
        raise ZeroDivisionError("a bug in a listener")

    distributed.on_lost_peer(buggy)
    distributed.on_lost_peer(told.append)
    with pytest.raises(ZeroDivisionError, match="a bug in a listener"):
        wd.lost(1, "no heartbeat")
    assert told == [wd.error] and "lost process 1" in str(wd.error)
    assert [args for _, fn, args in hooks["timers"] if fn is os._exit] == [(1,)]


# One process of a real job (its own coordination service): a mark the client refuses for a bug
# here (not a string) surfaces; after leaving the job, marking is nothing (no client).
MARK_JOB = """
import socket, jax
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=1, process_id=0)
from hlopipe.runtime import distributed
wd = distributed._Watchdog(10)
wd.mark("beat 7")
print("READ", distributed._client().blocking_key_value_get("hlopipe/alive/0", 1000))
try:
    wd.mark(7)
except TypeError as e:
    print("SURFACED", type(e).__name__)
jax.distributed.shutdown()
wd.mark("done")
print("LEFT")
"""


@pytest.mark.multiprocess
def test_a_bug_in_marking_this_process_surfaces() -> None:
    import subprocess

    run = subprocess.run([sys.executable, "-c", MARK_JOB], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:3] == ["READ beat 7", "SURFACED TypeError", "LEFT"], run.stdout


def test_main_thread_end_is_published_without_hooks(monkeypatch, hooks) -> None:
    wd = distributed._Watchdog(10, take_over_process=False)
    marks: list[str] = []
    monkeypatch.setattr(wd, "mark", marks.append)
    assert not wd.main_thread_ended()  # this test runs on the main thread
    monkeypatch.setattr(threading, "main_thread", lambda: threading.Thread())  # never started
    monkeypatch.setattr(sys, "last_value", ValueError("boom\n  twice"), raising=False)
    assert wd.main_thread_ended()
    assert marks == ["failed: ValueError: boom twice"] and wd.stop.is_set()
    monkeypatch.delattr(sys, "last_value")
    assert wd.main_thread_ended() and marks[-1] == "done"


# Two real processes. Process 1 fails with an uncaught exception; process 0 waits for its peers
# the way the runtime does. argv[1]: "launch" (hlopipe launch's default: take over) or
# "library" (initialize(take_over_process=False)).
JOB = """
import sys, time
from hlopipe import distributed
from hlopipe.runtime.distributed import DistributedError
library = sys.argv[1] == "library"
distributed.initialize(take_over_process=False if library else None)
me = distributed.process_index()
print("HOOKED", sys.excepthook is not sys.__excepthook__, flush=True)
if me == 1:
    raise ValueError("boom in process 1")
deadline = time.monotonic() + 60
try:
    while time.monotonic() < deadline:
        distributed.check_peers()
        time.sleep(0.1)
    print("NOT NAMED", flush=True)
except DistributedError as e:
    print("NAMED", e, flush=True)
    sys.exit(3)
"""


@pytest.mark.multiprocess
@pytest.mark.parametrize("mode", ["launch", "library"])
def test_a_failed_peer_is_named_with_or_without_taking_over(mode: str) -> None:
    out = io.StringIO()
    code = launch([sys.executable, "-c", JOB, mode], nproc=2, timeout=120, grace=20, out=out)
    text = out.getvalue()
    hooked = "True" if mode == "launch" else "False"
    assert text.count(f"HOOKED {hooked}") == 2, text
    assert "[rank 0] NAMED lost process 1 (failed: ValueError: boom in process 1)" in text, text
    assert code in (1, 3), text
