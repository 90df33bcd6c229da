"""Collectives and sharding annotations, under a mesh the user passes.

A program an SPMD partitioner produced runs once per device; its collectives name their
peers by device id (``replica_groups``, ``source_target_pairs``). Rehydrated, such a program
runs inside ``jax.shard_map`` over the user's mesh: the program's device ``d`` is position
``d`` along the mesh axis (or axes, row-major) the user names, and each collective becomes
the ``jax.lax`` collective over that axis. Groups that are not the whole axis in order
(several groups, a permuted order, a region other than add/max/min) are expressed as an
``all_gather`` over the axis followed by a static selection of the group's members, so every
rule stays differentiable and batchable.

Sharding annotations (``mhlo.sharding`` on arguments and results, ``@Sharding`` custom
calls, ``sdy.sharding_constraint``) become ``with_sharding_constraint`` on the mesh; without a
mesh they are dropped. ``sdy.manual_computation`` (what ``jax.shard_map`` lowers to with
Shardy) becomes a ``jax.shard_map`` of its region.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate._ir import OpaqueAttr
from hlopipe.rehydrate.custom_calls import builtin
from hlopipe.rehydrate.registry import Region, RuleContext, rule

COLLECTIVE_OPS = frozenset(
    {
        "stablehlo.all_reduce",
        "stablehlo.all_gather",
        "stablehlo.reduce_scatter",
        "stablehlo.all_to_all",
        "stablehlo.collective_permute",
        "stablehlo.collective_broadcast",
        "mhlo.all_to_all",
        "mhlo.all_reduce",
        "mhlo.all_gather",
        "mhlo.reduce_scatter",
        "mhlo.collective_permute",
        "mhlo.collective_broadcast",
    }
)
DEVICE_ID_OPS = frozenset(
    {"stablehlo.replica_id", "stablehlo.partition_id", "mhlo.replica_id", "mhlo.partition_id"}
)

# custom calls that open and close a manual (per-device) part of a global program
MANUAL_BOUNDARIES = frozenset(
    {
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "xla.sdy.GlobalToLocalShape",
        "xla.sdy.LocalToGlobalShape",
    }
)


# ---- the SPMD context --------------------------------------------------------------------------


@dataclass(frozen=True)
class Spmd:
    """Where per-device code runs: inside a ``shard_map`` over ``axes`` of the mesh.

    Attributes:
      axes: the mesh axes the program's devices run along (row-major device numbering).
      size: the number of devices along them.
      num_partitions: partitions per replica (device id = replica * num_partitions + partition).
      num_replicas: replicas; ``num_replicas * num_partitions == size``.
    """

    axes: tuple[str, ...]
    size: int
    num_partitions: int
    num_replicas: int

    @property
    def axis_name(self) -> str | tuple[str, ...]:
        return self.axes[0] if len(self.axes) == 1 else self.axes

    def index(self) -> Any:
        """This device's id (int32), traced."""
        return lax.axis_index(self.axis_name)


def make_spmd(
    mesh: Any, axes: tuple[str, ...], num_partitions: int | None, num_replicas: int | None
) -> Spmd:
    size = math.prod(int(mesh.shape[a]) for a in axes)
    if num_partitions is None:
        num_partitions = size // max(num_replicas or 1, 1)
    if num_replicas is None:
        num_replicas = size // max(num_partitions, 1)
    if num_partitions * num_replicas != size:
        raise RehydrateError(
            f"the program runs on {num_replicas} replica(s) x {num_partitions} partition(s) = "
            f"{num_replicas * num_partitions} devices, but mesh axes {axes} have {size}: "
            "pass a mesh (and axis=...) of that size"
        )
    return Spmd(tuple(axes), size, num_partitions, num_replicas)


def mesh_axes(mesh: Any, axis: str | Sequence[str] | None) -> tuple[str, ...]:
    """The mesh axes the user named (all of the mesh's axes when ``axis`` is None)."""
    if axis is None:
        return tuple(mesh.axis_names)
    axes = (axis,) if isinstance(axis, str) else tuple(axis)
    for a in axes:
        if a not in mesh.shape:
            raise RehydrateError(f"axis {a!r} is not an axis of the mesh {dict(mesh.shape)}")
    return axes


