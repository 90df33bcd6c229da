"""The interpreter: walks a module's entry function and runs one rule per op.

Shaped like ``torch.fx.Interpreter``: :meth:`Interpreter.run` runs a function,
:meth:`Interpreter.run_block` a block, :meth:`Interpreter.run_op` one op through its rule.
Values live in an environment keyed by SSA value id and are dropped after their last use.
Subclasses override the hooks (``run_op``, ``call_rule``) to estimate costs, trace or debug.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import gc
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from hlopipe.errors import HlopipeError, RehydrateError, UnsupportedOpError
from hlopipe.io import DynamicAval, QuantizedAval, TokenType
from hlopipe.rehydrate import _quant
from hlopipe.rehydrate._ir import Block, Func, ModuleIR, Op
from hlopipe.rehydrate._safe_grad import prepared
from hlopipe.rehydrate.registry import (
    REFUSED,
    Region,
    RuleContext,
    family_of,
    find_rule,
    rule_attrs,
    unknown_attrs,
)


class _Env(dict):
    """A block's values; a region's block sees its enclosing blocks' values through parent."""

    __slots__ = ("parent",)

    def __init__(self, parent: _Env | None = None):
        super().__init__()
        self.parent = parent

    def __missing__(self, key: int) -> Any:
        if self.parent is None:
            raise KeyError(key)
        return self.parent[key]


def _captured(env: _Env, vids: tuple[int, ...]) -> _Env:
    """The values ``vids`` of ``env`` (or its enclosing environments), alone."""
    out = _Env()
    for v in vids:
        out[v] = env[v]
    return out


