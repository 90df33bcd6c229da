"""Collectives and sharding annotations, under a mesh the user passes (the rules; the SPMD
plan and context they use live in ``rehydrate/_spmd.py``, the sharding parsers in
``_sharding_text.py``, the mesh wrappers in ``_on_mesh.py``).

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

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import OpaqueAttr
from hlopipe.rehydrate._on_mesh import axis_map, constrain, hlo_axes, region_under_shard_map
from hlopipe.rehydrate._sharding_text import attr_text, hlo_sharding_spec, parse_sdy_shardings
from hlopipe.rehydrate._spmd import Spmd, mesh_axes, require_spmd
from hlopipe.rehydrate.custom_calls import builtin
from hlopipe.rehydrate.registry import Region, RuleContext, rule

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
            f"({R} replica(s) x {P} partition(s)) exactly once: pass mesh=... axis=... with "
            "as many devices as the program runs on"
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
    spmd = require_spmd(ctx)
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
    spmd = require_spmd(ctx)
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
    spmd = require_spmd(ctx)
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
    spmd = ctx.spmd
    if spmd is None:
        return jnp.zeros((), ctx.aval.dtype)
    return lax.convert_element_type(spmd.index() // spmd.num_partitions, ctx.aval.dtype)


@rule("stablehlo.partition_id", "mhlo.partition_id")
def partition_id(ctx: RuleContext, **attrs: Any) -> Any:
    spmd = ctx.spmd
    if spmd is None:
        return jnp.zeros((), ctx.aval.dtype)
    return lax.convert_element_type(spmd.index() % spmd.num_partitions, ctx.aval.dtype)


def _in_manual(ctx: RuleContext) -> bool:
    return ctx.spmd is not None


@rule("sdy.sharding_constraint", "sdy.reshard")
def sdy_sharding_constraint(ctx: RuleContext, x: Any, *, sharding: Any, **attrs: Any) -> Any:
    if ctx.interpreter.options.get("mesh") is None or _in_manual(ctx):
        return x
    [(ref, dims)] = parse_sdy_shardings(attr_text(sharding))
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
    ins = parse_sdy_shardings(attr_text(attrs.get("in_shardings", "")))
    outs = parse_sdy_shardings(attr_text(attrs.get("out_shardings", "")))
    in_specs = tuple(amap.spec(ref, dims) for ref, dims in ins)
    out_specs = tuple(amap.spec(ref, dims) for ref, dims in outs)
    manual_names = re.findall(r'"([^"]+)"', attr_text(attrs.get("manual_axes", "")))
    ref = (ins or outs)[0][0] if (ins or outs) else "@mesh"
    names = amap.names(ref) if ref.lstrip("@") in amap.meshes or ref.startswith("mesh<") else {}
    prog_axes = [n for n, s in amap.program_axes(ref) if s > 1] if names else manual_names
    if sorted(n for n in manual_names if n in prog_axes) != sorted(prog_axes):
        raise UnsupportedOpError(
            f"sdy.manual_computation at {ctx.loc} is manual over {manual_names} of the mesh's "
            f"axes {prog_axes}: partly manual computations are not supported"
        )
    user_axes = tuple(t for n in prog_axes for t in (names.get(n, (n,)) if names else (n,)))
    return region_under_shard_map(ctx, operands, mesh, user_axes, in_specs, out_specs)


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

    ispecs = tuple(spec(s, len(a.shape)) for s, a in zip(in_specs, ctx.operand_avals, strict=True))
    ospecs = tuple(spec(s, len(a.shape)) for s, a in zip(out_specs, ctx.result_avals, strict=True))
    return region_under_shard_map(ctx, operands, mesh, axes, ispecs, ospecs)


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
        spec = hlo_sharding_spec(attr_text(text), x.ndim, hlo_axes(ctx))
        if spec is None:  # {manual}
            return x
        return constrain(x, ctx.interpreter.options["mesh"], spec)
    raise UnsupportedOpError(
        f"{target} at {ctx.loc} changes the shape {list(x.shape)} -> {list(ctx.aval.shape)} "
        "outside a shard_map this program could be cut into"
    )


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
