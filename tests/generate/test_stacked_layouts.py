"""A KV cache that is ONE array stacked over the layers, in the layouts frameworks write
(``_stacked_models``: keras_hub's ``[b, L, 2, T, ...]`` read by ``cache[:, i]`` and written
back with ``jnp.stack(..., axis=1)``; ``[L, b, ...]`` written by ``cache.at[i].set``), split
without stage markers: its layer axis is told by data flow and the cache sliced along it, each
stage keeping its own layers' rows and sending none of them. The oracle: the model's own
functions, unsplit, in a plain loop."""

from __future__ import annotations

import _stacked_models as m
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.generate import Generator

N = 8


# keras_hub's layout from HLO text (XLA joins each layer's K and V after the last layer there;
# through jax.export: tests/generate/test_keras_hub.py), the other through jax.export
@pytest.mark.parametrize(("layout", "S", "fmt"), [("keras", 2, "hlo"), ("leading", 4, "export")])
def test_stacked_cache_is_sliced_along_its_layer_axis(layout, S, fmt):
    dec, pre = m.exported(layout, fmt)
    gen = Generator(dec, m.params(), prefill=pre, num_stages=S)
    axis = 1 if layout == "keras" else 0
    # each stage holds L / S layers and only its own rows of the cache, in layer order
    assert gen.layers() == [m.L // S] * S
    whole = int(np.prod(m.empty(layout).shape)) * 4
    rows = []
    for s in range(S):
        (kept,) = gen.split.state_of(s)
        shape = gen.roles[kept.arg].shape
        assert shape[axis] == m.L // S and gen.state_bytes(s) * S == whole
        rows.append(kept.path)
    sl = ":, " * axis
    (cache,) = dec.arg_roles().state  # named "cache" in HLO text, "[1]" in an export
    assert rows == [f"{cache.path}[{sl}{s * m.L // S}:{(s + 1) * m.L // S}]" for s in range(S)]
    # the prefill (its empty cache made with jnp.zeros before the first layer) is cut with the
    # decode step: each stage makes its own rows of the cache
    made = [gen.prefill.staged.out_sources[o] for o in sorted(gen.prefill.state_of_out)]
    assert [(x.kind, x.stage) for x in made] == [("stage", s) for s in range(S)]
    assert gen.bytes_per_token().state == 0 and gen.warnings() == []
    prompts = np.asarray(jax.random.randint(jax.random.key(S), (1, m.B, m.P), 0, m.V))
    session = gen.start(prompts)
    toks = session.generate(N)
    ref, cache = m.generate_plain(layout, prompts[0], N)
    assert len(np.unique(ref)) >= 4
    np.testing.assert_array_equal(toks[0], ref)
    (joined,) = session.state(0)
    np.testing.assert_allclose(joined, cache, rtol=1e-5, atol=1e-6)
    sent = session.metrics.bytes_sent
    assert sent.state == 0  # measured: no cache byte crosses a stage, prefill included
    act = sum(p.send_bytes for p in gen.plans)
    assert act == (S - 1) * m.B * m.D * 4  # the residual stream only
    assert sent.activations == (N - 1) * act + sum(p.send_bytes for p in gen.prefill.plans)


def test_a_stacked_cache_whose_layer_axis_cannot_be_told_is_kept_whole_with_a_warning():
    def step(p, cache, tokens, position):
        x = p["w"][tokens]
        a = jnp.tanh(x + cache[0])
        b = jnp.tanh(a * cache[1])  # read at two indices of axis 0, layer by layer
        cache = jnp.where(position > 3, cache, jnp.stack([a, b]))  # but written back whole
        for _ in range(4):
            b = jnp.tanh(b @ p["h"])
        return jnp.argmax(b, -1).astype(jnp.int32), cache

    p = {"w": jnp.arange(32.0).reshape(8, 4) / 7.0, "h": jnp.eye(4) * 1.5}
    ex = (p, jnp.zeros((2, 2, 4)), jnp.zeros(2, jnp.int32), jnp.int32(0))
    prog = hlopipe.load(jax.export.export(jax.jit(step, donate_argnums=1))(*ex).serialize())
    gen = Generator(prog, p, num_stages=2, max_len=4)
    assert gen.stacked is None and [x.path for x in gen.split.state_of(0)] == ["[1]"]
    (note,) = [w for w in gen.warnings() if "[1] float32[2, 2, 4]" in w]
    assert "read at several indices of axis 0" in note and "kept whole on one stage" in note
    assert note in repr(gen)


def test_the_layer_axis_is_told_by_data_flow():
    """Read by a gather of one index (``jnp.take``), written by ``dynamic_update_slice`` and
    ``jnp.stack``: the layer axis (1) is a chain of layers, each written from what the one
    before read; the K/V axis of one layer's cache is written side by side, not a chain."""
    from jax import lax

    from hlopipe.stages import _jaxpr as J
    from hlopipe.stages._layer_axis import NotSliceable, constants, layering

    def kv(c, x):  # one layer's cache [b, 2, T]: K updated, V read
        k = lax.dynamic_update_slice(c[:, 0], x[:, None], (0, 1))
        return x + (k * c[:, 1]).sum(-1), jnp.stack([k, c[:, 1]], axis=1)

    def stacked(cache, x):  # [b, L, 2, T]
        new = []
        for i in range(3):
            x, c = kv(jnp.take(cache, jnp.array([i]), axis=1)[:, 0], x)
            new.append(c)
        return x, jnp.stack(new, axis=1)

    def told(fn, shape, axis):
        closed = J.inline(jax.make_jaxpr(fn)(jnp.zeros(shape), jnp.ones(2)), lambda e: True)
        jaxpr = closed.jaxpr
        return layering(jaxpr, jaxpr.invars[0], 1, axis, constants(closed))

    lay = told(stacked, (2, 3, 2, 4), 1)
    assert lay.pieces == ((0, 1), (1, 2), (2, 3)) and lay.layered
    with pytest.raises(NotSliceable, match="joins along axis 1, not 2"):
        told(stacked, (2, 3, 2, 4), 2)
    lay = told(kv, (2, 2, 4), 1)
    assert lay.pieces == ((0, 1), (1, 2)) and not lay.layered
