"""A Llama-shaped language-model loss, written the way model code writes one: the causal mask,
its ``-1e9`` fill and the rotary position tables are built once, at the top, and handed to
every layer (as Hugging Face and keras_hub do, and as XLA's constant merging leaves an HLO
module); pre-norm blocks of RMSNorm, rotary multi-head attention and a SwiGLU MLP; a final
norm, an untied head and a token cross-entropy against integer labels.

At real sizes (:data:`LLAMA_7B`: 32 layers, width 4096; :data:`LLAMA_70B`: 80 layers, width
8192, grouped-query attention with 8 K/V heads) it is for splitting from abstract
arguments (:func:`abstract_args`: ``jax.ShapeDtypeStruct``s, no weights allocated); small
configurations run. Pure JAX; ``boundary`` lets a caller put a stage marker between layers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

Params = dict[str, Any]


class LlamaConfig(NamedTuple):
    """The sizes of a Llama-shaped loss: ``layers`` blocks of width ``d`` split over ``heads``
    attention heads, an MLP of width ``ff``, a vocabulary of ``vocab``, sequences of ``seq``
    tokens, ``batch`` of them, computed in ``dtype``."""

    layers: int = 2
    d: int = 32
    ff: int = 64
    heads: int = 4
    vocab: int = 64
    seq: int = 16
    batch: int = 1
    dtype: Any = jnp.float32
    kv_heads: int | None = None  # grouped-query attention: K/V heads shared by query heads

    @property
    def head_dim(self) -> int:
        return self.d // self.heads

    @property
    def num_kv_heads(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads


SMALL = LlamaConfig()
LLAMA_7B = LlamaConfig(layers=32, d=4096, ff=11008, heads=32, vocab=32000, seq=2048,
                       batch=1, dtype=jnp.bfloat16)  # fmt: skip
LLAMA_70B = LlamaConfig(layers=80, d=8192, ff=28672, heads=64, kv_heads=8, vocab=32000,
                        seq=2048, batch=1, dtype=jnp.bfloat16)  # fmt: skip


def _param_shapes(cfg: LlamaConfig) -> Params:
    d, f, kv = cfg.d, cfg.ff, cfg.num_kv_heads * cfg.head_dim
    layer = {"attn_norm": (d,), "wq": (d, d), "wk": (d, kv), "wv": (d, kv), "wo": (d, d),
             "mlp_norm": (d,), "w_gate": (d, f), "w_up": (d, f), "w_down": (f, d)}  # fmt: skip
    return {
        "embed": (cfg.vocab, d),
        "layers": [dict(layer) for _ in range(cfg.layers)],
        "norm": (d,),
        "head": (d, cfg.vocab),
    }


def abstract_args(cfg: LlamaConfig = LLAMA_7B) -> tuple[Params, Any, Any]:
    """``(params, tokens, labels)`` as ``jax.ShapeDtypeStruct``s: lower or split the loss
    without allocating a weight."""
    params = jax.tree_util.tree_map(
        lambda s: jax.ShapeDtypeStruct(s, cfg.dtype),
        _param_shapes(cfg),
        is_leaf=lambda x: isinstance(x, tuple),
    )
    tokens = jax.ShapeDtypeStruct((cfg.batch, cfg.seq), jnp.int32)
    return params, tokens, tokens


def init(key: jax.Array, cfg: LlamaConfig = SMALL) -> Params:
    """Random parameters (norm scales 1, weights normal with std 0.02)."""
    shapes = _param_shapes(cfg)
    leaves, tree = jax.tree_util.tree_flatten(shapes, is_leaf=lambda x: isinstance(x, tuple))
    keys = jax.random.split(key, len(leaves))
    vals = [
        jnp.ones(s, cfg.dtype) if len(s) == 1 else 0.02 * jax.random.normal(k, s, cfg.dtype)
        for k, s in zip(keys, leaves, strict=True)
    ]
    return jax.tree_util.tree_unflatten(tree, vals)


def rms_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    """``x`` over the root mean square of its last axis (in float32, plus 1e-6), times
    ``scale``."""
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return y.astype(x.dtype) * scale


def rotate(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Rotary position embedding: the two halves of ``x``'s last axis rotated by the angles
    whose ``cos`` and ``sin`` are given."""
    a, b = jnp.split(x, 2, axis=-1)
    return jnp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _block(
    p: Params, h: jax.Array, bias: jax.Array, cos: jax.Array, sin: jax.Array, cfg: LlamaConfig
) -> jax.Array:
    b, s, d = h.shape
    nh, hd, kvh = cfg.heads, cfg.head_dim, cfg.num_kv_heads
    x = rms_norm(h, p["attn_norm"])
    q = (x @ p["wq"]).reshape(b, s, nh, hd)
    k = (x @ p["wk"]).reshape(b, s, kvh, hd)
    v = (x @ p["wv"]).reshape(b, s, kvh, hd)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    if kvh != nh:  # each K/V head serves nh // kvh query heads
        k, v = jnp.repeat(k, nh // kvh, axis=2), jnp.repeat(v, nh // kvh, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd).astype(h.dtype)
    att = jax.nn.softmax((scores + bias).astype(jnp.float32), axis=-1).astype(h.dtype)
    h = h + jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, s, d) @ p["wo"]
    x = rms_norm(h, p["mlp_norm"])
    return h + (jax.nn.silu(x @ p["w_gate"]) * (x @ p["w_up"])) @ p["w_down"]


def loss_fn(
    cfg: LlamaConfig = SMALL, boundary: Callable[[Any], Any] | None = None
) -> Callable[[Params, jax.Array, jax.Array], jax.Array]:
    """``loss(params, tokens, labels)``: mean token cross-entropy. The mask, its fill and the
    rotary tables are made once before the first layer and read by every layer; ``boundary``
    (e.g. ``hlopipe.stage_boundary``), if given, is applied to the residual stream after every
    layer but the last."""

    def loss(params: Params, tokens: jax.Array, labels: jax.Array) -> jax.Array:
        s, hd = tokens.shape[1], cfg.head_dim
        causal = jnp.tril(jnp.ones((s, s), bool))
        fill = jnp.full((1, cfg.heads, s, s), -1e9, cfg.dtype)
        bias = jnp.where(causal[None, None], jnp.zeros((), cfg.dtype), fill)
        inv = 1.0 / (10000.0 ** (jnp.arange(0, hd // 2, dtype=jnp.float32) * 2.0 / hd))
        angles = jnp.arange(s, dtype=jnp.float32)[:, None] * inv[None, :]
        cos = jnp.cos(angles)[None, :, None, :].astype(cfg.dtype)
        sin = jnp.sin(angles)[None, :, None, :].astype(cfg.dtype)
        h = params["embed"][tokens]
        n = len(params["layers"])
        for i, p in enumerate(params["layers"]):
            h = _block(p, h, bias, cos, sin, cfg)
            if boundary is not None and i < n - 1:
                h = boundary(h)
        logits = (rms_norm(h, params["norm"]) @ params["head"]).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    return loss
