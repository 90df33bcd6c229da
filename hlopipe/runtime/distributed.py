"""Many processes under ``jax.distributed``: one process per host (or per local group).

:func:`initialize` wraps :func:`jax.distributed.initialize`. It reads what ``hlopipe launch``
sets (``HLOPIPE_COORDINATOR``, ``HLOPIPE_NUM_PROCESSES``, ``HLOPIPE_PROCESS_ID``,
``HLOPIPE_CPU_DEVICES``) and otherwise leaves detection to JAX (SLURM, Open MPI, Kubernetes,
``JAX_COORDINATOR_ADDRESS``...). On CPU it selects gloo collectives, which is what carries
cross-process stage transfers there; on GPU, NCCL does.

Failures: every process beats through the coordinator's key-value store and watches the others'
beats (see ``_Watchdog``), so a process that dies is noticed in bounded time, and
:func:`check_peers` (called by the runtime while it waits) turns a lost peer into a
:class:`DistributedError` naming it.

A library does not take over the process: only under ``hlopipe launch`` (or with
``initialize(take_over_process=True)``) does hlopipe replace ``sys.excepthook``, register
``atexit`` handlers and end a process that lost a peer with ``os._exit`` after a grace period
(so that jax's own exit handler does not wait for the lost process). Otherwise a lost peer
raises :class:`DistributedError` where the runtime waits, and the process ends as the caller
decides.

Example:
  >>> import hlopipe
  >>> hlopipe.distributed.initialize()          # doctest: +SKIP
  >>> hlopipe.distributed.process_index(), hlopipe.distributed.process_count()  # doctest: +SKIP
  (0, 2)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import jax

from hlopipe import _jax_compat
from hlopipe.errors import DistributedError

ENV_COORDINATOR = "HLOPIPE_COORDINATOR"
ENV_NUM_PROCESSES = "HLOPIPE_NUM_PROCESSES"
ENV_PROCESS_ID = "HLOPIPE_PROCESS_ID"
ENV_CPU_DEVICES = "HLOPIPE_CPU_DEVICES"
ENV_HEARTBEAT = "HLOPIPE_HEARTBEAT_TIMEOUT"
# Set by ``hlopipe launch``, which hosts the coordination service itself: process 0 then only
# connects to it, like every other process, so losing process 0 is named like losing any other.
ENV_EXTERNAL_SERVICE = "HLOPIPE_EXTERNAL_SERVICE"

ENV_LOST_EXIT_AFTER = "HLOPIPE_LOST_EXIT_AFTER"
# Set by ``hlopipe launch`` in every child: the process is hlopipe's to manage (see
# ``take_over_process`` of :func:`initialize`).
ENV_LAUNCHED = "HLOPIPE_LAUNCHED"

_lock = threading.Lock()
_initialized = False
_ALIVE = "hlopipe/alive/"


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise DistributedError(f"{name}={v!r} is not an integer") from None


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    cpu_devices: int | None = None,
    heartbeat_timeout: int | None = None,
    initialization_timeout: int = 120,
    platform: str | None = None,
    take_over_process: bool | None = None,
) -> None:
    """Join the job: connect to the coordinator and make every process's devices visible.

    Call it first, before anything touches a JAX backend. Arguments left ``None`` come from
    ``hlopipe launch``'s environment variables, then from JAX's own cluster detection.

    Args:
      coordinator_address: ``host:port`` of process 0's coordination service.
      num_processes, process_id: the job's size and this process's index.
      cpu_devices: CPU devices this process exposes (``jax_num_cpu_devices``); only used on
        the CPU platform.
      heartbeat_timeout: seconds after which a silent process counts as dead (default 30, or
        ``HLOPIPE_HEARTBEAT_TIMEOUT``).
      initialization_timeout: seconds to wait for every process to connect.
      platform: ``"cpu"`` forces CPU (gloo collectives); default: ``JAX_PLATFORMS`` or JAX's
        choice.
      take_over_process: let hlopipe manage this process's exit: an uncaught exception is
        published to the other processes at once (``sys.excepthook``), a clean exit too
        (``atexit``), and a process that lost a peer ends with ``os._exit(1)`` a few seconds
        after raising. Default: only under ``hlopipe launch``. Otherwise hlopipe installs no
        hook; the heartbeat thread still tells the others when this process's main thread
        ends, and a lost peer only raises :class:`DistributedError`.

    Raises DistributedError when called twice with a different job, or when the job cannot
    be formed.
    """
    global _initialized
    with _lock:
        if _initialized:
            return
        coordinator_address = coordinator_address or os.environ.get(ENV_COORDINATOR)
        if num_processes is None:
            num_processes = _env_int(ENV_NUM_PROCESSES)
        if process_id is None:
            process_id = _env_int(ENV_PROCESS_ID)
        if cpu_devices is None:
            cpu_devices = _env_int(ENV_CPU_DEVICES)
        if heartbeat_timeout is None:
            heartbeat_timeout = _env_int(ENV_HEARTBEAT) or 30
        _configure_backend(platform, cpu_devices)
        _join(
            coordinator_address, num_processes, process_id, heartbeat_timeout,
            initialization_timeout,
        )  # fmt: skip
        _initialized = True
        if take_over_process is None:
            take_over_process = bool(os.environ.get(ENV_LAUNCHED))
        if jax.process_count() > 1:
            _start_watchdog(heartbeat_timeout, take_over_process)


def _configure_backend(platform: str | None, cpu_devices: int | None) -> None:
    """The jax settings a process of a job needs, before its backend starts."""
    platforms = (
        platform or os.environ.get("JAX_PLATFORMS") or getattr(jax.config, "jax_platforms", "")
    )
    on_cpu = platforms.split(",")[0] in ("cpu", "") if platforms else True
    if platform is not None:
        jax.config.update("jax_platforms", platform)
    # gloo must be chosen before the CPU backend starts; harmless for GPU runs (the CPU
    # backend then only serves host computations).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if cpu_devices is not None and on_cpu:
        jax.config.update("jax_num_cpu_devices", cpu_devices)


def _join(
    coordinator_address: str | None,
    num_processes: int | None,
    process_id: int | None,
    heartbeat_timeout: int,
    initialization_timeout: int,
) -> None:
    """``jax.distributed.initialize``, its failure as a :class:`DistributedError`."""
    kwargs: dict[str, Any] = {}
    if coordinator_address is not None and num_processes is not None and process_id is not None:
        # Everything is given: no cluster auto-detection, one local device id list per
        # process is not needed on CPU.
        kwargs["cluster_detection_method"] = "deactivate"
    external = bool(os.environ.get(ENV_EXTERNAL_SERVICE))
    try:
        with _jax_compat.no_coordination_service() if external else contextlib.nullcontext():
            jax.distributed.initialize(
                coordinator_address,
                num_processes,
                process_id,
                initialization_timeout=initialization_timeout,
                heartbeat_timeout_seconds=heartbeat_timeout,
                shutdown_timeout_seconds=shutdown_timeout(heartbeat_timeout),
                **kwargs,
            )
    except Exception as e:  # the job's boundary: joining it fails as the other processes and
        # the network make it (RuntimeError, ValueError, XlaRuntimeError): re-raised, chained
        raise DistributedError(
            f"could not join the job (coordinator {coordinator_address}, "
            f"{num_processes} processes, this is {process_id}): {e}"
        ) from e


def shutdown_timeout(heartbeat_timeout: int) -> int:
    """The coordination service's shutdown timeout for a job with this heartbeat timeout."""
    return max(heartbeat_timeout, 10)


