"""`hlopipe train` under `hlopipe launch`: data-parallel replicas whose stage meshes span
processes read disjoint samples, feed their stages only what they read, and train like one
process on the whole batch.

One job (4 processes x 1 CPU device; 2 stages, each a 2-device data mesh over 2 processes):
each process reads only its rows of every batch (its `hlopipe.process<i>.log` lists the
samples), the processes of one replica (stage 0's and stage 1's) read the same samples, the
replicas read disjoint samples that cover the epoch and together make the batch one process
reads with the same seed, and the losses equal a plain JAX loop (the model's own function,
optax, one device) over those batches. Each process records the rows its devices hold of every
microbatch the stages compute on (a wrapper around the step's fill, outside hlopipe): they are
the samples that process read, so no row crossed between processes. The console carries no
gloo chatter.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jax
import numpy as np
import pytest
import test_training_data as single
from test_training_data import LR, B, M, S, V, plain_jax_losses, windows

from hlopipe import training

pytestmark = pytest.mark.multiprocess

STEPS = 3  # 8 samples: 2 steps an epoch, the 3rd in the second epoch
N_SAMPLES = 2 * B + 1  # one more: the remainder an epoch drops

# `hlopipe train` with StepRunner.fill wrapped: per step, the rows each addressable shard of
# every microbatch input holds (after the prologue: what the stages' compute reads), by batch
# leaf, written to fed<process>.json in the log folder.
OBSERVED_TRAIN = """
import json, os, sys
import jax
import numpy as np
from hlopipe.cli import main
from hlopipe.runtime import _fast

fed = []
fill = _fast.StepRunner.fill

def observed(self, state, batch, *, local=False):
    regs = fill(self, state, batch, local=local)
    step = {}
    for (leaf, rank, i), k in self.prog.batch_slots.items():
        if regs[k] is not None:
            for shard in regs[k].addressable_shards:
                step.setdefault(str(leaf), []).extend(np.asarray(shard.data).tolist())
    fed.append(step)
    return regs

_fast.StepRunner.fill = observed
code = main(sys.argv[1:])
logs = sys.argv[sys.argv.index("--log-dir") + 1]
with open(os.path.join(logs, f"fed{jax.process_index()}.json"), "w") as f:
    json.dump(fed, f)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """test_training_data's loss program and initial values."""
    return single.files.__wrapped__(tmp_path_factory)


def one_process_order(data: str, steps: int) -> list[list[int]]:
    """The samples of each step's batch as one process reads them (no rows given)."""
    aval = jax.ShapeDtypeStruct((B // M, S), np.int32)
    args = [training.Argument(1, "tokens", aval, training.Role.BATCH),
            training.Argument(2, "labels", aval, training.Role.BATCH)]  # fmt: skip
    batches = training.Batches(training.open_dataset(data, args), B, shuffle=True, seed=1)
    order = []
    for _ in range(steps):
        next(batches)
        order.append(batches.last_samples.tolist())
    return order


def test_replicas_across_processes_read_disjoint_samples_and_train_like_one(files, tmp_path):
    d, _ = files
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, V, N_SAMPLES * S + 1).astype(np.uint16)
    data = tmp_path / "train.bin"
    tokens.tofile(data)
    logs = tmp_path / "logs"
    argv = ["--data", str(data), "--params", str(d / "init.npz"), "--microbatches", str(M),
            "--lr", str(LR), "--steps", str(STEPS), "--seed", "1"]  # fmt: skip
    job = subprocess.run(
        [sys.executable, "-m", "hlopipe", "launch", "--nproc", "4", "--devices-per-process",
         "1", "--", sys.executable, "-c", OBSERVED_TRAIN, "train", str(d / "loss.hlo"), *argv,
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
        # of each microbatch of 2 rows, the row its device holds (the data axis's shard p % 2)
        assert f"this process reads rows {p % 2}:{p % 2 + 1}, {p % 2 + 2}:{p % 2 + 3} " in text
        read[p] = [json.loads(s) for s in re.findall(r"step \d+ reads samples (\[.*\])", text)]
        assert len(read[p]) == STEPS and all(len(s) == B // 2 for s in read[p])
    assert read[0] == read[2] and read[1] == read[3]  # a replica's stages: the same samples
    epoch = [s for k in range(2) for p in (0, 1) for s in read[p][k]]
    assert len(set(epoch)) == 2 * B and set(epoch) <= set(range(N_SAMPLES))  # disjoint, all
    # the global batches: the samples one process reads with the same seed
    order = one_process_order(str(data), STEPS)
    assert [sorted(read[0][k] + read[1][k]) for k in range(STEPS)] == [sorted(b) for b in order]
    assert set(order[2]) != set(order[0])  # the second epoch is shuffled again
    # 3. the rows each process's devices hold of every microbatch a stage computes on are
    # the samples that process read (leaf 0 the tokens, on stage 0's processes 0 and 1;
    # leaf 1 the labels, on stage 1's processes 2 and 3): no row came from another process
    for p in range(4):
        fed = json.loads((logs / f"fed{p}.json").read_text())
        assert len(fed) == STEPS
        for k in range(STEPS):
            x, y = windows(tokens, read[p][k])
            leaf, want = ("0", x) if p < 2 else ("1", y)
            assert list(fed[k]) == [leaf]
            assert sorted(fed[k][leaf]) == sorted(want.tolist()), (p, k)
    # 4. the losses: a plain JAX loop over the one-process batches
    got = [r.loss for r in training.read_metrics(str(logs))]
    assert [r.step for r in training.read_metrics(str(logs))] == list(range(1, STEPS + 1))
    np.testing.assert_allclose(got, plain_jax_losses(tokens, order), rtol=2e-5)
