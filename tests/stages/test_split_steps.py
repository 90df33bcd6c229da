"""The steps of building a staged program from cut points, each run alone on a small jaxpr."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hlopipe.stages._staged import _owners, _stage_vars


def test_owners_and_stage_vars_of_a_two_stage_cut():
    def f(a, b):
        x = a * 2.0  # stage 0
        y = x + b  # stage 1
        return jnp.sin(y), x  # x is also a program output

    z = jnp.zeros(3, jnp.float32)
    jaxpr = jax.make_jaxpr(f)(z, z).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["mul", "add", "sin"]
    a, b = jaxpr.invars
    (x,), (y,), (s,) = (e.outvars for e in jaxpr.eqns)
    bounds = [0, 1, 3]
    owner, order = _owners(jaxpr.eqns, bounds)
    assert owner == {x: 0, y: 1, s: 1}
    assert order == {x: 0, y: 1, s: 2}
    per_stage = [jaxpr.eqns[0:1], jaxpr.eqns[1:3]]
    params_of, recv_of, outs_of = _stage_vars(jaxpr, per_stage, owner, {a: 0, b: 1})
    assert [list(p) for p in params_of] == [[a], [b]]
    assert [list(r) for r in recv_of] == [[], [x]]
    # stage 0 sends x on (and returns it); stage 1 returns sin(y), keeps y to itself
    assert [list(o) for o in outs_of] == [[x], [s]]
