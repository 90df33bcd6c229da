"""``fft`` as ``lax.fft`` (its ``fft_type`` an enum that must be written by name)."""

from __future__ import annotations

from typing import Any

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import call, define1, emitter, operands
from hlopipe.decompile._source import param


@emitter("fft")
def _fft(body: Body, eqn: Any) -> None:
    p = eqn.params
    e = call("lax.fft", operands(body, eqn), param(p["fft_type"]), param(tuple(p["fft_lengths"])))
    define1(body, eqn, e, "fft")