def start_service(
    port: int, num_processes: int, heartbeat_timeout: int, host: str = "127.0.0.1"
) -> Any:
    """Host the job's coordination service in this process (``hlopipe launch`` does, so that
    no worker's death takes the service with it); returns it (call ``.shutdown()``).

    It listens on ``host:port`` only: loopback by default, since the service has no
    authentication (whoever reaches it can join the job or read its key-value store).
    """
    return _jax_compat.get_distributed_runtime_service(
        f"{host}:{port}",
        num_processes,
        heartbeat_timeout=heartbeat_timeout,
        shutdown_timeout=shutdown_timeout(heartbeat_timeout),
    )


# -- our own heartbeat ---------------------------------------------------------------------------
#
# The coordination service does notice a dead process after ``heartbeat_timeout``, but then
# aborts every other process from C++ (SIGABRT, a log line, no Python error), and the callback
# that jaxlib 0.10.2 offers instead cannot be used from Python (its status argument fails to
# convert). So each process also beats through the coordinator's key-value store and watches
# the others' beats: a peer silent for half the heartbeat timeout is declared lost first, with
# a clear error naming it. A process that ends cleanly marks itself done; one that dies of an
# uncaught exception marks itself failed, with the exception, so its peers say why at once.


class _Watchdog(threading.Thread):
    def __init__(self, timeout: int, take_over_process: bool = False) -> None:
        super().__init__(name="hlopipe-heartbeat", daemon=True)
        self.me = jax.process_index()
        self.n = jax.process_count()
        self.interval = max(0.25, min(1.0, timeout / 20))
        self.stale = max(5.0, timeout / 2)
        self.stop = threading.Event()
        self.failed_here = False
        self.error: DistributedError | None = None
        self.listeners: list[Callable[[DistributedError], None]] = []
        self.exit_after = float(os.environ.get(ENV_LOST_EXIT_AFTER, "5"))
        self.take_over_process = take_over_process

    def mark(self, value: str) -> None:
        """Publish how this process stands (``beat N``, ``done``, ``failed: ...``) to its peers;
        nothing once it has left the job (no client). Called while the process ends, too
        (``sys.excepthook``, ``atexit``), when the service may already be gone: the
        coordination client's error then means no peer can read the mark, and is dropped; any
        other error is a bug here and propagates."""
        client = _client()
        if client is None:  # left the job (jax.distributed.shutdown): no one to tell
            return
        # the coordination client's error (a JaxRuntimeError): the service is gone
        with contextlib.suppress(RuntimeError):
            client.key_value_set(f"{_ALIVE}{self.me}", value, allow_overwrite=True)

    def run(self) -> None:
        client = _client()
        beat = 0
        seen: dict[int, str] = {}
        changed = dict.fromkeys(range(self.n), time.monotonic())
        done: set[int] = {self.me}
        while not self.stop.wait(self.interval):
            beat += 1
            if not self.take_over_process and self.main_thread_ended():
                return
            try:
                client.key_value_set(f"{_ALIVE}{self.me}", f"beat {beat}", allow_overwrite=True)
                entries = client.key_value_dir_get(_ALIVE)
            except RuntimeError as e:  # the coordination client's (a JaxRuntimeError)
                if self.stop.is_set() or self.left_the_job():
                    return
                self.lost(0, f"the coordination service it hosts stopped answering: {e}")
                return
            now = time.monotonic()
            for key, value in entries:
                try:
                    q = int(key.rsplit("/", 1)[1])
                except ValueError:
                    continue
                if value.startswith("done"):
                    done.add(q)
                elif value.startswith("failed") and q != self.me:
                    self.lost(q, value)
                    return
                elif seen.get(q) != value:
                    seen[q] = value
                    changed[q] = now
            for q in range(self.n):
                if q not in done and now - changed[q] > self.stale:
                    self.lost(
                        q, f"no heartbeat for {now - changed[q]:.1f} s; it died or was killed"
                    )
                    return

    def main_thread_ended(self) -> bool:
        """Without hooks of its own: once the main thread has ended (jax's exit handler may
        still wait for the others), mark this process done, or failed with the exception that
        ended it (which Python keeps in ``sys.last_value``), and stop beating."""
        if threading.main_thread().is_alive():
            return False
        exc = getattr(sys, "last_value", None)
        self.mark(_failed(type(exc), exc) if exc is not None else "done")
        self.stop.set()
        return True

    def left_the_job(self) -> bool:
        """Whether the client was shut down on purpose (``jax.distributed.shutdown``, jax's
        exit handler) rather than lost: then its errors are no lost peer."""
        time.sleep(self.interval)
        return self.stop.is_set() or not is_initialized()

    def lost(self, q: int, why: str) -> None:
        err = DistributedError(f"lost process {q} ({why}); process {self.me} stops")
        self.error = err
        print(f"hlopipe: error: {err}", file=sys.stderr, flush=True)
        if self.take_over_process:
            # jax's exit handler would wait for the lost process: leave in bounded time instead.
            timer = threading.Timer(self.exit_after, os._exit, args=(1,))
            timer.daemon = True
            timer.start()
        # Every listener is told (a run waiting on this process's ranks fails now, not at its
        # timeout), even after one of them fails; a listener's failure is a bug in it and is
        # raised once all are told (on the heartbeat thread: threading.excepthook prints it).
        failures = []
        for fn in list(self.listeners):
            try:
                fn(err)
            except Exception as e:  # re-raised below, after the other listeners
                failures.append(e)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise ExceptionGroup(f"{len(failures)} lost-peer listeners failed", failures)


