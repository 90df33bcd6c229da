"""Issue 38: a new user's papercuts, each through the command as a user types it (``main``
with the arguments of the command line), reading what it prints.

The program is a tiny two-stage loss written here as StableHLO text (a marker between the
stages), small enough that splitting and training it take seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe import schedules
from hlopipe.cli import main


def loss(w, x):
    h = hlopipe.stage_boundary(jnp.tanh(x @ w))
    return jnp.mean((h @ w) ** 2)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("papercuts")
    path = d / "f.mlir"
    path.write_text(jax.jit(loss).lower(jnp.ones((4, 4)), jnp.ones((2, 4))).as_text())
    return path


def error_line(capsys) -> str:
    """The one line a user error prints (stderr), checked to be one ``error:`` line."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


# ---- output paths: checked, by creating them, before any work ---------------------------------


def test_output_paths_that_cannot_be_written_fail_first(program, tmp_path, capsys) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    cases = [
        # /proc takes no new folder, even from root (whose permission bits say yes)
        (["split", str(program), "--stages", "2", "-o", "/proc/nope"],
         "-o /proc/nope: cannot create the folder"),
        (["split", str(program), "--stages", "2", "-o", f"{afile}/sub"],
         f"{afile} is a file, not a folder"),
        (["split", str(program), "--stages", "2", "-o", f"{afile}/sub/deeper"],
         f"{afile} is a file, not a folder"),
        (["schedule", "1f1b", "--plot", f"{afile}/x.png"], f"{afile} is a file, not a folder"),
        (["schedule", "1f1b", "--plot", "/proc/x.png"],
         "--plot /proc/x.png: cannot create the file"),
    ]  # fmt: skip
    for argv, words in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], (argv, err)
        assert captured.out == ""  # nothing ran before the check
    assert afile.read_text() == "" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_probe_leaves_nothing_behind(program, tmp_path, capsys) -> None:
    out = tmp_path / "new"
    plot = tmp_path / "p.png"
    assert (
        main(["schedule", "1f1b", "--ranks", "2", "--microbatches", "2", "--plot", str(plot)]) == 0
    )
    capsys.readouterr()
    assert plot.stat().st_size > 0  # written by the command, after the probe removed its own
    # a run that fails after the check (no such program): the probed folder is not left behind
    assert main(["split", str(tmp_path / "missing.mlir"), "--stages", "2", "-o", str(out)]) == 2
    assert "no such file" in error_line(capsys)
    assert not out.exists()


# ---- files that are not what they should be: named, with what they are ------------------------


