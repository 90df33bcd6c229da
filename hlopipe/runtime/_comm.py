"""Communication of a pipeline: running a step's transfers and moving values between ranks,
in one process or across the processes of a ``jax.distributed`` job.

In one process everything is a ``device_put``. Across processes a value moves by an XLA
collective both processes issue (see ``_multiprocess.py``), every process in the same order;
host values a step reports (the microbatch losses, the squared gradient norms) travel the same
way, as exact float64 bit patterns, never through the coordinator's key-value store.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hlopipe.errors import DistributedError
from hlopipe.runtime import distributed
from hlopipe.runtime._executor import ThreadedRun
from hlopipe.runtime._multiprocess import Links, MultiProcessRun, ProcessLayout, move_group
from hlopipe.runtime._placement import DATA_AXIS, Placement
from hlopipe.runtime._plan import PipelinePlan
from hlopipe.runtime._program import StepProgram


class Comm:
    """Moves values between the ranks of one pipeline, whichever processes hold them."""

    def __init__(self, plan: PipelinePlan, timeout: float) -> None:
        self.plan = plan
        self.layout = plan.layout
        self.timeout = timeout
        # compiled collectives and receive buffers: live as long as this pipeline
        self.links = Links.for_layout(self.layout)
        # the prefix of its coordinator barriers: its links' number, alike in every process
        self.uid = self.links.uid
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
        every process (see :func:`on_every_process`). ``split``: whether ``value`` is split
        on its leading axis over the rank's devices (kept for callers; the result is whole
        either way)."""
        if not self.multi:
            return np.asarray(value)
        got = on_every_process(self.links, self.plan.placement, self.layout, value, src_rank, aval)
        return np.asarray(got)

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
        got = _from_device(self.links, self.layout.me, dev, first[src_process], targets, aval,
                           what)  # fmt: skip
        out = bits if got is None else got
        return np.ascontiguousarray(out, np.uint32).view(np.float64)

    def sum_over_processes(self, x: float) -> float:
        """``x`` summed over the lead processes of the ranks, in process order (every process
        gets the same float). A process holding only a share of a rank spanning processes
        adds nothing: that rank's lead gives its value."""
        if not self.multi:
            return x
        return float(self.sum_f64_over_processes(np.array([x], np.float64))[0])

    def sum_f64_over_processes(self, xs: np.ndarray) -> np.ndarray:
        """The float64 vector ``xs`` (one length in every process) summed over the lead
        processes of the ranks, in process order: the same values in every process of the
        job (a NaN or inf anywhere stays one)."""
        n = len(xs)
        total = np.zeros(n, np.float64)
        if not self.multi:
            return total + xs
        for q in sorted(set(self.layout.rank_process)):  # each rank's lead process
            total += self.share_f64(xs if q == self.layout.me else None, q, n)
        return total


def on_every_process(
    links: Links,
    placement: Placement,
    layout: ProcessLayout,
    value: Any,
    src_rank: int,
    aval: Any,
) -> np.ndarray:
    """``value``, held by ``src_rank`` (a ``jax.Array`` on its mesh, or a host array every
    process of the rank knows; ``None`` in other processes), as a host array in every process
    of the job. The rank's processes read their own copy (gathered on the rank's mesh first
    when it spans processes and is split: a collective among them); its lead process sends it
    from the mesh's first device to the first device of each other process, one after the
    other. Every process of the job calls it, in the same order."""
    out = x0 = None
    d0 = placement.meshes[src_rank].devices.flat[0]
    if layout.local(src_rank):
        out = value if isinstance(value, np.ndarray) else host_copy(value, placement, src_rank)
        if layout.lead(src_rank) and layout.multi:
            x0 = jax.device_put(out, d0)
    if not layout.multi:
        assert out is not None
        return np.asarray(out)
    targets = [q for q in sorted(_first_devices()) if q not in layout.rank_procs[src_rank]]
    got = _from_device(links, layout.me, x0, d0, targets, aval,
                       f"sending a value of rank {src_rank}")  # fmt: skip
    return np.asarray(out if got is None else got)


def host_copy(value: Any, placement: Placement, rank: int) -> np.ndarray:
    """``value`` (an array on ``rank``'s mesh) whole on the host of a process holding the rank:
    gathered on the mesh first when it spans processes and is split (a collective among the
    rank's processes, which all call it in the same order)."""
    if not (value.is_fully_addressable or value.sharding.is_fully_replicated):
        value = jax.device_put(value, placement.replicated(rank))
    return host_value(value)


def _from_device(
    links: Links, me: int, value: Any, src_dev: Any, targets: list[int], aval: Any, what: str
) -> np.ndarray | None:
    """``value`` (on ``src_dev``; ``None`` in other processes) whole to the first device of
    each process of ``targets``, one after the other (every process calls it alike); what this
    process received, as a host array (``None`` where it received nothing)."""
    first = _first_devices()
    src = int(src_dev.process_index)
    src_mesh = Mesh(np.array([src_dev]), (DATA_AXIS,))
    here = None
    for q in targets:
        if me not in (q, src):
            continue
        dst_mesh = Mesh(np.array([first[q]]), (DATA_AXIS,))
        try:
            got = links.transfer(None if value is None else [value], src_mesh, dst_mesh, [aval],
                                 [NamedSharding(dst_mesh, PartitionSpec())])  # fmt: skip
        except Exception as e:  # another process's boundary: a peer's failure arrives as
            # whatever the transfer raised; re-raised as a lost peer or with the target, chained
            distributed.raise_lost_peer(e)
            raise DistributedError(f"{what} to process {q} failed: {e}") from e
        if q == me:
            assert got is not None
            here = np.asarray(got[0])
    return here


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