class Interpreter:
    """Runs the functions of a :class:`ModuleIR` with one ``jax.lax`` rule per op.

    Args:
      module: the module, read into Python records.
      spmd: the SPMD context of the per-device code it runs (``rehydrate._spmd.Spmd``), which
        its rule contexts carry as ``ctx.spmd``; None outside per-device code.
      options: free-form settings rules may read (``mesh``, ``axis``, ``loops``...), fixed
        for the interpreter's life: what changes while tracing travels in the rule context.
    """

    def __init__(self, module: ModuleIR, *, spmd: Any = None, **options: Any):
        self.module = module
        self.spmd = spmd
        self.options = options

    def under(self, spmd: Any) -> Interpreter:
        """This interpreter running per-device code in the SPMD context ``spmd``: a shallow
        copy (module, options, subclass state shared); this one is left as it is, so traces
        running at the same time each keep their own context."""
        view = copy.copy(self)
        view.spmd = spmd
        return view

    # ---- entry points ---------------------------------------------------------------------
    def run(self, func: str | Func, *args: Any) -> tuple[Any, ...]:
        """Run a function on its arguments; returns its results as a tuple."""
        if isinstance(func, str):
            func = self.module.funcs[func]
        with gc_paused():
            return self.run_block(func.block, args, None)

    def run_block(self, block: Block, args: Sequence[Any], parent: _Env | None) -> tuple:
        if self.options.get("derivatives", "framework") == "framework":
            block = prepared(block, self.module.funcs)  # the derivative decisions (_safe_grad)
        env = _Env(parent)
        if len(args) != len(block.args):
            raise RehydrateError(
                f"a block takes {len(block.args)} arguments, {len(args)} were given"
            )
        for vid, value in zip(block.args, args, strict=True):
            env[vid] = value
        for op, drops in zip(block.ops, block.drop_after, strict=True):
            operands = [env[v] for v in op.operands]
            results = self.run_op(op, operands, env)
            for vid, value in zip(op.results, results, strict=True):
                env[vid] = value
            for vid in drops:
                env.pop(vid, None)
        return tuple(env[v] for v in block.returns)

    # ---- hooks ----------------------------------------------------------------------------
    def run_op(self, op: Op, operands: list[Any], env: _Env) -> Sequence[Any]:
        """Run one op: find its rule, call it, check its results against the op's types."""
        rule = find_rule(op.name)
        if rule is None:
            raise UnsupportedOpError(missing_rule_message(op.name, 1, op.loc))
        # a region sees only the values it reads from outside (``op.captures``), not the
        # whole enclosing environment: a rule may keep its region callable past the trace
        # (``lax.reduce`` keeps ``computation`` in its equation), and the environment's
        # tracers, the whole trace before the op, would live as long as that equation
        regions = tuple(Region(self, b, _captured(env, op.captures)) for b in op.regions)
        quantized = op.cache.get("quantized")
        if quantized is None:
            quantized = op.cache["quantized"] = _quant.wrapped(op)
        if quantized:  # dequantize -> op -> quantize (see _quant)
            return self._run_quantized(op, rule, operands, regions)
        ctx = RuleContext(op.name, op.loc, op.result_avals, op.operand_avals, regions, op, self)
        attrs = op.cache.get("attrs")
        if attrs is None or op.cache.get("attrs_of") is not rule:
            bad = unknown_attrs(rule, op.attrs)
            if bad:
                raise UnsupportedOpError(unknown_attr_message(op, bad))
            attrs = op.cache["attrs"] = rule_attrs(rule, op.attrs)
            op.cache["attrs_of"] = rule
        try:
            out = self.call_rule(rule, ctx, operands, attrs)
        except HlopipeError:
            raise
        except Exception as e:  # not swallowed: the op and its location added, the cause chained
            raise _rule_failed(op, e) from e
        results = _as_results(out, len(op.results), op)
        _check_results(results, op)
        return results

    def _run_quantized(
        self, op: Op, rule: Any, operands: list[Any], regions: tuple[Region, ...]
    ) -> Sequence[Any]:
        """An op with quantized operands or results, computed in their expressed types."""
        results_avals = tuple(_quant.expressed_aval(a) for a in op.result_avals)
        operand_avals = tuple(_quant.expressed_aval(a) for a in op.operand_avals)
        ctx = RuleContext(op.name, op.loc, results_avals, operand_avals, regions, op, self)
        attrs = rule_attrs(rule, op.attrs)
        bad = unknown_attrs(rule, op.attrs)
        if bad:
            raise UnsupportedOpError(unknown_attr_message(op, bad))
        try:
            xs = [
                _quant.dequantize(x, a.quant) if isinstance(a, QuantizedAval) else x
                for x, a in zip(operands, op.operand_avals, strict=True)
            ]
            out = _as_results(self.call_rule(rule, ctx, xs, attrs), len(op.results), op)
            results = [
                _quant.quantize(y, a.quant) if isinstance(a, QuantizedAval) else y
                for y, a in zip(out, op.result_avals, strict=True)
            ]
        except HlopipeError:
            raise
        except Exception as e:  # not swallowed: the op and its location added, the cause chained
            raise _rule_failed(op, e, "quantized ") from e
        _check_results(results, op)
        return results

    def call_rule(self, rule: Any, ctx: RuleContext, operands: list[Any], attrs: dict) -> Any:
        return rule(ctx, *operands, **attrs)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (if on) for the duration.

    Tracing a large module creates millions of objects that stay alive until the trace ends;
    CPython's collector keeps rescanning them, which made trace time per op grow with the
    module (1.5x per op from 1k to 100k ops, benchmarks/rehydrate.py). Nothing the trace makes
    is garbage before it ends, so pausing costs no memory; nested calls leave it paused.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _as_results(out: Any, n: int, op: Op) -> Sequence[Any]:
    if n == 1 and not isinstance(out, tuple | list):
        return (out,)
    if not isinstance(out, tuple | list):
        if n == 0 and out is None:
            return ()
        raise RehydrateError(f"rule for {op.name} at {op.loc} returned one value for {n} results")
    if len(out) != n:
        raise RehydrateError(
            f"rule for {op.name} at {op.loc} returned {len(out)} values for {n} results"
        )
    return out


def _rule_failed(op: Op, e: Exception, what: str = "") -> RehydrateError:
    """The error of ``op``'s rule failing with ``e`` (not a ``HlopipeError``): the op, its
    location and the cause, as fx's "While executing" does (the caller chains ``e``)."""
    return RehydrateError(f"while rehydrating {what}{op.name} at {op.loc}: {type(e).__name__}: {e}")


def _check_results(results: Sequence[Any], op: Op) -> None:
    for i, (value, aval) in enumerate(zip(results, op.result_avals, strict=True)):
        if isinstance(aval, TokenType) or not hasattr(aval, "shape"):
            continue
        shape = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        if (  # a dynamic dimension takes the size the value has
            isinstance(aval, DynamicAval)
            and shape is not None
            and len(shape) == len(aval.shape)
            and all(a is None or a == n for n, a in zip(shape, aval.shape, strict=True))
        ):
            shape = aval.shape
        if shape is None or tuple(shape) != tuple(aval.shape) or np.dtype(dtype) != aval.dtype:
            if dtype is not None and _x64_narrowed(np.dtype(dtype), aval.dtype):
                raise RehydrateError(
                    f"{op.name} at {op.loc} needs {aval.dtype} but 64-bit types are disabled here: "
                    "run it through hlopipe.rehydrate (which runs 64-bit programs in a 64-bit "
                    "scope) or turn jax_enable_x64 on"
                )
            raise RehydrateError(
                f"rule for {op.name} at {op.loc} produced result {i} as "
                f"{dtype}{list(shape) if shape is not None else '?'}, the program says "
                f"{aval.dtype}{list(aval.shape)}"
            )


