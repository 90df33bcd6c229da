"""Pipelines that use some processes of a job only, ``check_finite`` and ZB-V on stage meshes
spanning processes: one ``hlopipe launch --nproc 4 --devices-per-process 2`` job
(tests/runtime/_local_job.py) running every scenario one after the other, each checked against
plain JAX on one device.

* Each process's own pipeline on its own devices trains on its own data like one device, and
  checkpoints and restores, with no collective between processes; processes that built
  different numbers of such pipelines still meet on the shared ones after them.
* A pipeline on process 0's devices only, built by every process: process 0 trains it, the
  others are refused by name (saying what to do), before anything runs.
* A pipeline on processes 0 and 1: processes 2 and 3, holding none of it, get the step's loss,
  ``infer``'s output and the parameters too (each parameter compared by its path).
* ``check_finite`` with 2 ranks whose meshes span 2 processes each: a NaN loss, and NaN
  gradients of one stage under finite losses, are named (step, microbatch or stage) by the same
  ``NonFiniteError`` in every process, and the job goes on (every process stopped at the same
  collective).
* ZB-V on 2 ranks spanning 2 processes each: the parameters equal one device's, path by path.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess

JOB = Path(__file__).with_name("_local_job.py")
sys.path.insert(0, str(JOB.parent))
import _local_job as job  # noqa: E402

NPROC = 4


def test_pipelines_on_some_processes_check_finite_and_zb_v_spanning(tmp_path):
    """One job for the five scenarios (one launch: its tests would otherwise each be handed to
    an xdist worker, and each worker would launch it); every scenario is checked on the job's
    output, and a failure names each scenario that failed, with why."""
    out = io.StringIO()
    code = launch([sys.executable, str(JOB), "--params-out", str(tmp_path)], nproc=NPROC,
                  devices_per_process=2, heartbeat_timeout=10, grace=20, timeout=500,
                  out=out)  # fmt: skip
    text = out.getvalue()
    print(text)  # the whole output when a check fails
    assert code == 0, text[-4000:]
    failed: dict[str, str] = {}
    for check in (_each_process_trains_its_own_pipeline_like_one_device,
                  _a_pipeline_inside_another_process_is_refused_naming_it,
                  _processes_holding_no_stage_get_the_loss_outputs_and_parameters,
                  _check_finite_on_spanning_meshes_raises_alike_in_every_process,
                  _zb_v_on_ranks_spanning_processes_trains_like_one_device):  # fmt: skip
        try:
            check((text, tmp_path))
        except AssertionError as e:
            failed[check.__name__.strip("_")] = str(e)[:3000]
    assert not failed, "failed scenarios:\n" + "\n".join(f"--- {k}: {v}" for k, v in failed.items())


def _lines(text: str, tag: str) -> dict[int, str]:
    """Each process's ``TAG <process> rest`` line: {process: rest}."""
    found = re.findall(rf"^\[rank \d\] {tag} (\d) (.*)$", text, re.M)
    return {int(q): rest for q, rest in found}


