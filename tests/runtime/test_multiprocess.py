"""Real processes on localhost train like one device: 2 and 4 processes x 2 CPU devices.

Each job runs tests/runtime/_multiprocess_job.py under ``hlopipe launch`` (gloo collectives
carry the stage-to-stage transfers between processes); its losses and its parameters after the
last step are compared with plain JAX on one device.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _mp_util import (
    CFG,
    Job,
    check_scenarios,
    no_process_left,
    reference_losses,
    reference_params,
)
from _mp_util import assert_params_like_one_device as _assert_params_like_one_device

from hlopipe.models import gpt

pytestmark = pytest.mark.multiprocess

STEPS = 4
SCHEDULES = ["1f1b", "zb-h1"]
CASES = [
    # (processes, devices per stage): 2 x 2 devices -> 4 stages, 2 ranks per process;
    # 4 x 2 devices -> 4 stages, one rank of 2 data-parallel devices per process. Each job
    # trains with 1F1B, then with ZB-H1 (a fresh pipeline each), then infers: one process
    # start for the three.
    (2, 1),
    (4, 2),
]


def _assert_losses_like_one_device(losses, steps: int, text: str, optimizer: str = "sgd"):
    assert sorted(losses) == list(range(1, steps + 1)), text[-4000:]
    np.testing.assert_allclose(
        [losses[k] for k in range(1, steps + 1)], reference_losses(steps, optimizer), rtol=1e-5
    )


@pytest.mark.parametrize("nproc,stage_devices", CASES, ids=[f"{n}proc" for n, _ in CASES])
def test_processes_train_and_infer_like_one_device(tmp_path, nproc, stage_devices):
    """Two scenarios in one job: training (1F1B, then ZB-H1), then inference."""
    (tmp_path / "inference").mkdir()
    job = Job(nproc, ["--label", "training", "--schedule", ",".join(SCHEDULES), "--steps",
                      str(STEPS), "--stage-devices", str(stage_devices), "--params-out",
                      str(tmp_path), "+", "--label", "inference", "--infer-out",
                      str(tmp_path / "inference"), "--stage-devices", str(stage_devices)],
              timeout=400)  # fmt: skip
    code = job.wait(timeout=500)
    check_scenarios(job, code, {
        "training": lambda: _trained_like_one_device(job, tmp_path),
        "inference": lambda: _whole_inference_and_parameters(tmp_path / "inference", nproc),
    })  # fmt: skip
    assert no_process_left([p.pid for p in job.procs])


def _trained_like_one_device(job: Job, out) -> None:
    for name in SCHEDULES:
        _assert_losses_like_one_device(job.losses(name), STEPS, job.text)
        _assert_params_like_one_device(out / f"params-{name}.npz", STEPS)


def test_interleaved_and_zb_v_across_2_processes_train_like_one_device(tmp_path):
    """4 stages on 2 ranks of one device, one rank per process: interleaved 1F1B (stages
    0, 2 | 1, 3) and ZB-V (stages 0, 3 | 1, 2), one after the other in one job; every
    stage-to-stage transfer of interleaved, and all but the V's tip of ZB-V, cross processes."""
    names = ["interleaved-1f1b", "zb-v"]
    job = Job(2, ["--schedule", ",".join(names), "--steps", "3", "--params-out",
                  str(tmp_path)], devices=1, timeout=300)  # fmt: skip
    code = job.wait(timeout=400)
    assert code == 0, job.text[-4000:]
    for name in names:
        _assert_losses_like_one_device(job.losses(name), 3, job.text)
        _assert_params_like_one_device(tmp_path / f"params-{name}.npz", 3)


def test_2_processes_x_8_devices_of_2x2_stage_meshes_train_like_one_device(tmp_path):
    """4 stages, each on a (2 data x 2 model) mesh with Megatron-style specs, two per process;
    global-norm clipping summed over both processes. Activations cross as N-D blocks."""
    job = Job(2, ["--schedule", "1f1b", "--steps", "2", "--mesh", "2x2",
                  "--optimizer", "sgd-clip", "--params-out", str(tmp_path)],
              devices=8, timeout=400)  # fmt: skip
    code = job.wait(timeout=500)
    assert code == 0, job.text[-4000:]
    losses = job.losses()
    _assert_losses_like_one_device(losses, 2, job.text, "sgd-clip")
    _assert_params_like_one_device(tmp_path / "params-1f1b.npz", 2, "sgd-clip")
    # the clip acts: without it the second step's loss differs
    assert not np.isclose(losses[2], reference_losses(2)[1], rtol=1e-5)


def _whole_inference_and_parameters(out, nproc: int) -> None:
    """Every process gets the whole inference (loss, logits) and, after one step, every
    parameter from gather_params (state.params holds its own only)."""
    params = gpt.init(jax.random.key(0), CFG)
    tokens = gpt.batch(jax.random.key(100), 16, CFG)[0]
    want_logits = gpt.logits(params, tokens, CFG)
    for q in range(nproc):
        loss = np.load(out / f"loss{q}.npy")
        assert loss.shape == ()
        np.testing.assert_allclose(loss, reference_losses(1)[0], rtol=1e-5)
        logits = np.load(out / f"logits{q}.npy")
        assert logits.shape == want_logits.shape
        np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-6)
        # after one step: state.params holds this process's parameters only, and
        # gather_params gives every process all of them
        held = np.load(out / f"held{q}.npy")
        assert held.any() and not held.all()
        with np.load(out / f"params{q}.npz") as z:
            got = [z[f"arr_{n}"] for n in range(len(z.files))]
        want = reference_params(1)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
