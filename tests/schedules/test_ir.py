"""The action IR: actions print and parse back; schedules round-trip through text and CSV."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlopipe.errors import ScheduleError
from hlopipe.schedules import Action, Kind, Overlap, Schedule, get, lower

plain = st.builds(
    Action,
    st.integers(0, 10_000),
    st.sampled_from([k for k in Kind if k is not Kind.OVERLAP_F_B]),
    st.integers(0, 10_000),
)
overlaps = st.tuples(
    st.builds(Action, st.integers(0, 99), st.just(Kind.F), st.integers(0, 99)),
    st.builds(Action, st.integers(0, 99), st.sampled_from([Kind.B, Kind.I]), st.integers(0, 99)),
).map(lambda fb: Overlap(*fb))
actions = st.one_of(plain, overlaps)


def test_action_prints_as_stage_kind_microbatch():
    assert str(Action(2, Kind.F, 0)) == "2F0"
    assert str(Action(1, Kind.SEND_B, 13)) == "1SEND_B13"
    assert Action.parse("12W7") == Action(12, Kind.W, 7)
    assert Action(2, Kind.B, 3).describe() == "B of stage 2, microbatch 3"


@given(actions)
def test_action_parse_is_the_inverse_of_str(action):
    assert Action.parse(str(action)) == action
    assert str(Action.parse(str(action))) == str(action)


@pytest.mark.parametrize("text", ["", "F0", "2F", "2X0", "2SEND0", "-1F0", "2 F 0", "2f0x"])
def test_action_parse_rejects_malformed_text(text):
    with pytest.raises(ScheduleError, match="cannot parse action"):
        Action.parse(text)


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "interleaved-1f1b", "zb-v", "zb-h1"])
@pytest.mark.parametrize("lowered", [False, True])
def test_text_and_csv_round_trip(name, lowered):
    s = get(name, 3, 5)
    if lowered:
        s = lower(s)
    assert Schedule.from_text(s.to_text()) == s
    assert Schedule.from_csv(s.to_csv()) == s


def test_round_trip_keeps_idle_slots_and_empty_ranks():
    a = Action(0, Kind.F, 0)
    s = Schedule("idle demo", 3, 1, 1, (0,), {0: [None, a, None, None]})
    assert s.actions == {0: [None, a], 1: [], 2: []}  # trailing idles dropped, ranks filled in
    assert Schedule.from_text(s.to_text()) == s
    assert Schedule.from_csv(s.to_csv()) == s
    assert s.to_text().splitlines()[1:] == ["0: . 0F0", "1:", "2:"]


@given(
    st.lists(st.lists(st.one_of(st.none(), actions), max_size=6), min_size=1, max_size=4),
    st.text(max_size=8),
)
def test_round_trip_of_arbitrary_lists(rows, name):
    s = Schedule(name, len(rows), 1, 1, (0,), dict(enumerate(rows)))
    assert Schedule.from_text(s.to_text()) == s
    assert Schedule.from_csv(s.to_csv()) == s


def test_csv_is_a_step_grid():
    lines = get("gpipe", 2, 2).to_csv().splitlines()
    assert lines[0].startswith("# hlopipe-schedule {")
    assert lines[1:] == ["rank,0,1,2,3", "0,0F0,0F1,0B0,0B1", "1,1F0,1F1,1B0,1B1"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_ranks": 0}, "num_ranks must be a positive integer"),
        ({"stage_to_rank": (0,)}, "stage_to_rank has 1 entries for 2 stages"),
        ({"stage_to_rank": (0, 5)}, "stage 1 placed on rank 5"),
        ({"actions": {7: []}}, r"actions for ranks \[7\]"),
    ],
)
def test_schedule_rejects_bad_shapes(kwargs, match):
    args = {
        "name": "x",
        "num_ranks": 2,
        "num_stages": 2,
        "num_microbatches": 1,
        "stage_to_rank": (0, 1),
        "actions": {},
    } | kwargs
    with pytest.raises(ScheduleError, match=match):
        Schedule(**args)


def test_from_text_rejects_what_is_not_a_schedule():
    with pytest.raises(ScheduleError, match="not a schedule"):
        Schedule.from_text("0: 0F0\n")
    with pytest.raises(ScheduleError, match="bad schedule header"):
        Schedule.from_csv('# hlopipe-schedule {"name": "x"}\n')
    header = get("gpipe", 1, 1).to_text().splitlines()[0]
    with pytest.raises(ScheduleError, match="expected 'rank: actions'"):
        Schedule.from_text(header + "\nzero: 0F0\n")


def test_repr_is_one_screen_with_the_grid() -> None:
    from hlopipe.schedules import get

    text = repr(get("1f1b", 4, 8))
    lines = text.splitlines()
    assert lines[0] == "Schedule('1f1b': 4 ranks, 4 stages, 8 microbatches, 64 actions)"
    assert lines[2].split()[:4] == ["rank", "0", "0F0", "0F1"] and len(lines) == 6
    big = repr(get("gpipe", 64, 512))
    assert len(big) < 300 and "format_grid" in big
