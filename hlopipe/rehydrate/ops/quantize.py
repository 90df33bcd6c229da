"""Quantization: ``stablehlo.uniform_quantize`` / ``uniform_dequantize``.

A quantized tensor (``!quant.uniform<i8:f32, 0.5:3>``, per tensor or per axis) is held as its
storage integers (:class:`hlopipe.io._types.QuantizedAval` carries the scales and zero points);
other ops on quantized tensors run as dequantize -> op -> quantize
(:mod:`hlopipe.rehydrate._quant`), as the specification defines them.
"""

from __future__ import annotations

from typing import Any

from hlopipe.errors import UnsupportedOpError
from hlopipe.io import QuantizedAval
from hlopipe.rehydrate._quant import dequantize, quantize
from hlopipe.rehydrate.registry import RuleContext, rule


@rule("stablehlo.uniform_quantize")
def uniform_quantize(ctx: RuleContext, x: Any) -> Any:
    """A float tensor quantized to the result type; a quantized one requantized (its values
    dequantized, then quantized to the result's scales and zero points)."""
    out = ctx.aval
    if not isinstance(out, QuantizedAval):
        raise UnsupportedOpError(f"{ctx.name} at {ctx.loc}: its result type is not quantized")
    src = ctx.operand_avals[0]
    if isinstance(src, QuantizedAval):
        x = dequantize(x, src.quant)
    return quantize(x, out.quant)


@rule("stablehlo.uniform_dequantize")
def uniform_dequantize(ctx: RuleContext, x: Any) -> Any:
    src = ctx.operand_avals[0]
    if not isinstance(src, QuantizedAval):
        raise UnsupportedOpError(f"{ctx.name} at {ctx.loc}: its operand type is not quantized")
    return dequantize(x, src.quant)
