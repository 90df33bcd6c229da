"""State is told by data flow, not by shape: the updated K and V of a per-layer cache
``[b, 2, T, heads, head_dim]`` (keras_hub's layout, one cache per layer) are state though
their shape is not the cache's. The cost model never cuts between their update and the
attention that reads them; stage markers that force such a cut count them as state sent (not
activations), and ``print(gen)`` warns."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.marker import stage_boundary

B, T, H, HD, V, HEAVY = 2, 8, 2, 8, 16, 12
D = H * HD
KV_BYTES = B * T * H * HD * 4  # one updated K (or V) of one layer, f32


def _step(p, cache, tok, pos, mark=None):
    """Two layers. Each writes its K and V first and stacks its cache back, then computes its
    query through a heavy chain of matmuls, then attends: the cost-balanced cut falls inside
    layer 0's chain, where the updated K and V are alive."""
    x = p["emb"][tok]
    new = []
    for i, c in enumerate(cache):
        k = jnp.tanh(x @ p["wk"][i]).reshape(B, 1, H, HD)
        v = jnp.tanh(x @ p["wv"][i]).reshape(B, 1, H, HD)
        k_all = lax.dynamic_update_slice(c[:, 0], k, (0, pos, 0, 0))
        v_all = lax.dynamic_update_slice(c[:, 1], v, (0, pos, 0, 0))
        new.append(jnp.stack([k_all, v_all], axis=1))
        q = x
        for j, w in enumerate(p["heavy"] if i == 0 else p["heavy"][:1]):
            q = jnp.tanh(q @ w)
            if mark is not None and i == 0 and j == HEAVY // 2:
                q = mark(q)
        live = jnp.arange(T)[None, None, :] <= pos
        s = jnp.einsum("bhd,bthd->bht", q.reshape(B, H, HD), k_all)
        att = jax.nn.softmax(jnp.where(live, s, -1e9), axis=-1)
        x = x + jnp.einsum("bht,bthd->bhd", att, v_all).reshape(B, D)
    return jnp.argmax(x @ p["out"], -1).astype(jnp.int32), new


@functools.cache
def _params():
    ks = jax.random.split(jax.random.key(11), 5)
    return {
        "emb": jax.random.normal(ks[0], (V, D)),
        "wk": jax.random.normal(ks[1], (2, D, D)) / np.sqrt(D),
        "wv": jax.random.normal(ks[2], (2, D, D)) / np.sqrt(D),
        "heavy": list(jax.random.normal(ks[3], (HEAVY, D, D)) * (1.5 / np.sqrt(D))),
        "out": jax.random.normal(ks[4], (D, V)) * 3,
    }


@functools.cache
def _program(marked: bool):
    step = functools.partial(_step, mark=stage_boundary if marked else None)
    cache = [jnp.zeros((B, 2, T, H, HD))] * 2
    ex = (_params(), cache, jnp.zeros(B, jnp.int32), jnp.int32(0))
    return hlopipe.load(jax.export.export(jax.jit(step, donate_argnums=1))(*ex).serialize())


def _kv_shaped(staged):
    return [r for st in staged.stages for r in st.receives if r.aval.shape == (B, T, H, HD)]


FIRST = np.array([[1, 7]], np.int32)


def test_the_cost_model_does_not_send_the_updated_k_and_v():
    prog = _program(False)
    # without the state constraint, the balanced cut sends layer 0's updated K and V
    assert _kv_shaped(hlopipe.split(prog, num_stages=2))
    gen = Generator(prog, _params(), num_stages=2)
    assert _kv_shaped(gen.split.staged) == [] and gen.split.state_sent == ()
    assert gen.bytes_per_token().state == 0
    session = gen.start(tokens=FIRST)
    toks = session.generate(T)
    ref, _ = generate_unsplit(prog, _params(), T, tokens=FIRST)
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 3
    assert session.metrics.bytes_sent.state == 0


def test_markers_that_cut_inside_attention_count_state_sent():
    prog = _program(True)
    gen = Generator(prog, _params())
    assert [(x.src, x.dst, x.nbytes) for x in gen.split.state_sent] == [(0, 1, KV_BYTES)] * 2
    theory = gen.bytes_per_token()
    assert theory.state == 2 * KV_BYTES
    session = gen.start(tokens=FIRST)
    toks = session.generate(T)
    ref, _ = generate_unsplit(prog, _params(), T, tokens=FIRST)
    np.testing.assert_array_equal(toks, ref)
    sent = session.metrics.bytes_sent
    assert sent.state == T * 2 * KV_BYTES  # measured: each step sends layer 0's K and V
    # and, from the model's sizes, the query and the residual stream (f32[B, D] each) per
    # step, and the token (i32[B]) back to stage 0 after each step but the last
    assert sent.activations == T * 2 * B * D * 4 == T * theory.activations
    assert sent.feedback == (T - 1) * B * 4
    text = repr(gen)
    assert f"stage 0 sends {KV_BYTES} B of state [1][0] per token to stage 1" in text


