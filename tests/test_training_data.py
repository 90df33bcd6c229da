"""`hlopipe train` on a dataset: a token file read in file order gives the losses of a plain JAX
loop over the same samples; a run killed between saves and resumed gives the uninterrupted
run's losses; the log reads back. The oracle is the model's own JAX function and optax on one
device, never hlopipe's plan."""

from __future__ import annotations

import json
import re
import shutil
import struct
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe import training
from hlopipe.cli import main

V, D, S, MB, M = 16, 8, 8, 2, 2  # vocabulary, width, sequence, microbatch, microbatches
B = MB * M  # samples a step takes
LR = 0.05


def token_loss(params, tokens, labels):
    h = jnp.tanh(params["emb"][tokens] @ params["w1"]) * params["ln1"]
    h = hlopipe.stage_boundary(h)
    logp = jax.nn.log_softmax((h * params["lnf"]) @ params["out"])
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def init_params():
    k1, k2, k3, k4 = jax.random.split(jax.random.key(1), 4)
    return {
        "emb": jax.random.normal(k1, (V, D)),
        "ln1": 1.0 + 0.1 * jax.random.normal(k4, (D,)),  # norm gains, named as GPT-2's
        "lnf": jnp.full((D,), 0.9),
        "out": jax.random.normal(k2, (D, V)) * 0.5,
        "w1": jax.random.normal(k3, (D, D)) * 0.5,
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The loss as HLO text, its initial parameters (argument order), a token file of 2 full
    batches and one sample more (the remainder an epoch drops), an eval token file."""
    d = tmp_path_factory.mktemp("tokens")
    tok = jax.ShapeDtypeStruct((MB, S), jnp.int32)
    hlo = jax.jit(token_loss).lower(init_params(), tok, tok).as_text(dialect="hlo")
    (d / "loss.hlo").write_text(hlo)
    np.savez(d / "init.npz", *jax.tree.leaves(init_params()))
    rng = np.random.default_rng(0)
    n_samples = 2 * B + 1
    tokens = rng.integers(0, V, n_samples * S + 1).astype(np.uint16)
    tokens.tofile(d / "train.bin")
    rng.integers(0, V, 2 * B * S + 1).astype(np.uint16).tofile(d / "eval.bin")
    return d, tokens


def plain_jax_losses(tokens: np.ndarray, order: list[list[int]]) -> list[float]:
    """A plain JAX loop: step k's batch is the samples ``order[k]`` of the token file."""
    return plain_jax_run(tokens, order)[0]


def plain_jax_run(
    tokens: np.ndarray, order: list[list[int]], opt: Any = None
) -> tuple[list[float], dict]:
    """The losses of the plain loop and its parameters after the last step (``opt``:
    optax.adam(LR))."""
    opt = optax.adam(LR) if opt is None else opt

    @jax.jit
    def step(params, st, x, y):
        value, g = jax.value_and_grad(token_loss)(params, x, y)
        u, st = opt.update(g, st, params)
        return optax.apply_updates(params, u), st, value

    params = init_params()
    st = opt.init(params)
    losses = []
    for samples in order:
        x, y = windows(tokens, samples)
        params, st, value = step(params, st, x, y)
        losses.append(float(value))
    return losses, params


def windows(tokens: np.ndarray, samples: Any) -> tuple[np.ndarray, np.ndarray]:
    """Samples ``samples`` of a token file as (tokens, labels), by the issue's definition."""
    x = np.stack([tokens[j * S : j * S + S] for j in samples]).astype(np.int32)
    y = np.stack([tokens[j * S + 1 : j * S + S + 1] for j in samples]).astype(np.int32)
    return x, y


def train(d, *extra: str) -> int:
    argv = ["train", str(d / "loss.hlo"), "--data", str(d / "train.bin"), "--stage-devices", "1"]
    argv += ["--microbatches", str(M), "--params", str(d / "init.npz"), "--lr", str(LR), *extra]
    return main(argv)


def test_token_file_in_file_order_equals_a_plain_jax_loop(files, tmp_path, capsys) -> None:
    """Sample j is tokens[j*S : j*S+S] and its labels the window shifted by one; step k takes
    the next B samples; the 9th sample (an epoch's remainder) is never read; 3 steps go into
    the second epoch. The log folder reads back one record per step; --eval-data gives on
    evaluation steps the mean loss over the eval set's full batches, equal to the model's loss
    at the plain loop's parameters computed directly."""
    d, tokens = files
    logs = tmp_path / "logs"
    argv = ["--no-shuffle", "--steps", "3", "--log-dir", str(logs)]
    assert train(d, *argv, "--eval-data", str(d / "eval.bin"), "--eval-every", "2") == 0
    out = capsys.readouterr().out
    assert "9 (tokens, labels) windows of 8" in out and "2 steps an epoch" in out
    # the sample an epoch leaves out is said in the plan
    assert "the last 1 of its 9 samples are not read in an epoch" in out
    assert "stages    2, at the program's 1 stage markers" in out
    records = training.read_metrics(str(logs))
    assert [r.step for r in records] == [1, 2, 3]
    want = plain_jax_losses(tokens, [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]])
    np.testing.assert_allclose([r.loss for r in records], want, rtol=2e-5)
    for r in records:
        assert r.grad_norm > 0 and r.step_time_s > 0 and r.samples_per_s is None
        assert r.tokens_per_s == pytest.approx(B * S / r.step_time_s, rel=1e-6)
    assert 0 <= records[-1].bubble < 1  # simulated from the profiled step's costs
    assert records[0].eval_loss is None and records[2].eval_loss is not None  # and at the end
    params = plain_jax_run(tokens, [[0, 1, 2, 3], [4, 5, 6, 7]])[1]
    ev = np.fromfile(d / "eval.bin", np.uint16)
    want = np.mean([token_loss(params, *windows(ev, range(k, k + B))) for k in (0, B)])
    assert records[1].eval_loss == pytest.approx(float(want), rel=2e-5)
    # no ETA before a step that neither compiled nor was profiled (step 2 is, for the bubble)
    assert re.search(r"^step +1 +loss .* ETA -:--:--$", out, re.M)
    assert re.search(r"^step +3 +loss .* ETA 0:00:00$", out, re.M)


