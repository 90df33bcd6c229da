"""The validator: one function that checks any schedule, compute-only or lowered."""

from __future__ import annotations

from hlopipe.schedules import _engine
from hlopipe.schedules._decode import feedback_source, feeds_back
from hlopipe.schedules._grid import schedule_error
from hlopipe.schedules._ir import (
    COMM_KINDS,
    Action,
    Kind,
    Overlap,
    Schedule,
    iter_actions,
    iter_parts,
)

F, B, I, W = Kind.F, Kind.B, Kind.I, Kind.W


def validate(schedule: Schedule) -> dict[int, int]:
    """Check ``schedule`` and return the stage -> rank map its actions imply.

    Checks, each failure a ScheduleError reading ``rank r, step t: <what>`` plus the grid:
      - every action names a stage and microbatch in range, on the rank holding its stage;
      - an OVERLAP_F_B counts as its two parts, an F and a B (or I) at the same step;
      - every (stage, microbatch) has exactly one F and, if the schedule trains, exactly one B
        or exactly one I and one W (never both);
      - on a rank, F before B/I of the same (stage, microbatch), I before W, and a stage's
        input from a stage on the same rank before it;
      - if the schedule holds transfers: exactly the ones :func:`lower` would add, each SEND
        after the action producing its data, each RECV before the action consuming it;
      - run in list order (blocking receives), every rank reaches the end of its list: no
        forward before the previous stage's, no backward before the next stage's, no
        deadlock.

    >>> from hlopipe.schedules import get
    >>> validate(get("1f1b", 2, 4))
    {0: 0, 1: 1}
    """
    found = _check_placement(schedule)
    seen = _check_each_once(schedule)
    _check_coverage(schedule, seen)
    _check_rank_order(schedule)
    # across ranks: run it.
    _engine.run(schedule, lambda a: 1.0)
    return {s: found[s][0] for s in range(schedule.num_stages)}


def _check_placement(schedule: Schedule) -> dict[int, tuple[int, int]]:
    """Step 1: names in range and placement (an overlap's two parts each); returns
    stage -> (rank, step) of its first action."""
    place = schedule.stage_to_rank
    S, M = schedule.num_stages, schedule.num_microbatches
    found: dict[int, tuple[int, int]] = {}
    for r, t, a in iter_actions(schedule):
        if not isinstance(a, Action) or not isinstance(a.kind, Kind):
            raise schedule_error(schedule, r, t, f"{a!r} is not an Action")
        if a.kind is Kind.OVERLAP_F_B and not isinstance(a, Overlap):
            raise schedule_error(
                schedule, r, t, f"{a}: an OVERLAP_F_B must be an Overlap of an F and a B"
            )
    for r, t, a in iter_parts(schedule):
        if not 0 <= a.stage < S:
            why = f"no stage {a.stage} (stages 0..{S - 1})"
            raise schedule_error(schedule, r, t, f"{a.describe()}: {why}")
        if not 0 <= a.microbatch < M:
            why = f"no microbatch {a.microbatch} (0..{M - 1})"
            raise schedule_error(schedule, r, t, f"{a.describe()}: {why}")
        if a.stage in found and found[a.stage][0] != r:
            r0, t0 = found[a.stage]
            why = f"stage {a.stage} also runs on rank {r0} (step {t0})"
            raise schedule_error(schedule, r, t, f"{a.describe()}, but {why}")
        found.setdefault(a.stage, (r, t))
        if place[a.stage] != r:
            why = f"stage {a.stage} is placed on rank {place[a.stage]}"
            raise schedule_error(schedule, r, t, f"{a.describe()} on rank {r}, but {why}")
    return found


def _check_each_once(schedule: Schedule) -> dict[Action, tuple[int, int]]:
    """Step 2: each action once; B and I/W not mixed. Returns action -> (rank, step)."""
    seen: dict[Action, tuple[int, int]] = {}
    for r, t, a in iter_parts(schedule):
        if a in seen:
            r0, t0 = seen[a]
            why = f"runs twice (also at rank {r0}, step {t0})"
            raise schedule_error(schedule, r, t, f"{a.describe()} {why}")
        seen[a] = (r, t)
        other = (Action(a.stage, I, a.microbatch), Action(a.stage, W, a.microbatch))
        if a.kind is B and any(o in seen for o in other):
            why = "its backward is also split into I and W"
            raise schedule_error(schedule, r, t, f"{a.describe()}, but {why}")
        if a.kind in (I, W) and Action(a.stage, B, a.microbatch) in seen:
            raise schedule_error(schedule, r, t, f"{a.describe()}, but it also has a full B")
    return seen


