"""Where to cut a traced program: per-equation costs, candidate cut points, the partition.

Between top-level equations (:func:`equation_cuts`; repeated layers narrow the candidates,
see ``_partition``), or over the *atom view* of a program with layer loops
(:func:`choose_cuts`): a layer loop counts as one atom per iteration (one iteration's cost and
memory each) and may be cut between any two. No cut falls inside a state's span
(``StateSpan``). Both hand :func:`~hlopipe.stages.partition` the same arrays
(:func:`partition_between`): the compute and memory of the atoms between consecutive
candidates, and the time to send what crosses each candidate.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hlopipe.errors import Keyword, StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import CostModel, eqn_costs, eqn_memory, roofline_times
from hlopipe.stages._local import find_remade
from hlopipe.stages._partition import (
    Partition,
    RepeatedRun,
    StateSpan,
    admissible,
    candidate_boundaries,
    crossing_bytes,
    find_repeated_run,
    inside_spans,
    partition,
)

if TYPE_CHECKING:
    from hlopipe.stages._loops import LoopReport


def partition_between(
    cands: Sequence[int],
    times: Sequence[float] | np.ndarray,
    cross: np.ndarray,
    memory: Sequence[float] | np.ndarray | None,
    num_stages: int,
    cm: CostModel,
    memory_cap: float | None,
) -> Partition:
    """:func:`partition` of the atoms between consecutive boundaries ``cands``, indices into
    the units that ``times`` and ``memory`` give one entry each (``cross[b]``: the bytes
    crossing boundary ``b``). The partition's ``bounds`` index ``cands``."""
    cb = np.asarray(cands)
    compute = np.diff(_prefix(times)[cb])
    per_atom = None if memory is None or memory_cap is None else np.diff(_prefix(memory)[cb])
    comm = cross[cb] / cm.link_bytes_per_s
    return partition(compute, comm, num_stages, memory=per_atom, memory_cap=memory_cap)


def fixed_partition(
    bounds: Sequence[int], times: Sequence[float] | np.ndarray, cross: np.ndarray, cm: CostModel
) -> Partition:
    """The :class:`Partition` of atoms cut at the given ``bounds`` (0 and the end included):
    each stage's compute plus the time to receive what crosses its first boundary."""
    prefix = _prefix(times)
    costs = tuple(
        float(prefix[b] - prefix[a]) + (float(cross[a]) / cm.link_bytes_per_s if a else 0.0)
        for a, b in itertools.pairwise(bounds)
    )
    return Partition(tuple(int(b) for b in bounds), costs, max(costs))


def layer_counts_check(stage_layers: Sequence[int], found: int, what: str) -> list[int]:
    """The cumulative layer counts where ``stage_layers`` cuts ``found`` repeated layers
    (``what`` names them in the error), the last (``found``) left out.

    Raises:
      StageError: a count is below 1, or the counts do not sum to ``found``.
    """
    counts = list(stage_layers)
    if any(int(c) != c or c < 1 for c in counts):
        raise StageError(
            Keyword("stage_layers", tuple(counts)), ": each stage needs at least 1 layer"
        )
    if sum(counts) != found:
        raise StageError(
            Keyword("stage_layers", tuple(counts)),
            f" sums to {sum(counts)}, but the program has {found} repeated layers ({what}); "
            f"give counts that sum to {found}",
        )
    return list(itertools.accumulate(counts))[:-1]


def layer_cuts(
    closed: Any, stage_layers: Sequence[int], cm: CostModel
) -> tuple[list[int], Partition, RepeatedRun, tuple[np.ndarray, np.ndarray]]:
    """The cut of ``closed`` between its repeated layers (found as :func:`equation_cuts`
    finds them), ``stage_layers[s]`` layers in stage ``s``: the first stage also holds what
    comes before the first layer, the last what comes after the last.

    Raises:
      StageError: the program has no repeated layers, or the counts do not sum to theirs.
    """
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    flops, nbytes = eqn_costs(eqns)
    cross = crossing_bytes(eqns, jaxpr.outvars, remade=find_remade(jaxpr).remade)
    run = find_repeated_run(eqns, cross, jaxpr.invars)
    if run is None:
        raise StageError(
            Keyword("stage_layers", tuple(stage_layers)),
            " was given, but the program has no repeated layers to cut between; pass ",
            Keyword("num_stages"),
            " instead",
        )
    at = layer_counts_check(stage_layers, run.count, "found as a repeated block of equations")
    starts = [0] + [run.boundaries[c] for c in at]
    times = roofline_times(cm, flops, nbytes)
    part = fixed_partition([*starts, len(eqns)], times, cross, cm)
    return starts, part, run, (flops, nbytes)


