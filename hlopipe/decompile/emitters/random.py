"""``rng_bit_generator``."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import call, emitter, operands
from hlopipe.decompile._source import param


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
