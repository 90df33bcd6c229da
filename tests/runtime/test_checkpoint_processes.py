"""A checkpoint saved by 4 processes (2 stages, each on a mesh spanning 2 processes) restores
onto 2 processes with another stage count and mesh shape, and onto one process (this one,
unsplit); a cut layer loop's saved by 2 restores onto one with another split: training goes on
with the losses and parameters of the run that was never interrupted."""

from __future__ import annotations

import io
import os
import re
import sys

import jax
import numpy as np
import pytest
from _checkpoint_job import batches, build

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess

JOB = os.path.join(os.path.dirname(__file__), "_checkpoint_job.py")
STEPS, SAVE_AT = 5, 2


def _launch(nproc: int, args: list[str]) -> tuple[int, str]:
    """Run the job under ``hlopipe launch`` (2 CPU devices a process): exit code, output."""
    out = io.StringIO()
    code = launch(
        [sys.executable, JOB, "--steps", str(STEPS), *args], nproc=nproc, devices_per_process=2,
        heartbeat_timeout=10, grace=20, timeout=150, out=out,
    )  # fmt: skip
    print(out.getvalue())  # shown when the test fails: every process's output
    return code, out.getvalue()


def _job(nproc: int, args: list[str]) -> dict[int, float]:
    """The job's losses by step (it must succeed)."""
    code, text = _launch(nproc, args)
    assert code == 0
    found = re.findall(r"^\[rank 0\] LOSS (\d+) (\S+)$", text, re.M)
    return {int(k): float(v) for k, v in found}


def _assert_same_run(losses, params, want_losses, want_params):
    assert sorted(losses) == list(range(SAVE_AT + 1, STEPS + 1))
    np.testing.assert_allclose([losses[k] for k in sorted(losses)],
                               [want_losses[k] for k in sorted(losses)], rtol=1e-6)  # fmt: skip
    assert len(params) == len(want_params)
    for a, b in zip(params, want_params, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_saved_by_4_processes_restores_onto_2_processes_and_onto_one(tmp_path):
    ckpt, whole = str(tmp_path / "ckpt"), str(tmp_path / "whole.npz")
    # 4 processes, 2 stages of 2 layers, each stage's 4-device mesh spanning 2 processes (every
    # parameter a global array over 2 processes); saved at step 2, trained on uninterrupted
    run = _job(4, ["--layers-per-stage", "2", "--stage-devices", "4", "--save-at", str(SAVE_AT),
                   "--ckpt", ckpt, "--params-out", whole])  # fmt: skip
    assert sorted(run) == list(range(1, STEPS + 1))
    assert os.listdir(ckpt) == [f"step_{SAVE_AT:08d}"]
    want = list(np.load(whole).values())

    # 2 processes, 4 stages of one layer on one device each (another stage count, mesh shape
    # and process count; whole stages per process)
    half = str(tmp_path / "half.npz")
    args = ["--layers-per-stage", "1", "--stage-devices", "1", "--restore", ckpt]
    moved = _job(2, [*args, "--params-out", half])
    _assert_same_run(moved, list(np.load(half).values()), run, want)

    # this one process, the program unsplit (one stage on one device)
    pipe, _ = build(4, 1, jax.devices()[:1])
    _resume_here(pipe, ckpt, run, want)


def _resume_here(pipe, ckpt, run, want):
    """Restore ``ckpt`` into ``pipe`` (in this process), train on, compare with ``run``."""
    state = pipe.restore(ckpt)
    assert state.step == SAVE_AT
    losses = {}
    for k, b in enumerate(batches(STEPS)[SAVE_AT:], SAVE_AT + 1):
        state, m = pipe.step(state, b)
        losses[k] = m.loss
    _assert_same_run(losses, jax.tree.leaves(pipe.gather_params(state)), run, want)


def test_a_cut_layer_loop_saved_by_2_processes_restores_onto_one(tmp_path):
    """The stacked blocks of a scanned GPT cut into 4 ranges (2 a process): each stage writes
    its rows of the one stored array; restored here onto 2 ranges of 2 layers."""
    ckpt, whole = str(tmp_path / "ckpt"), str(tmp_path / "whole.npz")
    run = _job(2, ["--scan", "--save-at", str(SAVE_AT), "--ckpt", ckpt, "--params-out", whole])
    assert sorted(run) == list(range(1, STEPS + 1))
    pipe, _ = build(1, 1, jax.devices()[:2], scan=True)
    _resume_here(pipe, ckpt, run, list(np.load(whole).values()))


def test_a_process_without_a_stage_is_refused_by_name(tmp_path):
    """2 stages of one device on 2 processes x 2 devices: both lie in process 0, so process 1
    could take no part; building the pipeline there says so (process 0's restore: there is
    no checkpoint)."""
    code, text = _launch(2, ["--layers-per-stage", "2", "--restore", str(tmp_path)])
    assert code != 0
    assert "process 1 builds a pipeline whose devices [0, 1] are all process 0's" in text
    assert "devices=jax.local_devices()" in text