def test_kill_and_resume_equals_the_uninterrupted_run(files, tmp_path, capsys) -> None:
    """Shuffled by --seed: 4 steps straight; then 3 steps saving every 2, the last checkpoint
    lost (killed after step 3, before its save), resumed to 4 from step 2's checkpoint and its
    data position: steps 3 and 4 are the uninterrupted run's, and the log is appended."""
    d, _ = files
    straight, resumed, ckpt = tmp_path / "a", tmp_path / "b", tmp_path / "ckpt"
    assert train(d, "--steps", "4", "--seed", "3", "--log-dir", str(straight),
                 "--log-every", "2") == 0  # fmt: skip
    out = capsys.readouterr().out
    # --log-every 2: the lines of steps 2 and 4 only (metrics.jsonl keeps every step)
    assert re.findall(r"^step +(\d+) +loss", out, re.M) == ["2", "4"]
    argv = ["--seed", "3", "--log-dir", str(resumed), "--save-every", "2"]
    assert train(d, *argv, "--steps", "3", "--save", str(ckpt)) == 0
    assert sorted(p.name for p in ckpt.iterdir()) == ["step_00000002", "step_00000003"]
    shutil.rmtree(ckpt / "step_00000003")
    # a save killed part way (kill -9 while writing step 3 again): arrays, never committed
    (ckpt / ".tmp-step_00000003" / "params").mkdir(parents=True)
    (ckpt / ".tmp-step_00000003" / "params" / "half").write_bytes(b"\0" * 7)
    assert train(d, *argv, "--steps", "4", "--resume", str(ckpt), "-v") == 0
    out, err = capsys.readouterr()
    assert re.search(r"^params +from the checkpoint of step 2 in .*ckpt", out, re.M), out
    assert f"resumed from step 2 of {ckpt}" in out
    # the next save cleared what the killed save left; pruning kept the newest 2
    assert sorted(p.name for p in ckpt.iterdir()) == ["step_00000002", "step_00000004"]
    assert f"INFO hlopipe: data position restored from {ckpt}" in err  # -v: the hlopipe logger
    a = training.read_metrics(str(straight))
    b = training.read_metrics(str(resumed))
    # the killed run's step 3 was dropped: every step logged once, as the uninterrupted run
    assert [r.step for r in b] == [1, 2, 3, 4]
    assert "2 records of steps after 2" not in err and "1 records of steps after 2" in err
    np.testing.assert_allclose([r.loss for r in b], [r.loss for r in a], rtol=1e-6)
    # the shuffled order is not the file order (else resuming from the start would pass)
    file_order = plain_jax_losses(files[1], [[0, 1, 2, 3], [4, 5, 6, 7]])
    assert not np.allclose([r.loss for r in a[:2]], file_order, rtol=1e-4)
    assert (ckpt / "step_00000004" / "meta.json").exists()  # saved into the resumed folder
    meta = json.loads((ckpt / "step_00000004" / "meta.json").read_text())
    assert meta["extra"]["data"]["seed"] == 3 and meta["extra"]["data"]["batch_size"] == B
    # TensorBoard: every step's loss once, the killed run's step 3 dropped from its file
    assert sorted(_event_steps(resumed, "loss")) == [1, 2, 3, 4]
    assert sorted(_event_steps(straight, "loss")) == [1, 2, 3, 4]