def _x64_narrowed(got: np.dtype, want: np.dtype) -> bool:
    return (want.itemsize == 8 and got.itemsize == 4 and got.kind == want.kind) or (
        want == np.complex128 and got == np.complex64
    )


# ---- the scan for missing ops ---------------------------------------------------------------


def missing_rule_message(name: str, count: int, loc: str) -> str:
    family = family_of(name)
    uses = "1 use" if count == 1 else f"{count} uses"
    if name in REFUSED:
        return f"{name} is not supported ({uses}, first at {loc}): {REFUSED[name]}"
    return (
        f"no rehydration rule for {name!r} ({uses}, first at {loc}). "
        f'Add @rule("{name}") in hlopipe/rehydrate/ops/{family}.py'
    )


def unknown_attr_message(op: Op, names: Sequence[str]) -> str:
    listed = ", ".join(repr(n) for n in names)
    plural = "s" if len(names) > 1 else ""
    return (
        f"{op.name} at {op.loc} has the attribute{plural} {listed}, which hlopipe's rule for it "
        f"does not know: {op.name} with {listed} is not supported (it may change what the op "
        "computes, so it is not dropped)"
    )


def _reachable_ops(module: ModuleIR, entry: str) -> Iterator[Op]:
    """Every op reachable from ``entry``: its blocks, their regions, the functions it calls."""
    seen_funcs: set[str] = {entry}

    def visit_block(block: Block) -> Iterator[Op]:
        for op in block.ops:
            if op.name == "hlopipe.unreadable":  # a function hlopipe could not read (_ir.py)
                raise UnsupportedOpError(op.attrs["message"])
            yield op
            callee = op.attrs.get("callee") or op.attrs.get("called_computation")
            if isinstance(callee, str) and callee in module.funcs and callee not in seen_funcs:
                seen_funcs.add(callee)
                yield from visit_block(module.funcs[callee].block)
            for region in op.regions:
                yield from visit_block(region)

    yield from visit_block(module.funcs[entry].block)


def scan_unsupported(module: ModuleIR, entry: str) -> list[tuple[str, int, str]]:
    """Every op reachable from ``entry`` without a rule: (name, count, first location).

    Custom calls whose target has no implementation are reported as
    ``stablehlo.custom_call @target``.
    """
    from hlopipe.rehydrate.custom_calls import find_custom_call

    counts: collections.Counter[str] = collections.Counter()
    first: dict[str, str] = {}
    for op in _reachable_ops(module, entry):
        key = None
        if find_rule(op.name) is None:
            key = op.name
        elif op.name in ("stablehlo.custom_call", "mhlo.custom_call"):
            target = op.attrs.get("call_target_name", "")
            if find_custom_call(target) is None:
                key = f"stablehlo.custom_call @{target}"
        if key is not None:
            counts[key] += 1
            first.setdefault(key, op.loc)
    return [(name, n, first[name]) for name, n in counts.most_common()]


def scan_unknown_attrs(module: ModuleIR, entry: str) -> list[str]:
    """One message per op name whose uses carry an attribute its rule does not know and
    that may change what it computes (discardable attributes are dropped, never refused)."""
    out: dict[str, str] = {}
    for op in _reachable_ops(module, entry):
        rule = find_rule(op.name)
        if rule is None or op.name in out:
            continue
        bad = unknown_attrs(rule, op.attrs)
        if bad:
            out[op.name] = unknown_attr_message(op, bad)
    return list(out.values())


def raise_if_unsupported(module: ModuleIR, entry: str) -> None:
    from hlopipe.rehydrate.custom_calls import unknown_target_advice

    missing = scan_unsupported(module, entry)
    lines = []
    for name, n, loc in missing:
        if name.startswith("stablehlo.custom_call @"):
            target = name.split("@", 1)[1]
            uses = "1 use" if n == 1 else f"{n} uses"
            lines.append(
                f"no implementation for custom call target {target!r} ({uses}, first at {loc}). "
                + unknown_target_advice(target)
            )
        else:
            lines.append(missing_rule_message(name, n, loc))
    lines.extend(scan_unknown_attrs(module, entry))
    if not lines:
        return
    total = len(lines)
    head = f"the program uses {total} unsupported operation{'s' if total > 1 else ''}:\n  "
    raise UnsupportedOpError(head + "\n  ".join(lines))
