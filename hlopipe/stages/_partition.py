"""Choosing cut points: an exact bottleneck dynamic programme and repeated-layer detection.

The programme works on *atoms* (contiguous runs of equations between candidate cut points).
A stage made of atoms ``[i, j)`` costs ``compute[i:j].sum() + comm[i]``: its compute plus the
time to receive what crosses its first cut (``comm[0] = 0``). The partition into exactly
``num_stages`` non-empty stages minimising the most expensive stage is found exactly, in
``O(num_stages · n²)`` vectorised steps over the ``n`` atoms; optional per-atom memory with a
per-stage cap excludes stages that do not fit.

Candidate cut points come from the program: when the same block of equations repeats (the
layers of a network), only the boundaries between repetitions are candidates inside the
repeated region, so cuts fall between layers (every g-th layer boundary when there are more
than ``max_candidates`` layers); elsewhere every equation boundary is a candidate, thinned
(keeping the boundary with the fewest crossing bytes in each window) when there are more than
``max_candidates``. The programme is exact over the candidates.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, StageError
from hlopipe.stages._jaxpr import Literal, aval_bytes


@dataclass(frozen=True)
class Partition:
    """The result of :func:`partition`.

    Attributes:
      bounds: ``num_stages + 1`` atom indices; stage ``s`` holds atoms ``bounds[s]:bounds[s+1]``.
      stage_costs: predicted cost of each stage (compute + incoming transfer).
      bottleneck: ``max(stage_costs)``, the minimised objective.
    """

    bounds: tuple[int, ...]
    stage_costs: tuple[float, ...]
    bottleneck: float


def partition(
    compute: Sequence[float] | np.ndarray,
    comm: Sequence[float] | np.ndarray | None,
    num_stages: int,
    *,
    memory: Sequence[float] | np.ndarray | None = None,
    memory_cap: float | None = None,
) -> Partition:
    """Split ``len(compute)`` atoms into ``num_stages`` contiguous stages, minimising the slowest.

    Args:
      compute: cost of each atom.
      comm: ``len(compute) + 1`` transfer costs, ``comm[b]`` charged to the stage that starts
        at boundary ``b`` (``comm[0]`` and ``comm[-1]`` are ignored); ``None`` for no transfers.
      num_stages: number of non-empty stages.
      memory: per-atom memory, summed per stage and checked against ``memory_cap``.
      memory_cap: largest memory a stage may hold (a stage fits when its memory is at most
        the cap plus :func:`memory_slack`, the rounding error of summing ``memory``).

    Returns:
      the optimal :class:`Partition` (ties broken towards earlier cuts).

    Example:
      >>> partition([1, 1, 1, 1], None, 2).bounds
      (0, 2, 4)
    """
    c = np.asarray(compute, dtype=np.float64)
    n = len(c)
    if num_stages < 1:
        raise StageError(Keyword("num_stages"), f" must be at least 1, got {num_stages}")
    if n < num_stages:
        raise StageError(
            f"cannot make {num_stages} stages from {n} indivisible pieces of work "
            f"(equations or layers); ask for at most {n} stages"
        )
    cost = _stage_costs(c, comm, memory, memory_cap)
    bottleneck, choices = _best_splits(cost, num_stages)
    if not np.isfinite(bottleneck):
        raise StageError(
            f"no split into {num_stages} stages fits the memory cap of {memory_cap:g} bytes"
        )
    bounds = [n]
    j = n
    for arg in reversed(choices):
        j = int(arg[j])
        bounds.append(j)
    bounds.append(0)
    bounds.reverse()
    stage_costs = tuple(float(cost[i, j]) for i, j in itertools.pairwise(bounds))
    return Partition(tuple(bounds), stage_costs, bottleneck)


def _stage_costs(
    c: np.ndarray,
    comm: Sequence[float] | np.ndarray | None,
    memory: Sequence[float] | np.ndarray | None,
    memory_cap: float | None,
) -> np.ndarray:
    """``cost[i, j]``: the cost of a stage of atoms ``[i, j)`` (its compute plus receiving
    what crosses boundary ``i``); ``inf`` where ``i >= j`` or the stage exceeds the cap."""
    n = len(c)
    a = np.zeros(n + 1) if comm is None else np.asarray(comm, dtype=np.float64).copy()
    a[0] = 0.0
    prefix = np.concatenate([[0.0], np.cumsum(c)])
    cost = prefix[None, :] - prefix[:, None] + a[:, None]
    idx = np.arange(n + 1)
    invalid = idx[:, None] >= idx[None, :]
    if memory is not None and memory_cap is not None:
        mp = np.concatenate([[0.0], np.cumsum(np.asarray(memory, dtype=np.float64))])
        invalid |= (mp[None, :] - mp[:, None]) > memory_cap + memory_slack(memory)
    return np.where(invalid, np.inf, cost)


def _best_splits(cost: np.ndarray, num_stages: int) -> tuple[float, list[np.ndarray]]:
    """The dynamic programme over a :func:`_stage_costs` matrix: the least bottleneck of
    ``num_stages`` stages over all atoms, and per added stage ``k`` the best place ``arg[j]``
    for stage ``k - 1`` to end when stage ``k`` ends at ``j``."""
    n = cost.shape[0] - 1
    idx = np.arange(n + 1)
    best = cost[0].copy()  # best[j]: bottleneck of the best 1-stage split of atoms [0, j)
    choices = []
    for _ in range(1, num_stages):
        cand = np.maximum(best[:, None], cost)  # stage k-1 ends at i, stage k = [i, j)
        arg = np.argmin(cand, axis=0)
        best = cand[arg, idx]
        choices.append(arg)
    return float(best[n]), choices


# --- repeated layers ------------------------------------------------------------------------


@dataclass(frozen=True)
class RepeatedRun:
    """``count`` repetitions of a ``period``-equation block; layer ``k`` starts at
    ``start + k * period`` (equation index), or at ``at[k]`` when the layers' equations are
    interleaved with others (values made from constants alone, which XLA places where they
    are first read: the first layer of a program from HLO) and ``period`` counts a layer's
    own equations."""

    start: int
    period: int
    count: int
    at: tuple[int, ...] = ()

    @property
    def boundaries(self) -> list[int]:
        """The ``count + 1`` equation indices where layers start (the last: where the last
        layer ends)."""
        if self.at:
            return list(self.at)
        return [self.start + k * self.period for k in range(self.count + 1)]


_SIMPLE = (int, float, str, bool, type(None), tuple)


def _token(eqn: Any, table: dict[Any, int]) -> int:
    """An integer naming the equation's structure (primitive, avals, simple parameters)."""
    params = tuple(
        (
            k,
            v
            if isinstance(v, _SIMPLE)
            else _structure(v)
            if hasattr(v, "eqns") or hasattr(v, "jaxpr")
            else 0,
        )
        for k, v in eqn.params.items()
    )
    key = (
        eqn.primitive.name,
        tuple(v.aval for v in eqn.invars),
        tuple(v.aval for v in eqn.outvars),
        params,
    )
    try:
        return table.setdefault(key, len(table))
    except TypeError:  # an unhashable parameter: fall back to its text
        return table.setdefault(repr(key)[:2000], len(table))


