"""``hlopipe schedule``: the grid and numbers, JSON, files, and one-line errors."""

import json

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
