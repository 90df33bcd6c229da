"""Jaxpr plumbing shared by every pass: tracing, inlining, slicing and dataflow queries.

Sub-jaxprs built here reuse the parent's ``Var`` and equation objects (a ``Var`` is only a
name with an aval), so slicing a program into parts costs time linear in its size.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
from jax.extend import core as jcore
from jax.extend import source_info_util

from hlopipe.errors import StageError
from hlopipe.marker import stage_boundary_p

ClosedJaxpr = jcore.ClosedJaxpr
Jaxpr = jcore.Jaxpr
Var = jcore.Var
Literal = jcore.Literal

# Call-like primitives whose body can be inlined without changing the program's meaning
# (custom_jvp/vjp lose their custom rule when inlined; we only do that when a marker is inside).
CALL_PRIMITIVES = frozenset({"jit", "pjit", "closed_call", "core_call", "remat", "checkpoint"})
CUSTOM_PRIMITIVES = frozenset({"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr"})
_BODY_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


def where(eqn: Any) -> str:
    """``file:line (function)`` of an equation, for error messages."""
    return str(source_info_util.summarize(eqn.source_info))


def is_marker(eqn: Any) -> bool:
    return eqn.primitive is stage_boundary_p


def sub_jaxprs(eqn: Any) -> list[Any]:
    return list(jcore.jaxprs_in_params(eqn.params))


# Keyed weakly: an answer lives as long as its jaxpr (jaxprs hash and compare by identity).
_HAS_MARKER: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def contains_marker(jaxpr: Any) -> bool:
    """True if ``jaxpr`` (open) or any jaxpr nested in it has a ``stage_boundary``."""
    hit = _HAS_MARKER.get(jaxpr)
    if hit is not None:
        return hit
    found = any(is_marker(e) or any(contains_marker(j) for j in sub_jaxprs(e)) for e in jaxpr.eqns)
    _HAS_MARKER[jaxpr] = found
    return found


def trace(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, Any, Any]:
    """Trace ``fn(*args)`` to a flat ClosedJaxpr; returns ``(closed, in_tree, out_tree)``."""
    flat, in_tree = jax.tree_util.tree_flatten(tuple(args))
    out_tree_box: list[Any] = []

    def flat_fn(*leaves):
        out = fn(*jax.tree_util.tree_unflatten(in_tree, list(leaves)))
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)
        out_tree_box.append(out_tree)
        return out_leaves

    closed = jax.make_jaxpr(flat_fn)(*flat)
    return closed, in_tree, out_tree_box[-1]


def body_of(eqn: Any) -> Any | None:
    """The ClosedJaxpr/Jaxpr a call-like equation runs on its operands, if any."""
    for name in _BODY_PARAMS:
        body = eqn.params.get(name)
        if isinstance(body, (ClosedJaxpr, Jaxpr)):
            return body
    return None


def check_markers_placeable(jaxpr: Any, context: str = "") -> None:
    """Refuse markers that sit inside loops, conditionals or other non-inlinable bodies."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        for sub in sub_jaxprs(eqn):
            if not contains_marker(sub):
                continue
            if name in CALL_PRIMITIVES or name in CUSTOM_PRIMITIVES:
                check_markers_placeable(sub, context or where(eqn))
                continue
            kind = {"scan": "a scan body", "while": "a while_loop body", "cond": "a cond branch"}
            raise StageError(
                f"stage_boundary inside {kind.get(name, f'the body of {name!r}')} at "
                f"{where(eqn)}{f' (called from {context})' if context else ''}: markers must sit "
                "at the top level of the program (outside loops and conditionals); move the "
                "marker out of the loop, or unroll the loop in Python"
            )


def inline(closed: Any, predicate: Callable[[Any], bool]) -> Any:
    """Re-trace ``closed`` with every call-like equation for which ``predicate`` holds inlined.

    Inlining is recursive: calls inside inlined bodies are tested too. Returns ``closed``
    itself when nothing matches.
    """
    if not any(_inlinable(e) and predicate(e) for e in closed.jaxpr.eqns):
        return closed

    def run(jaxpr, consts, *args):
        env: dict[Any, Any] = {}

        def read(v):
            return v.val if isinstance(v, Literal) else env[v]

        for v, x in zip(jaxpr.constvars, consts, strict=True):
            env[v] = x
        for v, x in zip(jaxpr.invars, args, strict=True):
            env[v] = x
        for eqn in jaxpr.eqns:
            invals = [read(v) for v in eqn.invars]
            with source_info_util.user_context(eqn.source_info.traceback):
                if _inlinable(eqn) and predicate(eqn):
                    body = body_of(eqn)
                    if isinstance(body, ClosedJaxpr):
                        outs = run(body.jaxpr, body.consts, *invals)
                    else:
                        outs = run(body, [], *invals)
                else:
                    params = eqn.primitive.get_bind_params(eqn.params)
                    outs = eqn.primitive.bind(*invals, **params)
                    if not eqn.primitive.multiple_results:
                        outs = [outs]
            for v, x in zip(eqn.outvars, outs, strict=True):
                env[v] = x
        return [read(v) for v in jaxpr.outvars]

    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.in_avals]
    return jax.make_jaxpr(lambda *a: run(closed.jaxpr, closed.consts, *a))(*avals)


