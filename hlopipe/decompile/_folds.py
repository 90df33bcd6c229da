"""Folds: the idiomatic ``jax.numpy`` form of an equation (or of a few), where it is exact.

Each fold looks at one equation and, through :meth:`Body.single_use_producer`, at the
equations that computed its operands for it alone; it writes the idiom only when the idiom
computes the same value with no more equations (``x @ w`` is one ``dot_general``; ``x + b``
with numpy broadcasting is at most the one ``broadcast_in_dim`` the program had). A fold that
does not apply returns False and the plain ``lax`` emitter writes the equation.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np
from jax import lax

from hlopipe.decompile._emit import Body, is_literal
from hlopipe.decompile._source import (
    ADD,
    AND,
    ATOM,
    CMP,
    MUL,
    OR,
    UNARY,
    XOR,
    Expr,
    dtype_name,
    param,
    scalar,
    typed_scalar,
)

Fold = Callable[[Body, Any], bool]
FOLDS: dict[str, list[Fold]] = {}


def fold(*names: str, first: bool = False) -> Callable[[Fold], Fold]:
    """Register a fold for these primitives; ``first`` puts it before the general ones."""

    def register(fn: Fold) -> Fold:
        for n in names:
            folds = FOLDS.setdefault(n, [])
            folds.insert(0, fn) if first else folds.append(fn)
        return fn

    return register


def try_fold(body: Body, eqn: Any) -> bool:
    return any(f(body, eqn) for f in FOLDS.get(eqn.primitive.name, ()))


# ---- operands ---------------------------------------------------------------------------------
def _float(dtype: Any) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating)


def literal_value(body: Body, atom: Any) -> Any:
    """The scalar value of a literal, or of a broadcast of one; else None.

    A broadcast constant may have other readers: reading its value instead never adds an
    equation (the broadcast goes when its last reader stops reading it)."""
    if is_literal(atom):
        v = np.asarray(atom.val)
        return v[()] if v.ndim == 0 else None
    b = body.producer.get(atom)
    if (
        b is not None
        and b.primitive.name == "broadcast_in_dim"
        and len(b.invars) == 1
        and is_literal(b.invars[0])
    ):
        v = np.asarray(b.invars[0].val)
        return v[()] if v.ndim == 0 else None
    return None


def py_scalar(value: Any, dtype: Any) -> Expr:
    """A weakly typed Python scalar (takes the dtype of the array it meets); an integer that a
    weak int32 cannot hold (a uint32/int64 bound: JAX refuses it with an OverflowError) is
    written with its dtype."""
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.integer) and not -(2**31) <= int(value) < 2**31:
        return Expr(typed_scalar(value, dt), ATOM)
    text = scalar(value, dtype)
    return Expr(text, UNARY if text.startswith("-") else ATOM)


def _unit_reshape(eqn: Any) -> bool:
    """A reshape that only inserts or removes dimensions of size 1."""
    if eqn.params.get("dimensions") is not None or len(eqn.invars) != 1:
        return False
    a = [n for n in eqn.invars[0].aval.shape if n != 1]
    b = [n for n in eqn.outvars[0].aval.shape if n != 1]
    return a == b


def broadcast_operand(body: Body, atom: Any, shape: tuple[int, ...]) -> Expr | None:
    found = broadcast_source(body, atom, shape)
    return None if found is None else found[0]


def axis_map_below(eqn: Any, src: Any, axis_map: dict[int, int]) -> dict[int, int] | None:
    """One step down a stretch: ``eqn``, a ``broadcast_in_dim`` or size-1 ``reshape``, makes
    ``src``, whose axes not of size 1 run along the output axes ``axis_map`` gives. The same
    map for ``eqn``'s operand; None when ``eqn`` is neither kind."""
    in_shape = eqn.invars[0].aval.shape
    if eqn.primitive.name == "broadcast_in_dim":
        dims = eqn.params["broadcast_dimensions"]
        return {i: axis_map[d] for i, d in enumerate(dims) if in_shape[i] != 1}
    if _unit_reshape(eqn):
        outer_axes = [i for i, n in enumerate(src.aval.shape) if n != 1]
        inner_axes = [i for i, n in enumerate(in_shape) if n != 1]
        return {i: axis_map[o] for i, o in zip(inner_axes, outer_axes, strict=True)}
    return None


