"""The asynchronous single controller: one thread issues a :class:`StepProgram` in order.

In one process a step needs no threads: every instruction is an asynchronous dispatch (a
compiled executable, or a copy onto another rank's devices), and the devices order
the work by its data dependencies. The program's global order respects every rank's row and
every data dependency, so issuing it in order is a valid step; nothing waits on a device
inside it. The loop is ``regs[outs] = fn(*regs[ins]); regs[frees] = None`` per instruction
(``recv`` and ``mark`` instructions call nothing and are dropped when the stream is prepared).

The loop is the step's host cost per action, so everything that does not change between steps
is decided when the stream is prepared: each instruction's argument slots as one
``operator.itemgetter`` (one C call gathers them), and its result and freed slots as tuples.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Any

from hlopipe.runtime._compile import ExecKind
from hlopipe.runtime._program import PipelineExecutionError, StepProgram

# (instruction index, what to call or None, its arguments gathered from the register file,
#  the slots its results go to, the slots freed after it)
_Step = tuple[int, Any, Callable[[list[Any]], tuple[Any, ...]], tuple[int, ...], tuple[int, ...]]


class Stream:
    """:class:`StepProgram` ``prog`` prepared for the single controller of one process."""

    def __init__(self, prog: StepProgram, fns: list[Any]) -> None:
        self.prog = prog
        self._prepared: list[_Step] = [
            (n, fn, gather(ins.ins), ins.outs, ins.frees)
            for n, (fn, ins) in enumerate(zip(fns, prog.instrs, strict=True))
            if fn is not None or ins.frees
        ]

    def run(self, regs: list[Any]) -> float:
        """Issue every instruction (``regs`` holds the inputs); returns seconds spent."""
        t0 = time.perf_counter()
        n = -1
        try:
            for n, fn, get, outs, frees in self._prepared:  # noqa: B007
                if fn is not None:
                    got = fn(*get(regs))
                    if len(got) != len(outs):
                        raise ValueError(f"{len(got)} results where {len(outs)} were expected")
                    for k, v in zip(outs, got):  # noqa: B905 (lengths checked above)
                        regs[k] = v
                for k in frees:
                    regs[k] = None
        except Exception as e:  # not swallowed: re-raised with the action, the cause chained
            r, t, a = self.prog.instrs[n].where
            raise PipelineExecutionError(
                f"rank {r}, step {t}: {a.describe()} failed: {type(e).__name__}: {e}"
            ) from e
        return time.perf_counter() - t0

    def run_counting(self, regs: list[Any]) -> dict[int, int]:
        """Run as :meth:`run`, counting after each instruction, per rank, the microbatches
        whose activations the register file still holds (a fused F+B counts as one while it
        runs); returns the most per rank. For tests: slower than :meth:`run`."""
        prog = self.prog
        peak = dict.fromkeys(prog.peak_live, 0)
        for n, fn, get, outs, frees in self._prepared:
            if fn is not None:
                for k, v in zip(outs, fn(*get(regs)), strict=True):
                    regs[k] = v
            for k in frees:
                regs[k] = None
            instr = prog.instrs[n]
            r = instr.rank
            held = sum(
                any(regs[k] is not None for k in slots)
                for slots in prog.activation_slots.get(r, {}).values()
            )
            fused = instr.op == "compute" and instr.fn[1] is ExecKind.FB
            peak[r] = max(peak[r], held + fused)
        return peak

    def held_slots(self, regs: list[Any]) -> list[int]:
        """The slots still holding a value that is neither an input, an accumulator, an
        output nor a constant (after a run: none, or a buffer leaked)."""
        keep = self.prog.keep()
        return [k for k, v in enumerate(regs) if v is not None and k not in keep]


def gather(ins: tuple[int, ...]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The values of slots ``ins`` from a register file, as a tuple, in one C call."""
    if len(ins) >= 2:
        return operator.itemgetter(*ins)
    if len(ins) == 1:
        (k,) = ins
        return lambda regs: (regs[k],)
    return lambda regs: ()
