"""The pipeline schedules a plan may choose, priced: every training schedule hlopipe's runtime
runs (``schedules.names()`` but ``inference``).

GPipe, 1F1B and interleaved 1F1B are priced by the closed forms of :mod:`._formulas`. The
others (looped BFS, ZB-H1, ZB-H2, interleaved zero bubble, ZB-V, DualPipeV) by the runtime's
own generator and simulator (``schedules.get``, ``schedules.simulate``,
``schedules.peak_in_flight``): the schedule the runtime would run, simulated with uniform
stages whose forward, input-gradient and weight-gradient times (``F``, ``I``, ``W``; Qi et
al. 2023, "Zero Bubble Pipeline Parallelism", split the backward in these two) are the
plan's shares of a rank's time. What the simulation gives is the *idle ratio*: the idle time
on a rank over ``p - 1`` rank-microbatch times (1 for 1F1B, ``1 / v`` interleaved;
``F + I - W`` for ZB-H1 with ``F + I + W = 1`` where ``W`` is at most ``F`` and ``I``, Qi et
al.'s ``(p - 1)(T_F + T_B - T_W)`` bubble; the simulation covers the other cases). A step's
pipeline time is then ``m max t + ratio (sum t - max t)``, which for 1F1B is
:func:`._formulas.pipeline_time`. The cost shares are rounded to 1/64 so that a search
simulates each schedule a few times.
"""

from __future__ import annotations

import functools

from hlopipe import schedules
from hlopipe.errors import ScheduleError
from hlopipe.planner import _formulas as F

#: Every schedule a plan may name (canonical names), those priced in closed form first.
CLOSED_FORM = ("1f1b", "interleaved-1f1b", "gpipe")
SIMULATED = ("looped-bfs", "zb-h1", "zb-h2", "interleaved-zb", "zb-v", "dualpipev")
ALL = CLOSED_FORM + SIMULATED
#: Virtual stages a search tries for each (the generators' own choices: V shapes hold two).
SEARCHED_VIRTUAL: dict[str, tuple[int, ...]] = {
    "1f1b": (1,), "gpipe": (1,), "zb-h1": (1,), "zb-h2": (1,), "interleaved-1f1b": (2, 4),
    "looped-bfs": (2, 4), "interleaved-zb": (2, 4), "zb-v": (2,), "dualpipev": (2,),
}  # fmt: skip
_GRAIN = 64  # cost shares in 1/64ths


def canonical(name: str) -> str:
    """The schedule's canonical name (``schedules.canonical_name``)."""
    return schedules.canonical_name(name)


def runs(name: str, num_ranks: int, num_microbatches: int, virtual: int) -> bool:
    """Whether the runtime's generator makes ``name`` for this shape (some need more
    microbatches than ranks, or a multiple of them)."""
    made = _schedule(canonical(name), num_ranks, num_microbatches, virtual)
    return not isinstance(made, ScheduleError)


def stage_ranks(name: str, num_ranks: int, virtual: int) -> tuple[int, ...]:
    """The rank holding each stage: ``s mod p`` for the looped schedules, a V (stages ``r``
    and ``2p - 1 - r`` on rank ``r``) for ZB-V and DualPipeV."""
    stages = num_ranks * virtual
    if canonical(name) in ("zb-v", "dualpipev"):
        return tuple(s if s < num_ranks else 2 * num_ranks - 1 - s for s in range(stages))
    return tuple(s % num_ranks for s in range(stages))


