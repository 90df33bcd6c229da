"""The pipeline stage marker, ``hlopipe.stage_boundary``."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import call, emitter, operands


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
