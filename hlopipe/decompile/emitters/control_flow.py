"""Control flow: ``scan`` (as ``lax.fori_loop`` where it counts), ``while``, ``cond`` (as
``lax.cond`` or ``lax.switch``) and calls (``jit``, ``custom_jvp_call``...) as nested functions."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from hlopipe.decompile._emit import Body, function_lines, is_drop, is_literal
from hlopipe.decompile._prims import (
    _deps,
    _is_int_literal,
    _nested_assign,
    _pack,
    _target,
    call,
    emitter,
    operands,
)
from hlopipe.decompile._source import ATOM, DecompileError, Expr, param, typed_scalar


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
        # fori_loop's index is a Python int: int64 in 64-bit mode (a 64-bit program's own
        # scope), int32 otherwise; a counter of another type stays a scan
        index_dtype = np.dtype(np.int64 if body.mod.x64 else np.int32)
        if k is not None and np.dtype(eqn.invars[nc + k].aval.dtype) == index_dtype:
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
    text = f"lax.fori_loop({lo}, {hi}, {fname}, {_pack(inits)})"
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


@emitter("while")
def _while(body: Body, eqn: Any) -> None:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    consts = {"cond": eqn.invars[:cn], "body": eqn.invars[cn : cn + bn]}
    init = eqn.invars[cn + bn :]
    envs = {
        # a body's first invars are its consts, the carry follows
        part: {
            iv: body.ref(ov)
            for iv, ov in zip(p[f"{part}_jaxpr"].jaxpr.invars[: len(vs)], vs, strict=True)
        }
        for part, vs in consts.items()
    }
    names = {part: body.mod.fresh(part) for part in consts}
    head: list[str] = []
    deps: frozenset[Any] = frozenset()
    for part, returns in (("cond", lambda r: r[0].text), ("body", _pack)):
        closed, n = p[f"{part}_jaxpr"], len(consts[part])
        carry = [("carry", list(closed.jaxpr.invars[n:]))]
        lines, outer = function_lines(
            body.mod, names[part], closed, ["carry"], carry, envs[part], returns
        )
        head += lines
        deps |= outer
    init_e = [body.ref(v) for v in init]
    text = f"lax.while_loop({names['cond']}, {names['body']}, {_pack(init_e)})"
    _nested_assign(body, eqn, head, text, deps | _deps(init_e), [eqn.outvars])


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
