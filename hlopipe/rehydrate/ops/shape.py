"""Ops that make or rearrange arrays: constant, iota, reshape, broadcast, transpose,
concatenate, reverse, tuples."""

from __future__ import annotations

from typing import Any

import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import RuleContext, rule


@rule("stablehlo.constant", "mhlo.constant")
def constant(ctx: RuleContext, *, value: Any, **attrs: Any) -> Any:
    # numpy, not jnp: constants stay concrete at trace time, so loop bounds built from them
    # can be read (static trip counts) and XLA sees them as literals.
    return np.asarray(value, dtype=ctx.aval.dtype).reshape(ctx.aval.shape)


@rule("stablehlo.iota")
def iota(ctx: RuleContext, *, iota_dimension: int) -> Any:
    aval = ctx.aval
    return lax.broadcasted_iota(aval.dtype, aval.shape, iota_dimension)


@rule("stablehlo.reshape")
def reshape(ctx: RuleContext, x: Any) -> Any:
    return lax.reshape(x, ctx.aval.shape)


@rule("stablehlo.broadcast_in_dim")
def broadcast_in_dim(ctx: RuleContext, x: Any, *, broadcast_dimensions: tuple[int, ...]) -> Any:
    return lax.broadcast_in_dim(x, ctx.aval.shape, tuple(broadcast_dimensions))


@rule("stablehlo.broadcast")
def broadcast(ctx: RuleContext, x: Any, *, broadcast_sizes: tuple[int, ...]) -> Any:
    return lax.broadcast(x, tuple(broadcast_sizes))


@rule("stablehlo.transpose")
def transpose(ctx: RuleContext, x: Any, *, permutation: tuple[int, ...]) -> Any:
    return lax.transpose(x, tuple(permutation))


@rule("stablehlo.concatenate")
def concatenate(ctx: RuleContext, *xs: Any, dimension: int) -> Any:
    return lax.concatenate(list(xs), dimension)


@rule("stablehlo.reverse")
def reverse(ctx: RuleContext, x: Any, *, dimensions: tuple[int, ...]) -> Any:
    return lax.rev(x, tuple(dimensions))


@rule("stablehlo.get_dimension_size")
def get_dimension_size(ctx: RuleContext, x: Any, *, dimension: int) -> Any:
    return np.asarray(np.shape(x)[dimension], dtype=ctx.aval.dtype)


@rule("stablehlo.tuple")
def tuple_(ctx: RuleContext, *xs: Any) -> Any:
    raise UnsupportedOpError(
        f"stablehlo.tuple at {ctx.loc} builds a tuple value; tuples are only supported as "
        "flattened function arguments and results"
    )


@rule("stablehlo.get_tuple_element")
def get_tuple_element(ctx: RuleContext, t: Any, *, index: int) -> Any:
    if isinstance(t, tuple):
        return t[index]
    raise UnsupportedOpError(f"stablehlo.get_tuple_element at {ctx.loc} on a non-tuple value")


@rule("mhlo.copy")
def copy(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    return x
