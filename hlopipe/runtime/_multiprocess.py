"""Multi-controller execution: every process builds the same plan and runs its own ranks.

Under ``jax.distributed`` every process sees every device; a rank (one stage mesh) lives on
one process's devices or spans whole processes (``ProcessLayout``). Each process runs the
threads of the ranks it holds as the single-process executor does (a spanning rank: see
``MultiProcessRun``); what changes is a transfer whose receiver lives in another process. That
becomes an XLA collective over a 2 x K mesh spanning the sender's and the receiver's stage
meshes (a ``ppermute`` along the ``"pp"`` axis inside ``shard_map``; gloo on CPU, NCCL on
GPU), which both processes must issue.

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

(``jax.device_put`` onto a device of another process does not move data in jax 0.10.2 on CPU:
it returns an array with no addressable shard on the sender, and the receiver never sees it.)
"""

from __future__ import annotations

import faulthandler
import hashlib
import itertools
import math
import os
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from hlopipe.errors import DistributedError, RuntimeConfigError
from hlopipe.runtime import distributed
from hlopipe.runtime._executor import StepResult, ThreadedRun, _Aborted
from hlopipe.runtime._placement import DATA_AXIS, Placement
from hlopipe.runtime._program import Instr, PipelineExecutionError, StepProgram
from hlopipe.runtime._threads import carrying_context

PP_AXIS = "pp"
_LINKS_IDS = itertools.count()
# Set to print every cross-process transfer as it starts and ends, and all threads' stacks on a
# receive timeout (for diagnosing a stalled job).
ENV_TRACE = "HLOPIPE_TRACE_TRANSFERS"
# After a step fails, how long its threads get to stop before the step gives up on them.
_STUCK_GRACE = 10.0
# Sender layouts kept per (sender mesh, receiver sharding): a pipeline has a few of each.
_MAX_LAYOUTS = 256


@dataclass(frozen=True)
class ProcessLayout:
    """Which processes hold each rank, and which ranks are this process's.

    A rank's mesh lies within one process, or spans whole processes (each holding the same
    box of the mesh); every process holding a device of a rank runs that rank's
    instructions, on global arrays over its whole mesh.
    """

    rank_procs: tuple[tuple[int, ...], ...]
    me: int

    @classmethod
    def of(cls, placement: Placement, what: str = "pipeline") -> ProcessLayout:
        """The layout of ``placement`` seen from this process. A ``what`` (pipeline,
        generator) whose devices all lie in one other process is refused here: it runs in
        that process alone, with no collectives, so this process could take no part in it."""
        procs = tuple(check_spanning(placement, r) for r in range(placement.num_ranks))
        if any(len(p) > 1 for p in procs) and not placement.uniform:
            shapes = [tuple(m.devices.shape) for m in placement.meshes]
            raise RuntimeConfigError(
                f"stage meshes of different shapes {shapes} with a mesh spanning processes: "
                "give every stage one stage_mesh_shape (a spanning rank moves values shard "
                "by shard to a mesh of its own shape)"
            )
        layout, held = cls(procs, jax.process_index()), sorted({q for p in procs for q in p})
        if len(held) == 1 and held[0] != layout.me:
            ids = sorted({int(d.id) for m in placement.meshes for d in m.devices.flat})
            raise RuntimeConfigError(
                f"process {layout.me} builds a {what} whose devices {ids} are all process "
                f"{held[0]}'s: a {what} inside one process runs there alone, with no "
                f"collectives, so process {layout.me} can take no part in it. Build it only "
                f"in process {held[0]} (if jax.process_index() == {held[0]}), give each "
                "process its own on its own devices (devices=jax.local_devices()), or give it "
                "devices of several processes (devices=jax.devices()) to run one across them"
            )
        return layout

    @property
    def rank_process(self) -> tuple[int, ...]:
        """Each rank's lead process (its first): the one that reads its host values."""
        return tuple(p[0] for p in self.rank_procs)

    @property
    def multi(self) -> bool:
        return len({q for p in self.rank_procs for q in p}) > 1

    def local(self, rank: int) -> bool:
        return self.me in self.rank_procs[rank]

    def lead(self, rank: int) -> bool:
        """Whether this process is ``rank``'s lead process."""
        return self.rank_procs[rank][0] == self.me

    def spans(self, rank: int) -> bool:
        return len(self.rank_procs[rank]) > 1

    @property
    def holders(self) -> list[int]:
        """The processes holding a rank, in order."""
        return sorted({q for p in self.rank_procs for q in p})

    @property
    def local_ranks(self) -> list[int]:
        return [r for r in range(len(self.rank_procs)) if self.local(r)]


