"""Running on a mesh: a per-device program under ``jax.shard_map`` (:func:`per_device`), a
global one with its shardings as constraints (:func:`constrained`), a manual part's region
under ``shard_map`` (:func:`region_under_shard_map`), and the program's Shardy axes mapped onto
the user's mesh (:class:`AxisMap`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate._known import is_known
from hlopipe.rehydrate._sharding_text import (
    attr_text,
    hlo_sharding_spec,
    parse_sdy_mesh,
    parse_sdy_shardings,
)
from hlopipe.rehydrate._spmd import SpmdPlan, make_spmd, mesh_axes

if TYPE_CHECKING:
    from hlopipe.rehydrate._interpreter import Interpreter
    from hlopipe.rehydrate.registry import RuleContext

# ---- the program's Shardy axes on the user's mesh --------------------------------------------


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
                **{n: (t,) for (n, _), t in zip(live, tl, strict=True)},
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
        for n, t in zip(mesh.axis_names, getattr(mesh, "axis_types", ()), strict=False)
        if t == jax.sharding.AxisType.Explicit
    ]
    if explicit:
        return jax.sharding.reshard(x, sharding)
    return lax.with_sharding_constraint(x, sharding)


def hlo_axes(ctx: RuleContext) -> list[tuple[str, int]]:
    """The user's mesh axes the program's device ids run along, with their sizes."""
    opts = ctx.interpreter.options
    mesh = opts["mesh"]
    return [(a, int(mesh.shape[a])) for a in mesh_axes(mesh, opts.get("axis"))]


def region_under_shard_map(
    ctx: RuleContext,
    operands: tuple[Any, ...],
    mesh: Any,
    axes: tuple[str, ...],
    in_specs: Any,
    out_specs: Any,
) -> Any:
    """The op's region run per device under ``jax.shard_map`` over ``axes``, on a view of
    the interpreter whose rule contexts carry this part's SPMD context."""
    spmd = make_spmd(mesh, axes, None, None)
    body = ctx.regions[0]
    body = dataclasses.replace(body, interpreter=ctx.interpreter.under(spmd))

    def per_device(*xs: Any) -> tuple[Any, ...]:
        return tuple(body(*xs))

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


