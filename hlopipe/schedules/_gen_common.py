"""What the schedule generators share: argument checks, the looped placement, and the choice
among candidate orders by simulating them (used by the interleaved and V-shaped families)."""

from __future__ import annotations

from hlopipe.errors import Keyword, ScheduleError
from hlopipe.schedules import _costs as _c
from hlopipe.schedules._ir import Kind, Schedule

F, B, I, W = Kind.F, Kind.B, Kind.I, Kind.W


def _check(name: str, p: int, m: int, v: int, allowed_v: tuple[int, ...] | None = None) -> None:
    for label, value in (("num_ranks", p), ("num_microbatches", m), ("virtual_stages", v)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ScheduleError(
                f"{name}: ", Keyword(label), f" must be a positive integer, got {value!r}"
            )
    if allowed_v is not None and v not in allowed_v:
        if allowed_v == (1,):
            hint = "; for several stages per rank use interleaved-1f1b or looped-bfs"
        else:
            hint = ""
        raise ScheduleError(
            f"{name} supports ",
            Keyword("virtual_stages", " or ".join(map(str, allowed_v))),
            f", got {v}{hint}",
        )


def _looped(p: int, v: int) -> tuple[int, ...]:
    """Stage s on rank s mod p: rank r holds stages r, r + p, r + 2p, ..."""
    return tuple(s % p for s in range(p * v))


# The two cost models candidates are compared at: unit costs (F = I = W = 1, B = 2) and a
# backward twice the forward with a cheap weight gradient (F = 1, B = 2, I = 1.5, W = 0.5).
_COST_MODELS = (
    {_c.F: 1.0, _c.B: 2.0, _c.I: 1.0, _c.W: 1.0},
    {_c.F: 1.0, _c.B: 2.0, _c.I: 1.5, _c.W: 0.5},
)
# Above this many (stage, microbatch) pairs a generator keeps its textbook rule rather than
# simulating alternatives (each costs a few simulations of the whole schedule).
_SEARCH_LIMIT = 4096


def _measure(s: Schedule) -> tuple[float, ...] | None:
    """Makespan at each cost model, then each rank's most live activations at any of them;
    None when the schedule deadlocks."""
    from hlopipe.schedules._simulate import simulate

    makespans = []
    peaks = [0] * s.num_ranks
    try:
        for costs in _COST_MODELS:
            t = simulate(s, costs)
            makespans.append(t.makespan)
            peaks = [max(peaks[r], t.peak_activations[r]) for r in range(s.num_ranks)]
    except ScheduleError:
        return None
    return (*makespans, *map(float, peaks))


def _choose(reference: Schedule, candidates: list[Schedule]) -> Schedule:
    """The reference (the textbook rule), or the candidate with the shortest step (summed over
    the cost models) among those that run and are no worse than it at every cost model and
    in peak memory. A reference that deadlocks (none of the shipped rules does) is replaced by
    the best candidate that runs."""
    n = len(_COST_MODELS)
    ref = _measure(reference)
    best, best_key = reference, (float("inf"), float("inf"))
    if ref is not None:
        best_key = (sum(ref[:n]), sum(ref[n:]))
    seen = {_key_of(reference)}
    for c in candidates:
        if _key_of(c) in seen:
            continue
        seen.add(_key_of(c))
        got = _measure(c)
        if got is None or (ref is not None and any(g > r for g, r in zip(got, ref, strict=True))):
            continue
        key = (sum(got[:n]), sum(got[n:]))
        if key < best_key:
            best, best_key = c, key
    if ref is None and best is reference:
        raise ScheduleError(f"{reference.name}: no candidate order runs (a bug)")
    return best


def _key_of(s: Schedule) -> tuple:
    return tuple(tuple(row) for row in s.actions.values())
