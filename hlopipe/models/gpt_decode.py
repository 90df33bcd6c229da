"""A tiny GPT for generation: a prefill and a decode step that carry a KV cache.

The decode step follows hlopipe's generation conventions (``docs/generation.md``):

* ``decode(params, cache, tokens[b], position) -> (next_tokens[b], cache)``: one greedy step;
  the cache is the state (exported with it donated), the token is the feedback;
* ``prefill(params, prompt[b, P]) -> (next_tokens[b], cache)``: the whole prompt at once;
* :func:`decode_slots_fn`, a server's form: ``decode(params, cache, tokens[b], position[b])
  -> (logits[b, vocab], cache)``, each sequence at its own position (its cache row written
  there, its attention masked to the positions up to it), so that a finished sequence's row
  can start a new one while the others carry on; the logits are sampled outside.

The cache is a list with one ``{"k", "v"}`` dict per layer (``[b, max_len, heads, head_dim]``
each), or with ``stacked=True`` one ``{"k", "v"}`` dict of ``[layers, b, max_len, ...]``
arrays. ``boundary`` puts a pipeline stage marker on the activations between layers, after
every ``layers_per_stage`` layers (or at the layer indices ``cuts``), without this module
importing anything of hlopipe. Pure JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.models.gpt import GPTDims, block_params, layer_norm, mlp, norm_params

Params = dict[str, Any]


@dataclass(frozen=True)
class DecodeConfig(GPTDims):
    """The decoding GPT's sizes: :class:`~hlopipe.models.gpt.GPTDims` and ``max_len``, the
    longest sequence (prompt and generated tokens) its cache and position table hold."""

    max_len: int = 48


def init(key: jax.Array, cfg: DecodeConfig = DecodeConfig()) -> Params:
    """Parameters: ``embed``, ``pos``, ``layers`` (one dict per block), ``ln_f``, ``head``.

    The scales are larger than a trained model's initialisation so that greedy decoding of
    random weights gives varied tokens with clear top-1 margins.
    """
    keys = jax.random.split(key, cfg.n_layers + 3)

    def dense(k: jax.Array, n_in: int, n_out: int) -> jax.Array:
        return jax.random.normal(k, (n_in, n_out), jnp.float32) / jnp.sqrt(jnp.float32(n_in))

    layers = [
        block_params(keys[i + 3], cfg.d_model, cfg.d_ff, dense, biases=False)
        for i in range(cfg.n_layers)
    ]
    return {
        "embed": jax.random.normal(keys[0], (cfg.vocab, cfg.d_model), jnp.float32),
        "pos": jax.random.normal(keys[1], (cfg.max_len, cfg.d_model), jnp.float32),
        "layers": layers,
        "ln_f": norm_params(cfg.d_model),
        "head": dense(keys[2], cfg.d_model, cfg.vocab) * 4.0,
    }


def empty_cache(batch: int, cfg: DecodeConfig = DecodeConfig(), *, stacked: bool = False) -> Any:
    """A zero cache for ``batch`` sequences."""
    hd = cfg.head_dim
    shape = (batch, cfg.max_len, cfg.n_heads, hd)
    if stacked:
        full = (cfg.n_layers, *shape)
        return {"k": jnp.zeros(full, jnp.float32), "v": jnp.zeros(full, jnp.float32)}
    return [
        {"k": jnp.zeros(shape, jnp.float32), "v": jnp.zeros(shape, jnp.float32)}
        for _ in range(cfg.n_layers)
    ]


def _attend(p: Params, x: jax.Array, k_all: jax.Array, v_all: jax.Array, last: jax.Array, cfg):
    """Attention of ``x [b, t, d]`` (positions ``last - t + 1 .. last``) over the cache."""
    b, t, d = x.shape
    hd = cfg.head_dim
    q = (layer_norm(p["ln1"], x) @ p["qkv"])[..., :d].reshape(b, t, cfg.n_heads, hd)
    scores = jnp.einsum("bthd,bshd->bhts", q, k_all) / jnp.sqrt(jnp.float32(hd))
    q_pos = last - t + 1 + jnp.arange(t)
    mask = jnp.arange(cfg.max_len)[None, :] <= q_pos[:, None]
    scores = jnp.where(mask[None, None], scores, jnp.float32(-1e9))
    att = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, axis=-1), v_all)
    x = x + att.reshape(b, t, d) @ p["proj"]
    return mlp(p, x)


def _kv(p: Params, x: jax.Array, cfg: DecodeConfig) -> tuple[jax.Array, jax.Array]:
    b, t, d = x.shape
    hd = cfg.head_dim
    h = layer_norm(p["ln1"], x) @ p["qkv"]
    k = h[..., d : 2 * d].reshape(b, t, cfg.n_heads, hd)
    v = h[..., 2 * d :].reshape(b, t, cfg.n_heads, hd)
    return k, v


def _cut_after(cfg: DecodeConfig, layers_per_stage: int | None, cuts: Sequence[int]) -> set[int]:
    if cuts:
        return set(cuts)
    if layers_per_stage:
        return {i for i in range(1, cfg.n_layers) if i % layers_per_stage == 0}
    return set()


def _run(
    params: Params,
    cache: Any,
    x: jax.Array,
    start: jax.Array,
    cfg: DecodeConfig,
    boundary: Callable[[Any], Any] | None,
    cut: set[int],
) -> tuple[jax.Array, Any]:
    """The blocks over ``x`` (positions ``start ..``), writing each layer's keys and values."""
    t = x.shape[1]
    last = start + t - 1
    stacked = isinstance(cache, dict)
    new_cache: Any = dict(cache) if stacked else []
    for i, p in enumerate(params["layers"]):
        if boundary is not None and i in cut:
            x = boundary(x)
        k, v = _kv(p, x, cfg)
        if stacked:
            zero = jnp.zeros((), jnp.int32)
            idx = (jnp.int32(i), zero, start, zero, zero)
            new_cache["k"] = jax.lax.dynamic_update_slice(new_cache["k"], k[None], idx)
            new_cache["v"] = jax.lax.dynamic_update_slice(new_cache["v"], v[None], idx)
            k_all, v_all = new_cache["k"][i], new_cache["v"][i]
        else:
            zero = jnp.zeros((), jnp.int32)
            # A prefill makes each layer's empty cache inside the layer, on its own stage.
            mine = empty_cache(x.shape[0], cfg)[0] if cache is None else cache[i]
            k_all = jax.lax.dynamic_update_slice(mine["k"], k, (zero, start, zero, zero))
            v_all = jax.lax.dynamic_update_slice(mine["v"], v, (zero, start, zero, zero))
            new_cache.append({"k": k_all, "v": v_all})
        x = _attend(p, x, k_all, v_all, last, cfg)
    return x, new_cache