def _structure(jaxpr: Any) -> tuple[Any, ...]:
    """A sub-jaxpr by its equations' primitives and avals (not its identity: a rehydrated
    program makes one ``custom_jvp_call`` jaxpr object per op, equal from layer to layer)."""
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    return tuple(
        (e.primitive.name, tuple(str(v.aval) for v in (*e.invars, *e.outvars))) for e in inner.eqns
    )


def find_repeated_run(
    eqns: Sequence[Any], crossing: np.ndarray, invars: Sequence[Any] | None = None
) -> RepeatedRun | None:
    """The longest stretch of equations made of one block repeated (at least twice).

    Periods are proposed from the distances between equal equations (same primitive, avals and
    simple parameters), verified in one vectorised pass each; the phase (where a layer starts)
    is, among those tiling the most whole periods, the one whose boundaries carry the fewest
    crossing bytes. On ties (after attention and
    after the MLP only the residual stream crosses) it is the phase at which each layer reads
    one contiguous run of the program's arguments (``invars``: a layer's parameters are one
    subtree of the caller's, flattened together), then the earliest.

    With ``invars``, the equations that read no argument, directly or through others (values
    made from constants alone: masks, position tables), are left out of the search: XLA
    places them where they are first read, inside the first layer, and a stage reading them
    makes them itself. The run's boundaries are then given as ``RepeatedRun.at``.
    """
    if invars is None:
        return _repeated_run(eqns, crossing, None)
    keep = _reads_arguments(eqns, invars)
    if len(keep) == len(eqns):
        return _repeated_run(eqns, crossing, _arg_reads(eqns, invars))
    sub = [eqns[i] for i in keep]
    run = _repeated_run(sub, crossing[np.append(keep, len(eqns))], _arg_reads(sub, invars))
    if run is None:
        return None
    where = np.append(keep, len(eqns))
    return RepeatedRun(int(where[run.start]), run.period, run.count,
                       tuple(int(where[b]) for b in run.boundaries))  # fmt: skip


