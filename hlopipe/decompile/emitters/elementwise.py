"""Elementwise primitives: unary and binary math, conversions, ``select_n``, ``clamp``,
and the primitives that are the value itself (copies, sharding hints, barriers)."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body, is_drop, tuple_text
from hlopipe.decompile._prims import _bind, _deps, _kwargs, call, define1, emitter, operands
from hlopipe.decompile._source import ATOM, Expr, param

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


emitter(*UNARY)(_unary)
emitter(*BINARY)(_binary)


@emitter("round")
def _round(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.round", operands(body, eqn), **_kwargs(eqn, "rounding_method")))


@emitter("integer_pow")
def _integer_pow(body: Body, eqn: Any) -> None:
    define1(body, eqn, call("lax.integer_pow", operands(body, eqn), param(eqn.params["y"])))


@emitter("convert_element_type", "bitcast_convert_type")
def _convert(body: Body, eqn: Any) -> None:
    name = eqn.primitive.name
    e = call(f"lax.{name}", operands(body, eqn), param(eqn.params["new_dtype"]))
    define1(body, eqn, e, "cast" if name == "convert_element_type" else "bits")


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