def _floats(s: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|nan|inf", s)]


def _each_process_trains_its_own_pipeline_like_one_device(ran: tuple[str, Path]) -> None:
    got = _lines(ran[0], "LOCAL")
    assert sorted(got) == list(range(NPROC)), ran[0][-3000:]
    for q, rest in got.items():
        m = re.fullmatch(r"seeds \[(.*)\] losses \[(.*)\] restored_diff (\S+)", rest)
        assert m, rest
        seeds = [int(s) for s in m.group(1).split(",")]
        assert seeds == [10 * q, 10 * q + 1]  # its own data
        np.testing.assert_allclose(_floats(m.group(2)), job.reference(seeds)[0], rtol=1e-5)
        assert float(m.group(3)) == 0.0  # the checkpoint restores what was saved


def _a_pipeline_inside_another_process_is_refused_naming_it(ran: tuple[str, Path]) -> None:
    text = ran[0]
    (own,) = _lines(text, "OWN").items()
    assert own[0] == 0
    np.testing.assert_allclose(_floats(own[1]), job.reference([0])[0], rtol=1e-5)
    refused = _lines(text, "REFUSED")
    assert sorted(refused) == [1, 2, 3], text[-3000:]
    for q, msg in refused.items():
        assert msg.startswith(
            f"RuntimeConfigError: process {q} builds a pipeline whose devices [0, 1] are all "
            "process 0's"
        ), msg
        assert "if jax.process_index() == 0" in msg and "devices=jax.local_devices()" in msg


def _processes_holding_no_stage_get_the_loss_outputs_and_parameters(ran: tuple[str, Path]) -> None:
    text, out_dir = ran
    got = _lines(text, "BYSTANDER")
    assert sorted(got) == list(range(NPROC)), text[-3000:]
    losses, params, _ = job.reference([0])
    want_infer = float(jax.jit(job.loss_fn)(_unflat(params), job.batch(1)))
    for rest in got.values():
        m = re.fullmatch(r"losses \[(\S+)\] infer (\S+)", rest)
        assert m, rest
        np.testing.assert_allclose(float(m.group(1)), losses[0], rtol=1e-5)
        np.testing.assert_allclose(float(m.group(2)), want_infer, rtol=1e-5)
    assert len(set(got.values())) == 1  # the very same floats everywhere
    for q in range(NPROC):  # every parameter, by path, in every process
        _assert_params_by_path(out_dir / f"params-bystander-{q}.npz", params, f"process {q}")


def _assert_params_by_path(npz: Path, want: dict[str, np.ndarray], who: str) -> None:
    """Each parameter the job wrote, found by its path (``['w'][2]``), equals the one-device
    reference's leaf of that path: a leaf gathered into another's place fails, even where the
    two have one shape."""
    with np.load(npz) as z:
        got = {k: z[k] for k in z.files}
    assert sorted(got) == sorted(want), (who, sorted(got), sorted(want))
    for path, w in want.items():
        g, w = np.asarray(got[path], np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape, f"{who}: parameter {path} has shape {g.shape}, not {w.shape}"
        rel = np.linalg.norm(g - w) / np.linalg.norm(w)
        assert rel <= 1e-5, f"{who}: parameter {path} differs by {rel:.2e} (relative)"


def _check_finite_on_spanning_meshes_raises_alike_in_every_process(ran: tuple[str, Path]) -> None:
    """A NaN loss (found from the losses every process shares), then NaN gradients of stage 0
    under finite losses (found by stage 0's processes, told to every other)."""
    want = {
        "NANLOSS": "step 2: not finite first in the loss of microbatch 1 (1F1): 1 NaN (of 1 "
        "values); the program computes it",
        "INFGRAD": "step 2: not finite first in the gradients of stage 0 (its backward "
        "actions); the program computes it",
    }
    for tag, start in want.items():
        got = _lines(ran[0], tag)
        assert sorted(got) == list(range(NPROC)), (tag, ran[0][-3000:])
        assert len(set(got.values())) == 1, got
        assert got[0].startswith(start), got[0]


def _zb_v_on_ranks_spanning_processes_trains_like_one_device(ran: tuple[str, Path]) -> None:
    text, out_dir = ran
    ((line, norms),) = re.findall(r"^\[rank 0\] ZBV losses \[(.*)\] norms \[(.*)\]$", text, re.M)
    losses, want, want_norms = job.reference(list(range(job.STEPS)))
    np.testing.assert_allclose(_floats(line), losses, rtol=1e-5)
    # the global norm (the clip's) counts each spanning rank once, not once per process
    np.testing.assert_allclose(_floats(norms), want_norms, rtol=1e-5)
    _assert_params_by_path(out_dir / "params-zb-v.npz", want, "ZB-V")
    assert re.search(r"^\[rank 3\] DONE 3$", text, re.M)


def _unflat(by_path: dict[str, np.ndarray]):
    """The reference's parameters (by path) as the job's tree."""
    paths = list(job.by_path(job.init()))
    return jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(job.init()), [by_path[p] for p in paths]
    )
