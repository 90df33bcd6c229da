"""Multi-controller execution: every process builds the same plan and runs its own ranks.

Under ``jax.distributed`` every process sees every device; a rank (one stage mesh) lives on
the devices of one process. Each process runs the threads of the ranks it holds, exactly as
the single-process executor does; what changes is a transfer whose receiver lives in another
process. That becomes an XLA collective over a 2 x K mesh spanning the sender's and the
receiver's stage meshes (a ``ppermute`` along the ``"pp"`` axis inside ``shard_map``; gloo on
CPU, NCCL on GPU), which both processes must issue.

Order, so that no pair of processes deadlocks: a collective blocks until both sides issue it,
so sends cannot run on the rank threads (two ranks sending to each other at the same step of
1F1B would wait for each other forever). Each process instead has one *link* thread that issues
its cross-process transfers one at a time, in one global order every process computes alike:
the order in which a dry run of the lowered schedule (ranks advance as far as their data
allows, round-robin) delivers them. That order extends the data dependencies (a transfer never
waits for a value that needs a later transfer), so the earliest unfinished transfer can always
complete: both of its processes are at it and its value depends only on earlier ones.
A rank's SEND hands the value to the link and returns; a RECV waits on the mailbox as before.

(``jax.device_put`` onto a device of another process does not move data in jax 0.10.2 on CPU:
it returns an array with no addressable shard on the sender, and the receiver never sees it.)
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hlopipe.errors import DistributedError, RuntimeConfigError
from hlopipe.runtime import distributed
from hlopipe.runtime._executor import (
    PipelineExecutionError,
    StepPlan,
    StepResult,
    StepRun,
    _Aborted,
)
from hlopipe.runtime._placement import DATA_AXIS, Placement
from hlopipe.schedules import Kind

PP_AXIS = "pp"
# Set to print every cross-process transfer as it starts and ends, and all threads' stacks on a
# receive timeout (for diagnosing a stalled job).
ENV_TRACE = "HLOPIPE_TRACE_TRANSFERS"
# After a step fails, how long its threads get to stop before the step gives up on them.
_STUCK_GRACE = 10.0


@dataclass(frozen=True)
class ProcessLayout:
    """Which process holds each rank, and which ranks are this process's."""

    rank_process: tuple[int, ...]
    me: int

    @classmethod
    def of(cls, placement: Placement) -> ProcessLayout:
        procs = []
        for r, mesh in enumerate(placement.meshes):
            owners = sorted({int(d.process_index) for d in mesh.devices.flat})
            if len(owners) != 1:
                raise RuntimeConfigError(
                    f"rank {r}'s stage mesh spans processes {owners}; a stage mesh must lie "
                    "within one process (use a stage_mesh_shape dividing the devices per "
                    "process)"
                )
            procs.append(owners[0])
        return cls(tuple(procs), jax.process_index())

    @property
    def multi(self) -> bool:
        return len(set(self.rank_process)) > 1

    def local(self, rank: int) -> bool:
        return self.rank_process[rank] == self.me

    @property
    def local_ranks(self) -> list[int]:
        return [r for r, p in enumerate(self.rank_process) if p == self.me]


@dataclass(frozen=True)
class Transfer:
    """One cross-process delivery of a step: the mailbox key and who sends it where."""

    key: tuple[Any, ...]  # (kind, stage, index, microbatch) as the executor's mailbox uses
    src_stage: int
    src_rank: int
    dst_rank: int


