"""The prefill is cut with its decode step: without markers, each layer's cache is made on the
stage the decode step keeps it on (not balanced on the prefill's own costs), and a prefill that
makes every layer's empty cache with ``jnp.zeros`` before the first layer is accepted (the
empty cache depends on no argument: it is made where it is read). Refused only when no cut
keeps every cache on its stage, naming the equation that ties it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.extend.core import jaxpr_as_fun

import hlopipe
from hlopipe.errors import StageError
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd
from hlopipe.stages import sink_constants, split_prefill

CFG = gd.DecodeConfig(n_layers=4, max_len=12)
B, P, TOKENS = 2, 5, 4
RESIDUAL = (B, P, CFG.d_model)


def _prefill_top(boundary=None, cuts=()):
    """A prefill as users write one: every layer's empty cache made before the first layer."""

    def prefill(params, prompt):
        b, t = prompt.shape
        x = params["embed"][prompt] + params["pos"][:t][None]
        cache = gd.empty_cache(b, CFG)  # jnp.zeros, all layers, at the top
        x, cache = gd._run(params, cache, x, jnp.zeros((), jnp.int32), CFG, boundary, set(cuts))
        return jnp.argmax(gd._head(params, x), axis=-1).astype(jnp.int32), cache

    return prefill


@functools.cache
def _params():
    return gd.init(jax.random.key(0), CFG)


