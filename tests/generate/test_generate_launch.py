"""Generation across two processes under ``hlopipe launch``: each process holds one stage on a
(data x model) mesh of its own devices, activations and the fed-back token cross between the
processes by the runtime's collectives, and every process gets the same tokens, equal to the
unsplit program's; a process that dies mid-generation is named by the other."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess
JOB = str(Path(__file__).with_name("_generate_job.py"))


def _launch(tmp_path: Path, *extra: str) -> tuple[int, str]:
    out = io.StringIO()
    code = launch(
        [sys.executable, JOB, str(tmp_path), *extra], nproc=2, devices_per_process=4,
        heartbeat_timeout=10, grace=20, timeout=300, out=out,
    )  # fmt: skip
    return code, out.getvalue()


def test_two_processes_generate_the_same_tokens_as_the_unsplit_program(tmp_path):
    code, text = _launch(tmp_path)
    assert code == 0, text[-4000:]
    assert len(re.findall(r"^\[rank \d\] REFUSED SPANNING$", text, re.M)) == 2, text[-4000:]
    toks = [np.load(tmp_path / f"tokens-{p}.npy") for p in (0, 1)]
    oracle = np.load(tmp_path / "oracle-0.npy")
    assert toks[0].shape == (2, 2, 32) and len(np.unique(oracle)) >= 8
    np.testing.assert_array_equal(toks[0], toks[1])
    np.testing.assert_array_equal(toks[0], oracle)
    np.testing.assert_array_equal(np.load(tmp_path / "oracle-1.npy"), oracle)
    for p in (0, 1):  # each process's stage keeps 2 layers x (k, v) per group, all close
        with np.load(tmp_path / f"caches-{p}.npz") as caches:
            assert len(caches.files) == 2 * 4
            assert all(caches[k][0] == 1 for k in caches.files), {k: caches[k] for k in caches}
    sent = re.findall(r"^\[rank (\d)\] SENT (.*)$", text, re.M)
    assert len(sent) == 2 and sent[0][1] == sent[1][1] and "'state': 0" in sent[0][1]


def test_a_process_dying_mid_generation_is_named(tmp_path):
    code, text = _launch(tmp_path, "--die-after", "4")
    assert code != 0
    assert re.search(r"^\[rank 0\] HALFWAY", text, re.M), text[-4000:]
    assert re.search(r"^\[rank 0\] .*lost process 1\b", text, re.M), text[-4000:]


def test_the_generate_command_under_launch(tmp_path):
    from test_generate_cli import _write

    d, p, params = _write(tmp_path)
    cmd = [sys.executable, "-m", "hlopipe", "generate", d, "--prefill", p, "--params", params,
           "--groups", "2", "--tokens", "12", "--check"]  # fmt: skip
    out = io.StringIO()
    code = launch(cmd, nproc=2, devices_per_process=1, heartbeat_timeout=10, grace=20,
                  timeout=300, out=out)  # fmt: skip
    text = out.getvalue()
    assert code == 0, text[-4000:]
    for rank in (0, 1):
        assert re.search(rf"^\[rank {rank}\] check: all 48 tokens equal", text, re.M), text[-3000:]
    seqs = re.findall(r"^\[rank (\d)\] group 0, sequence 0: (.*)$", text, re.M)
    assert len(seqs) == 2 and seqs[0][1] == seqs[1][1]
