"""The emitters' registry and what the families share: one emitter per jax primitive (the
plain ``jax.lax`` call that binds exactly that equation), one module per primitive family
under ``decompile/emitters/``.

Every emitter takes ``(body, eqn)`` and defines the equation's results in ``body``. The
``jnp`` style first offers the equation to :mod:`hlopipe.decompile._folds`, which writes the
idiomatic form where it is exact; what no fold takes comes here. A primitive without an
emitter but with a ``jax.lax.<name>_p`` is written as that primitive's ``bind`` (exact, if not
pretty); anything else is refused with the primitive's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jax import lax

from hlopipe.decompile._emit import (
    Body,
    is_drop,
    is_literal,
    tuple_text,
)
from hlopipe.decompile._source import ATOM, DecompileError, Expr, param, typed_scalar
from hlopipe.rehydrate.registry import register_by_name

Emitter = Callable[[Body, Any], None]
EMITTERS: dict[str, Emitter] = {}


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    """Register the emitter of each primitive name (as rehydration registers its rules)."""
    return register_by_name(EMITTERS, names, "an emitter")


def emit_equation(body: Body, eqn: Any) -> None:
    name = eqn.primitive.name
    if body.mod.style == "jnp":
        from hlopipe.decompile._folds import try_fold

        if try_fold(body, eqn):
            return
    fn = EMITTERS.get(name)
    if fn is not None:
        fn(body, eqn)
        return
    if isinstance(getattr(lax, _prim_attr(name), None), type(lax.add_p)):
        _bind(body, eqn)
        return
    raise DecompileError(
        f"no JAX source for the primitive {name!r}: it has no jax.lax call hlopipe knows "
        "how to write"
    )


# ---- helpers ----------------------------------------------------------------------------------
def call(fn: str, args: list[Expr], *extra: str, **kwargs: Any) -> Expr:
    """``fn(a, b, extra..., k=v)``; its deps are the operands'."""
    parts = [a.text for a in args] + list(extra)
    parts += [f"{k}={param(v)}" for k, v in kwargs.items()]
    deps = frozenset().union(*(a.deps for a in args)) if args else frozenset()
    return Expr(f"{fn}({', '.join(parts)})", ATOM, deps)


def operands(body: Body, eqn: Any) -> list[Expr]:
    return [body.ref(v) for v in eqn.invars]


def define1(body: Body, eqn: Any, expr: Expr, hint: str | None = None) -> None:
    body.define(eqn.outvars[0], expr, hint or eqn.primitive.name)


def _prim_attr(name: str) -> str:
    """The name of primitive ``name`` in ``jax.lax`` (``scatter-add`` is ``scatter_add_p``)."""
    return name.replace("-", "_") + "_p"


def _bind(body: Body, eqn: Any) -> None:
    """``lax.<name>_p.bind(*operands, **params)``: exact for any primitive with plain params."""
    attr = _prim_attr(eqn.primitive.name)
    try:
        e = call(f"lax.{attr}.bind", operands(body, eqn), **dict(eqn.params))
    except DecompileError as err:
        raise DecompileError(
            f"no JAX source for the primitive {eqn.primitive.name!r}: {err}"
        ) from err
    if eqn.primitive.multiple_results:
        body.define_many(eqn.outvars, [], e, eqn.primitive.name)
    else:
        define1(body, eqn, e)


def _kwargs(eqn: Any, *names: str) -> dict[str, Any]:
    """The named params that are not None (lax's defaults)."""
    return {n: eqn.params[n] for n in names if eqn.params.get(n) is not None}


def _deps(es: list[Expr]) -> frozenset[Any]:
    return frozenset().union(*(e.deps for e in es)) if es else frozenset()


def _pack(items: list[Expr]) -> str:
    return tuple_text(items) if items else "()"


def _target(shown: list[str]) -> str:
    return f"({shown[0]},)" if len(shown) == 1 else ", ".join(shown)


def _nested_assign(
    body: Body, eqn: Any, head: list[str], text: str, deps: frozenset[Any], groups: list[list[Any]]
) -> None:
    """``(a, b), (c,) = call`` for a call returning a tuple of tuples (or ``(a, b), _``)."""
    names: dict[Any, str] = {}
    for v in eqn.outvars:
        if not is_drop(v):
            names[v] = body.mod.fresh("out")
            body.env[v] = Expr(names[v], ATOM, frozenset({v}))

    def render(needed: set[Any]) -> list[str]:
        parts = []
        for g in groups:
            shown = [names[v] if (not is_drop(v) and v in needed) else "_" for v in g]
            if all(s == "_" for s in shown):
                parts.append("_")
            elif len(shown) == 1:
                parts.append(f"({shown[0]},)")
            else:
                parts.append("(" + ", ".join(shown) + ")")
        if len(groups) == 1:
            target = parts[0] if parts[0] != "_" else "_"
        else:
            target = ", ".join(parts)
        return [*head, f"{target} = {text}"]

    body.statement(list(names), deps, render)


def _is_int_literal(atom: Any, value: int) -> bool:
    return is_literal(atom) and np.asarray(atom.val).ndim == 0 and int(atom.val) == value


__all__ = ["EMITTERS", "call", "define1", "emit_equation", "operands", "typed_scalar"]
