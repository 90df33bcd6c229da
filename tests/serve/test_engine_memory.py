"""The serving engine gives back the memory malloc holds free: once warm and when it has been
idle a while, never between the turns of requests sent back to back. The oracle is the
kernel's count of the process's resident pages (``/proc/self/status``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from pathlib import Path

from hlopipe.serve import _engine


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_release_freed_gives_back_the_blocks_malloc_keeps():
    """256 MiB in 64 KiB blocks (under malloc's mmap threshold: on its heap), written, then
    freed but for the last (which holds the heap's top, so free alone gives nothing back):
    resident memory falls by most of it only once ``release_freed`` runs. Where the C
    library is not glibc it has no ``malloc_trim`` and the call does nothing."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "malloc_trim"):  # macOS, musl: nothing to call
        assert _engine._TRIM is None
        _engine.release_freed()
        return
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size, n = 64 << 10, 4096
    blocks = [libc.malloc(size) for _ in range(n)]
    assert all(blocks)
    for b in blocks:
        ctypes.memset(b, 1, size)
    for b in blocks[:-1]:
        libc.free(b)
    held = _rss()
    _engine.release_freed()
    after = _rss()
    libc.free(blocks[-1])
    assert held - after > 200 << 20, (held >> 20, after >> 20)


def test_the_engine_releases_once_warm_and_when_idle_not_between_requests(monkeypatch):
    """In-process engine, the built-in model on one stage: a second request submitted as the
    first ends (on the engine's thread) runs without a release between them; one comes once
    warm, and one once the engine has stayed idle for ``_IDLE_S`` after the second."""
    from hlopipe.generate import Generator
    from hlopipe.serve import Engine, Request, Sequence, builtin_model

    calls: list[int] = []  # the engine's turns at each release
    real = _engine.release_freed
    decode, _, params, max_len = builtin_model(1)
    engine = Engine(Generator(decode, params, num_stages=1, groups=1, max_len=max_len))

    def spy() -> None:
        calls.append(engine.steps)
        real()

    monkeypatch.setattr(_engine, "release_freed", spy)
    done = threading.Event()
    second = Request([Sequence([3, 4], 3)], lambda i, t, f: i < 0 and done.set())
    first = Request([Sequence([1, 2], 3)], lambda i, t, f: i < 0 and engine.submit(second))
    engine.start()
    try:
        engine.submit(first)
        assert done.wait(120)
        ended = engine.steps
        assert calls == [0]  # once warm; none between the two
        waited = time.perf_counter()
        while len(calls) < 2 and time.perf_counter() - waited < 60:
            time.sleep(0.02)
        assert calls == [0, ended]
    finally:
        engine.stop(60)


# One process of a real job (its own coordination service) holding both ends: process 0's
# leader writes plans (reads of no group: nothing to compute), a follower engine on the built-in
# model makes them in a thread (its warm-up, and the release after it, skipped), its releases
# recorded with the broadcasts it had received.
FOLLOW_JOB = """
import socket, threading, time
import jax
import numpy as np
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=1, process_id=0)
from hlopipe.generate import Generator
from hlopipe.serve import Engine, _engine, builtin_model
from hlopipe.serve._control import Follower, Leader, Op, OpKind
decode, _, params, max_len = builtin_model(1)
engine = Engine(Generator(decode, params, num_stages=1, groups=1, max_len=max_len))
engine._prepare = lambda: None  # no warm-up: these plans compute nothing
follower, trims, real = Follower(), [], _engine.release_freed
_engine.release_freed = lambda: (trims.append(follower.received), real())
job = threading.Thread(target=engine.follow, args=(follower,))
job.start()
assert engine.ready.wait(120)
leader = Leader()
for gap in GAPS:
    leader.send(Op(OpKind.READ, values=(np.zeros(0, np.int64),)))
    time.sleep(gap)
leader.send(Op(OpKind.STOP))
job.join(60)
print("TRIMS", trims, "IDLE", _engine._IDLE_S, flush=True)
jax.distributed.shutdown()
"""


def test_a_follower_releases_once_process_0_is_idle_not_between_its_plans():
    """Under ``launch`` the other processes do not know when process 0 is idle: a follower
    gives back malloc's free memory once it has waited ``_IDLE_S`` for the next plan, not
    between plans sent back to back (and no broadcast more is sent for it)."""
    import subprocess
    import sys

    gaps = (0.05, 0.05, 1.5, 0.05)  # after broadcasts 1 .. 4 (the third: process 0 idle)
    root = Path(__file__).resolve().parents[2]
    got = subprocess.run([sys.executable, "-c", FOLLOW_JOB.replace("GAPS", repr(gaps))],
                         capture_output=True, text=True, timeout=240, cwd=root)  # fmt: skip
    line = next((x for x in got.stdout.splitlines() if x.startswith("TRIMS")), None)
    assert got.returncode == 0 and line is not None, got.stdout + got.stderr[-3000:]
    assert float(line.split("IDLE")[1]) < 1.5
    # once, after the third broadcast (the 1.5 s wait), and not after the last (stopped)
    assert line.split("IDLE")[0].strip() == "TRIMS [3]", line
