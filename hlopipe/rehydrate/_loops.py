"""Loop recovery: the static trip count of a ``stablehlo.while``.

JAX lowers ``fori_loop`` and ``scan`` to ``stablehlo.while``, and XLA's optimisation passes
reshape the loop further; ``lax.while_loop`` cannot be reverse-differentiated. Instead of
matching those shapes one by one, we find the loop's *control state*: the carried values the
condition depends on, closed under the body's data flow. When that state starts from values
known at trace time (constants, possibly through a few small constant-folded ops) and the
condition and the body's control part read nothing else that is traced, the trip count is a
fact of the program: we compute it by running only the control part (jitted, on the concrete
values) and rehydrate the loop as a ``lax.scan`` of that length. Nested loops, several
induction variables, counting down, ``<=``/``!=`` bounds, bounds carried in the state (as
post-optimisation HLO has them) and conditions that call functions all fall out of this.

A loop whose count is not static may still be *bounded*: a condition ``i < max and
cond(state)`` (TensorFlow's ``maximum_iterations``) runs at most as often as its first part
alone, whose count is static. :func:`static_trip_bound` finds such a bound.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from hlopipe.rehydrate._ir import Block, Op
from hlopipe.rehydrate._known import is_known

# A loop whose control part runs longer than this is treated as dynamic.
MAX_TRIP_COUNT = (1 << 31) - 1
# Iterations stepped eagerly before the count is compiled.
EAGER_STEPS = 64
# Trip counts remembered per loop (by control state); the oldest is forgotten past this, so an
# eagerly run loop whose bound is an argument does not grow its op's memory with every call.
REMEMBERED_COUNTS = 32


def _needed_ops(
    block: Block, outputs: list[int], funcs: dict[str, Any] | None = None
) -> tuple[list[Op], set[int]]:
    """The ops of ``block`` the given values depend on (in order), and the block arguments
    and outside values they read. A ``func.call`` needs only the operands that the callee's
    needed results depend on (TensorFlow's loop conditions call a function with the whole
    loop state, of which they read the counters)."""
    need = set(outputs)
    keep: list[Op] = []
    for op in reversed(block.ops):
        wanted = need.intersection(op.results)
        if wanted:
            keep.append(op)
            need.update(_call_reads(op, wanted, funcs) or op.operands)
            need.update(op.captures)
    keep.reverse()
    defined = {r for op in keep for r in op.results}
    return keep, need - defined


def _call_reads(op: Op, wanted: set[int], funcs: dict[str, Any] | None) -> list[int] | None:
    """The operands of a ``func.call`` its ``wanted`` results depend on (None: all)."""
    if op.name != "func.call" or not funcs:
        return None
    callee = funcs.get(op.attrs.get("callee"))  # type: ignore[arg-type]
    if callee is None or len(callee.block.args) != len(op.operands):
        return None
    returns = [callee.block.returns[j] for j, r in enumerate(op.results) if r in wanted]
    _, reads = _needed_ops(callee.block, returns, funcs)
    return [v for a, v in zip(callee.block.args, op.operands, strict=True) if a in reads]


def control_state(
    cond: Block, body: Block, funcs: dict[str, Any] | None = None
) -> tuple[list[int], Block, Block, set[int]] | None:
    """The carried indices the loop condition depends on, the condition and body sliced to
    them, and the outside values those slices read. None when the body's control part is
    not separable (it should always be: data flow is explicit). ``funcs`` (the module's
    functions by name) lets a call in the condition or body be looked through."""
    n = len(cond.args)
    cond_ops, cond_reads = _needed_ops(cond, list(cond.returns), funcs)
    state = {i for i, a in enumerate(cond.args) if a in cond_reads}
    while True:
        body_ops, body_reads = _needed_ops(body, [body.returns[i] for i in sorted(state)], funcs)
        grown = state | {i for i, a in enumerate(body.args) if a in body_reads}
        if grown == state:
            break
        state = grown
    idx = sorted(state)
    outside = (cond_reads - set(cond.args)) | (body_reads - set(body.args))
    cond_slice = Block(cond.args, cond.arg_avals, cond_ops, cond.returns, cond.terminator)
    body_slice = Block(
        body.args,
        body.arg_avals,
        body_ops,
        tuple(body.returns[i] if i in state else body.args[i] for i in range(n)),
        body.terminator,
    )
    from hlopipe.rehydrate._ir import _liveness

    _liveness(cond_slice)
    _liveness(body_slice)
    return idx, cond_slice, body_slice, outside


def static_trip_count(
    interpreter: Any, op: Op, inits: list[Any], env: Any, variant: int | None = None
) -> int | None:
    """The number of iterations of the while ``op`` when it is fixed at trace time; with
    ``variant``, that of the loop whose condition is the ``variant``-th conjunct of the
    condition (:func:`static_trip_bound`)."""
    tag = "" if variant is None else f"/{variant}"
    analysis = _control_analysis(interpreter, op, variant, tag)
    idx, cond_slice, body_slice, outside = analysis  # type: ignore[misc]
    known = _known_control_values(idx, outside, inits, env)
    if known is None:
        return None
    state, captured = known
    # The count is a function of the control state and what it reads from outside: cached, so
    # retracing (jit, grad, vmap of the same function) does not count again.
    key = tuple(
        (a.dtype.str, a.shape, a.tobytes())
        for a in (*state, *(np.asarray(captured[v]) for v in sorted(captured)))
    )
    counts = op.cache.setdefault("trip_counts" + tag, {})
    if key in counts:
        return counts[key]
    part = _ControlPart(interpreter, cond_slice, body_slice, idx, env)
    # 1. Short loops: step the control part eagerly (no compilation).
    k, state, ended = part.step_eagerly(state)
    if ended:
        return _remember(counts, key, k)
    # 2. Long loops: count the rest with one compiled loop over the control part.
    k += part.count_compiled(state)
    return _remember(counts, key, None if k >= MAX_TRIP_COUNT else k)


def _control_analysis(
    interpreter: Any, op: Op, variant: int | None, tag: str
) -> tuple[list[int], Block, Block, set[int]] | None:
    """:func:`control_state` of the while ``op`` (of its ``variant``-th conjunct condition),
    worked out once and kept in the op's cache."""
    analysis = op.cache.get("control_state" + tag)
    if analysis is None:
        funcs = getattr(getattr(interpreter, "module", None), "funcs", None)
        cond, body = op.regions
        if variant is not None:
            cond = op.cache["conjuncts"][variant]
        analysis = op.cache["control_state" + tag] = control_state(cond, body, funcs)
    return analysis  # type: ignore[no-any-return]


