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
        self.last_transfer_bytes = 0
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
        every process holding a rank: the rank's processes read their own copy (gathered on
        the rank's mesh first when it spans processes and is split), and its lead process
        sends it from the mesh's first device to the first device of each other process,
        every process in the same order. ``split``: whether ``value`` is split on its leading
        axis over the rank's devices (kept for callers; the result is whole either way)."""
        if not self.multi:
            return np.asarray(value)
        layout = self.layout
        out = None
        mesh = self.plan.placement.meshes[src_rank]
        d0 = mesh.devices.flat[0]
        x0 = None
        if layout.local(src_rank):
            value = self._replicated(value, src_rank)
            out = host_value(value)
            if layout.lead(src_rank):
                x0 = jax.device_put(out, d0)
        targets = [q for q in layout.holders if q not in layout.rank_procs[src_rank]]
        got = self._from_device(x0, d0, targets, aval, f"sending a value of rank {src_rank}")
        return np.asarray(out if got is None else got)

    def _from_device(
        self, value: Any, src_dev: Any, targets: list[int], aval: Any, what: str
    ) -> np.ndarray | None:
        """``value`` (on ``src_dev``; ``None`` in other processes) whole to the first device
        of each process of ``targets``, one after the other (every process calls it alike);
        what this process received, as a host array (``None`` where it received nothing)."""
        first = _first_devices()
        me, src = self.layout.me, int(src_dev.process_index)
        src_mesh = Mesh(np.array([src_dev]), (DATA_AXIS,))
        here = None
        for q in targets:
            if me not in (q, src):
                continue
            dst_mesh = Mesh(np.array([first[q]]), (DATA_AXIS,))
            got = self._links_transfer(
                None if value is None else [value], src_mesh, dst_mesh, aval,
                f"{what} to process {q}",
            )  # fmt: skip
            if q == me:
                assert got is not None
                here = np.asarray(got[0])
        return here

    def _replicated(self, value: Any, rank: int) -> Any:
        """``value`` with the whole of it on each of this process's devices of ``rank``
        (a collective among the rank's processes when it is split across them)."""
        if value.is_fully_addressable or value.sharding.is_fully_replicated:
            return value
        return jax.device_put(value, self.plan.placement.replicated(rank))

    def _links_transfer(
        self, values: list[Any] | None, src_mesh: Mesh, dst_mesh: Mesh, aval: Any, what: str
    ) -> list[Any] | None:
        """One value whole between two one-device meshes (see ``Links.transfer``)."""
        try:
            return self.links.transfer(
                values, src_mesh, dst_mesh, [aval], [NamedSharding(dst_mesh, PartitionSpec())]
            )
        except Exception as e:
            distributed.raise_lost_peer(e)
            raise DistributedError(f"{what} failed: {e}") from e

    def share_f64(self, values: np.ndarray | None, src_process: int, n: int) -> np.ndarray:
        """``n`` float64 values known to ``src_process`` (``values`` there, ``None``
        elsewhere), exactly, in every process of the job, whether it holds ranks or not (bit
        patterns as uint32 pairs, one collective from the first device of ``src_process`` to
        the first device of each other process, every process in the same order)."""
        if not self.multi:
            assert values is not None
            return np.asarray(values, np.float64)
        first = _first_devices()
        aval = jax.ShapeDtypeStruct((2 * n,), np.uint32)
        bits = dev = None
        if self.layout.me == src_process:
            assert values is not None
            bits = np.ascontiguousarray(np.asarray(values, np.float64).reshape(n)).view(np.uint32)
            dev = jax.device_put(bits, first[src_process])
        targets = [q for q in sorted(first) if q != src_process]
        what = f"sending the step's results from process {src_process}"
        got = self._from_device(dev, first[src_process], targets, aval, what)
        out = bits if got is None else got
        return np.ascontiguousarray(out, np.uint32).view(np.float64)

    def sum_over_processes(self, x: float) -> float:
        """``x`` summed over the lead processes of the ranks, in process order (every process
        gets the same float). A process holding only a share of a rank spanning processes
        adds nothing: that rank's lead gives its value."""
        if not self.multi:
            return x
        total = 0.0
        for q in sorted(set(self.layout.rank_process)):  # each rank's lead process
            mine = np.array([x], np.float64) if q == self.layout.me else None
            total += float(self.share_f64(mine, q, 1)[0])
        return total


def _first_devices() -> dict[int, Any]:
    """Each process's first device."""
    first: dict[int, Any] = {}
    for d in jax.devices():
        first.setdefault(int(d.process_index), d)
    return first


def host_value(x: Any) -> np.ndarray:
    """``x`` on the host from this process's own shards: the whole array when this process
    holds all of it (every array in one process; a replicated one across processes)."""
    if x.is_fully_addressable:
        return np.asarray(x)
    if not x.sharding.is_fully_replicated:
        raise DistributedError(
            f"an array of shape {x.shape} split across processes has no whole copy here"
        )
    return np.asarray(x.addressable_data(0))