def transfer_order(plan: StepPlan, layout: ProcessLayout) -> list[Transfer]:
    """The global order of the step's cross-process transfers (see the module docstring).

    Raises PipelineExecutionError when the schedule cannot finish (a deadlock in it).
    """
    sched = plan.schedule
    execs = plan.execs
    rank_of = plan.placement.rank_of
    have: Counter[tuple[Any, ...]] = Counter()
    pending: dict[tuple[str, int, int], list[tuple[tuple[Any, ...], int, int, int]]] = {}
    order: list[Transfer] = []
    fwd_taken: set[tuple[int, int]] = set()
    ct_taken: set[tuple[int, int]] = set()

    def deliver(items: list[tuple[tuple[Any, ...], int, int, int]]) -> None:
        for key, src_stage, src_rank, dst_rank in items:
            have[key] += 1
            if layout.rank_process[src_rank] != layout.rank_process[dst_rank]:
                order.append(Transfer(key, src_stage, src_rank, dst_rank))

    def inputs_ready(s: int, i: int) -> bool:
        if (s, i) in fwd_taken:
            return True
        n = len(execs[s].stage.receives)
        return all(have[("F", s, j, i)] >= 1 for j in range(n))

    def cts_ready(s: int, i: int) -> bool:
        if (s, i) in ct_taken:
            return True
        expected = plan.expected_cts[s]
        return all(
            have[("B", s, k, i)] >= expected.get(k, 0) for k in execs[s].autodiff.diff_outputs
        )

    def post(r: int, kind: str, s: int, i: int, items: list[Any]) -> None:
        if (kind, s, i) in plan.send_points[r]:
            pending[(kind, s, i)] = items
        else:
            deliver(items)

    def forward_items(s: int, i: int) -> list[Any]:
        return [
            (("F", snd.dst, snd.input, i), s, rank_of(s), rank_of(snd.dst))
            for snd in execs[s].stage.sends
        ]

    def backward_items(s: int, i: int) -> list[Any]:
        ex = execs[s]
        out = []
        for j in ex.autodiff.diff_inputs:
            rc = ex.stage.receives[j]
            out.append((("B", rc.src, rc.output, i), s, rank_of(s), rank_of(rc.src)))
        return out

    rows = {r: [a for a in row if a is not None] for r, row in sched.actions.items()}
    pos = dict.fromkeys(rows, 0)
    while True:
        progressed = False
        for r, row in rows.items():
            while pos[r] < len(row):
                s, k, i = row[pos[r]]
                if k is Kind.RECV_F or (k is Kind.F and (s, i) not in fwd_taken):
                    if not inputs_ready(s, i):
                        break
                    fwd_taken.add((s, i))
                if k is Kind.RECV_B or (k in (Kind.B, Kind.I) and (s, i) not in ct_taken):
                    if plan.train and not cts_ready(s, i):
                        break
                    ct_taken.add((s, i))
                if k is Kind.F:
                    post(r, "F", s, i, forward_items(s, i))
                elif k in (Kind.B, Kind.I):
                    post(r, "B", s, i, backward_items(s, i))
                elif k is Kind.SEND_F:
                    deliver(pending.pop(("F", s, i), []))
                elif k is Kind.SEND_B:
                    deliver(pending.pop(("B", s, i), []))
                pos[r] += 1
                progressed = True
        if all(pos[r] == len(row) for r, row in rows.items()):
            return order
        if not progressed:
            where = "; ".join(
                f"rank {r} at {row[pos[r]]}" for r, row in rows.items() if pos[r] < len(row)
            )
            raise PipelineExecutionError(f"schedule {sched.name!r} cannot finish: {where}")


# (src device ids, dst device ids, shape, dtype, split on data) -> (compiled, mesh, sharding)
_XFER_CACHE: dict[Any, Any] = {}
_XFER_LOCK = threading.Lock()
_ZEROS: dict[Any, Any] = {}


def split_on_data(sharding: Any) -> bool:
    spec = tuple(sharding.spec)
    return bool(spec) and spec[0] == DATA_AXIS


def _whole_mesh_split(sharding: Any) -> bool:
    """Whether ``sharding`` splits the leading axis over every device of its mesh (a 1-D
    data mesh) and nothing else, so each device holds a distinct block in mesh order."""
    spec = tuple(sharding.spec)
    mesh = sharding.mesh
    return (
        len(spec) == 1
        and spec[0] == DATA_AXIS
        and mesh.devices.ndim == 1
        and mesh.axis_names == (DATA_AXIS,)
    )


def _compiled(src_mesh: Mesh, dst_mesh: Mesh, shape: tuple[int, ...], dtype: Any, split: bool):
    key = (
        tuple(int(d.id) for d in src_mesh.devices.flat),
        tuple(int(d.id) for d in dst_mesh.devices.flat),
        shape,
        np.dtype(dtype).str,
        split,
    )
    with _XFER_LOCK:
        hit = _XFER_CACHE.get(key)
        if hit is not None:
            return hit
        devs = np.array([list(src_mesh.devices.flat), list(dst_mesh.devices.flat)])
        mesh = Mesh(devs, (PP_AXIS, DATA_AXIS))
        spec = PartitionSpec((PP_AXIS, DATA_AXIS)) if split else PartitionSpec(PP_AXIS)
        sharding = NamedSharding(mesh, spec)

        def body(x: Any) -> Any:
            return jax.lax.ppermute(x, PP_AXIS, [(0, 1)])

        fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))
        gshape = (2 * shape[0], *shape[1:])
        compiled = fn.lower(jax.ShapeDtypeStruct(gshape, dtype, sharding=sharding)).compile()
        hit = _XFER_CACHE[key] = (compiled, sharding, gshape)
        return hit


