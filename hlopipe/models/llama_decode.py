"""A Llama decoder for generation: a prefill and a decode step that carry a KV cache, at any
size (:class:`LlamaShape`): pre-norm blocks of RMSNorm, rotary attention with grouped K/V
heads and a SwiGLU MLP, a final norm and an untied head, greedy.

The steps follow hlopipe's generation conventions (``docs/generation.md``):

* ``decode(params, cache, tokens[b], position) -> (next_tokens[b], cache)``: one greedy step,
  the cache the state, the token the feedback;
* ``prefill(params, prompt[b, P]) -> (next_tokens[b], cache)``: the whole prompt at once into
  a zero cache.

Both are :func:`forward` of a block of tokens written into the cache at a start position. The
cache is a list with one ``{"k", "v"}`` dict per layer, ``[b, max_len, kv_heads, head_dim]``
each. The benchmarks serve it (``benchmarks/serve.py --llama``) and generate with it
(``benchmarks/gpu.py``); the layers' arithmetic is the loss's (:mod:`hlopipe.models.llama`).
Pure JAX.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from hlopipe.models.llama import rms_norm, rotate

Params = dict[str, Any]


class LlamaShape(NamedTuple):
    """A Llama decoder's sizes: ``layers`` blocks of width ``d``, ``heads`` query heads over
    ``kv_heads`` K/V heads, an MLP of width ``ff``, a vocabulary of ``vocab`` and a cache of
    ``max_len`` positions."""

    layers: int
    d: int
    ff: int
    heads: int
    kv_heads: int
    vocab: int
    max_len: int

    @property
    def head_dim(self) -> int:
        return self.d // self.heads

    def num_params(self) -> int:
        """How many parameters :func:`init` makes."""
        kv = self.kv_heads * self.head_dim
        per_layer = 2 * self.d * self.d + 2 * self.d * kv + 3 * self.d * self.ff + 2 * self.d
        return self.layers * per_layer + 2 * self.vocab * self.d + self.d

    def cache_bytes_per_row(self, itemsize: int = 4) -> int:
        """The bytes of one sequence's cache (K and V of every layer)."""
        return 2 * self.layers * self.max_len * self.kv_heads * self.head_dim * itemsize


def init(key: jax.Array, shape: LlamaShape, dtype: Any = jnp.float32) -> Params:
    """Random parameters: norm scales 1, the embedding standard normal, the other weights
    normal with standard deviation ``1 / sqrt(fan_in)`` (the head's 4 times that), so that
    greedy decoding of random weights has clear top-1 margins; drawn in float32, then cast to
    ``dtype``. Keys: ``embed``, ``layers`` (one dict per block), ``norm``, ``head``."""
    s = shape
    kv = s.kv_heads * s.head_dim
    shapes = {"wq": (s.d, s.d), "wk": (s.d, kv), "wv": (s.d, kv), "wo": (s.d, s.d),
              "w_gate": (s.d, s.ff), "w_up": (s.d, s.ff), "w_down": (s.ff, s.d)}  # fmt: skip
    keys = iter(jax.random.split(key, s.layers * len(shapes) + 2))

    def dense(size: tuple[int, int], gain: float = 1.0) -> jax.Array:
        w = jax.random.normal(next(keys), size, jnp.float32) * (gain / math.sqrt(size[0]))
        return w.astype(dtype)

    layers = [{"attn_norm": jnp.ones(s.d, dtype), "mlp_norm": jnp.ones(s.d, dtype),
               **{name: dense(size) for name, size in shapes.items()}}
              for _ in range(s.layers)]  # fmt: skip
    return {
        "embed": jax.random.normal(next(keys), (s.vocab, s.d), jnp.float32).astype(dtype),
        "layers": layers,
        "norm": jnp.ones(s.d, dtype),
        "head": dense((s.d, s.vocab), 4.0),
    }


