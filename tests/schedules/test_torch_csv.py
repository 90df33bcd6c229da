"""torch.distributed.pipelining's CSV form: files written by hand from its grammar (one row per
rank in rank order, one action per cell such as ``0F1``, ``1SEND_B0``, an empty cell for an
idle slot, ``(0F7;7B3)OVERLAP_F_B`` for an overlap), read, checked, simulated, written back."""

from pathlib import Path

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import (
    Action,
    Kind,
    Overlap,
    Schedule,
    get,
    lower,
    names,
    simulate,
    validate,
)

FILES = Path(__file__).parent / "torch_csv"


def read(name: str) -> Schedule:
    return Schedule.from_torch_csv((FILES / name).read_text(), name=name)


def test_compute_only_file():
    s = read("gpipe_like_2x2.csv")
    assert (s.num_ranks, s.num_stages, s.num_microbatches, s.stage_to_rank) == (2, 2, 2, (0, 1))
    assert [None if a is None else str(a) for a in s.actions[0]] == [
        "0F0",
        "0F1",
        None,
        "0B0",
        "0B1",
    ]
    assert validate(s) == {0: 0, 1: 1}
    # By hand, F = 1, B = 2: rank 1 runs 1F1 after 1B0 (4..5), 1B1 5..7; rank 0's 0B1 7..9.
    assert simulate(s, {"F": 1, "B": 2}).makespan == 9
    assert s.to_torch_csv() == (FILES / "gpipe_like_2x2.csv").read_text()


def test_file_with_transfers_drops_torch_bookkeeping():
    s = read("comms_2x2.csv")
    assert s.is_lowered
    assert not any("REDUCE_GRAD" in str(a) for row in s.actions.values() for a in row)
    assert validate(s) == {0: 0, 1: 1}
    compute = read("gpipe_like_2x2.csv").compute_only()
    assert s.compute_only().actions == compute.actions
    assert simulate(s, {"F": 1, "B": 2}).makespan == 9
    # Our own lowering of the compute-only schedule adds the same transfers.
    assert sorted(map(str, lower(s.compute_only()).actions[1])) == sorted(map(str, s.actions[1]))


def test_v_file_with_an_overlap_and_split_backwards():
    s = read("v_overlap_2x2.csv")
    assert s.stage_to_rank == (0, 1, 1, 0) and s.num_stages == 4
    assert s.actions[0][5] == Overlap(Action(3, Kind.F, 1), Action(0, Kind.B, 0))
    assert validate(s) == {0: 0, 1: 1, 2: 1, 3: 0}
    assert validate(lower(s)) == validate(s)
    t = simulate(s, {"F": 1, "B": 2, "I": 1, "W": 1})
    assert sum(t.busy.values()) == 4 * 2 * 3  # every stage, microbatch: F + B (or I + W)
    assert s.to_torch_csv() == (FILES / "v_overlap_2x2.csv").read_text()


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("lowered", [False, True])
def test_ours_round_trip_through_torch_csv(name, lowered):
    s = get(name, 3, 6)
    if lowered:
        s = lower(s)
    back = Schedule.from_torch_csv(s.to_torch_csv(), name=s.name)
    assert back == s
    assert validate(back) == validate(s)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0F0,0X1\n", r"row 1 \(rank 0\), column 2: cannot parse action '0X1'"),
        ("0F0,1F0\n1B0\n", r"row 2 \(rank 1\), column 1: 1B0 runs stage 1, which rank 0"),
        ("\n\n", "no actions"),
        ("1F0,1B0\n", r"no compute action of stage\(s\) \[0\]"),
    ],
)
def test_bad_files_say_where(text, match):
    with pytest.raises(ScheduleError, match=match):
        Schedule.from_torch_csv(text)
