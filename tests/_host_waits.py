"""A trap for every way Python can wait on the host for a device value, shared by the tests
that check a call returns without waiting (the training step, a generation session's start)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# the concrete class of a jax.Array (the one whose host copy a step must not take)
ArrayImpl = type(jnp.zeros(()))

# Every way in Python to wait on the host for a device value: the array's own methods (``_value``
# is where its conversions to numpy and Python scalars meet), jax's functions, and numpy's
# conversions (``np.asarray`` of a CPU array takes its buffer, past ``__array__`` and ``_value``)
ARRAY_WAITS = ("_value", "__array__", "__float__", "__int__", "__bool__", "__index__",
               "__complex__", "item", "tolist", "block_until_ready", "is_ready",
               "copy_to_host_async", "__dlpack__")  # fmt: skip
JAX_WAITS = ("block_until_ready", "device_get", "effects_barrier")
NUMPY_WAITS = ("asarray", "array", "asanyarray", "ascontiguousarray")


def trap_host_waits(monkeypatch) -> list[str]:
    """Make every host wait on a device value raise, and record it (a wait in another thread
    whose error is swallowed is still recorded): the waits a step made, once it returns."""
    waited: list[str] = []

    def trap(name, real=None):
        def waits(*args, **kwargs):
            if real is not None and not any(isinstance(a, jax.Array) for a in args):
                return real(*args, **kwargs)  # numpy on host values: no wait
            waited.append(name)
            raise AssertionError(f"waited on the host for a device value: {name}")

        return waits

    for name in ARRAY_WAITS:
        wait = trap(f"Array.{name}")
        monkeypatch.setattr(ArrayImpl, name, property(wait) if name == "_value" else wait)
    for name in JAX_WAITS:
        monkeypatch.setattr(jax, name, trap(f"jax.{name}"))
    for name in NUMPY_WAITS:
        monkeypatch.setattr(np, name, trap(f"np.{name}", getattr(np, name)))
    return waited
