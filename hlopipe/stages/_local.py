"""Values made where they are read: what a stage remakes instead of receiving.

A program's masks, position tables, ``-inf`` fills and empty caches depend on no argument
(iotas, broadcast literals, compares and selects over them); model code and XLA alike build
them once, at the top, and hand them to every layer. Sent from the stage that happens to make
them, they would cross every cut (a ``[S, S]`` mask and a ``[b, h, S, S]`` fill are many times
the residual stream) and get a cotangent back. Instead, each stage that reads such a value
makes it itself, from the same cheap equations (copies of the equations, sharing their
variables: a stage's jaxpr is its own), in forward and backward alike; it is never sent and
never given a cotangent.

The same holds for a value made by cheap equations from program arguments when sending those
arguments costs fewer bytes than sending the value (an attention mask ``[b, S]`` broadcast to
``[b, 1, S, S]``, labels turned one-hot, positions into a rotary table): the stage that reads
it takes the arguments directly (as it takes any program argument: from the caller, never
relayed by another stage) and makes the value. An argument passed through a marker
(``h, labels = stage_boundary(h, labels)``) is read from the caller too.

Cheap equations are the elementwise ones, data movement (broadcasts, reshapes, slices,
gathers, converts, iotas), cumulative sums and reductions, and calls whose bodies hold only
those; never a ``dot_general``, convolution, loop or an equation with effects. A large folded
literal (a constant of the program) is never sent either: every stage that reads it captures
it in its own executable (``_jaxpr.make_closed``).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import MOVEMENT

_ELEMENTWISE = frozenset(
    {
        "add", "sub", "mul", "div", "rem", "neg", "max", "min", "abs", "sign", "floor", "ceil",
        "round", "nextafter", "pow", "integer_pow", "square", "exp", "exp2", "log", "log1p",
        "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
        "logistic", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv", "is_finite", "eq", "ne",
        "lt", "le", "gt", "ge", "and", "or", "not", "xor", "shift_left", "shift_right_logical",
        "shift_right_arithmetic", "population_count", "clamp", "real", "imag", "conj",
        "complex", "cumsum", "cummax", "cummin", "cumprod", "reduce_sum", "reduce_max",
        "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin",
    }
)  # fmt: skip
# data movement, less what must stay where it is (a marker is looked through, not copied)
CHEAP = (_ELEMENTWISE | MOVEMENT) - {"stage_boundary", "optimization_barrier", "device_put"}

_CHEAP_BODY: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def is_cheap(eqn: Any) -> bool:
    """An equation a stage may copy to make a value itself: elementwise or data movement, or a
    call of a body holding only such equations; no effects."""
    if eqn.effects:
        return False
    if eqn.primitive.name in CHEAP:
        return True
    if eqn.primitive.name not in J.CALL_PRIMITIVES:
        return False
    body = J.body_of(eqn)
    if body is None:
        return False
    inner = getattr(body, "jaxpr", body)
    hit = _CHEAP_BODY.get(inner)
    if hit is None:
        hit = all(is_cheap(e) for e in inner.eqns)
        _CHEAP_BODY[inner] = hit
    return hit


@dataclass(frozen=True)
class Remade:
    """What the readers of ``jaxpr``'s values may make themselves.

    ``defs``: the defining equation of each value made by cheap equations from constants and
    arguments alone; ``through``: a marker's output made that way, mapped to the marker's input
    (a marker is looked through, never copied); ``remade``: the values a stage other than the
    one making them makes itself (:func:`find_remade` says which).
    """

    defs: dict[Any, Any]
    through: dict[Any, Any]
    remade: frozenset[Any]

    def source(self, v: Any) -> Any:
        """``v`` with the markers it passed through looked through."""
        while not isinstance(v, J.Literal) and v in self.through:
            v = self.through[v]
        return v


def find_remade(jaxpr: Any) -> Remade:
    """The values of ``jaxpr`` (top level) that a reader on another stage makes itself: those
    made by cheap equations from no argument, and those made from arguments whose bytes are
    fewer than the value's (or that are an argument, passed through a marker)."""
    invars = {v: i for i, v in enumerate(jaxpr.invars)}
    constvars = set(jaxpr.constvars)
    args: dict[Any, frozenset[Any]] = {}  # a value made cheaply -> the arguments it reads
    defs: dict[Any, Any] = {}
    through: dict[Any, Any] = {}

    def reads(v: Any) -> frozenset[Any] | None:
        if isinstance(v, J.Literal) or v in constvars:
            return frozenset()
        if v in invars:
            return frozenset((v,))
        return args.get(v)

    for eqn in jaxpr.eqns:
        if J.is_marker(eqn):
            for i, o in zip(eqn.invars, eqn.outvars, strict=True):
                r = reads(i)
                if r is not None:
                    args[o] = r
                    through[o] = i
            continue
        if not is_cheap(eqn):
            continue
        ins = [reads(v) for v in eqn.invars]
        if any(r is None for r in ins):
            continue
        r = frozenset().union(*ins)  # type: ignore[arg-type]
        for o in eqn.outvars:
            args[o] = r
            defs[o] = eqn
    found = Remade(defs, through, frozenset())

    def worth(v: Any, r: frozenset[Any]) -> bool:
        src = found.source(v)
        if not r or (not isinstance(src, J.Literal) and src in invars):
            return True
        return sum(J.aval_bytes(a.aval) for a in r) < J.aval_bytes(v.aval)

    remade = {v for v, r in args.items() if worth(v, r)}
    return Remade(defs, through, frozenset(remade))


