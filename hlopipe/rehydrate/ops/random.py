"""Random numbers: ``stablehlo.rng_bit_generator`` and ``stablehlo.rng``.

``rng_bit_generator`` becomes ``jax.lax.rng_bit_generator``, which lowers to the very same
op, so its bits and its output state equal XLA's bit for bit (THREE_FRY, PHILOX and DEFAULT).
PHILOX with a 192-bit ``ui64[3]`` state (what TensorFlow's stateless random ops emit), which
``jax.lax`` does not take, goes through a primitive of ours that lowers to the same op.
Output element types JAX does not generate directly (signed integers, floats) are generated
as the unsigned integer of the same width and bit-cast, as XLA does.

``stablehlo.rng`` is stateful and its numbers are implementation-defined by the specification
(XLA draws them from a per-module seed). hlopipe makes them deterministic: each op draws from
``jax.random.key(crc32(its location))``. UNIFORM gives floats in ``[a, b)`` (integers in
``[a, b)`` too); NORMAL gives ``a + b * N(0, 1)``. The values differ from XLA's; the shapes,
dtypes and distributions are those of the specification.
"""

from __future__ import annotations

import zlib
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from jax.extend.mlir.dialects import stablehlo as hlo

from hlopipe._jax_compat import ShapedArray, mlir
from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import RuleContext, rule

_ALGORITHMS = {
    "DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT,
    "THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY,
    "PHILOX": lax.RandomAlgorithm.RNG_PHILOX,
}


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


# stablehlo.rng_bit_generator as it is, for states jax.lax.rng_bit_generator refuses (PHILOX's
# ui64[3]): XLA computes the bits, so they are XLA's. Integer results: no derivative needed.
_wide_rbg_p = Primitive("hlopipe_rng_bit_generator")
_wide_rbg_p.multiple_results = True
_wide_rbg_p.def_impl(lambda state, **kw: jax.jit(lambda s: _wide_rbg_p.bind(s, **kw))(state))
_wide_rbg_p.def_abstract_eval(
    lambda state, *, shape, dtype, algorithm: (
        ShapedArray(state.shape, state.dtype),
        ShapedArray(shape, dtype),
    )
)


def _wide_rbg_lowering(ctx: Any, state: Any, *, shape: Any, dtype: Any, algorithm: str) -> Any:
    out_state, out_bits = ctx.avals_out
    op = hlo.RngBitGeneratorOp(
        mlir.aval_to_ir_type(ctx.module_context, out_state),
        mlir.aval_to_ir_type(ctx.module_context, out_bits),
        hlo.RngAlgorithmAttr.get(algorithm),
        state,
    )
    return list(op.results)


mlir.register_lowering(_wide_rbg_p, _wide_rbg_lowering)


@rule("stablehlo.rng_bit_generator")
def rng_bit_generator(ctx: RuleContext, state: Any, *, rng_algorithm: str = "DEFAULT") -> Any:
    algorithm = _ALGORITHMS.get(str(rng_algorithm))
    if algorithm is None:
        raise UnsupportedOpError(
            f"stablehlo.rng_bit_generator with algorithm {rng_algorithm} at {ctx.loc} is not "
            f"supported (known: {', '.join(_ALGORITHMS)})"
        )
    state_dtype = np.dtype(state.dtype)
    words = state_dtype.itemsize * int(np.prod(np.shape(state), dtype=np.int64)) // 4
    if words == 6 and np.ndim(state) == 1 and str(rng_algorithm) == "PHILOX":
        out_aval = ctx.result_avals[1]
        if np.dtype(out_aval.dtype) == np.dtype(bool):
            raise UnsupportedOpError(
                f"stablehlo.rng_bit_generator with output type bool at {ctx.loc} is not "
                "supported (8, 16, 32 and 64-bit integers and floats are)"
            )
        new_state, bits = _wide_rbg_p.bind(
            state, shape=tuple(out_aval.shape), dtype=np.dtype(out_aval.dtype), algorithm="PHILOX"
        )
        return new_state, bits
    if words != 4 or np.ndim(state) != 1:
        raise UnsupportedOpError(
            f"stablehlo.rng_bit_generator with a {state_dtype}{list(np.shape(state))} state at "
            f"{ctx.loc} is not supported: jax.lax.rng_bit_generator takes 128-bit states "
            "(ui64[2] or ui32[4]); PHILOX's 192-bit ui64[3] form is not available in JAX"
        )
    if state_dtype.kind != "u":
        state = lax.bitcast_convert_type(state, _unsigned(state_dtype))
    if state.dtype not in (np.dtype(np.uint64), np.dtype(np.uint32)):
        state = lax.reshape(lax.bitcast_convert_type(state, np.uint32), (4,))
    out_aval = ctx.result_avals[1]
    out_dtype = np.dtype(out_aval.dtype)
    gen_dtype = out_dtype if out_dtype.kind == "u" else _unsigned(out_dtype)
    if out_dtype == np.dtype(bool) or gen_dtype.itemsize not in (1, 2, 4, 8):
        raise UnsupportedOpError(
            f"stablehlo.rng_bit_generator with output type {out_dtype} at {ctx.loc} is not "
            "supported (8, 16, 32 and 64-bit integers and floats are)"
        )
    new_state, bits = lax.rng_bit_generator(
        state, tuple(out_aval.shape), gen_dtype, algorithm=algorithm
    )
    if gen_dtype != out_dtype:
        bits = lax.bitcast_convert_type(bits, out_dtype)
    if new_state.dtype != state_dtype:
        if np.dtype(new_state.dtype).itemsize < state_dtype.itemsize:  # u32[4] -> x64[2]
            new_state = lax.reshape(new_state, (2, 2))
        new_state = lax.bitcast_convert_type(new_state, state_dtype)
        new_state = lax.reshape(new_state, tuple(ctx.result_avals[0].shape))
    return new_state, bits


