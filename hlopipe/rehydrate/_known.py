"""Whether a value is known at trace time: the one test every rule that folds on values uses.

A rule sees numpy values (constants), concrete ``jax.Array``s (outside any trace, or under
``jax.ensure_compile_time_eval``) and tracers. Only the first two have a value a rule may
read to choose what to emit (a static slice, a known trip count, an identity initial value).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from hlopipe._jax_compat import is_tracer


def is_known(x: Any) -> bool:
    """Whether ``x``'s value is known now: numpy, a Python scalar, or a jax array that is not
    a tracer."""
    if isinstance(x, np.ndarray | np.generic | int | float | bool):
        return True
    return isinstance(x, jax.Array) and not is_tracer(x)


def known_value(x: Any) -> np.ndarray | None:
    """``x`` as a numpy array when its value is known (:func:`is_known`), else ``None``."""
    return np.asarray(x) if is_known(x) else None