def broadcast_source(
    body: Body, atom: Any, shape: tuple[int, ...]
) -> tuple[Expr, tuple[int, ...]] | None:
    """``atom`` (of ``shape``) written as a smaller array that numpy broadcasting stretches to
    the same value: the source of single-use ``broadcast_in_dim`` / size-1 ``reshape`` chains,
    with ``[:, None]`` where a dimension in the middle is new. None if there is no such source.

    A chain is tracked as, for each axis of its source that is not of size 1, the output axis
    it runs along; numpy broadcasting gives the same value when those are right-aligned."""
    best: tuple[Any, tuple[int, ...] | None] | None = None
    src = atom
    axis_map = {i: i for i, n in enumerate(shape) if n != 1}  # src axis -> output axis
    while True:
        eqn = body.single_use_producer(src, ("broadcast_in_dim", "reshape"))
        if eqn is None or len(eqn.invars) != 1 or is_literal(eqn.invars[0]):
            break
        inner = eqn.invars[0]
        in_shape = inner.aval.shape
        new_map = axis_map_below(eqn, src, axis_map)
        if new_map is None or any(v is None for v in new_map.values()):
            break
        src, axis_map = inner, new_map
        lead = len(shape) - len(in_shape)
        if lead >= 0 and all(o == i + lead for i, o in axis_map.items()):
            best = (src, None)
        elif 1 not in in_shape and list(axis_map.values()) == sorted(axis_map.values()):
            best = (src, tuple(axis_map[i] for i in range(len(in_shape))))
    if best is None:
        return None
    found, dims = best
    e = body.ref(found)
    if dims is None:
        return e, tuple(found.aval.shape)
    # new dimensions after the first kept one need an explicit None
    first = dims[0] if dims else len(shape)
    idx = [":" if d in dims else "None" for d in range(first, len(shape))]
    while idx and idx[-1] == ":":
        idx.pop()
    eff = tuple(shape[d] if d in dims else 1 for d in range(first, len(shape)))
    return Expr(f"{e.wrap(ATOM)}[{', '.join(idx)}]", ATOM, e.deps), eff


def elementwise_operands(body: Body, eqn: Any) -> list[Expr] | None:
    """The operands of an elementwise equation as numpy-style operands: literal scalars as
    Python numbers, one broadcast folded away; None when that would change the equations."""
    out_shape = tuple(eqn.outvars[0].aval.shape)
    dtype = eqn.invars[0].aval.dtype
    exprs: list[Expr | None] = []
    for a in eqn.invars:
        if is_literal(a):
            v = literal_value(body, a)
            if v is None:
                return None
            exprs.append(py_scalar(v, a.aval.dtype))
        elif tuple(a.aval.shape) != out_shape:
            return None
        else:
            exprs.append(None)
    if all(e is not None for e in exprs):
        return None  # only literals: keep the typed lax call
    # fold one operand's broadcast (a scalar literal, or an array numpy broadcasting stretches)
    for i in reversed(range(len(eqn.invars))):
        if any(e is not None for e in exprs):
            break  # a Python number already: the other operand keeps the full shape
        a = eqn.invars[i]
        v = literal_value(body, a)
        if v is not None:
            exprs[i] = py_scalar(v, dtype)
            break
        found = broadcast_source(body, a, out_shape)
        if found is not None:
            exprs[i] = found[0]
            # the other operand too, when the two stretch each other to the full shape
            if len(eqn.invars) == 2:
                other = broadcast_source(body, eqn.invars[1 - i], out_shape)
                if other is not None and _broadcast_shapes(found[1], other[1]) == out_shape:
                    exprs[1 - i] = other[0]
            break
    return [e if e is not None else body.ref(a) for e, a in zip(exprs, eqn.invars, strict=True)]


