"""Batch normalisation: ``stablehlo.batch_norm_inference``, ``_training`` and ``_grad``.

Written out from the StableHLO specification with ``jax.lax`` element-wise ops and
reductions over every dimension but ``feature_index``. Half-precision inputs are computed in
float32 and rounded once at the end, as XLA's batch-norm expander does in effect.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax import lax

from hlopipe.rehydrate.registry import RuleContext, rule


def _compute_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _up(x: Any, dtype: np.dtype) -> Any:
    return x if np.dtype(x.dtype) == dtype else lax.convert_element_type(x, dtype)


def _bcast(v: Any, x: Any, feature_index: int) -> Any:
    """The 1-D per-feature ``v`` broadcast along ``feature_index`` of ``x``'s shape."""
    return lax.broadcast_in_dim(v, x.shape, (feature_index,))


def _reduce_dims(x: Any, feature_index: int) -> tuple[int, ...]:
    return tuple(i for i in range(x.ndim) if i != feature_index)


def _mean(x: Any, feature_index: int) -> Any:
    dims = _reduce_dims(x, feature_index)
    n = int(np.prod([x.shape[i] for i in dims], dtype=np.int64))
    return lax.div(lax.reduce_sum(x, dims), lax.full((), n, x.dtype))


def _setup(operand: Any, feature_index: int) -> tuple[np.dtype, np.dtype, Any, int]:
    """The result type, the type computed in, the operand in it, and the feature dimension."""
    out_dtype = np.dtype(operand.dtype)
    ct = _compute_dtype(out_dtype)
    return out_dtype, ct, _up(operand, ct), int(feature_index)


def _normalised(centered: Any, variance: Any, epsilon: float, f: int, ct: np.dtype) -> Any:
    """``sqrt(variance + epsilon)`` and ``centered`` divided by it along feature ``f``."""
    stddev = lax.sqrt(lax.add(variance, lax.full((), epsilon, ct)))
    return stddev, lax.div(centered, _bcast(stddev, centered, f))


def _affine(norm: Any, scale: Any, offset: Any, f: int, ct: np.dtype) -> Any:
    """``scale * norm + offset`` along feature ``f``."""
    return lax.add(lax.mul(_bcast(_up(scale, ct), norm, f), norm), _bcast(_up(offset, ct), norm, f))


@rule("stablehlo.batch_norm_inference")
def batch_norm_inference(
    ctx: RuleContext,
    operand: Any,
    scale: Any,
    offset: Any,
    mean: Any,
    variance: Any,
    *,
    epsilon: float,
    feature_index: int,
) -> Any:
    out_dtype, ct, x, f = _setup(operand, feature_index)
    centered = lax.sub(x, _bcast(_up(mean, ct), x, f))
    _, norm = _normalised(centered, _up(variance, ct), epsilon, f, ct)
    return _up(_affine(norm, scale, offset, f, ct), out_dtype)


@rule("stablehlo.batch_norm_training")
def batch_norm_training(
    ctx: RuleContext,
    operand: Any,
    scale: Any,
    offset: Any,
    *,
    epsilon: float,
    feature_index: int,
) -> tuple[Any, Any, Any]:
    out_dtype, ct, x, f = _setup(operand, feature_index)
    mean = _mean(x, f)
    centered = lax.sub(x, _bcast(mean, x, f))
    var = _mean(lax.mul(centered, centered), f)
    _, norm = _normalised(centered, var, epsilon, f, ct)
    out = _affine(norm, scale, offset, f, ct)
    return _up(out, out_dtype), _up(mean, out_dtype), _up(var, out_dtype)


@rule("stablehlo.batch_norm_grad")
def batch_norm_grad(
    ctx: RuleContext,
    operand: Any,
    scale: Any,
    mean: Any,
    variance: Any,
    grad_output: Any,
    *,
    epsilon: float,
    feature_index: int,
) -> tuple[Any, Any, Any]:
    out_dtype, ct, x, f = _setup(operand, feature_index)
    dy = _up(grad_output, ct)
    dims = _reduce_dims(x, f)
    centered = lax.sub(x, _bcast(_up(mean, ct), x, f))
    stddev, norm = _normalised(centered, _up(variance, ct), epsilon, f, ct)
    grad_offset = lax.reduce_sum(dy, dims)
    grad_scale = lax.reduce_sum(lax.mul(dy, norm), dims)
    # (scale / stddev) * (dy - mean(dy) - norm * mean(dy * norm))
    inner = lax.sub(
        lax.sub(dy, _bcast(_mean(dy, f), x, f)),
        lax.mul(norm, _bcast(_mean(lax.mul(dy, norm), f), x, f)),
    )
    grad_operand = lax.mul(_bcast(lax.div(_up(scale, ct), stddev), x, f), inner)
    return _up(grad_operand, out_dtype), _up(grad_scale, out_dtype), _up(grad_offset, out_dtype)
