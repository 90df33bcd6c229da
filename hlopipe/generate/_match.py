"""A prefill's parameters matched to its decode step's when their orders differ.

A prefill traced by another tracer than its decode step (``torch.export`` beside torch_xla's
lazy tensors), or exported from a wrapper that takes the weights in another order, takes the
same weights at other argument positions. They are matched, each by the first rule that tells
it, never by a pick among equals:

1. **name**: both programs carry the same name for it (a ``jax.export`` tree path with a
   dictionary key or attribute, a StableHLO argument name); positional paths (``[0][3]``) are
   no names;
2. **shape**: its shape and dtype is held by one argument of each program (among those not
   matched by name);
3. **data flow**: where several share a shape and dtype (layer 0's and layer 1's weights), a
   signature of each argument's place in the program's data flow: how many matrix products
   (``dot_general``) precede its first use on the longest path from the data (prompt, token,
   state), how many follow it on the longest path to an output, and, among arguments equal in
   both, how many other computing ops follow it (a gate projection's output passes through its
   activation; the up projection's does not). The two counts of products are the model's
   structure and must agree between the programs; the third only orders the arguments within
   one program, as op counts differ between tracers (``silu`` as ``logistic`` or as
   ``exp``/``div``). Arguments alike in all three are ambiguous: an error names them.
"""

from __future__ import annotations

import enum
import weakref
from collections import defaultdict
from typing import Any

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.io import Use


class MatchedBy(enum.StrEnum):
    """How a prefill argument was matched to a decode step's parameter."""

    ORDER = "order"  # the decode step's parameters in their order (one tracer, one order)
    NAME = "name"
    SHAPE = "shape"
    DATA_FLOW = "data flow"


# operations that only move or retype values: not counted as computing ops
_LAYOUT = frozenset({
    "reshape", "transpose", "broadcast_in_dim", "convert_element_type", "squeeze",
    "expand_dims", "copy", "copy_p", "slice", "dynamic_slice", "concatenate", "pad",
    "select_n", "gather", "rev", "iota",
})  # fmt: skip
_BIG = 1 << 20  # a product counts more than any number of other ops along a path

#: per flat argument, ``(products before, products after, ops after)`` or ``None``
Signatures = list[tuple[int, int, int] | None]


def real_name(name: str | None) -> str | None:
    """``name`` if it names something (a key or attribute in it), else None (``[0][3]``)."""
    if not name:
        return None
    stripped = name.replace("[", "").replace("]", "")
    return None if stripped.isdigit() or not stripped.strip("0123456789") else name


# per program while it lives (a Program compares and hashes by identity): an entry goes with its
# program, so a program made later never finds another's
_TRACED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_SIGNATURES: weakref.WeakKeyDictionary[Any, dict[frozenset[int], Signatures]] = (
    weakref.WeakKeyDictionary()
)


def _traced(program: Any) -> Any:
    """``program``'s flat function as a closed jaxpr, traced once per program."""
    import jax

    if program not in _TRACED:
        _TRACED[program] = jax.make_jaxpr(program.as_function(flat=True))(*program.in_avals)
    return _TRACED[program]


def signatures(program: Any, data: frozenset[int]) -> Signatures:
    """Per flat argument of ``program``: ``(products before, products after, ops after)``
    (see the module's docstring), ``None`` for an argument nothing reads; ``data`` are the
    arguments that are data (the others, parameters and constants, start no path)."""
    mine = _SIGNATURES.setdefault(program, {})
    if data not in mine:
        mine[data] = _signatures(program, data)
    return mine[data]