def _broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _deps(es: list[Expr]) -> frozenset[Any]:
    return frozenset().union(*(e.deps for e in es)) if es else frozenset()


def define(body: Body, eqn: Any, expr: Expr, hint: str) -> bool:
    body.define(eqn.outvars[0], expr, hint)
    return True


# ---- elementwise operators --------------------------------------------------------------------
OPERATORS = {
    "add": ("+", ADD),
    "sub": ("-", ADD),
    "mul": ("*", MUL),
    "div": ("/", MUL),
    "and": ("&", AND),
    "or": ("|", OR),
    "xor": ("^", XOR),
    "eq": ("==", CMP),
    "ne": ("!=", CMP),
    "lt": ("<", CMP),
    "le": ("<=", CMP),
    "gt": (">", CMP),
    "ge": (">=", CMP),
}
FUNCTIONS2 = {"max": "jnp.maximum", "min": "jnp.minimum"}


@fold(*OPERATORS, *FUNCTIONS2)
def _binary(body: Body, eqn: Any) -> bool:
    name = eqn.primitive.name
    if any(v is not None for v in eqn.params.values()):
        return False
    dtype = eqn.invars[0].aval.dtype
    if eqn.invars[1].aval.dtype != dtype:
        return False
    is_bool = dtype == np.bool_
    if name in ("and", "or", "xor") and _float(dtype):
        return False
    if name in ("add", "sub", "mul", "div", "max", "min") and is_bool:
        return False
    if name == "div" and not _float(dtype):
        return False  # lax.div truncates; Python's / and // do not
    ops = elementwise_operands(body, eqn)
    if ops is None:
        return False
    x, y = ops
    if name in FUNCTIONS2:
        e = Expr(f"{FUNCTIONS2[name]}({x.text}, {y.text})", ATOM, _deps(ops))
        return define(body, eqn, e, name)
    sym, prec = OPERATORS[name]
    if name in ("eq", "ne") and is_bool and {x.text, y.text} & {"True", "False"}:
        # `m != False` reads as a mistake (ruff's E712); the function is the same equations
        fn = "jnp.equal" if name == "eq" else "jnp.not_equal"
        return define(body, eqn, Expr(f"{fn}({x.text}, {y.text})", ATOM, _deps(ops)), "m")
    if prec == CMP and x.text == y.text:
        if name == "ne" and _float(dtype):  # x != x: the NaN test, as jnp writes it
            return define(body, eqn, Expr(f"jnp.isnan({x.text})", ATOM, x.deps), "nan")
        return False  # a value compared with itself reads as a mistake: keep the lax call
    if prec == CMP and _is_number(x.text) and not _is_number(y.text):
        # `0.5 < x` as `x > 0.5`, the same comparison (ruff's SIM300 reads the other as Yoda)
        x, y, sym = y, x, _MIRRORED.get(sym, sym)
    e = Expr(f"{x.wrap(prec)} {sym} {y.wrap(prec, right=True)}", prec, _deps(ops))
    return define(body, eqn, e, {"add": "h", "sub": "d", "mul": "p", "div": "q"}.get(name, "m"))


_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _is_number(text: str) -> bool:
    """Whether ``text`` is a Python number (or bool) literal, as folded scalars are written."""
    try:
        complex(text.replace("np.", "").replace("complex", ""))
    except ValueError:
        return text in ("True", "False", "np.inf", "-np.inf", "np.nan")
    return True


UNARY_FUNCS = {
    "exp": "jnp.exp",
    "log": "jnp.log",
    "sin": "jnp.sin",
    "cos": "jnp.cos",
    "tan": "jnp.tan",
    "tanh": "jnp.tanh",
    "sqrt": "jnp.sqrt",
    "abs": "jnp.abs",
    "sign": "jnp.sign",
    "floor": "jnp.floor",
    "ceil": "jnp.ceil",
    "log1p": "jnp.log1p",
    "expm1": "jnp.expm1",
    "logistic": "jax.nn.sigmoid",
}


