"""`hlopipe train` under `hlopipe launch`: data-parallel replicas whose stage meshes span
processes read disjoint samples, and train like one process on the whole batch.

One job (4 processes x 1 CPU device; 2 stages, each a 2-device data mesh over 2 processes):
each process reads only its rows of every batch (its `hlopipe.process<i>.log` lists the
samples), the processes of one replica (stage 0's and stage 1's, rows 0:2; the others rows
2:4) read the same samples, the replicas read disjoint samples that cover the epoch, and the
losses equal a plain JAX loop (the model's own function, optax, one device) over the global
batches, and a one-process run with the same seed. The console carries no gloo chatter.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import test_training_data as single
from test_training_data import LR, B, S, V, plain_jax_losses, train

from hlopipe import training

pytestmark = pytest.mark.multiprocess

STEPS = 5  # 16 samples: 4 steps an epoch, the 5th in the second epoch
N_SAMPLES = 4 * B + 1  # one more: the remainder an epoch drops


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """test_training_data's loss program and initial values."""
    return single.files.__wrapped__(tmp_path_factory)


def test_replicas_across_processes_read_disjoint_samples_and_train_like_one(files, tmp_path):
    d, _ = files
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, V, N_SAMPLES * S + 1).astype(np.uint16)
    data = tmp_path / "train.bin"
    tokens.tofile(data)
    logs = tmp_path / "logs"
    argv = ["--data", str(data), "--params", str(d / "init.npz"), "--microbatches", "2",
            "--lr", str(LR), "--steps", str(STEPS), "--seed", "1"]  # fmt: skip
    job = subprocess.run(
        [sys.executable, "-m", "hlopipe", "launch", "--nproc", "4", "--devices-per-process",
         "1", "--", sys.executable, "-m", "hlopipe", "train", str(d / "loss.hlo"), *argv,
         "--stage-devices", "2", "--log-dir", str(logs)],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    console = job.stdout + job.stderr
    assert job.returncode == 0, console[-4000:]
    # 1. process 0 speaks for the job; no gloo connection lines, no library log lines
    assert "rank 0: stages [0], mesh 2 (data), devices" in console and "processes 0, 1" in console
    assert "2 ranks x 2 CPU device(s) of the 4 in 4 processes, data parallel" in console
    assert not re.search(r"Gloo|connected to \d+ peer|^\[rank [123]\] step", console, re.M)
    assert not re.search(r"^\[rank \d\] (INFO|DEBUG)", console, re.M), console
    # 2. the samples each process read, step by step
    read: dict[int, list[list[int]]] = {}
    for p in range(4):
        text = (logs / f"hlopipe.process{p}.log").read_text()
        read[p] = [json.loads(s) for s in re.findall(r"step \d+ reads samples (\[.*\])", text)]
        assert len(read[p]) == STEPS and all(len(s) == B // 2 for s in read[p])
    assert read[0] == read[2] and read[1] == read[3]  # a replica's stages: the same samples
    epoch = [s for k in range(4) for p in (0, 1) for s in read[p][k]]
    assert len(set(epoch)) == 4 * B and set(epoch) <= set(range(N_SAMPLES))  # disjoint, all
    order = [read[0][k] + read[1][k] for k in range(STEPS)]  # the global batches
    assert order[4] != order[0]  # the second epoch is shuffled again
    # 3. the losses: a plain JAX loop over those global batches; one process with the seed
    got = [r["loss"] for r in training.read_metrics(str(logs))]
    assert [r["step"] for r in training.read_metrics(str(logs))] == list(range(1, STEPS + 1))
    np.testing.assert_allclose(got, plain_jax_losses(tokens, order), rtol=2e-5)
    one = tmp_path / "one"
    assert train(d, *argv[2:], "--data", str(data), "--log-dir", str(one)) == 0
    np.testing.assert_allclose(got, [r["loss"] for r in training.read_metrics(str(one))],
                               rtol=2e-5)  # fmt: skip
