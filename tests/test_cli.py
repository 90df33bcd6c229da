"""The hlopipe command: inspect, run, demo; errors as one line and exit status 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe.cli import main
from hlopipe.errors import StageError


def f(x, w):
    return jnp.tanh(x @ w), x.sum()


X = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
W = jnp.ones((3, 2), jnp.float32) * 0.5


@pytest.fixture(scope="module")
def hlo_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "f.hlo"
    path.write_text(jax.jit(f).lower(X, W).as_text(dialect="hlo"))
    return path


def test_inspect_json(hlo_file, capsys) -> None:
    assert main(["inspect", str(hlo_file), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "hlo-text"
    assert info["inputs"] == ["f32[2,3]", "f32[3,2]"]
    assert info["outputs"] == ["f32[2,2]", "f32[]"]
    assert sum(n for op, n in info["ops"].items() if op.startswith("stablehlo.dot")) == 1
    assert info["flops"] > 0
    assert info["stage_markers"] == 0 and info["unsupported"] == []


def test_inspect_table_lists_unsupported(tmp_path, capsys) -> None:
    path = tmp_path / "u.mlir"
    path.write_text(
        "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
        '  %0 = "foo.bar"(%x) : (tensor<3xf32>) -> tensor<3xf32>\n'
        "  return %0 : tensor<3xf32>\n}\n"
    )
    assert main(["inspect", str(path), "--no-cost"]) == 0
    out = capsys.readouterr().out
    assert "stablehlo-text" in out and "unsupported ops (1)" in out and "foo.bar" in out


def test_run_with_inputs_and_outputs(hlo_file, tmp_path, capsys) -> None:
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, arg0=np.asarray(X), arg1=np.asarray(W))
    assert main(["run", str(hlo_file), "--inputs", str(inputs), "--outputs", str(outputs)]) == 0
    out = capsys.readouterr().out
    assert "out0: f32[2,2]" in out and "out1: f32[]" in out
    got = np.load(outputs)
    want = f(X, W)
    np.testing.assert_allclose(got["out0"], want[0], rtol=1e-6)
    np.testing.assert_allclose(got["out1"], want[1], rtol=1e-6)


def test_run_random_inputs_are_seeded(hlo_file, capsys) -> None:
    assert main(["run", str(hlo_file), "--seed", "3"]) == 0
    first = capsys.readouterr().out
    assert main(["run", str(hlo_file), "--seed", "3", "--no-jit"]) == 0
    assert capsys.readouterr().out.split("out1")[1] == first.split("out1")[1]


def test_errors_are_one_line_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule broken\n\nENTRY main {\n  p = f32[2] parameter(0\n}\n")
    assert main(["inspect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "not valid HLO text" in err
    assert main(["run", str(tmp_path / "missing.hlo")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow  # compiles the tiny GPT's value_and_grad twice: tens of seconds on 2 cores
def test_demo(capsys, monkeypatch) -> None:
    from hlopipe import demo

    # the command's whole path, training 3 steps of the demo's 30 (`make demo` trains 30;
    # the pipeline vs one device on the demo's layout: tests/runtime/test_pipeline.py)
    monkeypatch.setattr(demo, "DEMO_STEPS", 3)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "matches the original" in out
    assert "in 3 steps" in out and "pipeline training matches one-device training" in out
    from hlopipe.demo import demo_files

    assert f"hlopipe inspect {demo_files()[0]}" in out  # the full path, to look at next
    assert "compiling value_and_grad" in out and "compiling each stage" in out
    assert "why the bubble is large here" in out
    # issue 38: the summary's training time is what the progress bar's clock shows
    clock = re.findall(r"step 3/3 loss \S+ (\d+:\d\d:\d\d)", out)
    assert clock and re.search(rf"pipeline: {clock[-1]} \([\d.]+ s\) training, as the bar", out)
    # the pipeline's last rank line ends there, a blank line after it
    lines = out.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("  rank 3:"))
    assert lines[last].endswith("process 0") and lines[last + 1] == ""
    # the picture's path on a line of its own
    picture = os.path.join(tempfile.gettempdir(), "hlopipe-demo-timeline.png")
    assert picture in [line.strip() for line in lines]


def test_demo_output_is_not_wrapped_when_piped() -> None:
    import io

    from hlopipe.demo import demo_console

    buf = io.StringIO()
    line = "word " * 40  # 200 columns
    demo_console(buf).print(line)
    assert buf.getvalue().strip() == line.strip()


def test_real_process_error_line() -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "hlopipe", "run", "/nonexistent/model.hlo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "no such file" in lines[0]
    assert "Traceback" not in proc.stderr


# ---- train: the arguments' roles ------------------------------------------------------------


def mlp_loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w"] + params["b"]) - y) ** 2)


def lifted_loss(p0, p1, p2):
    """torch_xla's shape: generic names, the input at position 0, a scale lifted into p2."""
    return jnp.mean((jnp.tanh(p0 @ p1) * p2) ** 2)