@fold(*UNARY_FUNCS, "neg", "not")
def _unary(body: Body, eqn: Any) -> bool:
    name = eqn.primitive.name
    if any(v is not None for v in eqn.params.values()) or is_literal(eqn.invars[0]):
        return False
    dtype = eqn.invars[0].aval.dtype
    x = body.ref(eqn.invars[0])
    if name == "neg":
        if dtype == np.bool_:
            return False
        return define(body, eqn, Expr(f"-{x.wrap(UNARY)}", UNARY, x.deps), "neg")
    if name == "not":
        if _float(dtype):
            return False
        return define(body, eqn, Expr(f"~{x.wrap(UNARY)}", UNARY, x.deps), "inv")
    if not _float(dtype) and name != "abs":
        return False
    return define(body, eqn, Expr(f"{UNARY_FUNCS[name]}({x.text})", ATOM, x.deps), name)


@fold("max", first=True)
def _relu(body: Body, eqn: Any) -> bool:
    """``max(x, 0)`` is ``jax.nn.relu(x)`` (the same values; the gradient at exactly 0 is
    relu's 0 where max splits it 1/2-1/2, a point where neither is differentiable)."""
    dtype = eqn.outvars[0].aval.dtype
    if not _float(dtype):
        return False
    for i in (0, 1):
        v = literal_value(body, eqn.invars[i])
        other = eqn.invars[1 - i]
        if (
            v is not None
            and float(v) == 0.0
            and not is_literal(other)
            and tuple(other.aval.shape) == tuple(eqn.outvars[0].aval.shape)
        ):
            x = body.ref(other)
            return define(body, eqn, Expr(f"jax.nn.relu({x.text})", ATOM, x.deps), "relu")
    return False


# ---- where ------------------------------------------------------------------------------------
@fold("select_n")
def _where(body: Body, eqn: Any) -> bool:
    if len(eqn.invars) != 3 or eqn.invars[0].aval.dtype != np.bool_:
        return False
    out_shape = tuple(eqn.outvars[0].aval.shape)
    pred, on_false, on_true = eqn.invars
    if is_literal(pred) or tuple(pred.aval.shape) != out_shape:
        return False
    # jnp.where broadcasts its predicate itself
    p = broadcast_operand(body, pred, out_shape) or body.ref(pred)
    dtype = eqn.outvars[0].aval.dtype
    exprs = []
    for a in (on_true, on_false):
        v = literal_value(body, a)
        if v is not None:
            exprs.append(py_scalar(v, dtype))
        elif is_literal(a) or tuple(a.aval.shape) != out_shape:
            return False
        else:
            exprs.append(body.ref(a))
    if all(not e.deps for e in exprs):
        return False  # two Python numbers would make a weakly typed result
    e = Expr(f"jnp.where({p.text}, {exprs[0].text}, {exprs[1].text})", ATOM, _deps([p, *exprs]))
    return define(body, eqn, e, "w")


# ---- shapes -----------------------------------------------------------------------------------
@fold("reshape")
def _reshape(body: Body, eqn: Any) -> bool:
    if eqn.params.get("dimensions") is not None or len(eqn.invars) != 1:
        return False
    src = eqn.invars[0]
    if is_literal(src):
        return False
    # a chain of reshapes is one reshape (or none, when it ends where it started)
    while (inner := body.single_use_producer(src, "reshape")) is not None:
        if inner.params.get("dimensions") is not None or is_literal(inner.invars[0]):
            break
        src = inner.invars[0]
    x = body.ref(src)
    if tuple(src.aval.shape) == tuple(eqn.params["new_sizes"]):
        return define(body, eqn, x, "r")
    shape = param(tuple(eqn.params["new_sizes"]))
    return define(body, eqn, Expr(f"{x.wrap(ATOM)}.reshape({shape})", ATOM, x.deps), "r")


