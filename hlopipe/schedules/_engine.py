"""Execute a schedule's lists in order, as soon as each action's inputs are there.

Shared by the validator (which only asks "does it finish?") and the simulator (which asks
"when does each action run?"). Sends are non-blocking: a SEND takes no time on its rank and the
data lands ``send_cost`` later; a RECV blocks its rank until the data has landed. An
OVERLAP_F_B starts when the inputs of both its parts are there, and both parts end with it.
"""

from __future__ import annotations

from collections.abc import Callable

from hlopipe.schedules._decode import feedback_source
from hlopipe.schedules._grid import schedule_error
from hlopipe.schedules._ir import Action, Kind, Schedule

Event = tuple[Action, float, float]
_BACKWARD = (Kind.B, Kind.I)


def run(
    schedule: Schedule,
    duration: Callable[[Action], float],
    send_cost: float = 0.0,
) -> dict[int, list[Event]]:
    """Per rank, ``(action, start, end)`` of each action in list order.

    Raises ScheduleError, with the partial grid, when the ranks deadlock.
    """
    end: dict[tuple[int, Kind, int], float] = {}
    events: dict[int, list[Event]] = {r: [] for r in range(schedule.num_ranks)}
    pos = dict.fromkeys(range(schedule.num_ranks), 0)
    free = dict.fromkeys(range(schedule.num_ranks), 0.0)

    rows = schedule.actions
    progress = True
    while progress:
        progress = False
        for r in range(schedule.num_ranks):
            row = rows[r]
            i = pos[r]
            while i < len(row):
                a = row[i]
                if a is None:
                    i += 1
                    continue
                t = ready(schedule, end, send_cost, r, a)
                if t is None:
                    break
                if a.kind is Kind.RECV_F or a.kind is Kind.RECV_B:
                    start, stop = free[r], max(free[r], t)
                else:
                    start = max(free[r], t)
                    stop = start + duration(a)
                events[r].append((a, start, stop))
                for part in a.parts:
                    end[part] = stop
                free[r] = stop
                i += 1
                progress = True
            pos[r] = i
    blocked = {r: pos[r] for r in range(schedule.num_ranks) if pos[r] < len(rows[r])}
    if blocked:
        raise _deadlock(schedule, blocked, end)
    return events


def _done(
    end: dict[tuple[int, Kind, int], float], stage: int, kinds: tuple[Kind, ...], mb: int
) -> float | None:
    """When the first of ``kinds`` of (stage, microbatch) that has run ended; None if none."""
    for k in kinds:
        t = end.get((stage, k, mb))
        if t is not None:
            return t
    return None


def ready(
    schedule: Schedule,
    end: dict[tuple[int, Kind, int], float],
    send_cost: float,
    rank: int,
    a: Action,
) -> float | None:
    """When ``a``'s inputs are on ``rank``, given the end times so far; None while one is
    missing."""
    if a.kind is Kind.OVERLAP_F_B:
        times = [ready(schedule, end, send_cost, rank, part) for part in a.parts]
        return None if any(t is None for t in times) else max(times)  # type: ignore[type-var]
    place, last = schedule.stage_to_rank, schedule.num_stages - 1
    s, k, mb = a
    if k is Kind.F:
        if s == 0:
            fb = feedback_source(schedule, a)
            if fb is None:
                return 0.0
            t = _done(end, fb.stage, (Kind.F,), fb.microbatch)
            return None if t is None else t + (send_cost if place[fb.stage] != rank else 0.0)
        t = _done(end, s - 1, (Kind.F,), mb)
        return None if t is None else t + (send_cost if place[s - 1] != rank else 0.0)
    if k in _BACKWARD:
        t = _done(end, s, (Kind.F,), mb)
        if t is None or s == last:
            return t
        u = _done(end, s + 1, _BACKWARD, mb)
        if u is None:
            return None
        return max(t, u + (send_cost if place[s + 1] != rank else 0.0))
    if k is Kind.W:
        return _done(end, s, (Kind.I,), mb)
    if k is Kind.SEND_F:
        return _done(end, s, (Kind.F,), mb)
    if k is Kind.SEND_B:
        return _done(end, s, _BACKWARD, mb)
    if k is Kind.RECV_F:
        fb = feedback_source(schedule, a)
        src = (s - 1, mb) if fb is None else (fb.stage, fb.microbatch)
        t = _done(end, src[0], (Kind.SEND_F,), src[1])
        return None if t is None else t + send_cost
    t = _done(end, s + 1, (Kind.SEND_B,), mb)  # RECV_B
    return None if t is None else t + send_cost


def _needs(schedule: Schedule, a: Action) -> list[tuple[int, Kind, int]]:
    """The actions ``a`` waits for (any one of those with the same stage and microbatch)."""
    if a.kind is Kind.OVERLAP_F_B:
        return [d for part in a.parts for d in _needs(schedule, part)]
    s, k, mb = a
    if k is Kind.F:
        fb = feedback_source(schedule, a) if s == 0 else None
        if fb is not None:
            return [tuple(fb)]  # type: ignore[list-item]
        return [(s - 1, Kind.F, mb)] if s > 0 else []
    if k in _BACKWARD:
        deps = [(s, Kind.F, mb)]
        if s < schedule.num_stages - 1:
            deps += [(s + 1, Kind.B, mb), (s + 1, Kind.I, mb)]
        return deps
    if k is Kind.W:
        return [(s, Kind.I, mb)]
    if k is Kind.SEND_F:
        return [(s, Kind.F, mb)]
    if k is Kind.SEND_B:
        return [(s, Kind.B, mb), (s, Kind.I, mb)]
    if k is Kind.RECV_F:
        fb = feedback_source(schedule, a)
        if fb is not None:
            return [(fb.stage, Kind.SEND_F, fb.microbatch)]
        return [(s - 1, Kind.SEND_F, mb)]
    return [(s + 1, Kind.SEND_B, mb)]


def _deadlock(schedule: Schedule, blocked: dict[int, int], end: dict) -> Exception:
    where: dict[tuple[int, Kind, int], tuple[int, int]] = {}
    for r, row in schedule.actions.items():
        for t, a in enumerate(row):
            for part in () if a is None else a.parts:
                where.setdefault(tuple(part), (r, t))  # type: ignore[arg-type]
    lines = []
    for r, step in blocked.items():
        a = schedule.actions[r][step]
        assert a is not None
        missing = [d for d in _needs(schedule, a) if d not in end]
        # Two alternatives (B or I of a stage): name the one that exists, if any.
        for d in list(missing):
            twin = (d[0], Kind.I if d[1] is Kind.B else Kind.B, d[2])
            if d[1] in _BACKWARD and twin in missing and d in missing:
                missing.remove(twin if d in where or twin not in where else d)
        waits = []
        for d in missing:
            name = Action(*d).describe()
            if d in where:
                dr, dt = where[d]
                waits.append(f"{name} (rank {dr}, step {dt})")
            else:
                waits.append(f"{name}, which no rank runs")
        lines.append(f"rank {r}, step {step}: {a.describe()} waits for {' and '.join(waits)}")
    first_rank, first_step = next(iter(blocked.items()))
    message = lines[0].split(": ", 1)[1] + " -- deadlock"
    if len(lines) > 1:
        message += "; also blocked:\n  " + "\n  ".join(lines[1:])
    return schedule_error(schedule, first_rank, first_step, message, marks=blocked, upto=blocked)
