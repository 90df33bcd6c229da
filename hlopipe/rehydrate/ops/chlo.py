"""``chlo`` ops: the client HLO dialect JAX emits for special functions, ``top_k`` and the
implicitly broadcasting binary ops.

Each math op maps to the ``jax.lax`` function that JAX itself lowers to the same ``chlo`` op,
so jitted results agree with XLA's own expansion bit for bit.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import OpaqueAttr
from hlopipe.rehydrate.ops import elementwise  # noqa: F401  (the stablehlo rules broadcast below)
from hlopipe.rehydrate.registry import RULES, RuleContext, rule, rule_attrs


def _conj(x: Any) -> Any:
    return lax.conj(x) if np.dtype(x.dtype).kind == "c" else x


def _is_inf(x: Any) -> Any:
    return lax.eq(lax.abs(x), lax.full_like(x, np.inf))


def _unary(name: str, fn: Any) -> None:
    def impl(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
        return fn(x)

    impl.__name__ = name.replace(".", "_")
    rule(name)(impl)


# the ops JAX lowers from the ``jax.lax`` function of the same name
_LAX_NAMED = (
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan",  # trigonometric
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e",  # special functions
    "square",
)  # fmt: skip
for _name in _LAX_NAMED:
    _unary(f"chlo.{_name}", getattr(lax, _name))
for _name, _fn in {
    "chlo.conj": _conj,
    "chlo.is_inf": _is_inf,
    "chlo.is_pos_inf": lambda x: lax.eq(x, lax.full_like(x, np.inf)),
    "chlo.is_neg_inf": lambda x: lax.eq(x, lax.full_like(x, -np.inf)),
}.items():
    _unary(_name, _fn)


@rule("chlo.polygamma")
def polygamma(ctx: RuleContext, n: Any, x: Any) -> Any:
    return lax.polygamma(n, x)


@rule("chlo.zeta")
def zeta(ctx: RuleContext, x: Any, q: Any) -> Any:
    return lax.zeta(x, q)


@rule("chlo.next_after")
def next_after(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.nextafter(x, y)


@rule("chlo.top_k")
def top_k(ctx: RuleContext, x: Any, *, k: int, **attrs: Any) -> Any:
    values, indices = lax.top_k(x, k)
    return values, lax.convert_element_type(indices, ctx.result_avals[1].dtype)


@rule("chlo.constant_like")
def constant_like(ctx: RuleContext, x: Any, *, value: Any) -> Any:
    aval = ctx.aval
    v = np.asarray(value)
    return lax.full(aval.shape, v.reshape(()) if v.size == 1 else v, aval.dtype)


@rule("chlo.constant")
def constant(ctx: RuleContext, *, value: Any) -> Any:
    return np.asarray(value, dtype=ctx.aval.dtype).reshape(ctx.aval.shape)


def _mulhi_unsigned(x: Any, y: Any, bits: int) -> Any:
    """The high half of the 2n-bit product of two n-bit unsigned integers, in n-bit arithmetic."""
    half = bits // 2
    dt = x.dtype
    mask = lax.full_like(x, (1 << half) - 1)
    sh = lax.full_like(x, half)
    x_lo, x_hi = lax.bitwise_and(x, mask), lax.shift_right_logical(x, sh)
    y_lo, y_hi = lax.bitwise_and(y, mask), lax.shift_right_logical(y, sh)
    lo_lo = lax.mul(x_lo, y_lo)
    hi_lo = lax.mul(x_hi, y_lo)
    lo_hi = lax.mul(x_lo, y_hi)
    hi_hi = lax.mul(x_hi, y_hi)
    cross = lax.add(
        lax.add(lax.shift_right_logical(lo_lo, sh), lax.bitwise_and(hi_lo, mask)), lo_hi
    )
    out = lax.add(
        lax.add(hi_hi, lax.shift_right_logical(hi_lo, sh)), lax.shift_right_logical(cross, sh)
    )
    return lax.convert_element_type(out, dt)


@rule("chlo.mulhi")
def mulhi(ctx: RuleContext, x: Any, y: Any) -> Any:
    dtype = np.dtype(x.dtype)
    bits = dtype.itemsize * 8
    if dtype.kind == "u":
        return _mulhi_unsigned(x, y, bits)
    if dtype.kind != "i":
        raise UnsupportedOpError(f"chlo.mulhi with element type {dtype} is not supported")
    udt = np.dtype(f"uint{bits}")
    ux, uy = lax.bitcast_convert_type(x, udt), lax.bitcast_convert_type(y, udt)
    hi = _mulhi_unsigned(ux, uy, bits)
    # signed high half = unsigned high half - (x < 0 ? y : 0) - (y < 0 ? x : 0)  (mod 2^n)
    zero = lax.full_like(x, 0)
    uzero = lax.full_like(ux, 0)
    hi = lax.sub(hi, lax.select(lax.lt(x, zero), uy, uzero))
    hi = lax.sub(hi, lax.select(lax.lt(y, zero), ux, uzero))
    return lax.bitcast_convert_type(hi, dtype)


# ---- implicitly broadcasting binary ops -------------------------------------------------------


def _broadcast_to(x: Any, shape: tuple[int, ...], dims: tuple[int, ...] | None) -> Any:
    xshape = tuple(np.shape(x))
    if xshape == shape:
        return x
    if dims is None or len(dims) != len(xshape):
        dims = tuple(range(len(shape) - len(xshape), len(shape)))
    # size-1 dimensions stretch: drop them, then broadcast_in_dim
    keep = [i for i, n in enumerate(xshape) if n == shape[dims[i]]]
    if len(keep) != len(xshape):
        x = lax.reshape(x, tuple(xshape[i] for i in keep))
        dims = tuple(dims[i] for i in keep)
    return lax.broadcast_in_dim(x, shape, dims)


def _broadcasting(name: str, inner: Any) -> None:
    def impl(
        ctx: RuleContext, x: Any, y: Any, *, broadcast_dimensions: Any = None, **attrs: Any
    ) -> Any:
        shape = tuple(ctx.aval.shape)
        dims = tuple(broadcast_dimensions) if broadcast_dimensions is not None else None
        rank_x, rank_y = np.ndim(x), np.ndim(y)
        x = _broadcast_to(x, shape, dims if rank_x < rank_y else None)
        y = _broadcast_to(y, shape, dims if rank_y < rank_x else None)
        return inner(ctx, x, y, **rule_attrs(inner, attrs))

    impl.__name__ = name.replace(".", "_")
    rule(name)(impl)


# ``chlo.broadcast_<op>``: the rule of ``stablehlo.<op>`` (or of ``chlo.<op>``, below) on its
# operands broadcast to the result's shape
_BROADCASTING = (
    "add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "complex",
    "maximum", "minimum", "compare",
    "and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
)  # fmt: skip
for _short in _BROADCASTING:
    _broadcasting(f"chlo.broadcast_{_short}", RULES[f"stablehlo.{_short}"])
for _short in ("next_after", "polygamma", "zeta"):
    _broadcasting(f"chlo.broadcast_{_short}", RULES[f"chlo.{_short}"])


@rule("chlo.broadcast_select")
def broadcast_select(ctx: RuleContext, pred: Any, on_true: Any, on_false: Any) -> Any:
    shape = tuple(ctx.aval.shape)
    return lax.select(
        _broadcast_to(pred, shape, None),
        _broadcast_to(on_true, shape, None),
        _broadcast_to(on_false, shape, None),
    )


# ---- ragged_dot ---------------------------------------------------------------------------------

_RAGGED_FIELDS = (
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
    "lhs_ragged_dimensions",
    "rhs_group_dimensions",
)


def _ragged_dims(attr: Any) -> dict[str, tuple[int, ...]]:
    text = attr.text if isinstance(attr, OpaqueAttr) else str(attr)
    out = {}
    for f in _RAGGED_FIELDS:
        m = re.search(rf"{f}\s*=\s*\[([^\]]*)\]", text)
        out[f] = tuple(int(v) for v in m.group(1).split(",") if v.strip()) if m else ()
    return out


@rule("chlo.ragged_dot", "mhlo.ragged_dot")
def ragged_dot(
    ctx: RuleContext,
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    *,
    ragged_dot_dimension_numbers: Any,
    precision_config: Any = None,
) -> Any:
    d = _ragged_dims(ragged_dot_dimension_numbers)
    dims = lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=(
            (d["lhs_contracting_dimensions"], d["rhs_contracting_dimensions"]),
            (d["lhs_batching_dimensions"], d["rhs_batching_dimensions"]),
        ),
        lhs_ragged_dimensions=d["lhs_ragged_dimensions"],
        rhs_group_dimensions=d["rhs_group_dimensions"],
    )
    return lax.ragged_dot_general(
        lhs, rhs, group_sizes, dims, preferred_element_type=ctx.aval.dtype
    )