def _event_steps(logdir, tag: str) -> list[int]:
    """The steps of every scalar event ``tag`` in the TensorBoard files of ``logdir``, read by
    the TFRecord framing and the ``Event`` fields (step = field 2, varint)."""
    steps = []
    for path in logdir.glob("events.out.tfevents.*"):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            (n,) = struct.unpack_from("<Q", data, pos)
            body = data[pos + 12 : pos + 12 + n]
            pos += 16 + n
            m = re.match(rb"\x09.{8}\x10([\x00-\x7f])", body, re.S)  # wall_time, one-byte step
            if m and tag.encode() in body and b"\x2a" in body:  # a Summary (field 5)
                steps.append(m.group(1)[0])
    return steps


def test_lr_schedule_warmup_and_clipping_are_optax_s(files, capsys) -> None:
    """--lr-schedule cosine --warmup-steps 2 --clip-norm 0.5 over a 4-step run: the losses of
    a plain JAX loop with optax's warm-up + cosine schedule after a global-norm clip."""
    d, tokens = files
    assert train(d, "--no-shuffle", "--steps", "4", "--lr-schedule", "cosine",
                 "--warmup-steps", "2", "--clip-norm", "0.5") == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "gradients clipped to global norm 0.5, then adam(lr=0.05, cosine decay" in out
    got = [float(x) for x in re.findall(r"^step +\d+ +loss ([\d.]+)", out, re.M)]
    lr = optax.join_schedules(
        [optax.linear_schedule(0.0, LR, 2), optax.cosine_decay_schedule(LR, 2)], [2]
    )
    opt = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(lr))
    order = [[0, 1, 2, 3], [4, 5, 6, 7]] * 2
    np.testing.assert_allclose(got, plain_jax_run(tokens, order, opt)[0], rtol=2e-5)
    # the schedule and the clip act: plain adam at 0.05 gives other losses from step 2 on
    assert not np.allclose(got[1:], plain_jax_losses(tokens, order)[1:], rtol=1e-3)


