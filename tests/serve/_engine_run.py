"""Requests run through an in-process serving engine, for the tests that read its tokens."""

from __future__ import annotations

import threading

import jax

from hlopipe.serve import Request, Sequence

# jax's own event for each XLA compilation (``jax.monitoring``; what ``jax_log_compiles`` logs)
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def run_all(engine, cases) -> list[Request]:
    """Each ``(prompt, max_tokens, ...)`` of ``cases`` (``Sequence``'s fields in order) a
    request of one sequence, all submitted
    to ``engine`` (started here) at once; returns the requests once each has ended, the
    engine stopped."""
    return _run(engine, cases, None)


def run_all_counting_compiles(engine, cases) -> tuple[list[Request], list[str]]:
    """As :func:`run_all`, but the requests submitted once the engine is warm (``ready``),
    and the names of the functions XLA compiled from then until every request ended, as jax
    reports each compilation (``jax.monitoring``'s backend-compile event): what serving
    compiled that the warm-up did not."""
    compiled: list[str] = []

    def listen(event: str, _secs: float, **kw) -> None:
        if event == _COMPILE_EVENT:
            compiled.append(str(kw.get("fun_name")))

    return _run(engine, cases, (listen, compiled)), compiled


def _run(engine, cases, counting) -> list[Request]:
    finished = threading.Semaphore(0)
    requests = [Request([Sequence(*c)], lambda i, t, f: i < 0 and finished.release())
                for c in cases]  # fmt: skip
    engine.start()
    listening = False
    try:
        if counting is not None:
            assert engine.ready.wait(120) and engine.error is None
            jax.monitoring.register_event_duration_secs_listener(counting[0])
            listening = True
        for r in requests:
            engine.submit(r)
        for _ in requests:
            assert finished.acquire(timeout=120)
    finally:
        if listening:
            jax.monitoring.unregister_event_duration_listener(counting[0])
        engine.stop(60)
    return requests
