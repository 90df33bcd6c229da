"""Argument roles pair state by data flow: torch_xla's decode step (fixture from fx), whose
optimised `input_output_alias` pairs the caches by shape (K cache output aliased to the V cache's
parameter), and whose other forms say nothing about aliasing. The true mapping is the
manifest's `state`, found by the fixture's generator from the traced program."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError
from hlopipe.generate import Generator

CASE = Path(__file__).parents[1] / "data" / "frameworks" / "torch_xla" / "static_cache_decode"
MANIFEST = json.loads(CASE.with_suffix(".json").read_text())
TRUE = {v["parameter"]: v["output"] for v in MANIFEST["state"].values()}


@pytest.mark.parametrize("ext", [".opt.hlo", ".sync.hlo", ".hlo", ".mlir"])
def test_state_pairs_follow_data_flow(ext):
    roles = hlopipe.load(str(CASE) + ext).arg_roles()
    assert {r.index: r.output for r in roles.state} == TRUE
    assert not roles.ambiguous
    assert not [r for r in roles.feedback if r.shape == roles.state[0].shape]
    assert all("data flow" in r.reason for r in roles.state)


def test_optimised_alias_pairs_are_by_shape_and_overruled():
    assert MANIFEST["aliasing"]["optimized_pairs_follow_data_flow"] is False
    roles = hlopipe.load(str(CASE) + ".opt.hlo").arg_roles()
    # k_cache_0 is parameter 23, updated by output 2, which XLA aliases to parameter 20
    assert roles[23].output == 2
    assert roles[23].reason == (
        "output 2 updates arg 23 in place (data flow); HLO input_output_alias pairs it with "
        "arg 20 by shape"
    )


def _twin_program():
    """Two same-shape arguments each replaced by a new value (not an in-place update): which
    output feeds which argument is not shown by data flow."""

    def f(params, a, b, pos):
        return a + params + pos, a * b, b - a

    ex = (jnp.ones(3), jnp.ones(3), jnp.ones(3), jnp.int32(0))
    return hlopipe.load(jax.export.export(jax.jit(f))(*ex).serialize())


def test_same_shape_guess_is_said_and_refused_until_overridden():
    prog = _twin_program()
    roles = prog.arg_roles()
    assert [r.index for r in roles.ambiguous] == [1, 2]
    assert all("ambiguous" in r.reason for r in roles.ambiguous)
    with pytest.raises(RuntimeConfigError, match=r"argument 1 \(\[1\]\) is a guess"):
        Generator(prog, jnp.ones(3))
    told = prog.arg_roles(feedback={1: 2, 2: 1})
    assert not told.ambiguous
    assert {r.index: r.output for r in told.feedback} == {1: 2, 2: 1}


def test_state_override_by_arguments_alone_takes_outputs_by_data_flow():
    roles = hlopipe.load(str(CASE) + ".hlo").arg_roles(state=sorted(TRUE))
    assert {r.index: r.output for r in roles.state} == TRUE
    assert all(r.reason == "state= override; output by data flow" for r in roles.state)


def test_roles_are_a_closed_set():
    """Each argument's role is a member of ``io.Use`` (compared with ``is``); ``of`` takes the
    member or its value, and a word that is no role is refused rather than matching nothing."""
    from hlopipe.io import Use

    roles = hlopipe.load(str(CASE) + ".mlir").arg_roles()
    assert {r.role for r in roles} <= set(Use)
    assert all(r.role is Use.STATE for r in roles.state)
    assert roles.of("state") == roles.of(Use.STATE) == roles.state
    assert {r.index: r.output for r in roles.of("state")} == TRUE
    with pytest.raises(ValueError, match="'cache' is not a valid Use"):
        roles.of("cache")
    assert "  state    " in str(roles)  # the table prints the value, not Use.STATE
