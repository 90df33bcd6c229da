"""Quantization: ``stablehlo.uniform_quantize`` / ``uniform_dequantize``.

Quantized element types (``!quant.uniform<i8:f32, 0.5:3>``) have no JAX dtype, and the IR
reader refuses them when it reads the program's types, so a program with quantized tensors
stops there with an ``UnsupportedOpError`` naming the type. These rules are reached only when
neither the operand nor the result is of a quantized type, which the specification does not
allow; they say so precisely instead of producing a wrong answer.
"""

from __future__ import annotations

from typing import Any

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import RuleContext, rule


@rule("stablehlo.uniform_quantize", "stablehlo.uniform_dequantize")
def uniform_quantize(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    raise UnsupportedOpError(
        f"{ctx.name} at {ctx.loc} is not supported: quantized element types "
        "(!quant.uniform<...>) have no JAX dtype; dequantize in the producer "
        "(jax.export of the float program) instead"
    )