def _signatures(program: Any, data: frozenset[int]) -> Signatures:
    closed = _traced(program)
    eqns = list(_flat_eqns(closed.jaxpr, {v: v for v in closed.jaxpr.invars}))
    low = -(1 << 40)
    depth: dict[Any, int] = {}  # products on the longest path from the data
    for i, v in enumerate(closed.jaxpr.invars):
        depth[v] = 0 if i in data else low
    first: dict[Any, int] = {}  # an argument -> the least depth at which it is read
    arg_of = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    for name, ins, outs in eqns:
        d = max((depth.get(v, low) for v in ins), default=low) + (name == "dot_general")
        for v in outs:
            depth[v] = d
        for v in ins:
            # a layout op passes an argument on: it is read where its copy is
            if v in arg_of and name not in _LAYOUT:
                first[v] = min(first.get(v, d), d)
            elif v in arg_of:
                for o in outs:
                    arg_of.setdefault(o, arg_of[v])
    # arguments read through layout ops: their copies' first reads
    firsts: dict[int, int] = {}
    for v, d in first.items():
        i = arg_of[v]
        firsts[i] = min(firsts.get(i, d), max(d, 0))
    after: dict[Any, int] = {v: 0 for v in closed.jaxpr.outvars if not _is_literal(v)}
    for name, ins, outs in reversed(eqns):
        below = [after[v] for v in outs if v in after]
        if not below:
            continue
        w = _BIG if name == "dot_general" else (0 if name in _LAYOUT else 1)
        d = max(below) + w
        for v in ins:
            if not _is_literal(v) and after.get(v, -1) < d:
                after[v] = d
    out: list[tuple[int, int, int] | None] = []
    for i, v in enumerate(closed.jaxpr.invars):
        if i not in firsts or v not in after:
            out.append(None)
        else:
            out.append((firsts[i], after[v] // _BIG, after[v] % _BIG))
    return out


def _is_literal(v: Any) -> bool:
    from jax.extend.core import Literal

    return isinstance(v, Literal)


def _flat_eqns(jaxpr: Any, env: dict[Any, Any]) -> Any:
    """``(primitive name, input vars, output vars)`` of ``jaxpr``'s equations, calls of inner
    jaxprs with the same arity inlined (their variables renamed through ``env``); loops and
    branches stay one opaque equation."""
    for eqn in jaxpr.eqns:
        ins = [v if _is_literal(v) else env.get(v, v) for v in eqn.invars]
        inner = None
        for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
            sub = eqn.params.get(key)
            sub = getattr(sub, "jaxpr", sub)
            if (
                sub is not None
                and hasattr(sub, "eqns")
                and len(sub.invars) == len(ins)
                and len(sub.outvars) == len(eqn.outvars)
            ):
                inner = sub
                break
        if inner is None:
            yield eqn.primitive.name, [v for v in ins if not _is_literal(v)], list(eqn.outvars)
            continue
        sub_env = dict(zip(inner.invars, ins, strict=True))
        yield from _flat_eqns(inner, sub_env)
        for o, io in zip(eqn.outvars, inner.outvars, strict=True):
            # an output of the call is its inner value (a literal: a constant, read by none)
            yield "copy", ([] if _is_literal(io) else [sub_env.get(io, io)]), [o]


def match_params(
    prefill: Any,
    decode: Any,
    decode_roles: Any,
    prompt: int,
    what: str,
) -> tuple[dict[int, int], dict[int, MatchedBy], list[int]]:
    """The prefill's arguments (besides ``prompt``) matched to the decode step's parameters:
    ``(param_of, how, left)``: ``{prefill argument: decode argument}``, how each was matched,
    and the arguments that match no parameter (lifted constants, checked by the caller).

    Raises:
      RuntimeConfigError naming arguments that several parameters fit alike (and
      ``prefill_params``, the way to give them)."""
    params = list(decode_roles.parameters)
    avals = [(tuple(a.shape), str(a.dtype)) for a in prefill.in_avals]
    key_of = {r.index: (tuple(r.shape), str(r.dtype)) for r in params}
    args = [i for i in range(len(avals)) if i != prompt]
    param_of: dict[int, int] = {}
    how: dict[int, MatchedBy] = {}
    # 1. names both programs carry
    pre_names = list(getattr(prefill, "arg_names", None) or [None] * len(avals))
    dec_names = list(getattr(decode, "arg_names", None) or [None] * len(decode_roles))
    by_name: dict[str, list[int]] = defaultdict(list)
    for r in params:
        n = real_name(dec_names[r.index])
        if n is not None:
            by_name[n].append(r.index)
    named = [real_name(pre_names[i]) for i in range(len(avals))]
    for i in args:
        n = named[i]
        hits = by_name.get(n, []) if n is not None else []
        if len(hits) == 1 and named.count(n) == 1 and key_of[hits[0]] == avals[i]:
            param_of[i], how[i] = hits[0], MatchedBy.NAME
    # 2. a shape and dtype one argument of each holds
    taken = set(param_of.values())
    free_pre: dict[Any, list[int]] = defaultdict(list)
    free_dec: dict[Any, list[int]] = defaultdict(list)
    for i in args:
        if i not in param_of:
            free_pre[avals[i]].append(i)
    for r in params:
        if r.index not in taken:
            free_dec[key_of[r.index]].append(r.index)
    groups = []
    for key, pre_args in free_pre.items():
        dec_args = free_dec.get(key, [])
        if len(pre_args) == 1 and len(dec_args) == 1:
            param_of[pre_args[0]], how[pre_args[0]] = dec_args[0], MatchedBy.SHAPE
        elif dec_args:
            groups.append((key, pre_args, dec_args))
    # 3. data flow, where several share a shape and dtype
    if groups:
        pre_sig = signatures(prefill, frozenset({prompt}))
        data = frozenset(r.index for r in decode_roles if r.role is not Use.PARAMETER)
        dec_sig = signatures(decode, data)
        for key, pre_args, dec_args in groups:
            _by_data_flow(key, pre_args, dec_args, pre_sig, dec_sig, param_of, how, what)
    left = [i for i in args if i not in param_of]
    return param_of, how, left


def _by_data_flow(
    key: Any,
    pre_args: list[int],
    dec_args: list[int],
    pre_sig: list[Any],
    dec_sig: list[Any],
    param_of: dict[int, int],
    how: dict[int, MatchedBy],
    what: str,
) -> None:
    """Match ``pre_args`` to ``dec_args`` (one shape and dtype ``key``) by their signatures,
    into ``param_of`` / ``how``; a prefill argument whose products match no parameter's is
    left (a constant of its own)."""
    pre_cls: dict[Any, list[int]] = defaultdict(list)
    dec_cls: dict[Any, list[int]] = defaultdict(list)
    for i in pre_args:
        s = pre_sig[i]
        pre_cls[None if s is None else s[:2]].append(i)
    for a in dec_args:
        s = dec_sig[a]
        dec_cls[None if s is None else s[:2]].append(a)
    for products, ps in pre_cls.items():
        ds = dec_cls.get(products, []) if products is not None else []
        if not ds:
            continue  # no parameter is used like these: left over
        ps_order = sorted(ps, key=lambda i: pre_sig[i][2])
        ds_order = sorted(ds, key=lambda a: dec_sig[a][2])
        alike = len(ps) != len(ds) or any(
            len({sig[x][2] for x in xs}) != len(xs) for sig, xs in ((pre_sig, ps), (dec_sig, ds))
        )
        if alike:
            shape, dtype = key
            raise RuntimeConfigError(
                f"{what}: cannot tell which of the decode step's parameters {sorted(ds)} "
                f"({dtype}{list(shape)}, used alike: {products[0]} matrix products before "
                f"their first use, {products[1]} after) the prefill's arguments {sorted(ps)} "
                "are; give the prefill its own arguments: ",
                Keyword("prefill_params"),
                " (every argument but the prompt, in the prefill's order)",
            )
        for i, a in zip(ps_order, ds_order, strict=True):
            param_of[i], how[i] = a, MatchedBy.DATA_FLOW


def counter_start(prefill: Any, arg: int, outputs: list[int], length: int) -> int | None:
    """The value of the prefill's lifted constant ``arg`` for which each of its counter
    ``outputs`` (computed from it alone) holds ``length`` after the prefill, as the decode
    step's counters hold the tokens written: ``length`` less what the prefill adds to it
    (torch.export lifts a counter's start, 0; torch_xla's lazy tensors the length it adds,
    from a start of its own); None when no value gives ``length`` in every output."""
    import numpy as np

    closed = _traced(prefill)
    dtype = np.dtype(prefill.in_avals[arg].dtype)
    shape = tuple(prefill.in_avals[arg].shape)

    def counters(x: int) -> list[int] | None:
        vals = _eval_outputs(closed, outputs, arg, np.full(shape, x, dtype))
        return None if vals is None else [int(np.asarray(v).reshape(-1)[0]) for v in vals]

    base = counters(0)
    if base is None or len(set(base)) != 1:
        return None
    start = length - base[0]
    return start if counters(start) == [length] * len(outputs) else None


def _eval_outputs(closed: Any, outputs: list[int], arg: int, value: Any) -> list[Any] | None:
    """``closed``'s ``outputs`` evaluated from argument ``arg`` = ``value`` alone (only the
    equations they need, each bound once); None when they need another argument."""
    jaxpr = closed.jaxpr
    needed = {v for o in outputs if not _is_literal(v := jaxpr.outvars[o])}
    keep = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in needed for v in eqn.outvars):
            keep.append(eqn)
            needed.update(v for v in eqn.invars if not _is_literal(v))
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
    for i, v in enumerate(jaxpr.invars):
        if v in needed:
            if i != arg:
                return None
            env[v] = value
    for eqn in reversed(keep):
        ins = [v.val if _is_literal(v) else env[v] for v in eqn.invars]
        res = eqn.primitive.bind(*ins, **eqn.params)
        env.update(zip(eqn.outvars, res if eqn.primitive.multiple_results else [res], strict=True))
    return [v.val if _is_literal(v) else env[v] for v in (jaxpr.outvars[o] for o in outputs)]
