"""Values for training a loss program: arrays from .npz files, checked against the arguments
they stand for, and a synthetic batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.io import format_aval, load_npz


def read_arrays(
    path: str,
    keyword: str,
    avals: Sequence[Any],
    names: Sequence[str],
    microbatches: int = 1,
    what: str = "parameters",
) -> list[Any]:
    """The arrays of an .npz in order, each checked against its argument (``microbatches``:
    how many microbatches a batch array holds along its leading axis; 1 for parameters)."""
    import jax

    arrays = load_npz(path, keyword)[1]
    kw = Keyword(keyword, path)
    m = microbatches
    if len(arrays) != len(avals):
        raise RuntimeConfigError(kw, f": {len(arrays)} arrays, the program has {len(avals)} {what}")
    for k, (x, a, n) in enumerate(zip(arrays, avals, names, strict=True)):
        want = (a.shape[0] * m, *a.shape[1:]) if m > 1 else tuple(a.shape)
        if tuple(x.shape) != want or x.dtype != np.dtype(a.dtype):
            rule = (
                f" (full batch = {m} microbatches x the program's batch of {a.shape[0]})"
                if m > 1
                else ""
            )
            got = format_aval(jax.ShapeDtypeStruct(x.shape, x.dtype))
            exp = format_aval(jax.ShapeDtypeStruct(want, a.dtype))
            raise RuntimeConfigError(kw, f": array {k} ({n}) is {got}, expected {exp}{rule}")
    return arrays


def synthetic(aval: Any, microbatches: int, int_high: int, rng: Any) -> Any:
    """A full batch for the argument ``aval`` (one microbatch): integers in ``[0, int_high)``,
    booleans, floats ~ N(0, 1)."""
    shape = (aval.shape[0] * microbatches, *aval.shape[1:])
    dt = np.dtype(aval.dtype)
    if dt == np.dtype(bool):
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, int_high, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)
