"""SPMD rehydration in one place: what a program needs of a mesh, and how it runs on one.

* The **plan** (:func:`spmd_plan`): whether a program runs per device (an SPMD-partitioned
  program, as ``jax.jit(f).lower(...).compile().as_text()`` gives), its replica and partition
  counts, its Shardy meshes; collectives without a mesh are refused here, before running.
* The **context** (:class:`Spmd`): where per-device code runs (the mesh axes of a
  ``shard_map``, the replica/partition numbering). It is immutable and belongs to one trace:
  per-device code runs on ``interpreter.under(spmd)``, a view of the interpreter that rule
  contexts carry as ``ctx.spmd``; nothing shared is changed while tracing, so two traces of
  one rehydrated function (two threads, or one inside the other) never see each other's.
* **Shardings**: HLO sharding strings and Shardy attributes read as ``PartitionSpec`` over
  the user's mesh (:func:`hlo_sharding_spec`, :func:`parse_sdy_shardings`, :class:`AxisMap`).
* **Running on a mesh**: a per-device program under ``jax.shard_map`` (:func:`per_device`),
  a global one with its shardings as constraints (:func:`constrained`), and the manual
  (per-device) parts of a global program outlined into one op each
  (:func:`outline_manual_parts`) that runs its region under ``shard_map``
  (:func:`region_under_shard_map`).

The collective rules themselves (``all_reduce``...) live in ``ops/collectives.py``.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate._ir import Block, Func, ModuleIR, Op, OpaqueAttr, _free_values, _liveness
from hlopipe.rehydrate._known import is_known

if TYPE_CHECKING:
    from hlopipe.io import Program
    from hlopipe.rehydrate._interpreter import Interpreter
    from hlopipe.rehydrate.registry import RuleContext

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
    """The context of a program run per device along ``axes`` of ``mesh``; a count the
    program does not declare (None) follows from the mesh and the other count."""
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


def require_spmd(ctx: RuleContext) -> Spmd:
    """The SPMD context of the per-device code ``ctx``'s op is in; refuses a collective
    outside any."""
    spmd = ctx.spmd
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
        for k, slot in zip(live_idx, slots, strict=True):
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


def attr_text(a: Any) -> str:
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


# ---- the plan ----------------------------------------------------------------------------------


@dataclass
class SpmdPlan:
    """What a program needs of a mesh (see :func:`spmd_plan`).

    Attributes:
      per_device: the whole program runs once per device, under ``jax.shard_map``.
      boundary: the program has manual parts (``SPMDFullToShardShape``... custom calls).
      num_partitions, num_replicas: the counts the program declares, where it does.
      sdy_meshes: the program's Shardy meshes by name.
      mesh: the mesh to run on when the user gives none: one device, for an HLO program
        that runs on one (its collectives are identities there, as in XLA).
    """

    per_device: bool = False
    boundary: bool = False
    num_partitions: int | None = None
    num_replicas: int | None = None
    sdy_meshes: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    mesh: Any = None

    def context(self, mesh: Any, axis: Any) -> Spmd:
        """The SPMD context of the whole program run per device on ``mesh``."""
        return make_spmd(mesh, mesh_axes(mesh, axis), self.num_partitions, self.num_replicas)


def spmd_plan(program: Program, mir: ModuleIR, mesh: Any, partitioned: bool | None) -> SpmdPlan:
    """What the program needs of a mesh: whether it runs per device, its replica and
    partition counts, its Shardy meshes. Refuses collectives without a mesh, before running."""
    found = _collective_uses(mir, program.entry)
    plan = SpmdPlan(boundary=bool(found["boundary"]))
    if mesh is None and _runs_on_one_device(program, found):
        return SpmdPlan(per_device=True, num_partitions=1, num_replicas=1, mesh=one_device_mesh())
    if mesh is None:
        if found["any"] or found["boundary"]:
            what, loc = found["any"] or found["boundary"]
            raise UnsupportedOpError(
                f"{program.source} is a multi-device program ({what} at {loc}): rehydrate "
                "with mesh=... axis=... (a jax.sharding.Mesh and the axis its devices run "
                "along) to run it"
            )
        return plan
    plan.num_partitions, plan.num_replicas = _device_counts(program)
    plan.sdy_meshes = _sdy_meshes(program)
    if partitioned is None:
        plan.per_device = bool(found["top"]) and not found["boundary"]
    else:
        plan.per_device = bool(partitioned)
    return plan


def _device_counts(program: Program) -> tuple[int | None, int | None]:
    """The program's partition and replica counts, where it declares them."""
    parts = reps = None
    with program.context:
        attrs = program.module.operation.attributes
        if "mhlo.num_partitions" in attrs:
            parts = int(str(attrs["mhlo.num_partitions"]).split(":")[0])
        if "mhlo.num_replicas" in attrs:
            reps = int(str(attrs["mhlo.num_replicas"]).split(":")[0])
    declared = program.extra.get("device_counts")  # HLO text's header (io/_load.py)
    if parts is None and declared is not None:
        reps, parts = declared
        reps = reps if reps is not None else (1 if parts else None)
    return parts, reps