@fold("transpose")
def _transpose(body: Body, eqn: Any) -> bool:
    src = eqn.invars[0]
    if is_literal(src):
        return False
    perm = tuple(eqn.params["permutation"])
    # transpose of a transpose is one transpose (or none)
    while (inner := body.single_use_producer(src, "transpose")) is not None:
        if is_literal(inner.invars[0]):
            break
        first = tuple(inner.params["permutation"])
        perm = tuple(first[p] for p in perm)
        src = inner.invars[0]
    x = body.ref(src)
    if perm == tuple(range(len(perm))):
        return define(body, eqn, x, "t")
    if perm == (1, 0):
        return define(body, eqn, Expr(f"{x.wrap(ATOM)}.T", ATOM, x.deps), "t")
    e = Expr(f"{x.wrap(ATOM)}.transpose({param(perm)})", ATOM, x.deps)
    return define(body, eqn, e, "t")


@fold("convert_element_type")
def _astype(body: Body, eqn: Any) -> bool:
    src = eqn.invars[0]
    new = np.dtype(eqn.params["new_dtype"])
    if is_literal(src) or new == np.bool_ or src.aval.dtype == np.bool_:
        return False
    if np.issubdtype(src.aval.dtype, np.complexfloating) or eqn.params.get("weak_type"):
        return False
    x = body.ref(src)
    e = Expr(f"{x.wrap(ATOM)}.astype({dtype_name(new)})", ATOM, x.deps)
    return define(body, eqn, e, "cast")


@fold("broadcast_in_dim")
def _broadcast(body: Body, eqn: Any) -> bool:
    if len(eqn.invars) != 1:
        return False
    src = eqn.invars[0]
    shape = tuple(eqn.params["shape"])
    dtype = eqn.outvars[0].aval.dtype
    if is_literal(src):
        v = np.asarray(src.val)
        if v.ndim:
            return False
        text = f"jnp.full({param(shape)}, {scalar(v[()], dtype)}, {dtype_name(dtype)})"
        return define(body, eqn, Expr(text, ATOM), "full")
    dims = tuple(eqn.params["broadcast_dimensions"])
    if dims != tuple(range(len(shape) - len(dims), len(shape))):
        return False
    x = body.ref(src)
    return define(body, eqn, Expr(f"jnp.broadcast_to({x.text}, {param(shape)})", ATOM, x.deps), "b")


# ---- contractions -----------------------------------------------------------------------------
@fold("dot_general")
def _dot(body: Body, eqn: Any) -> bool:
    p = eqn.params
    if any(pr not in (None, lax.Precision.DEFAULT) for pr in (p.get("precision") or ())):
        return False
    x, y = eqn.invars
    if is_literal(x) or is_literal(y):
        return False
    dtypes = {x.aval.dtype, y.aval.dtype, eqn.outvars[0].aval.dtype}
    if len(dtypes) != 1:
        return False
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    xn, yn = x.aval.ndim, y.aval.ndim
    xe, ye = body.ref(x), body.ref(y)
    deps = xe.deps | ye.deps
    k = len(lb)
    matmul = (
        len(lc) == 1
        and lb == rb == tuple(range(k))
        and lc == (xn - 1,)
        and (
            (k == 0 and yn in (1, 2) and rc == (0,)) or (k > 0 and xn == yn == k + 2 and rc == (k,))
        )
    )
    if matmul:
        e = Expr(f"{xe.wrap(MUL)} @ {ye.wrap(MUL, right=True)}", MUL, deps)
        return define(body, eqn, e, "mm")
    # einsum in dot_general's own output order: batch, lhs free, rhs free
    letters = iter(string.ascii_lowercase)
    xs: list[str] = [""] * xn
    ys: list[str] = [""] * yn
    partner = dict(zip(lb + lc, rb + rc, strict=True))
    for i in range(xn):  # letters in the lhs's axis order, shared ones given to both
        xs[i] = next(letters)
        if i in partner:
            ys[partner[i]] = xs[i]
    for i in range(yn):
        ys[i] = ys[i] or next(letters)
    out = [xs[a] for a in lb] + [xs[i] for i in range(xn) if i not in lb and i not in lc]
    out += [ys[i] for i in range(yn) if i not in rb and i not in rc]
    spec = f"{''.join(xs)},{''.join(ys)}->{''.join(out)}"
    e = Expr(f'jnp.einsum("{spec}", {xe.text}, {ye.text})', ATOM, deps)
    return define(body, eqn, e, "mm")


