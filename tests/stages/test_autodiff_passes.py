"""The dataflow passes of per-stage autodiff, each run alone on a small hand-made jaxpr."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hlopipe.stages._autodiff import MergedVars, cut_forward_backward, cut_input_weight, taint


def _jaxpr():
    # (param w, input x, cotangent ct) -> (out, input_ct, param_grad), written out by hand
    def f(w, x, ct):
        w2 = w * 2.0  # parameter only
        h = x * w2  # per-microbatch
        out = jnp.sin(h)
        g = ct * jnp.cos(h)  # cotangent work reading a forward value
        gx = g * w2  # input cotangent
        gw = (g * x) * 2.0  # parameter gradient
        return out, gx, gw

    z = jnp.zeros(3, jnp.float32)
    return jax.make_jaxpr(f)(z, z, z).jaxpr


def _names(jaxpr, mask):
    return [e.primitive.name for e, m in zip(jaxpr.eqns, mask, strict=True) if m]


def test_taint_marks_cotangent_and_microbatch_dependence():
    jaxpr = _jaxpr()
    w, x, ct = jaxpr.invars
    eqn_ct, eqn_x = taint(jaxpr.eqns, [ct], [x])
    prims = [e.primitive.name for e in jaxpr.eqns]
    assert prims == ["mul", "mul", "sin", "cos", "mul", "mul", "mul", "mul"]
    # w2 = w*2 reads neither; everything from h on reads x; from g on, the cotangent too
    assert eqn_x == [False, True, True, True, True, True, True, True]
    assert eqn_ct == [False, False, False, False, True, True, True, True]
    # with the parameter counted as per-microbatch data (not differentiated), w2 is tainted
    assert taint(jaxpr.eqns, [ct], [x, w])[1][0] is True


def test_forward_backward_and_input_weight_cuts():
    jaxpr = _jaxpr()
    v = MergedVars.of(jaxpr, 1, 1, 1, 1)
    eqn_ct, eqn_x = taint(jaxpr.eqns, v.cts, v.inputs)
    fwd, bwd, res = cut_forward_backward(jaxpr.eqns, v, eqn_ct, eqn_x, remat=False)
    # forward: h and sin(h) (and cos(h), which only the backward reads); the backward
    # recomputes w2 from the parameter instead of saving it
    assert [e.primitive.name for e in fwd] == ["mul", "mul", "sin", "cos"]
    assert fwd[0].outvars[0] not in res
    assert all(e not in fwd for e in bwd if any(x in v.cts for x in e.invars))
    i_eqns, w_eqns, w_res = cut_input_weight(bwd, v, res, set())
    assert v.input_cts[0] in {o for e in i_eqns for o in e.outvars}
    assert v.param_grads[0] in {o for e in w_eqns for o in e.outvars}
    # W gets the cotangent g from I, x as a forward residual; w2 it recomputes itself
    assert all(x not in v.params for x in w_res)
    _, _, remat_res = cut_forward_backward(jaxpr.eqns, v, eqn_ct, eqn_x, remat=True)
    assert remat_res == v.inputs  # with remat the backward saves only the stage's inputs
