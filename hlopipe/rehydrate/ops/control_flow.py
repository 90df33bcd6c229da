"""Control flow: while (static trip counts become ``lax.scan``), if, case, func.call, fusions,
optimization barriers (and the stage markers they carry), map, composite, tokens."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import lax
from jax.extend.core import Primitive

from hlopipe._jax_compat import ad, batching, mlir
from hlopipe.errors import RehydrateError
from hlopipe.rehydrate._loops import static_trip_bound, static_trip_count
from hlopipe.rehydrate.registry import RuleContext, rule

# ---- while -----------------------------------------------------------------------------------


@rule("stablehlo.while")
def while_(ctx: RuleContext, *inits: Any) -> Any:
    cond, body = ctx.regions
    interp = ctx.interpreter
    trips = None
    if interp.options.get("loops", "auto") == "auto":
        trips = static_trip_count(interp, ctx.op, list(inits), cond.env)
    if trips is not None:
        if trips == 0:
            return tuple(inits)

        def step(carry: tuple, _: Any) -> tuple:
            return tuple(body(*carry)), None

        out, _ = lax.scan(step, tuple(inits), None, length=trips)
        return tuple(out)

    bound = None
    if interp.options.get("loops", "auto") == "auto":
        bound = static_trip_bound(interp, ctx.op, list(inits), cond.env)
    if bound is not None and bound <= MAX_BOUNDED_STEPS:
        return _bounded_loop(cond, body, inits, bound)

    def c(carry: tuple) -> Any:
        (pred,) = cond(*carry)
        return pred

    def b(carry: tuple) -> tuple:
        return tuple(body(*carry))

    out = lax.while_loop(c, b, tuple(inits))
    return tuple(_guard(x, ctx.loc) for x in out)


# A loop whose trip count is only bounded at trace time runs as a scan of the bound's length
# when the bound is at most this (every step computes the body, used or not).
MAX_BOUNDED_STEPS = 4096


def _bounded_loop(cond: Any, body: Any, inits: tuple, bound: int) -> tuple:
    """A while loop of at most ``bound`` iterations (TensorFlow's ``maximum_iterations``)
    as a ``lax.scan`` of ``bound`` steps, each taking the body's results only while the
    condition still holds: the same values, and reverse-mode differentiable."""
    if bound == 0:
        return tuple(inits)

    def step(carry: tuple, _: Any) -> tuple:
        state, running = carry
        (pred,) = cond(*state)
        running = lax.bitwise_and(running, pred)
        new = tuple(body(*state))
        kept = tuple(
            lax.select(running, b, a) if hasattr(a, "dtype") else b
            for a, b in zip(state, new, strict=True)
        )
        return (kept, running), None

    (out, _), _ = lax.scan(step, (tuple(inits), np.bool_(True)), None, length=bound)
    return tuple(out)


# A dynamic loop cannot be reverse-differentiated. Its results pass through an identity whose
# tangent is an identity whose transpose raises, so jax.grad names this loop instead of
# failing deep inside JAX's transpose of while_loop.
_guard_p = Primitive("hlopipe_dynamic_loop")
_guard_t = Primitive("hlopipe_dynamic_loop_tangent")
for _p in (_guard_p, _guard_t):
    _p.def_impl(lambda x, *, loc: x)
    _p.def_abstract_eval(lambda x, *, loc: x)
    mlir.register_lowering(_p, lambda ctx, x, *, loc: [x])
    batching.primitive_batchers[_p] = lambda args, dims, *, loc, _p=_p: (
        _p.bind(args[0], loc=loc),
        dims[0],
    )


def _guard_jvp(primals: tuple, tangents: tuple, *, loc: str) -> tuple:
    (x,), (t,) = primals, tangents
    if type(t) is ad.Zero:
        return _guard_p.bind(x, loc=loc), t
    return _guard_p.bind(x, loc=loc), _guard_t.bind(t, loc=loc)


def _guard_transpose(ct: Any, x: Any, *, loc: str) -> Any:
    raise RehydrateError(
        f"cannot reverse-differentiate the while loop at {loc}: its trip count depends on "
        "values computed at run time, so it stays a lax.while_loop (forward mode, jit and vmap "
        "still work). Rewrite the loop with a static bound, or use jax.jvp/jax.jacfwd; to "
        "split such a program without its backward, use `hlopipe split --no-autodiff` "
        "(StagedProgram.export(..., argnums=None))"
    )


ad.primitive_jvps[_guard_p] = _guard_jvp
ad.deflinear2(_guard_t, _guard_transpose)


def _guard(x: Any, loc: str) -> Any:
    if np.dtype(x.dtype).kind not in "fc":
        return x
    return _guard_p.bind(x, loc=loc)


# ---- conditionals --------------------------------------------------------------------------


@rule("stablehlo.if")
def if_(ctx: RuleContext, pred: Any) -> Any:
    true_branch, false_branch = ctx.regions
    if isinstance(pred, np.ndarray | np.generic):
        out = (true_branch if bool(pred) else false_branch)()
    else:
        out = lax.cond(pred, lambda: tuple(true_branch()), lambda: tuple(false_branch()))
    return tuple(out)


@rule("stablehlo.case")
def case(ctx: RuleContext, index: Any) -> Any:
    branches = ctx.regions
    n = len(branches)
    if isinstance(index, np.ndarray | np.generic):
        i = int(index)
        out = branches[i if 0 <= i < n else n - 1]()
        return tuple(out)
    index = lax.convert_element_type(index, np.int32)
    # StableHLO runs the last branch for an out-of-range index; lax.switch would clamp.
    index = lax.select((index < 0) | (index >= n), np.int32(n - 1), index)
    out = lax.switch(index, [lambda b=b: tuple(b()) for b in branches])
    return tuple(out)


# ---- calls ---------------------------------------------------------------------------------


@rule("func.call")
def call(ctx: RuleContext, *args: Any, callee: str, **attrs: Any) -> Any:
    interp = ctx.interpreter
    if callee not in interp.module.funcs:
        raise RehydrateError(f"func.call at {ctx.loc}: no function @{callee} in the module")
    return tuple(interp.run(callee, *args))


# ---- asynchronous pairs (post-optimisation HLO: async-start/done, copy-start/done, ...) ----
# Rehydration runs one program at a time on one stream: the start computes, the done hands
# the result over. The "bundle" between them is a Python tuple (operands, results).


@rule("mhlo.async_start")
def async_start(ctx: RuleContext, *args: Any, called_computation: str, **attrs: Any) -> Any:
    interp = ctx.interpreter
    if called_computation not in interp.module.funcs:
        raise RehydrateError(
            f"mhlo.async_start at {ctx.loc}: no function @{called_computation} in the module"
        )
    results = tuple(interp.run(called_computation, *args))
    return ((tuple(args), results),)


@rule("mhlo.async_update")
def async_update(ctx: RuleContext, bundle: Any, **attrs: Any) -> Any:
    return (bundle,)


@rule("mhlo.async_done")
def async_done(ctx: RuleContext, bundle: Any, **attrs: Any) -> Any:
    results = bundle[1]
    return results[0] if len(results) == 1 and len(ctx.result_avals) == 1 else tuple(results)


@rule("stablehlo.async_start")
def async_start_region(ctx: RuleContext, *args: Any, **attrs: Any) -> Any:
    return ((tuple(args), tuple(ctx.regions[0](*args))),)


@rule("stablehlo.async_done")
def async_done_future(ctx: RuleContext, future: Any, **attrs: Any) -> Any:
    results = future[1]
    return results[0] if len(ctx.result_avals) == 1 else tuple(results)


@rule("hlopipe.unreadable")
def unreadable(ctx: RuleContext, *, message: str) -> Any:
    """A function hlopipe could not read (``_ir.ModuleIR._unreadable``), reached at last."""
    from hlopipe.errors import UnsupportedOpError

    raise UnsupportedOpError(message)


@rule("mhlo.fusion")
def fusion(ctx: RuleContext, *args: Any, **attrs: Any) -> Any:
    return tuple(ctx.regions[0](*args))


@rule("stablehlo.composite")
def composite(ctx: RuleContext, *args: Any, decomposition: str, **attrs: Any) -> Any:
    return tuple(ctx.interpreter.run(decomposition, *args))


@rule("stablehlo.map")
def map_(ctx: RuleContext, *xs: Any, dimensions: tuple[int, ...]) -> Any:
    region = ctx.regions[0]
    shape = np.shape(xs[0])
    if tuple(dimensions) != tuple(range(len(shape))):
        raise RehydrateError(f"stablehlo.map at {ctx.loc}: dimensions must be all dimensions")
    fn = lambda *scalars: region(*scalars)[0]  # noqa: E731
    for _ in shape:
        fn = jax.vmap(fn)
    return fn(*xs)


# ---- barriers and tokens ---------------------------------------------------------------------


@rule("stablehlo.optimization_barrier")
def optimization_barrier(ctx: RuleContext, *xs: Any, **attrs: Any) -> Any:
    from hlopipe import marker

    if marker.is_stage_boundary_attrs(attrs):
        out = marker.stage_boundary(*xs)
        return tuple(out) if len(xs) > 1 else (out,)
    return tuple(lax.optimization_barrier(tuple(xs)))


@rule("stablehlo.after_all")
def after_all(ctx: RuleContext, *tokens: Any) -> Any:
    return np.zeros((0,), dtype=bool)


@rule("stablehlo.create_token")
def create_token(ctx: RuleContext) -> Any:
    return np.zeros((0,), dtype=bool)
