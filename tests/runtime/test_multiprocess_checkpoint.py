"""Save at step 5, kill the job, restore and train on: steps 6-10 give the losses of an
uninterrupted run. (Restoring onto another process count, stage count and mesh:
test_checkpoint_processes.py.)"""

from __future__ import annotations

import os
import re
import signal
import time

import numpy as np
import pytest
from _mp_util import Job, no_process_left, reference_losses

pytestmark = pytest.mark.multiprocess


def test_save_kill_restore_gives_uninterrupted_losses(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    common = ["--optimizer", "adamw", "--steps", "10"]
    first = Job(2, [*common, "--save-at", "5", "--ckpt", ckpt, "--sleep-after", "6"])
    pids = [p.pid for p in first.procs]
    try:
        deadline = time.monotonic() + 150
        while not re.search(r"^\[rank 0\] LOSS 6 ", first.text, re.M):
            assert time.monotonic() < deadline, first.text[-4000:]
            assert first.thread.is_alive(), first.text[-4000:]
            time.sleep(0.2)
    finally:
        for p in first.procs:  # kill the job: every process, without warning
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    first.wait(60)
    print(first.text)
    assert no_process_left(pids)
    assert sorted(os.listdir(ckpt)) == ["step_00000005"]

    # the same layout: steps 6.. are bit-for-bit those of the first run
    again = Job(2, [*common, "--restore", ckpt])
    assert again.wait() == 0, again.text[-4000:]
    resumed = again.losses()
    assert sorted(resumed) == list(range(6, 11)), again.text[-4000:]
    assert resumed[6] == first.losses()[6]
    ref = reference_losses(10, "adamw")
    np.testing.assert_allclose([resumed[k] for k in range(6, 11)], ref[5:], rtol=1e-5)
