"""``hlopipe launch``: N local processes of one job, for development and tests.

The launcher hosts the job's coordination service on a free port of the loopback interface
only (so that losing any worker, process 0 included, is reported alike; and since the service
has no authentication, nothing off this machine can reach it). Each child gets its address,
its process id, the job size and its CPU device count in the environment variables
:func:`hlopipe.distributed.initialize` reads. Their output is streamed line by line with a
``[rank i]`` prefix. When one fails, the others get ``grace`` seconds to notice the lost peer
and stop with their own error (the runtime's heartbeat names it), then SIGTERM, then SIGKILL;
each child runs in its own process group, and the whole group is killed, so nothing is left
running (and a child dies with the launcher, should the launcher itself be killed).

Example:
  >>> launch(["python", "train.py"], nproc=2, devices_per_process=2)   # doctest: +SKIP
  0
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime import distributed as _d

# A local job's coordination service listens here only: it has no authentication.
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def child_env(
    rank: int,
    nproc: int,
    port: int,
    devices_per_process: int,
    heartbeat_timeout: int,
    external_service: bool = True,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of child ``rank``."""
    env = dict(os.environ if base is None else base)
    env.pop(_d.ENV_EXTERNAL_SERVICE, None)
    env.update(
        {
            _d.ENV_COORDINATOR: f"{LOOPBACK}:{port}",
            # where process 0 hosts the service when the launcher does not (jax reads it)
            "JAX_COORDINATOR_BIND_ADDRESS": f"{LOOPBACK}:{port}",
            _d.ENV_LAUNCHED: "1",
            _d.ENV_NUM_PROCESSES: str(nproc),
            _d.ENV_PROCESS_ID: str(rank),
            _d.ENV_CPU_DEVICES: str(devices_per_process),
            _d.ENV_HEARTBEAT: str(heartbeat_timeout),
            "PYTHONUNBUFFERED": "1",
        }
    )
    if external_service:
        env[_d.ENV_EXTERNAL_SERVICE] = "1"
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def _kill_group(p: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up here, not in the child: between fork and exec the child must not load libraries.
_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: on Linux, get SIGKILL when the launcher dies (even of
    SIGKILL, which leaves it no time to stop its children)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _stop_children_on_signals() -> Callable[[], None]:
    """Turn SIGTERM and SIGHUP into ``SystemExit`` while the launcher waits, so that its
    ``finally`` stops the children; returns the function that puts the old handlers back.
    Only the main thread can set handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}

    def restore() -> None:
        for sig, h in old.items():
            signal.signal(sig, h)

    return restore


def launch(
    cmd: Sequence[str],
    *,
    nproc: int,
    devices_per_process: int = 1,
    heartbeat_timeout: int = 10,
    grace: float = 30.0,
    timeout: float | None = None,
    out: IO[str] | None = None,
    on_start: Callable[[list[subprocess.Popen]], None] | None = None,
    host_service: bool = True,
) -> int:
    """Run ``cmd`` as ``nproc`` processes of one job; return the first non-zero exit code
    (a signal ``-N`` becomes ``128 + N``), or 0 when all succeed.

    Args:
      cmd: the command line each process runs.
      nproc: how many processes.
      devices_per_process: CPU devices each process exposes.
      heartbeat_timeout: seconds without a heartbeat after which a process counts as lost.
      grace: after the first failure, how long the others get to stop on their own.
      timeout: stop everything after this many seconds (exit code 124).
      out: where prefixed output goes (default ``sys.stdout``).
      host_service: host the coordination service here (default); ``False`` leaves it to
        process 0, as on a cluster without the launcher. Either way it listens on loopback
        only: the job is local.
    """
    if nproc < 1:
        raise ValueError(f"--nproc must be at least 1, got {nproc}")
    if not cmd:
        raise ValueError("no command given")
    job = _Job(out or sys.stdout)
    port = free_port()
    start = time.monotonic()
    # The coordination service lives here, not in process 0: a worker that dies, process 0
    # included, is then noticed and named by the others (see distributed.ENV_EXTERNAL_SERVICE).
    service = _d.start_service(port, nproc, heartbeat_timeout, LOOPBACK) if host_service else None
    restore = _stop_children_on_signals()
    try:
        for rank in range(nproc):
            env = child_env(rank, nproc, port, devices_per_process, heartbeat_timeout, host_service)
            job.start(rank, cmd, env)
        if on_start is not None:
            on_start(job.procs)
        return supervise(job, timeout=timeout, grace=grace, start=start)
    finally:
        restore()
        job.stop()
        if service is not None:
            service.shutdown()


class _Job:
    """The launched processes, and the threads that copy their output to ``stream`` line by
    line with a ``[rank i]`` prefix."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.procs: list[subprocess.Popen] = []
        self.pumps: list[threading.Thread] = []

    def write(self, text: str) -> None:
        with self.lock:
            self.stream.write(text)
            self.stream.flush()

    def _pump(self, rank: int, pipe: IO[str]) -> None:
        for line in pipe:
            self.write(f"[rank {rank}] {line}")
        pipe.close()

    def start(self, rank: int, cmd: Sequence[str], env: dict[str, str]) -> None:
        """Start process ``rank`` in its own process group, and the thread reading its output."""
        try:
            p = subprocess.Popen(
                list(cmd),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=True,  # its own process group: killpg reaches its children
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            raise RuntimeConfigError(
                f"cannot start process {rank}: {cmd[0]!r}: {e.strerror or e}; check the "
                "command after --"
            ) from e
        self.procs.append(p)
        assert p.stdout is not None
        t = threading.Thread(target=self._pump, args=(rank, p.stdout), daemon=True)
        t.start()
        self.pumps.append(t)

    def signal_running(self, sig: int) -> None:
        for p in self.procs:
            if p.poll() is None:
                _kill_group(p, sig)

    def stop(self) -> None:
        """Kill whatever still runs (grandchildren included) and drain the output."""
        self.signal_running(signal.SIGKILL)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)
            _kill_group(p, signal.SIGKILL)  # grandchildren left in the group
        for t in self.pumps:
            t.join(timeout=5)


def exit_code(code: int) -> int:
    """A child's exit status as the launcher returns it: a signal ``-N`` is ``128 + N``."""
    return code if code > 0 else 128 - code


def supervise(
    job: _Job, *, timeout: float | None, grace: float, start: float, poll: float = 0.05
) -> int:
    """Wait for every process of ``job``; return the first failure's exit code (124 on
    ``timeout``), 0 when all succeed. After the first failure the others get ``grace``
    seconds to stop on their own, then SIGTERM, then (5 s later) SIGKILL."""
    first_bad: int | None = None
    failed_at: float | None = None
    terminated = False
    while True:
        codes = [p.poll() for p in job.procs]
        for c in codes:
            if c is not None and c != 0 and first_bad is None:
                first_bad, failed_at = exit_code(c), time.monotonic()
        if all(c is not None for c in codes):
            return first_bad or 0
        now = time.monotonic()
        if timeout is not None and now - start > timeout and first_bad is None:
            first_bad, failed_at = 124, now - grace
            job.write(f"hlopipe launch: timed out after {timeout:g} s\n")
        if failed_at is not None and now - failed_at > grace and not terminated:
            job.signal_running(signal.SIGTERM)
            terminated = True
        if failed_at is not None and now - failed_at > grace + 5:
            job.signal_running(signal.SIGKILL)
        time.sleep(poll)
