"""Repeated layers of a rehydrated program are found although each op's custom_jvp (a ReLU's
``max(x, 0)``, rehydrate/_safe_grad.py) is a sub-jaxpr object of its own."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import hlopipe
from hlopipe.stages import _jaxpr as J

L, D = 4, 32


def _mlp(ws, x):
    for w in ws:
        x = x + jax.nn.relu(x @ w)
    return (x * x).sum()


def test_layers_with_custom_jvp_ops_repeat_and_cuts_fall_between_them():
    ws = [jnp.eye(D) * (k + 1) for k in range(L)]
    prog = hlopipe.load(jax.export.export(jax.jit(_mlp))(ws, jnp.ones((2, D))).serialize())
    fn = prog.as_function(flat=True)
    closed, _, _ = J.trace(fn, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in prog.in_avals])
    assert any(e.primitive.name == "custom_jvp_call" for e in closed.jaxpr.eqns)
    staged = hlopipe.split(prog, num_stages=2)
    run = staged.repeated
    assert run is not None and run.count >= L - 1
    cut = sum(st.num_eqns for st in staged.stages[:1])
    assert cut in run.boundaries


def _loop_with_state(ws, cache, x):
    """A cache read before a layer loop and updated after it: no cut inside the loop keeps
    the cache on one stage."""
    h = x + cache

    def body(h, w):
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(body, h, ws)
    new = cache + h
    return (h * h).sum(), new


def _with_scan(staged):
    eqns = [st.jaxpr.jaxpr.eqns for st in staged.stages]
    return [s for s, es in enumerate(eqns) if any(e.primitive.name == "scan" for e in es)]


def test_a_layer_loop_is_not_cut_inside_a_state_span():
    args = (jnp.stack([jnp.eye(D)] * 8), jnp.zeros((2, D)), jnp.ones((2, D)))
    plain = hlopipe.split(_loop_with_state, *args, num_stages=2)
    assert _with_scan(plain) == [0, 1]  # unconstrained, the loop is cut by ranges
    staged = hlopipe.split(_loop_with_state, *args, num_stages=2, local_state=[(1, 1)])
    assert _with_scan(staged) == [0]  # the loop stays whole
    readers = [st.index for st in staged.stages if 1 in st.params_needed]
    src = staged.out_sources[1]
    assert readers == [src.stage] and src.kind == "stage"
    flat = [*args]
    for got, want in zip(staged.run_forward(flat)[1], _loop_with_state(*args), strict=True):
        assert jnp.allclose(got, want, rtol=1e-6)
