"""OVERLAP_F_B: one forward and one backward run as one unit (DualPipeV's F&B overlap)."""

import pickle

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import (
    Action,
    Kind,
    Overlap,
    Schedule,
    get,
    lower,
    simulate,
    split_overlaps,
    validate,
)

F, B, I, W = Kind.F, Kind.B, Kind.I, Kind.W


def test_prints_and_parses_as_torch_does():
    o = Overlap(Action(0, F, 7), Action(7, B, 3))
    assert str(o) == "(0F7;7B3)OVERLAP_F_B"
    assert Action.parse("(0F7;7B3)OVERLAP_F_B") == o
    assert o.kind is Kind.OVERLAP_F_B and o.parts == (Action(0, F, 7), Action(7, B, 3))
    assert pickle.loads(pickle.dumps(o)) == o


def test_equality_sees_both_parts():
    a = Overlap(Action(0, F, 1), Action(1, B, 0))
    assert a == Overlap(Action(0, F, 1), Action(1, B, 0))
    assert a != Overlap(Action(0, F, 1), Action(1, B, 1))
    assert a != Action(0, Kind.OVERLAP_F_B, 1)  # same tuple, but no parts
    assert Action(0, Kind.OVERLAP_F_B, 1) != a
    assert len({a, Overlap(Action(0, F, 1), Action(1, B, 1))}) == 2


@pytest.mark.parametrize(
    "text",
    [
        "(0B1;1B0)OVERLAP_F_B",  # first part must be an F
        "(0F1;1W0)OVERLAP_F_B",  # second a B or an I
        "(0F1)OVERLAP_F_B",
        "0OVERLAP_F_B1",
        "(0F1;1B0)OVERLAP",
    ],
)
def test_malformed_overlaps_are_refused(text):
    with pytest.raises(ScheduleError, match=r"OVERLAP_F_B|cannot parse"):
        Action.parse(text)


def _pair() -> Schedule:
    """Two stages on two ranks, microbatches 0 and 1; rank 0 overlaps F of 1 with B of 0."""
    return Schedule(
        "pair",
        2,
        2,
        2,
        (0, 1),
        {
            0: [Action(0, F, 0), Overlap(Action(0, F, 1), Action(0, B, 0)), Action(0, B, 1)],
            1: [Action(1, F, 0), Action(1, B, 0), Action(1, F, 1), Action(1, B, 1)],
        },
    )


def test_simulator_cost_and_memory():
    s = _pair()
    assert validate(s) == {0: 0, 1: 1}
    t = simulate(s, {"F": 1, "B": 2})
    overlap = next((st, e) for a, st, e in t.events[0] if isinstance(a, Overlap))
    # Waits for 1B0 (ends at 1 + 1 + 2 = 4), then lasts F + B = 3 by default.
    assert overlap == (4.0, 7.0)
    assert t.busy[0] == 1 + 3 + 2
    # 0F0 lives 0..7, 0F1 from 4: two at once.
    assert t.peak_activations[0] == 2
    fused = simulate(s, {"F": 1, "B": 2, "F&B": 2.5})
    assert next(e - st for a, st, e in fused.events[0] if isinstance(a, Overlap)) == 2.5
    assert fused.makespan == t.makespan - 0.5


def test_lowering_puts_both_parts_transfers_around_it():
    low = lower(_pair())
    row = [str(a) for a in low.actions[0]]
    i = row.index("(0F1;0B0)OVERLAP_F_B")
    assert row[i - 1] == "0RECV_B0" and row[i + 1] == "0SEND_F1"
    assert validate(low) == {0: 0, 1: 1}
    assert simulate(low).makespan == simulate(_pair()).makespan


def test_validator_checks_each_part():
    bad = _pair()
    bad.actions[0][1] = Overlap(Action(0, F, 1), Action(0, B, 1))  # the B needs the F first
    bad.actions[0][2] = Action(0, B, 0)
    with pytest.raises(ScheduleError, match=r"step 1: B of stage 0, microbatch 1 before its F"):
        validate(bad)
    twice = _pair()
    twice.actions[0][2] = Action(0, B, 0)
    with pytest.raises(ScheduleError, match="B of stage 0, microbatch 0 runs twice"):
        validate(twice)


def test_a_plain_action_of_kind_overlap_is_refused():
    s = _pair()
    s.actions[0][1] = Action(0, Kind.OVERLAP_F_B, 1)
    with pytest.raises(ScheduleError, match="must be an Overlap of an F and a B"):
        validate(s)


@pytest.mark.parametrize(("p", "m"), [(1, 2), (2, 4), (3, 7), (4, 8), (4, 13)])
def test_split_overlaps_runs_the_same_work(p, m):
    s = get("dualpipev", p, m)
    flat = split_overlaps(s)
    assert not flat.has_overlaps and s.has_overlaps
    assert validate(flat) == validate(s)
    parts = sorted(str(x) for row in s.actions.values() for a in row if a for x in a.parts)
    assert sorted(str(a) for row in flat.actions.values() for a in row if a) == parts
    assert validate(lower(flat)) == validate(s)
    # Forward first, then the backward, where the overlap stood.
    row0 = [str(a) for a in flat.actions[0]]
    o = next(a for a in s.actions[0] if isinstance(a, Overlap))
    i = row0.index(str(o.forward))
    assert row0[i + 1] == str(o.backward)
    # An overlap's parts both end when it ends, so at F&B = F + B running them apart is no
    # slower; the overlap pays when it hides work (F&B < F + B).
    assert simulate(s).makespan >= simulate(flat).makespan
    assert simulate(s, {"F&B": 2.0}).makespan < simulate(flat).makespan
