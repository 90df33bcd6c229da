"""Contractions: ``dot_general`` and ``conv_general_dilated``."""

from __future__ import annotations

from typing import Any

from jax import lax

from hlopipe.decompile._emit import Body
from hlopipe.decompile._prims import _kwargs, call, define1, emitter, operands
from hlopipe.decompile._source import param


@emitter("dot_general")
def _dot_general(body: Body, eqn: Any) -> None:
    p = eqn.params
    kwargs = _kwargs(eqn, "precision", "preferred_element_type")
    if all(pr in (None, lax.Precision.DEFAULT) for pr in kwargs.get("precision") or ()):
        kwargs.pop("precision", None)  # DEFAULT is what no precision means
    dtypes = {v.aval.dtype for v in eqn.invars} | {eqn.outvars[0].aval.dtype}
    if kwargs.get("preferred_element_type") is not None and len(dtypes) == 1:
        kwargs.pop("preferred_element_type")  # the operands' own type
    e = call("lax.dot_general", operands(body, eqn), param(p["dimension_numbers"]), **kwargs)
    define1(body, eqn, e, "dot")


@emitter("conv_general_dilated")
def _conv(body: Body, eqn: Any) -> None:
    p = eqn.params
    kw = {
        k: p[k]
        for k in (
            "window_strides",
            "padding",
            "lhs_dilation",
            "rhs_dilation",
            "dimension_numbers",
            "feature_group_count",
            "batch_group_count",
            "precision",
            "preferred_element_type",
        )
        if p.get(k) is not None
    }
    define1(body, eqn, call("lax.conv_general_dilated", operands(body, eqn), **kw), "conv")
