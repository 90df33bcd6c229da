"""Multi-controller execution: every process builds the same plan and runs its own ranks.

Under ``jax.distributed`` every process sees every device; a rank (one stage mesh) lives on
one process's devices or spans whole processes (``_process_layout.ProcessLayout``). Each
process runs the threads of the ranks it holds as the single-process executor does (a spanning
rank: see ``MultiProcessRun``); what changes is a transfer whose receiver lives in another
process. That becomes an XLA collective both processes must issue (``_comm.Links``).

Order, so that no pair of processes deadlocks: a collective blocks until both sides issue it,
so sends cannot run on the rank threads (two ranks sending to each other at the same step of
1F1B would wait for each other forever). Each process instead has one *link* thread that issues
its cross-process transfers one at a time, in one global order every process computes alike:
the order of the ``send`` instructions in the step's program (``_program.py``: a dry run of the
lowered schedule, ranks advancing as far as their data allows, round-robin). That order
extends the data dependencies (a transfer never waits for a value that needs a later
transfer), so the earliest unfinished transfer can always
complete: both of its processes are at it and its value depends only on earlier ones.
A rank's ``send`` hands the values to the link and returns; the receiving rank takes them
from the mailbox.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from hlopipe.errors import DistributedError
from hlopipe.runtime import distributed
from hlopipe.runtime._comm import Links, move_group
from hlopipe.runtime._executor import StepResult, ThreadedRun, _Aborted
from hlopipe.runtime._process_layout import ProcessLayout
from hlopipe.runtime._program import Instr, PipelineExecutionError, StepProgram
from hlopipe.runtime._threads import carrying_context

if TYPE_CHECKING:
    from hlopipe.runtime._comm import Comm

__all__ = ["MultiProcessRun", "cross_process_sends", "threaded_run"]

# Set to print every cross-process transfer as it starts and ends, and all threads' stacks on a
# receive timeout (for diagnosing a stalled job).
ENV_TRACE = "HLOPIPE_TRACE_TRANSFERS"
# After a step fails, how long its threads get to stop before the step gives up on them.
_STUCK_GRACE = 10.0


def threaded_run(
    comm: Comm, prog: StepProgram, fns: list[Any], regs: list[Any], *, sync: bool
) -> ThreadedRun:
    """The threaded run of one step (or inference pass) of ``prog`` over ``comm``'s ranks: the
    profiling interpreter in one process, the multi-process one across processes."""
    if not comm.multi:
        return ThreadedRun(prog, fns, regs, timeout=comm.timeout, sync=sync)
    return MultiProcessRun(
        prog, fns, regs, timeout=comm.timeout, sync=sync, layout=comm.layout, links=comm.links,
    )  # fmt: skip


class _Outbox:
    """Values a rank thread hands to the link thread, by mailbox key."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._box: dict[Any, list[Any]] = defaultdict(list)

    def put(self, key: Any, value: Any) -> None:
        with self._cv:
            self._box[key].append(value)
            self._cv.notify_all()

    def take(self, key: Any, run: ThreadedRun, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                if run.mailbox.failed:
                    raise _Aborted
                got = self._box.get(key)
                if got:
                    v = got.pop(0)
                    if not got:
                        del self._box[key]
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._cv.wait(min(left, 0.5))

    def wake(self) -> None:
        with self._cv:
            self._cv.notify_all()


class MultiProcessRun(ThreadedRun):
    """A :class:`ThreadedRun` of this process's ranks; a ``send`` to a rank of another
    process goes through the link thread (see the module docstring), or, for a rank
    spanning processes, is issued in the program's order on the rank's own thread."""

    def __init__(
        self, prog: StepProgram, *args: Any, layout: ProcessLayout, links: Links, **kw: Any
    ) -> None:
        """As :class:`ThreadedRun` (the program, ``fns``, ``regs``, ``timeout``, ``sync``),
        for this process's ranks of ``layout``; ``links``: the pipeline's transfers."""
        super().__init__(prog, *args, ranks=layout.local_ranks, **kw)
        self.layout = layout
        self.links = links
        self.order = cross_process_sends(prog, layout)
        self._outbox = _Outbox()
        self.transfer_seconds = 0.0
        self.transfer_bytes = 0
        self.transfers = 0
        self._trace = bool(os.environ.get(ENV_TRACE))
        # A rank spanning processes is its processes' only rank: they run its instructions
        # and their transfers on one thread, in the program's order (see _instrs).
        self._in_order = any(layout.spans(r) for r in self.ranks)

    def run(self) -> StepResult:
        if self._in_order:  # the rank's first collectives form gloo contexts: meet first
            (r,) = self.ranks
            self.links.meet_once(f"rank{r}-{len(self.prog.instrs)}",
                                 list(self.layout.rank_procs[r]))  # fmt: skip
        self._t0 = time.perf_counter()
        # Daemon threads: after a failure, a thread stuck inside a native transfer (gloo waits
        # up to 30 min) must not keep the process alive; the step gives up on it instead.
        threads = self._rank_threads(self.ranks, daemon=True)
        if not self._in_order:
            threads.append(
                threading.Thread(
                    target=carrying_context(self._guarded_link), name="hlopipe-link",
                    daemon=True,
                )
            )  # fmt: skip
        remove = distributed.on_lost_peer(self.mailbox.fail)
        for t in threads:
            t.start()
        failed_at: float | None = None
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
                    if self.mailbox.failed:
                        self._outbox.wake()
                        failed_at = failed_at or time.monotonic()
                        if time.monotonic() - failed_at > _STUCK_GRACE:
                            break
        finally:
            remove()
            self._outbox.wake()
        return self._result()

    def _timeout_message(self, r: int, t: int, a: Any) -> str:
        for q in range(len(self.layout.rank_process)):
            if not self.layout.local(q):
                self._where[q] = f"process {self.layout.rank_process[q]}"
        msg = super()._timeout_message(r, t, a)
        if os.environ.get(ENV_TRACE):
            # A stall across processes is hard to see from one side: show every thread.
            faulthandler.dump_traceback(sys.stderr, all_threads=True)
        try:
            distributed.check_peers()
        except DistributedError as e:
            return f"{msg}; {e}"
        return msg

    def _handed_off(self, n: int, ins: Instr) -> bool:
        if ins.op != "send" or self.layout.local(ins.dst):
            return False
        values = [self.regs[k] for k in ins.ins]
        if self.layout.spans(ins.rank):
            pl = self.prog.plan.placement
            src, dst = pl.meshes[ins.rank], pl.meshes[ins.dst]
            routes = self.links.routes(src, dst, list(ins.avals), list(ins.shardings))
            values = self.links.lay_out(values, src, routes)
        if self._in_order:
            self._exchange(n, ins, values)
        else:
            self._outbox.put(n, values)
        return True

    def _instrs(self, r: int) -> list[tuple[int, Instr]]:
        """Rank ``r``'s instructions; for a rank spanning processes, with the transfers into
        it, all in the program's order. Its processes then issue every executable that
        involves another process (its own, with collectives among them; the transfers) in
        one global order: XLA:CPU runs a process's collective executables one after another
        in the order issued, so two of its processes issuing the rank's executables and a
        transfer in different orders would wait for each other forever."""
        if not self._in_order:
            return super()._instrs(r)
        return [(n, ins) for n, ins in enumerate(self.prog.instrs)
                if ins.rank == r or (ins.op == "send" and ins.dst == r
                                     and not self.layout.local(ins.rank))]  # fmt: skip

    def _do(self, n: int, ins: Instr) -> None:
        if self._in_order and not self.layout.local(ins.rank):
            self._exchange(n, ins, None)  # a transfer into this process's rank
            return
        super()._do(n, ins)

    # -- the link thread -----------------------------------------------------------------------

    def _guarded_link(self) -> None:
        try:
            self._link()
        except _Aborted:
            pass
        except BaseException as e:  # the link thread's boundary: the step's caller re-raises it
            self.mailbox.fail(e)

    def _link(self) -> None:
        for n, ins in self.order:
            if self.mailbox.failed:
                raise _Aborted
            values = None
            if self.layout.local(ins.rank):
                try:
                    values = self._outbox.take(n, self, self.timeout)
                except TimeoutError:
                    raise PipelineExecutionError(
                        f"process {self.layout.me}: transfer of {ins.where[2].describe()} from "
                        f"rank {ins.rank} to rank {ins.dst} waited {self.timeout:g} s for its "
                        "value"
                    ) from None
            self._exchange(n, ins, values)

    def _exchange(self, n: int, ins: Instr, values: list[Any] | None) -> None:
        """Transfer ``n`` between processes (``values`` where it is sent from); the
        receiver's values go to the mailbox."""
        start, moved = time.perf_counter(), self.links.moved_bytes
        if self._trace:
            print(f"hlopipe-trace: p{self.layout.me} xfer {n} {ins.where} start",
                  file=sys.stderr)  # fmt: skip
        out = move_group(self.links, values, self.prog.plan.placement, self.layout, ins.rank,
                         ins.dst, list(ins.avals), list(ins.shardings))  # fmt: skip
        self.transfer_seconds += time.perf_counter() - start
        self.transfer_bytes += self.links.moved_bytes - moved
        if self._trace:
            print(f"hlopipe-trace: p{self.layout.me} xfer {n} done", file=sys.stderr)
        self.transfers += 1
        if values is None:
            assert out is not None
            for k, value in zip(ins.outs, out, strict=True):
                self.mailbox.put(k, value)


def cross_process_sends(prog: StepProgram, layout: ProcessLayout) -> list[tuple[int, Instr]]:
    """The program's sends between processes that involve this process, in the program's
    order (which every process computes alike, so every pair issues its collectives in one
    order; see the module docstring)."""
    out = []
    for n, ins in enumerate(prog.instrs):
        if ins.op != "send":
            continue
        src, dst = layout.rank_procs[ins.rank], layout.rank_procs[ins.dst]
        if src != dst and (layout.me in src or layout.me in dst):
            out.append((n, ins))
    return out
