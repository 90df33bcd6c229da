"""A new user's first hour through the real command: `python -m hlopipe ...` in a subprocess.

The program is a tiny two-stage classifier exported here (seconds to compile), written as an
XLA dump folder with two modules so that `--module` is needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe import training
from hlopipe.cli import main
from hlopipe.cli._common import COMMANDS, one_line
from hlopipe.errors import Keyword, LoadError, RuntimeConfigError

VOCAB, SEQ, D, CLASSES, BATCH = 8, 3, 8, 4, 4


def loss(params, batch):
    tokens, targets = batch
    h = params["embed"][tokens].mean(axis=1)
    h = h @ params["l1"]["w"] + params["l1"]["b"]
    mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = jnp.tanh((h - mu) / jnp.sqrt(var + 1e-5) * params["ln"]["g"] + params["ln"]["b"])
    h = hlopipe.stage_boundary(h)
    logits = h @ params["out"]["w"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, targets[:, None], axis=1))


def shapes():
    f32 = jnp.float32
    params = {
        "embed": jax.ShapeDtypeStruct((VOCAB, D), f32),
        "l1": {"w": jax.ShapeDtypeStruct((D, D), f32), "b": jax.ShapeDtypeStruct((D,), f32)},
        "ln": {"g": jax.ShapeDtypeStruct((D,), f32), "b": jax.ShapeDtypeStruct((D,), f32)},
        "out": {"w": jax.ShapeDtypeStruct((D, CLASSES), f32)},
    }
    batch = (
        jax.ShapeDtypeStruct((BATCH, SEQ), jnp.int32),
        jax.ShapeDtypeStruct((BATCH,), jnp.int32),
    )
    return params, batch


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("dump")
    hlo = jax.jit(loss).lower(*shapes()).as_text(dialect="hlo")
    (d / "module_0001.jit_loss.before_optimizations.txt").write_text(hlo)
    other = jax.jit(lambda x: x * 2).lower(jnp.ones(3)).as_text(dialect="hlo")
    (d / "module_0002.jit_double.before_optimizations.txt").write_text(other)
    return d


def hlopipe_cmd(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "hlopipe", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


# ---- 1. train: defaults, --check, --save / --resume -------------------------------------------


def test_train_defaults_check_save_resume(dump_dir, tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    proc = hlopipe_cmd(
        "train", str(dump_dir), "--module", "jit_loss", "--cpu-devices", "4",
        "--microbatches", "2", "--steps", "4", "--check", "--save", str(ckpt),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "stages    2, at the program's 1 stage markers" in out
    # 2 ranks x 2 devices: every local device is used (the microbatch of 4 splits in 2)
    assert "2 ranks x 2 CPU device(s) of the 4 local ones" in out
    assert "2 microbatches of 4 = a batch of 8" in out
    assert "initialised by role" in out and "2 norm scales = 1" not in out
    assert "1 norm scales = 1" in out and "2 biases = 0" in out
    losses = [float(x) for x in re.findall(r"^step +\d+ +loss ([\d.]+)", out, re.M)]
    assert len(losses) == 4 and losses[-1] < losses[0] - 0.05  # the fixed batch is learnt
    m = re.search(r"max \|loss difference\| ([\d.e+-]+) \(match\)", out)
    assert m and float(m.group(1)) < 1e-4
    assert (ckpt / "step_00000004" / "meta.json").exists()

    again = hlopipe_cmd(
        "train", str(dump_dir), "--module", "jit_loss", "--cpu-devices", "4",
        "--microbatches", "2", "--steps", "5", "--resume", str(ckpt),
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resumed from step 4 of" in again.stdout
    resumed = float(re.search(r"^step +5 +loss ([\d.]+)", again.stdout, re.M).group(1))
    assert resumed < losses[-1]  # went on from the trained parameters, not from scratch


def test_parameters_follow_their_role() -> None:
    rng = np.random.default_rng(0)
    f32 = jax.ShapeDtypeStruct((8,), jnp.float32)
    mat = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    ones, role = training.init_by_role("params__layers___0___ln1____g__", f32, rng)
    assert role == "norm scales = 1" and (ones == 1).all()
    zeros, role = training.init_by_role("params['l1']['b']", f32, rng)
    assert role == "biases = 0" and (zeros == 0).all()
    ln_w, _ = training.init_by_role("model.layernorm.weight", f32, rng)
    assert (ln_w == 1).all()
    w, role = training.init_by_role("params['l1']['w']", mat, rng)
    assert role.startswith("matrices") and abs(w.std() - 0.25) < 0.08  # 1/sqrt(fan_in 16)


def test_train_without_names_says_parameters_are_random(tmp_path) -> None:
    text = (
        "HloModule m, entry_computation_layout={(f32[3,2]{1,0}, s32[4,3]{1,0})->f32[]}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = f32[] add(a, b)\n}\n"
        "ENTRY e {\n  Arg_0.1 = f32[3,2]{1,0} parameter(0)\n"
        "  Arg_1.2 = s32[4,3]{1,0} parameter(1)\n  c = f32[4,3]{1,0} convert(Arg_1.2)\n"
        "  d = f32[4,2]{1,0} dot(c, Arg_0.1), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n  z = f32[] constant(0)\n"
        "  ROOT s = f32[] reduce(d, z), dimensions={0,1}, to_apply=add\n}\n"
    )
    path = tmp_path / "noname.hlo"
    path.write_text(text)
    plan = training.plan_training(hlopipe.load(path))
    note = plan.describe(COMMANDS["train"].flags)["params"]
    assert note.startswith("RANDOM -- pass --params FILE.npz")
    assert "the program carries no argument names" in note
    # from Python, the same words name the keyword argument
    assert plan.describe()["params"].startswith("RANDOM -- pass params=FILE.npz")


# ---- 2. --module on every command that takes a file -------------------------------------------


def test_module_on_every_file_command(dump_dir, tmp_path, capsys) -> None:
    assert main(["inspect", str(dump_dir), "--module", "jit_double", "--no-cost"]) == 0
    assert main(["run", str(dump_dir), "--module", "jit_double"]) == 0
    assert "out0: f32[3]" in capsys.readouterr().out
    out = tmp_path / "split"
    assert (
        main(["split", str(dump_dir), "--module", "jit_loss", "--at-markers", "-o", str(out)]) == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == 2 and "params" not in manifest["stages"][0]
    first = {a["path"] for a in manifest["stages"][0]["arguments"]}
    last = {a["path"] for a in manifest["stages"][1]["arguments"]}
    assert {"params__embed__", "batch_0_"} <= first and "batch_1_" in last  # names, not "[5]"
    capsys.readouterr()
    assert main(["inspect", str(out / "stage1.hlo"), "--json", "--no-cost"]) == 0
    names = json.loads(capsys.readouterr().out)["input_names"]
    assert names[-1] == "from stage 0 output 0" and "batch_1_" in names
    assert main(["inspect", str(out / "manifest.json")]) == 0
    assert "  stage 1: " in capsys.readouterr().out
    capsys.readouterr()
    assert main(["split", str(dump_dir), "--at-markers", "-o", str(tmp_path / "x")]) == 2
    assert "--module NAME" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["train", str(dump_dir), "--module", "jit_lsos"]) == 2
    assert "did you mean 'jit_loss'" in capsys.readouterr().err


# ---- 3. path mistakes: one error line, before any work ------------------------------------------


def test_path_mistakes_are_one_line(dump_dir, tmp_path, capsys) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    cases = [
        (["run", str(dump_dir), "--module", "jit_double", "--outputs", "/missing/dir/o.npz"],
         "the folder /missing/dir does not exist"),
        (["split", str(dump_dir), "--module", "jit_loss", "--at-markers", "-o", str(afile)],
         "is a file, not a folder"),
        (["schedule", "1f1b", "--plot", "/missing/x.png"], "the folder /missing does not exist"),
        (["schedule", "1f1b", "--plot", str(tmp_path / "x.txt")], "not '.txt'"),
        (["train", str(dump_dir), "--module", "jit_loss", "--plot", "/missing/t.png"],
         "the folder /missing does not exist"),
        (["train", str(dump_dir), "--module", "jit_loss", "--resume", str(tmp_path)],
         "no checkpoint there"),
        (["train", str(dump_dir), "--module", "jit_loss", "--schedule", "1fb1"],
         "did you mean '1f1b'"),
    ]  # fmt: skip
    for argv, words in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], (argv, err)
        assert "step" not in captured.out  # nothing ran before the check
    assert not (tmp_path / "x.txt").exists()


def test_real_process_path_error_and_broken_pipe(dump_dir) -> None:
    line = one_error_line(hlopipe_cmd("schedule", "1f1b", "--plot", "/missing/x.png"))
    assert "--plot /missing/x.png" in line
    line = one_error_line(hlopipe_cmd("trian"))
    assert "did you mean 'train'" in line
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlopipe", "inspect", str(dump_dir), "--module", "jit_loss",
         "--json", "--no-cost"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written, as with `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_inspect_shows_argument_names(dump_dir, capsys) -> None:
    assert main(["inspect", str(dump_dir), "--module", "jit_loss", "--json", "--no-cost"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["input_names"][:2] == ["params__embed__", "params__l1____b__"]
    assert main(["inspect", str(dump_dir), "--module", "jit_loss", "--no-cost"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s+5\s+params__out____w__\s+f32\[8,4\]", out, re.M), out


# ---- 8. a multi-process failure ends with one line; C++ logs go to a log file -------------------

NOISY_CHILD = """
import os, sys
rank = os.environ["HLOPIPE_PROCESS_ID"]
print("training on rank", rank, flush=True)
if rank == "1":
    err = sys.stderr
    print("E1130 21:34:23.935689   15042 coordination_service.cc:1549] error polling: "
          "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):", file=err)
    print("1", file=err)
    print("RPC: /xla.coordination.CoordinationService/PollForError "
          "[type.googleapis.com/tensorflow.CoordinationServiceError='']", file=err)
    print("*** Begin stack trace ***", file=err)
    print("\\t@ 0x7f00 tsl::CurrentStackTrace()", file=err)
    print("*** End stack trace ***", file=err)
    print("hlopipe: rank 1 stops: its peer is gone", file=err)
    sys.exit(3)
