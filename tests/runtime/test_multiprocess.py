"""Real processes on localhost train like one device: 2 and 4 processes x 2 CPU devices.

Each job runs tests/runtime/_multiprocess_job.py under ``hlopipe launch`` (gloo collectives
carry the stage-to-stage transfers between processes); its losses and its parameters after the
last step are compared with plain JAX on one device.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mp_util import (
    Job,
    check_scenarios,
    no_process_left,
    reference_logits,
    reference_losses,
    reference_params,
    references_meanwhile,
)
from _mp_util import assert_params_like_one_device as _assert_params_like_one_device

pytestmark = pytest.mark.multiprocess

STEPS = 4
SCHEDULES = ["1f1b", "zb-h1"]
CASES = [
    # (processes, devices per stage): 2 x 2 devices -> 4 stages, 2 ranks per process;
    # 4 x 2 devices -> 4 stages, one rank of 2 data-parallel devices per process. Each job
    # trains with 1F1B, then with ZB-H1 (a pipeline each), then infers with the 1F1B
    # pipeline from a fresh state: one process start for the three (the 2-process job also
    # runs the interleaved scenario below).
    (2, 1),
    (4, 2),
]
# 4 stages on 2 ranks of 2 devices, one rank per process: interleaved 1F1B (stages 0, 2 |
# 1, 3) and ZB-V (stages 0, 3 | 1, 2), one after the other; every stage-to-stage transfer
# of interleaved, and all but the V's tip of ZB-V, cross processes.
INTERLEAVED = ["interleaved-1f1b", "zb-v"]
INTERLEAVED_STEPS = 3


def _assert_losses_like_one_device(losses, steps: int, text: str, optimizer: str = "sgd"):
    assert sorted(losses) == list(range(1, steps + 1)), text[-4000:]
    np.testing.assert_allclose(
        [losses[k] for k in range(1, steps + 1)], reference_losses(steps, optimizer), rtol=1e-5
    )


@pytest.mark.parametrize("nproc,stage_devices", CASES, ids=[f"{n}proc" for n, _ in CASES])
def test_processes_train_and_infer_like_one_device(tmp_path, nproc, stage_devices):
    """Scenarios in one job: training (1F1B, then ZB-H1), then inference; with 2 processes,
    interleaved 1F1B and ZB-V too."""
    (tmp_path / "inference").mkdir()
    args = ["--label", "training", "--schedule", ",".join(SCHEDULES), "--steps", str(STEPS),
            "--stage-devices", str(stage_devices), "--params-out", str(tmp_path), "+",
            "--label", "inference", "--infer-out", str(tmp_path / "inference"),
            "--stage-devices", str(stage_devices)]  # fmt: skip
    checks = {
        "training": lambda: _trained_like_one_device(job, tmp_path),
        "inference": lambda: _whole_inference_and_parameters(tmp_path / "inference", nproc),
    }
    if nproc == 2:
        (out := tmp_path / "interleaved").mkdir()
        args += ["+", "--label", "interleaved", "--schedule", ",".join(INTERLEAVED),
                 "--steps", str(INTERLEAVED_STEPS), "--stage-devices", "2",
                 "--params-out", str(out)]  # fmt: skip
        checks["interleaved"] = lambda: _interleaved_like_one_device(job, out)
        # the 1F1B pipeline of "training" with an optimizer branching on global scalars
        (out2 := tmp_path / "finite").mkdir()
        args += ["+", "--label", "finite", "--optimizer", "finite-multisteps", "--steps",
                 str(FINITE_STEPS), "--params-out", str(out2)]  # fmt: skip
        checks["finite"] = lambda: _finite_multisteps_like_one_device(job, out2)
        # the rest of issue 48's table, a scenario each on the same pipeline
        for name in OPTIMIZER_ROWS:
            (out3 := tmp_path / name).mkdir()
            args += ["+", "--label", name, "--optimizer", name, "--steps", str(OPT_STEPS),
                     "--params-out", str(out3)]  # fmt: skip
            checks[name] = lambda o=out3, n=name: _optimizer_like_one_device(job, o, n)
        # the table again on the GPT's blocks stacked and scanned, the loop cut into 2
        # stages, one per process (2 data-parallel devices each): one pipeline, compiled
        # for the first row, its optimizer swapped for the others
        for name in SCAN_ROWS:
            (out4 := tmp_path / f"scan-{name}").mkdir()
            steps = FINITE_STEPS if name == "finite-multisteps" else OPT_STEPS
            args += ["+", "--label", f"scan-{name}", "--model", "scan", "--stage-devices",
                     "2", "--optimizer", name, "--steps", str(steps),
                     "--params-out", str(out4)]  # fmt: skip
            checks[f"scan-{name}"] = lambda o=out4, n=name, k=steps: _optimizer_like_one_device(
                job, o, n, steps=k, model="scan"
            )
    job = Job(nproc, args, timeout=400)
    refs = references_meanwhile(_references(nproc))
    code = job.wait(timeout=500)
    refs.join()
    check_scenarios(job, code, checks)
    assert no_process_left([p.pid for p in job.procs])


def _references(nproc: int) -> list[tuple[int, str, str]]:
    """The one-device references the checks of the job with ``nproc`` processes read."""
    out = [(STEPS, "sgd", "markers"), (1, "sgd", "markers")]
    if nproc == 2:
        out += [(INTERLEAVED_STEPS, "sgd", "markers"), (FINITE_STEPS, "sgd", "markers"),
                (FINITE_STEPS, "finite-multisteps", "markers"),
                (OPT_STEPS, "sgd", "markers")]  # fmt: skip
        out += [(OPT_STEPS, name, "markers") for name in OPTIMIZER_ROWS]
        out += [(OPT_STEPS, "sgd", "scan"), (FINITE_STEPS, "sgd", "scan")]
        out += [(FINITE_STEPS if n == "finite-multisteps" else OPT_STEPS, n, "scan")
                for n in SCAN_ROWS]  # fmt: skip
    return out


def _trained_like_one_device(job: Job, out) -> None:
    for name in SCHEDULES:
        _assert_losses_like_one_device(job.losses(name, label="training"), STEPS, job.text)
        _assert_params_like_one_device(out / f"params-{name}.npz", STEPS)


def _interleaved_like_one_device(job: Job, out) -> None:
    """The interleaved scenario: its ranks (one per process) hold 2 stages each."""
    section = job.section("interleaved")
    assert "rank 0: stages [0, 2]" in section and "rank 1: stages [1, 3]" in section, section
    for name in INTERLEAVED:
        _assert_losses_like_one_device(job.losses(name), INTERLEAVED_STEPS, job.text)
        _assert_params_like_one_device(out / f"params-{name}.npz", INTERLEAVED_STEPS)


FINITE_STEPS = 4


def _finite_multisteps_like_one_device(job: Job, out) -> None:
    """apply_if_finite over MultiSteps (test _multiprocess_job.finite_multisteps): the
    stages of both processes skip the poisoned step and emit on the same steps."""
    losses = job.losses("1f1b", label="finite")
    got = [losses[k] for k in range(1, FINITE_STEPS + 1)]
    want = reference_losses(FINITE_STEPS, "finite-multisteps")
    np.testing.assert_allclose(got, want, rtol=1e-5)
    _assert_params_like_one_device(out / "params-1f1b.npz", FINITE_STEPS, "finite-multisteps")
    # the branches acted: plain SGD's losses differ by the last step
    assert not np.isclose(got[-1], reference_losses(FINITE_STEPS)[-1], rtol=1e-5)


# Issue 48's optimizer table (tests/runtime/_multiprocess_job.py builds each row; the 1F1B
# pipeline of "training" swaps its optimizer with with_optimizer, no stage compiled again).
# apply_if_finite and MultiSteps are the "finite" scenario.
OPTIMIZER_ROWS = ["muon", "lamb", "adafactor", "prodigy", "clip-lion", "schedule-masked-decay",
                  "ema", "schedule-free", "by-ndim"]  # fmt: skip
OPT_STEPS = 3
# The whole table again on the scanned GPT (the loop cut into 2 stages, one per process): one
# pipeline, compiled for the first row, its optimizer swapped for the others, each row's
# one-device reference computed while the job runs (``references_meanwhile``). The six rows
# after the first four add about 6 s of this job's wall time (their updates compiled; 3
# steps each) and 11 s of CPU time with their references. Muon treats the stacked axis as a
# batch axis: plain muon orthogonalises each stacked [layers, d] bias as a matrix (not what
# one would train with), and it came 1.25e-5 off in one run of two here (the stacked fc1
# bias; the job's losses differ between runs in the 8th digit).
SCAN_ROWS = ["finite-multisteps", "clip-lion", "lamb", "muon-stacked", "prodigy", "adafactor",
             "schedule-masked-decay", "ema", "schedule-free", "by-ndim"]  # fmt: skip


def _optimizer_like_one_device(
    job: Job, out, optimizer: str, steps: int = OPT_STEPS, model: str = "markers"
) -> None:
    """Scenario ``optimizer`` (its label; ``scan-`` before it on the scanned GPT): the losses
    and parameters of optax on one device, and not those of plain SGD (the optimizer
    acted). On the scanned GPT, both stages (one per process) hold rows of the loop."""
    label = f"scan-{optimizer}" if model == "scan" else optimizer
    section = job.section(label)
    if model == "scan" and optimizer == SCAN_ROWS[0]:  # the pipeline is printed when built
        assert "LOOP ROWS ON STAGES [0, 1]" in section, section
        lines = section.splitlines()
        assert any(x.endswith(("rank 0: stages [0]", "process 0")) for x in lines), section
        assert [x for x in lines if "rank 1: stages [1]," in x and x.endswith("process 1")]
    losses = job.losses("1f1b", label=label)
    assert sorted(losses) == list(range(1, steps + 1)), section
    got = [losses[k] for k in range(1, steps + 1)]
    np.testing.assert_allclose(got, reference_losses(steps, optimizer, model), rtol=1e-5)
    _assert_params_like_one_device(out / "params-1f1b.npz", steps, optimizer, model)
    assert not np.isclose(got[-1], reference_losses(steps, "sgd", model)[-1], rtol=1e-4), got


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
    want_logits = reference_logits()
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
