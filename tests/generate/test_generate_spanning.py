"""Generation with stage meshes that span processes, under ``hlopipe launch --nproc 4
--devices-per-process 2`` (tests/generate/_generate_spanning_job.py): 2 stages, each on a
(2 data x 2 model) mesh over 2 processes (one data row each, from the default devices), so
each stage's executables and caches are global arrays over both its processes. Every process
gets the same tokens, equal to the unsplit program's, and the caches each process reads back
(gathered over its stage's processes) equal the unsplit program's."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess
JOB = str(Path(__file__).with_name("_generate_spanning_job.py"))


def test_stages_spanning_processes_generate_the_unsplit_programs_tokens(tmp_path):
    out = io.StringIO()
    code = launch([sys.executable, JOB, str(tmp_path)], nproc=4, devices_per_process=2,
                  heartbeat_timeout=10, grace=20, timeout=400, out=out)  # fmt: skip
    text = out.getvalue()
    assert code == 0, text[-4000:]
    holders = re.findall(r"^\[rank \d\] HOLDERS (\d) (.*)$", text, re.M)
    assert len(holders) == 4 and {h for _, h in holders} == {"((0, 1), (2, 3))"}, holders
    oracle = np.load(tmp_path / "oracle-0.npy")
    assert oracle.shape == (2, 2, 16) and len(np.unique(oracle)) >= 4
    for p in range(4):
        np.testing.assert_array_equal(np.load(tmp_path / f"tokens-{p}.npy"), oracle)
        np.testing.assert_array_equal(np.load(tmp_path / f"oracle-{p}.npy"), oracle)
        with np.load(tmp_path / f"caches-{p}.npz") as caches:
            # each process's stage keeps 2 layers x (k, v) per group, all close to the oracle
            assert len(caches.files) == 2 * 4
            assert all(bool(caches[k]) for k in caches.files), {k: caches[k] for k in caches}
    sent = re.findall(r"^\[rank \d\] SENT \d (.*)$", text, re.M)
    assert len(sent) == 4 and len(set(sent)) == 1 and "'state': 0" in sent[0], sent