def _spmd(ctx: RuleContext) -> Spmd:
    spmd = ctx.interpreter.options.get("spmd")
    if spmd is None:
        if ctx.interpreter.options.get("mesh") is None:
            raise UnsupportedOpError(
                f"{ctx.name} at {ctx.loc} is a collective of a per-device (SPMD) program: "
                "rehydrate with mesh=... axis=... to run it on a mesh"
            )
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc} is a collective outside any per-device part of the "
            "program; rehydrate(..., partitioned=True) if the whole program runs per device"
        )
    return spmd


# ---- device groups -----------------------------------------------------------------------------


def _channel(channel_handle: Any) -> int:
    if isinstance(channel_handle, dict):
        return int(channel_handle.get("handle", 0))
    if isinstance(channel_handle, OpaqueAttr):  # #mhlo.channel_handle<handle = 1, type = 0>
        m = re.search(r"handle\s*=\s*(-?\d+)", channel_handle.text)
        return int(m.group(1)) if m else 0
    return 0


def device_groups(
    spmd: Spmd,
    replica_groups: Any,
    channel_handle: Any,
    use_global_device_ids: bool,
    *,
    partition_mode: bool,
) -> list[list[int]]:
    """The groups of device ids (``0 <= id < spmd.size``) a collective runs over.

    ``partition_mode`` is True for the ops whose channel means "across partitions"
    (all_to_all, collective_broadcast); False for all_reduce / all_gather / reduce_scatter.
    Follows the StableHLO spec's process-group modes.
    """
    P, R = spmd.num_partitions, spmd.num_replicas
    rg = np.asarray(replica_groups if replica_groups is not None else np.zeros((0, 0)))
    if rg.size == 0:  # replica_groups={}: every device in one group
        rg = np.zeros((0, 0), np.int64)
    else:
        rg = rg.reshape(rg.shape[0], -1) if rg.ndim == 2 else rg.reshape(1, -1)
    groups = [[int(i) for i in g if int(i) >= 0] for g in rg.tolist()]
    groups = [g for g in groups if g]
    channel = _channel(channel_handle)
    if use_global_device_ids:
        mode = "flattened"
    elif channel <= 0:
        mode = "cross_replica"
    else:
        mode = "cross_partition" if partition_mode else "cross_replica_and_partition"
    if mode == "flattened":
        out = groups or [list(range(spmd.size))]
    elif mode == "cross_replica":
        groups = groups or [list(range(R))]
        out = [[r * P + p for r in g] for p in range(P) for g in groups]
    elif mode == "cross_partition":
        groups = groups or [list(range(P))]
        out = [[r * P + p for p in g] for r in range(R) for g in groups]
    else:
        groups = groups or [list(range(R))]
        out = [[r * P + p for r in g for p in range(P)] for g in groups]
    seen = sorted(d for g in out for d in g)
    if seen != list(range(spmd.size)):
        raise UnsupportedOpError(
            f"replica groups {rg.tolist()} ({mode}) do not cover the {spmd.size} devices "
            f"({R} replica(s) x {P} partition(s)) exactly once"
        )
    return out


def _whole(groups: list[list[int]], size: int) -> bool:
    return len(groups) == 1 and groups[0] == list(range(size))


class _Groups:
    """Static tables of a device grouping, indexed by the traced device id."""

    def __init__(self, groups: list[list[int]], size: int):
        self.groups = groups
        self.group_size = len(groups[0])
        if any(len(g) != self.group_size for g in groups):
            raise UnsupportedOpError(f"replica groups of different sizes {groups}")
        members = np.zeros((size, self.group_size), np.int32)
        pos = np.zeros((size,), np.int32)
        for g in groups:
            for k, d in enumerate(g):
                members[d] = g
                pos[d] = k
        self.members = members
        self.pos = pos

    def gather(self, spmd: Spmd, x: Any) -> tuple[Any, Any]:
        """Every group member's ``x``, stacked in group order ([group_size, ...]), and this
        device's position in its group."""
        everyone = lax.all_gather(x, spmd.axis_name, axis=0, tiled=False)
        me = spmd.index()
        mine = jnp.asarray(self.members)[me]
        return jnp.take(everyone, mine, axis=0), jnp.asarray(self.pos)[me]


