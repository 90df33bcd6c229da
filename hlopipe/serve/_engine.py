"""The engine behind ``hlopipe serve``: requests queue, sequences are generated.

Built as the field's serving engines are, of three parts: the scheduler (``_scheduler.py``:
admission, rows and groups as one protocol returning a typed plan a turn), the runner
(``_runner.py``: a plan made into session calls on the generator, one broadcast a plan under
``launch``) and the output processor (``_output.py``, on the web side's event loop). The
engine is the thread that drives them: it moves what was submitted into the scheduler, asks
it for a plan, has the runner run it, hands the result back to the scheduler and passes on
what the scheduler says to tell each request, until it is stopped and every request queued
or in flight has finished.

**Many processes** (``hlopipe launch``): process 0's engine serves; every other process runs
:meth:`Engine.follow` (no HTTP), whose runner makes process 0's calls in its order.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import queue
import threading
import time
from collections.abc import Callable

import jax

from hlopipe.serve._control import Follower, Leader
from hlopipe.serve._runner import Runner, ServedGenerator
from hlopipe.serve._scheduler import Emit, Policy, Request, Scheduler, StepPlan

# how long the engine waits idle before it gives back the memory malloc holds free (a client
# sending its next request at once is not made to wait for it)
_IDLE_S = 0.5


class Engine:
    """Continuous batching over a :class:`~hlopipe.generate.Generator`: ``gen.groups``
    sessions of ``gen.batch`` rows. ``submit`` queues a request; ``start`` warms every path
    (compiles) in the engine thread and then serves; ``stop`` drains the requests in flight
    and ends.

    In a job of several processes, process 0's engine is given a ``leader`` (it sends each
    plan's calls to the others before making them) and every other process runs
    :meth:`follow`."""

    def __init__(
        self,
        gen: ServedGenerator,
        *,
        on_ready: Callable[[], None] | None = None,
        profile_stages: bool = False,
        leader: Leader | None = None,
    ) -> None:
        self.gen = gen
        self.runner = Runner(gen, leader=leader)
        self.samples = self.runner.samples
        self.batch = gen.batch
        self.max_len = gen.max_len
        self.prefill_lens = self.runner.prefill_lens
        policy = Policy.ROWS if self.runner.per_sequence else Policy.GROUPS
        self.scheduler = Scheduler(
            policy,
            gen.groups,
            gen.batch,
            prefill_lens=self.prefill_lens,
            samples=self.samples,
            chunk_row=self._chunk_row if gen.chunk is not None else None,
            row_counts=tuple(n for _, n in gen.narrow) if self.runner.per_sequence else (),
            step_counts=tuple(gen.narrow_steps) if self.runner.per_sequence else (),
            moves=self.runner.moves,
        )
        self.ready = threading.Event()
        self._on_ready = on_ready
        self._queue: queue.Queue[Request | None] = queue.Queue()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hlopipe-engine", daemon=True)
        self.steps = 0  # turns (plans with a decode step)
        # each stage's busy fraction (``profile_stages``): its step timed alone once warm
        # (``Session.profile``) times the group steps run, over the time since ready
        self._profile = profile_stages
        self.stage_step_s: list[float] = []
        self.group_steps = 0
        self._ready_at = 0.0
        self.busy_s = 0.0
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def pads(self) -> bool:
        """Whether prompts of other lengths go through the prefills right-padded (known
        once warm)."""
        return self.runner.pads

    @property
    def broadcasts(self) -> int:
        """The plans sent to the job's other processes (0 in one process): one a turn."""
        leader = self.runner.leader
        return 0 if leader is None else leader.sent

    @property
    def prefilled(self) -> int:
        """The sequences whose prompt went through a prefill."""
        return self.scheduler.prefilled

    # -- the web side --------------------------------------------------------------------------
    def submit(self, request: Request) -> None:
        """Queue ``request``; after the engine stopped on an error it is finished at once
        (``error`` says why)."""
        with self._lock:
            if self.error is None:
                self._queue.put(request)
                return
        request.emit(-1, None, None)

    def queue_depth(self) -> int:
        return self._queue.qsize() + len(self.scheduler.waiting)

    def running(self) -> int:
        """The sequences holding a row (reading their prompts or generating)."""
        return self.scheduler.running()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Drain: the requests queued and in flight finish, then the thread ends."""
        self._stopping.set()
        self._queue.put(None)
        self._thread.join(timeout)

    # -- the engine thread -----------------------------------------------------------------------
    def _prepare(self) -> None:
        """What every process does alike before serving: compile, time the stages."""
        self.runner.warm()
        self.scheduler.pads = self.runner.pads
        if self._profile:
            self.stage_step_s = self.runner.profiled()
        # every executable served is held by its owner (a stage's ``Compiled``, ``Held``):
        # JAX's tracing, lowering and dispatch caches are only the warm-up's (36-42 MiB on
        # the 125M Llama, ``docs/serving.md``)
        jax.clear_caches()
        release_freed()  # the compilers' and the warm-up's temporaries
        self._ready_at = time.perf_counter()

    def _run(self) -> None:
        leader = self.runner.leader
        try:
            self._prepare()
            if self._profile and leader is not None:  # the other processes' stages
                self.stage_step_s = leader.gather_times(self.stage_step_s)
            self.ready.set()
            if self._on_ready is not None:
                self._on_ready()
            self._loop()
            self.runner.stop()
        except BaseException as e:  # the thread's boundary: kept for /health and re-raised
            with self._lock:
                self.error = e
            self._fail_all()
            self.runner.tell_failure(e)
            raise

    def follow(self, follower: Follower) -> None:
        """Another process's engine (no HTTP): compile as process 0 does, then make process
        0's session calls in its order until it stops.

        Raises:
          DistributedError: process 0's engine failed (its error is named), or process 0
            was lost."""
        self._prepare()
        if self._profile:
            follower.share_times(self.stage_step_s)
        self.ready.set()
        # process 0 gives back malloc's free memory once idle for ``_IDLE_S``; so does this
        # process, once it has waited as long for process 0's next plan (no broadcast more)
        self.runner.follow(follower, lambda: release_freed(), _IDLE_S)

    def _loop(self) -> None:
        """Plan, run, update, tell, until stopped with nothing queued or in flight."""
        scheduler = self.scheduler
        ran = False  # a plan run since the freed memory was last given back
        while True:
            if ran and not scheduler.live() and not scheduler.waiting:  # gone idle
                ran = False
                if not self._take(block=True, timeout=_IDLE_S):  # and stayed idle
                    release_freed()
            self._take(block=not scheduler.live() and not self._stopping.is_set())
            if self._stopping.is_set() and not scheduler.live() and not scheduler.waiting:
                return
            plan = scheduler.schedule()
            if plan.empty:
                continue
            t0, ran = time.perf_counter(), True

            def first_tokens(made: tuple[tuple[int, ...], ...], plan: StepPlan = plan) -> None:
                _tell(scheduler.give_prefilled(plan, made))

            result = self.runner.run(plan, first_tokens)
            _tell(scheduler.update_steps(plan, result))
            if plan.steps:
                self.busy_s += time.perf_counter() - t0
                self.group_steps += len(plan.steps)
                self.steps += 1

    def _chunk_row(self, prompt: list[int], padded: bool) -> tuple[list[int], int]:
        """``prompt`` as the longest prefill it holds and the chunk step read it
        (``generate/_chunk.py``); ``padded``: its first token's log-probabilities are asked
        for, which the decode step gives."""
        row = self.gen.chunk.row(prompt, self.prefill_lens, self.max_len, exact=not padded)
        return row.row, row.covered

    def _take(self, block: bool, timeout: float | None = None) -> bool:
        """Move what was submitted into the scheduler (waiting for one when idle, at most
        ``timeout`` seconds); whether anything came (a request, or the stop)."""
        came = False
        try:
            while True:
                r = self._queue.get(block=block and not self.scheduler.waiting, timeout=timeout)
                block, came = False, True
                if r is None:  # stop: wakes the thread
                    continue
                self.scheduler.add(r)
        except queue.Empty:
            return came

    def _fail_all(self) -> None:
        """Finish every request queued or in flight (after an error: none is left waiting)."""
        requests = self.scheduler.requests()
        while not self._queue.empty():
            r = self._queue.get_nowait()
            if r is not None:
                requests.append(r)
        for r in {id(r): r for r in requests}.values():
            r.emit(-1, None, None)

    # -- metrics -----------------------------------------------------------------------------
    def stage_step(self, stage: int) -> float:
        """Stage ``stage``'s decode step timed alone once warm, in seconds (0 without
        profiling)."""
        return self.stage_step_s[stage] if stage < len(self.stage_step_s) else 0.0

    def stage_busy(self, stage: int) -> float:
        """Stage ``stage``'s busy fraction since the engine was ready: its step's time alone
        times the group steps run, over the wall time (0 before, or without profiling)."""
        if stage >= len(self.stage_step_s) or not self._ready_at:
            return 0.0
        wall = time.perf_counter() - self._ready_at
        busy = self.stage_step_s[stage] * self.group_steps / wall if wall else 0.0
        return busy if math.isnan(busy) else min(1.0, busy)  # nan: a stage not timed here


def _tell(told: list[Emit]) -> None:
    for e in told:
        e.request.emit(e.seq, e.token, e.finish)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (``None`` where the C library has none: macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:  # no C library to load
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_freed() -> None:
    """Give the memory malloc holds free back to the system (glibc's ``malloc_trim(0)``: the
    free pages of every arena, not only each heap's top). The compilers and XLA free their
    temporaries after each call, but malloc keeps them for reuse: a 125M-parameter Llama at
    --max-batch 8 held 480 MiB of them after its warm-up and 140-160 MiB after 8 requests
    (``docs/serving.md``). Called once warm and when the engine has been idle for
    ``_IDLE_S`` (under ``launch``, the other processes once they have waited as long for
    process 0's next plan), never between the turns of a busy engine (the next prefill
    faults the pages in again): 20-85 ms on that server. A no-op where the C library is not
    glibc (no ``malloc_trim``: macOS, musl)."""
    if _TRIM is not None:
        _TRIM(0)
