"""The position kept in the state: per-layer integer counters advanced in place, as
``transformers``' ``StaticCache`` keeps them since 5.x (``cumulative_length.add_(n)``, no
``cache_position`` input). A hand-written JAX step of that structure, flat arguments in the
order a tracer gives them (weights after the caches, each layer's counter beside its cache):
the counters are state, no argument is the position, the cache length comes from the axis the
counters index, and the pipelined tokens equal the step itself looped on one device."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import RuntimeConfigError
from hlopipe.generate import Generator

B, M, D, V = 2, 6, 8, 16
# flat argument order: emb, k0, n0, tok, w0, k1, n1, w1, head
NAMES = ["emb", "k0", "n0", "tok", "w0", "k1", "n1", "w1", "head"]


def _step(emb, k0, n0, tok, w0, k1, n1, w1, head):
    """Each layer writes its key at its own counter, reads the keys written so far, and
    advances its counter by one: ``(logits, next, k0, n0, k1, n1)``."""
    x = emb[tok]
    out = []
    for k, n, w in ((k0, n0, w0), (k1, n1, w1)):
        k = lax.dynamic_update_slice(k, jnp.tanh(x @ w)[:, None, :], (0, n, 0))
        seen = (jnp.arange(M) <= n)[None, :, None]
        x = x + jnp.where(seen, k, 0.0).sum(1) / (n + 1).astype(x.dtype)
        out += [k, n + 1]
    logits = x @ head
    return logits, jnp.argmax(logits, -1).astype(jnp.int32), *out


def _example():
    return [
        jax.ShapeDtypeStruct(s, d)
        for s, d in [((V, D), jnp.float32), ((B, M, D), jnp.float32), ((), jnp.int32),
                     ((B,), jnp.int32), ((D, D), jnp.float32), ((B, M, D), jnp.float32),
                     ((), jnp.int32), ((D, D), jnp.float32), ((D, V), jnp.float32)]
    ]  # fmt: skip


@functools.cache
def _program(step=_step):
    return hlopipe.load(jax.jit(step).lower(*_example()).as_text())


@functools.cache
def _weights():
    ks = jax.random.split(jax.random.key(34), 4)
    return {
        "emb": jax.random.normal(ks[0], (V, D)),
        "w0": jax.random.normal(ks[1], (D, D)),
        "w1": jax.random.normal(ks[2], (D, D)),
        "head": jax.random.normal(ks[3], (D, V)) * 2,
    }


def test_counters_are_state_and_no_argument_is_the_position():
    roles = _program().arg_roles()
    by_name = dict(zip(NAMES, roles, strict=True))
    assert [by_name[n].role for n in ("emb", "w0", "w1", "head")] == ["parameter"] * 4
    # outputs: logits 0, next 1, k0 2, n0 3, k1 4, n1 5
    assert {n: by_name[n].output for n in ("k0", "n0", "k1", "n1")} == {
        "k0": 2, "n0": 3, "k1": 4, "n1": 5,
    }  # fmt: skip
    assert all(by_name[n].role == "state" for n in ("k0", "n0", "k1", "n1"))
    assert [r.index for r in roles.counters] == [2, 6]
    assert "counter" in by_name["n0"].reason and "data flow" in by_name["n0"].reason
    assert (by_name["tok"].role, by_name["tok"].output) == ("feedback", 1)
    assert not roles.inputs and not roles.ambiguous and not roles.unresolved
    assert by_name["k0"].axis == 1 and by_name["k1"].axis == 1  # [batch, length, dim]


def _looped(prompt_tok, steps):
    """The oracle: the JAX step itself, called again and again on one device."""
    w = _weights()
    k0 = k1 = jnp.zeros((B, M, D))
    n0 = n1 = jnp.int32(0)
    tok, seq = jnp.asarray(prompt_tok, jnp.int32), []
    step = jax.jit(_step)
    for _ in range(steps):
        _, tok, k0, n0, k1, n1 = step(w["emb"], k0, n0, tok, w["w0"], k1, n1, w["w1"], w["head"])
        seq.append(np.asarray(tok))
    return np.stack(seq, -1)


@pytest.mark.parametrize("S", [1, 2])
def test_generator_carries_the_counters(S):
    prog = _program()
    w = _weights()
    gen = Generator(prog, [w["emb"], w["w0"], w["w1"], w["head"]], num_stages=S)
    # the counters are fed the position (each holds the number of tokens written)
    assert [r.index for r in gen.roles.inputs] == [2, 6] and gen.max_len == M
    if S == 2:  # each stage keeps its layer's cache
        assert [[x.arg for x in gen.split.state_of(s)] for s in range(2)] == [[1], [5]]
    tok = np.array([[3, 11]], np.int32)
    got = gen.start(tokens=tok).generate(M)
    np.testing.assert_array_equal(np.asarray(got)[0], _looped(tok[0], M))
    assert len(set(np.asarray(got).ravel().tolist())) > 2  # the tokens vary


def _two_offsets(emb, k0, n0, tok, w0, k1, n1, w1, head):
    """A counter advanced by another integer scalar that also indexes the update: which of
    the two is the counter is not told by data flow."""
    x = emb[tok]
    k0 = lax.dynamic_update_slice(k0, jnp.tanh(x @ w0)[:, None, :], (0, n0 + n1, 0))
    x = x + k0.sum(1)
    return x @ head, jnp.argmax(x @ head, -1).astype(jnp.int32), k0, n0 + n1, k1, w1 @ w0


def test_a_counter_data_flow_cannot_tell_names_its_candidates():
    roles = _program(_two_offsets).arg_roles()
    (said,) = roles.unresolved
    assert "output 3" in said and "arguments 2 (arg 2), 6 (arg 6)" in said
    assert "state={argument: output}" in said
    with pytest.raises(RuntimeConfigError, match=r"arguments 2 \(arg 2\), 6 \(arg 6\)"):
        Generator(_program(_two_offsets), [_weights()["emb"]] * 5)