_watchdog: _Watchdog | None = None


def _failed(tp: Any, value: Any) -> str:
    return f"failed: {tp.__name__}: {' '.join(str(value).split())[:300]}"


def _start_watchdog(timeout: int, take_over_process: bool = False) -> None:
    global _watchdog
    wd = _Watchdog(timeout, take_over_process)
    _watchdog = wd
    wd.mark("beat 0")
    wd.start()
    if take_over_process:
        _take_over_exit(wd)


def _take_over_exit(wd: _Watchdog) -> None:
    """Publish this process's uncaught exception or clean exit to the others from hooks."""
    hook = sys.excepthook

    def excepthook(tp: Any, value: Any, tb: Any) -> None:
        wd.failed_here = True
        wd.mark(_failed(tp, value))
        hook(tp, value, tb)

    sys.excepthook = excepthook

    def at_exit() -> None:  # registered after jax's, so it runs before jax's shutdown
        wd.stop.set()
        if not wd.failed_here and wd.error is None:
            wd.mark("done")

    atexit.register(at_exit)


def lost_peer_error() -> DistributedError | None:
    """The error of the first lost process, once the heartbeat has seen one."""
    return _watchdog.error if _watchdog is not None else None


def on_lost_peer(fn: Callable[[DistributedError], None]) -> Callable[[], None]:
    """Call ``fn(error)`` when a peer is lost (at once if one already is); returns a function
    that removes it."""
    wd = _watchdog
    if wd is None:
        return lambda: None
    if wd.error is not None:
        fn(wd.error)
    wd.listeners.append(fn)

    def remove() -> None:
        if fn in wd.listeners:
            wd.listeners.remove(fn)

    return remove


