"""Placement: pipeline ranks onto groups of devices, each group a ``jax.sharding.Mesh``.

A rank is one group of ``prod(shape)`` devices arranged as an N-D mesh with named axes
(``stage_mesh_axes``; ``("data",)`` by default for one axis). Inside a stage, microbatch arrays
are split along their leading (batch) axis over the axis named ``"data"`` (when the mesh has
one and its size divides the microbatch), and replicated over the other axes; parameters follow
the user's ``param_specs`` (``PartitionSpec`` naming the mesh's axes), the program's own
sharding annotations, or sharding propagation (see ``_compile.py``). Ranks may have meshes of
different shapes (``stage_mesh_shape`` as a list, one shape per stage): values moving between
them are resharded on the way. Stage ``s`` runs on rank ``schedule.stage_to_rank[s]``; a rank
holds several stages under interleaved and V schedules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hlopipe.errors import Keyword, RuntimeConfigError

DATA_AXIS = "data"


@dataclass(frozen=True, eq=False)
class Placement:
    """Which devices each rank (and so each stage) uses.

    Attributes:
      meshes: one ``Mesh`` per rank (axes named by ``stage_mesh_axes``).
      stage_to_rank: the rank of each stage (from the schedule).
      batch_size: the microbatch size; arrays with this leading dimension are split over the
        ``"data"`` axis when it divides them.

    Example:
      >>> pl = place(jax.devices()[:16], (2, 2), 4, (0, 1, 2, 3), batch_size=4,
      ...            stage_mesh_axes=("data", "model"))                # doctest: +SKIP
      >>> pl.replicated(0).mesh.shape                                   # doctest: +SKIP
      {'data': 2, 'model': 2}
    """

    meshes: tuple[Mesh, ...]
    stage_to_rank: tuple[int, ...]
    batch_size: int

    @property
    def num_ranks(self) -> int:
        return len(self.meshes)

    @property
    def group_size(self) -> int:
        """Devices of the largest rank (all ranks alike unless the meshes differ)."""
        return max(int(m.devices.size) for m in self.meshes)

    @property
    def uniform(self) -> bool:
        """Whether every rank has a mesh of the same shape and axes."""
        first = self.meshes[0]
        return all(
            m.devices.shape == first.devices.shape and m.axis_names == first.axis_names
            for m in self.meshes
        )

    def rank_of(self, stage: int) -> int:
        return self.stage_to_rank[stage]

    def mesh(self, rank: int) -> Mesh:
        return self.meshes[rank]

    def replicated(self, rank: int) -> NamedSharding:
        """Every device of ``rank`` holds the whole array (parameters without a spec, scalars)."""
        return NamedSharding(self.meshes[rank], PartitionSpec())

    def data_size(self, rank: int) -> int:
        """How many ways ``rank`` splits a microbatch (the size of its ``"data"`` axis)."""
        return int(dict(self.meshes[rank].shape).get(DATA_AXIS, 1))

    def data(self, rank: int, aval: Any) -> NamedSharding:
        """The sharding of a per-microbatch value on ``rank``: split on its leading axis over
        the ``"data"`` axis when that axis is the microbatch and the data axis divides it,
        else replicated (always replicated over the other axes)."""
        shape = tuple(aval.shape)
        n = self.data_size(rank)
        if n > 1 and shape and shape[0] == self.batch_size and shape[0] % n == 0:
            return NamedSharding(self.meshes[rank], PartitionSpec(DATA_AXIS))
        return NamedSharding(self.meshes[rank], PartitionSpec())

    def device_ids(self, rank: int) -> tuple[int, ...]:
        return tuple(int(d.id) for d in self.meshes[rank].devices.flat)


def _check_shape(shape: Any, what: str) -> tuple[int, ...]:
    try:
        out = tuple(shape)
    except TypeError:
        out = ()
    if not out or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in out):
        raise RuntimeConfigError(f"{what} must be a tuple of positive integers, got {shape!r}")
    return out


def rank_mesh_shapes(
    stage_mesh_shape: Any, num_stages: int, stage_to_rank: Sequence[int], num_ranks: int
) -> list[tuple[int, ...]]:
    """One mesh shape per rank from ``stage_mesh_shape``: a tuple for every stage, or a list
    of tuples, one per stage (stages on one rank must agree)."""
    if isinstance(stage_mesh_shape, list):
        if len(stage_mesh_shape) != num_stages:
            raise RuntimeConfigError(
                f"stage_mesh_shape is a list of {len(stage_mesh_shape)} shapes; give one per "
                f"stage ({num_stages}), or one tuple for all"
            )
        per_stage = [
            _check_shape(s, f"stage_mesh_shape[{k}]") for k, s in enumerate(stage_mesh_shape)
        ]
        out: list[tuple[int, ...] | None] = [None] * num_ranks
        for s, shape in enumerate(per_stage):
            r = stage_to_rank[s]
            if out[r] is not None and out[r] != shape:
                first = stage_to_rank.index(r)
                raise RuntimeConfigError(
                    f"stages {first} and {s} run on the same rank {r} but stage_mesh_shape "
                    f"gives them {out[r]} and {shape}; stages sharing a rank share its mesh"
                )
            out[r] = shape
        ndims = {len(s) for s in per_stage}
        if len(ndims) != 1:
            raise RuntimeConfigError(
                f"stage_mesh_shape: every stage's mesh needs the same number of axes (the axes "
                f"are named by stage_mesh_axes), got {per_stage}"
            )
        return [s or per_stage[0] for s in out]
    shape = _check_shape(stage_mesh_shape, "stage_mesh_shape")
    return [shape] * num_ranks


def mesh_axes(stage_mesh_axes: Sequence[str] | None, ndim: int) -> tuple[str, ...]:
    """The axis names: ``stage_mesh_axes``, or ``("data",)`` for a 1-D mesh."""
    if stage_mesh_axes is None:
        if ndim == 1:
            return (DATA_AXIS,)
        raise RuntimeConfigError(
            f"a stage mesh with {ndim} axes needs stage_mesh_axes naming them, e.g. "
            "stage_mesh_axes=('data', 'model') (the axis 'data' splits the microbatches)"
        )
    axes = tuple(stage_mesh_axes) if not isinstance(stage_mesh_axes, str) else (stage_mesh_axes,)
    if len(axes) != ndim or not all(isinstance(a, str) and a for a in axes):
        raise RuntimeConfigError(
            f"stage_mesh_axes={stage_mesh_axes!r} must name each of the {ndim} axes of the "
            "stage mesh with a string"
        )
    if len(set(axes)) != len(axes):
        raise RuntimeConfigError(f"stage_mesh_axes={axes} names an axis twice")
    return axes


def place(
    devices: Sequence[Any] | None,
    stage_mesh_shape: Any,
    num_ranks: int,
    stage_to_rank: Sequence[int],
    *,
    batch_size: int,
    schedule_name: str = "the schedule",
    stage_mesh_axes: Sequence[str] | None = None,
) -> Placement:
    """Cut ``devices`` into ``num_ranks`` consecutive groups, one mesh per rank.

    ``stage_mesh_shape``: a tuple of any length (every rank alike) or a list with one tuple
    per stage (stages on one rank must agree); ``stage_mesh_axes`` names the axes (default
    ``("data",)`` for one axis). Raises RuntimeConfigError when a shape or the axes are
    malformed or the groups do not fit. Devices beyond the groups are left unused.
    """
    devs = list(jax.devices() if devices is None else devices)
    num_stages = len(stage_to_rank)
    shapes = rank_mesh_shapes(stage_mesh_shape, num_stages, stage_to_rank, num_ranks)
    axes = mesh_axes(stage_mesh_axes, len(shapes[0]))
    if not devs:
        raise RuntimeConfigError("no devices given")
    sizes = [math.prod(s) for s in shapes]
    if max(sizes) > len(devs):
        raise RuntimeConfigError(
            f"a stage mesh of shape {shapes[sizes.index(max(sizes))]} needs {max(sizes)} "
            f"devices, only {len(devs)} given",
            *_more_cpu_devices(devs, max(sizes)),
        )
    needed = sum(sizes)
    if needed > len(devs):
        if len(set(shapes)) == 1:
            group = sizes[0]
            raise RuntimeConfigError(
                f"{schedule_name} needs {num_ranks} ranks x {group} devices per stage mesh = "
                f"{needed} devices, only {len(devs)} given (at most {len(devs) // group} ranks "
                "fit); use fewer stages, a smaller ",
                Keyword("stage_mesh_shape"),
                ", or more devices",
                *_more_cpu_devices(devs, needed),
            )
        raise RuntimeConfigError(
            f"{schedule_name} on stage meshes {shapes} needs {needed} devices, only "
            f"{len(devs)} given",
            *_more_cpu_devices(devs, needed),
        )
    meshes = []
    start = 0
    for shape, n in zip(shapes, sizes, strict=True):
        meshes.append(Mesh(np.array(devs[start : start + n]).reshape(shape), axes))
        start += n
    return Placement(tuple(meshes), tuple(stage_to_rank), batch_size)


def _more_cpu_devices(devs: Sequence[Any], needed: int) -> tuple[Any, ...]:
    """On CPU, how to get ``needed`` devices: JAX's ``jax_num_cpu_devices`` (set with
    ``jax.config.update`` before JAX first runs; a front end names its own flag for it)."""
    if devs[0].platform != "cpu":
        return ()
    return (" (on CPU, ask for more: ", Keyword("jax_num_cpu_devices", needed), ")")


def default_group_size(stage_mesh_shape: Any) -> int:
    """Devices of one stage mesh, for the default stage count (the first shape of a list);
    1 when the shape is malformed (``place`` reports it)."""
    shape = stage_mesh_shape[0] if isinstance(stage_mesh_shape, list) else stage_mesh_shape
    try:
        return max(math.prod(int(d) for d in shape), 1) if shape else 1
    except (TypeError, ValueError):
        return 1


def over_data(spec: PartitionSpec | None, shape: Sequence[int], mesh: Any) -> PartitionSpec:
    """``spec`` with the mesh's ``"data"`` axis added on the first dimension it leaves
    unsplit that the data axis divides (ZeRO's sharding of a parameter's optimizer state,
    or of the parameter itself): unchanged when the mesh has no data axis of more than one
    device, ``spec`` already uses it, or no dimension fits (a scalar, a bias of odd size)."""
    sizes = dict(mesh.shape)
    n = sizes.get(DATA_AXIS, 1)
    entries = list(spec or PartitionSpec())
    used = {ax for e in entries if e is not None for ax in ((e,) if isinstance(e, str) else e)}
    if n <= 1 or DATA_AXIS in used:
        return PartitionSpec(*entries)
    entries += [None] * (len(shape) - len(entries))
    for dim, (entry, size) in enumerate(zip(entries, shape, strict=True)):
        if entry is None and size % n == 0:
            entries[dim] = DATA_AXIS
            return PartitionSpec(*entries)
    return PartitionSpec(*entries[: len(spec or ())])


def spec_leaves(
    param_specs: Any,
    treedef: Any,
    avals: Sequence[Any],
    in_paths: Sequence[str],
    placement: Placement,
    flat: list[Any] | None = None,
) -> list[Any]:
    """One ``PartitionSpec`` (or ``None``: propagate) per parameter leaf, checked against
    every rank's mesh: ``param_specs``, else ``flat`` (a program's annotations), else
    replicated everywhere."""
    if flat is not None:
        leaves = list(flat)  # from the program's own annotations
    elif param_specs is None:
        return [PartitionSpec()] * len(avals)
    else:
        try:
            leaves = treedef.flatten_up_to(param_specs)
        except (ValueError, TypeError) as e:
            raise RuntimeConfigError(
                f"param_specs must have the structure of params ({treedef}): {e}"
            ) from None
    for k, (spec, a) in enumerate(zip(leaves, avals, strict=True)):
        name = in_paths[k]
        if spec is None:
            continue
        if not isinstance(spec, PartitionSpec):
            raise RuntimeConfigError(
                f"param_specs{name}: expected a jax.sharding.PartitionSpec or None, got "
                f"{type(spec).__name__} {spec!r}"
            )
        if len(spec) > len(a.shape):
            raise RuntimeConfigError(
                f"param_specs{name}: {spec} has {len(spec)} entries, the parameter has "
                f"{len(a.shape)} dimensions ({jnp.dtype(a.dtype).name}{list(a.shape)})"
            )
        for r, mesh in enumerate(placement.meshes):
            sizes = dict(mesh.shape)
            for dim, entry in enumerate(spec):
                axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
                n = 1
                for ax in axes:
                    if ax not in sizes:
                        raise RuntimeConfigError(
                            f"param_specs{name}: {spec} names mesh axis {ax!r}; the stage "
                            f"meshes have axes {tuple(mesh.axis_names)}"
                        )
                    n *= sizes[ax]
                if a.shape[dim] % n:
                    raise RuntimeConfigError(
                        f"param_specs{name}: {spec} splits dimension {dim} (size "
                        f"{a.shape[dim]}) {n} ways on rank {r}'s mesh {sizes}; it must divide"
                    )
    return leaves


def split_on_data(sharding: Any) -> bool:
    """Whether ``sharding`` splits an array's leading axis on the ``"data"`` axis."""
    spec = tuple(sharding.spec)
    return bool(spec) and spec[0] == DATA_AXIS