def _check_coverage(schedule: Schedule, seen: dict[Action, tuple[int, int]]) -> None:
    """Step 3: every needed compute action present, and the transfers a lowered schedule must
    hold (those and no others)."""
    place = schedule.stage_to_rank
    S, M, last = schedule.num_stages, schedule.num_microbatches, schedule.num_stages - 1
    training = schedule.has_backward
    lowered = schedule.is_lowered
    expected_comms: set[Action] = set()
    for s in range(S):
        for mb in range(M):
            needed = [Action(s, F, mb)]
            if training:
                split = Action(s, I, mb) in seen or Action(s, W, mb) in seen
                needed += [Action(s, I, mb), Action(s, W, mb)] if split else [Action(s, B, mb)]
            for a in needed:
                if a not in seen:
                    raise schedule_error(schedule, place[s], None, f"{a.describe()} is missing")
            if lowered and s == last and feeds_back(schedule, mb) and place[0] != place[s]:
                nxt = mb + schedule.feedback_groups
                expected_comms |= {Action(s, Kind.SEND_F, mb), Action(0, Kind.RECV_F, nxt)}
            if lowered and s < last and place[s + 1] != place[s]:
                expected_comms |= {Action(s, Kind.SEND_F, mb), Action(s + 1, Kind.RECV_F, mb)}
                if training:
                    expected_comms |= {Action(s + 1, Kind.SEND_B, mb), Action(s, Kind.RECV_B, mb)}
    for r, t, a in iter_actions(schedule):
        if a.kind in COMM_KINDS and a not in expected_comms:
            why = "is not a transfer between two ranks of this schedule"
            raise schedule_error(schedule, r, t, f"{a.describe()} {why}")
    for a in sorted(expected_comms - seen.keys()):
        raise schedule_error(schedule, place[a.stage], None, f"{a.describe()} is missing")


def _check_rank_order(schedule: Schedule) -> None:
    """Step 4: on each rank, what an action needs from the same rank comes before it."""
    lowered = schedule.is_lowered
    for r in range(schedule.num_ranks):
        before: set[Action] = set()
        for t, slot in enumerate(schedule.actions[r]):
            if slot is None:
                continue
            for a in slot.parts:
                for need, why in _local_needs(schedule, r, a, lowered):
                    if not any(n in before for n in need):
                        raise schedule_error(schedule, r, t, f"{a.describe()} before {why}")
            before.update(slot.parts)


def _local_needs(
    schedule: Schedule, r: int, a: Action, lowered: bool
) -> list[tuple[tuple[Action, ...], str]]:
    """What must come earlier on rank ``r`` for ``a`` (alternatives, words for the error)."""
    s, k, mb = a
    place, last = schedule.stage_to_rank, schedule.num_stages - 1
    needs: list[tuple[tuple[Action, ...], str]] = []
    fb = feedback_source(schedule, a) if k is F else None
    if fb is not None:
        own = Action(s, F, fb.microbatch)
        needs.append(((own,), f"{own.describe()}, its own previous step"))
        if place[fb.stage] == r and fb != own:
            needs.append(((fb,), f"{fb.describe()}, its feedback on this rank"))
        elif place[fb.stage] != r and lowered:
            needs.append(((Action(s, Kind.RECV_F, mb),), "its RECV_F (the feedback)"))
    if k is F and s > 0:
        own = Action(s, F, mb - schedule.feedback_groups)
        if schedule.feedback_groups and own.microbatch >= 0:
            needs.append(((own,), f"{own.describe()}, its own previous step"))
        if place[s - 1] == r:
            dep = Action(s - 1, F, mb)
            needs.append(((dep,), f"{dep.describe()}, its input on this rank"))
        elif lowered:
            needs.append(((Action(s, Kind.RECV_F, mb),), "its RECV_F"))
    elif k in (B, I):
        needs.append(((Action(s, F, mb),), "its F"))
        if s < last:
            if place[s + 1] == r:
                deps = (Action(s + 1, B, mb), Action(s + 1, I, mb))
                needs.append(
                    (deps, f"the backward of stage {s + 1}, microbatch {mb}, on this rank")
                )
            elif lowered:
                needs.append(((Action(s, Kind.RECV_B, mb),), "its RECV_B"))
    elif k is W:
        needs.append(((Action(s, I, mb),), "its I"))
    elif k is Kind.SEND_F:
        needs.append(((Action(s, F, mb),), "its F"))
    elif k is Kind.SEND_B:
        needs.append(((Action(s, B, mb), Action(s, I, mb)), "its B or I"))
    return needs