def test_load_errors_name_the_file_and_what_is_wrong(program, tmp_path, capsys) -> None:
    from jax import export

    whole = export.export(jax.jit(loss))(jnp.ones((4, 4)), jnp.ones((2, 4))).serialize()
    cut = tmp_path / "cut.jax"
    cut.write_bytes(whole[: len(whole) // 2])
    noise = tmp_path / "noise.bin"
    noise.write_bytes(b"\xff\xff\xff\xff" + bytes(range(200, 256)) * 3)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello world, some notes\n")

    assert main(["inspect", str(cut)]) == 2
    line = error_line(capsys)
    assert f"{cut}: not a valid jax.export artifact: truncated or corrupt" in line
    assert f"({len(whole) // 2} bytes" in line
    assert main(["inspect", str(noise)]) == 2
    assert error_line(capsys).startswith(f"error: {noise} is in no known format")
    assert main(["inspect", str(notes)]) == 2
    line = error_line(capsys)
    assert line.startswith(f"error: {notes} is text but neither HLO text") and "hello" in line


def test_params_that_are_not_an_npz(program, tmp_path, capsys) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("w = 1\n")
    single = tmp_path / "one.npy"
    np.save(single, np.ones(3, np.float32))
    objects = tmp_path / "objects.npz"
    np.savez(objects, a=np.array([{"a": 1}], dtype=object))
    cases = [
        (["train", str(program), "--params", str(notes)],
         f"--params {notes}: not an .npz of arrays"),
        (["run", str(program), "--inputs", str(notes)], f"--inputs {notes}: not an .npz of arrays"),
        (["generate", str(program), "--params", str(notes)],
         f"--params {notes}: not an .npz of arrays"),
        (["train", str(program), "--params", str(single)], "a single .npy array, not an .npz"),
        (["train", str(program), "--params", str(objects)],
         "not an .npz of arrays (it holds pickled objects)"),
    ]  # fmt: skip
    for argv, words in cases:
        assert main(argv) == 2, argv
        line = error_line(capsys)
        assert words in line and "allow_pickle" not in line, (argv, line)
        # a text file is not said to hold pickled data (numpy's guess for any non-zip file)
        assert ("pickle" in line) == (argv[-1] == str(objects)), (argv, line)


# ---- inspect DIR of a split ----------------------------------------------------------------


def test_inspect_reads_the_folder_split_wrote(program, tmp_path, capsys) -> None:
    out = tmp_path / "stages"
    assert main(["split", str(program), "--at-markers", "--no-autodiff", "-o", str(out)]) == 0
    capsys.readouterr()
    # the oracle: what `inspect DIR/manifest.json` (the documented way) prints
    assert main(["inspect", str(out / "manifest.json")]) == 0
    want = capsys.readouterr().out
    assert main(["inspect", str(out)]) == 0
    got = capsys.readouterr()
    assert got.err == "" and got.out == want
    assert "2 stages" in got.out and "stage 1:" in got.out


# ---- the same "did you mean" from every front end ------------------------------------------


def test_unknown_schedule_names_suggest_the_close_one(program, capsys) -> None:
    for typo, meant in (("1f1bb", "1f1b"), ("gpipe2", "gpipe"), ("dualpipe", "dualpipev")):
        assert main(["schedule", typo]) == 2
        assert f"did you mean {meant!r}" in error_line(capsys)
        with pytest.raises(hlopipe.errors.ScheduleError, match=f"did you mean {meant!r}"):
            schedules.get(typo, 2, 4)
    assert main(["schedule", "nope"]) == 2
    assert "did you mean" not in error_line(capsys)  # nothing close: only the list


# ---- generate: the command's words in the command, Python's in Python ----------------------


def test_generate_without_state_speaks_each_front_ends_language(program, capsys) -> None:
    from hlopipe.errors import RuntimeConfigError

    assert main(["generate", str(program)]) == 2
    line = error_line(capsys)
    assert "no argument is state" in line and "donate_argnums" in line
    assert "or pass state=" not in line  # the command has no such flag
    assert "from Python" in line and "Generator(..., state=" in line
    with pytest.raises(RuntimeConfigError) as e:
        hlopipe.generate.Generator(hlopipe.load(str(program)), None)
    assert "or pass state=[argument paths]" in str(e.value) and "from Python" not in str(e.value)


# ---- schedule: a grid that fits the terminal, the costs it assumed -------------------------


def test_a_wide_schedule_is_wrapped_to_the_terminal(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["schedule", "dualpipev", "--ranks", "4", "--microbatches", "8"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    # the oracle: the unwrapped grid's cells, rank by rank, in order
    whole = schedules.format_grid(schedules.align(schedules.get("dualpipev", 4, 8)))
    assert max(len(line) for line in whole.splitlines()) > 80  # there was something to wrap
    want = {row.split("  ", 1)[0]: row.split()[2:] for row in whole.splitlines()[1:]}
    got: dict[str, list[str]] = {}
    for row in out.splitlines():
        if m := re.match(r"(rank \d+)  (.*)", row):
            got.setdefault(m.group(1), []).extend(m.group(2).split())
    assert got == want
    steps = [int(t) for row in out.splitlines() if row.startswith("step ") for t in row.split()[1:]]
    assert steps == list(range(len(next(iter(want.values())))))


def test_schedule_auto_prints_the_costs_it_assumed(capsys) -> None:
    assert main(["schedule", "auto", "--ranks", "2", "--microbatches", "4"]) == 0
    out = capsys.readouterr().out
    # the defaults the docs state: F=1, B=2, I=1, W=1, send=0
    assert "costs assumed: F=1 B=2 I=1 W=1 send=0" in out
    assert main(["schedule", "auto", "--ranks", "2", "--microbatches", "4", "--costs", "B=4"]) == 0
    out = capsys.readouterr().out
    assert "costs: F=1 B=4 I=2 W=2 send=0" in out  # given B alone, I = W = B / 2


# ---- the timeline picture: a fused forward+backward is drawn as one -------------------------


def test_train_plot_draws_the_fused_forward_backward(program, tmp_path, monkeypatch, capsys):
    from matplotlib.colors import to_rgb

    from hlopipe.schedules._ir import Kind
    from hlopipe.schedules._plot import COLOURS, FUSED_COLOUR, _figure

    drawn = []
    real_plot = schedules.plot

    def plot(timeline, path, **kwargs):  # the command's own plot, its timeline kept to look at
        drawn.append(timeline)
        real_plot(timeline, path, **kwargs)

    monkeypatch.setattr(schedules, "plot", plot)
    png = tmp_path / "t.png"
    argv = ["train", str(program), "--steps", "1", "--microbatches", "2", "--cpu-devices", "2",
            "--plot", str(png)]  # fmt: skip
    assert main(argv) == 0
    assert f"timeline written to {png}" in capsys.readouterr().out and png.stat().st_size > 0
    (tl,) = drawn
    # the oracle, from the schedule alone: 1F1B's last rank runs each microbatch's F and B
    # back to back, and that stage holds the loss, so the runtime fuses every one of them
    rows = schedules.get("1f1b", 2, 2).actions[1]
    assert [str(a) for a in rows] == ["1F0", "1B0", "1F1", "1B1"]
    assert tl.fused == {(1, 0), (1, 1)}

    fig = _figure(tl)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "FB (forward + backward fused)" in labels
    rects = [p for p in fig.axes[0].patches if p.get_height() == 0.8 and p.get_fill()]
    on_rank = {r: [p for p in rects if abs(p.get_y() + 0.4 - r) < 1e-9] for r in (0, 1)}
    colour = {r: [p.get_facecolor()[:3] for p in ps] for r, ps in on_rank.items()}
    fb, f, b = (tuple(to_rgb(c)) for c in (FUSED_COLOUR, COLOURS[Kind.F], COLOURS[Kind.B]))
    assert colour[1] == [fb, fb]  # rank 1: two FB boxes, no lone F, no B
    assert sorted(colour[0]) == sorted([f, f, b, b])  # rank 0 as before
