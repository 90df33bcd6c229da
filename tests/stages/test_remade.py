"""Values made from constants (masks, fills, position tables) are made on every stage that
reads them, and batch arguments reach the stage that reads them from the batch: between the
stages of a transformer only the residual stream is sent (``hlopipe/stages/_local.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.models import llama
from hlopipe.stages import split
from hlopipe.stages._local import find_remade
from hlopipe.stages._partition import crossing_bytes

B, S, D, L, V = 2, 8, 16, 8, 12


def _layer(w, h, mask, fill):
    scores = jnp.einsum("bqd,de,bke->bqk", h, w, h) / 4.0
    att = jax.nn.softmax(jnp.where(mask, scores, fill), axis=-1)
    return h + 0.5 * jnp.tanh(jnp.einsum("bqk,bkd->bqd", att, h) @ w)


def _masked_loss(marked: bool):
    """The causal mask and its fill made once, before the first layer, and read by all 8."""

    def loss(ws, batch):
        x, y = batch
        mask = jnp.tril(jnp.ones((S, S), bool))
        fill = jnp.full((S, S), -1e9, jnp.float32)
        h = x
        for i, w in enumerate(ws):
            h = _layer(w, h, mask, fill)
            if marked and i % 2 == 1 and i < L - 1:
                h = hlopipe.stage_boundary(h)
        return jnp.mean((h - y) ** 2)

    return loss


def _ws():
    keys = jax.random.split(jax.random.key(0), L)
    return [jax.random.normal(k, (D, D), jnp.float32) * 0.3 for k in keys]


def _batch():
    kx, ky = jax.random.split(jax.random.key(1))
    return jax.random.normal(kx, (B, S, D)), jax.random.normal(ky, (B, S, D))


def _sends_only(staged, aval) -> None:
    """Every stage after the first receives exactly one value, ``aval``, from the stage before;
    every stage but the last sends exactly that one value to the next."""
    want = (tuple(aval.shape), np.dtype(aval.dtype))
    for st in staged.stages:
        got = [(r.src, tuple(r.aval.shape), np.dtype(r.aval.dtype)) for r in st.receives]
        assert got == ([] if st.index == 0 else [(st.index - 1, *want)]), st.index
        sent = [(s.dst, tuple(s.aval.shape), np.dtype(s.aval.dtype)) for s in st.sends]
        last = st.index == staged.num_stages - 1
        assert sent == ([] if last else [(st.index + 1, *want)]), st.index
        nbytes = 0 if st.index == 0 else int(np.prod(want[0])) * want[1].itemsize
        assert st.cost is not None and st.cost.recv_bytes == nbytes


@pytest.mark.parametrize("marked", [True, False], ids=["markers", "auto"])
def test_a_mask_made_once_is_made_on_every_stage(marked):
    """8 layers reading one mask, 4 stages: only the residual stream crosses, forward and
    backward, and the split's loss and gradients are one device's."""
    loss = _masked_loss(marked)
    ws, batch = _ws(), _batch()
    staged = split(loss, ws, batch, **({} if marked else {"num_stages": 4}))
    assert staged.num_stages == 4
    _sends_only(staged, jax.ShapeDtypeStruct((B, S, D), jnp.float32))
    value, grads = staged.value_and_grad(ws, batch)
    want_value, want_grads = jax.value_and_grad(loss)(ws, batch)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_a_mask_read_by_a_layer_loop_is_made_on_every_stage():
    """The layers as a ``lax.scan`` over stacked weights reading the mask: cut into ranges of
    iterations, each range's stage makes the mask itself."""

    def loss(ws, batch):
        x, y = batch
        mask = jnp.tril(jnp.ones((S, S), bool))
        fill = jnp.full((S, S), -1e9, jnp.float32)
        h, _ = jax.lax.scan(lambda h, w: (_layer(w, h, mask, fill), None), x, ws)
        return jnp.mean((h - y) ** 2)

    ws, batch = jnp.stack(_ws()), _batch()
    staged = split(loss, ws, batch, num_stages=4)
    assert staged.arg_pieces is not None  # the loop was cut into ranges
    _sends_only(staged, jax.ShapeDtypeStruct((B, S, D), jnp.float32))
    value, grads = staged.value_and_grad(ws, batch)
    want_value, want_grads = jax.value_and_grad(loss)(ws, batch)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    np.testing.assert_allclose(grads, want_grads, rtol=1e-4, atol=1e-6)


