"""The validator: what it accepts, what it works out, and the exact words of its errors."""

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import Action, Schedule, get, lower, validate


def edit(schedule: Schedule, rank: int, row: str) -> Schedule:
    """``schedule`` with rank's list replaced by the actions in ``row`` ('.' = idle)."""
    actions = dict(schedule.actions)
    actions[rank] = [None if t == "." else Action.parse(t) for t in row.split()]
    return schedule.replace_actions(actions)


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


def test_validate_returns_the_stage_to_rank_map():
    assert validate(get("1f1b", 3, 4)) == {0: 0, 1: 1, 2: 2}
    assert validate(get("interleaved-1f1b", 2, 4, 2)) == {0: 0, 1: 1, 2: 0, 3: 1}
    assert validate(get("zb-v", 2, 4)) == {0: 0, 1: 1, 2: 1, 3: 0}


def test_backward_before_its_forward_names_rank_step_and_marks_the_grid():
    s = edit(
        get("1f1b", 4, 8), 1, "1F0 1F1 1F2 1B0 1F4 1B3 1F3 1B1 1F5 1B2 1F6 1B4 1F7 1B5 1B6 1B7"
    )
    with pytest.raises(ScheduleError) as e:
        validate(s)
    assert first_line(e) == "rank 1, step 5: B of stage 1, microbatch 3 before its F"
    text = str(e.value)
    assert "in schedule '1f1b':" in text
    marked = [ln for ln in text.splitlines() if "<-- here" in ln]
    assert len(marked) == 1 and marked[0].startswith("rank 1 ") and ">1B3<" in marked[0]
    assert text.splitlines()[2].startswith("step ")


def test_w_before_its_i():
    s = edit(get("zb-h1", 2, 2), 1, "1F0 1W0 1I0 1F1 1I1 1W1")
    with pytest.raises(ScheduleError) as e:
        validate(s)
    assert first_line(e) == "rank 1, step 1: W of stage 1, microbatch 0 before its I"


def test_missing_duplicate_and_misplaced_actions():
    base = get("gpipe", 2, 2)
    with pytest.raises(ScheduleError) as e:
        validate(edit(base, 1, "1F0 1F1 1B0"))
    assert first_line(e) == "rank 1: B of stage 1, microbatch 1 is missing"
    with pytest.raises(ScheduleError) as e:
        validate(edit(base, 1, "1F0 1F1 1B0 1B1 1F0"))
    assert (
        first_line(e)
        == "rank 1, step 4: F of stage 1, microbatch 0 runs twice (also at rank 1, step 0)"
    )
    with pytest.raises(ScheduleError) as e:
        validate(edit(base, 1, "1F0 1F1 1B0 1B1 0F0"))
    assert first_line(e).startswith(
        "rank 1, step 4: F of stage 0, microbatch 0, but stage 0 also runs on rank 0"
    )
    with pytest.raises(ScheduleError) as e:
        validate(edit(base, 1, "1F0 1F1 1B0 1B1 1F2"))
    assert first_line(e) == "rank 1, step 4: F of stage 1, microbatch 2: no microbatch 2 (0..1)"
    with pytest.raises(ScheduleError) as e:
        validate(edit(base, 1, "1F0 1F1 1B0 1I1 1W1 1B1"))
    assert first_line(e) == (
        "rank 1, step 5: B of stage 1, microbatch 1, but its backward is also split into I and W"
    )


def test_stage_on_the_wrong_rank():
    s = get("gpipe", 2, 1)
    moved = Schedule(s.name, 2, 2, 1, (1, 0), s.actions)
    with pytest.raises(ScheduleError) as e:
        validate(moved)
    assert (
        first_line(e)
        == "rank 0, step 0: F of stage 0, microbatch 0 on rank 0, but stage 0 is placed on rank 1"
    )


def test_cross_rank_order_is_checked_by_running_it():
    # Rank 0 wants microbatch 0's gradient before sending microbatch 1 forward; rank 1 wants
    # microbatch 1 first. Each rank's own order is fine; together they deadlock.
    s = edit(get("gpipe", 2, 2), 0, "0F0 0B0 0F1 0B1")
    s = edit(s, 1, "1F1 1B1 1F0 1B0")
    with pytest.raises(ScheduleError) as e:
        validate(s)
    assert first_line(e) == (
        "rank 0, step 1: B of stage 0, microbatch 0 waits for B of stage 1, microbatch 0 "
        "(rank 1, step 3) -- deadlock; also blocked:"
    )
    lines = str(e.value).splitlines()
    assert lines[1] == (
        "  rank 1, step 0: F of stage 1, microbatch 1 waits for F of stage 0, microbatch 1 "
        "(rank 0, step 2)"
    )
    assert sum("<-- here" in ln for ln in lines) == 2


def test_transfers_in_a_lowered_schedule():
    s = lower(get("gpipe", 2, 1))
    assert validate(s) == {0: 0, 1: 1}
    with pytest.raises(ScheduleError) as e:
        validate(edit(s, 1, "1F0 1RECV_F0 1B0 1SEND_B0"))
    assert first_line(e) == "rank 1, step 0: F of stage 1, microbatch 0 before its RECV_F"
    with pytest.raises(ScheduleError) as e:
        validate(edit(s, 1, "1RECV_F0 1F0 1B0"))
    assert first_line(e) == "rank 1: SEND_B of stage 1, microbatch 0 is missing"
    with pytest.raises(ScheduleError) as e:
        validate(edit(s, 1, "1RECV_F0 1F0 1SEND_F0 1B0 1SEND_B0"))
    assert first_line(e) == (
        "rank 1, step 2: SEND_F of stage 1, microbatch 0 is not a transfer between two ranks "
        "of this schedule"
    )


def test_a_receive_posted_before_its_own_send_deadlocks():
    # Rank 0 waits for the gradient before it has sent the activation that produces it.
    s = edit(lower(get("gpipe", 2, 1)), 0, "0F0 0RECV_B0 0SEND_F0 0B0")
    with pytest.raises(ScheduleError) as e:
        validate(s)
    assert first_line(e) == (
        "rank 0, step 1: RECV_B of stage 0, microbatch 0 waits for SEND_B of stage 1, "
        "microbatch 0 (rank 1, step 3) -- deadlock; also blocked:"
    )
    assert "rank 1, step 0: RECV_F of stage 1, microbatch 0 waits for SEND_F of stage 0" in str(
        e.value
    )