def _reads_arguments(eqns: Sequence[Any], invars: Sequence[Any]) -> np.ndarray:
    """Indices of the equations that depend on an argument of the program."""
    dep = set(invars)
    keep = []
    for i, e in enumerate(eqns):
        if any(not isinstance(v, Literal) and v in dep for v in e.invars):
            dep.update(e.outvars)
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


def _arg_reads(eqns: Sequence[Any], invars: Sequence[Any]) -> list[tuple[int, ...]]:
    """Per equation, the indices of the program arguments it reads directly."""
    index = {v: k for k, v in enumerate(invars)}
    return [
        tuple(index[v] for v in e.invars if not isinstance(v, Literal) and v in index) for e in eqns
    ]


def _gaps(reads: Sequence[tuple[int, ...]], bounds: np.ndarray) -> int:
    """How far the arguments each block ``bounds[k]:bounds[k+1]`` reads are from one
    contiguous range (0: every block reads a contiguous run of arguments)."""
    total = 0
    for a, b in itertools.pairwise(bounds):
        args = {x for r in reads[a:b] for x in r}
        if args:
            total += max(args) - min(args) + 1 - len(args)
    return total


def _repeated_run(
    eqns: Sequence[Any], crossing: np.ndarray, reads: list[tuple[int, ...]] | None
) -> RepeatedRun | None:
    """:func:`find_repeated_run` over ``eqns`` (``reads``: the arguments each reads)."""
    n = len(eqns)
    if n < 4:
        return None
    table: dict[Any, int] = {}
    tok = np.fromiter((_token(e, table) for e in eqns), dtype=np.int64, count=n)
    order = np.lexsort((np.arange(n), tok))
    ts, ps = tok[order], order
    diffs = []
    for lag in range(1, 5):
        if lag >= n:
            break
        same = ts[lag:] == ts[:-lag]
        diffs.append(ps[lag:][same] - ps[:-lag][same])
    alld = np.concatenate(diffs) if diffs else np.zeros(0, dtype=np.int64)
    alld = alld[(alld >= 2) & (alld <= n // 2)]
    if len(alld) == 0:
        return None
    counts = np.bincount(alld)
    periods = np.argsort(counts)[::-1][:8]
    best: tuple[int, int, int, int, int] | None = None  # (coverage, -period, start, period, len)
    for p in periods:
        p = int(p)
        if counts[p] == 0:
            continue
        match = np.concatenate([[False], tok[p:] == tok[:-p], [False]])
        edges = np.flatnonzero(np.diff(match.astype(np.int8)))
        if len(edges) < 2:
            continue
        starts, ends = edges[::2], edges[1::2]
        k = int(np.argmax(ends - starts))
        s, length = int(starts[k]), int(ends[k] - starts[k])
        count = (length + p) // p
        if count < 2:
            continue
        key = (count * p, -p, s, p, length)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        return None
    _, _, s, p, length = best
    region_end = min(s + length + p, n)  # equations [s, region_end) are periodic
    # phase: among the offsets within one period that tile the most whole periods of the
    # region (an offset past the first layer's start drops a layer: its first boundary,
    # inside layer 0, reads the residual stream as a program argument, which crosses free,
    # and can score lower than the real boundaries), the fewest bytes across its boundaries
    whole = (region_end - s - np.arange(p)) // p
    scores = []
    for off in range(p):
        bs = np.arange(s + off, region_end + 1, p)
        scores.append(crossing[bs].sum() / max(len(bs), 1))
    score = np.where(whole == whole.max(), np.asarray(scores), np.inf)
    tied = np.flatnonzero(score <= score.min() * (1 + 1e-9))
    if reads is not None and len(tied) > 1:
        gaps = [_gaps(reads, np.arange(s + int(o), region_end + 1, p)) for o in tied]
        off = int(tied[int(np.argmin(gaps))])
    else:
        off = int(tied[0])
    start = s + off
    real_count = (region_end - start) // p
    if real_count < 2:
        return None
    return RepeatedRun(start, p, real_count)


def crossing_bytes(
    eqns: Sequence[Any],
    outvars: Sequence[Any],
    sizes: dict[Any, int] | None = None,
    remade: Collection[Any] = (),
) -> np.ndarray:
    """Bytes of values defined by an equation and used after boundary ``b`` (``n + 1`` entries).

    Boundary ``b`` lies between equations ``b - 1`` and ``b``. Program inputs and constants
    are not counted (they are fed to each stage directly), nor the values in ``remade`` (a
    stage reading them makes them itself: ``_local``) unless the program returns them; program
    outputs stay live to the end.
    """
    n = len(eqns)
    defined: dict[Any, int] = {}
    last: dict[Any, int] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.invars:
            if not isinstance(v, Literal) and v in defined:
                last[v] = i
        for v in eqn.outvars:
            defined[v] = i
    for v in outvars:
        if not isinstance(v, Literal) and v in defined:
            last[v] = n
    delta = np.zeros(n + 2)
    for v, d in defined.items():
        u = last.get(v)
        if u is None or u <= d or (u < n and v in remade):
            continue
        nb = aval_bytes(v.aval)
        delta[d + 1] += nb
        delta[u + 1] -= nb
    return np.cumsum(delta)[: n + 1]


def candidate_boundaries(
    n: int, crossing: np.ndarray, run: RepeatedRun | None, max_candidates: int = 512
) -> list[int]:
    """Boundaries (0 and ``n`` included) where the partitioner may cut."""

    def thin(lo: int, hi: int) -> list[int]:
        span = list(range(lo, hi + 1))
        if len(span) <= max_candidates:
            return span
        edges = np.linspace(lo, hi + 1, max_candidates + 1).astype(int)
        out = []
        for a, b in itertools.pairwise(edges):
            if b > a:
                out.append(a + int(np.argmin(crossing[a:b])))
        return out

    if run is None:
        cands = thin(0, n)
    else:
        layer = run.boundaries
        if len(layer) > max_candidates:  # keep every g-th layer boundary, still between layers
            g = -(-len(layer) // max_candidates)
            layer = layer[::g] + ([layer[-1]] if (len(layer) - 1) % g else [])
        cands = thin(0, layer[0]) + layer + thin(layer[-1], n)
    return sorted(set(cands) | {0, n})


def memory_slack(memory: Sequence[float] | np.ndarray) -> float:
    """How far above ``memory_cap`` a stage's memory may be and still fit: the rounding error
    of computing a stage's sum as a difference of prefix sums (``len(memory)`` units in the
    last place of the total). Zero in practice for byte counts (integers, summed exactly);
    without it a stage exactly at the cap could be refused by one unit in the last place."""
    m = np.asarray(memory, dtype=np.float64)
    return float(len(m) * np.finfo(np.float64).eps * np.abs(m).sum())


# --- state that must stay on one stage ------------------------------------------------------


class NoLocalCut(StageError):
    """No cut into the stages asked for keeps every state argument on one stage."""


@dataclass(frozen=True)
class StateSpan:
    """Equations ``lo..hi`` (inclusive) touch state ``path``: every read of the argument or of
    a version of it, and the equation making its new value. A cut at a boundary ``b`` with
    ``lo < b <= hi`` would put them on two stages."""

    lo: int
    hi: int
    path: str

    def cuts(self, b: int) -> bool:
        return self.lo < b <= self.hi


def state_spans(
    jaxpr: Any, pairs: Sequence[tuple[int, int]], paths: Sequence[str]
) -> list[StateSpan]:
    """The :class:`StateSpan` of each ``(flat argument, flat output)`` state pair of ``jaxpr``:
    from the first to the last equation touching a version of the state
    (:func:`state_versions`), its reads included."""
    spans = []
    for arg, out in pairs:
        versions = state_versions(jaxpr, arg, out)
        touch = [
            i
            for i, e in enumerate(jaxpr.eqns)
            if any(not isinstance(v, Literal) and v in versions for v in (*e.invars, *e.outvars))
        ]
        if len(touch) > 1:
            spans.append(StateSpan(min(touch), max(touch), paths[arg]))
    return spans


# Primitives whose result holds elements of (some) operands unchanged: a slice, a layer or
# the K half of a cache is still the cache. ``{primitive: the operands it carries}``; None:
# every operand.
_CARRY: dict[str, tuple[int, ...] | None] = {
    "slice": (0,),
    "dynamic_slice": (0,),
    "squeeze": (0,),
    "reshape": (0,),
    "expand_dims": (0,),
    "broadcast_in_dim": (0,),
    "transpose": (0,),
    "convert_element_type": (0,),
    "copy": (0,),
    "copy_p": (0,),
    "rev": (0,),
    "gather": (0,),
    "dynamic_update_slice": (0,),
    "scatter": (0,),
    "concatenate": None,
    "select_n": None,
    "optimization_barrier": None,
}


def state_versions(jaxpr: Any, arg: int, out: int | None) -> set[Any]:
    """The versions of state argument ``arg`` in ``jaxpr``, by data flow: the argument, the
    values carrying its elements (slices of it, a layer of a stacked cache, the K half of a
    ``[b, 2, T, ...]`` one, updated in place, stacked back), and the values on the way from
    it to its new value (output ``out``) with its shape and dtype."""
    a = jaxpr.invars[arg]
    down, carried = {a}, {a}
    for e in jaxpr.eqns:
        ins = [v for v in e.invars if not isinstance(v, Literal)]
        if any(v in down for v in ins):
            down.update(e.outvars)
        which = _CARRY.get(e.primitive.name, ())
        ops = e.invars if which is None else [e.invars[k] for k in which if k < len(e.invars)]
        if e.primitive.name == "select_n":
            ops = e.invars[1:]
        if any(not isinstance(v, Literal) and v in carried for v in ops):
            carried.update(e.outvars)
    versions = carried
    if out is not None:
        o = jaxpr.outvars[out]
        up = set() if isinstance(o, Literal) else {o}
        for e in reversed(jaxpr.eqns):
            if any(v in up for v in e.outvars):
                up.update(v for v in e.invars if not isinstance(v, Literal))
        key = (a.aval.shape, a.aval.dtype)
        versions = versions | {v for v in down & up if (v.aval.shape, v.aval.dtype) == key}
    return versions


def inside_spans(crossing: np.ndarray, spans: Sequence[StateSpan]) -> np.ndarray:
    """``crossing`` with ``inf`` at the boundaries that cut a span: thinning the candidates
    then keeps an admissible boundary in each window that has one."""
    if not spans:
        return crossing
    out = np.asarray(crossing, dtype=np.float64).copy()
    for s in spans:
        out[s.lo + 1 : s.hi + 1] = np.inf
    return out


def admissible(cands: Sequence[int], spans: Sequence[StateSpan], num_stages: int) -> list[int]:
    """The candidate boundaries that cut no span. Raises :class:`NoLocalCut` naming the state
    that leaves fewer than ``num_stages - 1`` cuts."""
    if not spans:
        return list(cands)
    keep = [b for b in cands if not any(s.cuts(b) for s in spans)]
    inner = [b for b in keep if b not in (cands[0], cands[-1])]
    if len(inner) >= num_stages - 1:
        return keep
    worst = max(spans, key=lambda s: sum(s.cuts(b) for b in cands))
    raise NoLocalCut(
        f"no cut into {num_stages} stages keeps state on one stage: state argument "
        f"{worst.path} is read and updated from equation {worst.lo} to {worst.hi}, and "
        f"only {len(inner)} cut point(s) lie outside such spans; ask for at most "
        f"{len(inner) + 1} stages, or place stage_boundary markers"
    )
