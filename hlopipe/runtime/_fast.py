"""``FastStep``: an :class:`InstructionStream` fed with one step's parameters and batch.

Per step it does only what depends on the step's values: the parameters' arrays into their
slots, the batch sliced on the host and put on its ranks in one batched ``device_put``, fresh
zero gradient accumulators (one compiled dispatch per stage: they are donated to the
backward), then the stream. Nothing here waits for a device.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hlopipe.runtime._executor import StepResult
from hlopipe.runtime._plan import PipelinePlan, host_leaves
from hlopipe.runtime._stream import InstructionStream


def _zeros_fn(avals: list[Any], shardings: list[Any]) -> Any:
    def zeros() -> tuple[Any, ...]:
        return tuple(jnp.zeros(a.shape, a.dtype) for a in avals)

    return jax.jit(zeros, out_shardings=tuple(shardings)).lower().compile()


class FastStep:
    """A step of one process's ranks, all of its dispatches asynchronous."""

    def __init__(self, plan: PipelinePlan, stream: InstructionStream) -> None:
        self.plan = plan
        self.stream = stream
        stream.prepare()
        self.param_slots = [(k, r, p) for (r, p), k in stream.param_slots.items()]
        b = plan.microbatch_size
        self.batch_slots: list[tuple[int, int, int]] = []
        shardings = []
        for (leaf, r, i), k in sorted(stream.batch_slots.items()):
            a = plan.batch_avals[leaf]
            mb = jax.ShapeDtypeStruct((b, *a.shape[1:]), a.dtype)
            self.batch_slots.append((k, leaf, i))
            shardings.append(plan.placement.data(r, mb))
        self.batch_shardings = tuple(shardings)
        self.zeros = []
        for ex in plan.execs:
            slots = stream.acc_slots.get(ex.stage.index)
            if slots:
                self.zeros.append((slots, _zeros_fn(ex.acc_avals, ex.acc_shardings)))

    def run(self, state: Any, batch: Any) -> StepResult:
        regs = self.fill(state, batch)
        seconds = self.stream.run(regs)
        return self.stream.result(regs, seconds)

    def fill(self, state: Any, batch: Any) -> list[Any]:
        """A register file holding the step's inputs."""
        plan = self.plan
        leaves = plan.check_batch(batch)
        regs: list[Any] = [None] * self.stream.n
        values = state.values
        for k, r, p in self.param_slots:
            regs[k] = values[r][p]
        if self.batch_slots:
            b = plan.microbatch_size
            host = host_leaves(leaves)
            parts = [host[leaf][i * b : (i + 1) * b] for _, leaf, i in self.batch_slots]
            placed = jax.device_put(parts, list(self.batch_shardings))
            for (k, _, _), v in zip(self.batch_slots, placed, strict=True):
                regs[k] = v
        for slots, fn in self.zeros:
            for k, z in zip(slots, fn(), strict=True):
                regs[k] = z
        return regs
