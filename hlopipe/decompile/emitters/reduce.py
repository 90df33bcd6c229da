"""Reductions: ``reduce_*``, the general ``reduce``, ``argmax``/``argmin``, cumulative
reductions and ``reduce_window_*``."""

from __future__ import annotations

from typing import Any

import numpy as np

from hlopipe.decompile._emit import Body, function_lines
from hlopipe.decompile._prims import (
    _bind,
    _deps,
    _nested_assign,
    _pack,
    call,
    define1,
    emitter,
    operands,
)
from hlopipe.decompile._source import ATOM, Expr, param, typed_scalar


def identity_of(prim: str, dtype: Any) -> Any:
    """The init value ``lax.reduce`` recognises as the monoid of ``prim``."""
    dt = np.dtype(dtype)
    if prim in ("sum", "or", "xor"):
        return np.zeros((), dt)[()]
    if prim in ("prod", "and"):
        return np.ones((), dt)[()]
    if prim in ("max", "min"):
        if dt == np.bool_:
            return np.bool_(prim == "min")
        if np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            return dt.type(info.min if prim == "max" else info.max)
        return dt.type(-np.inf if prim == "max" else np.inf)
    raise KeyError(prim)


REDUCERS = {
    "sum": "lax.add",
    "prod": "lax.mul",
    "max": "lax.max",
    "min": "lax.min",
    "and": "lax.bitwise_and",
    "or": "lax.bitwise_or",
    "xor": "lax.bitwise_xor",
}


@emitter(*(f"reduce_{k}" for k in REDUCERS))
def _reduce(body: Body, eqn: Any) -> None:
    kind = eqn.primitive.name.removeprefix("reduce_")
    if kind in ("and", "or", "xor") and eqn.invars[0].aval.dtype != np.bool_:
        return _bind(body, eqn)  # lax.reduce only recognises the boolean ones
    dtype = eqn.invars[0].aval.dtype
    init = typed_scalar(identity_of(kind, dtype), dtype)
    e = call("lax.reduce", operands(body, eqn), init, REDUCERS[kind], param(eqn.params["axes"]))
    define1(body, eqn, e, kind)


@emitter("reduce")
def _reduce_general(body: Body, eqn: Any) -> None:
    """``lax.reduce`` with the program's own combining function (variadic, or one that is
    not a monoid lax recognises), as a nested function."""
    p = eqn.params
    closed = p["jaxpr"]
    n = len(eqn.invars) // 2
    ops_e = operands(body, eqn)
    xs, inits = ops_e[:n], ops_e[n:]
    inner = closed.jaxpr
    fname = body.mod.fresh("combine")
    single = n == 1
    if single:
        params = [body.mod.fresh("a"), body.mod.fresh("b")]
        env = {
            v: Expr(nm, ATOM, frozenset({v})) for v, nm in zip(inner.invars, params, strict=True)
        }
        lines, outer = function_lines(body.mod, fname, closed, params, [], env, lambda r: r[0].text)
    else:
        lines, outer = function_lines(
            body.mod,
            fname,
            closed,
            ["acc", "x"],
            [("acc", list(inner.invars[:n])), ("x", list(inner.invars[n:]))],
            {},
            _pack,
        )
    if single:
        args = [xs[0].text, inits[0].text]
    else:
        args = [_pack(xs), _pack(inits)]
    text = f"lax.reduce({', '.join(args)}, {fname}, {param(tuple(p['dimensions']))})"
    deps = outer | _deps(ops_e)
    if single:
        _nested_single(body, eqn, lines, text, deps)
    else:
        _nested_assign(body, eqn, lines, text, deps, [eqn.outvars])


def _nested_single(body: Body, eqn: Any, head: list[str], text: str, deps: frozenset[Any]) -> None:
    v = eqn.outvars[0]
    name = body.mod.fresh("red")
    body.env[v] = Expr(name, ATOM, frozenset({v}))
    body.statement([v], deps, lambda needed: [*head, f"{name} = {text}"])


@emitter("argmax", "argmin")
def _argmax(body: Body, eqn: Any) -> None:
    p = eqn.params
    e = call(
        f"lax.{eqn.primitive.name}",
        operands(body, eqn),
        param(p["axes"][0]),
        param(p["index_dtype"]),
    )
    define1(body, eqn, e)


@emitter("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
def _cumulative(body: Body, eqn: Any) -> None:
    p = eqn.params
    e = call(f"lax.{eqn.primitive.name}", operands(body, eqn), axis=p["axis"], reverse=p["reverse"])
    define1(body, eqn, e)


@emitter("reduce_window_sum", "reduce_window_max", "reduce_window_min")
def _reduce_window(body: Body, eqn: Any) -> None:
    p = eqn.params
    kind = eqn.primitive.name.removeprefix("reduce_window_")
    dtype = eqn.invars[0].aval.dtype
    if not np.issubdtype(dtype, np.floating) and kind != "sum":
        return _bind(body, eqn)
    init = typed_scalar(identity_of(kind, dtype), dtype)
    e = call(
        "lax.reduce_window",
        operands(body, eqn),
        init,
        REDUCERS[kind],
        param(tuple(p["window_dimensions"])),
        param(tuple(p["window_strides"])),
        param(tuple(tuple(x) for x in p["padding"])),
        param(tuple(p["base_dilation"])),
        param(tuple(p["window_dilation"])),
    )
    define1(body, eqn, e, "pool")