def _inlinable(eqn: Any) -> bool:
    name = eqn.primitive.name
    return (name in CALL_PRIMITIVES or name in CUSTOM_PRIMITIVES) and body_of(eqn) is not None


def aval_bytes(aval: Any) -> int:
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return 0
    itemsize = getattr(dtype, "itemsize", None) or 4
    return math.prod(getattr(aval, "shape", ())) * int(itemsize)


def sds(aval: Any) -> jax.ShapeDtypeStruct:
    """A ``jax.ShapeDtypeStruct`` for an aval."""
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype)


def is_inexact(aval: Any) -> bool:
    return bool(jax.numpy.issubdtype(aval.dtype, jax.numpy.inexact))


def make_closed(
    parent: Any,
    invars: Sequence[Any],
    eqns: Sequence[Any],
    outvars: Sequence[Any],
    *,
    check: bool = True,
) -> Any:
    """A ClosedJaxpr over ``eqns`` (taken from ``parent``) with the given in/out variables.

    Constants of ``parent`` that the equations use become this jaxpr's constants.
    """
    const_of = dict(zip(parent.jaxpr.constvars, parent.consts, strict=True))
    defined: set[Any] = set(invars)
    constvars: list[Any] = []
    seen_const: set[Any] = set()

    def use(v):
        if isinstance(v, Literal) or v in defined:
            return
        if v in const_of:
            if v not in seen_const:
                seen_const.add(v)
                constvars.append(v)
            return
        if check:
            raise AssertionError(f"hlopipe internal: {v} used before it is defined")

    for eqn in eqns:
        for v in eqn.invars:
            use(v)
        defined.update(eqn.outvars)
    for v in outvars:
        use(v)
    effects = set()
    for eqn in eqns:
        effects |= set(eqn.effects)
    info = jcore.DebugInfo("hlopipe.stages", "<stage>", None, None)
    jaxpr = Jaxpr(constvars, list(invars), list(outvars), list(eqns), frozenset(effects), info)
    return ClosedJaxpr(jaxpr, [const_of[v] for v in constvars])


def needed_eqns(eqns: Sequence[Any], outvars: Iterable[Any]) -> list[bool]:
    """Mask of ``eqns`` needed (transitively) to compute ``outvars`` (dead-code elimination)."""
    live = {v for v in outvars if not isinstance(v, Literal)}
    mask = [False] * len(eqns)
    for i in range(len(eqns) - 1, -1, -1):
        eqn = eqns[i]
        if eqn.effects or any(v in live for v in eqn.outvars):
            mask[i] = True
            live.update(v for v in eqn.invars if not isinstance(v, Literal))
    return mask


_WIDE = ("int64", "uint64", "float64", "complex128")


def first_64bit(jaxpr: Any) -> Any:
    """The first equation of ``jaxpr`` (nested ones too) with a 64-bit value, or ``None``."""
    for e in jaxpr.eqns:
        if any(str(getattr(v.aval, "dtype", "")) in _WIDE for v in [*e.invars, *e.outvars]):
            return e
        for sub in sub_jaxprs(e):
            found = first_64bit(getattr(sub, "jaxpr", sub))
            if found is not None:
                return found
    return None


def check_64bit_mode(jaxpr: Any, what: str = "the program") -> None:
    """A program with 64-bit types (a TensorFlow or PyTorch program's int64 labels, say) is
    split and run in JAX's 64-bit mode only: outside it, JAX narrows the values its stages are
    rebuilt from to 32 bits and the stage compiler fails on the mix."""
    if jax.config.read("jax_enable_x64"):
        return
    e = first_64bit(jaxpr)
    if e is not None:
        wide = sorted({str(v.aval.dtype) for v in [*e.invars, *e.outvars]} & set(_WIDE))
        raise StageError(
            f"the program uses 64-bit types ({', '.join(wide)} in {what}, "
            f"'{e.primitive.name}' at {where(e)}), and JAX's 64-bit mode is off: call "
            "jax.config.update('jax_enable_x64', True) first (the context manager "
            "jax.enable_x64 is not enough for a Pipeline, which compiles and runs in threads "
            "of its own), or export the program with 32-bit types"
        )