def check_spanning(placement: Placement, rank: int) -> tuple[int, ...]:
    """The processes holding ``rank``'s mesh, in order. Refused (naming the rank and what to
    change) unless the mesh lies in one process, or is cut by the processes into equal boxes
    (each process a block of whole positions of every axis) and holds all their devices."""
    mesh = placement.meshes[rank]
    owner = np.vectorize(lambda d: int(d.process_index), otypes=[int])(mesh.devices)
    procs = tuple(sorted({int(q) for q in owner.flat}))
    if len(procs) == 1:
        return procs
    shape = tuple(mesh.devices.shape)
    counts = {q: int((owner == q).sum()) for q in procs}
    per = {q: sum(1 for d in jax.devices() if d.process_index == q) for q in procs}
    boxes: set[tuple[int, ...]] = set()
    for q in procs:
        where = np.argwhere(owner == q)
        lo, hi = where.min(axis=0), where.max(axis=0) + 1
        box = tuple(int(h - lo_) for h, lo_ in zip(hi, lo, strict=True))
        # a process's devices that do not fill their bounding box: not a block of the mesh
        boxes.add(box if math.prod(box) == counts[q] else (-1,))
    if len(boxes) != 1 or (-1,) in boxes or any(counts[q] != per[q] for q in procs):
        held = ", ".join(f"process {q}: {counts[q]} of its {per[q]}" for q in procs)
        raise RuntimeConfigError(
            f"rank {rank}'s stage mesh {shape} ({', '.join(mesh.axis_names)}) crosses "
            f"processes unevenly ({held} devices); a stage mesh must lie within one process "
            "or span whole processes, each holding an equal block of the mesh: use a "
            "stage_mesh_shape whose size divides, or is a multiple of, the devices per "
            f"process ({max(per.values())})"
        )
    return procs


def split_on_data(sharding: Any) -> bool:
    spec = tuple(sharding.spec)
    return bool(spec) and spec[0] == DATA_AXIS