def test_print_warns_of_a_stage_with_more_than_its_share_of_layers_or_none():
    from hlopipe.generate._plan import split_warnings, stage_layers
    from hlopipe.models import gpt_decode as gd
    from hlopipe.stages import split_stateful

    cfg = gd.DecodeConfig(n_layers=4, max_len=8)
    params = gd.init(jax.random.key(0), cfg)
    ex = (params, gd.empty_cache(B, cfg), jnp.zeros(B, jnp.int32), jnp.int32(0))
    step = gd.decode_fn(cfg, stage_boundary, cuts=(3,))  # layers 0-2 on stage 0, 3 on stage 1
    prog = hlopipe.load(jax.export.export(jax.jit(step, donate_argnums=1))(*ex).serialize())
    split = split_stateful(prog, prog.arg_roles())
    assert stage_layers(split, None) == [3, 1]
    (warning,) = split_warnings([3, 1], ())
    assert warning.startswith("warning: stage 0 keeps the state of 3 layers, more than its "
                              "share (2 of 4 over 2 stages)")  # fmt: skip
    assert split_warnings([2, 2], ()) == []
    (none,) = split_warnings([2, 0, 2], ())
    assert none.startswith("warning: stage 1 keeps no layer's state")


def _flat_cache_program(n_layers: int, cut: int):
    """gd's decode step taking its caches as one flat list ``[k0, v0, k1, v1, ...]`` (paths
    ``[1][0]``, ``[1][1]``, ...: nothing in a name tells a layer), a marker after layer
    ``cut - 1``."""
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(n_layers=n_layers, max_len=8)
    step = gd.decode_fn(cfg, stage_boundary, cuts=(cut,))

    def flat(params, caches, tokens, pos):
        cache = [{"k": caches[2 * i], "v": caches[2 * i + 1]} for i in range(n_layers)]
        nxt, cache = step(params, cache, tokens, pos)
        return nxt, [a for c in cache for a in (c["k"], c["v"])]

    caches = [a for c in gd.empty_cache(B, cfg) for a in (c["k"], c["v"])]
    ex = (gd.init(jax.random.key(0), cfg), caches, jnp.zeros(B, jnp.int32), jnp.int32(0))
    return hlopipe.load(jax.export.export(jax.jit(flat, donate_argnums=1))(*ex).serialize())


def test_the_balance_warning_counts_layers_not_k_and_v_arrays():
    """Issue 49: a K and a V cache of one layer are one layer (by data flow), however they
    are named. 3 layers cut 2 | 1 are balanced (share 2 of 3); 4 cut 3 | 1 are not."""
    from hlopipe.generate._plan import split_warnings, stage_layers
    from hlopipe.stages import split_stateful

    prog = _flat_cache_program(3, 2)
    split = split_stateful(prog, prog.arg_roles())
    assert [len(split.state_of(s)) for s in range(2)] == [4, 2]  # K and V arrays per stage
    assert stage_layers(split, None) == [2, 1]
    assert split_warnings(stage_layers(split, None), ()) == []
    prog = _flat_cache_program(4, 3)
    split = split_stateful(prog, prog.arg_roles())
    assert stage_layers(split, None) == [3, 1]
    (warning,) = split_warnings(stage_layers(split, None), ())
    assert warning.startswith("warning: stage 0 keeps the state of 3 layers, more than its "
                              "share (2 of 4 over 2 stages)")  # fmt: skip


@pytest.mark.x64
def test_a_torch_exports_layers_are_counted_once_for_k_and_v():
    """The caches of a transformers StaticCache exported by torch_xla (``cache.0.keys``,
    ``cache.0.values``, ...): a 2-layer Llama in 2 stages keeps one layer on each."""
    from hlopipe.generate._plan import counters_as_position, stage_layers
    from hlopipe.stages import split_stateful

    prog = hlopipe.load(
        str(Path(__file__).parents[1] / "data/frameworks/torch_xla/export_llama/decode.mlir")
    )
    split = split_stateful(prog, counters_as_position(prog.arg_roles()), num_stages=2)
    assert sorted((x.stage, x.path) for x in split.slots) == [
        (0, "cache.0.keys"), (0, "cache.0.values"), (1, "cache.1.keys"), (1, "cache.1.values")
    ]  # fmt: skip
    assert stage_layers(split, None) == [1, 1]