def empty_cache(batch: int, shape: LlamaShape, dtype: Any = jnp.float32) -> list[Params]:
    """A zero cache for ``batch`` sequences."""
    size = (batch, shape.max_len, shape.kv_heads, shape.head_dim)
    return [{"k": jnp.zeros(size, dtype), "v": jnp.zeros(size, dtype)} for _ in range(shape.layers)]


def forward(
    shape: LlamaShape, params: Params, cache: list[Params], tokens: jax.Array, start: Any
) -> tuple[jax.Array, list[Params]]:
    """``tokens`` written into ``cache`` from position ``start`` on and attended causally.

    Args:
        shape: the model's sizes.
        params: as :func:`init` makes them.
        cache: as :func:`empty_cache` makes it, holding the positions before ``start``.
        tokens: ``[b, T]`` int32 ids.
        start: the position of ``tokens[:, 0]`` (a scalar, traced or not).

    Returns:
        The next greedy token after the last of ``tokens`` (``[b]`` int32) and the cache with
        positions ``start .. start + T - 1`` written.
    """
    s = shape
    b, T = tokens.shape
    hd, group = s.head_dim, s.heads // s.kv_heads
    x = params["embed"][tokens]
    pos = start + jnp.arange(T)
    inv = 1.0 / (10000.0 ** (jnp.arange(0, hd // 2, dtype=jnp.float32) * 2.0 / hd))
    angle = pos[:, None].astype(jnp.float32) * inv
    cos = jnp.cos(angle)[None, :, None, :].astype(x.dtype)
    sin = jnp.sin(angle)[None, :, None, :].astype(x.dtype)
    visible = jnp.arange(s.max_len)[None, :] <= pos[:, None]
    zero = jnp.zeros((), jnp.int32)
    where = (zero, jnp.asarray(start, jnp.int32), zero, zero)
    new = []
    for p, c in zip(params["layers"], cache, strict=True):
        h = rms_norm(x, p["attn_norm"])
        q = rotate((h @ p["wq"]).reshape(b, T, s.heads, hd), cos, sin)
        q = q.reshape(b, T, s.kv_heads, group, hd)
        k = rotate((h @ p["wk"]).reshape(b, T, s.kv_heads, hd), cos, sin)
        v = (h @ p["wv"]).reshape(b, T, s.kv_heads, hd)
        k_all = jax.lax.dynamic_update_slice(c["k"], k, where)
        v_all = jax.lax.dynamic_update_slice(c["v"], v, where)
        new.append({"k": k_all, "v": v_all})
        scores = jnp.einsum("btgrd,bsgd->bgrts", q, k_all).astype(jnp.float32) / math.sqrt(hd)
        att = jax.nn.softmax(jnp.where(visible, scores, -1e30), axis=-1).astype(x.dtype)
        x = x + jnp.einsum("bgrts,bsgd->btgrd", att, v_all).reshape(b, T, s.d) @ p["wo"]
        h = rms_norm(x, p["mlp_norm"])
        x = x + (jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
    logits = (rms_norm(x[:, -1], params["norm"]) @ params["head"]).astype(jnp.float32)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32), new


def decode_fn(shape: LlamaShape) -> Callable[..., Any]:
    """``decode(params, cache, tokens[b], position) -> (next_tokens[b], cache)``: one greedy
    step (:func:`forward` of one token a sequence)."""

    def decode(params: Params, cache: list[Params], tokens: jax.Array, position: Any) -> Any:
        return forward(shape, params, cache, tokens[:, None], position)

    return decode


def prefill_fn(shape: LlamaShape) -> Callable[..., Any]:
    """``prefill(params, prompt[b, P]) -> (next_tokens[b], cache)``: the prompt into a zero
    cache of the parameters' dtype from position 0."""

    def prefill(params: Params, prompt: jax.Array) -> Any:
        cache = empty_cache(prompt.shape[0], shape, params["embed"].dtype)
        return forward(shape, params, cache, prompt, 0)

    return prefill