def in_flight(name: str, num_ranks: int, num_microbatches: int, virtual: int) -> list[int]:
    """Microbatches each rank keeps activations of, summed over its stages (each of a rank's
    stages holding ``1 / virtual`` of its layers).

    Interleaved 1F1B with ``num_microbatches`` not a multiple of ``num_ranks``: what the rank
    holds at once (:func:`_rank_peaks`) under the order the runtime's generator makes. Its
    rounds (even ones of ``m // p`` or more microbatches, or of ``p`` with a shorter last) and
    warm-up (``(v - 1)`` first rounds and one or two forwards a rank below) are chosen by
    simulating candidates, so no closed form follows them. A free search never prices such a
    layout (:func:`._search.layouts`); ``split --device`` does, once.

    Raises:
      ScheduleError: the runtime's generator makes no such schedule.
    """
    key = canonical(name)
    p, m, v = num_ranks, num_microbatches, virtual
    if key == "interleaved-1f1b" and v > 1 and m % p:
        return list(_rank_peaks(key, p, m, v))
    if key in CLOSED_FORM:
        return F.in_flight(key, num_ranks, num_microbatches, virtual)
    sched = _required(key, num_ranks, num_microbatches, virtual)
    out = [0] * num_ranks
    for s, n in enumerate(_peaks(key, num_ranks, num_microbatches, virtual)):
        out[sched.stage_to_rank[s]] += n
    return out


def pipeline_time(
    name: str,
    rank_times: list[float],
    num_microbatches: int,
    virtual: int,
    forward_share: float,
    weight_share: float,
) -> float:
    """A step's pipeline time from each rank's time for one microbatch (forward and
    backward), ``forward_share`` of it forward and ``weight_share`` of it the backward's
    weight gradients (see the module docstring).

    Raises:
      ScheduleError: the runtime's generator makes no such schedule.
    """
    key = canonical(name)
    if key in CLOSED_FORM:
        return F.pipeline_time(rank_times, num_microbatches, virtual)
    worst = max(rank_times)
    p = len(rank_times)
    if p == 1:
        return num_microbatches * worst
    f = max(1, round(forward_share * _GRAIN))
    w = min(max(0, round(weight_share * _GRAIN)), _GRAIN - f)
    ratio = idle_ratio(key, p, num_microbatches, virtual, f, _GRAIN - f - w, w)
    return num_microbatches * worst + ratio * (sum(rank_times) - worst)


@functools.lru_cache(maxsize=4096)
def idle_ratio(
    name: str, num_ranks: int, num_microbatches: int, virtual: int, f: int, i: int, w: int
) -> float:
    """The idle time of a rank over ``p - 1`` rank-microbatch times, simulated with uniform
    stages costing ``f``, ``i``, ``w`` (a rank's microbatch is ``f + i + w``, its ``virtual``
    stages a share each).

    Raises:
      ScheduleError: the runtime's generator makes no such schedule.
    """
    sched = _required(name, num_ranks, num_microbatches, virtual)
    total = f + i + w
    # B = I + W for a schedule that does not split its backward
    costs = {"F": f / virtual, "I": i / virtual, "W": w / virtual}
    timeline = schedules.simulate(sched, costs)
    idle = timeline.makespan - num_microbatches * total
    return idle / (total * (num_ranks - 1))


@functools.lru_cache(maxsize=1024)
def _schedule(name: str, p: int, m: int, v: int) -> schedules.Schedule | ScheduleError:
    try:
        return schedules.get(name, p, m, v)
    except ScheduleError as e:  # a shape this generator refuses: kept, as the answer
        return e


@functools.lru_cache(maxsize=1024)
def _peaks(name: str, p: int, m: int, v: int) -> tuple[int, ...]:
    return schedules.peak_in_flight(_required(name, p, m, v))


@functools.lru_cache(maxsize=256)
def _rank_peaks(name: str, p: int, m: int, v: int) -> tuple[int, ...]:
    """Per rank, the most stage-microbatches whose forward has run and whose backward has not,
    at any point of its action list (a rank runs its list in order, so this is what it holds
    at once, whatever the stages' times): the peak over time of the sum over its stages, not
    the sum of each stage's peak (they come at different times)."""
    sched = _required(name, p, m, v)
    out = []
    for r in range(p):
        held = peak = 0
        for step in sched.actions[r]:
            for a in () if step is None else step.parts:
                if a.kind is schedules.Kind.F:
                    held += 1
                elif a.kind is schedules.Kind.B:
                    held -= 1
                peak = max(peak, held)
        out.append(peak)
    return tuple(out)


def _required(name: str, p: int, m: int, v: int) -> schedules.Schedule:
    sched = _schedule(name, p, m, v)
    if isinstance(sched, ScheduleError):
        raise ScheduleError(str(sched))
    return sched
