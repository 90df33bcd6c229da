"""Small models for the stage compiler tests: an MLP and a transformer with tied embeddings."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hlopipe.marker import stage_boundary


def mlp_params(key, sizes=(6, 16, 16, 16, 4)):
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {"w": jax.random.normal(k, (a, b)) / jnp.sqrt(a), "b": jnp.zeros(b) + 0.1}
        for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
    ]


def mlp_loss(params, x, y, *, markers=True):
    h = x
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            h = jnp.tanh(h)
            if markers:
                h = stage_boundary(h)
    return jnp.mean((h - y) ** 2)


def tf_params(key, *, vocab=11, d=8, layers=2, ff=16):
    ks = iter(jax.random.split(key, 4 + 6 * layers))

    def n(shape, scale=0.3):
        return jax.random.normal(next(ks), shape) * scale

    return {
        "embed": n((vocab, d)),
        "pos": n((5, d)),
        "layers": [
            {
                "ln1": jnp.ones(d), "wqkv": n((d, 3 * d)), "wo": n((d, d)),
                "ln2": jnp.ones(d), "w1": n((d, ff)), "w2": n((ff, d)),
            }
            for _ in range(layers)
        ],
        "lnf": jnp.ones(d),
    }  # fmt: skip


def _ln(x, g):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g


def _layer(p, x):
    d = x.shape[-1]
    q, k, v = jnp.split(_ln(x, p["ln1"]) @ p["wqkv"], 3, axis=-1)
    att = jax.nn.softmax(q @ k.transpose(0, 2, 1) / jnp.sqrt(d), axis=-1)
    x = x + (att @ v) @ p["wo"]
    return x + jax.nn.gelu(_ln(x, p["ln2"]) @ p["w1"]) @ p["w2"]


def tf_loss(params, tokens, targets, *, markers=True, skip=False):
    """Transformer LM; the embedding is tied (used by the first and the last stage)."""
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    x0 = x
    for p in params["layers"]:
        x = _layer(p, x)
        if markers:
            x = stage_boundary(x)
    if skip:
        x = x + 0.5 * x0  # skip connection from stage 0 over every stage
    logits = _ln(x, params["lnf"]) @ params["embed"].T
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))
