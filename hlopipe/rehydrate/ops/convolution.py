"""Convolution: ``stablehlo.convolution`` as ``lax.conv_general_dilated``.

Every attribute of the op maps onto ``lax.conv_general_dilated``: dimension numbers, window
strides, padding, lhs/rhs dilation, feature and batch groups, precision config and the
preferred element type (the result type). ``window_reversal`` reverses the kernel's spatial
dimensions first. JAX differentiates and batches the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import ConvDims
from hlopipe.rehydrate._known import attributes_as_operands
from hlopipe.rehydrate.ops.linalg import precision
from hlopipe.rehydrate.registry import RuleContext, rule


def _pairs(padding: Any, n: int) -> list[tuple[int, int]]:
    if padding is None:
        return [(0, 0)] * n
    arr = np.asarray(padding, dtype=np.int64).reshape(n, 2)
    return [(int(lo), int(hi)) for lo, hi in arr]


@rule("stablehlo.convolution")
def convolution(
    ctx: RuleContext,
    lhs: Any,
    rhs: Any,
    *,
    dimension_numbers: ConvDims,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    window_strides: tuple[int, ...] | None = None,
    padding: Any = None,
    lhs_dilation: tuple[int, ...] | None = None,
    rhs_dilation: tuple[int, ...] | None = None,
    window_reversal: tuple[bool, ...] | None = None,
    precision_config: Any = None,
) -> Any:
    d = dimension_numbers
    n = len(d.input_spatial)
    if window_reversal and any(window_reversal):
        rev = tuple(d.kernel_spatial[i] for i, r in enumerate(window_reversal) if r)
        rhs = lax.rev(rhs, rev)
    out_dtype = np.dtype(ctx.aval.dtype)
    if np.dtype(lhs.dtype) != np.dtype(rhs.dtype):
        # lax wants one input type; the result type holds both exactly for the mixed cases
        # StableHLO allows (e.g. i8 x i16 -> i32, bf16 x f32 -> f32)
        lhs = lax.convert_element_type(lhs, out_dtype)
        rhs = lax.convert_element_type(rhs, out_dtype)
    if np.dtype(lhs.dtype) == np.dtype(bool):
        raise UnsupportedOpError(
            f"stablehlo.convolution with i1 operands is not supported (at {ctx.loc}): "
            "jax.lax.conv_general_dilated has no boolean convolution"
        )
    dnums = lax.ConvDimensionNumbers(
        lhs_spec=(d.input_batch, d.input_feature, *d.input_spatial),
        rhs_spec=(d.kernel_out, d.kernel_in, *d.kernel_spatial),
        out_spec=(d.output_batch, d.output_feature, *d.output_spatial),
    )
    return lax.conv_general_dilated(
        lhs,
        rhs,
        window_strides=tuple(window_strides) if window_strides else (1,) * n,
        padding=_pairs(padding, n),
        lhs_dilation=tuple(lhs_dilation) if lhs_dilation else None,
        rhs_dilation=tuple(rhs_dilation) if rhs_dilation else None,
        dimension_numbers=dnums,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=precision(precision_config),
        preferred_element_type=None if out_dtype == np.dtype(lhs.dtype) else out_dtype,
    )


# ``convolution`` with its padding an operand: run when the padding is known at trace time
# (a constant), as JAX needs static shapes
attributes_as_operands("stablehlo.dynamic_conv", convolution, "padding")
