"""``hlopipe schedule``: the grid and numbers, JSON, files, and one-line errors."""

import json
from pathlib import Path

import pytest

from hlopipe.cli import main


def test_prints_grid_and_numbers(capsys):
    assert (
        main(["schedule", "1F1B", "--ranks", "4", "--microbatches", "8", "--costs", "F=1,B=1"]) == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("1f1b: 4 ranks, 4 stages, 8 microbatches")
    assert lines[1].split()[:3] == ["step", "0", "1"]
    assert lines[2].split()[2:6] == ["0F0", "0F1", "0F2", "0F3"]
    assert lines[5].split()[2:6] == [".", ".", ".", "3F0"]
    assert "makespan 22  bubble 27.27%" in out
    assert "peak activations per rank: 4 3 2 1" in out


def test_json_and_files(capsys, tmp_path):
    png, trace = tmp_path / "s.png", tmp_path / "t.json"
    args = ["schedule", "interleaved-1f1b", "--ranks", "2", "--microbatches", "4", "--virtual", "2"]
    assert main([*args, "--json", "--plot", str(png), "--trace", str(trace)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["num_stages"] == 4 and doc["stage_to_rank"] == [0, 1, 0, 1]
    assert doc["actions"]["0"][0] == "0F0"
    assert 0 < doc["bubble_fraction"] < 1
    assert png.read_bytes().startswith(b"\x89PNG")
    assert json.loads(trace.read_text())["traceEvents"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "error: unknown schedule 'nope'; valid names: gpipe, 1f1b"),
        (["1f1b", "--ranks", "0"], "error: 1f1b: num_ranks must be a positive integer, got 0"),
        (["gpipe", "--virtual", "2"], "error: gpipe supports virtual_stages=1, got 2"),
        (["1f1b", "--costs", "F=fast"], "error: costs: 'fast' is not a number"),
        (["1f1b", "--costs", "Q=1"], "error: unknown cost 'Q'"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(capsys, args, message):
    assert main(["schedule", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(message)
    assert captured.err.count("\n") == 1


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["schedule", "1f1b", "--ranks", "four"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")


TORCH_CSV = Path(__file__).parent / "torch_csv"


def test_from_a_torch_csv_and_back(capsys, tmp_path):
    out_csv = tmp_path / "back.csv"
    src = TORCH_CSV / "v_overlap_2x2.csv"
    assert main(["schedule", "--from", str(src), "--to-torch", str(out_csv), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stage_to_rank"] == [0, 1, 1, 0]
    assert "(3F1;0B0)OVERLAP_F_B" in doc["actions"]["0"]
    assert out_csv.read_text() == src.read_text()


def test_to_torch_with_comms(capsys, tmp_path):
    out_csv = tmp_path / "t.csv"
    args = ["schedule", "1f1b", "--ranks", "2", "--microbatches", "2", "--to-torch", str(out_csv)]
    assert main([*args, "--with-comms"]) == 0
    assert "torch CSV written to" in capsys.readouterr().out
    rows = out_csv.read_text().splitlines()
    assert rows[0].split(",")[:2] == ["0F0", "0SEND_F0"]
    assert rows[1].split(",")[:2] == ["1RECV_F0", "1F0"]
    # And reading our own lowered CSV back checks and simulates it the same.
    assert main(["schedule", "--from", str(out_csv), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == 9


def test_auto_ranks_candidates(capsys):
    args = ["schedule", "auto", "--ranks", "4", "--microbatches", "8", "--memory-limit", "4"]
    assert main([*args, "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    fitting = [c for c in ranked if c["fits"]]
    assert fitting and all(c["memory"] <= 4 for c in fitting)
    assert [c["makespan"] for c in fitting] == sorted(c["makespan"] for c in fitting)
    assert {c["name"] for c in ranked if not c["fits"]} >= {"gpipe", "looped-bfs"}
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"best: {fitting[0]['name']} (v={fitting[0]['virtual_stages']}" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "/nonexistent/x.csv"], "error: cannot read schedule file /nonexistent/x.csv"),
        (["1f1b", "--from", "x.csv"], "error: give a schedule name or --from FILE, not both"),
        ([], "error: name a schedule (see --help), or read one with --from FILE"),
        (["auto", "--memory-limit", "0.5"], "error: no schedule fits memory_limit=0.5"),
        (["auto", "--try-microbatches", "4,x"], "error: --try-microbatches: expected integers"),
    ],
)
def test_file_and_auto_errors(capsys, args, message):
    assert main(["schedule", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