def _known_control_values(
    idx: list[int], outside: set[int], inits: list[Any], env: Any
) -> tuple[tuple[np.ndarray, ...], dict[int, Any]] | None:
    """The control state's initial values (as numpy arrays) and the outside values the
    control part reads; None when any of them is not known at trace time."""
    if not all(is_known(inits[i]) for i in idx):
        return None
    try:
        captured = {v: env[v] for v in outside}
    except KeyError:
        return None
    if not all(is_known(v) for v in captured.values()):
        return None
    with jax.ensure_compile_time_eval():
        state = tuple(np.asarray(inits[i]) for i in idx)
    return state, captured


@dataclasses.dataclass(frozen=True)
class _ControlPart:
    """A loop's condition and body sliced to its control state (the carried values at
    ``idx``), run on that state alone; the other carried values are placeholders."""

    interpreter: Any
    cond: Block
    body: Block
    idx: list[int]
    env: Any

    def full(self, state: tuple) -> list:
        """The whole carried tuple: ``state`` at ``idx``, placeholders elsewhere."""
        it = iter(state)
        avals = self.cond.arg_avals
        return [next(it) if i in self.idx else _placeholder(avals[i]) for i in range(len(avals))]

    def step_eagerly(self, state: tuple) -> tuple[int, tuple, bool]:
        """Up to :data:`EAGER_STEPS` iterations stepped eagerly (nothing compiled): how many
        ran, the state after them, and whether the condition ended the loop."""
        with jax.ensure_compile_time_eval():
            for k in range(EAGER_STEPS):
                (pred,) = self.interpreter.run_block(self.cond, self.full(state), self.env)
                if not bool(pred):
                    return k, state, True
                out = self.interpreter.run_block(self.body, self.full(state), self.env)
                state = tuple(np.asarray(out[i]) for i in self.idx)
        return EAGER_STEPS, state, False

    def count_compiled(self, state: tuple) -> int:
        """The iterations left from ``state`` (stopping at :data:`MAX_TRIP_COUNT`), counted by
        one compiled ``while_loop`` over the control part."""

        def c(carry: tuple) -> Any:
            k, s = carry
            (pred,) = self.interpreter.run_block(self.cond, self.full(s), self.env)
            return jax.numpy.logical_and(pred, k < MAX_TRIP_COUNT)

        def b(carry: tuple) -> tuple:
            k, s = carry
            out = self.interpreter.run_block(self.body, self.full(s), self.env)
            return k + 1, tuple(out[i] for i in self.idx)

        def count(state: tuple) -> Any:
            zero = np.int64(0) if jax.config.read("jax_enable_x64") else np.int32(0)
            k, _ = jax.lax.while_loop(c, b, (zero, state))
            return k

        with jax.ensure_compile_time_eval():
            return int(jax.jit(count)(state))


