"""SPMD rehydration: what a program needs of a mesh, and the context its per-device code runs in.

* The **plan** (:func:`spmd_plan`): whether a program runs per device (an SPMD-partitioned
  program, as ``jax.jit(f).lower(...).compile().as_text()`` gives), its replica and partition
  counts, its Shardy meshes; collectives without a mesh are refused here, before running.
* The **context** (:class:`Spmd`): where per-device code runs (the mesh axes of a
  ``shard_map``, the replica/partition numbering). It is immutable and belongs to one trace:
  per-device code runs on ``interpreter.under(spmd)``, a view of the interpreter that rule
  contexts carry as ``ctx.spmd``; nothing shared is changed while tracing, so two traces of
  one rehydrated function (two threads, or one inside the other) never see each other's.

The rest of SPMD rehydration: sharding attributes read as text in ``_sharding_text.py``,
running on a mesh (``shard_map`` wrappers, constraints) in ``_on_mesh.py``, the manual parts
of a global program outlined in ``_outline.py``; the collective rules in
``ops/collectives.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import lax

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate._ir import Func, ModuleIR, Op
from hlopipe.rehydrate._sharding_text import parse_sdy_mesh

if TYPE_CHECKING:
    from hlopipe.io import Program
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
            n = found["devices"]
            on = f", on {n} devices" if n > 1 else ""
            raise UnsupportedOpError(
                f"{program.source} is a multi-device program ({what} at {loc}{on}): rehydrate "
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
    declared = program.device_counts  # HLO text's header (io/_hlo.py)
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
    if found["reshaping_boundary"] or found["devices"] > 1:
        return False
    if not (found["top"] or found["boundary"]):
        return False
    declared = program.device_counts
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
    found["devices"] = _entry_devices(mir.funcs[entry])  # how many devices it shows, at least
    seen: set[str] = set()
    spmd_ops = COLLECTIVE_OPS | DEVICE_ID_OPS

    def visit(block: Any, manual: bool) -> None:
        for op in block.ops:
            if op.name in spmd_ops or op.name == "sdy.manual_computation":
                found["any"] = found["any"] or (op.name, op.loc)
                if op.name != "sdy.manual_computation" and not manual:
                    found["top"] = found["top"] or (op.name, op.loc)
                found["devices"] = max(found["devices"], devices_named(op))
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


def devices_named(op: Op) -> int:
    """How many devices a collective shows it runs on, at least (1 where it says no more): the
    ids its groups or pairs name, its ``split_count``, a gather or scatter whose result is that
    many times its operand. A one-device program's collectives are identities; these are not."""
    n = int(op.attrs.get("split_count") or 1)
    for key in ("replica_groups", "source_target_pairs"):
        ids = op.attrs.get(key)
        if isinstance(ids, np.ndarray) and ids.size:
            n = max(n, int(ids.max()) + 1)
    dim = op.attrs.get("all_gather_dim", op.attrs.get("scatter_dimension"))
    shapes = [getattr(a, "shape", None) for a in (*op.operand_avals[:1], *op.result_avals[:1])]
    if isinstance(dim, int) and len(shapes) == 2 and all(sh and len(sh) > dim for sh in shapes):
        small, big = sorted(int(sh[dim]) for sh in shapes)  # type: ignore[index]
        if small and big % small == 0:
            n = max(n, big // small)
    return n


def _entry_devices(func: Func) -> int:
    """How many devices the entry's argument and result shardings tile over, at least."""
    n = 1
    for attrs in (*func.arg_attrs, *func.result_attrs):
        m = re.search(r"devices=\[([\d,\s]+)\]", str(attrs.get("mhlo.sharding", "")))
        if m:
            n = max(n, math.prod(int(v) for v in m.group(1).split(",") if v.strip()))
    return n
