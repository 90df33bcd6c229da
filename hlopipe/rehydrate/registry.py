"""The rule registry: a plain ``dict[str, Rule]`` from op name to rule.

A rule turns one op into ``jax.lax`` calls. Every rule has the signature
``rule(ctx, *operands, **attrs)`` and returns one value or a tuple (one per result).

Example:
    >>> @rule("stablehlo.maximum")
    ... def maximum(ctx: RuleContext, x, y):
    ...     return lax.max(x, y)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hlopipe.rehydrate._interpreter import Interpreter
    from hlopipe.rehydrate._ir import Op

Rule = Callable[..., Any]

RULES: dict[str, Rule] = {}

# op name -> the family module its rule lives in (for the "add a rule in ..." hint)
FAMILY_HINTS: dict[str, str] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register ``fn`` as the rule for each op name; registering a name twice is an error."""

    def deco(fn: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"a rule for {name!r} is already registered ({RULES[name]})")
            RULES[name] = fn
        return fn

    return deco


@dataclass(frozen=True, slots=True)
class Region:
    """A region of an op, callable with the block's arguments; returns the terminator's
    operands as a tuple. ``ops`` is the list of op names in the block (for recognising common
    reductions such as a region that only adds its two arguments)."""

    interpreter: Interpreter
    block: Any  # _ir.Block
    env: Any  # the enclosing environment (regions may use values defined outside them)

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        return self.interpreter.run_block(self.block, args, self.env)

    @property
    def ops(self) -> list[str]:
        return [op.name for op in self.block.ops]

    def binary_op(self) -> str | None:
        """The op name when the region is ``^(a, b): return op(a, b)`` (e.g. stablehlo.add)
        or ``op(b, a)`` for a commutative op; ``None`` otherwise."""
        return self.block.binary_op()


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule knows about the op it is rehydrating (like JAX's LoweringRuleContext).

    Attributes:
      name: the op name (``stablehlo.add``).
      loc: where the op is in the source (``model.hlo:41`` or the MLIR location).
      result_avals: the op's result types as ``jax.ShapeDtypeStruct`` (or TokenType).
      operand_avals: the op's operand types, likewise.
      regions: the op's regions, each callable.
      op: the op itself (for rules that analyse their regions, e.g. loops).
      interpreter: the running interpreter (for ``func.call`` and custom calls).
    """

    name: str
    loc: str
    result_avals: Sequence[Any]
    operand_avals: Sequence[Any]
    regions: Sequence[Region]
    op: Op
    interpreter: Interpreter

    @property
    def aval(self) -> Any:
        """The single result type (for ops with one result)."""
        return self.result_avals[0]
