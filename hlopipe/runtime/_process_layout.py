"""Which processes hold each rank of a pipeline (or generator), seen from this process.

Under ``jax.distributed`` every process sees every device; a rank (one stage mesh) lives on
one process's devices or spans whole processes, each holding an equal block of its mesh.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import numpy as np

from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime._placement import Placement


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