def cross_process_transfer(
    value: Any, placement: Placement, src_rank: int, dst_rank: int, aval: Any, dst_sharding: Any
) -> Any:
    """Move ``value`` (on ``src_rank``, this process's, or ``None`` when this process
    receives) to ``dst_sharding`` on ``dst_rank``. Both processes call it; blocks until done.
    Returns the array on the receiver, ``None`` on the sender.

    Two ways, decided alike in both processes from the meshes and ``dst_sharding`` alone: a
    value split on the microbatch over two 1-D data meshes of one size goes block by block,
    device i to device i; anything else (N-D meshes, meshes of different sizes, parameters
    split on a model axis) goes whole from the sender's first device to the receiver's first
    device, and is laid out there to ``dst_sharding`` (a local reshard)."""
    src_full, dst_full = placement.meshes[src_rank], placement.meshes[dst_rank]
    same = src_full.devices.shape == dst_full.devices.shape and src_full.devices.ndim == 1
    split = same and _whole_mesh_split(dst_sharding)
    direct = same and (split or tuple(dst_sharding.spec) == ())
    if direct:
        src_mesh, dst_mesh = src_full, dst_full
    else:
        # whole arrays between the first devices of the two meshes
        src_mesh = Mesh(np.array([src_full.devices.flat[0]]), (DATA_AXIS,))
        dst_mesh = Mesh(np.array([dst_full.devices.flat[0]]), (DATA_AXIS,))
    return _transfer(value, src_full, src_mesh, dst_mesh, aval, dst_sharding, split, direct)


def transfer_between_meshes(
    value: Any, src_mesh: Mesh, dst_mesh: Mesh, aval: Any, dst_sharding: Any
) -> Any:
    """:func:`cross_process_transfer` between two 1-D meshes of as many devices, each within
    one process, block by block (or whole, when ``dst_sharding`` is replicated)."""
    split = _whole_mesh_split(dst_sharding)
    return _transfer(value, src_mesh, src_mesh, dst_mesh, aval, dst_sharding, split, True)


