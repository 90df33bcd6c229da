"""Choosing a schedule: simulate every name x virtual stages (x microbatch count) and rank them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack

from hlopipe.errors import ScheduleError
from hlopipe.schedules._costs import CostKey, CostKind, GivenCosts
from hlopipe.schedules._generators import get
from hlopipe.schedules._ir import Schedule
from hlopipe.schedules._simulate import resolve_costs, simulate

# Stages per rank tried for each training schedule.
VIRTUAL_CHOICES: dict[str, tuple[int, ...]] = {
    "gpipe": (1,),
    "1f1b": (1,),
    "interleaved-1f1b": (2, 3, 4),
    "looped-bfs": (2, 3, 4),
    "zb-h1": (1,),
    "zb-h2": (1,),
    "zb-v": (2,),
    "interleaved-zb": (2, 3, 4),
    "dualpipev": (2,),
}


@dataclass(frozen=True)
class Candidate:
    """One simulated choice. ``memory`` is the most activations a rank holds, in units of one
    microbatch (of the size ``num_microbatches`` in :func:`best` gives) through one rank's
    share of the model: a (stage, microbatch) pair counts ``1 / v`` of that, scaled by the
    microbatch size. 1F1B's rank 0 holds ``num_ranks``."""

    name: str
    virtual_stages: int
    num_microbatches: int
    schedule: Schedule
    makespan: float
    bubble_fraction: float
    memory: float
    fits: bool

    @property
    def peak_activations(self) -> str:
        return f"{self.memory:g}"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "virtual_stages": self.virtual_stages,
            "num_microbatches": self.num_microbatches,
            "makespan": self.makespan,
            "bubble_fraction": self.bubble_fraction,
            "memory": self.memory,
            "fits": self.fits,
        }


def _scaled_costs(costs: GivenCosts | None, v: int, m: int, base_m: int) -> dict[CostKey, float]:
    """Costs given for one microbatch of the base size through one rank's share (v = 1),
    made per stage of v stages per rank and per microbatch of the size m gives."""
    size = base_m / m  # relative microbatch size
    out: dict[CostKey, float] = {}
    for key, value in resolve_costs(costs).items():
        if key.kind is CostKind.SEND:
            out[key] = value * size
        elif key.stage is not None:
            for t in range(key.stage * v, key.stage * v + v):
                out[CostKey(key.kind, t)] = value * size / v
        else:
            out[key] = value * size / v
    return out


class Search(TypedDict, total=False):
    """The search keywords of :func:`best` and :func:`rank_candidates`, each optional
    (documented in :func:`best`); mypy checks a call's keywords against these."""

    memory_limit: float | None
    microbatch_counts: Sequence[int] | None
    names: Sequence[str] | None
    num_stages: int | None


def _checked(search: Search) -> None:
    """Refuse a keyword :class:`Search` does not name, or a limit that is not positive."""
    ScheduleError.refuse_unknown(search, Search, "best")
    limit = search.get("memory_limit")
    if limit is not None and not limit > 0:
        raise ScheduleError(f"memory_limit must be a positive number, got {limit!r}")


def rank_candidates(
    num_ranks: int,
    num_microbatches: int,
    costs: GivenCosts | None = None,
    **search: Unpack[Search],
) -> list[Candidate]:
    """Every schedule :func:`best` considers, simulated; those that fit first, fastest first.

    Combinations a generator refuses (say dualpipev with fewer than 2p microbatches) are left
    out. Arguments (and the :class:`Search` keywords) as for :func:`best`.
    """
    _checked(search)
    memory_limit = search.get("memory_limit")
    num_stages = search.get("num_stages")
    counts = list(search.get("microbatch_counts") or [num_microbatches])
    for m in counts:
        if not isinstance(m, int) or m < 1:
            raise ScheduleError(f"microbatch counts must be positive integers, got {m!r}")
    resolve_costs(costs)  # bad keys fail here, once
    out: list[Candidate] = []
    for name in search.get("names") or list(VIRTUAL_CHOICES):
        if name not in VIRTUAL_CHOICES:
            raise ScheduleError(
                f"best: unknown training schedule {name!r}; "
                f"choose from {', '.join(VIRTUAL_CHOICES)}"
            )
        for v in VIRTUAL_CHOICES[name]:
            if num_stages is not None and num_ranks * v != num_stages:
                continue
            for m in counts:
                try:
                    s = get(name, num_ranks, m, v)
                except ScheduleError:
                    continue  # a size this generator does not make
                # With the stages fixed, costs are already per stage: only the size scales.
                per_stage_v = 1 if num_stages is not None else v
                t = simulate(s, _scaled_costs(costs, per_stage_v, m, num_microbatches))
                memory = max(t.peak_activations.values()) / v * num_microbatches / m
                fits = memory_limit is None or memory <= memory_limit + 1e-9
                out.append(
                    Candidate(name, v, m, s, round(t.makespan, 9), t.bubble_fraction, memory, fits)
                )
    out.sort(key=lambda c: (not c.fits, c.makespan, c.memory, c.name, c.virtual_stages))
    return out


def best(
    num_ranks: int,
    num_microbatches: int,
    costs: GivenCosts | None = None,
    **search: Unpack[Search],
) -> Schedule:
    """The training schedule with the shortest simulated step whose memory fits.

    Searches every training schedule name x its virtual stage counts (x ``microbatch_counts``
    when given, each splitting the same batch) with :func:`simulate`.

    Args:
      num_ranks, num_microbatches: the pipeline, and the microbatch count ``costs`` are for.
      costs: per-kind costs of one microbatch through one rank's share of the model (as
        :func:`resolve_costs` reads them; ``F@r`` for rank r's share when ranks differ, as a
        profiling step with one stage per rank measures). With v stages per rank each stage
        costs 1/v of that; a microbatch count m' scales every cost by num_microbatches / m'.

    Keyword Args (those of :class:`Search`, each optional):
      memory_limit: the most activations a rank may hold, in units of one microbatch through
        one rank's share (1F1B's rank 0 holds num_ranks); None for no limit.
      microbatch_counts: other microbatch counts allowed (say the divisors of the batch).
      names: the schedule names to consider (default: all training schedules).
      num_stages: for a program already split into this many stages: only schedules with
        ``num_ranks * v == num_stages`` are considered, and ``costs`` are per stage of that
        split (``F@s`` for stage s, as a runtime measures them), not scaled by v.

    Raises ScheduleError when nothing fits, naming the least memory any candidate needs.

    >>> s = best(4, 8, {"F": 1, "B": 2}, memory_limit=4)
    >>> s.name, s.num_stages // s.num_ranks
    ('interleaved-zb', 4)
    """
    ranked = rank_candidates(num_ranks, num_microbatches, costs, **search)
    if not ranked:
        raise ScheduleError(
            f"no schedule for {num_ranks} ranks and {num_microbatches} microbatches"
        )
    if not ranked[0].fits:
        least = min(c.memory for c in ranked)
        raise ScheduleError(
            f"no schedule fits memory_limit={search.get('memory_limit')}: the least any needs "
            f"is {least:g} (units of one microbatch through one rank's share)"
        )
    return ranked[0].schedule
