"""The threaded interpreter: one thread per rank runs that rank's instructions of a
:class:`~hlopipe.runtime._program.StepProgram` in order.

It runs the very instructions the asynchronous controller issues (``_stream.py``), so what it
measures is what a normal step runs. A ``send`` copies the values onto the receiving rank and
posts them into a :class:`Mailbox` (it never blocks); an instruction reading a slot another rank
writes first takes it from the mailbox, with a timeout, so that a lost value or a dead rank
becomes an error naming the rank, the step of its row and the action, never a hang.

Profiling (``sync``): every instruction is waited for on its devices and timed; an action's
event runs from the start of its first instruction to the end of its last. Across processes
(``_multiprocess.py``) a process runs the threads of its ranks, and a ``send`` to a rank of
another process goes to a link thread that issues the collectives in the program's order.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax

from hlopipe.runtime._program import Instr, PipelineExecutionError, StepProgram
from hlopipe.runtime._threads import carrying_context
from hlopipe.schedules import Action

__all__ = ["Mailbox", "PipelineExecutionError", "StepResult", "ThreadedRun"]


class _Aborted(Exception):
    """Another rank failed; this one stops quietly (the first error is the one reported)."""


class Mailbox:
    """Values in flight between ranks, keyed by (kind, stage, index, microbatch).

    ``put`` never blocks; ``take`` blocks until ``count`` values are there, the timeout runs
    out (``TimeoutError``) or another rank failed (``_Aborted``).
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._box: dict[Any, list[Any]] = defaultdict(list)
        self.error: BaseException | None = None

    def put(self, key: Any, value: Any) -> None:
        with self._cv:
            self._box[key].append(value)
            self._cv.notify_all()

    def take(self, key: Any, count: int, timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                if self.error is not None:
                    raise _Aborted
                got = self._box.get(key)
                if got is not None and len(got) >= count:
                    del self._box[key]
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._cv.wait(left)

    def fail(self, error: BaseException) -> None:
        with self._cv:
            if self.error is None:
                self.error = error
            self._cv.notify_all()

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass
class StepResult:
    events: dict[int, list[tuple[Action, float, float]]]  # ms from the start of the step
    outputs: dict[tuple[int, int], Any]  # (flat output, microbatch) -> value
    acc: list[list[Any]]  # per stage: accumulated gradients of its diff_params
    peak_live: dict[int, int]  # per rank: most residual sets alive at once
    wall_ms: float
    dispatch_ms: float  # summed over actions: time to issue them (before waiting on devices)


class ThreadedRun:
    """One step (or inference pass) of ``prog`` on the ranks ``ranks``, a thread each.

    ``regs``: the register file, filled with the step's inputs (shared by the threads: every
    slot is read on one rank only, and a slot another rank writes is taken from the mailbox
    first). ``fns``: per instruction what to call (:meth:`StepProgram.resolve`).
    """

    def __init__(
        self,
        prog: StepProgram,
        fns: list[Any],
        regs: list[Any],
        *,
        timeout: float,
        sync: bool,
        ranks: Sequence[int] | None = None,
    ) -> None:
        self.prog = prog
        self.fns = fns
        self.regs = regs
        self.timeout = timeout
        self.sync = sync
        self.mailbox = Mailbox()
        all_ranks = list(prog.plan.schedule.actions)
        self.ranks = [r for r in (all_ranks if ranks is None else ranks)
                      if prog.plan.schedule.actions.get(r)]  # fmt: skip
        self.events: dict[int, list[tuple[Action, float, float]]] = {r: [] for r in all_ranks}
        self._where: dict[int, str] = {r: "not started" for r in all_ranks}
        self._dispatch = dict.fromkeys(all_ranks, 0.0)
        self._t0 = 0.0

    # -- driving -------------------------------------------------------------------------------

    def run(self) -> StepResult:
        self._t0 = time.perf_counter()
        if len(self.ranks) == 1:
            self._guarded(self.ranks[0])
        else:
            threads = self._rank_threads(self.ranks)
            try:
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            except BaseException as e:  # Ctrl-C while waiting: every rank stops at its next
                self.mailbox.fail(e)  # wait or action (else one waiting for data that never
                raise  # comes holds the interpreter's exit forever)
        return self._result()

    def _rank_threads(self, ranks: Sequence[int], daemon: bool = False) -> list[threading.Thread]:
        """One thread per rank running its instructions (not started)."""
        return [
            threading.Thread(
                target=carrying_context(self._guarded),
                args=(r,),
                name=f"hlopipe-rank-{r}",
                daemon=daemon,
            )
            for r in ranks
        ]

    def _result(self) -> StepResult:
        """The step's result once every rank is done (raises the first rank's error)."""
        wall = (time.perf_counter() - self._t0) * 1e3
        if self.mailbox.error is not None:
            raise self.mailbox.error
        prog, regs = self.prog, self.regs
        return StepResult(
            self.events,
            {key: regs[k] for key, k in prog.output_slots.items()},
            [[regs[k] for k in prog.acc_slots.get(ex.stage.index, [])] for ex in prog.plan.execs],
            dict(prog.peak_live),
            wall,
            sum(self._dispatch.values()) * 1e3,
        )

    def _guarded(self, r: int) -> None:
        try:
            self._rank_loop(r)
        except _Aborted:
            pass
        except BaseException as e:  # the rank thread's boundary: the step's caller re-raises it
            self.mailbox.fail(e)

    def _rank_loop(self, r: int) -> None:
        t0 = self._t0
        current: tuple[int, Action] | None = None
        start = end = 0.0
        for n, ins in self._instrs(r):
            _, t, a = ins.where
            if (t, a) != current and ins.rank == r:
                if current is not None:
                    self.events[r].append((current[1], (start - t0) * 1e3, (end - t0) * 1e3))
                current = (t, a)
                start = time.perf_counter()
                self._where[r] = f"step {t} ({a})"
            if self.mailbox.failed:
                raise _Aborted
            try:
                self._do(n, ins)
            except (_Aborted, PipelineExecutionError):
                raise
            except TimeoutError:
                raise PipelineExecutionError(self._timeout_message(r, t, a)) from None
            except Exception as e:  # not swallowed: re-raised with the action, the cause chained
                raise PipelineExecutionError(
                    f"rank {r}, step {t}: {a.describe()} failed: {type(e).__name__}: {e}"
                ) from e
            end = time.perf_counter()
        if current is not None:
            self.events[r].append((current[1], (start - t0) * 1e3, (end - t0) * 1e3))
        self._where[r] = "finished"

    def _instrs(self, r: int) -> list[tuple[int, Instr]]:
        """What rank ``r``'s thread runs, in order: its instructions."""
        return self.prog.rank_instrs(r)

    def _timeout_message(self, r: int, t: int, a: Action) -> str:
        others = "; ".join(f"rank {q} at {w}" for q, w in sorted(self._where.items()) if q != r)
        return (
            f"rank {r}, step {t}: {a.describe()} waited {self.timeout:g} s for its data and "
            f"none came (a deadlock in the schedule, or a rank that stopped); {others}"
        )

    # -- instructions --------------------------------------------------------------------------

    def _do(self, n: int, ins: Instr) -> None:
        regs = self.regs
        for k in ins.waits:
            regs[k] = self.mailbox.take(k, 1, self.timeout)[0]
        fn = self.fns[n]
        if fn is not None and not self._handed_off(n, ins):
            start = time.perf_counter()
            got = fn(*[regs[k] for k in ins.ins])
            for k, v in zip(ins.outs, got, strict=True):
                regs[k] = v
            self._dispatch[ins.rank] += time.perf_counter() - start
            if self.sync:
                jax.block_until_ready(list(got))
            for k in ins.posts:
                self.mailbox.put(k, regs[k])
        for k in ins.frees:
            regs[k] = None

    def _handed_off(self, n: int, ins: Instr) -> bool:
        """Whether instruction ``n`` is another thread's to run (a send between processes,
        which the multi-process interpreter's link thread issues)."""
        return False