def _runs_on_one_device(program: Program, found: dict[str, Any]) -> bool:
    """Whether XLA runs this HLO program on one device (one replica, one partition, as its
    header says or leaves to XLA's defaults), where its collectives are identities. An
    HloModuleProto declares no counts: XLA's defaults hold. StableHLO declares them as module
    attributes; without those its collectives stay refused without a mesh. Manual-part
    boundaries that keep their shape (one shard: the whole array) are identities there too."""
    if found["reshaping_boundary"] or not (found["top"] or found["boundary"]):
        return False
    declared = program.extra.get("device_counts")
    if declared is None and program.format.rsplit("/", 1)[-1] == "hlo-proto":
        declared = (None, None)
    return declared is not None and all(n in (None, 1) for n in declared)


def one_device_mesh() -> Any:
    """The mesh a one-device program's collectives run on when the user gives none."""
    return jax.sharding.Mesh(np.asarray(jax.devices()[:1]), ("hlopipe_one_device",))


def _sdy_meshes(program: Program) -> dict[str, tuple[tuple[str, int], ...]]:
    """The program's Shardy meshes: ``sdy.mesh`` ops, or (in HLO) frontend attributes."""
    meshes: dict[str, tuple[tuple[str, int], ...]] = {}
    with program.context:
        attrs = program.module.operation.attributes
        if "mhlo.frontend_attributes" in attrs:
            text = str(attrs["mhlo.frontend_attributes"]).replace("\\22", '"')
            for m in re.finditer(r"(\w+)\s*=\s*#sdy.mesh<\[([^\]]*)\]>", text):
                meshes[m.group(1)] = parse_sdy_mesh(m.group(2))
        for top in program.module.body.operations:
            mop = top.operation
            if mop.name == "sdy.mesh":
                sym = str(mop.attributes["sym_name"]).strip('"')
                meshes[sym] = parse_sdy_mesh(str(mop.attributes["mesh"]))
    return meshes


def _collective_uses(mir: ModuleIR, entry: str) -> dict[str, Any]:
    """The first collective anywhere ("any"), the first outside shard_map parts ("top"), and
    whether the program has manual-part boundaries (custom calls) ("boundary")."""
    found: dict[str, Any] = {"any": None, "top": None, "boundary": None}
    found["reshaping_boundary"] = None  # a boundary whose shard is not the whole array
    seen: set[str] = set()
    spmd_ops = COLLECTIVE_OPS | DEVICE_ID_OPS

    def visit(block: Any, manual: bool) -> None:
        for op in block.ops:
            if op.name in spmd_ops or op.name == "sdy.manual_computation":
                found["any"] = found["any"] or (op.name, op.loc)
                if op.name != "sdy.manual_computation" and not manual:
                    found["top"] = found["top"] or (op.name, op.loc)
            target = op.attrs.get("call_target_name")
            if op.name == "stablehlo.custom_call" and target in MANUAL_BOUNDARIES:
                found["boundary"] = found["boundary"] or (f"custom call @{target}", op.loc)
                shapes = [getattr(a, "shape", None) for a in op.operand_avals + op.result_avals]
                known = {tuple(sh) for sh in shapes if sh is not None}
                if None in shapes or len(known) != 1:  # an opaque type counts as a change
                    found["reshaping_boundary"] = found["boundary"]
            if op.name == "func.call":
                callee = op.attrs.get("callee")
                if callee in mir.funcs and callee not in seen:
                    seen.add(callee)
                    visit(mir.funcs[callee].block, manual)
            inner = manual or op.name == "sdy.manual_computation"
            for region in op.regions:
                visit(region, inner)

    seen.add(entry)
    visit(mir.funcs[entry].block, False)
    return found


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


