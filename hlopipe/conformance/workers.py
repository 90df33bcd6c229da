"""Running many files: in worker processes, so that a file on which XLA kills its process (a
``Check failed`` abort, a SIGFPE folding an integer division by zero, a hang) is reported as
an ``error`` naming the crash, and a fresh worker goes on with the other files."""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import os
import queue
import select
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from hlopipe.conformance.results import FileResult
from hlopipe.io._guard import ChildProcess


def run_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    jobs: int = 1,
    on_result: Callable[[FileResult], None] | None = None,
    isolate: bool = True,
    timeout: float | None = None,
    **options: Any,
) -> list[FileResult]:
    """Run :func:`~hlopipe.conformance.run_file` over ``files`` and return the results in
    the order of ``files`` (``on_result`` sees them as they finish).

    Args:
      jobs: worker processes running files side by side.
      isolate: run the files in worker processes (``jobs`` of them, at least one), so that a
        file that makes XLA abort the process is reported as an ``error`` naming the crash,
        and a fresh worker goes on with the other files. ``False`` runs in this process (with
        ``jobs=1``), where such a file ends the run (the XLA reference runs in a worker still).
      timeout: seconds one file may take in a worker before the worker is stopped and the file
        reported as an ``error`` (``None``: no limit).
      **options: for ``run_file`` (``jit``, ``eager``, ``strict``, ``reference``).
    """
    names = [str(f) for f in files]
    results: dict[str, FileResult] = {}
    lock = threading.Lock()

    def done(r: FileResult) -> None:
        with lock:
            results[r.path] = r
            if on_result:
                on_result(r)

    if not isolate:
        for f in names:
            done(run_file_bounded(f, **options))
    else:
        _serve_all(names, options, timeout, max(1, jobs), done)
    return [results[f] for f in names]


def _serve_all(
    names: list[str],
    options: dict[str, Any],
    timeout: float | None,
    jobs: int,
    done: Callable[[FileResult], None],
) -> None:
    """Run the files on ``jobs`` threads, each feeding its own worker process."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for f in names:
        todo.put(f)
    failures: list[BaseException] = []
    reference = options.get("reference")
    options = {k: v for k, v in options.items() if k != "reference"}

    def serve() -> None:
        worker: Worker | None = None
        try:
            while True:
                try:
                    f = todo.get_nowait()
                except queue.Empty:
                    return
                worker = worker if worker is not None and worker.alive else Worker()
                r = worker.run(f, options, timeout)
                if reference == "xla":
                    worker = worker if worker.alive else Worker()
                    r.reference, r.reference_message = worker.reference(
                        f, bool(options.get("strict")), timeout
                    )
                done(r)
        except BaseException as e:  # reported in the caller's thread
            failures.append(e)
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


_WORKER_CODE = "from hlopipe.conformance.workers import worker_main; worker_main()"


class Worker(ChildProcess):
    """A child process running files one at a time (:func:`worker_main`), JSON lines in and
    out."""

    def __init__(self) -> None:
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        super().__init__(_WORKER_CODE, env)
        self.alive = True
        self.ready = False  # the worker says so once JAX is imported (not timed per file)

    def run(self, path: str, options: dict[str, Any], timeout: float | None) -> FileResult:
        """The result of ``run_file(path, **options)`` in the worker, or an ``error`` result
        naming how the worker died (or that it ran past ``timeout`` seconds)."""
        start = time.perf_counter()
        reply, why = self._ask({"path": path, "options": options}, timeout)
        if reply is not None:
            return FileResult(**reply)
        return FileResult(path, "error", f"(file): {why}", time.perf_counter() - start)

    def reference(self, path: str, strict: bool, timeout: float | None) -> tuple[str, str]:
        """The XLA reference's (status, message) for ``path``, computed in the worker."""
        reply, why = self._ask({"reference": path, "strict": strict}, timeout)
        return ("error", f"XLA: {why}") if reply is None else (reply[0], reply[1])

    def _ask(self, job: dict[str, Any], timeout: float | None) -> tuple[Any, str]:
        """Send one job; (its JSON reply, "") or (None, why there is none)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        log_start = self.log_mark()
        try:
            if not self.ready:
                self.ready = self.proc.stdout.readline() == b"ready\n"
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else None
        except (BrokenPipeError, OSError):
            line = b""
        if line:
            return json.loads(line), ""
        if line is None:  # timed out: stop this worker, the next file gets a fresh one
            self.close()
            return None, f"did not finish in {timeout:g} s; stopped"
        how, said = self.death(log_start)
        self.close()
        return None, (
            f"the process running this file crashed ({how}): XLA or jaxlib aborted on "
            f"it (the run went on in a fresh process). {crash_reason(said)}"
        ).rstrip()

    def close(self) -> None:
        if self.alive:
            self.alive = False
            super().close()


def crash_reason(log: str) -> str:
    """The line of a dying process's stderr that says why (XLA's ``F... Check failed: ...``)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "Check failed" in ln or "terminate called" in ln or "Fatal Python error" in ln:
            return f"It said: {ln[:500]}"
    tail = [ln for ln in lines if not ln.startswith("@")][-3:]
    return f"Its last words: {' | '.join(tail)[:500]}" if tail else ""


def worker_main() -> None:
    """In a worker: run the jobs read from stdin, one JSON reply per line on stdout."""
    from hlopipe.conformance.files import read_test_file
    from hlopipe.conformance.reference import reference_xla
    from hlopipe.conformance.runner import evaluate

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints must not mix with the results
    # collectives run on meshes of CPU devices; the count must be set before JAX starts
    jax.config.update("jax_num_cpu_devices", 8)
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        if "reference" in job:
            judge = functools.partial(evaluate, strict=bool(job["strict"]))
            with jax.enable_x64(True):
                reply: Any = reference_xla(read_test_file(job["reference"]), judge)
        else:
            reply = dataclasses.asdict(run_file_bounded(job["path"], **job["options"]))
        out.write(json.dumps(reply) + "\n")
        out.flush()


_RUN_COUNT = [0]


def run_file_bounded(path: str, **options: Any) -> FileResult:
    """``run_file``, clearing JAX's caches every 200 files: eager mode compiles one
    executable per primitive and shape, and a suite of a thousand files of different shapes
    would otherwise hold gigabytes of them."""
    from hlopipe.conformance.runner import run_file

    _RUN_COUNT[0] += 1
    if _RUN_COUNT[0] % 200 == 0:
        jax.clear_caches()
    return run_file(path, **options)


_reference_lock = threading.Lock()
_reference_worker: list[Worker] = []


def reference_in_worker(path: str, strict: bool, timeout: float | None = None) -> tuple[str, str]:
    """The XLA reference of one file, in a worker process kept for the session (XLA's
    compiler kills the process that compiles some files)."""
    with _reference_lock:
        if not _reference_worker or not _reference_worker[0].alive:
            _reference_worker[:] = [Worker()]
        return _reference_worker[0].reference(path, strict, timeout)


@atexit.register
def _stop() -> None:
    with _reference_lock:
        while _reference_worker:
            _reference_worker.pop().close()
