"""A small GPT-style language model: token + position embeddings, pre-norm transformer blocks
(causal multi-head attention, GELU MLP), a final layer norm and logits tied to the token
embedding (so the first and last pipeline stages share a parameter).

Pure JAX. ``boundary`` lets a caller put a stage marker between layers without this module
importing anything of hlopipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, Any]


@dataclass(frozen=True)
class GPTDims:
    """The sizes every GPT of this package has: the vocabulary, the model width ``d_model``
    split over ``n_heads`` attention heads, ``n_layers`` blocks and the MLP's hidden width
    ``d_ff``. :class:`GPTConfig` adds the sequence length it trains on,
    ``gpt_decode.DecodeConfig`` the length of its KV cache."""

    vocab: int = 64
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 64

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class GPTConfig(GPTDims):
    """The training GPT's sizes: :class:`GPTDims` and ``seq``, the sequence length (the rows
    of the position table)."""

    seq: int = 16


def init(key: jax.Array, cfg: GPTConfig = GPTConfig()) -> Params:
    """Parameters as a dict: ``embed``, ``pos``, ``layers`` (a list, one dict per block),
    ``ln_f``."""
    keys = jax.random.split(key, cfg.n_layers + 2)
    std = 0.02

    def dense(k: jax.Array, n_in: int, n_out: int) -> jax.Array:
        return jax.random.normal(k, (n_in, n_out), jnp.float32) * std

    layers = [
        block_params(keys[i + 2], cfg.d_model, cfg.d_ff, dense, biases=True)
        for i in range(cfg.n_layers)
    ]
    return {
        "embed": jax.random.normal(keys[0], (cfg.vocab, cfg.d_model), jnp.float32) * std,
        "pos": jax.random.normal(keys[1], (cfg.seq, cfg.d_model), jnp.float32) * std,
        "layers": layers,
        "ln_f": norm_params(cfg.d_model),
    }


def norm_params(d: int) -> Params:
    """A layer norm's parameters: gain ``g`` (ones) and bias ``b`` (zeros) of width ``d``."""
    return {"g": jnp.ones(d), "b": jnp.zeros(d)}


def block_params(
    key: jax.Array,
    d_model: int,
    d_ff: int,
    dense: Callable[[jax.Array, int, int], jax.Array],
    *,
    biases: bool,
) -> Params:
    """One block's parameters (as :func:`block` reads them): the two layer norms, the fused
    ``qkv`` and output ``proj`` weights, the MLP's ``fc1``/``fc2`` (with ``biases``, their
    zero biases ``fc1_b``/``fc2_b``); ``dense(key, n_in, n_out)`` makes a weight matrix."""
    k = jax.random.split(key, 4)
    p = {
        "ln1": norm_params(d_model),
        "qkv": dense(k[0], d_model, 3 * d_model),
        "proj": dense(k[1], d_model, d_model),
        "ln2": norm_params(d_model),
        "fc1": dense(k[2], d_model, d_ff),
        "fc2": dense(k[3], d_ff, d_model),
    }
    if biases:
        p["fc1_b"] = jnp.zeros(d_ff)
        p["fc2_b"] = jnp.zeros(d_model)
    return p


def layer_norm(p: Params, x: jax.Array, eps: float = 1e-5) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]


def block(p: Params, x: jax.Array, n_heads: int) -> jax.Array:
    b, t, d = x.shape
    h = layer_norm(p["ln1"], x)
    q, k, v = jnp.split(h @ p["qkv"], 3, axis=-1)
    q, k, v = (a.reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 1, 3) for a in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(jnp.float32(d // n_heads))
    mask = jnp.tril(jnp.ones((t, t), bool))
    scores = jnp.where(mask, scores, jnp.float32(-1e9))
    att = jax.nn.softmax(scores, axis=-1) @ v
    x = x + att.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["proj"]
    return mlp(p, x)


def mlp(p: Params, x: jax.Array) -> jax.Array:
    """A block's second half: ``x`` plus the GELU MLP of its layer norm (with the biases
    ``fc1_b``/``fc2_b`` where ``p`` has them)."""
    h = layer_norm(p["ln2"], x) @ p["fc1"]
    if "fc1_b" in p:
        h = h + p["fc1_b"]
    h = jax.nn.gelu(h) @ p["fc2"]
    if "fc2_b" in p:
        h = h + p["fc2_b"]
    return x + h


def logits(
    params: Params,
    tokens: jax.Array,
    cfg: GPTConfig = GPTConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
) -> jax.Array:
    """Logits ``[batch, seq, vocab]``. With ``boundary``, it is applied to the activations
    every ``layers_per_stage`` blocks (a pipeline stage marker)."""
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    for i, p in enumerate(params["layers"]):
        if boundary is not None and layers_per_stage and i and i % layers_per_stage == 0:
            x = boundary(x)
        x = block(p, x, cfg.n_heads)
    x = layer_norm(params["ln_f"], x)
    return x @ params["embed"].T


def loss(
    params: Params,
    batch: tuple[jax.Array, jax.Array],
    cfg: GPTConfig = GPTConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
) -> jax.Array:
    """Mean next-token cross-entropy of ``batch = (tokens, targets)``, both ``int32[b, seq]``."""
    tokens, targets = batch
    lg = logits(params, tokens, cfg, boundary, layers_per_stage)
    logp = jax.nn.log_softmax(lg, axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return nll.mean()


def batch(
    key: jax.Array, batch_size: int, cfg: GPTConfig = GPTConfig()
) -> tuple[jax.Array, jax.Array]:
    """A synthetic batch: sequences that count up modulo the vocabulary from a random start, so
    the next token is learnable."""
    start = jax.random.randint(key, (batch_size, 1), 0, cfg.vocab)
    seq = (start + jnp.arange(cfg.seq + 1)[None, :]) % cfg.vocab
    return seq[:, :-1].astype(jnp.int32), seq[:, 1:].astype(jnp.int32)
