"""The rule registry: a plain ``dict[str, Rule]`` from op name to rule.

A rule turns one op into ``jax.lax`` calls. Every rule has the signature
``rule(ctx, *operands, **attrs)`` and returns one value or a tuple (one per result).

Example:
    >>> @rule("stablehlo.maximum")
    ... def maximum(ctx: RuleContext, x, y):
    ...     return lax.max(x, y)
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from hlopipe.rehydrate._interpreter import Interpreter
    from hlopipe.rehydrate._ir import Op

Rule = Callable[..., Any]

RULES: dict[str, Rule] = {}

# ops XLA's HLO -> StableHLO converter can produce that rehydration refuses on purpose, with why
# (scripts/hlo_opcode_survey.py lists what the converter makes of every HLO opcode)
REFUSED: dict[str, str] = {
    "stablehlo.infeed": "host transfers (infeed) have no JAX equivalent inside a function; "
    "pass the data as an argument",
    "stablehlo.outfeed": "host transfers (outfeed) have no JAX equivalent inside a function; "
    "return the data as a result",
    "stablehlo.send": "host/device channels (send) have no JAX equivalent inside a function",
    "stablehlo.recv": "host/device channels (recv) have no JAX equivalent inside a function",
    "mhlo.send": "host/device channels (send) have no JAX equivalent inside a function",
    "mhlo.recv": "host/device channels (recv) have no JAX equivalent inside a function",
}


F = TypeVar("F", bound=Callable[..., Any])


def register_by_name(table: dict[str, F], names: Sequence[str], what: str) -> Callable[[F], F]:
    """The one registration idiom: a decorator that files its function in ``table`` under each
    of ``names``; registering a name twice is an error (``what`` names the kind of entry in it).
    :func:`rule`, the custom-call registry's ``builtin`` and decompile's ``emitter`` are this.
    """

    def deco(fn: F) -> F:
        for name in names:
            if name in table:
                raise ValueError(f"{what} for {name!r} is already registered ({table[name]})")
            table[name] = fn
        return fn

    return deco


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register ``fn`` as the rule for each op name; registering a name twice is an error."""
    return register_by_name(RULES, names, "a rule")


_FAMILIES = "hlopipe.rehydrate.ops."


def family_of(name: str) -> str:
    """The op family module (``hlopipe/rehydrate/ops/<family>.py``) a rule for the op ``name``
    belongs in, read from where the rules are registered: the module of ``name``'s own rule;
    else of the registered ops whose names share the longest prefix with it, at least three
    letters after the dialect (``stablehlo.reduce_foo`` beside ``stablehlo.reduce_window``);
    else the module holding most rules of ``name``'s dialect, or of all."""
    import hlopipe.rehydrate.ops  # noqa: F401  (registers every rule)

    families = {
        op: fn.__module__.removeprefix(_FAMILIES)
        for op, fn in RULES.items()
        if fn.__module__.startswith(_FAMILIES)
    }
    if name in families:
        return families[name]
    dialect = name.split(".", 1)[0] + "."
    best, near = len(dialect) + 3, collections.Counter[str]()
    for op, family in families.items():
        common = next(
            (i for i, (a, b) in enumerate(zip(name, op, strict=False)) if a != b),
            min(len(name), len(op)),
        )
        if common < best:
            continue
        if common > best:
            best, near = common, collections.Counter()
        near[family] += 1
    if not near:
        near = collections.Counter(f for op, f in families.items() if op.startswith(dialect))
    if not near:
        near = collections.Counter(families.values())
    return near.most_common(1)[0][0]


