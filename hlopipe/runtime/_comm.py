"""Communication of a pipeline: running a step's transfers and moving values between ranks,
in one process or across the processes of a ``jax.distributed`` job.

In one process everything is a ``device_put``. Across processes a value moves by an XLA
collective both processes issue (see ``_multiprocess.py``), every process in the same order;
host values a step reports (the microbatch losses, the squared gradient norms) travel the same
way, as exact float64 bit patterns, never through the coordinator's key-value store.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hlopipe.errors import DistributedError
from hlopipe.runtime import distributed
from hlopipe.runtime._executor import ThreadedRun
from hlopipe.runtime._multiprocess import Links, MultiProcessRun, move_group
from hlopipe.runtime._placement import DATA_AXIS
from hlopipe.runtime._plan import PipelinePlan
from hlopipe.runtime._program import StepProgram

# Pipelines built in a multi-process job, numbered alike in every process (all of them build
# the same pipelines in the same order): the prefix of their coordinator barriers.
_PIPE_IDS = itertools.count()


class Comm:
    """Moves values between the ranks of one pipeline, whichever processes hold them."""

    def __init__(self, plan: PipelinePlan, timeout: float) -> None:
        self.plan = plan
        self.layout = plan.layout
        self.timeout = timeout
        self.uid = next(_PIPE_IDS) if self.layout.multi else -1
        # compiled collectives and receive buffers: live as long as this pipeline
        self.links = Links()
        self.last_transfer_seconds = 0.0
        self._syncs = 0

    @property
    def multi(self) -> bool:
        return self.layout.multi

    def next_sync_id(self) -> int:
        self._syncs += 1
        return self._syncs

    def threaded_run(
        self, prog: StepProgram, fns: list[Any], regs: list[Any], *, sync: bool
    ) -> ThreadedRun:
        """The threaded run of one step (or inference pass) of ``prog``: the profiling
        interpreter in one process, the multi-process one across processes."""
        if not self.multi:
            return ThreadedRun(prog, fns, regs, timeout=self.timeout, sync=sync)
        return MultiProcessRun(
            prog, fns, regs, timeout=self.timeout, sync=sync, layout=self.layout,
            links=self.links,
        )  # fmt: skip

    def move(
        self, value: Any, src_rank: int, dst_rank: int, aval: Any, sharding: Any = None
    ) -> Any:
        """``value`` from ``src_rank`` to ``dst_rank``, in ``sharding`` there (default
        replicated; resharded on the way when the layouts differ); ``None`` in a process
        holding neither. Every process calls it in the same order."""
        pl = self.plan.placement
        sh = pl.replicated(dst_rank) if sharding is None else sharding
        return self._move(value, src_rank, dst_rank, aval, sh)

    def _move(self, value: Any, src_rank: int, dst_rank: int, aval: Any, sharding: Any) -> Any:
        src_local = self.layout.local(src_rank)
        moved = move_group(
            self.links, [value] if src_local else None, self.plan.placement, self.layout,
            src_rank, dst_rank, [aval], [sharding],
        )  # fmt: skip
        return None if moved is None else moved[0]

    def on_every_process(self, value: Any, src_rank: int, aval: Any, split: bool) -> np.ndarray:
        """``value``, held by ``src_rank`` (``None`` in other processes), as a host array in
        every process: one transfer to each other process, every process in the same order.
        ``split``: whether ``value`` is split on its leading axis over the rank's devices."""
        if not self.multi:
            return np.asarray(value)
        rank_process = self.layout.rank_process
        owner = rank_process[src_rank]
        out = value
        pl = self.plan.placement
        for q in sorted(set(rank_process) - {owner}):
            dst = rank_process.index(q)  # q's first rank
            sharding = pl.data(dst, aval) if split else pl.replicated(dst)
            moved = self._move(value, src_rank, dst, aval, sharding)
            if q == self.layout.me:
                out = moved
        return np.asarray(out)

    def share_f64(self, values: np.ndarray | None, src_process: int, n: int) -> np.ndarray:
        """``n`` float64 values known to ``src_process`` (``values`` there, ``None``
        elsewhere), exactly, in every process of the job, whether it holds ranks or not (bit
        patterns as uint32 pairs, one collective from the first device of ``src_process`` to
        the first device of each other process, every process in the same order)."""
        if not self.multi:
            assert values is not None
            return np.asarray(values, np.float64)
        me = self.layout.me
        first: dict[int, Any] = {}
        for d in jax.devices():
            first.setdefault(int(d.process_index), d)
        aval = jax.ShapeDtypeStruct((2 * n,), np.uint32)
        src_mesh = Mesh(np.array([first[src_process]]), (DATA_AXIS,))
        bits = None
        dev = None
        if me == src_process:
            assert values is not None
            bits = np.ascontiguousarray(np.asarray(values, np.float64).reshape(n)).view(np.uint32)
            dev = jax.device_put(bits, NamedSharding(src_mesh, PartitionSpec()))
        out = bits
        for q in sorted(first):
            if q == src_process or me not in (q, src_process):
                continue
            dst_mesh = Mesh(np.array([first[q]]), (DATA_AXIS,))
            try:
                got = self.links.transfer(
                    None if dev is None else [dev], src_mesh, dst_mesh, [aval],
                    [NamedSharding(dst_mesh, PartitionSpec())],
                )  # fmt: skip
            except Exception as e:
                distributed.raise_lost_peer(e)
                raise DistributedError(
                    f"sending the step's results from process {src_process} to process {q} "
                    f"failed: {e}"
                ) from e
            if q == me:
                assert got is not None
                out = np.asarray(got[0])
        return np.ascontiguousarray(out, np.uint32).view(np.float64)

    def sum_over_processes(self, x: float) -> float:
        """``x`` summed over the processes holding ranks, in process order (every process
        gets the same float)."""
        if not self.multi:
            return x
        total = 0.0
        for q in sorted(set(self.layout.rank_process)):
            mine = np.array([x], np.float64) if q == self.layout.me else None
            total += float(self.share_f64(mine, q, 1)[0])
        return total
