"""Folds of several equations into one ``jax.nn`` call: softmax, log-softmax, GELU.

Each pattern is the very sequence of operations the ``jax.nn`` function performs (so the
values are the same, operation for operation); every intermediate value must be read by the
pattern alone, and the shapes are checked axis by axis, so a look-alike never folds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hlopipe.decompile._emit import Body, is_literal
from hlopipe.decompile._folds import _axis_text, _float, axis_map_below, define, fold, literal_value
from hlopipe.decompile._source import ATOM, Expr


def _stretch(body: Body, atom: Any, through: tuple[str, ...] = ()) -> tuple[Any, dict[int, int]]:
    """Walk down single-use broadcasts, size-1 reshapes (and the unary ``through`` ops) from
    ``atom``: the value reached and, for each of its axes not of size 1, the axis of ``atom``
    it runs along."""
    shape = atom.aval.shape
    src, axis_map = atom, {i: i for i, n in enumerate(shape) if n != 1}
    while True:
        eqn = body.single_use_producer(src, ("broadcast_in_dim", "reshape", *through))
        if eqn is None or len(eqn.invars) != 1 or is_literal(eqn.invars[0]):
            return src, axis_map
        inner = eqn.invars[0]
        if eqn.primitive.name in through:
            src = inner
            continue
        below = axis_map_below(eqn, src, axis_map)
        if below is None:
            return src, axis_map
        src, axis_map = inner, below


def _restores(r: Any, axis_map: dict[int, int]) -> bool:
    """Whether ``axis_map`` (from reduction ``r``'s result to an array of its operand's shape)
    stretches the result back along exactly the reduced axes."""
    axes = tuple(r.params["axes"])
    kept = [i for i in range(r.invars[0].aval.ndim) if i not in axes]
    out_shape = r.outvars[0].aval.shape
    return all(axis_map.get(k) == kept[k] for k in range(len(kept)) if out_shape[k] != 1)


def _stretched_reduction(
    body: Body, atom: Any, kind: str, of: Any, through: tuple[str, ...] = ()
) -> Any:
    """The ``reduce_<kind>`` of ``of`` that ``atom`` stretches back to ``of``'s shape (through
    single-use broadcasts/reshapes, and a ``max(-inf, .)`` for max), or None."""
    if is_literal(atom) or tuple(atom.aval.shape) != tuple(of.aval.shape):
        return None
    base, axis_map = _stretch(body, atom, through)
    if kind == "max":
        m = body.single_use_producer(base, "max")
        if m is not None:
            vals = [literal_value(body, a) for a in m.invars]
            for i in (0, 1):
                if vals[i] is not None and float(vals[i]) == -np.inf:
                    base = m.invars[1 - i]
                    break
    r = body.single_use_producer(base, f"reduce_{kind}")
    if r is None or r.invars[0] is not of or not _restores(r, axis_map):
        return None
    return r


def _shifted(body: Body, d: Any) -> tuple[Any, Any] | None:
    """``d = x - max(x, axes)`` (stretched back): returns (x, the max reduction)."""
    sub = body.producer.get(d)
    if sub is None or sub.primitive.name != "sub" or is_literal(sub.invars[0]):
        return None
    x, m = sub.invars
    r = _stretched_reduction(body, m, "max", x)
    return None if r is None else (x, r)


def _axis_arg(r: Any) -> str:
    return _axis_text(tuple(r.params["axes"]), r.invars[0].aval.ndim) or "axis=None"


def _define_of_shifted(
    body: Body, eqn: Any, d: Any, r: Any, fn: str, name: str | None = None
) -> bool:
    """Define ``eqn`` as ``jax.nn.<fn>(x, axis)`` when ``d`` is ``x - max(x)`` over the axes
    the reduction ``r`` sums over; False otherwise."""
    shifted = _shifted(body, d)
    if shifted is None or tuple(shifted[1].params["axes"]) != tuple(r.params["axes"]):
        return False
    x = body.ref(shifted[0])
    text = f"jax.nn.{fn}({x.text}, {_axis_arg(r)})"
    return define(body, eqn, Expr(text, ATOM, x.deps), name or fn)


@fold("div", first=True)
def _softmax(body: Body, eqn: Any) -> bool:
    """``e / sum(e)`` with ``e = exp(x - max(x))``: ``jax.nn.softmax(x, axis)``."""
    e, s = eqn.invars
    if is_literal(e) or not _float(e.aval.dtype) or body.uses[e] != 2 or e in body.outvars:
        return False
    exp = body.producer.get(e)
    if exp is None or exp.primitive.name != "exp" or exp.params.get("accuracy") is not None:
        return False
    r = _stretched_reduction(body, s, "sum", e)
    d = exp.invars[0]
    if r is None or body.only_user(d) is not exp:
        return False
    return _define_of_shifted(body, eqn, d, r, "softmax")


@fold("sub", first=True)
def _log_softmax(body: Body, eqn: Any) -> bool:
    """``d - log(sum(exp(d)))`` with ``d = x - max(x)``: ``jax.nn.log_softmax(x, axis)``."""
    d, lse = eqn.invars
    if is_literal(d) or is_literal(lse) or not _float(d.aval.dtype):
        return False
    if body.uses[d] != 2 or d in body.outvars:
        return False
    base, outer_map = _stretch(body, lse)
    log = body.single_use_producer(base, "log")
    if log is None or log.params.get("accuracy") is not None:
        return False
    # the sum stretched to the log's operand, then the log stretched to d
    inner, inner_map = _stretch(body, log.invars[0])
    r = body.single_use_producer(inner, "reduce_sum")
    if r is None:
        return False
    if any(v not in outer_map for v in inner_map.values()):
        return False
    if not _restores(r, {k: outer_map[v] for k, v in inner_map.items()}):
        return False
    exp = body.single_use_producer(r.invars[0], "exp")
    if exp is None or exp.invars[0] is not d or exp.params.get("accuracy") is not None:
        return False
    if tuple(r.invars[0].aval.shape) != tuple(d.aval.shape):
        return False
    return _define_of_shifted(body, eqn, d, r, "log_softmax", "logp")


# ---- GELU (tanh approximation) ------------------------------------------------------------------
# x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))), each product and sum either way
# round; x**3 as (x * x) * x, as jax lowers it.
_SQRT_2_OVER_PI = float(np.float32(np.sqrt(2 / np.pi)))
_C = float(np.float32(0.044715))


class _Match:
    def __init__(self, body: Body):
        self.body = body
        self.x: Any = None
        self.used: list[Any] = []

    def var(self, atom: Any) -> bool:
        if is_literal(atom):
            return False
        if self.x is None:
            self.x = atom
        return atom is self.x

    def const(self, atom: Any, value: float) -> bool:
        v = literal_value(self.body, atom)
        return v is not None and float(np.float32(v)) == value

    def op(self, atom: Any, prim: str, left: Any, right: Any) -> bool:
        """``atom = prim(a, b)`` with a matching ``left`` and b ``right`` (either order)."""
        eqn = self.body.single_use_producer(atom, prim)
        if eqn is None:
            return False
        a, b = eqn.invars
        for p, q in ((a, b), (b, a)):
            saved = (self.x, len(self.used))
            if left(p) and right(q):
                self.used.append(eqn)
                return True
            self.x, self.used = saved[0], self.used[: saved[1]]
        return False


@fold("mul", first=True)
def _gelu(body: Body, eqn: Any) -> bool:
    """``x * (0.5 * (1 + tanh(c1 * (x + c2 * x**3))))``: ``jax.nn.gelu(x)``."""
    if not _float(eqn.outvars[0].aval.dtype) or eqn.outvars[0].aval.dtype != np.float32:
        return False
    m = _Match(body)

    def cube(a: Any) -> bool:
        return m.op(a, "mul", lambda p: m.op(p, "mul", m.var, m.var), m.var)

    def inner(a: Any) -> bool:
        return m.op(a, "add", m.var, lambda p: m.op(p, "mul", lambda q: m.const(q, _C), cube))

    def tanh(a: Any) -> bool:
        t = body.single_use_producer(a, "tanh")
        if t is None or t.params.get("accuracy") is not None:
            return False
        return m.op(t.invars[0], "mul", lambda q: m.const(q, _SQRT_2_OVER_PI), inner)

    def cdf(a: Any) -> bool:
        return m.op(
            a,
            "mul",
            lambda p: m.const(p, 0.5),
            lambda p: m.op(p, "add", lambda q: m.const(q, 1.0), tanh),
        )

    a, b = eqn.invars
    for xv, rest in ((a, b), (b, a)):
        m.x, m.used = None, []
        if m.var(xv) and cdf(rest):
            x = body.ref(m.x)
            return define(body, eqn, Expr(f"jax.nn.gelu({x.text})", ATOM, x.deps), "gelu")
    return False
