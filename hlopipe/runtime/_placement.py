"""Placement: pipeline ranks onto groups of devices, each group a ``jax.sharding.Mesh``.

A rank is one group of ``prod(stage_mesh_shape)`` devices with one mesh axis, ``"data"``:
inside a stage, microbatch arrays are split along their leading (batch) axis over the group
and parameters are replicated (data parallelism). Stage ``s`` runs on rank
``schedule.stage_to_rank[s]``; a rank holds several stages under interleaved and V schedules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hlopipe.errors import RuntimeConfigError

DATA_AXIS = "data"


@dataclass(frozen=True, eq=False)
class Placement:
    """Which devices each rank (and so each stage) uses.

    Attributes:
      meshes: one ``Mesh`` per rank, axis ``"data"``.
      stage_to_rank: the rank of each stage (from the schedule).
      batch_size: the microbatch size; arrays with this leading dimension are split over the
        ``"data"`` axis when it divides them.

    Example:
      >>> pl = place(jax.devices()[:8], (2,), 4, (0, 1, 2, 3), batch_size=4)  # doctest: +SKIP
      >>> pl.replicated(0).mesh.devices.shape                                   # doctest: +SKIP
      (2,)
    """

    meshes: tuple[Mesh, ...]
    stage_to_rank: tuple[int, ...]
    batch_size: int

    @property
    def num_ranks(self) -> int:
        return len(self.meshes)

    @property
    def group_size(self) -> int:
        return int(self.meshes[0].devices.size)

    def rank_of(self, stage: int) -> int:
        return self.stage_to_rank[stage]

    def replicated(self, rank: int) -> NamedSharding:
        """Every device of ``rank`` holds the whole array (parameters, optimizer state)."""
        return NamedSharding(self.meshes[rank], PartitionSpec())

    def data(self, rank: int, aval: Any) -> NamedSharding:
        """The sharding of a per-microbatch value on ``rank``: split on its leading axis when
        that axis is the microbatch and the group divides it, else replicated."""
        shape = tuple(aval.shape)
        n = self.group_size
        if n > 1 and shape and shape[0] == self.batch_size and shape[0] % n == 0:
            return NamedSharding(self.meshes[rank], PartitionSpec(DATA_AXIS))
        return NamedSharding(self.meshes[rank], PartitionSpec())

    def device_ids(self, rank: int) -> tuple[int, ...]:
        return tuple(int(d.id) for d in self.meshes[rank].devices.flat)


def place(
    devices: Sequence[Any] | None,
    stage_mesh_shape: Sequence[int],
    num_ranks: int,
    stage_to_rank: Sequence[int],
    *,
    batch_size: int,
    schedule_name: str = "the schedule",
) -> Placement:
    """Cut ``devices`` into ``num_ranks`` consecutive groups of ``prod(stage_mesh_shape)``.

    Raises RuntimeConfigError when the mesh shape is malformed or the groups do not fit.
    Devices beyond ``num_ranks`` groups are left unused.
    """
    devs = list(jax.devices() if devices is None else devices)
    shape = tuple(stage_mesh_shape)
    if not shape or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape
    ):
        raise RuntimeConfigError(
            f"stage_mesh_shape must be a tuple of positive integers, got {stage_mesh_shape!r}"
        )
    if len(shape) != 1:
        raise RuntimeConfigError(
            f"stage_mesh_shape={shape}: only one mesh axis (data parallel inside a stage, "
            "axis 'data') is supported; use a 1-tuple such as (2,)"
        )
    group = math.prod(shape)
    if not devs:
        raise RuntimeConfigError("no devices given")
    if group > len(devs):
        raise RuntimeConfigError(
            f"a stage mesh of shape {shape} needs {group} devices, only {len(devs)} given"
        )
    needed = num_ranks * group
    if needed > len(devs):
        raise RuntimeConfigError(
            f"{schedule_name} needs {num_ranks} ranks x {group} devices per stage mesh = "
            f"{needed} devices, only {len(devs)} given (at most {len(devs) // group} ranks "
            f"fit); use fewer stages, a smaller stage_mesh_shape, or more devices"
        )
    meshes = tuple(
        Mesh(np.array(devs[r * group : (r + 1) * group]).reshape(shape), (DATA_AXIS,))
        for r in range(num_ranks)
    )
    return Placement(meshes, tuple(stage_to_rank), batch_size)