class Links:
    """The cross-process transfers of one pipeline: their compiled collectives and the
    receivers' placeholder buffers, cached for as long as the pipeline (its ``Comm``) lives.

    One call moves several values between the same two device lists in one executable: one
    dispatch and one synchronisation of the two processes per (microbatch, stage pair), each
    device pair carrying its block of every value (a ``ppermute`` per value inside it).
    """

    def __init__(self, uid: int = -1) -> None:
        # names its meetings: alike in every process of the job (see for_layout)
        self.uid = uid
        self._met: set[str] = set()
        self._programs: dict[Any, Any] = {}
        self._zeros: dict[Any, Any] = {}
        self._layouts: dict[Any, Any] = {}
        self._lock = threading.Lock()
        # bytes the exchanges carried between devices, all device pairs together
        self.moved_bytes = 0

    @classmethod
    def for_layout(cls, layout: ProcessLayout) -> Links:
        """The links of a pipeline (or generator) of ``layout``. One across processes is
        numbered in the order built, alike in every process (each builds the same ones in one
        order); one inside a process (a process's own pipeline) takes no number, so that
        processes building different local ones still number their shared ones alike."""
        return cls(next(_LINKS_IDS) if layout.multi else -1)

    def __len__(self) -> int:
        return len(self._programs)

    def _program(self, src_devs: list[Any], dst_devs: list[Any], blocks: list[Any]) -> Any:
        """The compiled exchange of blocks ``(shape, dtype)`` from ``src_devs[j]`` to
        ``dst_devs[j]``, and the global shape and sharding of each operand."""
        key = (
            tuple(int(d.id) for d in src_devs),
            tuple(int(d.id) for d in dst_devs),
            tuple((b, np.dtype(t).str) for b, t in blocks),
        )
        with self._lock:
            hit = self._programs.get(key)
            if hit is not None:
                return hit
            k = len(src_devs)
            mesh = Mesh(np.array([*src_devs, *dst_devs]), (PP_AXIS,))
            sharding = NamedSharding(mesh, PartitionSpec(PP_AXIS))
            perm = [(j, k + j) for j in range(k)]
            local = [(b or (1,), t) for b, t in blocks]

            def body(*xs: Any) -> tuple[Any, ...]:
                # One ppermute per value, in one executable. Not packed into one buffer:
                # XLA:CPU runs a concatenate of the blocks ~100x slower than the collective
                # itself (336 ms vs 3 ms for 2 x 16 MiB), while values side by side in one
                # program cost one dispatch and one synchronisation of the two processes.
                return tuple(jax.lax.ppermute(x, PP_AXIS, perm) for x in xs)

            specs = tuple(PartitionSpec(PP_AXIS) for _ in local)
            fn = jax.jit(
                jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=specs, check_vma=False)
            )
            gshapes = [(2 * k * b[0], *b[1:]) for b, _ in local]
            args = [
                jax.ShapeDtypeStruct(g, t, sharding=sharding)
                for g, (_, t) in zip(gshapes, local, strict=True)
            ]
            hit = self._programs[key] = (fn.lower(*args).compile(), sharding, gshapes)
        # its first run forms a gloo context: all its processes there first
        procs = sorted({int(d.process_index) for d in [*src_devs, *dst_devs]})
        self.meet_once(hashlib.sha1(repr(key).encode()).hexdigest()[:16], procs)
        return hit

    def meet_once(self, tag: str, processes: list[int]) -> None:
        """:func:`distributed.meet` of ``processes`` under ``tag``, the first time only."""
        if tag in self._met or len(processes) < 2:
            return
        distributed.meet(f"links{self.uid}/{tag}", processes)
        self._met.add(tag)

    def exchange(
        self,
        per_dev: list[list[Any]] | None,
        src_devs: list[Any],
        dst_devs: list[Any],
        blocks: list[tuple[tuple[int, ...], Any]],
    ) -> list[list[Any]] | None:
        """Value ``v``'s block on ``src_devs[j]`` to ``dst_devs[j]``, every value in one
        executable. A sending process passes ``per_dev[v]``: the blocks of its own devices of
        ``src_devs``, in order; a receiving one ``None`` (one process may be both). A
        receiver gets the blocks on its own devices of ``dst_devs``, in order; a process
        that only sends, ``None``. Every process of either list calls it; blocks until done."""
        compiled, sharding, gshapes = self._program(src_devs, dst_devs, blocks)
        self.moved_bytes += len(src_devs) * sum(
            math.prod(b) * np.dtype(t).itemsize for b, t in blocks
        )
        me = jax.process_index()
        my_dst = [d for d in dst_devs if d.process_index == me]
        receiving = bool(my_dst)
        if per_dev is None:  # a receiver's operands are placeholders: made once
            key = (id(compiled), "recv")
            operands = self._zeros.get(key)
            if operands is None:
                operands = self._zeros[key] = self._operands(
                    None, my_dst, blocks, gshapes, sharding
                )
        else:
            operands = self._operands(per_dev, my_dst, blocks, gshapes, sharding)
        outs = compiled(*operands)
        jax.block_until_ready(outs)
        if not receiving:
            return None
        where = {d: j for j, d in enumerate(dst_devs)}
        got = []
        for (b, _), out in zip(blocks, outs, strict=True):
            mine = sorted(
                ((where[s.device], s.data) for s in out.addressable_shards if s.device in where),
                key=lambda js: js[0],
            )
            got.append([x.reshape(()) if not b else x for _, x in mine])
        return got

    def _operands(
        self,
        per_dev: list[list[Any]] | None,
        dst_devs: list[Any],
        blocks: list[tuple[tuple[int, ...], Any]],
        gshapes: list[Any],
        sharding: Any,
    ) -> list[Any]:
        """The exchange's global operands: the sender's blocks, placeholders on ``dst_devs``."""
        operands = []
        for v, (b, t) in enumerate(blocks):
            arrays = []
            if per_dev is not None:
                arrays += [x.reshape(1) if not b else x for x in per_dev[v]]
            arrays += [self._zero(d, b or (1,), t) for d in dst_devs]
            operands.append(jax.make_array_from_single_device_arrays(gshapes[v], sharding, arrays))
        return operands

    def _laid_out(self, value: Any, src_mesh: Mesh, dst_sharding: Any) -> Any:
        """``value`` laid out on ``src_mesh`` as the receiver holds it on its own mesh (its
        spec over the sender's devices). A value already laid out so is used as it is: a
        ``device_put`` that moves nothing still costs ~25 µs of host time per value."""
        key = (src_mesh, dst_sharding)
        target = self._layouts.get(key)
        if target is None:
            names = dst_sharding.mesh.axis_names
            target = NamedSharding(Mesh(src_mesh.devices, names), dst_sharding.spec)
            with self._lock:
                if len(self._layouts) >= _MAX_LAYOUTS:
                    self._layouts.clear()
                self._layouts[key] = target
        if value.sharding.is_equivalent_to(target, value.ndim):
            return value
        return jax.device_put(value, target)

    def _zero(self, device: Any, block: tuple[int, ...], dtype: Any) -> Any:
        key = (device.id, block, np.dtype(dtype).str)
        z = self._zeros.get(key)
        if z is None:
            z = self._zeros[key] = jax.device_put(np.zeros(block, dtype), device)
        return z

    def transfer(
        self,
        values: list[Any] | None,
        src_mesh: Mesh,
        dst_mesh: Mesh,
        avals: list[Any],
        dst_shardings: list[Any],
    ) -> list[Any] | None:
        """``values`` (on ``src_mesh``; ``None`` in a receiving process) to
        ``dst_shardings`` on ``dst_mesh``, in at most two executables. Every process holding a
        device of either mesh calls it alike; returns the arrays (global ones when
        ``dst_mesh`` spans processes) where ``dst_mesh`` has devices, ``None`` elsewhere.

        A value goes block by block when the two meshes have one shape and its receiver's
        sharding divides it evenly: the sender lays it out as the receiver will hold it, each
        device pair carries its block, and the receiver reassembles its sharding from its
        blocks (any N-D mesh and spec; each process passes and takes only the blocks of its
        own devices). An uneven value between meshes spanning processes goes replicated, each
        device pair carrying the whole value, and is laid out on the receiver. Otherwise it
        goes whole, first device to first device, and is laid out to its sharding there."""
        me = jax.process_index()
        receiving = any(d.process_index == me for d in dst_mesh.devices.flat)
        routes = self.routes(src_mesh, dst_mesh, avals, dst_shardings)
        blocked = [(n, via) for n, via in enumerate(routes) if via is not None]
        whole = [n for n, via in enumerate(routes) if via is None]
        out: list[Any] = [None] * len(avals)
        if blocked:
            self._blocks(values, src_mesh, dst_mesh, avals, blocked, dst_shardings, out)
        if whole:
            self._whole(values, src_mesh, dst_mesh, avals, whole, dst_shardings, out)
        return out if receiving else None

    @staticmethod
    def routes(
        src_mesh: Mesh, dst_mesh: Mesh, avals: list[Any], dst_shardings: list[Any]
    ) -> list[Any]:
        """Per value, the sharding (on the receiver's mesh) it crosses in block by block,
        or ``None``: whole, first device to first device (see :meth:`transfer`)."""
        same = src_mesh.devices.shape == dst_mesh.devices.shape
        spanning = _spans(src_mesh) or _spans(dst_mesh)
        out: list[Any] = []
        for aval, sh in zip(avals, dst_shardings, strict=True):
            if same and _even(sh, aval.shape):
                out.append(sh)
            elif same and spanning:
                out.append(NamedSharding(dst_mesh, PartitionSpec()))
            else:
                out.append(None)
        return out

    def lay_out(self, values: list[Any], src_mesh: Mesh, routes: list[Any]) -> list[Any]:
        """``values`` laid out on ``src_mesh`` as they cross (``routes``). On a mesh spanning
        processes this is a collective among them: the rank's own thread calls it, in program
        order, so that it never runs beside another of that mesh's executables in a
        different order in another process."""
        return [v if via is None else self._laid_out(v, src_mesh, via)
                for v, via in zip(values, routes, strict=True)]  # fmt: skip

    def _blocks(
        self,
        values: list[Any] | None,
        src_mesh: Mesh,
        dst_mesh: Mesh,
        avals: list[Any],
        picked: list[tuple[int, Any]],
        dst_shardings: list[Any],
        out: list[Any],
    ) -> None:
        """Values ``n`` of ``picked`` block by block, each laid out as its ``via`` sharding
        on both meshes (then as ``dst_shardings[n]`` on the receiver), into ``out``."""
        me = jax.process_index()
        src_devs, dst_devs = list(src_mesh.devices.flat), list(dst_mesh.devices.flat)
        blocks = [(tuple(via.shard_shape(avals[n].shape)), avals[n].dtype) for n, via in picked]
        per_dev: list[list[Any]] | None = None
        if values is not None:
            mine = [d for d in src_devs if d.process_index == me]
            per_dev = []
            for n, via in picked:
                laid = self._laid_out(values[n], src_mesh, via)
                by_dev = {s.device: s.data for s in laid.addressable_shards}
                per_dev.append([by_dev[d] for d in mine])
        got = self.exchange(per_dev, src_devs, dst_devs, blocks)
        if got is None:
            return
        mine = [d for d in dst_devs if d.process_index == me]
        for (n, via), shards in zip(picked, got, strict=True):
            sh, shape = dst_shardings[n], tuple(avals[n].shape)
            if via is not sh:  # whole on each device: each device keeps its own part
                index = sh.devices_indices_map(shape)
                shards = [jax.device_put(x[index[d]], d) for x, d in zip(shards, mine, strict=True)]
            out[n] = jax.make_array_from_single_device_arrays(shape, sh, shards)

    def _whole(
        self,
        values: list[Any] | None,
        src_mesh: Mesh,
        dst_mesh: Mesh,
        avals: list[Any],
        picked: list[int],
        dst_shardings: list[Any],
        out: list[Any],
    ) -> None:
        """Values ``picked`` whole, first device to first device (meshes in one process
        each), into ``out``."""
        src0, dst0 = src_mesh.devices.flat[0], dst_mesh.devices.flat[0]
        blocks = [(tuple(avals[n].shape), avals[n].dtype) for n in picked]
        per_dev: list[list[Any]] | None = None
        if values is not None:
            first = SingleDeviceSharding(src0)
            per_dev = [
                [v if v.sharding.is_equivalent_to(first, v.ndim) else jax.device_put(v, first)]
                for v in (values[n] for n in picked)
            ]
        got = self.exchange(per_dev, [src0], [dst0], blocks)
        if got is not None:
            for n, (x,) in zip(picked, got, strict=True):
                out[n] = jax.device_put(x, dst_shardings[n])