def static_trip_bound(interpreter: Any, op: Op, inits: list[Any], env: Any) -> int | None:
    """A bound on the iterations of the while ``op`` known at trace time, where the count
    itself is not: its condition is a conjunction (through reshapes and calls, as TensorFlow
    writes ``i < maximum_iterations and cond(...)``) one of whose parts alone has a static
    trip count. The smallest such count; None when no part has one."""
    if "conjuncts" not in op.cache:
        funcs = getattr(getattr(interpreter, "module", None), "funcs", None)
        # the steps past the end run the body too (their results dropped): only a body
        # without effects may
        pure = not _has_effects(op.regions[1], funcs or {}, set())
        op.cache["conjuncts"] = _conjunct_conditions(op.regions[0], funcs) if pure else []
    bounds = []
    for k in range(len(op.cache["conjuncts"])):
        n = static_trip_count(interpreter, op, inits, env, variant=k)
        if n is not None:
            bounds.append(n)
    return min(bounds) if bounds else None


_PASS_THROUGH = {"stablehlo.reshape", "stablehlo.convert"}
_EFFECTS = {"stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed"}


def _has_effects(block: Block, funcs: dict[str, Any], seen: set[str]) -> bool:
    """Whether ``block`` (its regions, the functions it calls) sends, receives, feeds or
    makes a custom call with side effects."""
    for o in block.ops:
        if o.name in _EFFECTS or (
            o.name == "stablehlo.custom_call" and o.attrs.get("has_side_effect")
        ):
            return True
        if any(_has_effects(r, funcs, seen) for r in o.regions):
            return True
        callee = o.attrs.get("callee") if o.name == "func.call" else None
        if isinstance(callee, str) and callee not in seen and callee in funcs:
            seen.add(callee)
            if _has_effects(funcs[callee].block, funcs, seen):
                return True
    return False


def _conjunct_conditions(cond: Block, funcs: dict[str, Any] | None) -> list[Block]:
    """One copy of the condition block per part of the conjunction it returns, that part
    alone returned: the ``and`` op is replaced by ``and(part, part)``, in the condition or in
    the function it calls (copied under a new name into ``funcs``)."""
    if len(cond.returns) != 1:
        return []

    def variants(block: Block, value: int, depth: int) -> list[Block]:
        made = {r: (i, o) for i, o in enumerate(block.ops) for r in o.results}
        while value in made and made[value][1].name in _PASS_THROUGH:
            value = made[value][1].operands[0]
        if value not in made or depth > 8:
            return []
        i, op = made[value]
        out: list[Block] = []
        if op.name == "stablehlo.and" and len(op.operands) == 2:
            for part in _and_leaves(block, made, value):
                new_op = dataclasses.replace(op, operands=(part, part), cache={})
                out.append(_with_op(block, i, new_op))
            return out
        callee = funcs.get(op.attrs.get("callee")) if op.name == "func.call" and funcs else None  # type: ignore[arg-type]
        if callee is None:
            return []
        ret = callee.block.returns[op.results.index(value)]
        for k, inner in enumerate(variants(callee.block, ret, depth + 1)):
            name = f"{callee.name}#conjunct{k}"
            funcs[name] = dataclasses.replace(callee, name=name, block=inner)  # type: ignore[index]
            attrs = {**op.attrs, "callee": name}
            new_op = dataclasses.replace(op, attrs=attrs, cache={})
            out.append(_with_op(block, i, new_op))
        return out

    return variants(cond, cond.returns[0], 0)


def _with_op(block: Block, i: int, new_op: Op) -> Block:
    """A copy of ``block`` with its ``i``-th op replaced by ``new_op`` (same values, so the
    same liveness)."""
    return dataclasses.replace(
        block,
        ops=[*block.ops[:i], new_op, *block.ops[i + 1 :]],
        drop_after=list(block.drop_after),
    )


def _and_leaves(block: Block, made: dict[int, Any], value: int) -> list[int]:
    """The parts of a (nested) boolean ``and`` computed in ``block``."""
    op = made[value][1] if value in made else None
    if op is None or op.name != "stablehlo.and" or len(op.operands) != 2:
        return [value]
    return [v for o in op.operands for v in _and_leaves(block, made, o)]


def _remember(counts: dict[Any, int | None], key: Any, count: int | None) -> int | None:
    """``count``, remembered under ``key`` in the bounded ``counts`` (oldest out first)."""
    while len(counts) >= REMEMBERED_COUNTS:
        del counts[next(iter(counts))]
    counts[key] = count
    return count


def _placeholder(aval: Any) -> np.ndarray:
    """A value of ``aval``'s type for a loop-carried value the control part does not read (a
    token is an empty array, as the token rules make it)."""
    if not hasattr(aval, "shape"):
        return np.zeros((0,), dtype=bool)
    # a read-only view of one zero: no memory for a value nothing reads (a 405B-wide layer
    # stack is hundreds of GiB)
    return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)