# ---- manual parts of a global program (shard_map lowered without Shardy) -----------------------

_ENTER = ("SPMDFullToShardShape", "xla.sdy.GlobalToLocalShape")
_EXIT = ("SPMDShardToFullShape", "xla.sdy.LocalToGlobalShape")


def _target(op: Any) -> str | None:
    if op.name != "stablehlo.custom_call":
        return None
    return op.attrs.get("call_target_name")


class _Side:
    """One side of a manual part: the values that cross it, paired inside / outside, with
    their shardings. Shardy's boundaries carry tuples; their elements cross one by one."""

    def __init__(self, name: str):
        self.name = name  # "in" or "out"
        self.inside: list[int] = []
        self.outside: list[int] = []
        self.specs: list[Any] = []
        self.tuples: dict[int, tuple[Op, list[Any]]] = {}  # tuple value -> (its op, specs)

    def cross(self, op: Op, producer: dict[int, Op]) -> int | None:
        """A boundary custom call; returns the value it makes inside (None for a tuple)."""
        specs = _boundary_specs(op, producer, self.name)
        if isinstance(op.result_avals[0], OpaqueAttr):
            self.tuples[op.results[0]] = (op, specs)
            return None
        return self._add(op.operands[0], op.results[0], specs[0])

    def cross_element(self, gte: Op) -> int:
        """A ``get_tuple_element`` of a boundary's tuple; returns the value made inside."""
        src, specs = self.tuples[gte.operands[0]]
        i = int(gte.attrs["index"])
        return self._add(src.operands[i], gte.results[0], specs[i])

    def _add(self, before: int, after: int, spec: Any) -> int:
        # before/after the boundary op: entering, "after" is inside; leaving, "before" is
        inside, outside = (after, before) if self.name == "in" else (before, after)
        self.inside.append(inside)
        self.outside.append(outside)
        self.specs.append(spec)
        return inside


@dataclass
class _ManualPart:
    enter: _Side = field(default_factory=lambda: _Side("in"))
    exit: _Side = field(default_factory=lambda: _Side("out"))
    ops: list[Op] = field(default_factory=list)  # the ops inside, in order
    moved: set[int] = field(default_factory=set)  # ids of the ops that leave the outer block
    manual: set[int] = field(default_factory=set)  # values inside

    def per_device(self, vids: Sequence[int]) -> bool:
        return any(
            v in self.manual or v in self.enter.tuples or v in self.exit.tuples for v in vids
        )


def _find_manual_part(block: Block, producer: dict[int, Op]) -> _ManualPart:
    """The boundary ops of ``block``'s manual part and the ops between them."""
    part = _ManualPart()
    for op in block.ops:
        t = _target(op)
        first = op.operands[0] if op.operands else None
        is_gte = op.name == "stablehlo.get_tuple_element"
        if t in _ENTER:
            inside = part.enter.cross(op, producer)
            part.manual.update(() if inside is None else (inside,))
        elif is_gte and first in part.enter.tuples:
            part.manual.add(part.enter.cross_element(op))
        elif t in _EXIT:
            part.exit.cross(op, producer)
        elif is_gte and first in part.exit.tuples:
            part.exit.cross_element(op)
        elif any(v in part.manual or v in part.enter.tuples for v in (*op.operands, *op.captures)):
            part.ops.append(op)
            part.manual.update(op.results)
        else:
            continue
        part.moved.add(id(op))
    return part