def is_initialized() -> bool:
    """Whether this process is part of a multi-process job."""
    return bool(jax.distributed.is_initialized())


def process_index() -> int:
    return jax.process_index()


def process_count() -> int:
    return jax.process_count()


def _client() -> Any:
    return _jax_compat.distributed_client()


def kv_set(key: str, value: str) -> None:
    """Publish ``value`` under ``key`` in the coordination service (small metadata only)."""
    _client().key_value_set(key, value)


def kv_delete(key: str) -> None:
    """Remove ``key`` from the coordination service (a value every reader has read)."""
    _client().key_value_delete(key)


def kv_get(key: str, timeout: float, *, who: int | None = None) -> str:
    """Wait for ``key`` (set by process ``who``), checking the peers every second, so a dead
    peer fails with :class:`DistributedError` instead of a timeout (``math.inf``: as long as
    the peers live)."""
    value = kv_wait(key, timeout)
    if value is None:
        raise DistributedError(
            f"waited {timeout:g} s for {key!r}"
            + (f" from process {who}" if who is not None else "")
        )
    return value


def kv_wait(key: str, timeout: float) -> str | None:
    """:func:`kv_get`, but ``None`` once ``timeout`` seconds passed with ``key`` unset (a dead
    peer still raises :class:`DistributedError`)."""
    client = _client()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            return str(client.blocking_key_value_get(key, int(max(min(left, 1.0), 0.001) * 1000)))
        except RuntimeError as e:  # the coordination client's (a JaxRuntimeError)
            if "DEADLINE_EXCEEDED" not in str(e) and "Deadline" not in str(e):
                raise_lost_peer(e)
                raise DistributedError(f"reading {key!r} from the coordinator failed: {e}") from e
        check_peers()
        if left <= 0:
            return None


