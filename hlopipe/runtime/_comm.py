"""Communication of a pipeline: running a step's transfers and moving values between ranks,
in one process or across the processes of a ``jax.distributed`` job.

In one process everything is a ``device_put``. Across processes a value moves by an XLA
collective both processes issue, every process in the same order (``_multiprocess.py`` says
which order): a ``ppermute`` along the ``"pp"`` axis of a 2 x K mesh spanning the sender's and
the receiver's stage meshes, inside ``shard_map`` (gloo on CPU, NCCL on GPU), compiled once per
pair of device lists and kept by the pipeline's ``Links``. Host values a step reports (the
microbatch losses, the squared gradient norms) travel the same way, as exact float64 bit
patterns, never through the coordinator's key-value store.

(``jax.device_put`` onto a device of another process does not move data in jax 0.10.2 on CPU:
it returns an array with no addressable shard on the sender, and the receiver never sees it.)
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from hlopipe.errors import DistributedError
from hlopipe.runtime import distributed
from hlopipe.runtime._placement import DATA_AXIS, Placement
from hlopipe.runtime._process_layout import ProcessLayout

if TYPE_CHECKING:  # _plan imports the layout through _multiprocess, which imports this module
    from hlopipe.runtime._plan import PipelinePlan

PP_AXIS = "pp"
_LINKS_IDS = itertools.count()
# Sender layouts kept per (sender mesh, receiver sharding): a pipeline has a few of each.
_MAX_LAYOUTS = 256


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
