"""Element-wise ops: arithmetic, math functions, comparisons, select, conversions.

Every rule emits the ``jax.lax`` function that lowers to the same StableHLO op, so results
equal XLA's. Two things JAX lacks are filled in here: ``i1`` arithmetic (modulo 2, as the
specification defines it) and the sub-byte integers (``i2``/``i4``/``ui2``/``ui4``), on which
JAX refuses arithmetic: they are computed in 8 bits and truncated back, which wraps exactly
as n-bit arithmetic does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._known import known_value
from hlopipe.rehydrate.registry import RuleContext, rule


def _is_bool(x: Any) -> bool:
    return np.dtype(x.dtype) == np.dtype(bool)


_SUB_BYTE = {
    np.dtype(getattr(ml_dtypes, n))
    for n in ("int2", "uint2", "int4", "uint4")
    if hasattr(ml_dtypes, n)
}


def _is_sub_byte(x: Any) -> bool:
    return hasattr(x, "dtype") and np.dtype(x.dtype) in _SUB_BYTE


def _bits(x: Any) -> int:
    return int(ml_dtypes.iinfo(np.dtype(x.dtype)).bits)


def _widen(x: Any) -> Any:
    if not _is_sub_byte(x):
        return x
    signed = np.dtype(x.dtype).kind == "i" or ml_dtypes.iinfo(np.dtype(x.dtype)).min < 0
    return lax.convert_element_type(x, np.int8 if signed else np.uint8)


def _as_unsigned_wide(x: Any) -> Any:
    """An n-bit integer's bit pattern as an unsigned 8-bit value (0 .. 2^n - 1)."""
    wide = lax.convert_element_type(_widen(x), np.uint8)
    return lax.bitwise_and(wide, lax.full_like(wide, (1 << _bits(x)) - 1))


def sub_byte(fn: Any) -> Any:
    """Run ``fn`` on 8-bit copies of sub-byte integer operands; truncate results back."""

    @functools.wraps(fn)
    def impl(ctx: RuleContext, *xs: Any, **attrs: Any) -> Any:
        if not any(_is_sub_byte(x) for x in xs):
            return fn(ctx, *xs, **attrs)
        out = fn(ctx, *(_widen(x) for x in xs), **attrs)
        outs = out if isinstance(out, tuple) else (out,)
        fixed = tuple(
            lax.convert_element_type(o, a.dtype) if np.dtype(a.dtype) in _SUB_BYTE else o
            for o, a in zip(outs, ctx.result_avals, strict=True)
        )
        return fixed if isinstance(out, tuple) else fixed[0]

    return impl


def _unary(name: str, fn: Any) -> None:
    def impl(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
        return fn(x)

    impl.__name__ = name.split(".")[-1]
    rule(name)(sub_byte(impl))


def _real(x: Any) -> Any:
    return lax.real(x) if np.dtype(x.dtype).kind == "c" else x


def _imag(x: Any) -> Any:
    return lax.imag(x) if np.dtype(x.dtype).kind == "c" else lax.full_like(x, 0)


def _complex_cbrt(z: Any) -> Any:
    """The principal cube root, ``|z|^(1/3) * exp(i * arg(z) / 3)`` (the specification's
    complex cubic root; ``lax.cbrt`` and XLA take real operands only). ``|z|`` is taken of
    ``z`` scaled by its larger part, so it overflows only where the root itself would; a
    denormal part counts as a zero of its sign, as XLA on CPU reads denormals (its ``atan2``
    reads ``(-1.5, 5e-324)`` as ``-pi``)."""
    re_, im = _flush_denormal(lax.real(z)), _flush_denormal(lax.imag(z))
    big = lax.max(lax.abs(re_), lax.abs(im))
    usable = lax.bitwise_and(lax.gt(big, lax.full_like(big, 0)), lax.is_finite(big))
    scale = lax.select(usable, big, lax.full_like(big, 1))
    scaled = lax.complex(lax.div(re_, scale), lax.div(im, scale))
    radius = lax.mul(lax.cbrt(scale), lax.cbrt(lax.abs(scaled)))
    angle = lax.div(lax.atan2(im, re_), lax.full_like(radius, 3))
    return lax.complex(lax.mul(radius, lax.cos(angle)), lax.mul(radius, lax.sin(angle)))


def _flush_denormal(x: Any) -> Any:
    """``x`` with its denormal values replaced by a zero of their sign."""
    tiny = lax.full_like(x, ml_dtypes.finfo(np.dtype(x.dtype)).tiny)
    return lax.select(lax.lt(lax.abs(x), tiny), lax.mul(x, lax.full_like(x, 0)), x)


def _negate(x: Any) -> Any:
    return x if _is_bool(x) else lax.neg(x)  # -x == x modulo 2


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
    "stablehlo.cbrt": lambda x: _complex_cbrt(x) if _is_complex(x) else lax.cbrt(x),
    "stablehlo.negate": _negate,
    "stablehlo.sign": lax.sign,
    "stablehlo.not": lax.bitwise_not,
    "stablehlo.is_finite": lax.is_finite,
    "stablehlo.real": _real,
    "stablehlo.imag": _imag,
    "stablehlo.round_nearest_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "stablehlo.round_nearest_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
}.items():
    _unary(_name, _fn)


