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
from jax.interpreters import mlir

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
        jax.core.ShapedArray(state.shape, state.dtype),
        jax.core.ShapedArray(shape, dtype),
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
