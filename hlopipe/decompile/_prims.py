"""One emitter per jax primitive: the plain ``jax.lax`` call that binds exactly that equation.

Every emitter takes ``(body, eqn)`` and defines the equation's results in ``body``. The
``jnp`` style first offers the equation to :mod:`hlopipe.decompile._folds`, which writes the
idiomatic form where it is exact; what no fold takes comes here. A primitive without an
emitter but with a ``jax.lax.<name>_p`` is written as that primitive's ``bind`` (exact, if not
pretty); anything else is refused with the primitive's name.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np
from jax import lax

from hlopipe.decompile._emit import (
    Body,
    function_lines,
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


# ---- elementwise ------------------------------------------------------------------------------
UNARY = {
    "neg": "neg",
    "sign": "sign",
    "floor": "floor",
    "ceil": "ceil",
    "is_finite": "is_finite",
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log1p": "log1p",
    "expm1": "expm1",
    "tanh": "tanh",
    "logistic": "logistic",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "cbrt": "cbrt",
    "abs": "abs",
    "real": "real",
    "imag": "imag",
    "erf": "erf",
    "erfc": "erfc",
    "erf_inv": "erf_inv",
    "lgamma": "lgamma",
    "digamma": "digamma",
    "bessel_i0e": "bessel_i0e",
    "bessel_i1e": "bessel_i1e",
    "population_count": "population_count",
    "clz": "clz",
    "square": "square",
    "not": "bitwise_not",
}
UNARY_PARAMS = ("accuracy",)

BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "rem": "rem",
    "pow": "pow",
    "max": "max",
    "min": "min",
    "atan2": "atan2",
    "nextafter": "nextafter",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "eq": "eq",
    "ne": "ne",
    "lt": "lt",
    "le": "le",
    "gt": "gt",
    "ge": "ge",
    "shift_left": "shift_left",
    "shift_right_arithmetic": "shift_right_arithmetic",
    "shift_right_logical": "shift_right_logical",
    "complex": "complex",
    "igamma": "igamma",
    "igammac": "igammac",
    "igamma_grad_a": "igamma_grad_a",
    "random_gamma_grad": "random_gamma_grad",
    "zeta": "zeta",
    "polygamma": "polygamma",
}


def _unary(body: Body, eqn: Any) -> None:
    extra = {k: v for k, v in eqn.params.items() if v is not None}
    if set(extra) - set(UNARY_PARAMS):
        return _bind(body, eqn)
    define1(body, eqn, call(f"lax.{UNARY[eqn.primitive.name]}", operands(body, eqn), **extra))


def _binary(body: Body, eqn: Any) -> None:
    if any(v is not None for v in eqn.params.values()):
        return _bind(body, eqn)
    define1(body, eqn, call(f"lax.{BINARY[eqn.primitive.name]}", operands(body, eqn)))


for _n in UNARY:
    EMITTERS[_n] = _unary
for _n in BINARY:
    EMITTERS[_n] = _binary


@emitter("round")
def _round(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.round", operands(body, eqn), **_kwargs(eqn, "rounding_method")))


@emitter("integer_pow")
def _integer_pow(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.integer_pow", operands(body, eqn), param(eqn.params["y"])))


@emitter("convert_element_type")
def _convert(body: Body, eqn: Any) -> None:
    define1(
        body,
        eqn,
        call("lax.convert_element_type", operands(body, eqn), param(eqn.params["new_dtype"])),
        "cast",
    )


@emitter("bitcast_convert_type")
def _bitcast(body: Body, eqn: Any) -> None:
    define1(
        body,
        eqn,
        call("lax.bitcast_convert_type", operands(body, eqn), param(eqn.params["new_dtype"])),
        "bits",
    )


@emitter("reduce_precision")
def _reduce_precision(body: Body, eqn: Any) -> None:
    p = eqn.params
    define1(
        body,
        eqn,
        call(
            "lax.reduce_precision",
            operands(body, eqn),
            param(p["exponent_bits"]),
            param(p["mantissa_bits"]),
        ),
    )


@emitter("select_n")
def _select_n(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.select_n", operands(body, eqn)), "sel")


@emitter("clamp")
def _clamp(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.clamp", operands(body, eqn)))


@emitter(
    "copy",
    "copy_p",
    "sharding_constraint",
    "device_put",
    "pvary",
    "optimization_barrier",
    # rehydration's guard on a dynamic loop's results (it names the loop when grad fails);
    # the source's lax.while_loop refuses reverse mode on its own
    "hlopipe_dynamic_loop",
    "hlopipe_dynamic_loop_tangent",
)
def _identity(body: Body, eqn: Any) -> None:
    name = eqn.primitive.name
    if name == "optimization_barrier":
        ops = operands(body, eqn)
        e = Expr(f"lax.optimization_barrier({tuple_text(ops)})", ATOM, _deps(ops))
        return body.define_many(eqn.outvars, [], e, "barrier")
    if name == "device_put" and len(eqn.invars) != 1:
        return _bind(body, eqn)
    # copies and sharding hints: the value itself (sharding is not part of the source)
    for v, o in zip(eqn.outvars, eqn.invars, strict=True):
        if not is_drop(v):
            body.define(v, body.ref(o), "x")


def _deps(es: list[Expr]) -> frozenset[Any]:
    return frozenset().union(*(e.deps for e in es)) if es else frozenset()


# ---- shapes -----------------------------------------------------------------------------------
@emitter("broadcast_in_dim")
def _broadcast_in_dim(body: Body, eqn: Any) -> None:
    p = eqn.params
    if len(eqn.invars) != 1:
        return _bind(body, eqn)
    define1(
        body,
        eqn,
        call(
            "lax.broadcast_in_dim",
            operands(body, eqn),
            param(tuple(p["shape"])),
            param(tuple(p["broadcast_dimensions"])),
        ),
        "b",
    )


@emitter("reshape")
def _reshape(body: Body, eqn: Any) -> None:
    p = eqn.params
    if len(eqn.invars) != 1:
        return _bind(body, eqn)
    extra = [param(tuple(p["new_sizes"]))]
    if p.get("dimensions") is not None:
        extra.append(param(tuple(p["dimensions"])))
    define1(body, eqn, call("lax.reshape", operands(body, eqn), *extra))


@emitter("transpose")
def _transpose(body: Body, eqn: Any) -> None:
    perm = param(tuple(eqn.params["permutation"]))
    define1(body, eqn, call("lax.transpose", operands(body, eqn), perm), "t")


@emitter("squeeze")
def _squeeze(body: Body, eqn: Any) -> None:
    dims = param(tuple(eqn.params["dimensions"]))
    define1(body, eqn, call("lax.squeeze", operands(body, eqn), dims))


@emitter("rev")
def _rev(body: Body, eqn: Any) -> None:
    dims = param(tuple(eqn.params["dimensions"]))
    define1(body, eqn, call("lax.rev", operands(body, eqn), dims))


@emitter("iota")
def _iota(body: Body, eqn: Any) -> None:
    p = eqn.params
    shape = tuple(p["shape"])
    if len(shape) == 1:
        e = call("lax.iota", [], param(p["dtype"]), param(shape[0]))
    else:
        e = call("lax.broadcasted_iota", [], param(p["dtype"]), param(shape), param(p["dimension"]))
    define1(body, eqn, e)


@emitter("concatenate")
def _concatenate(body: Body, eqn: Any) -> None:
    ops = operands(body, eqn)
    e = Expr(
        f"lax.concatenate([{', '.join(o.text for o in ops)}], {eqn.params['dimension']})",
        ATOM,
        _deps(ops),
    )
    define1(body, eqn, e, "cat")


@emitter("pad")
def _pad(body: Body, eqn: Any) -> None:
    define1(
        body, eqn, call("lax.pad", operands(body, eqn), param(tuple(eqn.params["padding_config"])))
    )


@emitter("slice")
def _slice(body: Body, eqn: Any) -> None:
    p = eqn.params
    extra = [param(tuple(p["start_indices"])), param(tuple(p["limit_indices"]))]
    if p.get("strides") is not None:
        extra.append(param(tuple(p["strides"])))
    define1(body, eqn, call("lax.slice", operands(body, eqn), *extra), "sl")


@emitter("dynamic_slice")
def _dynamic_slice(body: Body, eqn: Any) -> None:
    x, *idx = operands(body, eqn)
    e = Expr(
        f"lax.dynamic_slice({x.text}, [{', '.join(i.text for i in idx)}], "
        f"{param(tuple(eqn.params['slice_sizes']))}, allow_negative_indices=False)",
        ATOM,
        _deps([x, *idx]),
    )
    define1(body, eqn, e, "sl")


@emitter("dynamic_update_slice")
def _dynamic_update_slice(body: Body, eqn: Any) -> None:
    x, u, *idx = operands(body, eqn)
    e = Expr(
        f"lax.dynamic_update_slice({x.text}, {u.text}, [{', '.join(i.text for i in idx)}], "
        "allow_negative_indices=False)",
        ATOM,
        _deps([x, u, *idx]),
    )
    define1(body, eqn, e, "upd")


@emitter("split")
def _split(body: Body, eqn: Any) -> None:
    p = eqn.params
    e = call("lax.split", operands(body, eqn), param(tuple(p["sizes"])), param(p["axis"]))
    body.define_many(eqn.outvars, [], e, "part")


# ---- contractions -----------------------------------------------------------------------------
@emitter("dot_general")
def _dot_general(body: Body, eqn: Any) -> None:
    p = eqn.params
    kwargs = _kwargs(eqn, "precision", "preferred_element_type")
    if all(pr in (None, lax.Precision.DEFAULT) for pr in kwargs.get("precision") or ()):
        kwargs.pop("precision", None)  # DEFAULT is what no precision means
    dtypes = {v.aval.dtype for v in eqn.invars} | {eqn.outvars[0].aval.dtype}
    if kwargs.get("preferred_element_type") is not None and len(dtypes) == 1:
        kwargs.pop("preferred_element_type")  # the operands' own type
    e = call("lax.dot_general", operands(body, eqn), param(p["dimension_numbers"]), **kwargs)
    define1(body, eqn, e, "dot")


@emitter("conv_general_dilated")
def _conv(body: Body, eqn: Any) -> None:
    p = eqn.params
    kw = {
        k: p[k]
        for k in (
            "window_strides",
            "padding",
            "lhs_dilation",
            "rhs_dilation",
            "dimension_numbers",
            "feature_group_count",
            "batch_group_count",
            "precision",
            "preferred_element_type",
        )
        if p.get(k) is not None
    }
    define1(body, eqn, call("lax.conv_general_dilated", operands(body, eqn), **kw), "conv")


# ---- reductions -------------------------------------------------------------------------------
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


# ---- gather / scatter / sort ------------------------------------------------------------------
@emitter("gather")
def _gather(body: Body, eqn: Any) -> None:
    p = eqn.params
    kw = {
        "dimension_numbers": p["dimension_numbers"],
        "slice_sizes": tuple(p["slice_sizes"]),
        "indices_are_sorted": p["indices_are_sorted"],
        "unique_indices": p["unique_indices"],
        "mode": p["mode"],
    }
    if p.get("fill_value") is not None:
        kw["fill_value"] = p["fill_value"]
    define1(body, eqn, call("lax.gather", operands(body, eqn), **kw), "g")


@emitter("scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max", "scatter-sub")
def _scatter(body: Body, eqn: Any) -> None:
    p = eqn.params
    name = eqn.primitive.name.replace("-", "_")
    if name == "scatter" and p.get("update_jaxpr") is not None:
        raise DecompileError("a scatter with its own combining function has no lax call")
    kw = {
        "indices_are_sorted": p["indices_are_sorted"],
        "unique_indices": p["unique_indices"],
        "mode": p["mode"],
    }
    e = call(f"lax.{name}", operands(body, eqn), param(p["dimension_numbers"]), **kw)
    define1(body, eqn, e, "sc")


@emitter("sort")
def _sort(body: Body, eqn: Any) -> None:
    p = eqn.params
    ops = operands(body, eqn)
    kw = {"dimension": p["dimension"], "is_stable": p["is_stable"], "num_keys": p["num_keys"]}
    if len(ops) == 1:
        return define1(body, eqn, call("lax.sort", ops, **kw), "sorted")
    e = call("lax.sort", [Expr(tuple_text(ops), ATOM, _deps(ops))], **kw)
    body.define_many(eqn.outvars, [], e, "sorted")


@emitter("top_k")
def _top_k(body: Body, eqn: Any) -> None:
    e = call("lax.top_k", operands(body, eqn), param(eqn.params["k"]))
    body.define_many(eqn.outvars, [], e, "top")


@emitter("rng_bit_generator")
def _rng_bit_generator(body: Body, eqn: Any) -> None:
    p = eqn.params
    e = call(
        "lax.rng_bit_generator",
        operands(body, eqn),
        param(tuple(p["shape"])),
        dtype=p["dtype"],
        algorithm=p["algorithm"],
    )
    body.define_many(eqn.outvars, [], e, "rng")


# ---- the stage marker -------------------------------------------------------------------------
@emitter("stage_boundary")
def _stage_boundary(body: Body, eqn: Any) -> None:
    ops = operands(body, eqn)
    name = eqn.params.get("name", "")
    extra = [f"name={name!r}"] if name else []
    e = call("hlopipe.stage_boundary", ops, *extra)
    body.mod.notes.append("hlopipe.stage_boundary marks the pipeline stages")
    if len(ops) == 1:
        body.define_many(eqn.outvars, [], e, "h", pattern="single")
    else:
        body.define_many(eqn.outvars, [], e, "h")


# ---- control flow -----------------------------------------------------------------------------
def _typed_returns(results: list[Expr]) -> list[Expr]:
    return results


def _pack(items: list[Expr]) -> str:
    return tuple_text(items) if items else "()"


@emitter("scan")
def _scan(body: Body, eqn: Any) -> None:
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    closed = p["jaxpr"]
    inner = closed.jaxpr
    consts, init, xs = eqn.invars[:nc], eqn.invars[nc : nc + nk], eqn.invars[nc + nk :]
    env = {iv: body.ref(ov) for iv, ov in zip(inner.invars[:nc], consts, strict=True)}
    carry_vars = inner.invars[nc : nc + nk]
    x_vars = inner.invars[nc + nk :]
    n_ys = len(inner.outvars) - nk
    if body.mod.style == "jnp" and not xs and not n_ys and not p["reverse"]:
        k = _loop_counter(eqn)
        if k is not None:
            return _fori_loop(body, eqn, k, env)
    fname = body.mod.fresh("step")

    def returns(results: list[Expr]) -> str:
        carry = _pack(results[:nk])
        ys = _pack(results[nk:]) if n_ys else "None"
        return f"{carry}, {ys}"

    lines, outer = function_lines(
        body.mod,
        fname,
        closed,
        ["carry", "xs" if x_vars else "_"],
        [("carry", list(carry_vars)), ("xs", list(x_vars))],
        env,
        returns,
    )
    init_e = [body.ref(v) for v in init]
    xs_e = [body.ref(v) for v in xs]
    kw = [f"length={p['length']}"] if not xs else []
    if p["reverse"]:
        kw.append("reverse=True")
    if p["unroll"] not in (1, False):
        kw.append(f"unroll={param(p['unroll'])}")
    args = [fname, _pack(init_e), _pack(xs_e) if xs else "None", *kw]
    deps = outer | _deps(init_e) | _deps(xs_e)
    text = f"lax.scan({', '.join(args)})"
    carry_out, ys_out = eqn.outvars[:nk], eqn.outvars[nk:]
    _nested_assign(body, eqn, lines, text, deps, [carry_out, ys_out])


def _loop_counter(eqn: Any) -> int | None:
    """The carry of a scan that counts up by one from a constant (a ``fori_loop`` index); of
    several, the first the body reads for anything else."""
    counters = _counters(eqn)
    inner = eqn.params["jaxpr"].jaxpr
    nc = eqn.params["num_consts"]
    reads = collections.Counter(v for e in inner.eqns for v in e.invars if not is_literal(v))
    for j in counters:
        if reads[inner.invars[nc + j]] > 1:
            return j
    return counters[0] if counters else None


def _counters(eqn: Any) -> list[int]:
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    inner = p["jaxpr"].jaxpr
    producers = {o: e for e in inner.eqns for o in e.outvars}
    found = []
    for j in range(nk):
        init, var = eqn.invars[nc + j], inner.invars[nc + j]
        if not is_literal(init) or np.asarray(init.val).ndim:
            continue
        if not np.issubdtype(np.dtype(init.aval.dtype), np.integer):
            continue
        e = producers.get(inner.outvars[j])
        if e is None or e.primitive.name != "add":
            continue
        a, b = e.invars
        if (a is var and _is_int_literal(b, 1)) or (b is var and _is_int_literal(a, 1)):
            found.append(j)
    return found


def _fori_loop(body: Body, eqn: Any, k: int, env: dict[Any, Expr]) -> None:
    """``lax.fori_loop(lo, lo + length, fn, carry)`` for a scan counting carry ``k``."""
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    closed = p["jaxpr"]
    inner = closed.jaxpr
    init = eqn.invars[nc : nc + nk]
    lo = int(init[k].val)
    hi = lo + int(p["length"])
    dtype = init[k].aval.dtype
    if np.dtype(dtype) == np.int32:
        lo_t, hi_t = str(lo), str(hi)
    else:
        lo_t, hi_t = typed_scalar(lo, dtype), typed_scalar(hi, dtype)
    # other counters nothing reads (rehydration's own trip counter next to the program's)
    reads = collections.Counter(v for e in inner.eqns for v in e.invars if not is_literal(v))
    skip = {k} | {
        j
        for j in _counters(eqn)
        if reads[inner.invars[nc + j]] == 1
        and inner.outvars.count(inner.outvars[j]) == 1
        and (is_drop(eqn.outvars[j]) or body.uses[eqn.outvars[j]] == 0)
        and eqn.outvars[j] not in body.outvars
    }
    carry_vars = [v for j, v in enumerate(inner.invars[nc : nc + nk]) if j not in skip]
    index = body.mod.reserve("i")
    env = dict(env)
    env[inner.invars[nc + k]] = Expr(index, ATOM, frozenset({inner.invars[nc + k]}))
    for j in skip - {k}:  # only their own increments read them, and those are dropped
        env[inner.invars[nc + j]] = Expr(
            "<dropped counter>", ATOM, frozenset({inner.invars[nc + j]})
        )
    fname = body.mod.fresh("loop_body")
    lines, outer = function_lines(
        body.mod,
        fname,
        closed,
        [index, "carry"],
        [("carry", carry_vars)],
        env,
        lambda r: _pack([e for j, e in enumerate(r[:nk]) if j not in skip]),
    )
    outer = frozenset(v for v in outer if v is not inner.invars[nc + k])
    inits = [body.ref(v) for j, v in enumerate(init) if j not in skip]
    text = f"lax.fori_loop({lo_t}, {hi_t}, {fname}, {_pack(inits)})"
    outs = [v for j, v in enumerate(eqn.outvars[:nk]) if j not in skip]
    counter = eqn.outvars[k]
    if not is_drop(counter):
        body.env[counter] = Expr(typed_scalar(hi, dtype))
    names: dict[Any, str] = {}
    for v in outs:
        if not is_drop(v):
            names[v] = body.mod.fresh("out")
            body.env[v] = Expr(names[v], ATOM, frozenset({v}))

    def render(needed: set[Any]) -> list[str]:
        shown = [names[v] if (not is_drop(v) and v in needed) else "_" for v in outs]
        target = "_" if all(s == "_" for s in shown) else _target(shown)
        return [*lines, f"{target} = {text}"]

    body.statement(list(names), outer | _deps(inits), render)


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


@emitter("while")
def _while(body: Body, eqn: Any) -> None:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cj, bj = p["cond_jaxpr"], p["body_jaxpr"]
    cconsts, bconsts, init = eqn.invars[:cn], eqn.invars[cn : cn + bn], eqn.invars[cn + bn :]
    cenv = {iv: body.ref(ov) for iv, ov in zip(cj.jaxpr.invars[:cn], cconsts, strict=True)}
    benv = {iv: body.ref(ov) for iv, ov in zip(bj.jaxpr.invars[:bn], bconsts, strict=True)}
    cname, bname = body.mod.fresh("cond"), body.mod.fresh("body")
    clines, couter = function_lines(
        body.mod,
        cname,
        cj,
        ["carry"],
        [("carry", list(cj.jaxpr.invars[cn:]))],
        cenv,
        lambda r: r[0].text,
    )
    blines, bouter = function_lines(
        body.mod,
        bname,
        bj,
        ["carry"],
        [("carry", list(bj.jaxpr.invars[bn:]))],
        benv,
        _pack,
    )
    init_e = [body.ref(v) for v in init]
    text = f"lax.while_loop({cname}, {bname}, {_pack(init_e)})"
    _nested_assign(body, eqn, clines + blines, text, couter | bouter | _deps(init_e), [eqn.outvars])


@emitter("cond")
def _cond(body: Body, eqn: Any) -> None:
    branches = eqn.params["branches"]
    index, *ops = eqn.invars
    ops_e = [body.ref(v) for v in ops]
    head: list[str] = []
    deps = _deps(ops_e)
    names = []
    for i, br in enumerate(branches):
        bname = body.mod.fresh(f"branch{i}_")
        params = [body.mod.fresh("x") for _ in br.jaxpr.invars]
        env = {
            v: Expr(n, ATOM, frozenset({v})) for v, n in zip(br.jaxpr.invars, params, strict=True)
        }
        lines, outer = function_lines(body.mod, bname, br, params, [], env, _pack)
        head += lines
        deps |= outer
        names.append(bname)
    # lax.switch clamps its index and lax.cond converts its predicate: when the program did
    # exactly that just before, read past it so the equation count stays the same.
    clamp = body.single_use_producer(index, "clamp")
    conv = body.single_use_producer(index, "convert_element_type")
    n = len(branches)
    if (
        conv is not None
        and n == 2
        and conv.invars[0].aval.dtype == np.bool_
        and not is_literal(conv.invars[0])
    ):
        pred = body.ref(conv.invars[0])
        args = [pred.text, names[1], names[0], *(o.text for o in ops_e)]
        text = f"lax.cond({', '.join(args)})"
        deps |= pred.deps
    else:
        if (
            clamp is not None
            and _is_int_literal(clamp.invars[0], 0)
            and _is_int_literal(clamp.invars[2], n - 1)
        ):
            idx = body.ref(clamp.invars[1])
        else:
            idx = body.ref(index)
        args = [idx.text, "[" + ", ".join(names) + "]", *(o.text for o in ops_e)]
        text = f"lax.switch({', '.join(args)})"
        deps |= idx.deps
    _nested_assign(body, eqn, head, text, deps, [eqn.outvars])


def _is_int_literal(atom: Any, value: int) -> bool:
    return is_literal(atom) and np.asarray(atom.val).ndim == 0 and int(atom.val) == value


@emitter("pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call")
def _call(body: Body, eqn: Any) -> None:
    p = eqn.params
    closed = p.get("jaxpr") or p.get("call_jaxpr") or p.get("fun_jaxpr")
    if closed is None:
        raise DecompileError(f"{eqn.primitive.name} without a jaxpr")
    key = id(closed)
    mod = body.mod
    fname = mod._fn_ids.get(key)
    if fname is None:
        fname = mod.fresh(p.get("name") or "fn")
        jaxpr = closed.jaxpr if hasattr(closed, "jaxpr") else closed
        params = [mod.fresh("x") for _ in jaxpr.invars]
        env = {v: Expr(n, ATOM, frozenset({v})) for v, n in zip(jaxpr.invars, params, strict=True)}
        single = len(jaxpr.outvars) == 1
        lines, _ = function_lines(
            mod,
            fname,
            closed,
            params,
            [],
            env,
            (lambda r: r[0].text) if single else _pack,
            decorator="@jax.jit",
        )
        mod.functions.append(lines)
        mod._fn_ids[key] = fname
    ops = operands(body, eqn)
    e = call(fname, ops)
    if len(eqn.outvars) == 1:
        body.define_many(eqn.outvars, [], e, "y", pattern="single")
    else:
        body.define_many(eqn.outvars, [], e, "y")


# names the folds module and tests need
__all__ = ["EMITTERS", "call", "define1", "emit_equation", "operands", "typed_scalar"]