def _head(params: Params, x: jax.Array) -> jax.Array:
    return layer_norm(params["ln_f"], x[:, -1]) @ params["head"]


def step_logits(
    params: Params,
    cache: Any,
    tokens: jax.Array,
    position: jax.Array,
    cfg: DecodeConfig = DecodeConfig(),
) -> jax.Array:
    """The logits ``[b, vocab]`` of one decode step (for tests of the top-1 margin)."""
    x = params["embed"][tokens][:, None] + params["pos"][position][None, None]
    x, _ = _run(params, cache, x, position, cfg, None, set())
    return _head(params, x)


def _run_slots(
    params: Params,
    cache: list[Any],
    x: jax.Array,
    position: jax.Array,
    cfg: DecodeConfig,
    boundary: Callable[[Any], Any] | None,
    cut: set[int],
) -> tuple[jax.Array, list[Any]]:
    """The blocks over one token a sequence, ``x [b, 1, d]``, sequence ``i`` at
    ``position[i]``: its keys and values written in its own cache row there, its attention
    over its own positions up to it (what a row held beyond them is never read)."""
    b, _, d = x.shape
    hd = cfg.head_dim
    rows = jnp.arange(b)
    mask = jnp.arange(cfg.max_len)[None, :] <= position[:, None]  # [b, max_len]
    new_cache = []
    for i, p in enumerate(params["layers"]):
        if boundary is not None and i in cut:
            x = boundary(x)
        k, v = _kv(p, x, cfg)
        k_all = cache[i]["k"].at[rows, position].set(k[:, 0])
        v_all = cache[i]["v"].at[rows, position].set(v[:, 0])
        new_cache.append({"k": k_all, "v": v_all})
        q = (layer_norm(p["ln1"], x) @ p["qkv"])[..., :d].reshape(b, 1, cfg.n_heads, hd)
        scores = jnp.einsum("bthd,bshd->bhts", q, k_all) / jnp.sqrt(jnp.float32(hd))
        scores = jnp.where(mask[:, None, None, :], scores, jnp.float32(-1e9))
        att = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, axis=-1), v_all)
        x = mlp(p, x + att.reshape(b, 1, d) @ p["proj"])
    return x, new_cache


def decode_slots_fn(
    cfg: DecodeConfig = DecodeConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
    cuts: Sequence[int] = (),
) -> Callable[..., tuple[jax.Array, Any]]:
    """``decode(params, cache, tokens int32[b], position int32[b]) -> (logits float32[b,
    vocab], cache)``: one step of each sequence at its own position (the cache a list of
    per-layer dicts, as :func:`empty_cache` makes it). Its argmax is :func:`decode_fn`'s token
    for a sequence at that position."""
    cut = _cut_after(cfg, layers_per_stage, cuts)

    def decode(params: Params, cache: Any, tokens: jax.Array, position: jax.Array):
        x = params["embed"][tokens][:, None] + params["pos"][position][:, None]
        x, cache = _run_slots(params, cache, x, position, cfg, boundary, cut)
        return _head(params, x), cache

    return decode