"""


def test_launch_failure_keeps_cpp_noise_in_a_log() -> None:
    proc = hlopipe_cmd("launch", "--nproc", "2", "--", sys.executable, "-c", NOISY_CHILD)
    assert proc.returncode == 3
    assert "[rank 1] hlopipe: rank 1 stops: its peer is gone" in proc.stdout
    assert "[rank 0] training on rank 0" in proc.stdout
    for noise in ("coordination_service.cc", "RPC: /xla", "stack trace", "@ 0x7f00"):
        assert noise not in proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    m = re.match(r"error: the job failed with exit code 3 .* full output: (\S+)$", line)
    assert m, line
    log = Path(m.group(1)).read_text()
    assert "coordination_service.cc:1549]" in log and "@ 0x7f00" in log
    Path(m.group(1)).unlink()


def test_errors_name_flags_not_keywords(dump_dir, tmp_path, capsys) -> None:
    argv = ["split", str(dump_dir), "--module", "jit_loss", "--stages", "3", "-o", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "remove --stages or the markers" in err and "num_stages" not in err
    assert "first marker in " in err and "hlopipe/rehydrate" not in err  # the user's file
    # the error's keyword fields, not its words, become the command's flags
    e = RuntimeConfigError(
        "choose ", Keyword("num_microbatches"), " dividing 32; a smaller ",
        Keyword("stage_mesh_shape"), "; num_microbatches=3 as text stays",
    )  # fmt: skip
    assert e.keywords == (Keyword("num_microbatches"), Keyword("stage_mesh_shape"))
    assert str(e).startswith("choose num_microbatches dividing 32; a smaller stage_mesh_shape")
    assert one_line(e, "train") == (
        "choose --microbatches dividing 32; a smaller --stage-devices; "
        "num_microbatches=3 as text stays"
    )
    assert one_line(LoadError("pick one with ", Keyword("module", "NAME"), ": a"), "run") == (
        "pick one with --module NAME: a"
    )
    assert main(["split", str(dump_dir), "--at-markers", "-o", str(tmp_path / "y")]) == 2
    assert "pick one with --module NAME: " in capsys.readouterr().err
    npy = tmp_path / "a.npy"
    np.save(npy, np.ones(3))
    assert main(["run", str(dump_dir), "--module", "jit_double", "--inputs", str(npy)]) == 2
    assert "a single .npy array, not an .npz file" in capsys.readouterr().err
