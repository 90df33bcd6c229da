"""Stage meshes that span processes, under ``hlopipe launch --nproc 4 --devices-per-process 2``.

One job runs tests/runtime/_multiprocess_job.py (8 CPU devices in 4 processes) for the four
scenarios, one after the other in the same processes (each checked on its own output): every
process holding devices of a rank runs that rank's instructions on global arrays over its whole
mesh, and values cross between two such ranks shard by shard. SGD with momentum behind
global-norm clipping, which binds (gradient norms above 0.5) and, unlike Adam's normalised
step, carries a wrong clip scale into the parameters; parameters after 3 steps are compared
with plain JAX on one device.

Placements covered here (one representative each; the others were run by hand, see the
engineer's note): 2 stages x (4 data) with 1F1B; 2 stages x (2 data x 2 model) with ZB-H1; 4
stages interleaved on 2 ranks of 4 devices. Whole stages per process (today's case) are in
test_multiprocess.py. A layout whose mesh crosses processes unevenly is refused.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import jax
import numpy as np
import pytest
from _mp_util import (
    JOB,
    Job,
    assert_params_like_one_device,
    check_scenarios,
    no_process_left,
    reference_grad_norms,
    reference_logits,
    reference_losses,
    reference_params,
)

from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime._process_layout import check_spanning

STEPS = 3
OPT = "sgd-clip"  # SGD shows the clip's scale in the parameters (Adam would normalise it away)
LAYOUT = {  # scenario -> its arguments besides the training's (one job runs them all)
    "4-data-1f1b": ["--schedule", "1f1b", "--stage-devices", "4", "--layers-per-stage", "2"],
    "2x2-zb-h1": ["--schedule", "zb-h1", "--mesh", "2x2", "--layers-per-stage", "2"],
    "interleaved": ["--schedule", "interleaved-1f1b", "--stage-devices", "4"],
    # the first scenario's layout and optimizer: the job infers with that scenario's pipeline
    # (from a fresh state), not a second compile of it
    "inference": ["--stage-devices", "4", "--layers-per-stage", "2", "--optimizer", OPT],
}


def _bytes(text: str) -> list[tuple[int, int]]:
    """Per step: (bytes process 0's transfers carried, activation bytes they sent)."""
    pattern = r"^\[rank 0\] LOSS \d+ \S+ xfer_ms \S+ xfer_bytes (\d+) act_bytes (\d+)"
    return [(int(a), int(b)) for a, b in re.findall(pattern, text, re.M)]


def _trained_like_one_device(text: str, params: Path) -> None:
    """One scenario's training (process 0's lines ``text``) equals one device's: losses,
    global gradient norms, parameters after the last step."""
    losses = {int(k): float(v) for k, v in re.findall(r"^\[rank 0\] LOSS (\d+) (\S+)", text, re.M)}
    assert sorted(losses) == list(range(1, STEPS + 1)), text[-4000:]
    np.testing.assert_allclose(
        [losses[k] for k in range(1, STEPS + 1)], reference_losses(STEPS, OPT), rtol=1e-5
    )
    # the global gradient norm (what the clip divides by) counts each rank once
    norms = [float(x) for x in re.findall(r"^\[rank 0\] LOSS .* gnorm (\S+)", text, re.M)]
    np.testing.assert_allclose(norms, reference_grad_norms(STEPS, OPT), rtol=1e-5)
    assert min(norms) > 0.5  # the clip (at 0.5) scales every step's update
    assert_params_like_one_device(params, STEPS, OPT)


pytestmark = pytest.mark.multiprocess


def _data_mesh_of_4(text: str, out: Path) -> None:
    """2 stages of 4 data devices, 1F1B: each stage's (4,) data mesh spans 2 processes;
    activations and cotangents cross shard by shard: the bytes moved per step are the
    activation bytes, not 4x them."""
    _trained_like_one_device(text, out / "params-1f1b.npz")
    # print(pipe) names each rank's processes
    assert "rank 0: stages [0], mesh 4 (data), devices [0, 1, 2048, 2049], processes 0, 1" in (
        text
    ), text[:3000]
    assert "rank 1: stages [1], mesh 4 (data)" in text and "processes 2, 3" in text
    moved = _bytes(text)
    assert len(moved) == STEPS
    for xfer, act in moved:
        assert act > 0 and xfer == act


def _meshes_2x2(text: str, out: Path) -> None:
    """(2 data x 2 model) meshes, Megatron specs, each on 2 processes (one data row each),
    zero-bubble: a process's collectives among the rank's processes and its transfers
    are issued in one order. A value crosses as the receiver holds it: split on data,
    replicated on the model axis, so each row's block crosses to both of its devices (2x
    the activation bytes, not 4x)."""
    _trained_like_one_device(text, out / "params-zb-h1.npz")
    moved = _bytes(text)
    assert len(moved) == STEPS
    for xfer, act in moved:
        assert act > 0 and xfer == 2 * act


def _interleaved(text: str, out: Path) -> None:
    """4 stages, interleaved 1F1B on 2 ranks of 4 devices, each rank on 2 processes."""
    _trained_like_one_device(text, out / "params-interleaved-1f1b.npz")
    moved = _bytes(text)
    assert len(moved) == STEPS
    for xfer, act in moved:
        assert act > 0 and xfer == act


def _inference(text: str, out: Path) -> None:
    """2 stages of 4 data devices on 2 processes each: infer() and gather_params() give every
    process the whole result (split outputs gathered on the rank's mesh first); the parameters
    after one clipped step (the clip binds: the first gradient norm is above 0.5)."""
    del text  # what every process saved is checked
    want_logits = reference_logits()
    want = reference_params(1, OPT)
    assert reference_grad_norms(1, OPT)[0] > 0.5
    for q in range(4):
        np.testing.assert_allclose(np.load(out / f"loss{q}.npy"), reference_losses(1, OPT)[0],
                                   rtol=1e-5)  # fmt: skip
        np.testing.assert_allclose(np.load(out / f"logits{q}.npy"), want_logits, rtol=1e-5,
                                   atol=1e-6)  # fmt: skip
        with np.load(out / f"params{q}.npz") as z:
            got = [z[f"arr_{n}"] for n in range(len(z.files))]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


CHECKS = {
    "4-data-1f1b": _data_mesh_of_4,
    "2x2-zb-h1": _meshes_2x2,
    "interleaved": _interleaved,
    "inference": _inference,
}


def test_spanning_stage_meshes_train_and_infer_like_one_device(tmp_path):
    """The four scenarios below, one after the other in one job of 4 processes x 2 devices
    (one process start and one jax.distributed start for all); each scenario's checks are
    made on its own output, and a failure names the scenario."""
    args: list[str] = []
    for label, layout in LAYOUT.items():
        out = tmp_path / label
        out.mkdir()
        role = ["--infer-out", str(out)] if label == "inference" else [
            "--steps", str(STEPS), "--optimizer", OPT, "--params-out", str(out)]  # fmt: skip
        args += [*(["+"] if args else []), "--label", label, *layout, *role]
    job = Job(4, args, devices=2, timeout=900)
    code = job.wait(timeout=1000)
    checks = {
        label: functools.partial(check, job.section(label), tmp_path / label)
        for label, check in CHECKS.items()
    }
    check_scenarios(job, code, checks)
    assert no_process_left([p.pid for p in job.procs])


def test_a_mesh_crossing_processes_unevenly_is_refused_naming_the_rank():
    """(3,) meshes on 2 processes of 2 devices: rank 0 holds 2 devices of process 0 and 1 of
    process 1. Every process refuses it before compiling anything; ``hlopipe launch`` says
    so in one ``error:`` line and exits 2."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "hlopipe", "launch", "--nproc", "2", "--devices-per-process",
         "2", "--", sys.executable, JOB, "--stage-devices", "3", "--layers-per-stage", "4",
         "--steps", "1"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert re.match(
        r"error: process \d: RuntimeConfigError: rank 0's stage mesh \(3,\) \(data\) crosses "
        r"processes unevenly \(process 0: 2 of its 2, process 1: 1 of its 2 devices\); .*"
        r"use a stage_mesh_shape whose size divides, or is a multiple of, the devices per "
        r"process \(2\) \(.*full output: \S+\)$",
        line,
    ), line
    Path(line.rsplit(" ", 1)[1].rstrip(")")).unlink()


def _fake(owners: list[int], shape: tuple[int, ...], per: int) -> types.SimpleNamespace:
    devs = np.array([types.SimpleNamespace(process_index=q) for q in owners], dtype=object)
    mesh = types.SimpleNamespace(devices=devs.reshape(shape), axis_names=("data", "model"))
    return types.SimpleNamespace(meshes=[mesh], per=per)


@pytest.mark.parametrize(
    "owners,shape,ok",
    [
        ([0, 0, 1, 1], (2, 2), True),  # a data row per process
        ([0, 1, 0, 1], (2, 2), True),  # a model column each: equal blocks too
        ([0, 0, 0, 0], (2, 2), True),  # within one process
        ([0, 0, 1, 1, 2, 2, 3, 3], (2, 4), True),  # half a model row each: equal blocks
        ([0, 0, 1, 2], (2, 2), False),  # unequal shares
        ([0, 1, 1, 0], (2, 2), False),  # a process's devices not a block of the mesh
    ],
)
def test_which_spanning_meshes_are_accepted(monkeypatch, owners, shape, ok):
    pl = _fake(owners, shape, 2)
    every = [types.SimpleNamespace(process_index=q) for q in range(4) for _ in range(2)]
    monkeypatch.setattr(jax, "devices", lambda: every)
    if ok:
        assert check_spanning(pl, 0) == tuple(sorted(set(owners)))
    else:
        with pytest.raises(RuntimeConfigError, match="rank 0's stage mesh"):
            check_spanning(pl, 0)