def barrier(name: str, timeout: float) -> None:
    """Wait until every process of the job has reached ``barrier(name, ...)`` (the
    coordination service's barrier; ``name`` used once per job).

    Raises:
      RuntimeError: the service refused it (a process missing after ``timeout`` seconds, or
        gone); :func:`raise_lost_peer` turns that into the lost process's name.
    """
    _client().wait_at_barrier(name, int(timeout * 1000))


def meet(name: str, processes: list[int], timeout: float = 900.0) -> None:
    """Wait until every process of ``processes`` has called ``meet(name, ...)`` (checking
    the peers every second: a dead one fails with :class:`DistributedError` naming it).

    Before the first collective between processes: gloo gives a new context 30 s to form,
    so a process arriving there long before its peers (still compiling, or in a slow first
    step on a loaded machine) would fail; here it waits for them instead."""
    me = process_index()
    kv_set(f"hlopipe/meet/{name}/{me}", "here")
    for q in processes:
        if q != me:
            kv_get(f"hlopipe/meet/{name}/{q}", timeout, who=q)


def wait_for_lost_peer() -> DistributedError | None:
    """After a failed exchange with other processes: wait (up to the heartbeat's detection
    time) for the watchdog to name a lost process, and return its error; ``None`` when every
    process still beats. A peer that was killed usually breaks a transfer (connection reset)
    seconds before its heartbeat goes stale; waiting lets the error name the process that died
    instead of the one that noticed."""
    wd = _watchdog
    if wd is None:
        return None
    deadline = time.monotonic() + wd.stale + 2 * wd.interval
    while wd.error is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return wd.error


def raise_lost_peer(cause: BaseException) -> None:
    """Raise the watchdog's error naming a lost process (see :func:`wait_for_lost_peer`),
    chained to ``cause``; return if there is none."""
    err = wait_for_lost_peer()
    if err is not None:
        raise DistributedError(str(err)) from cause


def check_peers() -> None:
    """Raise the :class:`DistributedError` naming the lost process once the heartbeat has seen
    one; return at once otherwise (never blocks).

    Not the coordination service's ``get_live_nodes``: that call is a barrier (it answers only
    once every listed live process has called it too), so a process checking on a peer that is
    merely slow would wait for that peer forever, and two processes checking on different sets
    would wait for each other forever.
    """
    if not is_initialized():
        return
    err = lost_peer_error()
    if err is not None:
        raise err


def shutdown() -> None:
    """Leave the job (waits for the other processes, up to the shutdown timeout)."""
    global _initialized
    with _lock:
        wd = _watchdog
        if wd is not None and not wd.stop.is_set():
            wd.stop.set()
            if wd.error is None:
                wd.mark("done")
        if is_initialized():
            jax.distributed.shutdown()
        _initialized = False
