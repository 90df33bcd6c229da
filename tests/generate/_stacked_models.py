"""Tiny GPT-like decode steps and prefills whose KV cache is ONE array stacked over the
layers, in the layouts frameworks write (for ``test_stacked_layouts.py``):

* ``"keras"``: ``cache[b, L, 2, T, heads, head_dim]`` as keras_hub keeps it: layer ``i`` reads
  ``cache[:, i]`` and the step writes the cache back with ``jnp.stack(..., axis=1)``;
* ``"leading"``: ``cache[L, b, 2, T, heads, head_dim]``: layer ``i`` reads ``cache[i]`` and
  writes its rows back with ``cache.at[i].set(...)`` (a scatter).

The prefill makes the whole empty cache with ``jnp.zeros`` before the first layer, as users
write one. No stage markers anywhere.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

B, L, T, H, HD, V = 2, 4, 16, 2, 4, 32
D = H * HD
P = 4  # prompt length


@functools.cache
def params():
    ks = jax.random.split(jax.random.key(3), 4 + 4 * L)
    layer = [
        {
            "wqkv": jax.random.normal(ks[4 + 4 * i], (D, 3 * D)) / np.sqrt(D),
            "wo": jax.random.normal(ks[5 + 4 * i], (D, D)) / np.sqrt(D),
            "w1": jax.random.normal(ks[6 + 4 * i], (D, 2 * D)) / np.sqrt(D),
            "w2": jax.random.normal(ks[7 + 4 * i], (2 * D, D)) / np.sqrt(2 * D),
        }
        for i in range(L)
    ]
    return {
        "emb": jax.random.normal(ks[0], (V, D)),
        "pos": jax.random.normal(ks[1], (T, D)) * 0.1,
        "layers": layer,
        "out": jax.random.normal(ks[2], (D, V)) * 2,
    }


def _layer(p, x, kv, start):
    """One block over ``x[b, t, D]`` at positions ``start..``; ``kv[b, 2, T, H, HD]`` is this
    layer's cache: returns the new ``x`` and the updated ``kv``."""
    b, t, _ = x.shape
    q, k, v = jnp.split(x @ p["wqkv"], 3, axis=-1)
    zero = jnp.zeros((), jnp.int32)
    at = (zero, start, zero, zero)
    k_all = lax.dynamic_update_slice(kv[:, 0], k.reshape(b, t, H, HD), at)
    v_all = lax.dynamic_update_slice(kv[:, 1], v.reshape(b, t, H, HD), at)
    s = jnp.einsum("bqhd,bkhd->bhqk", q.reshape(b, t, H, HD), k_all) / np.sqrt(HD)
    live = jnp.arange(T)[None, :] <= (start + jnp.arange(t))[:, None]
    att = jax.nn.softmax(jnp.where(live[None, None], s, -1e9), axis=-1)
    x = x + jnp.einsum("bhqk,bkhd->bqhd", att, v_all).reshape(b, t, D) @ p["wo"]
    x = x + jnp.tanh(x @ p["w1"]) @ p["w2"]
    return x, jnp.stack([k_all, v_all], axis=1)


def _run(p, cache, x, start, layout):
    new = []
    for i, lp in enumerate(p["layers"]):
        if layout == "keras":
            x, kv = _layer(lp, x, cache[:, i], start)
            new.append(kv)
        else:
            x, kv = _layer(lp, x, cache[i], start)
            cache = cache.at[i].set(kv)
    if layout == "keras":
        cache = jnp.stack(new, axis=1)
    return jnp.argmax(x[:, -1] @ p["out"], -1).astype(jnp.int32), cache


def empty(layout):
    shape = (B, L, 2, T, H, HD) if layout == "keras" else (L, B, 2, T, H, HD)
    return jnp.zeros(shape, jnp.float32)


def decode_fn(layout):
    def decode(p, cache, tokens, position):
        x = (p["emb"][tokens] + p["pos"][position])[:, None]
        return _run(p, cache, x, position, layout)

    return decode


def prefill_fn(layout):
    def prefill(p, prompt):
        x = p["emb"][prompt] + p["pos"][: prompt.shape[1]][None]
        return _run(p, empty(layout), x, jnp.zeros((), jnp.int32), layout)

    return prefill


def exported(layout, fmt="export"):
    """The decode step (cache donated) and the prefill, loaded: through ``jax.export``, or
    as HLO text (``fmt="hlo"``: XLA's order of operations, not the tracer's)."""
    import hlopipe

    ex = (params(), empty(layout), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = jax.jit(decode_fn(layout), donate_argnums=1)
    pre = jax.jit(prefill_fn(layout))
    pre_ex = (params(), jnp.zeros((B, P), jnp.int32))
    if fmt == "hlo":
        texts = dec.lower(*ex).as_text("hlo"), pre.lower(*pre_ex).as_text("hlo")
        return tuple(hlopipe.load(t.encode()) for t in texts)
    return (
        hlopipe.load(jax.export.export(dec)(*ex).serialize()),
        hlopipe.load(jax.export.export(pre)(*pre_ex).serialize()),
    )


def generate_plain(layout, prompt, n):
    """The oracle: the model's own functions, unsplit, jitted, in a plain loop."""
    pre, dec = jax.jit(prefill_fn(layout)), jax.jit(decode_fn(layout))
    tok, cache = pre(params(), jnp.asarray(prompt))
    out = [tok]
    for t in range(n - 1):
        tok, cache = dec(params(), cache, tok, jnp.int32(P + t))
        out.append(tok)
    return np.stack([np.asarray(x) for x in out], axis=-1), np.asarray(cache)
