"""Gather and scatter."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import call, define1, emitter, operands
from hlopipe.decompile._source import DecompileError, param


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