def stage_eqns(
    eqns: Sequence[Any], bounds: Sequence[int], owner: dict[Any, int], found: Remade
) -> list[list[Any]]:
    """Each stage's equations: copies of the cheap equations that make the remade values it
    reads from other stages (in program order), then its own; a marker's output it remakes is
    read as the marker's input (the equations reading it are rewritten so)."""
    order = {id(e): i for i, e in enumerate(eqns)}
    out: list[list[Any]] = []
    for s in range(len(bounds) - 1):
        own = list(eqns[bounds[s] : bounds[s + 1]])
        sub: dict[Any, Any] = {}
        todo: list[Any] = []
        for e in own:
            for v in e.invars:
                if not isinstance(v, J.Literal) and owner.get(v, s) != s and v in found.remade:
                    todo.append(v)
        copies: dict[int, Any] = {}
        while todo:
            v = todo.pop()
            src = found.source(v)
            if src is not v:
                sub[v] = src
            e = found.defs.get(src)
            if e is None or id(e) in copies:
                continue
            copies[id(e)] = e
            todo.extend(u for u in e.invars if not isinstance(u, J.Literal))
        made = [copies[k] for k in sorted(copies, key=order.__getitem__)]
        out.append([_renamed(e, sub) for e in [*made, *own]])
    return out


def _renamed(eqn: Any, sub: dict[Any, Any]) -> Any:
    if not sub or not any(not isinstance(v, J.Literal) and v in sub for v in eqn.invars):
        return eqn
    new = [v if isinstance(v, J.Literal) else sub.get(v, v) for v in eqn.invars]
    return eqn.replace(invars=new)


def trim_markers(eqns: Sequence[Any], outvars: Collection[Any]) -> list[Any]:
    """``eqns`` with each marker passing only the values read after it (by ``eqns`` or as
    ``outvars``): a value a later stage makes itself (or an argument it reads from the
    caller) is not carried through the marker, nor its argument read for it."""
    used = set(outvars)
    for e in eqns:
        used.update(v for v in e.invars if not isinstance(v, J.Literal))
    out = []
    for e in eqns:
        if J.is_marker(e) and not all(o in used for o in e.outvars):
            pairs = [(i, o) for i, o in zip(e.invars, e.outvars, strict=True) if o in used]
            if not pairs:
                continue
            e = e.replace(invars=[i for i, _ in pairs], outvars=[o for _, o in pairs])
        out.append(e)
    return out
