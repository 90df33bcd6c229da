"""A jaxpr printed as a Python module: one statement per kept equation, nested functions for
loop and branch bodies, constants above the function.

The walk mirrors the interpreter's: values live in an environment keyed by jaxpr variable, each
equation goes to the emitter of its primitive (:mod:`hlopipe.decompile.emitters`), which returns
the expression of its result. A value used once by a plain call is written inline into its
user; the others get a name. Statements nothing reads are dropped at the end (the program is
pure), so a fold that reads past an equation leaves no dead line behind.
"""

from __future__ import annotations

import builtins
import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax.extend import core as jcore

from hlopipe.decompile._source import ATOM, DecompileError, Expr, array_literal, identifier

# Equations whose operands are read inside a nested function or that must see a name.
STRUCTURED = frozenset(
    {
        "scan",
        "while",
        "cond",
        "pjit",
        "jit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "remat",
        "checkpoint",
    }
)

_BUILTINS = frozenset(dir(builtins))

INLINE_LIMIT = 72  # longest expression written into its single user rather than named

# Arrays up to this many elements are written into the source; larger ones go to the .npz.
SOURCE_CONSTANT_LIMIT = 16


def is_literal(atom: Any) -> bool:
    return isinstance(atom, jcore.Literal)


def is_drop(v: Any) -> bool:
    return type(v).__name__ == "DropVar"


@dataclass
class Stmt:
    """Lines of one equation; ``render(needed)`` gives them once it is known which results are
    read (an unread result of a tuple assignment becomes ``_``)."""

    defines: tuple[Any, ...]
    deps: frozenset[Any]
    render: Callable[[set[Any]], list[str]]


class Module:
    """The whole generated module: its constants, module-level functions and names."""

    def __init__(self, style: str, source_constant_limit: int = SOURCE_CONSTANT_LIMIT):
        self.style = style
        self.source_constant_limit = source_constant_limit
        self.constants: list[tuple[str, str]] = []  # (name, literal or npz reference)
        self.npz: dict[str, np.ndarray] = {}
        self.functions: list[list[str]] = []  # module-level (jitted) functions
        self._const_ids: dict[int, Expr] = {}
        self._fn_ids: dict[int, str] = {}
        self._taken: set[str] = set()
        self._counts: collections.Counter[str] = collections.Counter()
        self.notes: list[str] = []
        # the program has 64-bit types: it runs in a jax.enable_x64 scope of its own, where a
        # Python int is an int64
        self.x64 = False

    def fresh(self, hint: str) -> str:
        base = identifier(hint) or "v"
        if base in _BUILTINS:
            base = base + "_"
        while True:
            n = self._counts[base]
            self._counts[base] += 1
            name = base if n == 0 and not base[-1].isdigit() and len(base) > 2 else f"{base}{n}"
            if name not in self._taken:
                self._taken.add(name)
                return name

    def reserve(self, name: str) -> str:
        name = identifier(name)
        while name in self._taken:
            name += "_"
        self._taken.add(name)
        return name

    def constant(self, value: Any) -> Expr:
        """A module-level constant for an array the program closes over."""
        key = id(value)
        if key in self._const_ids:
            return self._const_ids[key]
        a = np.asarray(value)
        name = self.fresh("c").upper()
        if a.size <= self.source_constant_limit:
            self.constants.append((name, array_literal(a)))
        else:
            self.npz[name] = a
            self.constants.append((name, f'jnp.asarray(_CONSTANTS["{name}"])'))
        e = Expr(name)
        self._const_ids[key] = e
        return e


