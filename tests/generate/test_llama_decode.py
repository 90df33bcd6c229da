"""``hlopipe.models.llama_decode`` (the Llama the benchmarks serve and generate with) against
``hlopipe.models.llama``'s loss on the same parameters: the greedy token after a sequence is
the label of its last position that the loss is lowest with (every other label fixed, the
loss is ``C - log p(label) / T``). The loss attends with its own full causal mask and
repeated K/V heads, without a cache."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.models import llama, llama_decode

SHAPE = llama_decode.LlamaShape(layers=2, d=32, ff=64, heads=4, kv_heads=2, vocab=64, max_len=12)


def _loss_greedy(params, seq: np.ndarray, first: int) -> np.ndarray:
    """The greedy token after each prefix ``seq[: t + 1]``, ``t`` from ``first`` to the last
    but one, by the loss over ``seq``: at position ``t`` the label the loss is lowest with,
    every other label fixed (the loss is causal: ``seq[t + 1:]`` leaves ``t``'s term)."""
    n, vocab = len(seq), SHAPE.vocab
    cfg = llama.LlamaConfig(layers=SHAPE.layers, d=SHAPE.d, ff=SHAPE.ff, heads=SHAPE.heads,
                            kv_heads=SHAPE.kv_heads, vocab=vocab, seq=n)  # fmt: skip
    loss = llama.loss_fn(cfg)
    tokens = jnp.asarray(seq[None], jnp.int32)
    base = jnp.asarray(np.append(seq[1:], 0), jnp.int32)
    at, label = np.divmod(np.arange((n - 1 - first) * vocab), vocab)  # (position, label)
    labels = jnp.tile(base, (len(at), 1)).at[np.arange(len(at)), first + at].set(label)
    losses = jax.jit(jax.vmap(lambda lab: loss(params, tokens, lab[None])))(labels)
    return np.asarray(jnp.argmin(losses.reshape(-1, vocab), axis=1))


def test_prefill_and_decode_steps_give_the_loss_s_greedy_tokens():
    params = llama_decode.init(jax.random.key(3), SHAPE)
    assert sum(x.size for x in jax.tree.leaves(params)) == SHAPE.num_params()
    prompt = np.random.default_rng(0).integers(0, SHAPE.vocab, 4).astype(np.int32)
    prefill = jax.jit(llama_decode.prefill_fn(SHAPE))
    decode = jax.jit(llama_decode.decode_fn(SHAPE))
    tok, cache = prefill(params, jnp.asarray(prompt[None]))
    seq = list(prompt)
    while True:
        seq.append(int(tok[0]))
        if len(seq) == SHAPE.max_len:
            break
        tok, cache = decode(params, cache, tok, jnp.int32(len(seq) - 1))
    got = seq[len(prompt) :]
    want = _loss_greedy(params, np.asarray(seq), len(prompt) - 1)
    assert got == want.tolist()
    assert len(set(got)) > 3  # varied tokens, not one repeated


def test_a_block_of_tokens_after_a_prefill_writes_the_cache_the_token_steps_write():
    params = llama_decode.init(jax.random.key(4), SHAPE)
    rows = np.random.default_rng(1).integers(0, SHAPE.vocab, (2, 9)).astype(np.int32)
    _, cache = jax.jit(llama_decode.prefill_fn(SHAPE))(params, jnp.asarray(rows[:, :4]))
    block = jax.jit(lambda p, c, x: llama_decode.forward(SHAPE, p, c, x, 4))
    block_tok, block_cache = block(params, cache, jnp.asarray(rows[:, 4:]))
    step = jax.jit(llama_decode.decode_fn(SHAPE))
    for t in range(4, 9):
        tok, cache = step(params, cache, jnp.asarray(rows[:, t]), jnp.int32(t))
    np.testing.assert_array_equal(block_tok, tok)
    for a, b in zip(jax.tree.leaves(block_cache), jax.tree.leaves(cache), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
