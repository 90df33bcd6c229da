"""Threads that see the caller's JAX settings.

Some JAX settings are per thread: ``with jax.enable_x64(True):`` sets 64-bit types for the
thread that enters it only, so a thread the runtime starts (compiling stages in parallel, the
rank threads of a profiled or multi-process step, the link thread) would trace and place
int64 values as int32. :func:`carrying_context` captures them where the work is handed over.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax


def carrying_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, run in any thread under the settings of the thread calling this (64-bit
    types on or off)."""
    x64 = bool(jax.config.read("jax_enable_x64"))

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with jax.enable_x64(x64):
            return fn(*args, **kwargs)

    return run