@rule("mhlo.xla.rng_get_and_update_state")
def rng_get_and_update_state(ctx: RuleContext, *, delta: int) -> Any:
    """XLA's global RNG state (``rng-get-and-update-state``, what XLA's RngExpander feeds
    into ``rng-bit-generator``): XLA reads and advances a process-wide counter, so its values
    depend on how many programs ran before. hlopipe makes it deterministic per op site, as
    ``stablehlo.rng``: ``[crc32(location), delta]``. Shapes and dtypes are XLA's."""
    aval = ctx.aval
    seed = zlib.crc32(f"{ctx.loc}:{ctx.op.results}".encode())
    if tuple(aval.shape) != (2,) or np.dtype(aval.dtype) != np.uint64:
        raise UnsupportedOpError(
            f"mhlo.xla.rng_get_and_update_state at {ctx.loc} with result {aval.dtype}"
            f"{list(aval.shape)} is not supported (XLA's is ui64[2])"
        )
    return np.array([seed, int(delta)], dtype=np.uint64)


@rule("mhlo.stochastic_convert")
def stochastic_convert(ctx: RuleContext, x: Any, random: Any, **attrs: Any) -> Any:
    """HLO ``stochastic-convert``: a float to a signed integer, rounding the magnitude up with
    probability equal to its fractional part, decided by ``random`` (unsigned bits as wide as
    the float): up when ``random < fraction * 2^bits``. As XLA's CPU backend: the sign is
    applied after rounding, NaN gives 0, values at or beyond the integer range saturate."""
    out = np.dtype(ctx.aval.dtype)
    src = np.dtype(x.dtype)
    if out.kind != "i" or src.kind != "f" or np.dtype(random.dtype).itemsize != src.itemsize:
        raise UnsupportedOpError(
            f"mhlo.stochastic_convert at {ctx.loc} from {src} to {out} is not supported "
            "(floats to signed integers with random bits as wide as the float are, as on "
            "XLA's CPU backend)"
        )
    bits = src.itemsize * 8
    mag = lax.abs(x)
    whole = lax.floor(mag)
    frac = lax.sub(mag, whole)
    # fraction * 2^bits, exact in a type that holds 2^bits (XLA computes halves in f32)
    wide = frac if src.itemsize >= 4 else lax.convert_element_type(frac, np.float32)
    fixed = lax.convert_element_type(
        lax.mul(wide, lax.full_like(wide, float(2**bits))), random.dtype
    )
    up = lax.lt(random, fixed)
    info = np.iinfo(out)
    top = float(np.finfo(src).max)  # an integer end beyond the float's range is infinite
    hi = lax.full_like(x, float(info.max) if info.max <= top else np.inf)
    lo = lax.full_like(x, float(info.min) if -info.min <= top else -np.inf)
    # in range before the integer conversion (the saturated cases are selected below)
    whole_i = lax.convert_element_type(lax.clamp(lax.full_like(x, 0.0), whole, hi), out)
    rounded = lax.add(whole_i, lax.convert_element_type(up, out))
    signed = lax.select(lax.lt(x, lax.full_like(x, 0.0)), lax.neg(rounded), rounded)
    full = lax.full_like(signed, 0)
    result = lax.select(lax.ge(x, hi), lax.full_like(signed, info.max), signed)
    result = lax.select(lax.le(x, lo), lax.full_like(signed, info.min), result)
    return lax.select(lax.ne(x, x), full, result)


@rule("stablehlo.rng")
def rng(ctx: RuleContext, a: Any, b: Any, shape: Any, *, rng_distribution: str) -> Any:
    aval = ctx.aval
    dtype = np.dtype(aval.dtype)
    out_shape = tuple(aval.shape)
    key = jax.random.key(zlib.crc32(f"{ctx.loc}:{ctx.op.results}".encode()) & 0x7FFFFFFF)
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    dist = str(rng_distribution)
    if dist == "UNIFORM":
        if dtype == np.dtype(bool):
            bits = jax.random.bernoulli(key, 0.5, out_shape)
            # [a, b) over {false, true}: only a == false, b == true leaves a choice
            return lax.select(
                lax.broadcast(lax.bitwise_and(lax.bitwise_not(a), b), out_shape),
                bits,
                lax.broadcast(a, out_shape),
            )
        if dtype.kind in "iu":
            return jax.random.randint(key, out_shape, a, b, dtype)
        if dtype.kind == "f":
            return jax.random.uniform(key, out_shape, dtype, a, b)
    elif dist == "NORMAL" and dtype.kind == "f":
        z = jax.random.normal(key, out_shape, dtype)
        return lax.add(lax.mul(z, b), a)
    raise UnsupportedOpError(
        f"stablehlo.rng with distribution {dist} and element type {dtype} at {ctx.loc} is "
        "not supported (UNIFORM of integers or floats, NORMAL of floats are)"
    )
