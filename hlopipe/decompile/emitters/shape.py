"""Shape primitives: broadcasts, reshapes, transposes, ``iota``, concatenation, padding and
slices (static and dynamic)."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import _bind, _deps, call, define1, emitter, operands
from hlopipe.decompile._source import ATOM, Expr, param


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
