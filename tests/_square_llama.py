"""A Llama-shaped layer (RMSNorm, rotary q and k, causal attention, SwiGLU) over a residual
stream that is the program's own argument, for the tests of layer detection and of the
planner's attention: width 64 and 4 heads, so that at a sequence of 64 and batch 1 every
activation ``[1, s, d]`` is square, as a 7B Llama's at 4096 tokens."""

from __future__ import annotations

import jax
import jax.numpy as jnp

D, H, F = 64, 4, 128
SHAPES = {"g1": (D,), "g2": (D,), "wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D),
          "w1": (D, F), "w3": (D, F), "w2": (F, D)}  # fmt: skip


def _rms(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g


def _rotary(x):
    s, dh = x.shape[1], x.shape[-1]
    angle = jnp.arange(s)[:, None] / 10000.0 ** (jnp.arange(0, dh, 2) / dh)[None, :]
    cos, sin = jnp.cos(angle)[None, :, None], jnp.sin(angle)[None, :, None]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def block(p, x, written="einsum"):
    """One layer; attention ``written`` with einsums and a mask, or as
    ``jax.nn.dot_product_attention``."""
    b, s, d = x.shape
    h = _rms(x, p["g1"])
    q, k, v = ((h @ p[n]).reshape(b, s, H, d // H) for n in ("wq", "wk", "wv"))
    q, k = _rotary(q), _rotary(k)
    if written == "dot_product_attention":
        a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
    else:
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // H)
        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    x = x + a.reshape(b, s, d) @ p["wo"]
    h = _rms(x, p["g2"])
    return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]


def loss(params, x, written="einsum"):
    """The layers in turn (a list of dicts), or ``written == "scan"``: a scan over the
    layers stacked (a dict of arrays with a leading layer axis)."""
    if written == "scan":
        x, _ = jax.lax.scan(lambda c, p: (block(p, c), None), x, params)
    else:
        for p in params:
            x = block(p, x, written)
    return jnp.mean(x**2)