@rule("stablehlo.add")
@sub_byte
def add(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.bitwise_or(x, y) if _is_bool(x) else lax.add(x, y)


@rule("stablehlo.subtract")
@sub_byte
def subtract(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_bool(x):  # i1 arithmetic wraps modulo 2
        return lax.bitwise_xor(x, y)
    return lax.sub(x, y)


@rule("stablehlo.multiply")
@sub_byte
def multiply(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_bool(x):
        return lax.bitwise_and(x, y)
    for a, c in ((x, y), (y, x)):
        value = known_value(c)
        if value is not None and value.dtype.kind == "f" and np.isinf(value).any():
            return _times_infinite(a, value)
    return lax.mul(x, y)


def _times_infinite(x: Any, c: np.ndarray) -> Any:
    """``x * c`` for a constant ``c`` with infinities, whose derivative takes them as the
    largest finite value of the type. XLA's math library writes ``select(|x| == 1, x * inf,
    ...)`` (ErfInv: torch.erfinv, trunc_normal_) and the like: the zero cotangent of the
    branch not taken times ``inf`` would be NaN everywhere; a nonzero tangent still gives
    the largest magnitude the type has (or overflows to the infinity itself)."""
    if c.size and (c == c.flat[0]).all():
        c = np.asarray(c.flat[0])  # a splat: one scalar, not a dense constant
    big = np.where(np.isinf(c), np.sign(c) * ml_dtypes.finfo(c.dtype).max, c).astype(c.dtype)

    @jax.custom_jvp
    def times(x: Any) -> Any:
        return lax.mul(x, lax.convert_element_type(c, x.dtype))

    @times.defjvp
    def times_jvp(primals: Any, tangents: Any) -> Any:
        return times(primals[0]), lax.mul(tangents[0], lax.convert_element_type(big, x.dtype))

    return times(x)


@rule("stablehlo.divide")
@sub_byte
def divide(ctx: RuleContext, x: Any, y: Any) -> Any:
    if np.dtype(x.dtype).kind not in "iu":
        return lax.div(x, y)
    zero, overflow, safe = _int_divisor(x, y)
    q = lax.div(x, safe)
    if overflow is not None:
        q = lax.select(overflow, x, q)  # MIN / -1 wraps to MIN
    return lax.select(
        zero, lax.full_like(x, -1 if np.dtype(x.dtype).kind == "i" else np.iinfo(x.dtype).max), q
    )


@rule("stablehlo.remainder")
@sub_byte
def remainder(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_complex(x):
        raise UnsupportedOpError(
            f"stablehlo.remainder of {np.dtype(x.dtype)} at {ctx.loc} is not supported: the "
            "specification lists complex operands but leaves the quotient's rounding "
            "undefined, and neither XLA nor StableHLO's reference interpreter computes it"
        )
    if np.dtype(x.dtype).kind not in "iu":
        return lax.rem(x, y)
    zero, _, safe = _int_divisor(x, y)  # MIN % -1 = MIN % 1 = 0
    return lax.select(zero, x, lax.rem(x, safe))


def _int_divisor(x: Any, y: Any) -> tuple[Any, Any, Any]:
    """Integer x / y as XLA computes it at run time (x / 0 = -1, x % 0 = x, MIN / -1 = MIN)
    without ever dividing by 0 or MIN by -1: XLA's constant folder dies of SIGFPE on those
    when the operands are constants. Returns (y == 0, MIN / -1 mask or None, a safe y)."""
    zero = lax.eq(y, lax.full_like(y, 0))
    bad, overflow = zero, None
    if np.dtype(x.dtype).kind == "i":
        overflow = lax.bitwise_and(
            lax.eq(x, lax.full_like(x, np.iinfo(x.dtype).min)), lax.eq(y, lax.full_like(y, -1))
        )
        bad = lax.bitwise_or(zero, overflow)
    return zero, overflow, lax.select(bad, lax.full_like(y, 1), y)


@rule("stablehlo.power")
@sub_byte
def power(ctx: RuleContext, x: Any, y: Any) -> Any:
    if np.dtype(x.dtype).kind in "iu":
        return _integer_power(x, y)
    return lax.pow(x, y)


def _integer_power(x: Any, y: Any) -> Any:
    """x**y by squaring, wrapping on overflow; a negative exponent gives 0 unless |x| == 1
    (1 -> 1, -1 -> +-1 by the parity of y), as XLA computes it."""
    dtype = np.dtype(x.dtype)
    one = lax.full_like(x, 1)
    zero = lax.full_like(x, 0)
    result, base, e = one, x, y
    for _ in range(dtype.itemsize * 8):
        odd = lax.ne(lax.bitwise_and(e, one), zero)
        result = lax.select(odd, lax.mul(result, base), result)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, one)
    if dtype.kind == "u":
        return result
    neg = lax.lt(y, zero)
    odd_y = lax.ne(lax.bitwise_and(y, one), zero)
    minus_one = lax.neg(one)
    neg_result = lax.select(
        lax.eq(x, one),
        one,
        lax.select(lax.eq(x, minus_one), lax.select(odd_y, minus_one, one), zero),
    )
    return lax.select(neg, neg_result, result)


@rule("stablehlo.atan2")
def atan2(ctx: RuleContext, x: Any, y: Any) -> Any:
    return lax.atan2(x, y)


def _is_complex(x: Any) -> bool:
    return np.dtype(x.dtype).kind == "c"


def _complex_pick(x: Any, y: Any, first_wins: Any) -> Any:
    """XLA's complex maximum/minimum: the real parts alone decide (the imaginary parts are not
    looked at), the first operand on a tie, the second when a real part is NaN. The compare is
    XLA's own float compare, so it reads denormal real parts as XLA does (flushed to zero on
    CPU). ``lax.max``/``lax.min`` instead compare (real, imaginary) lexicographically, as the
    specification says, and differ from XLA wherever the real parts tie."""
    return lax.select(first_wins(lax.real(x), lax.real(y)), x, y)


@rule("stablehlo.maximum")
@sub_byte
def maximum(ctx: RuleContext, x: Any, y: Any) -> Any:
    return _extremum(ctx, x, y, _MAX)


@rule("stablehlo.minimum")
@sub_byte
def minimum(ctx: RuleContext, x: Any, y: Any) -> Any:
    return _extremum(ctx, x, y, _MIN)


class _Extremum(NamedTuple):
    """max or min: the ``lax`` op, its boolean form (or / and), the comparison by which the
    first of two complex numbers wins, and its form with a constant operand."""

    plain: Callable[[Any, Any], Any]
    of_bools: Callable[[Any, Any], Any]
    first_wins: Callable[[Any, Any], Any]
    of_constant: Callable[[Any, Any], Any]


def _extremum(ctx: RuleContext, x: Any, y: Any, kind: _Extremum) -> Any:
    if _is_bool(x):
        return kind.of_bools(x, y)
    if _is_complex(x):
        return _complex_pick(x, y, kind.first_wins)
    side = _constant_side(ctx)
    if side is not None:
        return kind.of_constant(y, x) if side == 0 else kind.of_constant(x, y)
    return kind.plain(x, y)


def _constant_side(ctx: RuleContext) -> int | None:
    """Which operand of a max/min is a constant (marked by rehydrate/_safe_grad.py), when the
    program is rehydrated with the frameworks' derivatives; None otherwise."""
    if getattr(ctx.interpreter, "options", {}).get("derivatives", "framework") != "framework":
        return None
    return ctx.op.cache.get("constant_operand")


def _of_constant(extremum: Any, beyond: Any) -> Any:
    """``extremum(x, c)`` (max or min) for a constant ``c``, differentiated as the frameworks
    differentiate ReLU, ReLU6, hard-tanh and clamps: x's derivative is 1 where x is strictly
    ``beyond`` c, else 0 (a tie goes to the constant; lax.max and lax.min split it 1/2 each)."""

    @jax.custom_jvp
    def of_constant(x: Any, c: Any) -> Any:
        return extremum(x, c)

    @of_constant.defjvp
    def of_constant_jvp(primals: Any, tangents: Any) -> Any:
        (x, c), (tx, tc) = primals, tangents
        return extremum(x, c), lax.select(beyond(x, c), tx, tc)

    return of_constant


_MAX = _Extremum(lax.max, lax.bitwise_or, lax.ge, _of_constant(lax.max, lax.gt))
_MIN = _Extremum(lax.min, lax.bitwise_and, lax.le, _of_constant(lax.min, lax.lt))


def _binary(name: str, fn: Any) -> Any:
    """The rule of op ``name``: ``fn`` of its two operands (sub-byte ones widened)."""

    def impl(ctx: RuleContext, x: Any, y: Any) -> Any:
        return fn(x, y)

    impl.__name__ = name.split(".")[-1]
    return rule(name)(sub_byte(impl))


and_ = _binary("stablehlo.and", lax.bitwise_and)
or_ = _binary("stablehlo.or", lax.bitwise_or)
xor = _binary("stablehlo.xor", lax.bitwise_xor)
shift_left = _binary("stablehlo.shift_left", lax.shift_left)


@rule("stablehlo.shift_right_logical")
def shift_right_logical(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_sub_byte(x):
        # shift the n-bit pattern as unsigned; amounts >= n (or "negative") give 0
        out = lax.shift_right_logical(_as_unsigned_wide(x), _as_unsigned_wide(y))
        return lax.convert_element_type(out, x.dtype)
    return lax.shift_right_logical(x, y)


@rule("stablehlo.popcnt")
def popcnt(ctx: RuleContext, x: Any) -> Any:
    if _is_sub_byte(x):
        return lax.convert_element_type(lax.population_count(_as_unsigned_wide(x)), x.dtype)
    if _is_bool(x):
        return x
    return lax.population_count(x)


@rule("stablehlo.count_leading_zeros")
def count_leading_zeros(ctx: RuleContext, x: Any) -> Any:
    if _is_sub_byte(x):
        n = lax.clz(_as_unsigned_wide(x))
        return lax.convert_element_type(lax.sub(n, lax.full_like(n, 8 - _bits(x))), x.dtype)
    if _is_bool(x):
        return lax.bitwise_not(x)
    return lax.clz(x)


@rule("stablehlo.shift_right_arithmetic")
def shift_right_arithmetic(ctx: RuleContext, x: Any, y: Any) -> Any:
    if _is_sub_byte(x):
        # sign-extend the n-bit pattern to 8 bits, shift by the amount read as unsigned
        n = _bits(x)
        wide = lax.convert_element_type(_as_unsigned_wide(x), np.int8)
        k = lax.full_like(wide, 8 - n)
        wide = lax.shift_right_arithmetic(lax.shift_left(wide, k), k)
        amount = lax.convert_element_type(_as_unsigned_wide(y), np.int8)
        out = lax.shift_right_arithmetic(wide, amount)
        return lax.convert_element_type(lax.convert_element_type(out, np.uint8), x.dtype)
    return lax.shift_right_arithmetic(x, y)


@rule("stablehlo.complex")
def complex_(ctx: RuleContext, re: Any, im: Any) -> Any:
    return lax.complex(re, im)


@rule("stablehlo.clamp")
@sub_byte
def clamp(ctx: RuleContext, lo: Any, x: Any, hi: Any) -> Any:
    return lax.clamp(lo, x, hi)


@rule("stablehlo.select")
@sub_byte
def select(ctx: RuleContext, pred: Any, on_true: Any, on_false: Any) -> Any:
    if np.ndim(pred) == 0 and np.ndim(on_true) != 0:
        pred = lax.broadcast(pred, np.shape(on_true))
    return lax.select(pred, on_true, on_false)


@rule("hlopipe.grad_guard")
def grad_guard(ctx: RuleContext, pred: Any, x: Any, *, keep: bool) -> Any:
    """``x`` (broadcast to the result's shape), whose tangent is zero in the lanes where
    ``pred != keep``: the inputs of a select's branch whose derivative may be infinite in the
    lanes the select does not take from it (rehydrate/_safe_grad.py). XLA folds it to ``x``."""
    shape = tuple(ctx.aval.shape)
    pred = lax.broadcast_in_dim(pred, shape, ()) if np.ndim(pred) != len(shape) else pred
    x = lax.broadcast_in_dim(x, shape, ()) if np.ndim(x) != len(shape) else x
    frozen = lax.stop_gradient(x)
    return lax.select(pred, x, frozen) if keep else lax.select(pred, frozen, x)


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
    if not {src.kind, dtype.kind} & {"b", "c"}:
        return lax.bitcast_convert_type(x, dtype)
    # JAX bitcasts neither i1 (one bit an element in the specification, one byte in JAX) nor
    # complex numbers: the operand's bits are laid out flat in memory order (each element's
    # low bit first, a complex number's real part before its imaginary part, as the
    # specification's examples read them) and read back as the result type
    flat = lax.reshape(_parts(x), (int(np.size(x)) * (2 if src.kind == "c" else 1),))
    word = _part_dtype(dtype)
    a, b = _bit_width(np.dtype(flat.dtype)), _bit_width(word)
    n = int(np.size(flat))
    if a == 1 or b == 1:
        flat = _from_bits(_to_bits(ctx, flat), word, ctx)
    elif a > b:
        flat = lax.reshape(lax.bitcast_convert_type(flat, word), (n * a // b,))
    elif a < b:
        flat = lax.bitcast_convert_type(lax.reshape(flat, (n * a // b, b // a)), word)
    else:
        flat = lax.bitcast_convert_type(flat, word)
    shape = tuple(ctx.aval.shape)
    if dtype.kind != "c":
        return lax.reshape(flat, shape)
    pairs = lax.reshape(flat, (*shape, 2))
    return lax.complex(pairs[..., 0], pairs[..., 1])


def _parts(x: Any) -> Any:
    """A complex ``x`` as its (real, imaginary) parts on a new last axis; others as they are."""
    if np.dtype(x.dtype).kind != "c":
        return x
    return lax.concatenate([lax.real(x)[..., None], lax.imag(x)[..., None]], np.ndim(x))


def _part_dtype(dtype: np.dtype) -> np.dtype:
    """The type of a complex type's parts; any other type itself."""
    return np.dtype({"c": f"f{dtype.itemsize // 2}"}.get(dtype.kind, dtype))


def _bit_width(dtype: np.dtype) -> int:
    if dtype == np.dtype(bool):
        return 1
    if jnp.issubdtype(dtype, jnp.integer):
        return int(ml_dtypes.iinfo(dtype).bits)
    return int(ml_dtypes.finfo(dtype).bits)


_UNSIGNED = {
    2: np.dtype(ml_dtypes.uint2),
    4: np.dtype(ml_dtypes.uint4),
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: np.dtype(np.uint32),
    64: np.dtype(np.uint64),
}


def _unsigned_twin(dtype: np.dtype, ctx: RuleContext) -> np.dtype:
    """The unsigned integer type as wide as ``dtype``, to read its bit pattern through."""
    twin = _UNSIGNED.get(_bit_width(dtype))
    if twin is None:
        raise UnsupportedOpError(
            f"stablehlo.bitcast_convert at {ctx.loc} between i1 and {dtype} is not supported: "
            f"JAX has no {_bit_width(dtype)}-bit integer type to read its bits through"
        )
    return twin


def _to_bits(ctx: RuleContext, flat: Any) -> Any:
    """The bits of a flat array, element by element, each element's low bit first."""
    dtype = np.dtype(flat.dtype)
    if dtype == np.dtype(bool):
        return flat
    width = _bit_width(dtype)
    u = lax.bitcast_convert_type(flat, _unsigned_twin(dtype, ctx))
    if width < 8:
        u = lax.convert_element_type(u, np.uint8)
    n = int(np.size(flat))
    shifts = lax.broadcasted_iota(u.dtype, (n, width), 1)
    bits = lax.shift_right_logical(lax.broadcast_in_dim(u, (n, width), (0,)), shifts)
    bits = lax.bitwise_and(bits, lax.full_like(bits, 1))
    return lax.reshape(lax.ne(bits, lax.full_like(bits, 0)), (n * width,))


def _from_bits(bits: Any, dtype: np.dtype, ctx: RuleContext) -> Any:
    """Flat bits (each element's low bit first) read as a flat array of ``dtype``."""
    if dtype == np.dtype(bool):
        return bits
    width = _bit_width(dtype)
    twin = _unsigned_twin(dtype, ctx)
    wide = np.dtype(np.uint8) if width < 8 else twin
    n = int(np.size(bits)) // width
    digits = lax.convert_element_type(lax.reshape(bits, (n, width)), wide)
    digits = lax.shift_left(digits, lax.broadcasted_iota(wide, (n, width), 1))
    # the bits are disjoint: their sum is their bitwise or
    u = lax.reduce(digits, np.zeros((), wide), lax.bitwise_or, (1,))
    if width < 8:
        u = lax.convert_element_type(u, twin)
    return lax.bitcast_convert_type(u, dtype)


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
    x, y = _signedness_as_declared(ctx, compare_type, x, y)
    if compare_type == "TOTALORDER" and jnp.issubdtype(x.dtype, jnp.floating):
        return fn(_total_order_key(x), _total_order_key(y))
    if _is_complex(x) and comparison_direction not in ("EQ", "NE"):
        return _complex_order(comparison_direction, x, y)
    if _is_bool(x) and comparison_direction not in ("EQ", "NE"):
        x, y = lax.convert_element_type(x, np.uint8), lax.convert_element_type(y, np.uint8)
    return fn(x, y)


def _complex_order(direction: str, x: Any, y: Any) -> Any:
    """An ordering compare of complex numbers as XLA computes it: ``op(re x, re y) or (re x
    == re y and op(im x, im y))``. For ``LT``/``GT`` that is the specification's
    lexicographic order; for ``LE``/``GE`` the first term already holds on equal real
    parts, so the real parts alone decide (``0+1j <= 0+0j`` holds, where the specification
    says it does not). JAX's own compares refuse complex operands."""
    order = _CMP[direction]
    (re_x, im_x), (re_y, im_y) = (lax.real(x), lax.imag(x)), (lax.real(y), lax.imag(y))
    return lax.bitwise_or(order(re_x, re_y), lax.bitwise_and(lax.eq(re_x, re_y), order(im_x, im_y)))


def _signedness_as_declared(
    ctx: RuleContext, compare_type: str | None, x: Any, y: Any
) -> tuple[Any, Any]:
    """Integers compared with the other signedness (UNSIGNED on a signed type, SIGNED on an
    unsigned one; the specification does not allow it and XLA's verifier refuses it) are
    compared as the type says: their bits read with that signedness."""
    dtype = np.dtype(x.dtype)
    if compare_type == "UNSIGNED" and jnp.issubdtype(dtype, jnp.signedinteger):
        other = np.dtype(f"u{dtype.itemsize}") if dtype.itemsize * 8 == _bits(x) else None
    elif compare_type == "SIGNED" and jnp.issubdtype(dtype, jnp.unsignedinteger):
        other = np.dtype(f"i{dtype.itemsize}") if dtype.itemsize * 8 == _bits(x) else None
    else:
        return x, y
    if other is None:  # sub-byte integers
        raise UnsupportedOpError(
            f"stablehlo.compare at {ctx.loc} compares {dtype} values as {compare_type}"
        )
    return lax.bitcast_convert_type(x, other), lax.bitcast_convert_type(y, other)


__all__ = ["compare", "jnp"]
