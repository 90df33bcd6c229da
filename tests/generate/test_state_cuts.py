"""Cuts chosen by the cost model for a stateful program keep each state argument on one stage:
never between a read of the cache and the equation making its new value."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.stages._partition import NoLocalCut
from hlopipe.stages._state import StateCrossesStages, split_stateful

B, T, D, V, HEAVY = 2, 8, 64, 32, 8


def _step(p, cache, tok, pos):
    """Layer 0 reads its cache first, then a heavy stack of matmuls, then writes its cache:
    the cost-balanced 2-stage cut falls inside that span. Layer 1 is light."""
    h = p["emb"][tok]
    c0, c1 = cache
    a0 = jax.nn.softmax(jnp.einsum("bd,btd->bt", h, c0), axis=-1)
    h = h + jnp.einsum("bt,btd->bd", a0, c0)
    for w in p["heavy"]:
        h = jnp.tanh(h @ w)
    c0 = lax.dynamic_update_slice(c0, h[:, None, :], (0, pos, 0))
    a1 = jax.nn.softmax(jnp.einsum("bd,btd->bt", h, c1), axis=-1)
    h = h + jnp.einsum("bt,btd->bd", a1, c1)
    c1 = lax.dynamic_update_slice(c1, jnp.tanh(h @ p["light"])[:, None, :], (0, pos, 0))
    nxt = jnp.argmax(h @ p["out"], axis=-1).astype(jnp.int32)
    return nxt, (c0, c1)


@functools.cache
def _params():
    ks = jax.random.split(jax.random.key(3), 4)
    return {
        "emb": jax.random.normal(ks[0], (V, D)),
        "heavy": list(jax.random.normal(ks[1], (HEAVY, D, D)) / np.sqrt(D)),
        "light": jax.random.normal(ks[2], (D, D)) / np.sqrt(D),
        "out": jax.random.normal(ks[3], (D, V)),
    }


@functools.cache
def _program():
    cache = (jnp.zeros((B, T, D)), jnp.zeros((B, T, D)))
    ex = (_params(), cache, jnp.zeros(B, jnp.int32), jnp.int32(0))
    fn = jax.jit(_step, donate_argnums=1)
    return hlopipe.load(jax.export.export(fn)(*ex).serialize())


def _reads(staged, arg):
    return [st.index for st in staged.stages if arg in st.params_needed]


def test_cost_balanced_cut_would_fall_inside_a_cache_span():
    """Without the constraint the balanced cut lands between layer 0's cache read and its
    update (so the tests below check the constraint, not a lucky balance)."""
    prog = _program()
    c0 = next(r for r in prog.arg_roles().state if r.path.startswith("[1][0]"))
    plain = hlopipe.split(prog, num_stages=2)
    src = plain.out_sources[c0.output]
    assert 0 in _reads(plain, c0.index) and (src.kind, src.stage) == ("stage", 1)


def test_state_stays_on_its_stage_and_tokens_equal_the_unsplit_program():
    prog = _program()
    gen = Generator(prog, _params(), num_stages=2, groups=2)
    staged = gen.split.staged
    for slot in gen.split.slots:  # every reader of the cache is the stage making its update
        assert _reads(staged, slot.arg) == [slot.stage]
        assert staged.out_sources[slot.output].stage == slot.stage
    first = np.asarray(jax.random.randint(jax.random.key(5), (2, B), 0, V, jnp.int32))
    session = gen.start(tokens=first)
    toks = session.generate(T)
    ref, _ = generate_unsplit(prog, _params(), T, tokens=first)
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 4
    assert session.metrics.bytes_sent.state == 0


def test_no_cut_keeping_state_local_names_the_state():
    """A cache read at the start and written at the end: no cut into 2 stages keeps it."""

    def whole(p, cache, x):
        y = jnp.tanh(cache @ p["w"]) + x
        for _ in range(4):
            y = jnp.tanh(y @ p["w"])
        return y.sum(), lax.dynamic_update_slice(cache, y[:1], (0, 0))

    p = {"w": jnp.eye(D)}
    ex = (p, jnp.zeros((4, D)), jnp.zeros((4, D)))
    prog = hlopipe.load(jax.export.export(jax.jit(whole, donate_argnums=1))(*ex).serialize())
    roles = prog.arg_roles()
    with pytest.raises(StateCrossesStages, match=r"state argument \[1\] is read and updated"):
        split_stateful(prog, roles, num_stages=2)
    with pytest.raises(NoLocalCut, match=r"ask for at most 1 stages"):
        hlopipe.split(prog, num_stages=2, local_state=[(r.index, r.output) for r in roles.state])
