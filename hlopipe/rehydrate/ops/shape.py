"""Ops that make or rearrange arrays: constant, iota, reshape, broadcast, transpose,
concatenate, reverse, tuples."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._known import known_value
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
    value = known_value(x)
    shape = tuple(ctx.aval.shape)
    if (
        value is not None
        and value.size == 1
        and value.dtype.kind == "f"
        and np.isposinf(value).any()
        and int(np.prod(shape, dtype=np.int64)) <= _KNOWN_INFINITY_SIZE
    ):
        # +inf stays known (a view, no copy), so that the multiply it meets can keep its
        # derivative finite (elementwise.multiply: XLA's math library's x * inf); -inf, the
        # masks and max initial values, stays a broadcast the decompiler folds
        return np.broadcast_to(value.reshape(()), shape)
    return lax.broadcast_in_dim(x, shape, tuple(broadcast_dimensions))


# above this many elements a broadcast infinity becomes a traced value like any other (a known
# one would be a dense constant of that size in the compiled program)
_KNOWN_INFINITY_SIZE = 1 << 16


@rule("stablehlo.broadcast")
def broadcast(ctx: RuleContext, x: Any, *, broadcast_sizes: tuple[int, ...]) -> Any:
    return lax.broadcast(x, tuple(broadcast_sizes))


# ---- the dynamic forms with static result types --------------------------------------------
# With a static result type, the shape operand only restates it: the op is its static form.
# A shape known at trace time that disagrees with the result type is an invalid program.


def _result_shape(ctx: RuleContext, shape: Any) -> tuple[int, ...]:
    """The result's shape: its type's, a dynamic dimension (``?``) read from the shape operand
    (which must then be known at trace time)."""
    out = tuple(ctx.aval.shape)
    known = known_value(shape)
    if known is None and None in out:
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc}: a dynamic result shape computed at run time is not "
            "supported (JAX needs static shapes)"
        )
    if known is None:
        return out
    sizes = tuple(int(v) for v in np.ravel(known))
    if len(sizes) != len(out) or any(
        o is not None and o != k for o, k in zip(out, sizes, strict=True)
    ):
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc}: its shape operand {list(sizes)} disagrees with its "
            f"result type {['?' if o is None else o for o in out]}"
        )
    return sizes


@rule("stablehlo.dynamic_iota")
def dynamic_iota(ctx: RuleContext, shape: Any, *, iota_dimension: int) -> Any:
    return lax.broadcasted_iota(ctx.aval.dtype, _result_shape(ctx, shape), iota_dimension)


@rule("stablehlo.dynamic_reshape")
def dynamic_reshape(ctx: RuleContext, x: Any, shape: Any) -> Any:
    return lax.reshape(x, _result_shape(ctx, shape))


@rule("stablehlo.dynamic_broadcast_in_dim")
def dynamic_broadcast_in_dim(
    ctx: RuleContext,
    x: Any,
    shape: Any,
    *,
    broadcast_dimensions: tuple[int, ...],
    known_expanding_dimensions: Any = None,
    known_nonexpanding_dimensions: Any = None,
) -> Any:
    out = _result_shape(ctx, shape)
    return lax.broadcast_in_dim(x, out, tuple(broadcast_dimensions))


@rule("tensor.cast")
def tensor_cast(ctx: RuleContext, x: Any) -> Any:
    """A cast between static and dynamic forms of one shape: the value (the interpreter checks
    it has the result type's static sizes)."""
    return x


@rule("stablehlo.transpose")
def transpose(ctx: RuleContext, x: Any, *, permutation: tuple[int, ...]) -> Any:
    return lax.transpose(x, tuple(permutation))


@rule("stablehlo.concatenate")
def concatenate(ctx: RuleContext, *xs: Any, dimension: int) -> Any:
    return lax.concatenate(list(xs), dimension)


@rule("stablehlo.reverse")
def reverse(ctx: RuleContext, x: Any, *, dimensions: tuple[int, ...]) -> Any:
    return lax.rev(x, tuple(dimensions))


@rule("stablehlo.set_dimension_size")
def set_dimension_size(ctx: RuleContext, x: Any, size: Any, *, dimension: int) -> Any:
    """A no-op when it sets a dimension to its static size (TensorFlow's TopKV2 does so on
    static shapes); a smaller size makes a bounded dynamic shape, which is refused."""
    static = np.shape(x)[dimension]
    if not isinstance(size, np.ndarray | np.generic | int):
        change = "to a size computed at run time"
    elif int(size) != static or tuple(ctx.aval.shape) != tuple(np.shape(x)):
        change = f"of size {static} to {int(size)}"
    else:
        return x
    raise UnsupportedOpError(
        f"stablehlo.set_dimension_size at {ctx.loc} sets dimension {dimension} {change}: "
        "bounded dynamic shapes are not supported"
    )


@rule("stablehlo.get_dimension_size")
def get_dimension_size(ctx: RuleContext, x: Any, *, dimension: int) -> Any:
    return np.asarray(np.shape(x)[dimension], dtype=ctx.aval.dtype)


@jax.tree_util.register_pytree_node_class
class TupleValue:
    """A value of tuple type built by ``stablehlo.tuple`` inside a function: its elements, held
    in a pytree node so ``jax.jit`` and control flow carry it (a bare Python tuple would be
    read as one result per element)."""

    def __init__(self, items: tuple[Any, ...]) -> None:
        self.items = tuple(items)

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        return self.items, None

    @classmethod
    def tree_unflatten(cls, aux: None, children: Any) -> TupleValue:
        return cls(tuple(children))


@rule("stablehlo.tuple")
def tuple_(ctx: RuleContext, *xs: Any) -> Any:
    """A tuple value (XLA's converter keeps one where HLO copies a whole tuple; torch_xla's
    scan returns one): one value, taken apart by ``get_tuple_element``."""
    return TupleValue(xs)


@rule("stablehlo.get_tuple_element")
def get_tuple_element(ctx: RuleContext, t: Any, *, index: int) -> Any:
    if isinstance(t, TupleValue):
        return t.items[index]
    if isinstance(t, tuple):
        return t[index]
    raise UnsupportedOpError(f"stablehlo.get_tuple_element at {ctx.loc} on a non-tuple value")


@rule("mhlo.copy")
def copy(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    return x  # a tuple value (TupleValue) passes on as one value


@rule("mhlo.add_dependency")
def add_dependency(ctx: RuleContext, x: Any, token: Any, **attrs: Any) -> Any:
    """The operand, ordered after the token: JAX keeps data dependencies, so the value."""
    return x


@rule("mhlo.domain")
def domain(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """A sharding (or other) domain boundary: the value unchanged."""
    return x


@rule("mhlo.bitcast")
def bitcast(
    ctx: RuleContext, x: Any, *, source_layout: Any = None, result_layout: Any = None, **attrs: Any
) -> Any:
    """XLA's layout bitcast: the operand's buffer, in its physical (layout) order, read as the
    result shape in the result's layout. Layouts are minor-to-major dimension lists."""
    out = ctx.aval
    src = tuple(int(d) for d in source_layout) if source_layout is not None else None
    dst = tuple(int(d) for d in result_layout) if result_layout is not None else None
    src = src or tuple(range(np.ndim(x) - 1, -1, -1))
    dst = dst or tuple(range(len(out.shape) - 1, -1, -1))
    if np.dtype(x.dtype) != out.dtype:
        if np.dtype(x.dtype).itemsize != out.dtype.itemsize:
            raise UnsupportedOpError(
                f"mhlo.bitcast at {ctx.loc} changes the element width "
                f"({x.dtype} -> {out.dtype}); only layout bitcasts are supported"
            )
        x = lax.bitcast_convert_type(x, out.dtype)
    major_to_minor_in = tuple(reversed(src))
    major_to_minor_out = tuple(reversed(dst))
    flat = lax.reshape(lax.transpose(x, major_to_minor_in), (int(np.prod(x.shape)),))
    physical = lax.reshape(flat, tuple(out.shape[d] for d in major_to_minor_out))
    return lax.transpose(physical, tuple(int(i) for i in np.argsort(major_to_minor_out)))
