"""Lowering adds exactly the transfers between ranks, next to the actions they serve."""

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import Kind, get, lower, simulate, validate


def strs(row):
    return [str(a) if a is not None else "." for a in row]


def test_lower_places_sends_after_producers_and_receives_before_consumers():
    s = lower(get("1f1b", 2, 2))
    assert strs(s.actions[0]) == [
        "0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"
    ]  # fmt: skip
    assert strs(s.actions[1]) == [
        "1RECV_F0", "1F0", "1B0", "1SEND_B0", "1RECV_F1", "1F1", "1B1", "1SEND_B1"
    ]  # fmt: skip
    validate(s)


def test_no_transfer_between_stages_on_one_rank():
    s = lower(get("zb-v", 2, 1))
    # Stages 1 and 2 (the tip of the V) both live on rank 1: nothing is sent between them.
    comms = [a for a in s.actions[1] if a.kind not in (Kind.F, Kind.I, Kind.W)]
    assert {str(a) for a in comms} == {"1RECV_F0", "2SEND_F0", "2RECV_B0", "1SEND_B0"}
    validate(s)


def test_forward_only_schedules_get_no_backward_transfers():
    s = lower(get("inference", 3, 2))
    kinds = {a.kind for row in s.actions.values() for a in row}
    assert kinds == {Kind.F, Kind.SEND_F, Kind.RECV_F}
    validate(s)


def test_lower_keeps_idle_slots_and_refuses_twice():
    from hlopipe.schedules import align

    s = lower(align(get("gpipe", 2, 1)))
    assert strs(s.actions[0]) == ["0F0", "0SEND_F0", ".", ".", "0RECV_B0", "0B0"]
    with pytest.raises(ScheduleError, match="already holds sends and receives"):
        lower(s)


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "interleaved-1f1b", "zb-h2", "zb-v"])
def test_lowered_and_compute_only_simulate_the_same(name):
    s = get(name, 4, 6)
    costs = {"F": 1, "B": 2, "send": 0.25}
    a, b = simulate(s, costs), simulate(lower(s), costs)
    assert b.makespan == pytest.approx(a.makespan)
    for r in range(4):
        compute = [e for e in b.events[r] if e[0].kind in (Kind.F, Kind.B, Kind.I, Kind.W)]
        assert compute == a.events[r]  # quarters add up exactly in binary