def _transfer(
    value: Any,
    src_full: Mesh,
    src_mesh: Mesh,
    dst_mesh: Mesh,
    aval: Any,
    dst_sharding: Any,
    split: bool,
    direct: bool,
) -> Any:
    shape = tuple(aval.shape)
    dtype = aval.dtype
    scalar = len(shape) == 0
    shape1 = (1,) if scalar else shape
    compiled, sharding, gshape = _compiled(src_mesh, dst_mesh, shape1, dtype, split)
    k = src_mesh.devices.size
    block = (shape1[0] // k, *shape1[1:]) if split else shape1
    if value is not None:
        if scalar:
            host = np.asarray(value).reshape(1)
            arrays = [jax.device_put(host, d) for d in src_mesh.devices.flat]
        else:
            if not direct:
                first = src_mesh.devices.flat[0]
                value = jax.device_put(value, jax.sharding.SingleDeviceSharding(first))
            else:  # the sender's blocks laid out as the receiver's will be
                value = jax.device_put(value, NamedSharding(src_full, dst_sharding.spec))
            by_dev = {s.device: s.data for s in value.addressable_shards}
            arrays = [by_dev[d] for d in src_mesh.devices.flat]
    else:
        arrays = []
        for d in dst_mesh.devices.flat:
            zk = (d.id, block, np.dtype(dtype).str)
            if zk not in _ZEROS:
                _ZEROS[zk] = jax.device_put(np.zeros(block, dtype), d)
            arrays.append(_ZEROS[zk])
    g = jax.make_array_from_single_device_arrays(gshape, sharding, arrays)
    out = compiled(g)
    jax.block_until_ready(out)
    if value is not None:
        return None
    dst_devs = set(dst_mesh.devices.flat)
    shards = [s.data for s in out.addressable_shards if s.device in dst_devs]
    if scalar:
        return jax.device_put(np.asarray(shards[0]).reshape(()), dst_sharding)
    if not direct:
        return jax.device_put(shards[0], dst_sharding)
    return jax.make_array_from_single_device_arrays(shape, dst_sharding, shards)


def move(
    value: Any,
    placement: Placement,
    layout: ProcessLayout,
    src_rank: int,
    dst_rank: int,
    aval: Any,
    dst_sharding: Any,
) -> Any:
    """``value`` from ``src_rank`` to ``dst_rank``, whichever processes hold them: a
    ``device_put`` inside a process, a collective between two, nothing for a bystander
    (returns ``None``). Every process must call it in the same order."""
    src_local, dst_local = layout.local(src_rank), layout.local(dst_rank)
    if src_local and dst_local:
        return value if src_rank == dst_rank else jax.device_put(value, dst_sharding)
    if not src_local and not dst_local:
        return None
    try:
        return cross_process_transfer(
            value if src_local else None, placement, src_rank, dst_rank, aval, dst_sharding
        )
    except Exception as e:
        distributed.raise_lost_peer(e)
        raise DistributedError(
            f"transfer between rank {src_rank} (process {layout.rank_process[src_rank]}) and "
            f"rank {dst_rank} (process {layout.rank_process[dst_rank]}) failed: {e}"
        ) from e


class _Outbox:
    """Values a rank thread hands to the link thread, by mailbox key."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._box: dict[Any, list[Any]] = defaultdict(list)

    def put(self, key: Any, value: Any) -> None:
        with self._cv:
            self._box[key].append(value)
            self._cv.notify_all()

    def take(self, key: Any, run: StepRun, timeout: float) -> Any:
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


class MultiProcessStepRun(StepRun):
    """A :class:`StepRun` that runs only this process's ranks; transfers to ranks of other
    processes go through the link thread (see the module docstring)."""

    def __init__(
        self,
        plan: StepPlan,
        stage_args: dict[tuple[int, int], list[Any]],
        acc: list[list[Any]],
        loss_ct: Any,
        *,
        timeout: float,
        sync: bool,
        layout: ProcessLayout,
        order: list[Transfer],
    ) -> None:
        super().__init__(plan, stage_args, acc, loss_ct, timeout=timeout, sync=sync)
        self.layout = layout
        self.order = [t for t in order if layout.local(t.src_rank) or layout.local(t.dst_rank)]
        self._outbox = _Outbox()
        self.transfer_seconds = 0.0
        self.transfers = 0
        self._trace = bool(os.environ.get(ENV_TRACE))

    def run(self) -> StepResult:
        ranks = [r for r in self.layout.local_ranks if self.plan.schedule.actions.get(r)]
        self._t0 = time.perf_counter()
        # Daemon threads: after a failure, a thread stuck inside a native transfer (gloo waits
        # up to 30 min) must not keep the process alive; the step gives up on it instead.
        threads = [
            threading.Thread(target=self._guarded, args=(r,), name=f"hlopipe-rank-{r}", daemon=True)
            for r in ranks
        ]
        threads.append(
            threading.Thread(target=self._guarded_link, name="hlopipe-link", daemon=True)
        )
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

    def _deliver(self, r: int, items: list[Any]) -> None:
        local = []
        for item in items:
            key, src, value, dst_rank, _sharding = item
            if self.layout.local(dst_rank):
                local.append(item)
            else:
                self._outbox.put((key, src), value)
        if local:
            super()._deliver(r, local)

    # -- the link thread -----------------------------------------------------------------------

    def _guarded_link(self) -> None:
        try:
            self._link()
        except _Aborted:
            pass
        except BaseException as e:
            self.mailbox.fail(e)

    def _link(self) -> None:
        pl = self.plan.placement
        for n, tr in enumerate(self.order):
            if self.mailbox.failed:
                raise _Aborted
            sending = self.layout.local(tr.src_rank)
            kind, stage, index, _mb = tr.key
            if kind == "F":
                ex = self.plan.execs[stage]
                sharding = ex.input_shardings[index]
                aval = ex.stage.receives[index].aval
            else:
                ex = self.plan.execs[stage]
                sharding = ex.output_shardings[index]
                aval = ex.stage.outputs[index]
            value = None
            if sending:
                try:
                    value = self._outbox.take((tr.key, tr.src_stage), self, self.timeout)
                except TimeoutError:
                    raise PipelineExecutionError(
                        f"process {self.layout.me}: transfer {n} ({tr.key}) from rank "
                        f"{tr.src_rank} waited {self.timeout:g} s for its value"
                    ) from None
            start = time.perf_counter()
            if self._trace:
                print(f"hlopipe-trace: p{self.layout.me} xfer {n} {tr} start", file=sys.stderr)
            out = move(value, pl, self.layout, tr.src_rank, tr.dst_rank, aval, sharding)
            self.transfer_seconds += time.perf_counter() - start
            if self._trace:
                print(f"hlopipe-trace: p{self.layout.me} xfer {n} done", file=sys.stderr)
            self.transfers += 1
            if not sending:
                self.mailbox.put(tr.key, (tr.src_stage, out))
