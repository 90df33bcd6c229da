"""Quantized tensors: values of ``!quant.uniform`` types are held as their storage integers
(:class:`hlopipe.io._types.QuantizedAval` says how to read them).

The specification defines most ops on quantized tensors as ``dequantize_op_quantize``: the
operands dequantized to their expressed type, the op computed there, the results quantized to
their own types. :func:`wrapped` says which ops run so (the interpreter then wraps the op's
rule); ops with regions (control flow, reductions), calls, tuples and the quantize ops
themselves pass the storage values on, and the ops inside them see the types.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import lax

from hlopipe.io import Quantized, QuantizedAval

# ops that take and give quantized values as they are (their storage)
NATIVE = {
    "stablehlo.uniform_quantize",
    "stablehlo.uniform_dequantize",
    "stablehlo.constant",
    "stablehlo.tuple",
    "stablehlo.get_tuple_element",
    "stablehlo.optimization_barrier",
    "stablehlo.composite",
    "stablehlo.custom_call",
    "stablehlo.bitcast_convert",
    "func.call",
    "func.return",
    "stablehlo.return",
}


def wrapped(op: Any) -> bool:
    """Whether ``op`` runs as dequantize -> op -> quantize (it has a quantized operand or
    result, no region, and is not one of :data:`NATIVE`)."""
    if op.name in NATIVE or op.regions or op.name.startswith(("check.", "interpreter.")):
        return False
    return any(isinstance(a, QuantizedAval) for a in (*op.operand_avals, *op.result_avals))


def expressed_aval(aval: Any) -> Any:
    """The aval a quantized value has once dequantized (others as they are)."""
    if isinstance(aval, QuantizedAval):
        return jax.ShapeDtypeStruct(aval.shape, aval.quant.expressed)
    return aval


def _params(q: Quantized, shape: tuple[int, ...], dtype: Any) -> tuple[Any, Any]:
    """The scales and zero points, shaped to broadcast against a tensor of ``shape``."""
    scales = np.asarray(q.scales, dtype=dtype)
    zps = np.asarray(q.zero_points, dtype=dtype)
    if q.axis is None:
        return scales.reshape(()), zps.reshape(())
    if len(q.scales) != shape[q.axis]:
        raise ValueError(
            f"per-axis quantization along axis {q.axis} has {len(q.scales)} scales for "
            f"size {shape[q.axis]}"
        )
    bshape = [1] * len(shape)
    bshape[q.axis] = len(q.scales)
    return scales.reshape(bshape), zps.reshape(bshape)


def dequantize(x: Any, q: Quantized) -> Any:
    """Storage values -> the expressed type: ``(x - zero_point) * scale``."""
    scales, zps = _params(q, tuple(np.shape(x)), q.expressed)
    return (lax.convert_element_type(x, q.expressed) - zps) * scales


def quantize(x: Any, q: Quantized) -> Any:
    """Expressed values -> storage: ``clamp(round_nearest_even(x / scale) + zero_point)``."""
    x = lax.convert_element_type(x, q.expressed)
    scales, zps = _params(q, tuple(np.shape(x)), q.expressed)
    rounded = lax.round(x / scales, lax.RoundingMethod.TO_NEAREST_EVEN) + zps
    lo = np.asarray(q.storage_min, q.expressed)
    hi = np.asarray(q.storage_max, q.expressed)
    return lax.convert_element_type(lax.clamp(lo, rounded, hi), q.storage)