# ---- reductions -------------------------------------------------------------------------------
_REDUCE_DTYPES = (np.float32, np.float64, np.int32, np.int64)


def _axis_text(axes: tuple[int, ...], ndim: int) -> str:
    if tuple(sorted(axes)) == tuple(range(ndim)):
        return ""
    if len(axes) == 1:
        return f"axis={axes[0] - ndim if axes[0] == ndim - 1 else axes[0]}"
    return f"axis={param(tuple(axes))}"


def reduction(body: Body, atom: Any, kinds: tuple[str, ...]) -> tuple[Any, bool] | None:
    """The reduction (of one of ``kinds``) that computes ``atom`` for it alone, and whether
    through a keepdims reshape/broadcast (reduced axes kept as size 1); else None."""
    if is_literal(atom):
        return None
    names = tuple(f"reduce_{k}" for k in kinds)
    r = body.single_use_producer(atom, names)
    if r is not None:
        return r, False
    k = body.single_use_producer(atom, ("broadcast_in_dim", "reshape"))
    if k is None or len(k.invars) != 1:
        return None
    r = body.single_use_producer(k.invars[0], names)
    if r is None or is_literal(r.invars[0]) or not keeps_dims(k, r):
        return None
    return r, True


def _reduce_text(body: Body, r: Any, method: str, keepdims: bool) -> Expr:
    src = r.invars[0]
    x = body.ref(src)
    args = _axis_text(tuple(r.params["axes"]), src.aval.ndim)
    if keepdims:
        args = f"{args}, keepdims=True" if args else "keepdims=True"
    return Expr(f"{x.wrap(ATOM)}.{method}({args})", ATOM, x.deps)


def _reducible(r: Any) -> bool:
    src = r.invars[0]
    return (
        not is_literal(src)
        and np.dtype(src.aval.dtype).type in _REDUCE_DTYPES
        and r.params.get("out_sharding") is None
    )


@fold("broadcast_in_dim", "reshape", first=True)
def _keepdims(body: Body, eqn: Any) -> bool:
    """``reduce(x)`` reshaped back to x's rank is ``x.sum(axis, keepdims=True)``."""
    if len(eqn.invars) != 1 or is_literal(eqn.invars[0]):
        return False
    r = body.single_use_producer(eqn.invars[0], ("reduce_sum", "reduce_max", "reduce_min"))
    if r is None or not _reducible(r):
        return False
    if not keeps_dims(eqn, r):
        return False
    kind = r.primitive.name.removeprefix("reduce_")
    return define(body, eqn, _reduce_text(body, r, kind, True), kind)


def keeps_dims(k: Any, r: Any) -> bool:
    """Whether ``k`` (a broadcast or reshape of reduction ``r``) only puts back the reduced
    axes as size 1."""
    axes = tuple(r.params["axes"])
    src_shape = r.invars[0].aval.shape
    kept = tuple(1 if i in axes else n for i, n in enumerate(src_shape))
    if tuple(k.outvars[0].aval.shape) != kept:
        return False
    if k.primitive.name == "broadcast_in_dim":
        return tuple(k.params["broadcast_dimensions"]) == tuple(
            i for i in range(len(src_shape)) if i not in axes
        )
    return k.params.get("dimensions") is None


