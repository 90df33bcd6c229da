"""Linear algebra: dot_general, dot (and later cholesky, triangular_solve)."""

from __future__ import annotations

from typing import Any

import numpy as np
from jax import lax

from hlopipe.rehydrate._ir import DotDims
from hlopipe.rehydrate.registry import RuleContext, rule

_PRECISION = {
    "DEFAULT": lax.Precision.DEFAULT,
    "HIGH": lax.Precision.HIGH,
    "HIGHEST": lax.Precision.HIGHEST,
}


def _precision(config: Any) -> Any:
    if not config:
        return None
    vals = tuple(_PRECISION.get(str(c), lax.Precision.DEFAULT) for c in config)
    return vals if len(vals) == 2 else None


@rule("stablehlo.dot_general")
def dot_general(
    ctx: RuleContext,
    lhs: Any,
    rhs: Any,
    *,
    dot_dimension_numbers: DotDims,
    precision_config: Any = None,
    algorithm: Any = None,
) -> Any:
    d = dot_dimension_numbers
    dims = ((d.lhs_contract, d.rhs_contract), (d.lhs_batch, d.rhs_batch))
    return lax.dot_general(
        lhs,
        rhs,
        dims,
        precision=_precision(precision_config),
        preferred_element_type=ctx.aval.dtype,
    )


@rule("stablehlo.dot")
def dot(ctx: RuleContext, lhs: Any, rhs: Any, *, precision_config: Any = None) -> Any:
    contract = ((np.ndim(lhs) - 1,), (0,))
    return lax.dot_general(
        lhs,
        rhs,
        (contract, ((), ())),
        precision=_precision(precision_config),
        preferred_element_type=ctx.aval.dtype,
    )