def _spans(mesh: Mesh) -> bool:
    """Whether ``mesh`` has devices of more than one process."""
    return len({d.process_index for d in mesh.devices.flat}) > 1


def _even(sharding: Any, shape: Any) -> bool:
    """Whether ``sharding`` splits ``shape`` into equal blocks (a NamedSharding whose mesh has
    one device per position)."""
    if not isinstance(sharding, NamedSharding):
        return False
    try:
        sharding.shard_shape(tuple(shape))
    except ValueError:
        return False
    return True


def move_group(
    links: Links,
    values: list[Any] | None,
    placement: Placement,
    layout: ProcessLayout,
    src_rank: int,
    dst_rank: int,
    avals: list[Any],
    dst_shardings: list[Any],
) -> list[Any] | None:
    """``values`` from ``src_rank`` to ``dst_rank``, whichever processes hold them: a
    ``device_put`` inside a process, one collective between two (see :meth:`Links.transfer`),
    nothing for a bystander (returns ``None``). Every process must call it in the same order;
    the sending process passes the values, the others ``None``."""
    src_local, dst_local = layout.local(src_rank), layout.local(dst_rank)
    if src_local and dst_local:
        assert values is not None
        if src_rank == dst_rank:
            return values
        return [jax.device_put(v, sh) for v, sh in zip(values, dst_shardings, strict=True)]
    if not src_local and not dst_local:
        return None
    src_mesh, dst_mesh = placement.meshes[src_rank], placement.meshes[dst_rank]
    try:
        return links.transfer(
            values if src_local else None, src_mesh, dst_mesh, avals, dst_shardings
        )
    except Exception as e:  # another process's boundary: a peer's failure arrives as whatever
        # the transfer raised; re-raised as a lost peer or with the ranks, the cause chained
        distributed.raise_lost_peer(e)
        raise DistributedError(
            f"transfer between rank {src_rank} ({_procs(layout.rank_procs[src_rank])}) and "
            f"rank {dst_rank} ({_procs(layout.rank_procs[dst_rank])}) failed: {e}"
        ) from e


def _procs(ps: tuple[int, ...]) -> str:
    return f"process{'es' if len(ps) > 1 else ''} {', '.join(map(str, ps))}"


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
