"""``memory_cap`` on a split between equations: each stage's memory (the bytes its equations
make plus the program arguments they read) stays under the cap, and the cut moves for it."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import StageError
from hlopipe.stages import CostModel
from hlopipe.stages import _jaxpr as J

# time by FLOPs alone, so that the large table read at the start costs memory, not time
CM = CostModel(bytes_per_s=1e30)


def _model(ws, table, x):
    x = x + table[0] * 2.0  # a literal operand: the memory count must pass over it
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x * x).sum()


def _args():
    ws = [jnp.eye(64) * (0.5 + 0.1 * k) for k in range(4)]
    return ws, jnp.ones((256, 8, 64)), jnp.ones((8, 64))


def _stage_memory(st) -> int:
    """Read off the stage's own jaxpr: what its equations make and the arguments they read."""
    jaxpr = st.jaxpr.jaxpr
    args = set(jaxpr.invars[: len(st.params_needed)])
    made = sum(J.aval_bytes(v.aval) for e in jaxpr.eqns for v in e.outvars)
    read = sum(
        J.aval_bytes(v.aval)
        for e in jaxpr.eqns
        for v in e.invars
        if not isinstance(v, J.Literal) and v in args
    )
    return made + read


def test_a_memory_cap_moves_the_cut_and_every_stage_fits():
    args = _args()
    free = hlopipe.split(_model, *args, num_stages=2, cost_model=CM)
    cap = max(_stage_memory(st) for st in free.stages) - 1
    capped = hlopipe.split(_model, *args, num_stages=2, cost_model=CM, memory_cap=cap)
    assert [st.num_eqns for st in capped.stages] != [st.num_eqns for st in free.stages]
    assert max(_stage_memory(st) for st in capped.stages) <= cap
    np.testing.assert_allclose(capped(*args), _model(*args), rtol=1e-6)


def test_a_cap_below_the_table_fits_no_split():
    args = _args()
    cap = int(args[1].nbytes) - 1
    with pytest.raises(StageError, match="fits the memory cap"):
        hlopipe.split(_model, *args, num_stages=2, cost_model=CM, memory_cap=cap)
