"""Reductions: ``stablehlo.reduce``, with the common regions recognised.

A region that only adds (max, min, multiplies, ands, ors) its two arguments becomes the
matching ``lax.reduce_*`` so JAX can differentiate it; any other region runs through
``lax.reduce`` with the region as the computation.

JAX has no derivative for a variadic ``lax.reduce``. A variadic region whose results do not
mix (result ``i`` is a monoid of operand ``i`` alone) is one ``lax.reduce_*`` per operand. The
common variadic form, a region that *selects* one of its two candidates for every floating
result (arg-max / arg-min as (value, index) pairs, max with its position; an index may be
computed otherwise, as TF's smaller index of tied values), is made differentiable: the reduce
itself (the program's own
region, so its tie-breaking) picks the results, and each floating result's derivative is the
derivative of the input element it picked (the first position whose every operand equals the
results). Other variadic regions with floating operands refuse differentiation by name.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import Block
from hlopipe.rehydrate._known import is_known, known_value
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
    v = known_value(init)
    if v is None:
        return False
    dtype = v.dtype
    if op == "stablehlo.add" or op == "stablehlo.or" or op == "stablehlo.xor":
        return bool(np.all(v == 0)) and not (dtype.kind == "f" and np.signbit(v).any())
    if op == "stablehlo.multiply" or op == "stablehlo.and":
        return bool(np.all(v == 1)) or (dtype == np.dtype(bool) and bool(np.all(v)))
    if dtype.kind == "c":
        return False  # max/min of complex numbers: no plain identity
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
    if np.dtype(x.dtype).kind == "c" and op in ("stablehlo.maximum", "stablehlo.minimum"):
        return None  # XLA's complex max/min is not lax's (see elementwise.maximum): fold the region
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

    dims = tuple(dimensions)
    per_operand = separable_ops(region.block, n) if n > 1 else None
    if per_operand is not None:
        # each result reduces its own operand with a monoid: one differentiable reduce each
        outs = [
            monoid_reduce(op, x, v, dims) for op, x, v in zip(per_operand, xs, inits, strict=True)
        ]
        if all(o is not None for o in outs):
            return tuple(outs)
    if n > 1 and any(is_inexact(x) for x in (*xs, *inits)):
        picked = selecting_results(region.block, n, [is_inexact(x) for x in xs])
        traced_init = any(is_inexact(i) and not is_known(i) for i in inits)
        if picked is not None and any(picked) and not traced_init:
            return _selection_reduce(xs, inits, computation, dims, picked)
        return tuple(
            _no_grad(ctx)(lambda *a: lax.reduce(a[:n], a[n:], computation, dims), xs, inits)
        )
    out = lax.reduce(tuple(xs), tuple(inits), computation, dims)
    return tuple(out) if n > 1 else out[0] if isinstance(out, tuple | list) else out


def separable_ops(block: Block, n: int) -> list[str] | None:
    """Per result, the op name when a variadic region's result ``i`` is ``op(acc_i, x_i)``
    (either order for a commutative op) and nothing else; None when any result mixes
    operands (or is not one binary op)."""
    if len(block.args) != 2 * n or len(block.returns) != n:
        return None
    producer = {r: op for op in block.ops for r in op.results}
    names: list[str] = []
    for i, ret in enumerate(block.returns):
        op = producer.get(ret)
        pair = (block.args[i], block.args[n + i])
        if op is None or len(op.operands) != 2 or len(op.results) != 1:
            return None
        if op.operands != pair and not (op.operands == pair[::-1] and op.name in _MONOIDS):
            return None
        names.append(op.name)
    return names


def is_inexact(x: Any) -> bool:
    return bool(jnp.issubdtype(np.dtype(x.dtype), jnp.inexact))


def selecting_results(block: Block, n: int, inexact: list[bool]) -> list[bool] | None:
    """Which results of a reduce region ``(acc_0..acc_n-1, x_0..x_n-1)`` are one of their two
    candidates ``acc_k``/``x_k``, directly or through a ``stablehlo.select``; None when a
    floating result is not (an integer result may be computed otherwise: TF's arg-max takes
    the smaller index of tied values, ``select(eq, min(i, j), select(ge, i, j))``)."""
    if len(block.args) != 2 * n or len(block.returns) != n:
        return None
    made = {r: op for op in block.ops for r in op.results}
    picked = []
    for k, ret in enumerate(block.returns):
        pair = {block.args[k], block.args[n + k]}
        op = made.get(ret)
        sel = ret in pair or (
            op is not None and op.name == "stablehlo.select" and set(op.operands[1:]) == pair
        )
        if not sel and inexact[k]:
            return None
        picked.append(sel)
    return picked


def _selection_reduce(
    xs: Any, inits: Any, computation: Any, dims: tuple[int, ...], picked: list[bool]
) -> tuple:
    """A selecting variadic reduce whose floating results carry the derivative of the element
    they selected (see the module docstring); ``picked``: the results that are one of their
    candidates (the others, integers, take no part in finding the element)."""
    stopped = [lax.stop_gradient(x) for x in xs]
    outs = lax.reduce(tuple(stopped), tuple(inits), computation, dims)
    rank = np.ndim(xs[0])
    keep = [d for d in range(rank) if d not in dims]
    perm = (*keep, *dims)
    size = int(np.prod([np.shape(xs[0])[d] for d in dims], dtype=np.int64))

    def flat(x: Any) -> Any:
        x = lax.transpose(x, perm)
        return lax.reshape(x, (*x.shape[: len(keep)], size))

    match = None
    for x, o, p in zip(stopped, outs, picked, strict=True):
        if not p:
            continue
        eq = lax.eq(flat(x), lax.expand_dims(o, (len(keep),)))
        match = eq if match is None else lax.bitwise_and(match, eq)
    assert match is not None
    count = jnp.cumsum(match, axis=-1, dtype=np.int32)
    first = lax.bitwise_and(match, lax.eq(count, lax.full_like(count, 1)))
    result = []
    for x, o in zip(xs, outs, strict=True):
        if not is_inexact(x):
            result.append(o)
            continue
        result.append(_with_picked_derivative(o, flat(x), first))
    return tuple(result)


@jax.custom_jvp
def _with_picked_derivative(out: Any, flat_x: Any, first: Any) -> Any:
    """``out`` (the reduce's own value), whose derivative is that of ``flat_x`` where
    ``first`` holds (one position along the last axis, or none)."""
    return out


@_with_picked_derivative.defjvp
def _with_picked_derivative_jvp(primals: Any, tangents: Any) -> Any:
    out, _, first = primals
    t = tangents[1]
    return out, jnp.sum(jnp.where(first, t, jnp.zeros((), t.dtype)), axis=-1)


def _no_grad(ctx: RuleContext) -> Any:
    """``fn(xs, inits)`` whose derivative is a clear refusal naming the op (JAX has none for a
    variadic reduce, and fails with an internal error)."""

    def wrap(fn: Any, xs: Any, inits: Any) -> Any:
        @jax.custom_jvp
        def f(*args: Any) -> Any:
            return tuple(fn(*args))

        @f.defjvp
        def f_jvp(primals: Any, tangents: Any) -> Any:
            raise UnsupportedOpError(
                f"{ctx.name} at {ctx.loc}: a variadic reduce whose region does not select "
                "one of its candidates has no derivative (JAX has none for a variadic "
                "lax.reduce); differentiate with respect to inputs it does not depend on"
            )

        return f(*xs, *inits)

    return wrap
