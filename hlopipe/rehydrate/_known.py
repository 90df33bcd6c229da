"""Whether a value is known at trace time: the one test every rule that folds on values uses.

A rule sees numpy values (constants), concrete ``jax.Array``s (outside any trace, or under
``jax.ensure_compile_time_eval``) and tracers. Only the first two have a value a rule may
read to choose what to emit (a static slice, a known trip count, an identity initial value).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from hlopipe._jax_compat import is_tracer
from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import rule


def is_known(x: Any) -> bool:
    """Whether ``x``'s value is known now: numpy, a Python scalar, or a jax array that is not
    a tracer."""
    if isinstance(x, np.ndarray | np.generic | int | float | bool):
        return True
    return isinstance(x, jax.Array) and not is_tracer(x)


def known_value(x: Any) -> np.ndarray | None:
    """``x`` as a numpy array when its value is known (:func:`is_known`), else ``None``."""
    return np.asarray(x) if is_known(x) else None


def static_ints(ctx: Any, x: Any, what: str) -> tuple[int, ...]:
    """The integers of ``x``, an operand that holds sizes (``what``, for the error), which JAX
    needs at trace time: refused (``UnsupportedOpError``) when its value is not known."""
    value = known_value(x)
    if value is None:
        raise UnsupportedOpError(
            f"{ctx.name} with {what} computed at run time is not supported (at {ctx.loc}): "
            f"JAX needs static shapes, so the {what} must be a constant"
        )
    return tuple(int(v) for v in np.ravel(value))


def attributes_as_operands(name: str, static: Callable[..., Any], *attrs: str) -> Any:
    """Register the rule for the op ``name``, which is ``static``'s op with its integer attributes
    ``attrs`` passed as trailing operands instead (``stablehlo.dynamic_conv`` is
    ``stablehlo.convolution`` with its ``padding`` an operand): ``static`` run with those
    operands' values (:func:`static_ints`). Its signature is ``static``'s with ``attrs``
    moved from the attributes to the operands, so an attribute neither op takes is still
    refused."""
    sig = inspect.signature(static)
    params = sig.parameters.values()
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keywords = [p for p in params if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD]
    moved = [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in attrs]

    def dynamic(ctx: Any, *operands: Any, **kw: Any) -> Any:
        split = len(operands) - len(attrs)
        for attr, x in zip(attrs, operands[split:], strict=True):
            kw[attr] = static_ints(ctx, x, attr)
        return static(ctx, *operands[:split], **kw)

    dynamic.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*positional, *moved, *(p for p in keywords if p.name not in attrs)]
    )
    dynamic.__name__ = dynamic.__qualname__ = name.rsplit(".", 1)[-1]
    dynamic.__module__ = static.__module__  # the op family (registry.family_of)
    return rule(name)(dynamic)
