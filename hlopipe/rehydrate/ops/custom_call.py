"""The op ``stablehlo.custom_call``: its rule dispatches to the custom-call registry
(``hlopipe/rehydrate/custom_calls.py``); here too the built-in targets (sharding markers, host
offloading annotations, ``mhlo.*`` ops XLA's converter writes as custom calls)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from jax import lax

from hlopipe import marker
from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate.custom_calls import builtin, find_custom_call, unknown_target_advice
from hlopipe.rehydrate.registry import RuleContext, rule


@rule("stablehlo.custom_call")
def custom_call(ctx: RuleContext, *operands: Any, call_target_name: str, **attrs: Any) -> Any:
    if marker.is_stage_boundary_attrs(attrs):
        return _marker(ctx, call_target_name, *operands)
    impl = find_custom_call(call_target_name)
    if impl is None:
        raise UnsupportedOpError(
            f"no implementation for custom call target {call_target_name!r} at {ctx.loc}. "
            + unknown_target_advice(call_target_name)
        )
    out = impl(ctx, *operands, **attrs)
    if isinstance(out, list):
        out = tuple(out)
    n = len(ctx.result_avals)
    if n != 1 and not isinstance(out, tuple):
        raise RehydrateError(
            f"custom call {call_target_name!r} at {ctx.loc} must return {n} values"
        )
    return out


def _marker(ctx: RuleContext, target: str, *operands: Any) -> Any:
    """A custom call carrying the ``hlopipe.stage_boundary`` attribute (a marker placed from
    PyTorch, ``hlopipe.torch``): the marker, the identity on its operands."""
    shapes = [(tuple(np.shape(x)), np.dtype(x.dtype)) for x in operands]
    results = [(tuple(a.shape), np.dtype(a.dtype)) for a in ctx.result_avals]
    if shapes != results:
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc} carries the {marker.ATTRIBUTE} attribute but "
            f"is not an identity (operands {shapes}, results {results}); a stage marker returns "
            "its operands unchanged: place it with hlopipe.torch.mark_stages"
        )
    out = marker.stage_boundary(*operands)
    return tuple(out) if len(operands) > 1 else out


@rule("mhlo.custom_call")
def mhlo_custom_call(
    ctx: RuleContext, *operands: Any, custom_call_schedule: Any = None, **attrs: Any
) -> Any:
    """What XLA's converter keeps as ``mhlo.custom_call`` (a scheduling hint, a tuple result):
    the same dispatch (the schedule only orders work); a tuple result is one value, taken
    apart by ``get_tuple_element``."""
    out = custom_call(ctx, *operands, **attrs)
    tuple_result = len(ctx.result_avals) == 1 and not hasattr(ctx.result_avals[0], "shape")
    if tuple_result and isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], tuple):
        return out  # already one tuple value (the GPU compiler's calls, TopK)
    return (tuple(out),) if tuple_result and isinstance(out, tuple | list) else out


@builtin("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")
def sharding(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """Sharding annotations. Without a mesh they are dropped; the collective rules (issue 4)
    turn them into with_sharding_constraint / shard_map boundaries under a mesh."""
    if ctx.name and ctx.interpreter.options.get("mesh") is not None:
        from hlopipe.rehydrate.ops import collectives

        return collectives.sharding_custom_call(ctx, x, **attrs)
    if tuple(x.shape) != tuple(ctx.aval.shape):
        raise UnsupportedOpError(
            f"{attrs.get('call_target_name', 'sharding')} at {ctx.loc} changes the shape "
            f"{list(x.shape)} -> {list(ctx.aval.shape)}: rehydrate with mesh=... and axis=..."
        )
    return x


@builtin("annotate_device_placement", "MoveToHost", "MoveToDevice", "LayoutConstraint")
def _identity(ctx: RuleContext, *xs: Any, **attrs: Any) -> Any:
    if len(xs) == 1:
        return xs[0]
    return tuple(xs)


@builtin("shape_assertion")
def _shape_assertion(ctx: RuleContext, pred: Any, *dims: Any, **attrs: Any) -> Any:
    """jax.export's check of a shape-polymorphic program's argument sizes: the sizes are known
    when the program is traced for its arguments, so a violated assertion is an error then
    (its message with the sizes filled in)."""
    from hlopipe.rehydrate._known import known_value

    ok = known_value(pred)
    if ok is None:
        raise UnsupportedOpError(
            f"shape_assertion at {ctx.loc} on a value computed at run time is not supported"
        )
    if not bool(np.all(ok)):
        values = [known_value(d) for d in dims]
        message = str(attrs.get("error_message", "shape assertion failed"))
        with contextlib.suppress(IndexError, ValueError, KeyError):
            message = message.format(*(int(np.asarray(v)) for v in values if v is not None))
        raise RehydrateError(f"shape_assertion at {ctx.loc}: {message}")
    return ()


@builtin("mhlo.erf")
def _erf(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    return lax.erf(x)


# MHLO ops without a StableHLO counterpart: XLA's converter writes them as custom calls to
# ``mhlo.<op>`` with their attributes under ``mhlo.attributes``; a module kept in MHLO has
# them as ops. Both forms share one implementation.
_MHLO_UNARY = {
    "acos": lax.acos,
    "acosh": lax.acosh,
    "asin": lax.asin,
    "asinh": lax.asinh,
    "atan": lax.atan,
    "atanh": lax.atanh,
    "cosh": lax.cosh,
    "sinh": lax.sinh,
    "tan": lax.tan,
}


def _mhlo_unary(fn: Any) -> Any:
    def impl(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
        return fn(x)

    return impl


for _short, _fn in _MHLO_UNARY.items():
    builtin(f"mhlo.{_short}")(_mhlo_unary(_fn))
    rule(f"mhlo.{_short}")(_mhlo_unary(_fn))
rule("mhlo.erf")(_mhlo_unary(lax.erf))


def _topk(x: Any, k: int, largest: bool, index_dtype: Any) -> tuple[Any, Any]:
    """The ``k`` largest (smallest) entries along the last axis, ties to the lower index
    (XLA's TopK; ``lax.top_k`` for largest, a stable ascending sort otherwise)."""
    if largest:
        values, idx = lax.top_k(x, k)
    else:
        axis = np.ndim(x) - 1
        iota = lax.broadcasted_iota(np.int32, np.shape(x), axis)
        values, idx = lax.sort((x, iota), dimension=axis, is_stable=True, num_keys=1)
        values = lax.slice_in_dim(values, 0, k, axis=axis)
        idx = lax.slice_in_dim(idx, 0, k, axis=axis)
    return values, lax.convert_element_type(idx, index_dtype)


@builtin("mhlo.topk")
def _topk_call(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    spec = attrs.get("mhlo.attributes") or {}
    if not isinstance(spec, dict) or "k" not in spec:
        raise UnsupportedOpError(f"custom call mhlo.topk at {ctx.loc} without mhlo.attributes.k")
    return _topk(x, int(spec["k"]), bool(spec.get("largest", True)), ctx.result_avals[1].dtype)


@rule("mhlo.topk")
def _topk_op(ctx: RuleContext, x: Any, *, k: int, largest: bool = True) -> Any:
    return _topk(x, int(k), bool(largest), ctx.result_avals[1].dtype)


@builtin("TopK")
def _xla_topk_call(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """XLA's own ``TopK`` custom call (TensorFlow's TopKV2, XLA's CPU passes): one tuple
    ``(values, indices)`` of the ``k`` largest elements along the last axis, ``k`` from the
    result type, ties to the lower index. XLA's CPU kernel takes the largest whatever the
    comparator it is given says, and so does this (tested against XLA)."""
    import jax

    from hlopipe.io import aval_of_type

    text = str(getattr(ctx.result_avals[0], "text", ""))
    parts = text[len("tuple<") : -1].split(", ") if text.startswith("tuple<") else []
    values_aval, index_aval = [aval_of_type(p) for p in parts] if len(parts) == 2 else [0, 0]
    if not (
        isinstance(values_aval, jax.ShapeDtypeStruct)
        and isinstance(index_aval, jax.ShapeDtypeStruct)
    ):
        raise UnsupportedOpError(f"custom call TopK at {ctx.loc} with result type {text or '?'}")
    k = int(values_aval.shape[-1])
    return ((*_topk(x, k, True, index_aval.dtype),),)
