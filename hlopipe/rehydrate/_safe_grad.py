"""Derivative decisions made on a block before it runs: no NaN the program does not compute.

Differentiating the ops of a compiled program one by one is not always what the framework
that wrote it differentiates. Two places differ, and both are decided here, once per block
(:func:`prepared`, cached on the block), before the interpreter runs it:

1. **Guarded branches.** XLA's math library and TensorFlow write ``select(p, a, b)`` where
   ``b`` is computed, lane by lane, by ops whose value or derivative is not finite in the lanes
   where ``p`` picks ``a`` (erfc's ``exp(-z²)/|z|`` at ``z = 0``, ``divide_no_nan``'s ``x / y``
   at ``y = 0``, ``xlogy``'s ``log(y)``). The select's cotangent for ``b`` is zero there, and
   the derivative of ``b``'s ops turns that zero into ``0 * inf = NaN``, which then reaches the
   inputs: a NaN gradient the program never computed. The frameworks' own derivatives are
   finite there (TF registers one per op; JAX's ``erfc`` is one primitive). So each such branch
   gets a copy of its lane-wise ops from the ops that can make a non-finite value or derivative
   down to the select, whose inputs are ``hlopipe.grad_guard(p, x)``: ``x`` itself, with a
   tangent that is zero in the lanes the select does not take from this branch -- the
   "double where", written for every pattern at once. Values are unchanged (XLA folds the
   guard, ``select(p, x, x)``, and the copy into the original); the cotangent of the untaken
   lanes is exactly zero. Branches whose lane-wise ops all have finite derivatives (``relu``'s
   ``select(x > 0, x, 0)``) are left alone.
2. **Kinks against a constant.** ``maximum``/``minimum`` with a constant operand (ReLU,
   ReLU6, hard-tanh written as max/min) differentiate as the frameworks do: at a tie the
   derivative goes to the constant, so the variable's is 0 (``lax.max`` splits a tie ½/½). The
   op is marked here (``op.cache["constant_operand"]``); its rule reads the mark.

Both see through calls: JAX lowers ``jnp.where`` to ``call @_where`` (HLO ``call``,
StableHLO ``func.call``), so the select sits in a function of its own while the risky branch
is computed by its caller. A small call whose function holds a select or a risky op and no
regions is inlined into the block first (:func:`_inline_calls`), as XLA's optimiser inlines
it, so the unoptimised program differentiates as the optimised one does.

``docs/ops.md`` ("Derivatives") lists these decisions.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import jax
import numpy as np

from hlopipe.rehydrate._ir import Block, Func, Op, _liveness

# Lane-wise ops: result element i depends on operand element i alone (same shapes; clamp's and
# select's scalar operands are broadcast).
_SMOOTH = frozenset(
    {  # lane-wise ops whose derivative is finite wherever their operands are finite
        "stablehlo.add",
        "stablehlo.subtract",
        "stablehlo.multiply",
        "stablehlo.negate",
        "stablehlo.abs",
        "stablehlo.sign",
        "stablehlo.maximum",
        "stablehlo.minimum",
        "stablehlo.clamp",
        "stablehlo.select",
        "stablehlo.convert",
        "stablehlo.ceil",
        "stablehlo.floor",
        "stablehlo.round_nearest_even",
        "stablehlo.round_nearest_afz",
        "stablehlo.sine",
        "stablehlo.cosine",
        "stablehlo.tanh",
        "stablehlo.logistic",
        "stablehlo.real",
        "stablehlo.imag",
        "stablehlo.complex",
        "stablehlo.reduce_precision",
        "chlo.erf",
        "chlo.erfc",
        "chlo.atan",
        "chlo.conj",
        "hlopipe.grad_guard",
    }
)
_RISKY = frozenset(
    {  # lane-wise ops whose value or derivative can be infinite for finite operands
        "stablehlo.divide",
        "stablehlo.remainder",
        "stablehlo.power",
        "stablehlo.atan2",
        "stablehlo.exponential",
        "stablehlo.exponential_minus_one",
        "stablehlo.log",
        "stablehlo.log_plus_one",
        "stablehlo.sqrt",
        "stablehlo.rsqrt",
        "stablehlo.cbrt",
        "stablehlo.tan",
        "chlo.acos",
        "chlo.acosh",
        "chlo.asin",
        "chlo.asinh",
        "chlo.atanh",
        "chlo.cosh",
        "chlo.sinh",
        "chlo.tan",
        "chlo.digamma",
        "chlo.lgamma",
        "chlo.erf_inv",
        "chlo.polygamma",
        "chlo.zeta",
        "chlo.next_after",
    }
)
_LANEWISE = _SMOOTH | _RISKY
# ops that only move or broadcast values: looked through to find what a source is made of
_MOVES = frozenset(
    {
        "stablehlo.broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.convert",
        "stablehlo.slice",
        "stablehlo.copy",
    }
)
_MAX_MIN = frozenset({"stablehlo.maximum", "stablehlo.minimum"})
# a guarded copy larger than this is not made (the branch is differentiated literally): it
# bounds the trace time a long lane-wise chain of selects could take
MAX_COPY = 4096

# a called function with more ops than this is not inlined (it runs as a call, unguarded)
MAX_INLINE = 64
# ops that call another function of the module, and the attribute naming it
_CALLS = {"func.call": "callee", "stablehlo.composite": "decomposition"}

_fresh = itertools.count(-1, -1)  # value ids of copies: negative, never a module's own


def prepared(block: Block, funcs: dict[str, Func] | None = None) -> Block:
    """``block`` with the derivative decisions of this module made (cached on the block);
    ``funcs``: the module's functions, whose small guarded calls are inlined."""
    out = block.prepared
    if out is None:
        out = _prepare(block, funcs or {})
        out.prepared = out
        block.prepared = out
    return out