def decode_fn(
    cfg: DecodeConfig = DecodeConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
    cuts: Sequence[int] = (),
    *,
    sample: bool = False,
    logits: bool = False,
) -> Callable[..., Any]:
    """``decode(params, cache, tokens int32[b], position int32[]) -> (next int32[b], cache)``,
    greedy; with ``sample``, ``decode(params, cache, tokens, position, key uint32[2]) ->
    (next, cache, key)``: sampled from the softmax with a raw key carried as feedback; with
    ``logits``, ``-> (logits float32[b, vocab], cache)`` (sampled outside)."""
    cut = _cut_after(cfg, layers_per_stage, cuts)

    def decode(params: Params, cache: Any, tokens: jax.Array, position: jax.Array, *key: Any):
        x = params["embed"][tokens][:, None] + params["pos"][position][None, None]
        x, cache = _run(params, cache, x, position, cfg, boundary, cut)
        out = _head(params, x)
        if logits:
            return out, cache
        if not sample:
            return jnp.argmax(out, axis=-1).astype(jnp.int32), cache
        noise = _gumbel(key[0], out.shape)
        nxt = jnp.argmax(out + noise, axis=-1).astype(jnp.int32)
        return nxt, cache, _mix(key[0] + jnp.uint32(1))

    return decode


def _mix(x: jax.Array) -> jax.Array:
    """A 32-bit integer hash (murmur3's finaliser): jax.random's threefry would bring 64-bit
    counters into the exported program."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _gumbel(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Gumbel noise from a raw ``uint32[2]`` key (sampling = argmax of logits + noise)."""
    n = jnp.arange(int(np.prod(shape)), dtype=jnp.uint32).reshape(shape)
    bits = _mix(_mix(n * jnp.uint32(0x9E3779B9) ^ key[0]) ^ key[1])
    u = ((bits >> 8).astype(jnp.float32) + 0.5) / jnp.float32(1 << 24)
    return -jnp.log(-jnp.log(u))


def prefill_fn(
    cfg: DecodeConfig = DecodeConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
    cuts: Sequence[int] = (),
    *,
    stacked: bool = False,
    logits: bool = False,
    every_position: bool = False,
) -> Callable[..., tuple[jax.Array, Any]]:
    """``prefill(params, prompt int32[b, P]) -> (next int32[b], cache)``; with ``logits``,
    ``-> (logits float32[b, vocab], cache)``, the prompt's last position's (with
    ``every_position``, ``float32[b, P, vocab]``, every position's)."""
    cut = _cut_after(cfg, layers_per_stage, cuts)

    def prefill(params: Params, prompt: jax.Array):
        b, t = prompt.shape
        x = params["embed"][prompt] + params["pos"][:t][None]
        cache = empty_cache(b, cfg, stacked=True) if stacked else None
        x, cache = _run(params, cache, x, jnp.zeros((), jnp.int32), cfg, boundary, cut)
        if logits and every_position:
            return layer_norm(params["ln_f"], x) @ params["head"], cache
        if logits:
            return _head(params, x), cache
        return jnp.argmax(_head(params, x), axis=-1).astype(jnp.int32), cache

    return prefill


def prompts(
    key: jax.Array, groups: int, batch: int, length: int, cfg: DecodeConfig = DecodeConfig()
):
    """Random prompts ``int32[groups, batch, length]``."""
    return jax.random.randint(key, (groups, batch, length), 0, cfg.vocab, jnp.int32)


def chunk_fn(
    cfg: DecodeConfig = DecodeConfig(),
    boundary: Callable[[Any], Any] | None = None,
    layers_per_stage: int | None = None,
    cuts: Sequence[int] = (),
    *,
    logits: bool = False,
) -> Callable[..., tuple[jax.Array, Any]]:
    """``chunk(params, cache, tokens int32[b, C], position int32[]) -> (next int32[b],
    cache)``: a prefill of the next ``C`` tokens of every sequence into the cache it is given,
    from ``position`` on (the prompt's tokens ``position .. position + C - 1``); the token is
    the last position's next (with ``logits``, ``-> (logits float32[b, vocab], cache)``). A
    prompt longer than a prefill goes through it in chunks: ``prefill`` of its first tokens,
    then ``chunk`` at each next position."""
    cut = _cut_after(cfg, layers_per_stage, cuts)

    def chunk(params: Params, cache: Any, tokens: jax.Array, position: jax.Array):
        t = tokens.shape[1]
        pos = jax.lax.dynamic_slice_in_dim(params["pos"], position, t)
        x = params["embed"][tokens] + pos[None]
        x, cache = _run(params, cache, x, position, cfg, boundary, cut)
        out = _head(params, x)
        if logits:
            return out, cache
        return jnp.argmax(out, axis=-1).astype(jnp.int32), cache

    return chunk
