"""The decode schedule: round robin of groups with the last stage's output fed back."""

from __future__ import annotations

import pytest

from hlopipe import schedules
from hlopipe.errors import ScheduleError
from hlopipe.schedules import Action, Kind, Schedule


@pytest.mark.parametrize(("S", "G", "T"), [(4, 1, 6), (4, 2, 6), (4, 4, 6), (4, 8, 6), (3, 2, 5)])
def test_simulated_bubble(S, G, T):
    s = schedules.decode(S, G, T)
    assert schedules.validate(s) == {r: r for r in range(S)}
    tl = schedules.simulate(s, {"F": 1})
    # each group's step t goes through all S stages before its step t + 1 may start
    makespan = T * S + G - 1 if G <= S else G * T + S - 1
    assert tl.makespan == makespan
    assert tl.bubble_fraction == pytest.approx(1 - G * T / makespan)  # each rank busy G*T
    # the steady state, far from the ramp: max(0, 1 - G / S)
    long = schedules.simulate(schedules.decode(S, G, 400), {"F": 1})
    assert long.bubble_fraction == pytest.approx(schedules.steady_bubble(S, G), abs=0.01)
    assert schedules.steady_bubble(S, G) == max(0.0, 1 - G / S)


def test_lowered_feedback_transfers_and_text_round_trip():
    s = schedules.lower(schedules.decode(3, 2, 3))
    assert schedules.validate(s)
    # the last stage sends its output back to the first for every step but the last
    assert [str(a) for a in s.actions[2] if a.kind is Kind.SEND_F] == [
        f"2SEND_F{m}" for m in range(4)
    ]
    assert [str(a) for a in s.actions[0] if a.kind is Kind.RECV_F] == [
        f"0RECV_F{m}" for m in range(2, 6)
    ]
    assert schedules.simulate(s, {"F": 1, "send": 0.5}).makespan > 3 * 3 + 1
    assert Schedule.from_text(s.to_text()) == s
    assert Schedule.from_text(s.to_text()).feedback_groups == 2
    trace = schedules.to_chrome_trace(schedules.simulate(s))
    args = [e["args"] for e in trace["traceEvents"] if e.get("name") == "1F3"]
    assert args[0]["group"] == 1 and args[0]["step"] == 1


def test_a_step_before_its_feedback_is_refused():
    s = schedules.decode(1, 1, 3)
    bad = s.replace_actions({0: [Action(0, Kind.F, 1), Action(0, Kind.F, 0), Action(0, Kind.F, 2)]})
    with pytest.raises(
        ScheduleError, match="F of stage 0, microbatch 1 before F of stage 0, microbatch 0"
    ):
        schedules.validate(bad)
    two = schedules.decode(2, 1, 2)
    swapped = two.replace_actions(
        {0: two.actions[0], 1: [Action(1, Kind.F, 1), Action(1, Kind.F, 0)]}
    )
    with pytest.raises(ScheduleError, match="own previous step"):
        schedules.validate(swapped)


def test_bad_arguments():
    with pytest.raises(ScheduleError, match="groups must be a positive integer"):
        schedules.decode(2, 0, 3)
