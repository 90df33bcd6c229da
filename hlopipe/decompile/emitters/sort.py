"""``sort`` and ``top_k``."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body, tuple_text
from hlopipe.decompile._prims import _deps, call, define1, emitter, operands
from hlopipe.decompile._source import ATOM, Expr, param


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
