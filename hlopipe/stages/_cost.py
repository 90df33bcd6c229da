"""Cost model: FLOPs and bytes of each jaxpr equation, and a roofline time estimate.

FLOPs are exact for ``dot_general`` (2·M·N·K per batch) and convolutions (2 · output size ·
kernel elements per output feature); elementwise ops count one FLOP per output element,
reductions one per input element, data movement (reshape, transpose, slices, gathers…) none.
Calls are costed by their bodies; ``scan`` multiplies its body by the length; ``while`` counts
its body once (the trip count is unknown); ``cond`` takes its most expensive branch.
Bytes are those read and written by the equation (inputs + outputs), as an unfused op would.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.stages._jaxpr import ClosedJaxpr, Jaxpr, Literal, aval_bytes

MOVEMENT = frozenset(
    {
        "reshape", "transpose", "broadcast_in_dim", "squeeze", "expand_dims", "slice",
        "dynamic_slice", "dynamic_update_slice", "concatenate", "pad", "gather", "rev",
        "copy", "copy_p", "convert_element_type", "bitcast_convert_type", "iota", "select_n",
        "stage_boundary", "optimization_barrier", "device_put", "sharding_constraint",
        "split",
    }
)  # fmt: skip
_REDUCTIONS = frozenset(
    {
        "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
        "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
        "reduce_precision", "scatter-add", "scatter_add", "scatter",
    }
)  # fmt: skip


@dataclass(frozen=True)
class CostModel:
    """A roofline: an equation takes ``max(flops / flops_per_s, bytes / bytes_per_s)``.

    ``link_bytes_per_s`` is the bandwidth between stages: a stage also pays, before it can
    run, for the activation bytes it receives.

    Example:
      >>> CostModel(flops_per_s=1e12).time(flops=2e12, nbytes=0.0)
      2.0
    """

    flops_per_s: float = 1e11
    bytes_per_s: float = 2e10
    link_bytes_per_s: float = 1e10

    def time(self, flops: float, nbytes: float) -> float:
        return max(flops / self.flops_per_s, nbytes / self.bytes_per_s)

    def transfer_time(self, nbytes: float) -> float:
        return nbytes / self.link_bytes_per_s


def _size(aval: Any) -> int:
    return int(math.prod(getattr(aval, "shape", ())))


def _dot_flops(eqn: Any) -> float:
    (lc, _rc), _batch = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval
    k = math.prod(lhs.shape[d] for d in lc)
    return 2.0 * _size(eqn.outvars[0].aval) * k


def _conv_flops(eqn: Any) -> float:
    rhs = eqn.invars[1].aval
    dn = eqn.params.get("dimension_numbers")
    out_feature_dim = dn.rhs_spec[0] if dn is not None else 0
    per_output = math.prod(rhs.shape) / max(rhs.shape[out_feature_dim], 1)
    return 2.0 * _size(eqn.outvars[0].aval) * per_output


# Keyed weakly: a jaxpr's cost lives as long as the jaxpr (jaxprs hash by identity).
_JAXPR_CACHE: weakref.WeakKeyDictionary[Any, tuple[float, float]] = weakref.WeakKeyDictionary()


def jaxpr_cost(jaxpr: Any) -> tuple[float, float]:
    """(FLOPs, bytes) of an open or closed jaxpr, summed over its equations."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    hit = _JAXPR_CACHE.get(jaxpr)
    if hit is not None:
        return hit
    flops = nbytes = 0.0
    for eqn in jaxpr.eqns:
        f, b = eqn_cost(eqn)
        flops += f
        nbytes += b
    _JAXPR_CACHE[jaxpr] = (flops, nbytes)
    return flops, nbytes


def eqn_cost(eqn: Any) -> tuple[float, float]:
    """(FLOPs, bytes) of one equation (see the module docstring for the rules)."""
    name = eqn.primitive.name
    params = eqn.params
    if name == "scan":
        f, b = jaxpr_cost(params["jaxpr"])
        return f * params["length"], b * params["length"]
    if name == "while":
        f1, b1 = jaxpr_cost(params["body_jaxpr"])
        f2, b2 = jaxpr_cost(params["cond_jaxpr"])
        return f1 + f2, b1 + b2
    if name == "cond":
        costs = [jaxpr_cost(br) for br in params["branches"]]
        return max(c[0] for c in costs), max(c[1] for c in costs)
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        body = params.get(key)
        if isinstance(body, (ClosedJaxpr, Jaxpr)):
            return jaxpr_cost(body)
    nbytes = float(
        sum(aval_bytes(v.aval) for v in eqn.invars if not isinstance(v, Literal))
        + sum(aval_bytes(v.aval) for v in eqn.outvars)
    )
    if name == "dot_general":
        return _dot_flops(eqn), nbytes
    if name == "conv_general_dilated":
        return _conv_flops(eqn), nbytes
    if name in MOVEMENT:
        return 0.0, nbytes
    if name in _REDUCTIONS:
        return float(sum(_size(v.aval) for v in eqn.invars if not isinstance(v, Literal))), nbytes
    return float(sum(_size(v.aval) for v in eqn.outvars)), nbytes


def eqn_costs(eqns: Any) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of FLOPs and bytes, one entry per equation."""
    flops = np.empty(len(eqns))
    nbytes = np.empty(len(eqns))
    for i, eqn in enumerate(eqns):
        flops[i], nbytes[i] = eqn_cost(eqn)
    return flops, nbytes


def roofline_times(cm: CostModel, flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """:meth:`CostModel.time` of each equation, from arrays of FLOPs and bytes."""
    return np.maximum(flops / cm.flops_per_s, nbytes / cm.bytes_per_s)


def eqn_memory(jaxpr: Any) -> np.ndarray:
    """Per equation, the bytes it produces plus those of the program arguments it reads: what
    a stage's equations add up to against a ``memory_cap``."""
    invars = set(jaxpr.invars)
    made = [sum(aval_bytes(v.aval) for v in e.outvars) for e in jaxpr.eqns]
    read = [
        sum(aval_bytes(v.aval) for v in e.invars if not isinstance(v, Literal) and v in invars)
        for e in jaxpr.eqns
    ]
    return np.array([m + r for m, r in zip(made, read, strict=True)], dtype=np.float64)