def _prefix(xs: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(xs)])


# --- between top-level equations -------------------------------------------------------------


def equation_cuts(
    closed: Any,
    num_stages: int,
    cm: CostModel,
    memory_cap: float | None,
    max_candidates: int,
    spans: Sequence[StateSpan] = (),
) -> tuple[list[int], Partition, RepeatedRun | None, tuple[np.ndarray, np.ndarray]]:
    """The best cut of ``closed`` between top-level equations: each stage's first equation,
    the :class:`Partition`, the repeated layers found, and the equations' (FLOPs, bytes)."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    if not eqns:
        raise StageError("the program has no equations to split")
    flops, nbytes = eqn_costs(eqns)
    cross = crossing_bytes(eqns, jaxpr.outvars, remade=find_remade(jaxpr).remade)
    run = find_repeated_run(eqns, cross, jaxpr.invars)
    cands = candidate_boundaries(len(eqns), inside_spans(cross, spans), run, max_candidates)
    cands = admissible(cands, spans, num_stages)
    memory = eqn_memory(jaxpr) if memory_cap is not None else None
    times = roofline_times(cm, flops, nbytes)
    part = partition_between(cands, times, cross, memory, num_stages, cm, memory_cap)
    return [int(cands[b]) for b in part.bounds[:-1]], part, run, (flops, nbytes)


# --- over the atom view ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopCuts:
    """Where :func:`choose_cuts` cuts: ranges per cut loop, cuts before top-level equations,
    cuts after ranges, and the partition over atoms."""

    ranges: dict[int, list[tuple[int, int]]]
    cuts_before: set[int]
    cuts_in: dict[int, set[int]]
    partition: Any
    cut_at: tuple[tuple[int, int], ...] = ()  # the atoms (equation, iteration) cut before

    def iterations_per_stage(self, loop: int, length: int) -> list[int]:
        """How many iterations of the loop at equation ``loop`` (of ``length``) each stage
        runs."""
        edges = [0]
        for k, it in self.cut_at:
            edges.append(it if k == loop else 0 if k < loop else length)
        edges.append(length)
        return [b - a for a, b in itertools.pairwise(edges)]


@dataclass(frozen=True)
class _Atoms:
    """A program's atom view. ``where[j]``: atom ``j``'s (top-level equation, iteration);
    ``times`` and ``memory`` per atom (a layer loop's shared evenly by its iterations);
    ``cross[j]``: the bytes crossing the boundary before atom ``j`` (and the program's end);
    ``inner``: the atoms that start a loop iteration other than the first."""

    where: list[tuple[int, int]]
    times: list[float]
    memory: list[float]
    cross: np.ndarray
    inner: list[int]


def choose_cuts(
    closed: Any,
    loops: dict[int, LoopReport],
    num_stages: int,
    cm: CostModel,
    memory_cap: float | None,
    max_candidates: int,
    spans: Sequence[Any] = (),
    stage_layers: Sequence[int] | None = None,
) -> LoopCuts:
    """The exact bottleneck partition of ``closed`` where each layer loop counts as one atom
    per iteration (cost and memory per iteration) and may be cut between any two, but never
    inside a state's ``spans`` (``_partition.StateSpan`` over equations). With
    ``stage_layers``, the one layer loop is cut after those counts of iterations instead.

    Raises:
      StageError: ``stage_layers`` with more than one layer loop, or counts that do not sum to
        its length.
    """
    atoms = _atoms(closed.jaxpr, loops, cm)
    if stage_layers is not None:
        if len(loops) != 1:
            raise StageError(
                Keyword("stage_layers", tuple(stage_layers)),
                f" was given, but the program has {len(loops)} layer loops; it cuts one",
            )
        ((k, report),) = loops.items()
        at = layer_counts_check(stage_layers, int(report.length or 0), "a layer loop's length")
        cut_at = [(k, c) for c in at]
        index = {w: j for j, w in enumerate(atoms.where)}
        bounds = [0, *(index[w] for w in cut_at), len(atoms.where)]
        fixed = fixed_partition(bounds, atoms.times, atoms.cross, cm)
        return _loop_cuts(loops, cut_at, fixed, _first_apart(closed.jaxpr, loops))
    cands = _atom_candidates(atoms, spans, num_stages, max_candidates)
    part = partition_between(
        cands, atoms.times, atoms.cross, atoms.memory, num_stages, cm, memory_cap
    )
    cut_at = [atoms.where[int(cands[b])] for b in part.bounds[1:-1]]
    return _loop_cuts(loops, cut_at, part, _first_apart(closed.jaxpr, loops))


def _first_apart(jaxpr: Any, loops: dict[int, LoopReport]) -> set[int]:
    """The layer loops whose first iteration runs as a range of its own when the loop is
    cut: those whose carried floating-point state starts from a value the program makes (the
    embedding), not an argument. That iteration's rows are then an argument of their own, so
    the stage's autodiff can run it outside the loop without copying any rows, and redo that
    value in the backward, as the unrolled form does, where the loop would keep it as its
    first carry (``_autodiff._scan_under_policy``)."""
    args = set(jaxpr.invars)
    apart: set[int] = set()
    for k, report in loops.items():
        e = jaxpr.eqns[k]
        C, K = int(e.params["num_consts"]), int(e.params["num_carry"])
        for j, v in enumerate(e.invars[C : C + K]):
            made = isinstance(v, J.Literal) or v not in args
            if j not in report.invariant and made and J.is_inexact(v.aval):
                apart.add(k)
    return apart


def _atoms(jaxpr: Any, loops: dict[int, LoopReport], cm: CostModel) -> _Atoms:
    """The atom view of ``jaxpr`` with the layer loops ``loops`` (by equation)."""
    eqns = jaxpr.eqns
    flops, nbytes = eqn_costs(eqns)
    times = roofline_times(cm, flops, nbytes)
    cross = crossing_bytes(eqns, jaxpr.outvars, remade=find_remade(jaxpr).remade)
    mem = eqn_memory(jaxpr)
    where: list[tuple[int, int]] = []
    t_atoms, c_atoms, m_atoms, inner = [], [], [], []
    for k in range(len(eqns)):
        n = int(loops[k].length or 1) if k in loops else 1
        for it in range(n):
            if it:
                inner.append(len(where))
            where.append((k, it))
            t_atoms.append(times[k] / n)
            m_atoms.append(mem[k] / n)
            c_atoms.append(cross[k])
    c_atoms.append(cross[len(eqns)])
    return _Atoms(where, t_atoms, m_atoms, np.asarray(c_atoms), inner)


def _atom_candidates(
    atoms: _Atoms, spans: Sequence[Any], num_stages: int, max_candidates: int
) -> list[int]:
    """The boundaries between atoms the partitioner may cut at: those between equations,
    thinned as :func:`equation_cuts` does, and every one between two iterations of a loop;
    none inside a state's span."""
    first = {k: j for j, (k, _) in reversed(list(enumerate(atoms.where)))}
    last = {k: j for j, (k, _) in enumerate(atoms.where)}
    # an equation span as atoms: no cut after the first atom of ``lo`` up to the last of ``hi``
    atom_spans = [StateSpan(first[x.lo], last[x.hi], x.path) for x in spans]
    crossing = inside_spans(atoms.cross, atom_spans)
    thinned = candidate_boundaries(len(atoms.where), crossing, None, max_candidates)
    return admissible(sorted(set(thinned) | set(atoms.inner)), atom_spans, num_stages)


def _loop_cuts(
    loops: dict[int, LoopReport],
    cut_at: list[tuple[int, int]],
    part: Partition,
    first_apart: Collection[int] = (),
) -> LoopCuts:
    """The :class:`LoopCuts` of cuts before the atoms ``cut_at`` (equation, iteration): at a
    first iteration, before the equation; at a later one, inside the loop, which then runs
    as ranges of iterations (a loop in ``first_apart`` with its first iteration a range of its
    own, no cut after it: :func:`_first_apart`)."""
    iters: dict[int, list[int]] = {}
    before: set[int] = set()
    for k, it in cut_at:
        if it:
            iters.setdefault(k, []).append(it)
        else:
            before.add(k)
    ranges, cuts_in = {}, {}
    for k, its in iters.items():
        length = int(loops[k].length or 0)
        pts = sorted({0, *its, length} | ({1} if k in first_apart and length > 1 else set()))
        ranges[k] = [(a, b) for a, b in itertools.pairwise(pts)]
        cuts_in[k] = {r for r, (_, b) in enumerate(ranges[k]) if b in its}
    return LoopCuts(ranges, before, cuts_in, part, tuple(sorted(cut_at)))
