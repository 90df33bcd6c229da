"""How many microbatches' activations each stage holds at once under a schedule."""

from __future__ import annotations

from hlopipe.schedules._ir import Kind, Schedule, iter_parts


def peak_in_flight(schedule: Schedule) -> tuple[int, ...]:
    """Per stage, the most microbatches whose forward has run and whose activations are still
    held, walking each rank's actions in order: a forward takes a microbatch in, a full
    backward (``B``) or a weight backward (``W``, the last to read them in a zero-bubble
    split) lets it go. What a stage holds for one microbatch times this number is its
    in-flight activation memory under the schedule.

    >>> from hlopipe import schedules
    >>> peak_in_flight(schedules.get("1f1b", num_ranks=4, num_microbatches=8))
    (4, 3, 2, 1)
    >>> peak_in_flight(schedules.get("gpipe", num_ranks=4, num_microbatches=8))
    (8, 8, 8, 8)
    """
    has_w = any(a.kind is Kind.W for _, _, a in iter_parts(schedule))
    release = Kind.W if has_w else Kind.B
    held = [0] * schedule.num_stages
    peak = [0] * schedule.num_stages
    for _, _, a in iter_parts(schedule):  # a stage lives on one rank: its actions in order
        if a.kind is Kind.F:
            held[a.stage] += 1
            peak[a.stage] = max(peak[a.stage], held[a.stage])
        elif a.kind is release:
            held[a.stage] -= 1
    return tuple(peak)
