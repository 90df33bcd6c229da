"""Element-wise ops: arithmetic, math functions, comparisons, select, conversions."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import RuleContext, rule


def _is_bool(x: Any) -> bool:
    return np.dtype(x.dtype) == np.dtype(bool)


def _unary(name: str, fn: Any) -> None:
    def impl(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
        return fn(x)

    impl.__name__ = name.split(".")[-1]
    rule(name)(impl)


for _name, _fn in {
    "stablehlo.abs": lax.abs,
    "stablehlo.ceil": lax.ceil,
    "stablehlo.floor": lax.floor,
    "stablehlo.cosine": lax.cos,
    "stablehlo.sine": lax.sin,
    "stablehlo.tan": lax.tan,
    "stablehlo.tanh": lax.tanh,
    "stablehlo.exponential": lax.exp,
    "stablehlo.exponential_minus_one": lax.expm1,
    "stablehlo.log": lax.log,
    "stablehlo.log_plus_one": lax.log1p,
    "stablehlo.logistic": lax.logistic,
    "stablehlo.sqrt": lax.sqrt,
    "stablehlo.rsqrt": lax.rsqrt,
    "stablehlo.cbrt": lax.cbrt,
    "stablehlo.negate": lax.neg,
    "stablehlo.sign": lax.sign,
    "stablehlo.not": lax.bitwise_not,
    "stablehlo.popcnt": lax.population_count,
    "stablehlo.count_leading_zeros": lax.clz,
    "stablehlo.is_finite": lax.is_finite,
    "stablehlo.real": lax.real,
    "stablehlo.imag": lax.imag,
    "stablehlo.round_nearest_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "stablehlo.round_nearest_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
}.items():
    _unary(_name, _fn)


@rule("stablehlo.add")
def add(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_or(x, y) if _is_bool(x) else lax.add(x, y)


@rule("stablehlo.subtract")
def subtract(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_bool(x):  # i1 arithmetic wraps modulo 2
        return lax.bitwise_xor(x, y)
    return lax.sub(x, y)


@rule("stablehlo.multiply")
def multiply(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_and(x, y) if _is_bool(x) else lax.mul(x, y)


@rule("stablehlo.divide")
def divide(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.div(x, y)


@rule("stablehlo.remainder")
def remainder(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.rem(x, y)


@rule("stablehlo.power")
def power(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.pow(x, y)


@rule("stablehlo.atan2")
def atan2(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.atan2(x, y)


@rule("stablehlo.maximum")
def maximum(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_or(x, y) if _is_bool(x) else lax.max(x, y)


@rule("stablehlo.minimum")
def minimum(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_and(x, y) if _is_bool(x) else lax.min(x, y)


@rule("stablehlo.and")
def and_(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_and(x, y)


@rule("stablehlo.or")
def or_(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_or(x, y)


@rule("stablehlo.xor")
def xor(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_xor(x, y)


@rule("stablehlo.shift_left")
def shift_left(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.shift_left(x, y)


@rule("stablehlo.shift_right_logical")
def shift_right_logical(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.shift_right_logical(x, y)


@rule("stablehlo.shift_right_arithmetic")
def shift_right_arithmetic(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.shift_right_arithmetic(x, y)


@rule("stablehlo.complex")
def complex_(ctx: RuleContext, re: Any, im: Any) -> Any:
    return lax.complex(re, im)


@rule("stablehlo.clamp")
def clamp(ctx: RuleContext, lo: Any, x: Any, hi: Any) -> Any:
    return lax.clamp(lo, x, hi)


@rule("stablehlo.select")
def select(ctx: RuleContext, pred: Any, on_true: Any, on_false: Any) -> Any:
    if np.ndim(pred) == 0 and np.ndim(on_true) != 0:
        pred = lax.broadcast(pred, np.shape(on_true))
    return lax.select(pred, on_true, on_false)


@rule("stablehlo.convert")
def convert(ctx: RuleContext, x: Any) -> Any:
    dtype = ctx.aval.dtype
    if np.dtype(x.dtype).kind == "c" and dtype.kind != "c":
        x = lax.real(x)
    if dtype == np.dtype(bool) and not _is_bool(x):
        return lax.ne(x, lax.full_like(x, 0))
    return lax.convert_element_type(x, dtype)


@rule("stablehlo.bitcast_convert")
def bitcast_convert(ctx: RuleContext, x: Any) -> Any:
    dtype = ctx.aval.dtype
    src = np.dtype(x.dtype)
    if src == dtype:
        return x
    if src == np.dtype(bool) or dtype == np.dtype(bool):
        as_u8 = lax.convert_element_type(x, np.uint8) if src == np.dtype(bool) else x
        out = lax.bitcast_convert_type(as_u8, np.uint8 if dtype == np.dtype(bool) else dtype)
        return lax.ne(out, lax.full_like(out, 0)) if dtype == np.dtype(bool) else out
    return lax.bitcast_convert_type(x, dtype)


@rule("stablehlo.reduce_precision")
def reduce_precision(ctx: RuleContext, x: Any, *, exponent_bits: int, mantissa_bits: int) -> Any:
    return lax.reduce_precision(x, exponent_bits, mantissa_bits)


# ---- compare -------------------------------------------------------------------------------

_CMP = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt, "GE": lax.ge}


def _total_order_key(x: Any) -> Any:
    """Floats -> signed ints that compare in IEEE total order (-NaN < -inf < ... < NaN)."""
    dtype = np.dtype(x.dtype)
    bits = dtype.itemsize * 8
    int_t = {16: np.int16, 32: np.int32, 64: np.int64, 8: np.int8}[bits]
    i = lax.bitcast_convert_type(x, int_t)
    mask = lax.shift_right_logical(
        lax.shift_right_arithmetic(i, np.array(bits - 1, int_t)), np.array(1, int_t)
    )
    return lax.bitwise_xor(i, mask)


@rule("stablehlo.compare")
def compare(
    ctx: RuleContext,
    x: Any,
    y: Any,
    *,
    comparison_direction: str,
    compare_type: str | None = None,
) -> Any:
    fn = _CMP.get(comparison_direction)
    if fn is None:
        raise UnsupportedOpError(f"compare direction {comparison_direction} is not supported")
    if compare_type == "TOTALORDER" and np.dtype(x.dtype).kind == "f":
        return fn(_total_order_key(x), _total_order_key(y))
    if _is_bool(x) and comparison_direction not in ("EQ", "NE"):
        x, y = lax.convert_element_type(x, np.uint8), lax.convert_element_type(y, np.uint8)
    return fn(x, y)


__all__ = ["compare", "jnp"]