def test_the_cost_model_counts_only_the_residual_stream_between_layers():
    """What the partitioner sees crossing a boundary between layers is the residual stream,
    not the mask and fill every layer reads."""
    ws, batch = _ws(), _batch()
    jaxpr = jax.make_jaxpr(_masked_loss(marked=False))(ws, batch).jaxpr
    dots = [i for i, e in enumerate(jaxpr.eqns) if e.primitive.name == "dot_general"]
    cross = crossing_bytes(jaxpr.eqns, jaxpr.outvars, remade=find_remade(jaxpr).remade)
    layer_1 = dots[len(dots) // L]  # (layer 0 reads x, an argument: never counted)
    assert cross[layer_1 : dots[-1]].min() == B * S * D * 4  # at the layers' ends


def test_the_pipeline_of_a_mask_made_once_trains_as_one_device():
    """The same program pipelined (4 ranks, 1F1B, 2 microbatches): loss and gradients equal
    one device's."""
    loss = _masked_loss(marked=False)
    ws, batch = _ws(), _batch()
    pipe = hlopipe.Pipeline(loss, ws, batch, num_stages=4, num_microbatches=2,
                            devices=jax.devices()[:4])  # fmt: skip
    _sends_only(pipe.plan.staged, jax.ShapeDtypeStruct((B // 2, S, D), jnp.float32))
    _, metrics = pipe.step(pipe.init(ws), batch)
    want_value, want_grads = jax.value_and_grad(loss)(ws, batch)
    assert float(metrics.loss) == pytest.approx(float(want_value), rel=1e-5)
    assert metrics.grads is not None
    for g, w in zip(metrics.grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


# -- batch arguments ----------------------------------------------------------------------------


def _labelled_loss(relay: bool):
    """Labels one-hot encoded before the first layer (as a framework's input pipeline would
    leave them), or passed through every marker with the residual stream (``relay``)."""

    def loss(ws, batch):
        x, labels = batch
        onehot = jax.nn.one_hot(labels, V)
        h = x
        for i, w in enumerate(ws[:4]):
            h = h + jnp.tanh(h @ w)
            if i < 3:
                if relay:
                    h, labels = hlopipe.stage_boundary(h, labels)
                else:
                    h = hlopipe.stage_boundary(h)
        logits = h[..., :V]
        if relay:
            onehot = jax.nn.one_hot(labels, V)
        return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), axis=-1))

    return loss


@pytest.mark.parametrize("relay", [False, True], ids=["one-hot-at-top", "through-markers"])
def test_labels_reach_the_last_stage_from_the_batch(relay):
    """Labels read only by the last stage are its program argument, not a value relayed
    through stage 0; the pipeline hands the labels to the last rank alone."""
    loss = _labelled_loss(relay)
    ws = _ws()
    x = jax.random.normal(jax.random.key(2), (B, S, D))
    labels = jax.random.randint(jax.random.key(3), (B, S), 0, V)
    staged = split(loss, ws, (x, labels))
    flat_labels = len(ws) + 1
    readers = [st.index for st in staged.stages if flat_labels in st.params_needed]
    assert readers == [3]
    _sends_only(staged, jax.ShapeDtypeStruct((B, S, D), jnp.float32))
    value, grads = staged.value_and_grad(ws, (x, labels))
    want_value, want_grads = jax.value_and_grad(loss)(ws, (x, labels))
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    if relay:
        return
    pipe = hlopipe.Pipeline(loss, ws, (x, labels), num_microbatches=2, devices=jax.devices()[:4])
    prog = pipe._runner(train=True).prog
    ranks = {rank for (leaf, rank, _), _slot in prog.batch_slots.items() if leaf == 1}
    assert ranks == {pipe.placement.rank_of(3)}


def test_a_prefills_empty_caches_made_at_the_top_are_made_on_their_stages():
    """A prefill that makes every layer's empty cache before the first layer (as users write
    one): each stage makes the caches of its layers and fills them; none is sent."""
    T = 12

    def prefill(ws, x):
        caches = [jnp.zeros((B, T, D), jnp.float32) for _ in ws]
        h, out = x, []
        for i, (w, c) in enumerate(zip(ws, caches, strict=True)):
            k = h @ w
            out.append(jax.lax.dynamic_update_slice(c, k, (0, 0, 0)))
            h = h + jnp.tanh(k)
            if i % 2 == 1 and i < 3:
                h = hlopipe.stage_boundary(h)
        return h, out

    ws, (x, _) = _ws()[:4], _batch()
    staged = split(prefill, ws, x)
    _sends_only(staged, jax.ShapeDtypeStruct((B, S, D), jnp.float32))
    cache_stage = [src.stage for src in staged.out_sources[1:]]
    assert cache_stage == [0, 0, 1, 1]
    got, want = staged(ws, x), prefill(ws, x)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_value_no_larger_than_its_arguments_is_sent():
    """A value made cheaply from arguments as large as itself (a weight scaled, an embedding
    row gathered from a table larger than it) is sent: remaking it would move as many bytes
    and put the arguments on two stages."""

    def f(w, table, tokens):
        scaled = w * 2.0
        rows = table[tokens]
        h = hlopipe.stage_boundary(jnp.tanh(rows @ w))
        return jnp.sum(h @ scaled + rows)

    w, table = jnp.ones((D, D)), jnp.ones((64, D))
    staged = split(f, w, table, jnp.zeros((B, S), jnp.int32))
    got = sorted(tuple(r.aval.shape) for r in staged.stages[1].receives)
    assert got == sorted([(D, D), (B, S, D), (B, S, D)])
    assert staged.stages[1].params_needed == ()


# -- a Llama-shaped loss -------------------------------------------------------------------------


def _residual(cfg):
    return jax.ShapeDtypeStruct((cfg.batch, cfg.seq, cfg.d), cfg.dtype)


def test_llama_at_7b_width_from_hlo_text_sends_only_the_residual_stream():
    """A Llama-shaped loss at 7B's width (4 of its 32 layers: d 4096, ff 11008, seq 2048,
    vocab 32000, bf16), lowered with abstract arguments to HLO text and split into 4 stages
    by the cost model: each cut sends the [1, 2048, 4096] residual stream and nothing else
    (the mask, its -1e9 fill and the rotary tables are made on every stage)."""
    cfg = llama.LLAMA_7B._replace(layers=4)
    text = jax.jit(llama.loss_fn(cfg)).lower(*llama.abstract_args(cfg)).as_text("hlo")
    staged = split(hlopipe.load(text), num_stages=4)
    _sends_only(staged, _residual(cfg))


def test_llama_at_7b_width_from_python_sends_only_the_residual_stream():
    cfg = llama.LLAMA_7B._replace(layers=4)
    staged = split(llama.loss_fn(cfg), *llama.abstract_args(cfg), num_stages=4)
    _sends_only(staged, _residual(cfg))


def test_a_small_llama_from_hlo_text_splits_to_one_devices_loss_and_gradients():
    """The same loss at small sizes, rehydrated from its HLO text and split into 3 stages by
    the cost model: only the residual stream crosses, and loss and gradients equal JAX's."""
    cfg = llama.LlamaConfig(layers=3, seq=8)
    fn = llama.loss_fn(cfg)
    params = llama.init(jax.random.key(4), cfg)
    tokens = jax.random.randint(jax.random.key(5), (cfg.batch, cfg.seq), 0, cfg.vocab)
    labels = jnp.roll(tokens, -1, axis=1)
    program = hlopipe.load(jax.jit(fn).lower(params, tokens, labels).as_text("hlo"))
    staged = split(program, num_stages=3)
    _sends_only(staged, _residual(cfg))
    flat = [*jax.tree_util.tree_leaves(params), tokens, labels]
    n = len(flat) - 2
    value, grads = staged.value_and_grad(*flat, argnums=tuple(range(n)))
    want_value, want_grads = jax.jit(jax.value_and_grad(fn))(params, tokens, labels)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for g, w in zip(grads, jax.tree_util.tree_leaves(want_grads), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