@functools.cache
def _programs(kind: str):
    marked = kind.endswith("marked")
    mark = dict(boundary=stage_boundary, cuts=(2,)) if marked else {}
    ex = (_params(), gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = jax.jit(gd.decode_fn(CFG, **mark), donate_argnums=1)
    pre = _prefill_top(**mark) if kind.startswith("top") else gd.prefill_fn(CFG, **mark)
    prompt = jnp.zeros((B, P), jnp.int32)
    return (
        hlopipe.load(jax.export.export(dec)(*ex).serialize()),
        hlopipe.load(jax.export.export(jax.jit(pre))(_params(), prompt).serialize()),
    )


def _check(kind: str, stages: int | None):
    dec, pre = _programs(kind)
    gen = Generator(dec, _params(), prefill=pre, num_stages=stages)
    staged = gen.prefill.staged
    slots = {x.arg: x.stage for x in gen.split.slots}
    for o, arg in gen.prefill.state_of_out.items():  # each cache made where it is kept
        src = staged.out_sources[o]
        assert (src.kind, src.stage) == ("stage", slots[arg])
    # between the prefill's stages only the residual stream crosses
    assert [r.aval.shape for st in staged.stages for r in st.receives] == [RESIDUAL] * (
        len(staged.stages) - 1
    )
    prompts = np.asarray(gd.prompts(jax.random.key(1), 1, B, P, CFG))
    session = gen.start(prompts)
    toks = session.generate(TOKENS)
    ref, _ = generate_unsplit(dec, _params(), TOKENS, prefill=pre, prompts=prompts)
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 3
    assert session.metrics.bytes_sent.state == 0
    return gen


def test_prefill_without_markers_is_cut_where_the_decode_step_keeps_each_cache():
    gen = _check("inside", 3)
    assert gen.layers() == [2, 1, 1]


def test_prefill_making_every_empty_cache_at_the_top_is_accepted():
    _check("top", 2)


def test_prefill_making_every_empty_cache_at_the_top_is_accepted_with_markers():
    _check("top marked", None)


def test_no_consistent_cut_names_the_equation_that_ties_a_cache():
    """Every layer's K and V written from the embeddings before any attention (the order XLA
    may choose): the equations are reordered stage by stage, so layers 2 and 3's caches are
    made on stage 1 though written before layer 0 reads its own. Refused only when a cache
    kept on an earlier stage is read after one kept on a later stage."""

    def pre(w, prompt):
        x = w[0][prompt]
        caches = []
        for i in range(4):
            z = jnp.zeros((B, 8, 16))
            caches.append(lax.dynamic_update_slice(z, jnp.tanh(x @ w[i + 1]), (0, 0, 0)))
        for c in caches:  # attention-like: the scores read the cache and the stream
            x = x + jnp.einsum("bst,btd->bsd", jnp.einsum("bsd,btd->bst", x, c), c)
        return jnp.argmax(x.sum(1), -1), caches

    w = [jnp.ones((16, 16))] * 5
    fn = jax.jit(pre)
    prog = hlopipe.load(jax.export.export(fn)(w, jnp.zeros((B, P), jnp.int32)).serialize())
    staged = split_prefill(prog, {1: 0, 2: 0, 3: 1, 4: 1}, 2)
    assert [staged.out_sources[o].stage for o in (1, 2, 3, 4)] == [0, 0, 1, 1]
    assert {r.aval.shape for st in staged.stages for r in st.receives} == {(B, P, 16)}
    with pytest.raises(StageError) as e:  # layer 0's cache on stage 1, layer 2's on stage 0
        split_prefill(prog, {1: 1, 2: 1, 3: 0, 4: 0}, 2)
    msg = str(e.value)
    assert "touches output 3, kept on stage 0 by the decode step" in msg
    assert "from output 1, kept on stage 1" in msg and "inside the layer" in msg


def test_values_from_constants_alone_are_made_where_they_are_read():
    def f(x):
        zeros = jnp.zeros((4, 8))  # one value, read by two equations far apart
        a = lax.dynamic_update_slice(zeros, x, (0, 0))
        y = jnp.tanh(a @ jnp.ones((8, 8)))
        return lax.dynamic_update_slice(zeros, y[:1], (1, 0)), y

    closed = jax.make_jaxpr(f)(jnp.ones((1, 8)))
    sunk = sink_constants(closed)
    eqns = sunk.jaxpr.eqns
    made = [
        i
        for i, e in enumerate(eqns)
        if e.primitive.name == "broadcast_in_dim" and e.outvars[0].aval.shape == (4, 8)
    ]
    dus = [i for i, e in enumerate(eqns) if e.primitive.name == "dynamic_update_slice"]
    assert len(made) == 2 and [i + 1 for i in made] == dus  # each right before its reader
    x = jnp.arange(8.0)[None]
    for got, want in zip(jaxpr_as_fun(sunk)(x), f(x), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_layer_between_two_caches_goes_where_the_decode_step_reads_its_weights():
    """Layer 1's MLP lies between layer 1's cache (stage 0) and layer 2's (stage 1): either
    cut crosses the residual stream alone. It is cut to the stage the decode step reads its
    weights on (``held_on``), whichever that is, so no weight is placed on both stages (36 MiB
    of a 125M Llama at ``--max-batch 8``, docs/serving.md)."""
    _, pre = _programs("plain")
    stage_of = {1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 1, 7: 1, 8: 1}  # layers 0-1 | 2-3, K and V
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(
        (_params(), 0))[0]]  # fmt: skip
    mlp = {i for i, p in enumerate(paths) if p.startswith("[0]['layers'][1]['")
           and any(k in p for k in ("fc1", "fc2", "ln2"))}  # fmt: skip
    assert len(mlp) == 4
    for there in (0, 1):
        held = {i: frozenset({there if i in mlp else int("[2]" in p or "[3]" in p or "head" in p
                                                         or "ln_f" in p)})
                for i, p in enumerate(paths[:-1])}  # fmt: skip
        staged = split_prefill(pre, stage_of, 2, "the prefill", held)
        reads = [set(st.params_needed) for st in staged.stages]
        assert mlp <= reads[there] and not mlp & reads[1 - there], there
        for i in held:  # every other weight where the decode step reads it
            if i not in mlp:
                assert i in reads[next(iter(held[i]))]
        for o, s in stage_of.items():
            assert (staged.out_sources[o].kind, staged.out_sources[o].stage) == ("stage", s)
        assert [r.aval.shape for st in staged.stages for r in st.receives] == [RESIDUAL]