TRAIN_FAST = ["--stages", "1", "--stage-devices", "1", "--steps", "2", "--microbatches", "2"]


def test_train_takes_float_x_and_y_as_the_batch_by_name(tmp_path, capsys) -> None:
    """A loss (params, x, y) with float x and y: the names make x and y the batch (the dtype
    rule used to train x as a parameter), and the plan says which rule chose."""
    sds = jax.ShapeDtypeStruct
    args = ({"w": sds((3, 2), jnp.float32), "b": sds((2,), jnp.float32)},
            sds((4, 3), jnp.float32), sds((4, 2), jnp.float32))  # fmt: skip
    path = tmp_path / "mlp.hlo"
    path.write_text(jax.jit(mlp_loss).lower(*args).as_text(dialect="hlo"))
    assert main(["train", str(path), *TRAIN_FAST, "--check"]) == 0
    out = capsys.readouterr().out
    assert "batch     x, y (by name: the arguments outside params)" in out
    assert "2 parameters (8 values) + a microbatch of 2 (f32[4,3], f32[4,2])" in out
    assert re.search(r"max \|loss difference\| \S+ \(match\)", out)


def test_train_freezes_lifted_scalars_and_takes_one_batch_position(tmp_path, capsys) -> None:
    sds = jax.ShapeDtypeStruct
    args = (sds((4, 3), jnp.float32), sds((3, 2), jnp.float32), sds((), jnp.float32))
    path = tmp_path / "lifted.hlo"
    path.write_text(jax.jit(lifted_loss).lower(*args).as_text(dialect="hlo"))
    # without their values: one line that says what they are and how to give them
    assert main(["train", str(path), "--batch-args", "0", *TRAIN_FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "arguments 2 (f32[]) are scalars, taken as constants" in err
    assert "give every argument that is not the batch with --params FILE.npz" in err
    values = tmp_path / "values.npz"
    np.savez(values, w=np.full((3, 2), 0.3, np.float32), scale=np.float32(0.7978))
    argv = ["train", str(path), "--batch-args", "0", "--params", str(values), *TRAIN_FAST]
    assert main([*argv, "--check"]) == 0
    out = capsys.readouterr().out
    assert "batch     argument 0 (as --batch-args 0 says)" in out
    assert "frozen    2 (f32[]): scalars lifted into arguments, never trained" in out
    assert "1 parameters (6 values) + a microbatch of 1 (f32[4,3], arguments 0)" in out
    # generic names (p0, p1, p2): nothing to check the roles against, and said so
    assert re.search(
        r"max \|loss difference\| \S+ \(the pipeline agrees\); the roles are UNCHECKED", out
    )
    assert "(match)" not in out


def layers_loss(params, x, y):
    h = x
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        h = jnp.tanh(h) if i < 3 else h
    return jnp.mean((h - y) ** 2)


def test_train_a_jax_export_by_its_tree_and_check_a_wrong_plan(tmp_path, capsys) -> None:
    """loss(params, x, y), params four {"w", "b"} layers, exported with jax.export: the tree
    makes 8 parameters and a batch of x, y (the dtype rule trained x at random, and --check
    matched: both sides ran the same plan). A wrong --batch-args is not a match."""
    sds = jax.ShapeDtypeStruct
    f32 = jnp.float32
    params = [
        {"w": sds((a, b), f32), "b": sds((b,), f32)} for a, b in ((3, 4), (4, 4), (4, 4), (4, 1))
    ]
    path = tmp_path / "layers.jax_export"
    exported = jax.export.export(jax.jit(layers_loss))(params, sds((4, 3), f32), sds((4, 1), f32))
    path.write_bytes(exported.serialize())
    assert main(["train", str(path), *TRAIN_FAST, "--check"]) == 0
    out = capsys.readouterr().out
    assert "10 arguments = 8 parameters (61 values) + a microbatch of 2 (f32[4,3], f32[4,1])" in out
    assert "batch     [1], [2] (by the program's tree (jax.export)" in out
    assert re.search(r"called directly with the roles by its tree .* \(match\)", out)
    assert main(["train", str(path), *TRAIN_FAST, "--check", "--batch-args", "9"]) == 1
    out = capsys.readouterr().out
    assert "check: NO MATCH: the plan's roles are not the program's" in out
    assert (
        "argument 8 [1] (f32[4,3]) is a parameter in the plan, in the batch by the program" in out
    )
    assert "(match)" not in out


def test_train_refuses_a_schedule_that_would_be_no_pipeline(hlo_file, capsys) -> None:
    assert main(["train", str(hlo_file), "--stages", "2", "--schedule", "interleaved-1f1b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: schedule 'interleaved-1f1b' puts 2 stages on each rank") and (
        "choose --stages 4 (2 ranks), --virtual-stages 1 (2 ranks of one stage)" in err
    ), err


def test_train_batch_args_errors_show_the_syntax(tmp_path, capsys) -> None:
    path = tmp_path / "lifted.hlo"
    sds = jax.ShapeDtypeStruct
    args = (sds((4, 3), jnp.float32), sds((3, 2), jnp.float32), sds((), jnp.float32))
    path.write_text(jax.jit(lifted_loss).lower(*args).as_text(dialect="hlo"))
    for spec, words in (
        ("x", "--batch-args x: expected positions from 0 such as 0 (one argument), 0,1 or 2-4"),
        ("0,5", "--batch-args 0,5: positions must be distinct, from 0 to 2"),
        ("2", "are taken as the batch, but a scalar has no batch axis; set --batch-args ("),
    ):
        assert main(["train", str(path), "--batch-args", spec]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and words in err and "last:N" in err, err


def test_inspect_reports_a_refused_loop_analysis_and_lets_a_bug_through(
    hlo_file, capsys, monkeypatch
) -> None:
    """What the splitter refuses is a line of the report; any other error is a bug and
    propagates (it is not turned into "loops not analysed")."""
    import hlopipe.stages

    def refuse(prog):
        raise StageError("a loop of another form")

    monkeypatch.setattr(hlopipe.stages, "describe_loops", refuse)
    assert main(["inspect", str(hlo_file), "--json", "--no-cost"]) == 0
    assert json.loads(capsys.readouterr().out)["loops"] == [
        "(loops not analysed: a loop of another form)"
    ]

    def bug(prog):
        raise ZeroDivisionError("a bug in the analysis")

    monkeypatch.setattr(hlopipe.stages, "describe_loops", bug)
    with pytest.raises(ZeroDivisionError, match="a bug in the analysis"):
        main(["inspect", str(hlo_file), "--json", "--no-cost"])
