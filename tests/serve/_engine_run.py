"""Requests run through an in-process serving engine, for the tests that read its tokens."""

from __future__ import annotations

import threading

from hlopipe.serve import Request, Sequence


def run_all(engine, cases) -> list[Request]:
    """Each ``(prompt, max_tokens, ...)`` of ``cases`` (``Sequence``'s fields in order) a
    request of one sequence, all submitted
    to ``engine`` (started here) at once; returns the requests once each has ended, the
    engine stopped."""
    finished = threading.Semaphore(0)
    requests = [Request([Sequence(*c)], lambda i, t, f: i < 0 and finished.release())
                for c in cases]  # fmt: skip
    engine.start()
    try:
        for r in requests:
            engine.submit(r)
        for _ in requests:
            assert finished.acquire(timeout=120)
    finally:
        engine.stop(60)
    return requests