def _inexact(aval: Any) -> bool:
    dtype = getattr(aval, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "fc"


def _prepare(block: Block, funcs: dict[str, Func]) -> Block:
    producer: dict[int, Op] = {}
    ops: list[Op] = []
    body = _inline_calls(block.ops, funcs)
    # the inlined calls are kept only where a guard needed them; else the block runs as
    # written, its calls as calls (a called function's max/min marks are made in its own block)
    decided = 0
    for op in body:
        if op.name in _MAX_MIN and _inexact(op.result_avals[0]):
            _mark_constant_operand(op, producer)
        elif op.name == "stablehlo.select" and _inexact(op.result_avals[0]):
            op, made = _guard_select(op, producer)
            for new in made:
                ops.append(new)
                producer[new.results[0]] = new
            decided += len(made)
        ops.append(op)
        for r in op.results:
            producer[r] = op
    if not decided:
        return block
    kept = _drop_dead(ops, block)
    out = Block(block.args, block.arg_avals, kept, block.returns, block.terminator)
    _liveness(out)
    return out


# ---- calls ---------------------------------------------------------------------------------


def _inlinable(op: Op, funcs: dict[str, Func]) -> Func | None:
    """The function ``op`` calls when inlining it may let a guard see its select or risky op:
    a small function without regions (a nested call is inlined in its turn)."""
    attr = _CALLS.get(op.name)
    func = funcs.get(op.attrs.get(attr)) if attr else None  # type: ignore[arg-type]
    if func is None or len(func.block.ops) > MAX_INLINE:
        return None
    inner = func.block.ops
    if any(o.regions for o in inner) or len(func.block.args) != len(op.operands):
        return None
    if len(func.block.returns) != len(op.results):
        return None
    if not any(o.name in _RISKY or o.name == "stablehlo.select" or o.name in _CALLS for o in inner):
        return None
    return func


def _inline_calls(ops: list[Op], funcs: dict[str, Func], depth: int = 0) -> list[Op]:
    """``ops`` with the calls :func:`_inlinable` accepts replaced by the called function's ops
    (its values renamed; each result of the call bound to the value the function returns);
    ``ops`` itself when there are none."""
    if depth > 4 or not funcs or not any(op.name in _CALLS for op in ops):
        return ops
    out: list[Op] = []
    changed = False
    for op in ops:
        func = _inlinable(op, funcs)
        if func is None:
            out.append(op)
            continue
        changed = True
        names = dict(zip(func.block.args, op.operands, strict=True))
        bound: dict[int, int] = {}  # the function's returned value -> the call's result
        for ret, res in zip(func.block.returns, op.results, strict=True):
            if ret not in names and ret not in bound:
                bound[ret] = res
        inner: list[Op] = []
        for o in func.block.ops:
            for r in o.results:
                names[r] = bound.get(r) or next(_fresh)
            inner.append(
                replace(
                    o,
                    operands=tuple(names[u] for u in o.operands),
                    results=tuple(names[r] for r in o.results),
                    cache=dict(o.cache),
                )
            )
        for ret, res, aval in zip(func.block.returns, op.results, op.result_avals, strict=True):
            if bound.get(ret) != res:  # returned twice, or an argument passed through
                inner.append(_identity(names[ret], res, aval, op))
        out.extend(_inline_calls(inner, funcs, depth + 1))
    return out if changed else ops


def _identity(src: int, dst: int, aval: Any, at: Op) -> Op:
    """``dst = src``: a call's result that is not computed by an op of the called function."""
    return Op("stablehlo.convert", (src,), (dst,), {}, (), at.loc, (aval,), (aval,))


# ---- kinks ---------------------------------------------------------------------------------


def _constant(v: int, producer: dict[int, Op]) -> np.ndarray | None:
    """The value of ``v`` when it is a constant, possibly broadcast, reshaped or converted."""
    op = producer.get(v)
    for _ in range(8):
        if op is None:
            return None
        if op.name == "stablehlo.constant":
            value = op.attrs.get("value")
            return None if value is None else np.asarray(value)
        if op.name not in _MOVES:
            return None
        op = producer.get(op.operands[0])
    return None


def _mark_constant_operand(op: Op, producer: dict[int, Op]) -> None:
    known = [_constant(v, producer) is not None for v in op.operands]
    if known.count(True) == 1:
        op.cache["constant_operand"] = known.index(True)


# ---- guarded branches ----------------------------------------------------------------------


def _nonfinite_source(v: int, producer: dict[int, Op]) -> bool:
    """Whether a value from outside a branch's lane-wise ops may hold infinities: a constant
    with some, or a moved (broadcast, reshaped) result of an op that can make them."""
    value = _constant(v, producer)
    if value is not None:
        return value.dtype.kind in "fc" and not np.isfinite(value).all()
    op = producer.get(v)
    for _ in range(8):
        if op is None:
            return False
        if op.name in _RISKY:
            return True
        if op.name not in _MOVES:
            return False
        op = producer.get(op.operands[0])
    return False


def _lanewise_ops(v: int, producer: dict[int, Op], shape: tuple[int, ...]) -> list[Op]:
    """The lane-wise floating-point ops of ``shape`` that ``v`` is computed by, walking back
    from ``v`` until another kind of op, a parameter or a value from an enclosing block; in
    an order where each op comes after those it reads (depth-first post-order)."""

    def inside(u: int) -> Op | None:
        op = producer.get(u)
        if op is None or op.name not in _LANEWISE or len(op.results) != 1:
            return None
        aval = op.result_avals[0]
        return op if tuple(aval.shape) == shape and _inexact(aval) else None

    order: list[Op] = []
    seen: set[int] = set()
    stack: list[tuple[int, bool]] = [(v, False)]
    while stack:
        u, done = stack.pop()
        op = inside(u)
        if op is None:
            continue
        if done:
            order.append(op)
            continue
        if u in seen:
            continue
        seen.add(u)
        stack.append((u, True))
        stack.extend((w, False) for w in reversed(op.operands) if w not in seen)
    return order


def _guard_select(op: Op, producer: dict[int, Op]) -> tuple[Op, list[Op]]:
    """``op`` (a select) reading guarded copies of its risky branches, and those copies."""
    pred = op.operands[0]
    if _constant(pred, producer) is not None:
        return op, []
    shape = tuple(op.result_avals[0].shape)
    operands = list(op.operands)
    made: list[Op] = []
    for i, keep in ((1, True), (2, False)):
        copy = _guarded_copy(operands[i], producer, shape, pred, keep, op)
        if copy:
            operands[i] = copy[-1].results[0]
            made.extend(copy)
    if not made:
        return op, []
    return replace(op, operands=tuple(operands), cache=dict(op.cache)), made


def _guarded_copy(
    v: int, producer: dict[int, Op], shape: tuple[int, ...], pred: int, keep: bool, where: Op
) -> list[Op]:
    """A copy of the ops between ``v`` and the ops that can make a non-finite value or
    derivative in its computation, reading their other inputs through guards; ``[]`` when
    there are none (the last op of the copy computes ``v``)."""
    order = _lanewise_ops(v, producer, shape)
    if not order:
        return []
    inside = {op.results[0] for op in order}
    # the ops with a risky op (or an infinite input) at or before them: the copy
    tainted: set[int] = set()
    for op in order:
        if (
            op.name in _RISKY
            or any(u in tainted for u in op.operands)
            or any(u not in inside and _nonfinite_source(u, producer) for u in op.operands)
        ):
            tainted.add(op.results[0])
    if v not in tainted or len(tainted) > MAX_COPY:
        return []
    renamed: dict[int, int] = {}
    guards: dict[int, int] = {}
    out: list[Op] = []
    for op in order:
        if op.results[0] not in tainted:
            continue
        new_operands = []
        new_avals = []
        for u, aval in zip(op.operands, op.operand_avals, strict=True):
            if u in renamed:
                new_operands.append(renamed[u])
                new_avals.append(aval)
            elif _inexact(aval) and _constant(u, producer) is None:
                if u not in guards:
                    guard = _guard_op(pred, u, aval, shape, keep, where)
                    out.append(guard)
                    guards[u] = guard.results[0]
                new_operands.append(guards[u])
                new_avals.append(_shaped(aval, shape))
            else:
                new_operands.append(u)
                new_avals.append(aval)
        result = next(_fresh)
        renamed[op.results[0]] = result
        out.append(
            replace(
                op,
                operands=tuple(new_operands),
                operand_avals=tuple(new_avals),
                results=(result,),
                cache=dict(op.cache),
            )
        )
    return out


def _shaped(aval: Any, shape: tuple[int, ...]) -> Any:
    return aval if tuple(aval.shape) == shape else jax.ShapeDtypeStruct(shape, aval.dtype)


def _guard_op(pred: int, u: int, aval: Any, shape: tuple[int, ...], keep: bool, at: Op) -> Op:
    pred_aval = at.operand_avals[0]
    return Op(
        "hlopipe.grad_guard",
        (pred, u),
        (next(_fresh),),
        {"keep": keep},
        (),
        at.loc,
        (_shaped(aval, shape),),
        (pred_aval, aval),
    )


def _drop_dead(ops: list[Op], block: Block) -> list[Op]:
    """``ops`` without the lane-wise ops no one reads any more (the originals of copies)."""
    used = set(block.returns)
    keep: list[Op] = []
    for op in reversed(ops):
        if op.name in _LANEWISE and not used.intersection(op.results) and not op.regions:
            continue
        keep.append(op)
        used.update(op.operands)
        used.update(op.captures)
    keep.reverse()
    return keep