def test_norm_gains_start_at_one_and_a_checkpoint_exports_by_name(files, tmp_path, capsys):
    """Without --params: ln1 and lnf (vectors named as norms) start at 1, -v says each
    parameter's role; at --lr 0 the checkpoint holds those values, and export-params writes
    them in argument order under the arguments' names."""
    d, _ = files
    ckpt, npz = tmp_path / "ckpt", tmp_path / "params.npz"
    argv = [
        "train",
        str(d / "loss.hlo"),
        "--data",
        str(d / "train.bin"),
        "--stage-devices",
        "1",
        "--microbatches",
        str(M),
        "--steps",
        "1",
        "--lr",
        "0",
        "--save",
        str(ckpt),
    ]
    assert main([*argv, "-v"]) == 0
    out = capsys.readouterr().out
    roles = dict(re.findall(r"^ {12}\d+ (\S+) \(f32\[[\d,]+\]\): (.+)$", out, re.M))
    assert roles == {
        "params__emb__": "matrices ~ N(0, 1/fan_in)",
        "params__ln1__": "norm scales = 1",
        "params__lnf__": "norm scales = 1",
        "params__out__": "matrices ~ N(0, 1/fan_in)",
        "params__w1__": "matrices ~ N(0, 1/fan_in)",
    }, out
    assert main(["export-params", str(ckpt), "-o", str(npz)]) == 0
    with np.load(npz) as z:
        assert z.files == list(roles)  # argument order, the arguments' names
        np.testing.assert_array_equal(z["params__ln1__"], np.ones(D, np.float32))
        np.testing.assert_array_equal(z["params__lnf__"], np.ones(D, np.float32))
        assert z["params__w1__"].shape == (D, D) and z["params__w1__"].std() > 0.1


