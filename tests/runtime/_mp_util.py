"""Helpers of the multi-process tests: run a job under ``hlopipe launch``, reference losses."""

from __future__ import annotations

import functools
import io
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax

from hlopipe.models import gpt, gpt_scan
from hlopipe.runtime.launch import launch

JOB = str(Path(__file__).with_name("_multiprocess_job.py"))
CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=4, d_ff=32)


class Job:
    """A launched job in a background thread; its prefixed output collected line by line."""

    def __init__(self, nproc: int, args: list[str], *, devices: int = 2, timeout: float = 150):
        self.out = io.StringIO()
        self.procs: list[subprocess.Popen] = []
        self.code: int | None = None
        self._started = threading.Event()

        def on_start(procs):
            self.procs = procs
            self._started.set()

        def target():
            self.code = launch(
                [sys.executable, JOB, *args], nproc=nproc, devices_per_process=devices,
                heartbeat_timeout=10, grace=20, timeout=timeout, out=self.out, on_start=on_start,
            )  # fmt: skip

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()
        self._started.wait(30)

    def wait(self, timeout: float = 200) -> int:
        self.thread.join(timeout)
        print(self.text)  # pytest shows it when the test fails: every process's whole output
        assert not self.thread.is_alive(), "the launcher did not return"
        assert self.code is not None
        return self.code

    @property
    def text(self) -> str:
        return self.out.getvalue()

    def losses(self, schedule: str = "", label: str = "") -> dict[int, float]:
        """Process 0's loss per step (of ``schedule``, in a job that ran several; of scenario
        ``label`` only, if given)."""
        tail = rf".* schedule {re.escape(schedule)}$" if schedule else ""
        text = self.section(label) if label else self.text
        return {
            int(m.group(1)): float(m.group(2))
            for m in re.finditer(rf"^\[rank 0\] LOSS (\d+) (\S+){tail}", text, re.M)
        }

    def section(self, label: str) -> str:
        """Process 0's lines of scenario ``label``, of a job that ran several
        (``_multiprocess_job.py``'s ``SCENARIO`` lines)."""
        out, inside = [], False
        for line in self.text.splitlines():
            if line.startswith("[rank 0] SCENARIO "):
                inside = line == f"[rank 0] SCENARIO {label}"
            elif inside and line.startswith("[rank 0] "):
                out.append(line)
        return "\n".join(out)

    def alive(self) -> list[int]:
        return [p.pid for p in self.procs if p.poll() is None]


def check_scenarios(job: Job, code: int, checks: dict[str, Any]) -> None:
    """Run each scenario's checks (``label -> function``) on a job that ran them one after the
    other, and fail naming every scenario whose checks fail, with why; when the job failed, the
    scenario it stopped in is named too."""
    failed: dict[str, str] = {}
    for label, check in checks.items():
        if f"[rank 0] SCENARIO {label}" not in job.text:
            failed[label] = "not run: the job stopped before it"
            continue
        try:
            check()
        except AssertionError as e:
            failed[label] = str(e)[:3000]
    started = [label for label in checks if f"[rank 0] SCENARIO {label}" in job.text]
    stopped = f" (it exited with {code} in scenario {started[-1]!r})" if code and started else ""
    assert code == 0 and not failed, (
        f"job exit code {code}{stopped}; failed scenarios: {sorted(failed)}\n"
        + "\n".join(f"--- {label}: {why}" for label, why in failed.items())
        + "\n--- the job's output, last lines:\n"
        + job.text[-4000:]
    )


def no_process_left(pids: list[int]) -> bool:
    return not any(os.path.exists(f"/proc/{p}") and _not_zombie(p) for p in pids)


def _not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def reference_losses(steps: int, optimizer: str = "sgd", model: str = "markers") -> list[float]:
    """Plain JAX on one device: value_and_grad of the full-batch loss, then the optimizer
    (``model="scan"``: the GPT with its blocks stacked and scanned, ``gpt_scan``)."""
    return _reference(steps, optimizer, model)[0]


def reference_params(steps: int, optimizer: str = "sgd", model: str = "markers") -> list[Any]:
    """The flat parameters after ``steps`` steps of :func:`reference_losses`' training."""
    return _reference(steps, optimizer, model)[1]


def assert_params_like_one_device(
    path: Any, steps: int, optimizer: str = "sgd", model: str = "markers"
) -> None:
    """The parameters a job saved (``np.savez`` of the flat leaves) equal one device's after
    ``steps`` steps (relative norm of the difference at most 1e-5, per parameter)."""
    with np.load(path) as z:
        got = [z[f"arr_{n}"] for n in range(len(z.files))]
    want = reference_params(steps, optimizer, model)
    assert len(got) == len(want)
    for n, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
        assert rel <= 1e-5, f"parameter {n} differs by {rel:.2e} (relative)"


def reference_grad_norms(steps: int, optimizer: str = "sgd") -> list[float]:
    """The global gradient norm of each step of :func:`reference_losses`' training."""
    return _reference(steps, optimizer, "markers")[2]


def references_meanwhile(wanted: list[tuple[int, str, str]]) -> threading.Thread:
    """Compute the one-device references ``(steps, optimizer, model)`` of
    :func:`reference_losses` in a thread, while a job runs (the test's process only waits for
    the job, and compiling the references is a good part of a job test's time): join it
    before checking, and the checks read them from the cache. One that fails here fails
    again where it is checked."""
    thread = threading.Thread(target=lambda: [_reference(*w) for w in wanted], daemon=True)
    thread.start()
    return thread


@functools.cache
def _reference(
    steps: int, optimizer: str, model: str = "markers"
) -> tuple[list[float], list[Any], list[float]]:
    opt, step = _reference_step(optimizer, model)
    p = (gpt_scan if model == "scan" else gpt).init(jax.random.key(0), CFG)
    s = opt.init(p)
    out, norms = [], []
    for k in range(steps):
        p, s, loss, norm = step(p, s, gpt.batch(jax.random.key(100 + k), 16, CFG))
        out.append(float(loss))
        norms.append(float(norm))
    return out, jax.tree_util.tree_leaves(p), norms


@functools.cache
def _reference_grad(model: str = "markers") -> Any:
    """The jitted loss, gradient and gradient norm of :func:`_reference`, one for every
    optimizer (each optimizer compiles only its update)."""
    loss_fn = functools.partial((gpt_scan if model == "scan" else gpt).loss, cfg=CFG)

    @jax.jit
    def grad(p, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        return loss, g, optax.tree.norm(g)

    return grad


@functools.cache
def _reference_step(optimizer: str, model: str = "markers") -> tuple[Any, Any]:
    """The optimizer and the step of :func:`_reference`, one per optimizer: every step count
    of a module (and of a worker) runs the one compiled update."""
    from _multiprocess_job import optimizer as job_optimizer

    opt = job_optimizer(optimizer)  # the same optax optimizer, run here by optax alone
    grad = _reference_grad(model)

    @jax.jit
    def update(p, s, g):
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s

    def step(p, s, b):
        loss, g, norm = grad(p, b)
        p, s = update(p, s, g)
        return p, s, loss, norm

    return opt, step


@functools.cache
def reference_logits() -> np.ndarray:
    """Plain JAX on one device: the logits of the first batch's tokens, initial parameters."""
    params = gpt.init(jax.random.key(0), CFG)
    tokens = gpt.batch(jax.random.key(100), 16, CFG)[0]
    return np.asarray(jax.jit(functools.partial(gpt.logits, cfg=CFG))(params, tokens))
