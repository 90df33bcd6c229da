"""The asynchronous single controller: one thread issues a :class:`StepProgram` in order.

In one process a step needs no threads: every instruction is an asynchronous dispatch (a
compiled executable, or a ``device_put`` onto another rank's devices), and the devices order
the work by its data dependencies. The program's global order respects every rank's row and
every data dependency, so issuing it in order is a valid step; nothing waits on a device
inside it. The loop is ``regs[outs] = fn(*regs[ins]); regs[frees] = None`` per instruction
(``recv`` and ``mark`` instructions call nothing and are dropped when the stream is prepared).
"""

from __future__ import annotations

import time
from typing import Any

from hlopipe.runtime._program import PipelineExecutionError, StepProgram


class Stream:
    """:class:`StepProgram` ``prog`` prepared for the single controller of one process."""

    def __init__(self, prog: StepProgram, fns: list[Any]) -> None:
        self.prog = prog
        self._prepared = [
            (n, fn, ins.ins, ins.outs, ins.frees)
            for n, (fn, ins) in enumerate(zip(fns, prog.instrs, strict=True))
            if fn is not None or ins.frees
        ]

    def run(self, regs: list[Any]) -> float:
        """Issue every instruction (``regs`` holds the inputs); returns seconds spent."""
        t0 = time.perf_counter()
        n = 0
        try:
            for n, fn, ins, outs, frees in self._prepared:  # noqa: B007
                _issue(regs, fn, ins, outs, frees)
        except Exception as e:
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
        for n, fn, ins, outs, frees in self._prepared:
            _issue(regs, fn, ins, outs, frees)
            instr = prog.instrs[n]
            r = instr.rank
            held = sum(
                any(regs[k] is not None for k in slots)
                for slots in prog.activation_slots.get(r, {}).values()
            )
            fused = instr.op == "compute" and instr.fn[1] == "FB"
            peak[r] = max(peak[r], held + fused)
        return peak

    def held_slots(self, regs: list[Any]) -> list[int]:
        """The slots still holding a value that is neither an input, an accumulator, an
        output nor a constant (after a run: none, or a buffer leaked)."""
        keep = self.prog.keep()
        return [k for k, v in enumerate(regs) if v is not None and k not in keep]


def _issue(regs: list[Any], fn: Any, ins: Any, outs: Any, frees: Any) -> None:
    """One instruction: ``fn`` on the slots ``ins`` into ``outs``; then ``frees`` dropped."""
    if fn is not None:
        got = fn(*[regs[k] for k in ins])
        for k, v in zip(outs, got, strict=True):
            regs[k] = v
    for k in frees:
        regs[k] = None