class ScopedTable(Generic[F]):
    """A global name -> function table with a second, scoped layer: a tool's own dialect
    (the conformance runner's ``check.*`` ops and targets) is visible beside ``table`` only
    inside :meth:`scope`, in the context (thread or task) that entered it; ``table`` itself
    never changes for it."""

    def __init__(self, table: dict[str, F], what: str):
        self.table = table
        self.what = what
        self._scoped: ContextVar[Mapping[str, F]] = ContextVar(
            f"hlopipe_scoped_{what}", default=MappingProxyType({})
        )

    @contextlib.contextmanager
    def scope(self, entries: Mapping[str, F]) -> Iterator[None]:
        """Make ``entries`` visible for the duration of the ``with``. A name the global table
        has is refused: a scoped entry adds a dialect, never replaces one."""
        clash = sorted(set(entries) & set(self.table))
        if clash:
            raise ValueError(f"scoped {self.what} {clash} would shadow the registered ones")
        token = self._scoped.set(MappingProxyType({**self._scoped.get(), **entries}))
        try:
            yield
        finally:
            self._scoped.reset(token)

    def find(self, name: str) -> F | None:
        """The function for ``name``: the global table's, else a scoped one."""
        fn = self.table.get(name)
        return fn if fn is not None else self._scoped.get().get(name)


_RULE_LAYERS: ScopedTable[Rule] = ScopedTable(RULES, "rules")


def scoped_rules(rules: Mapping[str, Rule]) -> contextlib.AbstractContextManager[None]:
    """Make ``rules`` (op name -> rule) visible to every interpreter that runs in this context,
    beside the global table, for the duration of the ``with`` (see :class:`ScopedTable`)."""
    return _RULE_LAYERS.scope(rules)


def find_rule(name: str) -> Rule | None:
    """The rule for op ``name``: the global table's, else one of :func:`scoped_rules`."""
    return _RULE_LAYERS.find(name)


# Attributes every rule may go without: they tune how XLA computes (precision of a dot's
# passes, the algorithm of its accumulation), never what. A dialect-prefixed (discardable)
# attribute -- ``mhlo.frontend_attributes``, ``mhlo.sharding``, ``mhlo.original_value``, any
# ``dialect.name`` -- is by MLIR's rules information about an op, not part of it.
IGNORED_ATTRS = frozenset({"precision_config", "algorithm"})


@functools.lru_cache(maxsize=4096)  # rules and custom-call implementations: bounded
def _keywords(fn: Rule) -> frozenset[str] | None:
    """The attribute names ``fn`` takes, or ``None`` when it takes any (``**attrs``)."""
    names: frozenset[str] | None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        names = None
    else:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            names = None
        else:
            names = frozenset(
                p.name
                for p in params
                if p.kind
                in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            )
    return names


def is_discardable(name: str) -> bool:
    """Whether an attribute is discardable: MLIR spells those ``dialect.name``."""
    return "." in name


def unknown_attrs(fn: Rule, attrs: Mapping[str, Any]) -> list[str]:
    """The attributes of an op that its rule ``fn`` does not take and that change what the op
    computes (neither discardable nor in :data:`IGNORED_ATTRS`)."""
    names = _keywords(fn)
    if names is None:
        return []
    return [k for k in attrs if k not in names and not is_discardable(k) and k not in IGNORED_ATTRS]


def rule_attrs(fn: Rule, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes to call ``fn`` with: all of them for a rule that takes ``**attrs`` (it
    reads what it needs, discardable ones included); otherwise the ones it names, the
    discardable and ignorable ones dropped. This is the one place where attributes a rule does
    not know are dropped, for every op; the ones that are not droppable are refused before
    running (:func:`unknown_attrs`, used by the interpreter's scan)."""
    names = _keywords(fn)
    if names is None:
        return dict(attrs)
    return {k: v for k, v in attrs.items() if k in names}


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
    def spmd(self) -> Any:
        """The SPMD context (``rehydrate._spmd.Spmd``) of the per-device code this op runs in,
        or None outside per-device code. It belongs to this trace (see
        :meth:`Interpreter.under`)."""
        return self.interpreter.spmd

    @property
    def aval(self) -> Any:
        """The single result type (for ops with one result)."""
        return self.result_avals[0]
