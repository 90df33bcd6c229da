"""``stablehlo.custom_call``: dispatch to the custom-call registry, and the built-in targets
(sharding markers, host offloading annotations)."""

from __future__ import annotations

from typing import Any

from jax import lax

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate.custom_calls import CUSTOM_CALLS, builtin
from hlopipe.rehydrate.registry import RuleContext, rule


@rule("stablehlo.custom_call")
def custom_call(ctx: RuleContext, *operands: Any, call_target_name: str, **attrs: Any) -> Any:
    impl = CUSTOM_CALLS.get(call_target_name)
    if impl is None:
        raise UnsupportedOpError(
            f"no implementation for custom call target {call_target_name!r} at {ctx.loc}. "
            f"Register one with hlopipe.register_custom_call({call_target_name!r}, fn)"
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


@builtin("mhlo.erf")
def _erf(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    return lax.erf(x)