def _outlined_op(func: Func, part: _ManualPart, avals: dict[int, Any]) -> Op:
    """The ``hlopipe.manual_computation`` op that runs ``part`` under ``shard_map``."""
    args, operands = list(part.enter.inside), list(part.enter.outside)
    in_specs = list(part.enter.specs)
    returns, results = tuple(part.exit.inside), tuple(part.exit.outside)
    # values of the global program the manual part reads are passed in whole (replicated)
    tmp = Block(tuple(args), tuple(avals[a] for a in args), part.ops, returns, "")
    for vid in sorted(_free_values([tmp])):
        args.append(vid)
        operands.append(vid)
        in_specs.append("{replicated}")
    region = Block(
        tuple(args), tuple(avals[a] for a in args), part.ops, returns, "stablehlo.return"
    )
    _liveness(region)
    return Op(
        "hlopipe.manual_computation",
        tuple(operands),
        results,
        {"in_specs": in_specs, "out_specs": list(part.exit.specs)},
        (region,),
        region.ops[0].loc if region.ops else func.loc,
        tuple(avals[r] for r in results),
        tuple(avals[o] for o in operands),
    )


def outline_manual_parts(func: Func) -> Func:
    """The function with the ops between ``SPMDFullToShardShape`` (or Shardy's
    ``xla.sdy.GlobalToLocalShape``) and ``SPMDShardToFullShape`` (``LocalToGlobalShape``)
    moved into one ``hlopipe.manual_computation`` op, which runs them under ``shard_map``.
    Shardy's boundaries carry tuples; the ``get_tuple_element`` ops on them become the
    region's arguments and the outlined op's results. The cached function is left as it is."""
    block = func.block
    if not any(_target(op) in _ENTER for op in block.ops):
        return func
    avals: dict[int, Any] = dict(zip(block.args, block.arg_avals, strict=True))
    producer: dict[int, Op] = {}
    for op in block.ops:
        for vid, aval in zip(op.results, op.result_avals, strict=True):
            avals[vid] = aval
            producer[vid] = op
    part = _find_manual_part(block, producer)
    rest = [op for op in block.ops if id(op) not in part.moved]
    for op in rest:
        if part.per_device(op.operands):
            raise UnsupportedOpError(
                f"{op.name} at {op.loc} uses a per-device value outside its manual part"
            )
    if part.per_device(block.returns):
        raise UnsupportedOpError(f"@{func.name} returns a per-device value of a manual part")
    ops = toposort([*rest, _outlined_op(func, part, avals)])
    new = Block(block.args, block.arg_avals, ops, block.returns, block.terminator)
    _liveness(new)
    return Func(func.name, new, func.loc, func.arg_attrs, func.result_attrs)


def _boundary_specs(op: Op, producer: dict[int, Op], side: str) -> list[Any]:
    """Per value, the sharding of a manual-part boundary: an HLO sharding string or a
    ``("sdy", ref, dims)`` triple."""
    t = _target(op)
    if t in ("xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"):
        fa = op.attrs.get("mhlo.frontend_attributes") or {}
        text = fa.get(f"xla.sdy.{side}_shardings")
        if text is None:
            raise UnsupportedOpError(f"{t} at {op.loc} without xla.sdy.{side}_shardings")
        return [("sdy", ref, dims) for ref, dims in parse_sdy_shardings(str(text))]
    if side == "in":
        src = producer.get(op.operands[0])
        if src is not None and _target(src) == "Sharding" and "mhlo.sharding" in src.attrs:
            return [str(src.attrs["mhlo.sharding"])]
        return ["{replicated}"]
    return [str(op.attrs.get("mhlo.sharding", "{replicated}"))]


def toposort(ops: list[Op]) -> list[Op]:
    """``ops`` ordered so each comes after the ops whose results it uses (operands and values
    its regions capture); among the ops that may come next, the earliest in ``ops`` does.
    Kahn's algorithm with a heap: O(n log n) in the ops, plus their operands."""
    index_of = {r: i for i, op in enumerate(ops) for r in op.results}
    users: list[list[int]] = [[] for _ in ops]
    waiting = [0] * len(ops)
    for i, op in enumerate(ops):
        deps = {index_of[v] for v in (*op.operands, *op.captures) if v in index_of}
        deps.discard(i)
        waiting[i] = len(deps)
        for d in deps:
            users[d].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    out: list[Op] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(ops[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(ops):
        raise UnsupportedOpError("cannot order the program around its manual parts (a cycle)")
    return out