def _groups_of(ctx: RuleContext, attrs: dict[str, Any], *, partition_mode: bool) -> Any:
    spmd = _spmd(ctx)
    groups = device_groups(
        spmd,
        attrs.get("replica_groups"),
        attrs.get("channel_handle"),
        bool(attrs.get("use_global_device_ids", False)),
        partition_mode=partition_mode,
    )
    return spmd, groups


# ---- reductions --------------------------------------------------------------------------------

_FAST_REDUCE = {
    "stablehlo.add": lax.psum,
    "stablehlo.maximum": lax.pmax,
    "stablehlo.minimum": lax.pmin,
}


def _fold(region: Region, stacked: Any) -> Any:
    """Reduce ``stacked`` ([n, ...]) over its first axis with a scalar region, in order."""
    n = stacked.shape[0]
    shape = stacked.shape[1:]
    flat = stacked.reshape((n, -1))
    step = jax.vmap(lambda a, b: region(a, b)[0])
    acc = flat[0]
    for j in range(1, n):
        acc = step(acc, flat[j])
    return acc.reshape(shape)


def _fast_reduce(region: Region, dtype: Any) -> Any:
    fn = _FAST_REDUCE.get(region.binary_op() or "")
    if fn is None or np.dtype(dtype) == np.dtype(bool):
        return None
    return fn


@rule("stablehlo.all_reduce", "mhlo.all_reduce")
def all_reduce(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
    spmd, groups = _groups_of(ctx, attrs, partition_mode=False)
    region = ctx.regions[0]
    outs = []
    for x in operands:
        fast = _fast_reduce(region, x.dtype)
        if fast is not None and _whole(groups, spmd.size):
            outs.append(fast(x, spmd.axis_name))
        elif len(groups[0]) == 1:
            outs.append(x)
        else:
            stacked, _ = _Groups(groups, spmd.size).gather(spmd, x)
            outs.append(_fold(region, stacked))
    return outs[0] if len(outs) == 1 else tuple(outs)


@rule("stablehlo.reduce_scatter", "mhlo.reduce_scatter")
def reduce_scatter(ctx: RuleContext, x: Any, *, scatter_dimension: int, **attrs: Any) -> Any:
    spmd, groups = _groups_of(ctx, attrs, partition_mode=False)
    region = ctx.regions[0]
    d = int(scatter_dimension)
    if region.binary_op() == "stablehlo.add" and x.dtype != bool and _whole(groups, spmd.size):
        return lax.psum_scatter(x, spmd.axis_name, scatter_dimension=d, tiled=True)
    g = _Groups(groups, spmd.size)
    stacked, pos = g.gather(spmd, x)
    total = _fold(region, stacked)
    chunk = x.shape[d] // g.group_size
    return lax.dynamic_slice_in_dim(total, pos * chunk, chunk, d)


# ---- data movement -----------------------------------------------------------------------------


@rule("stablehlo.all_gather", "mhlo.all_gather")
def all_gather(ctx: RuleContext, *operands: Any, all_gather_dim: int, **attrs: Any) -> Any:
    spmd, groups = _groups_of(ctx, attrs, partition_mode=False)
    d = int(all_gather_dim)
    outs = []
    for x in operands:
        if _whole(groups, spmd.size):
            outs.append(lax.all_gather(x, spmd.axis_name, axis=d, tiled=True))
            continue
        stacked, _ = _Groups(groups, spmd.size).gather(spmd, x)
        outs.append(lax.concatenate([stacked[j] for j in range(stacked.shape[0])], d))
    return outs[0] if len(outs) == 1 else tuple(outs)


@rule("stablehlo.all_to_all", "mhlo.all_to_all")
def all_to_all(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
    spmd, groups = _groups_of(ctx, attrs, partition_mode=True)
    if "split_dimension" not in attrs:
        return _all_to_all_tuple(ctx, spmd, groups, operands)
    sd = int(attrs["split_dimension"])
    cd = int(attrs["concat_dimension"])
    count = int(attrs["split_count"])
    if count != len(groups[0]):
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc} with split_count {count} over groups of "
            f"{len(groups[0])} is not valid StableHLO"
        )
    outs = []
    for x in operands:
        if _whole(groups, spmd.size):
            outs.append(lax.all_to_all(x, spmd.axis_name, sd, cd, tiled=True))
            continue
        stacked, pos = _Groups(groups, spmd.size).gather(spmd, x)
        chunk = x.shape[sd] // count
        parts = [lax.dynamic_slice_in_dim(stacked[j], pos * chunk, chunk, sd) for j in range(count)]
        outs.append(lax.concatenate(parts, cd))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _all_to_all_tuple(ctx: RuleContext, spmd: Spmd, groups: list[list[int]], xs: Any) -> Any:
    # HLO's tuple form: operand j goes to the group's j-th device; result j came from it.
    if len(xs) != len(groups[0]):
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc} with {len(xs)} operands over groups of {len(groups[0])}"
        )
    if len({(tuple(x.shape), np.dtype(x.dtype)) for x in xs}) != 1:
        raise UnsupportedOpError(f"{ctx.name} at {ctx.loc} with operands of different types")
    stacked = jnp.stack(xs)
    if _whole(groups, spmd.size):
        out = lax.all_to_all(stacked, spmd.axis_name, 0, 0, tiled=True)
    else:
        everyone, pos = _Groups(groups, spmd.size).gather(spmd, stacked)
        out = jnp.take(everyone, pos, axis=1)
    return tuple(out[j] for j in range(len(xs)))


