"""The decode schedule: groups of sequences in flight through the stages, token after token.

Generation calls a decode step again and again; each call's token (the last stage's output)
is the first stage's input of the next call. With ``groups`` groups of sequences, stage ``s``
runs every group's step ``t`` in turn (round robin), so that while one group's token travels
through the later stages the first stage already works on the next group. Microbatch ``m`` of
a decode schedule is step ``m // groups`` of group ``m % groups``. Its dependencies: the
previous stage (same microbatch), this stage's own previous step of the group (microbatch
``m - groups``: the stage's state, its KV cache, is updated in place), and for the first stage
the last stage's output of microbatch ``m - groups`` (the feedback). The validator, the
simulator, ``lower`` (a feedback transfer is a ``SEND_F`` of the last stage and a ``RECV_F``
of the first), plots and Chrome traces read them from ``Schedule.feedback_groups``.

**Prefill as a group's first step.** ``decode(..., prefill=True)`` makes step 0 of each group
(microbatches ``0 .. groups - 1``) the group's prefill: the program that reads the prompt and
makes the group's state and first token. Its dependencies are those of any step (the previous
stage; no feedback, as it is a first step), so the prefills are pipelined like the decode
steps: stage ``s`` runs group ``g + 1``'s prefill while stage ``s + 1`` runs group ``g``'s, and
with ``groups >= 2`` the first stage starts group 0's first decode step while later stages are
still prefilling the later groups. The simulator costs a prefill step the ``prefill`` cost
(default: ``F``'s), the Chrome trace marks each event's :class:`Phase`.

With every step costing the same, each rank is busy ``groups`` of every ``stages`` time units
while ``groups < stages``: the steady-state bubble is ``max(0, 1 - groups / stages)``.
"""

from __future__ import annotations

import enum

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import Action, Kind, Schedule


def decode(num_stages: int, groups: int, tokens: int, *, prefill: bool = False) -> Schedule:
    """Round robin of ``groups`` groups over ``num_stages`` stages (one per rank), ``tokens``
    steps each; with ``prefill``, each group's first step is its prefill (see above).

    >>> s = decode(2, 2, 2)
    >>> [str(a) for a in s.actions[1]], s.feedback_groups
    (['1F0', '1F1', '1F2', '1F3'], 2)
    """
    for label, value in (("num_stages", num_stages), ("groups", groups), ("tokens", tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ScheduleError(f"decode: {label} must be a positive integer, got {value!r}")
    m = groups * tokens
    # 1. every rank runs its stage for step 0 of each group, then step 1 of each group, ...
    actions: dict[int, list[Action | None]] = {
        r: [Action(r, Kind.F, i) for i in range(m)] for r in range(num_stages)
    }
    name = "decode+prefill" if prefill else "decode"
    return Schedule(name, num_stages, num_stages, m, tuple(range(num_stages)), actions, groups,
                    bool(prefill))  # fmt: skip


def feedback_source(schedule: Schedule, action: Action) -> Action | None:
    """The last stage's forward whose output ``action`` (a first-stage F or RECV_F) takes as
    feedback, or None (not a decode schedule, or a group's first step)."""
    g = schedule.feedback_groups
    if not g or action.stage != 0 or action.microbatch < g:
        return None
    return Action(schedule.num_stages - 1, Kind.F, action.microbatch - g)


class Phase(enum.StrEnum):
    """Which program a step of a decode schedule runs."""

    PREFILL = "prefill"  # a group's prefill: reads the prompt, makes the state, first token
    DECODE = "decode"  # one decode step


def is_prefill(schedule: Schedule, microbatch: int) -> bool:
    """Whether ``microbatch`` of a decode schedule is a group's prefill."""
    return schedule.prefill and microbatch < schedule.feedback_groups


def phase_of(schedule: Schedule, microbatch: int) -> Phase:
    """The :class:`Phase` of ``microbatch`` of a decode schedule."""
    return Phase.PREFILL if is_prefill(schedule, microbatch) else Phase.DECODE


def feeds_back(schedule: Schedule, microbatch: int) -> bool:
    """Whether the last stage's output of ``microbatch`` feeds a later step."""
    g = schedule.feedback_groups
    return bool(g) and microbatch + g < schedule.num_microbatches


def steady_bubble(num_stages: int, groups: int) -> float:
    """The idle share of each rank in the steady state with equal costs."""
    return max(0.0, 1.0 - groups / num_stages)