# ---- the entry function on a mesh --------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """The entry function's arguments and results as a caller sees them (tokens left out):
    their types and their attributes (``mhlo.sharding``, ``sdy.sharding``)."""

    arg_avals: tuple[Any, ...]
    arg_attrs: tuple[dict[str, Any], ...]
    res_avals: tuple[Any, ...]
    res_attrs: tuple[dict[str, Any], ...]


def _spec_list(specs: Any, n: int) -> list[Any]:
    if specs is None:
        return [None] * n
    if isinstance(specs, PartitionSpec | jax.sharding.Sharding):  # one (PartitionSpec: a tuple)
        return [specs]
    return list(specs)


def _as_spec(s: Any) -> Any:
    if s is None or isinstance(s, PartitionSpec):
        return s
    if isinstance(s, NamedSharding):
        return s.spec
    raise TypeError(f"expected a PartitionSpec or NamedSharding, got {type(s).__name__}")


def _attr_spec(attrs: dict[str, Any], ndim: int, axes: Any, amap: AxisMap) -> Any:
    """The PartitionSpec of an argument's / result's sharding attributes, or None."""
    if "mhlo.sharding" in attrs:
        return hlo_sharding_spec(str(attrs["mhlo.sharding"]), ndim, axes)
    sdy = attrs.get("sdy.sharding")
    if sdy is not None:
        parsed = parse_sdy_shardings(attr_text(sdy))
        if parsed:
            return amap.spec(*parsed[0])
    return None


def _attr_specs(
    attrs: Sequence[dict[str, Any]], avals: Sequence[Any], mesh: Any, axis: Any, sdy_meshes: Any
) -> list[Any]:
    """Per value, the PartitionSpec its sharding attributes say on ``mesh``, or None."""
    axes = [(a, int(mesh.shape[a])) for a in mesh_axes(mesh, axis)]
    amap = AxisMap(sdy_meshes, mesh, axis)
    return [_attr_spec(a, len(v.shape), axes, amap) for a, v in zip(attrs, avals, strict=True)]


def per_device(
    run: Callable[..., tuple[Any, ...]],
    sig: Signature,
    mesh: Any,
    axis: Any,
    plan: SpmdPlan,
    in_specs: Any,
    out_specs: Any,
) -> tuple[Callable[..., tuple[Any, ...]], list[Any]]:
    """Wrap a per-device program's ``run`` in ``jax.shard_map``: global arrays in and out.

    Returns the wrapped function and the global types of its arguments. A spec the user gives
    wins over the program's sharding attributes; an argument with neither is replicated, a
    result with neither comes back with every device's value stacked on a new leading axis.
    """
    user_in = _spec_list(in_specs, len(sig.arg_avals))
    user_out = _spec_list(out_specs, len(sig.res_avals))
    if len(user_in) != len(sig.arg_avals) or len(user_out) != len(sig.res_avals):
        raise RehydrateError(
            f"in_specs/out_specs need {len(sig.arg_avals)}/{len(sig.res_avals)} entries, got "
            f"{len(user_in)}/{len(user_out)}"
        )
    attr_in = _attr_specs(sig.arg_attrs, sig.arg_avals, mesh, axis, plan.sdy_meshes)
    attr_out = _attr_specs(sig.res_attrs, sig.res_avals, mesh, axis, plan.sdy_meshes)
    got_in = [_as_spec(u) if u is not None else a for u, a in zip(user_in, attr_in, strict=True)]
    got_out = [_as_spec(u) if u is not None else a for u, a in zip(user_out, attr_out, strict=True)]
    ispecs = tuple(PartitionSpec() if s is None else s for s in got_in)
    axis_name = plan.context(mesh, axis).axis_name
    ospecs = tuple(PartitionSpec(axis_name) if s is None else s for s in got_out)
    stacked = [s is None for s in got_out]

    def on_device(*args: Any) -> tuple[Any, ...]:
        outs = run(*args)
        return tuple(jnp.expand_dims(o, 0) if s else o for o, s in zip(outs, stacked, strict=True))

    mapped = jax.shard_map(on_device, mesh=mesh, in_specs=ispecs, out_specs=ospecs, check_vma=False)
    # Called with concrete arrays, it runs jitted: an eager shard_map traces its body with a
    # trace that compile-time evaluation (a loop's trip count, _loops.py) cannot step out of.
    # Under the caller's own trace it is traced there (threads tracing at once stay apart).
    jitted = jax.jit(mapped)

    def run_global(*args: Any) -> tuple[Any, ...]:
        return tuple((jitted if all(is_known(a) for a in args) else mapped)(*args))

    return run_global, [
        _global_aval(a, s, mesh) for a, s in zip(sig.arg_avals, ispecs, strict=True)
    ]


def _global_aval(aval: Any, spec: Any, mesh: Any) -> Any:
    shape = list(aval.shape)
    for i, entry in enumerate(tuple(spec)):
        if entry is None:
            continue
        names = (entry,) if isinstance(entry, str) else tuple(entry)
        shape[i] *= math.prod(int(mesh.shape[n]) for n in names)
    return jax.ShapeDtypeStruct(tuple(shape), aval.dtype)


def constrained(
    run: Callable[..., tuple[Any, ...]], sig: Signature, mesh: Any, axis: Any, plan: SpmdPlan
) -> Callable[..., tuple[Any, ...]]:
    """A global program under a mesh: its argument and result shardings become constraints."""
    ispecs = _attr_specs(sig.arg_attrs, sig.arg_avals, mesh, axis, plan.sdy_meshes)
    ospecs = _attr_specs(sig.res_attrs, sig.res_avals, mesh, axis, plan.sdy_meshes)
    if all(s is None for s in ispecs + ospecs):
        return run

    def run_constrained(*args: Any) -> tuple[Any, ...]:
        args = tuple(
            a if s is None else constrain(a, mesh, s) for a, s in zip(args, ispecs, strict=True)
        )
        outs = run(*args)
        return tuple(
            o if s is None else constrain(o, mesh, s) for o, s in zip(outs, ospecs, strict=True)
        )

    return run_constrained


def on_mesh(
    interp: Interpreter,
    runner: Callable[[Interpreter], Callable[..., tuple[Any, ...]]],
    sig: Signature,
    plan: SpmdPlan,
    mesh: Any,
    axis: Any,
    in_specs: Any,
    out_specs: Any,
) -> tuple[Callable[..., tuple[Any, ...]], list[Any]]:
    """The entry function as it runs on ``mesh`` (per device, or global with its shardings as
    constraints) and the types of its arguments; ``runner(interp)`` runs it on ``interp``."""
    if mesh is None:
        return runner(interp), list(sig.arg_avals)
    if plan.mesh is not None and out_specs is None:  # one device: results as they are
        out_specs = [PartitionSpec()] * len(sig.res_avals)
    if plan.per_device:
        run = runner(interp.under(plan.context(mesh, axis)))
        return per_device(run, sig, mesh, axis, plan, in_specs, out_specs)
    return constrained(runner(interp), sig, mesh, axis, plan), list(sig.arg_avals)
