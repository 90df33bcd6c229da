"""Reductions: ``stablehlo.reduce``, with the common regions recognised.

A region that only adds (max, min, multiplies, ands, ors) its two arguments becomes the
matching ``lax.reduce_*`` so JAX can differentiate it; any other region runs through
``lax.reduce`` with the region as the computation.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.rehydrate.registry import RuleContext, rule

_MONOIDS = {
    "stablehlo.add": (lax.reduce_sum, lax.add),
    "stablehlo.multiply": (lax.reduce_prod, lax.mul),
    "stablehlo.maximum": (lax.reduce_max, lax.max),
    "stablehlo.minimum": (lax.reduce_min, lax.min),
    "stablehlo.and": (lax.reduce_and, lax.bitwise_and),
    "stablehlo.or": (lax.reduce_or, lax.bitwise_or),
    "stablehlo.xor": (lax.reduce_xor, lax.bitwise_xor),
}

_BOOL = {
    "stablehlo.add": "stablehlo.or",
    "stablehlo.maximum": "stablehlo.or",
    "stablehlo.multiply": "stablehlo.and",
    "stablehlo.minimum": "stablehlo.and",
}


def is_identity(op: str, init: Any) -> bool:
    """Whether ``init`` is a concrete value (numpy, or a jax array outside any trace) equal
    to the identity of the binary op ``op``."""
    if isinstance(init, jax.core.Tracer) or not isinstance(
        init, np.ndarray | np.generic | jax.Array
    ):
        return False
    v = np.asarray(init)
    dtype = v.dtype
    if op == "stablehlo.add" or op == "stablehlo.or" or op == "stablehlo.xor":
        return bool(np.all(v == 0)) and not (dtype.kind == "f" and np.signbit(v).any())
    if op == "stablehlo.multiply" or op == "stablehlo.and":
        return bool(np.all(v == 1)) or (dtype == np.dtype(bool) and bool(np.all(v)))
    if dtype.kind == "c":
        return False  # max/min of complex numbers order lexicographically: no plain identity
    if op == "stablehlo.maximum":
        if dtype.kind == "f" or dtype.kind == "V":
            return bool(np.all(np.isneginf(v.astype(np.float64))))
        if dtype == np.dtype(bool):
            return not bool(np.any(v))
        return bool(np.all(v == np.iinfo(dtype).min))
    if op == "stablehlo.minimum":
        if dtype.kind == "f" or dtype.kind == "V":
            return bool(np.all(np.isposinf(v.astype(np.float64))))
        if dtype == np.dtype(bool):
            return bool(np.all(v))
        return bool(np.all(v == np.iinfo(dtype).max))
    return False


def monoid_reduce(op: str, x: Any, init: Any, dims: tuple[int, ...]) -> Any | None:
    """x reduced over dims with the binary op ``op`` and initial value ``init``, through the
    differentiable ``lax.reduce_*``; None when ``op`` is not a recognised monoid."""
    if np.dtype(x.dtype) == np.dtype(bool):
        op = _BOOL.get(op, op)
    if op not in _MONOIDS:
        return None
    if op == "stablehlo.xor" and np.dtype(x.dtype).kind not in "iub":
        return None
    reducer, combine = _MONOIDS[op]
    if op in ("stablehlo.and", "stablehlo.or", "stablehlo.xor") and np.dtype(x.dtype).kind == "f":
        return None
    if op in ("stablehlo.and", "stablehlo.or", "stablehlo.xor") and np.dtype(x.dtype).kind == "V":
        if jnp.issubdtype(x.dtype, jnp.floating):
            return None
        # sub-byte integers: lax's logical reductions want a byte type; bitwise ops of the
        # sign- (zero-) extended values are the extension of the n-bit result
        wide = np.int8 if jnp.issubdtype(x.dtype, jnp.signedinteger) else np.uint8
        out = monoid_reduce(
            op, lax.convert_element_type(x, wide), lax.convert_element_type(init, wide), dims
        )
        return None if out is None else lax.convert_element_type(out, x.dtype)
    out = reducer(x, tuple(dims)) if dims else x
    if is_identity(op, init):
        return out
    return combine(out, lax.convert_element_type(init, out.dtype))


@rule("stablehlo.reduce")
def reduce(ctx: RuleContext, *operands: Any, dimensions: tuple[int, ...]) -> Any:
    n = len(operands) // 2
    xs, inits = operands[:n], operands[n:]
    region = ctx.regions[0]
    if n == 1:
        op = region.binary_op()
        if op is not None:
            out = monoid_reduce(op, xs[0], inits[0], tuple(dimensions))
            if out is not None:
                return out

    def computation(acc: tuple, x: tuple) -> tuple:
        return region(*acc, *x)

    out = lax.reduce(tuple(xs), tuple(inits), computation, tuple(dimensions))
    return tuple(out) if n > 1 else out[0] if isinstance(out, tuple | list) else out