def test_ctrl_c_names_the_last_checkpoint_and_how_to_resume(files, tmp_path) -> None:
    """A real `hlopipe train` process interrupted (SIGINT, as Ctrl-C) after a checkpoint:
    it names that checkpoint and the --resume flag that goes on from it, and exits 130."""
    import os
    import signal
    import subprocess
    import sys

    d, _ = files
    ckpt = tmp_path / "ckpt"
    argv = [sys.executable, "-m", "hlopipe", "train", str(d / "loss.hlo"), "--data",
            str(d / "train.bin"), "--params", str(d / "init.npz"), "--stage-devices", "1",
            "--microbatches", str(M), "--steps", "100000", "--save", str(ckpt),
            "--save-every", "1", "--keep", "1000"]  # fmt: skip
    env = dict(os.environ, PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("checkpoint written to"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-2000:] + err[-2000:]
    (said,) = [x for x in out.splitlines() if x.startswith("interrupted in step")]
    step = max(int(p.name.split("_")[1]) for p in ckpt.glob("step_*"))
    assert f"the last checkpoint is {ckpt / f'step_{step:08d}'} (step {step})" in said, said
    assert f"--resume {ckpt}" in said
    assert err.strip().splitlines()[-1] == "error: interrupted"


def test_a_failing_run_names_the_last_checkpoint(files, tmp_path, capsys) -> None:
    """A run that fails mid-way (its loss turns infinite at step 2: a learning rate of 1e30;
    the non-finite check stops it) names the checkpoint of step 1 and --resume, and its
    error is the one error line."""
    d, _ = files
    ckpt = tmp_path / "ckpt"
    code = train(d, "--steps", "3", "--lr", "1e30", "--save", str(ckpt), "--save-every", "1")
    out, err = capsys.readouterr()
    assert code == 2
    assert err.strip().startswith("error: ") and len(err.strip().splitlines()) == 1, err
    (said,) = [x for x in out.splitlines() if x.startswith("stopped in step 2")]
    assert f"the last checkpoint is {ckpt / 'step_00000001'} (step 1)" in said
    assert f"--resume {ckpt}" in said


def _plan_json(path, pp: int, dp: int, tp: int, **layout: Any) -> None:
    """A plan file written by hand, as `hlopipe plan -o` writes one (hlopipe/planfile.py)."""
    plan = {"tp": tp, "pp": pp, "dp": dp, "cp": 1, "zero": 1, "recompute": "selective",
            "schedule": "1f1b", "virtual_stages": 1, "microbatch_size": MB // dp,
            "microbatches": M, "stage_layers": [], "stage_mesh_axes": ["data", "model"],
            "param_specs": ["w1=_,model", "emb=_,model", "out=model"], **layout}  # fmt: skip
    top = {"format": "hlopipe-plan", "version": 1, "program": {"path": None, "sha256": None},
           "cluster": {"device": "cpu", "devices": pp * dp * tp, "devices_per_node": 8,
                       "intra_node_gbps": 10.0, "inter_node_gbps": 1.0},
           "global_batch": dp * M * (MB // dp), "plan": plan}  # fmt: skip
    path.write_text(json.dumps(top))


@pytest.mark.parametrize("how", ["plan", "flags"])
def test_tensor_parallel_zero_and_recompute_train_like_one_device(files, tmp_path, capsys, how):
    """2 stages x (2 data x 2 model) of the 8 CPU devices, the parameters split over "model"
    by rules over the roles' names: from a hand-written plan.json (ZeRO-1, selective
    recompute) or from the flags (ZeRO-3, full recompute); the losses of a plain JAX loop."""
    d, tokens = files
    if how == "plan":
        _plan_json(tmp_path / "plan.json", pp=2, dp=2, tp=2)
        extra = ["--plan", str(tmp_path / "plan.json")]
    else:
        extra = ["--stage-mesh", "2x2", "--stage-mesh-axes", "data,model", "--param-spec",
                 "w1=_,model", "--param-spec", "out=model", "--zero", "3", "--recompute",
                 "full", "--microbatches", str(M)]  # fmt: skip
    argv = ["train", str(d / "loss.hlo"), "--data", str(d / "train.bin"), "--params",
            str(d / "init.npz"), "--lr", str(LR), "--no-shuffle", "--steps", "2"]  # fmt: skip
    argv += extra
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2 ranks x 4 CPU device(s)" in out, out
    layout = re.search(r"^layout +(.*)$", out, re.M).group(1)
    assert "each stage on a 2x2 mesh (data, model)" in layout
    # the line says where the layout came from: the plan file, or no file at all
    assert (f"from {tmp_path / 'plan.json'}" in layout) == (how == "plan"), layout
    assert "params__w1__ P(None, 'model')" in layout
    assert "params__out__ P('model',)" in layout
    zero, policy = ("ZeRO-1", "selective") if how == "plan" else ("ZeRO-3", "full")
    assert f"{zero} (the" in layout and f"recompute {policy}" in layout
    got = [float(x) for x in re.findall(r"^step +\d+ +loss ([\d.]+)", out, re.M)]
    np.testing.assert_allclose(got, plain_jax_losses(tokens, [[0, 1, 2, 3], [4, 5, 6, 7]]),
                               rtol=2e-5)  # fmt: skip


def test_a_plan_needing_more_devices_than_present_is_one_error(files, tmp_path, capsys):
    d, _ = files
    _plan_json(tmp_path / "plan.json", pp=4, dp=2, tp=2)
    argv = ["train", str(d / "loss.hlo"), "--data", str(d / "train.bin"), "--plan",
            str(tmp_path / "plan.json")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the plan needs 16 devices" in err[0] and "8 are present" in err[0]
    assert main([*argv, "--zero", "3"]) == 2
    assert "leave out --zero" in capsys.readouterr().err


def test_an_output_per_example_is_declared_for_evaluation(files, tmp_path, capsys) -> None:
    """A program returning (loss, logits): --eval-data infers, and a file's fixed shapes
    cannot tell whether the logits are per example: refused before the run, naming
    --per-example; declared, the run evaluates (the loss only is reported)."""
    d, _ = files

    def with_logits(params, tokens, labels):
        h = jnp.tanh(params["emb"][tokens] @ params["w1"]) * params["ln1"]
        logits = (hlopipe.stage_boundary(h) * params["lnf"]) @ params["out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1)), logits

    tok = jax.ShapeDtypeStruct((MB, S), jnp.int32)
    hlo = jax.jit(with_logits).lower(init_params(), tok, tok).as_text(dialect="hlo")
    (tmp_path / "logits.hlo").write_text(hlo)
    argv = ["train", str(tmp_path / "logits.hlo"), "--data", str(d / "train.bin"),
            "--params", str(d / "init.npz"), "--stage-devices", "1", "--microbatches", str(M),
            "--steps", "1", "--eval-data", str(d / "eval.bin")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "its outputs [1]" in err[0] and "--per-example I,J" in err[0], err
    assert main([*argv, "--per-example", "1"]) == 0
    assert re.search(r"^step +1 +loss .* eval loss [\d.]+", capsys.readouterr().out, re.M)


def test_dataset_errors_name_the_flag(files, tmp_path, capsys) -> None:
    d, _ = files
    assert train(d, "--seq-len", "5") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --seq-len 5: the program's sequence length is 8"), err
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\x01\x02\x03")
    argv = ["train", str(d / "loss.hlo"), "--data", str(odd), "--params", str(d / "init.npz")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "3 bytes is not a whole number of uint16 tokens (--token-dtype)" in err, err
    assert main([*argv[:3], str(d / "train.bin"), "--epochs", "1", "--steps", "2"]) == 2
    assert "give --steps or --epochs, not both" in capsys.readouterr().err


def test_shards_by_name_and_position(tmp_path) -> None:
    """Shards of samples along axis 0, matched to the batch arguments by name (any order of
    arrays) or by position; read in file order across shards."""
    x_aval = jax.ShapeDtypeStruct((2, 3), jnp.float32)
    y_aval = jax.ShapeDtypeStruct((2,), jnp.int32)
    args = [
        training.Argument(1, "x", x_aval, training.Role.BATCH),
        training.Argument(2, "y", y_aval, training.Role.BATCH),
    ]
    xs = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    ys = np.arange(5, dtype=np.int64)
    np.savez(tmp_path / "a.npz", y=ys[:3], x=xs[:3])  # by name, in another order
    np.savez(tmp_path / "b.npz", xs[3:], ys[3:])  # by position
    ds = training.open_dataset(str(tmp_path), args)
    assert ds.num_samples == 5
    for j in range(5):
        x, y = ds.source[j]
        np.testing.assert_array_equal(x, xs[j])
        assert y == ys[j] and y.dtype == np.int32
    batches = training.Batches(ds, 2, shuffle=False, seed=0)
    got = [next(batches) for _ in range(3)]  # the fifth sample is an epoch's remainder
    np.testing.assert_array_equal(got[1][0], xs[2:4])
    np.testing.assert_array_equal(got[2][0], xs[0:2])
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "y.npy", ys)  # one .npy per argument, named as it
    np.save(npy / "x.npy", xs)
    x, y = training.open_dataset(str(npy), args).source[4]
    np.testing.assert_array_equal(x, xs[4])
    assert y == ys[4]
    shuffled = training.Batches(ds, 2, shuffle=True, seed=0)
    epoch = [next(shuffled) for _ in range(2)]
    seen = np.concatenate([b[1] for b in epoch])
    assert len(set(seen.tolist())) == 4  # an epoch reads distinct samples
    # a saved position continues a fresh stream at the next batch; another seed is refused
    saved = json.loads(json.dumps(shuffled.position().to_json()))
    want = next(shuffled)
    again = training.Batches(ds, 2, shuffle=True, seed=0)
    again.seek(saved)
    np.testing.assert_array_equal(next(again)[1], want[1])
    with pytest.raises(hlopipe.errors.RuntimeConfigError, match="shuffled by seed 0; this run"):
        training.Batches(ds, 2, shuffle=True, seed=1).seek(saved)
    # a process's rows of every batch (not a block): rows 1 and 3 of batch [0, 1, 2, 3]
    mine = training.Batches(ds, 4, shuffle=False, seed=0, rows=(1, 3))
    np.testing.assert_array_equal(next(mine)[0], xs[[1, 3]])
    assert mine.last_samples.tolist() == [1, 3]
    with pytest.raises(hlopipe.errors.RuntimeConfigError, match=r"rows \[1, 4\] are not"):
        training.Batches(ds, 4, shuffle=False, seed=0, rows=(1, 4))


def test_event_file_records_frame_and_checksum(tmp_path) -> None:
    """CRC-32C's check value (RFC 3720: "123456789" -> 0xE3069283), and the TFRecord framing
    of the written event file read back: length, masked CRCs, the scalars' tags and values."""
    assert training.crc32c(b"123456789") == 0xE3069283
    w = training.EventWriter(str(tmp_path))
    w.scalars(7, {"loss": 1.5})
    w.restart(5)  # a resumed run: TensorBoard drops what the killed run logged after step 5
    w.close()
    with open(w.path, "rb") as f:
        data = f.read()
    records, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        (len_crc,) = struct.unpack_from("<I", data, pos + 8)
        body = data[pos + 12 : pos + 12 + n]
        (body_crc,) = struct.unpack_from("<I", data, pos + 12 + n)
        for raw, crc in ((data[pos : pos + 8], len_crc), (body, body_crc)):
            c = training.crc32c(raw)
            assert crc == (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        records.append(body)
        pos += 16 + n
    assert len(records) == 3 and b"brain.Event:2" in records[0]
    assert b"loss" in records[1] and struct.pack("<f", 1.5) in records[1]
    assert b"\x10\x07" in records[1]  # step 7 (field 2, varint)
    # step 5, then session_log (field 6, 2 bytes): status (field 1) START (1)
    assert records[2].endswith(b"\x10\x05\x32\x02\x08\x01")


def test_metrics_jsonl_lines_are_step_records_both_ways(tmp_path) -> None:
    """``metrics.jsonl`` as the runs before ``StepRecord`` wrote it (the lines below, literal)
    reads back field by field; a resumed log drops the later step and appends a record as the
    same JSON; a line of another schema is an error naming the file."""
    old = [
        '{"step": 1, "loss": 0.5, "grad_norm": 2.0, "step_time_s": 0.25, '
        '"samples_per_s": 16.0, "eval_loss": 0.75}',
        '{"step": 2, "loss": 0.25, "grad_norm": 1.0, "step_time_s": 0.5, '
        '"samples_per_s": 8.0, "bubble": 0.125}',
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(old) + "\n")
    first, second = training.read_metrics(str(tmp_path))
    assert (first.step, first.loss, first.grad_norm, first.step_time_s) == (1, 0.5, 2.0, 0.25)
    assert (first.samples_per_s, first.tokens_per_s, first.bubble) == (16.0, None, None)
    assert (first.eval_loss, second.eval_loss, second.bubble) == (0.75, None, 0.125)
    log = training.RunLog(str(tmp_path), resumed_at=1)
    assert log.dropped == 1
    log.write(training.StepRecord(2, 0.125, 0.5, 1.0, tokens_per_s=64.0, bubble=0.25))
    log.close()
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert lines == [
        old[0],
        '{"step": 2, "loss": 0.125, "grad_norm": 0.5, "step_time_s": 1.0, '
        '"tokens_per_s": 64.0, "bubble": 0.25}',
    ]
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5, "lr": 0.1}\n')
    with pytest.raises(hlopipe.errors.LoadError, match=r"metrics\.jsonl: not a step record"):
        training.read_metrics(str(tmp_path))
