"""Lowering: add the sends and receives a compute-only schedule needs.

The runtime walks each rank's list in order. It is assumed to *send without blocking* (the
sender posts the transfer and moves on, as ``jax.device_put`` and an async ``ppermute`` do)
and to *receive with blocking* (a RECV waits until the matching SEND has happened).

Under that model the lowering below cannot deadlock: each SEND goes right after the action
that produced its data and each RECV right before the action that consumes it, so the lowered
program waits for exactly what the compute-only schedule already waited for. A compute-only
schedule that runs (which the validator checks) therefore lowers to one that runs. With
blocking (rendezvous) sends this would not hold: two neighbours that both send first wait on
each other, which is why the transfers are not batched or reordered here.
"""

from __future__ import annotations

from hlopipe.errors import ScheduleError
from hlopipe.schedules._decode import feedback_source, feeds_back
from hlopipe.schedules._ir import Action, Kind, Schedule


def lower(schedule: Schedule) -> Schedule:
    """``schedule`` with SEND/RECV actions for every transfer between ranks.

    Same-rank hand-offs (two consecutive stages on one rank, as at the tip of a V) need none.
    Idle slots are kept. A schedule that already holds transfers is refused.

    >>> from hlopipe.schedules import get
    >>> [str(a) for a in lower(get("gpipe", 2, 1)).actions[0]]
    ['0F0', '0SEND_F0', '0RECV_B0', '0B0']
    """
    if schedule.is_lowered:
        raise ScheduleError(f"schedule {schedule.name!r} already holds sends and receives")
    place = schedule.stage_to_rank
    last = schedule.num_stages - 1
    lowered: dict[int, list[Action | None]] = {}
    for r in range(schedule.num_ranks):
        row: list[Action | None] = []
        for a in schedule.actions[r]:
            if a is None:
                row.append(None)
                continue
            # Receive just before the action that needs the data (both parts of an overlap).
            for s, k, mb in a.parts:
                fb = feedback_source(schedule, Action(s, k, mb)) if k is Kind.F else None
                if k is Kind.F and s > 0 and place[s - 1] != r:
                    row.append(Action(s, Kind.RECV_F, mb))
                elif fb is not None and place[fb.stage] != r:
                    row.append(Action(s, Kind.RECV_F, mb))  # the last stage's feedback
                elif k in (Kind.B, Kind.I) and s < last and place[s + 1] != r:
                    row.append(Action(s, Kind.RECV_B, mb))
            row.append(a)
            # Send just after the action that made it.
            for s, k, mb in a.parts:
                if k is Kind.F and s < last and place[s + 1] != r:
                    row.append(Action(s, Kind.SEND_F, mb))
                elif k is Kind.F and s == last and feeds_back(schedule, mb) and place[0] != r:
                    row.append(Action(s, Kind.SEND_F, mb))  # feedback to the first stage
                elif k in (Kind.B, Kind.I) and s > 0 and place[s - 1] != r:
                    row.append(Action(s, Kind.SEND_B, mb))
        lowered[r] = row
    return schedule.replace_actions(lowered)