class Body:
    """One Python function body being written from one jaxpr."""

    def __init__(self, mod: Module, jaxpr: Any, env: dict[Any, Expr]):
        self.mod = mod
        self.jaxpr = jaxpr
        self.env = dict(env)
        self.stmts: list[Stmt] = []
        self.uses: collections.Counter[Any] = collections.Counter()
        self.users: dict[Any, Any] = {}
        self.producer: dict[Any, Any] = {}
        for eqn in jaxpr.eqns:
            for v in eqn.invars:
                if not is_literal(v):
                    self.uses[v] += 1
                    self.users[v] = eqn
            for v in eqn.outvars:
                self.producer[v] = eqn
        self.outvars = {v for v in jaxpr.outvars if not is_literal(v)}
        # results read by nothing else, returned once: written into the return statement
        returned = collections.Counter(v for v in jaxpr.outvars if not is_literal(v))
        self.return_only = {v for v, n in returned.items() if n == 1 and v not in self.uses}

    # ---- reading values ---------------------------------------------------------------------
    def ref(self, atom: Any) -> Expr:
        """The expression of an operand; a literal becomes a scalar of its exact dtype."""
        if is_literal(atom):
            from hlopipe.decompile._source import typed_scalar

            v = np.asarray(atom.val)
            if v.ndim:
                return self.mod.constant(atom.val)
            return Expr(typed_scalar(v[()], atom.aval.dtype))
        try:
            return self.env[atom]
        except KeyError:
            raise DecompileError(f"internal: value {atom} read before it is defined") from None

    def only_user(self, var: Any) -> Any:
        """The equation that reads ``var`` when it is its one and only reader, else None."""
        if is_literal(var) or var in self.outvars or self.uses[var] != 1:
            return None
        return self.users.get(var)

    def single_use_producer(self, atom: Any, prim: str | tuple[str, ...]) -> Any:
        """The equation of primitive ``prim`` that computes ``atom`` for this one reader."""
        if is_literal(atom):
            return None
        eqn = self.producer.get(atom)
        names = (prim,) if isinstance(prim, str) else prim
        if eqn is None or eqn.primitive.name not in names or self.only_user(atom) is None:
            return None
        return eqn

    # ---- writing values ---------------------------------------------------------------------
    def define(self, var: Any, expr: Expr, hint: str) -> None:
        if is_drop(var):
            return
        user = self.only_user(var)
        if var in self.return_only and len(expr.text) <= INLINE_LIMIT:
            self.env[var] = expr
            return
        if (
            user is not None
            and user.primitive.name not in STRUCTURED
            and user.primitive.name != "stage_boundary"
            and len(expr.text) <= INLINE_LIMIT
            and "\n" not in expr.text
        ):
            self.env[var] = expr
            return
        name = self.mod.fresh(hint)
        text = expr.text
        line = f"{name} = {text}"
        self.stmts.append(Stmt((var,), expr.deps, lambda needed: [line]))
        self.env[var] = Expr(name, ATOM, frozenset({var}))

    def define_many(
        self, outvars: Sequence[Any], head: list[str], call: Expr, hint: str, pattern: str = "flat"
    ) -> None:
        """``a, b = call``; ``head`` are lines written before (nested function definitions).

        ``pattern`` ``"flat"`` unpacks a tuple, ``"single"`` assigns one value.
        """
        names: list[str | None] = []
        for v in outvars:
            if is_drop(v):
                names.append(None)
                continue
            name = self.mod.fresh(hint)
            names.append(name)
            self.env[v] = Expr(name, ATOM, frozenset({v}))
        defines = tuple(v for v in outvars if not is_drop(v))

        def render(needed: set[Any]) -> list[str]:
            shown = [
                n if (n is not None and v in needed) else "_"
                for v, n in zip(outvars, names, strict=True)
            ]
            if pattern == "single":
                target = shown[0]
            else:
                target = ", ".join(shown) + ("," if len(shown) == 1 else "")
                if len(shown) == 1:
                    target = f"({shown[0]},)"
            return [*head, f"{target} = {call.text}"]

        self.stmts.append(Stmt(defines, call.deps, render))

    def statement(self, defines: Sequence[Any], deps: frozenset[Any], render: Any) -> None:
        self.stmts.append(Stmt(tuple(defines), deps, render))

    # ---- finishing ----------------------------------------------------------------------------
    def finish(self, result: list[Expr]) -> tuple[list[str], frozenset[Any]]:
        """The body's lines (without the ``return``) and the outer values it reads."""
        needed: set[Any] = set()
        for e in result:
            needed |= e.deps
        kept: list[Stmt] = []
        for st in reversed(self.stmts):
            if any(v in needed for v in st.defines):
                kept.append(st)
                needed |= st.deps
        kept.reverse()
        lines: list[str] = []
        for st in kept:
            lines += st.render(needed)
        defined = {v for st in self.stmts for v in st.defines} | set(self.jaxpr.invars)
        return lines, frozenset(v for v in needed if v not in defined)


def run_body(body: Body) -> list[Expr]:
    """Emit every equation of ``body``'s jaxpr; returns the expressions of its results."""
    from hlopipe.decompile._prims import emit_equation

    for eqn in body.jaxpr.eqns:
        try:
            emit_equation(body, eqn)
        except Exception as e:  # a refusal or a bug keeps its type; the note says where
            e.add_note(
                f"while decompiling the equation {eqn.primitive.name} "
                f"({', '.join(str(v.aval) for v in eqn.outvars)})"
            )
            raise
    return [body.ref(v) for v in body.jaxpr.outvars]


def function_lines(
    mod: Module,
    name: str,
    closed: Any,
    params: list[str],
    unpack: list[tuple[str, list[Any]]],
    env: dict[Any, Expr],
    returns: Callable[[list[Expr]], str],
    decorator: str | None = None,
) -> tuple[list[str], frozenset[Any]]:
    """``def name(params): <unpack>; <body>; return <returns(results)>``.

    ``unpack`` are ``(param, vars)`` pairs: the parameter holds a tuple of those variables.
    ``env`` maps the jaxpr's other input variables (closed-over values) to outer expressions.
    Returns the lines and the outer values the function reads.
    """
    jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
    consts = closed.consts if hasattr(closed, "consts") else []
    env = dict(env)
    for v, c in zip(jaxpr.constvars, consts, strict=True):
        env[v] = mod.constant(c)
    body = Body(mod, jaxpr, env)
    head: list[str] = []
    for param_name, vars_ in unpack:
        names = []
        for v in vars_:
            if v in body.uses or v in body.outvars:
                n = mod.fresh("c" if param_name == "carry" else "x")
                body.env[v] = Expr(n, ATOM, frozenset({v}))
                names.append(n)
            else:
                names.append("_")
        if not vars_:
            continue
        if len(names) == 1:
            head.append(f"({names[0]},) = {param_name}")
        elif any(n != "_" for n in names):
            head.append(f"{', '.join(names)} = {param_name}")
    results = run_body(body)
    lines, outer = body.finish(results)
    out = [f"{decorator}"] if decorator else []
    out.append(f"def {name}({', '.join(params)}):")
    body_lines = head + lines + [f"return {returns(results)}"]
    out += ["    " + ln for ln in body_lines]
    return out, outer


def tuple_text(items: Sequence[Expr]) -> str:
    texts = [e.text for e in items]
    if len(texts) == 1:
        return f"({texts[0]},)"
    return "(" + ", ".join(texts) + ")"