@fold("reduce_sum", "reduce_max", "reduce_min")
def _reduce(body: Body, eqn: Any) -> bool:
    src = eqn.invars[0]
    if is_literal(src) or np.dtype(src.aval.dtype).type not in _REDUCE_DTYPES:
        return False
    if eqn.params.get("out_sharding") is not None:
        return False
    kind = eqn.primitive.name.removeprefix("reduce_")
    x = body.ref(src)
    axes = _axis_text(tuple(eqn.params["axes"]), src.aval.ndim)
    return define(body, eqn, Expr(f"{x.wrap(ATOM)}.{kind}({axes})", ATOM, x.deps), kind)


@fold("div", first=True)
def _mean(body: Body, eqn: Any) -> bool:
    """``reduce_sum(x) / n`` with n the number of reduced elements is ``x.mean()``."""
    s, n = eqn.invars
    dtype = eqn.outvars[0].aval.dtype
    if np.dtype(dtype).type not in (np.float32, np.float64):
        return False
    found = reduction(body, s, ("sum",))
    v = literal_value(body, n)
    if found is None or v is None or not _reducible(found[0]):
        return False
    if tuple(n.aval.shape) not in ((), tuple(eqn.outvars[0].aval.shape)):
        return False
    r, keepdims = found
    src = r.invars[0]
    count = math.prod(src.aval.shape[a] for a in r.params["axes"])
    if float(v) != float(count):
        return False
    return define(body, eqn, _reduce_text(body, r, "mean", keepdims), "mean")


@fold("slice")
def _slice(body: Body, eqn: Any) -> bool:
    """``lax.slice`` as basic indexing: ``x[:, 8:16]``."""
    src = eqn.invars[0]
    if is_literal(src):
        return False
    p = eqn.params
    strides = p.get("strides") or (1,) * src.aval.ndim
    parts = []
    for n, a, b, s in zip(
        src.aval.shape, p["start_indices"], p["limit_indices"], strides, strict=True
    ):
        text = (f"{a}" if a else "") + ":" + (f"{b}" if b != n else "")
        if s != 1:
            text += f":{s}"
        parts.append(text)
    while parts and parts[-1] == ":":
        parts.pop()
    x = body.ref(src)
    if not parts:
        return define(body, eqn, x, "sl")
    return define(body, eqn, Expr(f"{x.wrap(ATOM)}[{', '.join(parts)}]", ATOM, x.deps), "sl")


@fold("select_n", first=True)
def _boolean_select(body: Body, eqn: Any) -> bool:
    """``where(p, True, False)`` is ``p``; ``where(p, False, True)`` is ``~p``."""
    if len(eqn.invars) != 3 or eqn.outvars[0].aval.dtype != np.bool_:
        return False
    pred, on_false, on_true = eqn.invars
    if is_literal(pred) or pred.aval.dtype != np.bool_:
        return False
    if tuple(pred.aval.shape) != tuple(eqn.outvars[0].aval.shape):
        return False
    f, t = literal_value(body, on_false), literal_value(body, on_true)
    if f is None or t is None or bool(f) == bool(t):
        return False
    p = body.ref(pred)
    if bool(t):
        return define(body, eqn, p, "m")
    return define(body, eqn, Expr(f"~{p.wrap(UNARY)}", UNARY, p.deps), "m")


@fold("add", "sub", "or", "xor", first=True)
def _integer_identity(body: Body, eqn: Any) -> bool:
    """``n + 0``, ``n - 0`` (integers), ``b | False``, ``b ^ False``: the operand itself."""
    dtype = eqn.outvars[0].aval.dtype
    if _float(dtype) or np.issubdtype(np.dtype(dtype), np.complexfloating):
        return False  # x + 0.0 turns -0.0 into 0.0
    x, y = eqn.invars
    candidates = [(x, y), (y, x)] if eqn.primitive.name != "sub" else [(x, y)]
    for keep, zero in candidates:
        v = literal_value(body, zero)
        if (
            v is not None
            and not is_literal(keep)
            and int(v) == 0
            and keep.aval.dtype == dtype
            and tuple(keep.aval.shape) == tuple(eqn.outvars[0].aval.shape)
        ):
            return define(body, eqn, body.ref(keep), "n")
    return False