@rule("stablehlo.collective_permute", "mhlo.collective_permute")
def collective_permute(ctx: RuleContext, x: Any, *, source_target_pairs: Any, **attrs: Any) -> Any:
    spmd = _spmd(ctx)
    P, R = spmd.num_partitions, spmd.num_replicas
    pairs = [(int(a), int(b)) for a, b in np.asarray(source_target_pairs).reshape(-1, 2)]
    if _channel(attrs.get("channel_handle")) > 0:  # cross-partition, within each replica
        perm = [(r * P + a, r * P + b) for r in range(R) for a, b in pairs]
    else:  # cross-replica, within each partition
        perm = [(a * P + p, b * P + p) for p in range(P) for a, b in pairs]
    if not perm:
        return jnp.zeros_like(x)
    return lax.ppermute(x, spmd.axis_name, perm)


@rule("stablehlo.collective_broadcast", "mhlo.collective_broadcast")
def collective_broadcast(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    spmd = _spmd(ctx)
    P, R = spmd.num_partitions, spmd.num_replicas
    rg = np.asarray(attrs.get("replica_groups", np.zeros((0, 0))))
    groups = [[int(i) for i in g if int(i) >= 0] for g in rg.reshape(rg.shape[0], -1).tolist()]
    groups = [g for g in groups if g]
    if _channel(attrs.get("channel_handle")) > 0:
        groups = groups or [list(range(P))]
        full = [[r * P + p for p in g] for r in range(R) for g in groups]
    else:
        groups = groups or [list(range(R))]
        full = [[r * P + p for r in g] for p in range(P) for g in groups]
    root = np.full((spmd.size,), -1, np.int32)
    for g in full:
        for d in g:
            root[d] = g[0]
    everyone = lax.all_gather(x, spmd.axis_name, axis=0, tiled=False)
    src = jnp.asarray(root)[spmd.index()]
    got = jnp.take(everyone, jnp.maximum(src, 0), axis=0)
    return jnp.where(src >= 0, got, jnp.zeros_like(got))


@rule("stablehlo.replica_id", "mhlo.replica_id")
def replica_id(ctx: RuleContext, **attrs: Any) -> Any:
    spmd = ctx.interpreter.options.get("spmd")
    if spmd is None:
        return jnp.zeros((), ctx.aval.dtype)
    return lax.convert_element_type(spmd.index() // spmd.num_partitions, ctx.aval.dtype)


@rule("stablehlo.partition_id", "mhlo.partition_id")
def partition_id(ctx: RuleContext, **attrs: Any) -> Any:
    spmd = ctx.interpreter.options.get("spmd")
    if spmd is None:
        return jnp.zeros((), ctx.aval.dtype)
    return lax.convert_element_type(spmd.index() % spmd.num_partitions, ctx.aval.dtype)


# ---- sharding strings --------------------------------------------------------------------------

_HLO_SHARDING = re.compile(
    r"^\{\s*devices=\[([\d,\s]+)\]\s*(<=\[[\d,\s]+\](?:T\([\d,\s]+\))?|[\d,\s]+)(.*)\}$", re.S
)


def hlo_sharding_spec(
    text: str, ndim: int, axes: Sequence[tuple[str, int]]
) -> PartitionSpec | None:
    """An HLO sharding string (``{devices=[2,1]<=[2]}``) as a PartitionSpec over ``axes``
    (``(name, size)`` pairs whose row-major numbering is the program's device ids).

    Returns None for ``{manual}`` (the value is already per device); raises
    UnsupportedOpError when no PartitionSpec over these axes gives the same tiling.
    """
    s = text.strip()
    s = re.sub(r",?\s*metadata=\{[^}]*\}", "", s)
    if s in ("{replicated}", "{}", "{unknown}") or s.startswith("{maximal"):
        return PartitionSpec()
    if s == "{manual}":
        return None
    if s.startswith("{{"):
        raise UnsupportedOpError(f"tuple sharding {text} is not supported")
    m = _HLO_SHARDING.match(s)
    if m is None:
        raise UnsupportedOpError(f"sharding {text} is not supported (cannot read it)")
    dims = [int(v) for v in m.group(1).split(",") if v.strip()]
    assign = m.group(2).strip()
    rest = m.group(3)
    total = math.prod(dims)
    if assign.startswith("<="):
        im = re.match(r"<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?", assign)
        assert im is not None
        reshape = [int(v) for v in im.group(1).split(",") if v.strip()]
        devices = np.arange(math.prod(reshape)).reshape(reshape)
        if im.group(2):
            devices = devices.transpose([int(v) for v in im.group(2).split(",") if v.strip()])
        devices = devices.reshape(dims)
    else:
        devices = np.array([int(v) for v in assign.split(",") if v.strip()]).reshape(dims)
    n_subgroup = 0
    if "last_tile_dim_replicate" in rest:
        n_subgroup = 1
    else:
        lm = re.search(r"last_tile_dims=\{([^}]*)\}", rest)
        if lm:
            kinds = [k.strip() for k in lm.group(1).split(",") if k.strip()]
            if any(k != "replicated" for k in kinds):
                raise UnsupportedOpError(f"sharding {text} (partly manual) is not supported")
            n_subgroup = len(kinds)
    if len(dims) - n_subgroup != ndim:
        raise UnsupportedOpError(f"sharding {text} does not fit a rank-{ndim} value")
    if total == 1:
        return PartitionSpec()
    return _find_spec(devices, ndim, axes, text)


def _find_spec(
    devices: np.ndarray, ndim: int, axes: Sequence[tuple[str, int]], text: str
) -> PartitionSpec:
    live = [(n, s) for n, s in axes if s > 1]
    sizes = [s for _, s in axes]
    n_dev = math.prod(sizes)
    if devices.size != n_dev:
        raise UnsupportedOpError(
            f"sharding {text} spans {devices.size} devices, the mesh axes "
            f"{[n for n, _ in axes]} have {n_dev}"
        )
    # tile coordinates of each device id
    tile_of = np.zeros((n_dev, devices.ndim), np.int64)
    for coord in np.ndindex(*devices.shape):
        tile_of[int(devices[coord])] = coord
    coords = np.array(list(np.ndindex(*sizes))) if sizes else np.zeros((1, 0), np.int64)
    names = [n for n, _ in axes]
    live_idx = [names.index(n) for n, _ in live]
    tile_dims = list(devices.shape[:ndim])
    for slots in itertools.product(range(ndim + 1), repeat=len(live)):
        per_dim: list[list[int]] = [[] for _ in range(ndim)]
        for k, slot in zip(live_idx, slots):
            if slot < ndim:
                per_dim[slot].append(k)
        if any(math.prod(sizes[k] for k in per_dim[i]) != tile_dims[i] for i in range(ndim)):
            continue
        for orders in itertools.product(*(itertools.permutations(p) for p in per_dim)):
            ok = True
            for i, order in enumerate(orders):
                idx = np.zeros((n_dev,), np.int64)
                for k in order:
                    idx = idx * sizes[k] + coords[:, k]
                if not np.array_equal(idx, tile_of[:, i]):
                    ok = False
                    break
            if ok:
                entries: list[Any] = []
                for order in orders:
                    if not order:
                        entries.append(None)
                    elif len(order) == 1:
                        entries.append(names[order[0]])
                    else:
                        entries.append(tuple(names[k] for k in order))
                return PartitionSpec(*entries)
    raise UnsupportedOpError(
        f"sharding {text} cannot be expressed as a PartitionSpec over mesh axes "
        f"{dict(axes)}: pass a mesh whose axes match it"
    )


# ---- Shardy attributes -------------------------------------------------------------------------

_SDY_ONE = re.compile(
    r"<\s*(@[\w.$-]+|mesh<[^>]*>)\s*,\s*\[(.*?)\]\s*(?:replicated=\{[^}]*\}\s*)?>"
)


def parse_sdy_mesh(text: str) -> tuple[tuple[str, int], ...]:
    """``#sdy.mesh<["x"=4, "y"=2]>`` (or its body) -> (("x", 4), ("y", 2))."""
    return tuple((n, int(s)) for n, s in re.findall(r'"([^"]+)"\s*=\s*(\d+)', text))


def parse_sdy_shardings(text: str) -> list[tuple[str, list[list[str]]]]:
    """``#sdy.sharding<@mesh, [{"x"}, {}]>`` or ``#sdy.sharding_per_value<[...]>`` ->
    [(mesh ref, per-dimension axis names)]."""
    out = []
    for m in _SDY_ONE.finditer(text):
        dims = []
        for body in re.findall(r"\{([^}]*)\}", m.group(2)):
            names = []
            for item in body.split(","):
                item = item.strip()
                if not item or item == "?":
                    continue
                am = re.fullmatch(r'"([^"]+)"', item)
                if am is None:
                    raise UnsupportedOpError(
                        f"Shardy sharding {text} (sub-axis {item}) is not supported"
                    )
                names.append(am.group(1))
            dims.append(names)
        out.append((m.group(1), dims))
    return out


def _attr_text(a: Any) -> str:
    return a.text if isinstance(a, OpaqueAttr) else str(a)


class AxisMap:
    """Maps a program's Shardy mesh axis names to the user's mesh axes."""

    def __init__(self, meshes: dict[str, tuple[tuple[str, int], ...]], mesh: Any, axis: Any):
        self.meshes = meshes
        self.mesh = mesh
        self.axis = axis

    def program_axes(self, ref: str) -> tuple[tuple[str, int], ...]:
        if ref.startswith("mesh<"):
            return parse_sdy_mesh(ref)
        key = ref.lstrip("@")
        if key not in self.meshes:
            raise UnsupportedOpError(f"the program's Shardy mesh @{key} is not defined")
        return self.meshes[key]

    def names(self, ref: str) -> dict[str, tuple[str, ...]]:
        prog = [(n, s) for n, s in self.program_axes(ref)]
        user = dict(self.mesh.shape)
        if all(n in user and int(user[n]) == s for n, s in prog if s > 1):
            return {n: (n,) for n, _ in prog}
        live = [(n, s) for n, s in prog if s > 1]
        targets = mesh_axes(self.mesh, self.axis)
        tsizes = [int(user[t]) for t in targets]
        if len(live) == 1 and live[0][1] == math.prod(tsizes):
            return {live[0][0]: targets, **{n: () for n, s in prog if s == 1}}
        if [s for _, s in live] == [t for t in tsizes if t > 1]:
            tl = [t for t in targets if int(user[t]) > 1]
            return {
                **{n: () for n, s in prog if s == 1},
                **{n: (t,) for (n, _), t in zip(live, tl)},
            }
        raise UnsupportedOpError(
            f"the program's mesh {dict(prog)} does not match the mesh {user} "
            f"(axis={self.axis!r}): pass a mesh with the program's axes"
        )

    def spec(self, ref: str, dims: list[list[str]]) -> PartitionSpec:
        names = self.names(ref)
        entries: list[Any] = []
        for d in dims:
            mapped = tuple(t for n in d for t in names[n])
            entries.append(None if not mapped else mapped[0] if len(mapped) == 1 else mapped)
        return PartitionSpec(*entries)


def axis_map(ctx: RuleContext) -> AxisMap:
    opts = ctx.interpreter.options
    return AxisMap(opts.get("sdy_meshes") or {}, opts["mesh"], opts.get("axis"))


# ---- constraints -------------------------------------------------------------------------------


def constrain(x: Any, mesh: Any, spec: PartitionSpec) -> Any:
    """``with_sharding_constraint`` on the mesh; ``reshard`` for a mesh with Explicit axes."""
    sharding = NamedSharding(mesh, spec)
    explicit = [
        n
        for n, t in zip(mesh.axis_names, getattr(mesh, "axis_types", ()))
        if t == jax.sharding.AxisType.Explicit
    ]
    if explicit:
        return jax.sharding.reshard(x, sharding)
    return lax.with_sharding_constraint(x, sharding)


def _in_manual(ctx: RuleContext) -> bool:
    return ctx.interpreter.options.get("spmd") is not None


@rule("sdy.sharding_constraint", "sdy.reshard")
def sdy_sharding_constraint(ctx: RuleContext, x: Any, *, sharding: Any, **attrs: Any) -> Any:
    if ctx.interpreter.options.get("mesh") is None or _in_manual(ctx):
        return x
    [(ref, dims)] = parse_sdy_shardings(_attr_text(sharding))
    return constrain(x, ctx.interpreter.options["mesh"], axis_map(ctx).spec(ref, dims))


@rule("sdy.manual_computation")
def manual_computation(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
    """A ``jax.shard_map`` of the region over the manual axes."""
    opts = ctx.interpreter.options
    mesh = opts.get("mesh")
    if mesh is None:
        raise UnsupportedOpError(
            f"sdy.manual_computation at {ctx.loc} is a shard_map: rehydrate with mesh=... "
            "axis=... to run it"
        )
    if _in_manual(ctx):
        raise UnsupportedOpError(f"nested sdy.manual_computation at {ctx.loc} is not supported")
    amap = axis_map(ctx)
    ins = parse_sdy_shardings(_attr_text(attrs.get("in_shardings", "")))
    outs = parse_sdy_shardings(_attr_text(attrs.get("out_shardings", "")))
    in_specs = tuple(amap.spec(ref, dims) for ref, dims in ins)
    out_specs = tuple(amap.spec(ref, dims) for ref, dims in outs)
    manual_names = re.findall(r'"([^"]+)"', _attr_text(attrs.get("manual_axes", "")))
    ref = (ins or outs)[0][0] if (ins or outs) else "@mesh"
    names = amap.names(ref) if ref.lstrip("@") in amap.meshes or ref.startswith("mesh<") else {}
    prog_axes = [n for n, s in amap.program_axes(ref) if s > 1] if names else manual_names
    if sorted(n for n in manual_names if n in prog_axes) != sorted(prog_axes):
        raise UnsupportedOpError(
            f"sdy.manual_computation at {ctx.loc} is manual over {manual_names} of the mesh's "
            f"axes {prog_axes}: partly manual computations are not supported"
        )
    user_axes = tuple(t for n in prog_axes for t in (names.get(n, (n,)) if names else (n,)))
    return _region_under_shard_map(ctx, operands, mesh, user_axes, in_specs, out_specs)


@rule("hlopipe.manual_computation")
def outlined_manual_computation(
    ctx: RuleContext, *operands: Any, in_specs: list[Any], out_specs: list[Any]
) -> Any:
    """A manual part of a global program, outlined by ``outline_manual_parts``: its region
    under ``jax.shard_map`` over the user's axes."""
    opts = ctx.interpreter.options
    mesh = opts["mesh"]
    axes = mesh_axes(mesh, opts.get("axis"))
    hlo_axes = [(a, int(mesh.shape[a])) for a in axes]
    amap = axis_map(ctx)

    def spec(s: Any, ndim: int) -> PartitionSpec:
        if isinstance(s, tuple):
            return amap.spec(s[1], s[2])
        p = hlo_sharding_spec(s, ndim, hlo_axes)
        return PartitionSpec() if p is None else p

    ispecs = tuple(spec(s, len(a.shape)) for s, a in zip(in_specs, ctx.operand_avals))
    ospecs = tuple(spec(s, len(a.shape)) for s, a in zip(out_specs, ctx.result_avals))
    return _region_under_shard_map(ctx, operands, mesh, axes, ispecs, ospecs)


def _region_under_shard_map(
    ctx: RuleContext,
    operands: tuple[Any, ...],
    mesh: Any,
    axes: tuple[str, ...],
    in_specs: Any,
    out_specs: Any,
) -> Any:
    """The op's region run per device under ``jax.shard_map`` over ``axes``; the collective
    rules inside it read the SPMD context from ``interpreter.options["spmd"]``."""
    opts = ctx.interpreter.options
    spmd = make_spmd(mesh, axes, None, None)
    body = ctx.regions[0]

    def per_device(*xs: Any) -> tuple[Any, ...]:
        saved = opts.get("spmd")
        opts["spmd"] = spmd
        try:
            return tuple(body(*xs))
        finally:
            opts["spmd"] = saved

    fn = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=in_specs,
        out_specs=out_specs,
        axis_names=set(axes),
        check_vma=False,
    )
    res = fn(*operands)
    return res[0] if len(res) == 1 else tuple(res)


def sharding_custom_call(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """``@Sharding`` under a mesh: a sharding constraint outside per-device code, nothing
    inside it. ``@SPMDFullToShardShape`` / ``@SPMDShardToFullShape`` open and close a manual
    part of a global program; :func:`hlopipe.rehydrate._rehydrate.rehydrate` outlines those
    parts into a shard_map before running, so reaching one here is an error."""
    target = ctx.op.attrs.get("call_target_name", "Sharding")
    if target == "Sharding" or tuple(x.shape) == tuple(ctx.aval.shape):
        if _in_manual(ctx):
            return x
        text = attrs.get("mhlo.sharding")
        if text is None:
            return x
        spec = hlo_sharding_spec(_attr_text(text), x.ndim, _hlo_axes(ctx))
        if spec is None:  # {manual}
            return x
        return constrain(x, ctx.interpreter.options["mesh"], spec)
    raise UnsupportedOpError(
        f"{target} at {ctx.loc} changes the shape {list(x.shape)} -> {list(ctx.aval.shape)} "
        "outside a shard_map this program could be cut into"
    )


def _hlo_axes(ctx: RuleContext) -> list[tuple[str, int]]:
    opts = ctx.interpreter.options
    mesh = opts["mesh"]
    return [(a, int(mesh.shape[a])) for a in mesh_axes(mesh, opts.get("axis"))]


@builtin("xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape")
def _sdy_manual_boundary(ctx: RuleContext, *xs: Any, **attrs: Any) -> Any:
    # rehydrate() outlines the part between these two into a shard_map before running
    raise UnsupportedOpError(
        f"{ctx.op.attrs.get('call_target_name')} at {ctx.loc} opens or closes a shard_map: "
        "rehydrate with mesh=... axis=... to run it"
    )


@builtin("xla.sdy.FuncResultSharding", "xla.sdy.ShardingConstraint")
def _sdy_sharding_call(ctx: RuleContext, *xs: Any, **attrs: Any) -> Any:
    """Shardy's shardings carried through HLO as custom calls."""
    mesh = ctx.interpreter.options.get("mesh")
    if mesh is None or _in_manual(ctx):
        return xs[0] if len(xs) == 1 else tuple(xs)
    fa = attrs.get("mhlo.frontend_attributes") or {}
    parsed = parse_sdy_shardings(str(fa.get("xla.sdy.sharding", "")))
    amap = axis_map(ctx)
    outs = [
        x if i >= len(parsed) else constrain(x, mesh, amap.spec(*parsed[i]))
        for i, x in enumerate(xs)
    ]
    return outs[0] if len(outs) == 1 else tuple(outs)
