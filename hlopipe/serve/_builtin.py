"""The model ``hlopipe serve`` serves without files: the built-in tiny GPT
(``hlopipe.models.gpt_decode``), cut into stages by markers.

Its default form (:attr:`Form.SLOTS`) takes a position per sequence and returns logits: each
sequence of a group is a slot of its own (refilled while the others carry on) and its tokens
are sampled; its prefill (``[b, 8]`` prompts, returning logits, its cache laid out as the
step's: a row a sequence) starts a slot whose prompt has 8 tokens. :attr:`Form.TOKENS` is the
greedy token-returning step with its prefill, one position per group (a group is then the unit
of batching).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

PREFILL_LEN = 8
CUTS = {1: (), 2: (2,), 3: (1, 3), 4: (1, 2, 3)}  # the layers after which each stage begins


class Form(StrEnum):
    """Which decode step of the tiny GPT is served."""

    SLOTS = "slots"  # (params, cache, tokens[b], position[b]) -> (logits[b, vocab], cache)
    TOKENS = "tokens"  # (params, cache, tokens[b], position) -> (tokens[b], cache), a prefill


BATCH = {Form.SLOTS: 2, Form.TOKENS: 1}  # sequences per group


class Builtin(NamedTuple):
    """The tiny GPT's programs (loaded ``Program``s exported with ``jax.export``, the cache
    donated), its parameters, and its cache length (``max_len``, which a position per
    sequence leaves the program's data flow unable to tell)."""

    decode: Any
    prefill: Any
    params: Any
    max_len: int


def builtin_model(stages: int = 2, seed: int = 0, form: Form = Form.SLOTS) -> Builtin:
    """The tiny GPT in ``stages`` stages with parameters from ``seed``, in ``form``, with
    its prefill of :data:`PREFILL_LEN` tokens (returning logits for :attr:`Form.SLOTS`)."""
    import jax
    import jax.numpy as jnp

    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig()
    cuts = CUTS[stages]
    params = gd.init(jax.random.key(seed), cfg)
    b = BATCH[form]
    cache, tokens = gd.empty_cache(b, cfg), jnp.zeros(b, jnp.int32)
    prompt = jnp.zeros((b, PREFILL_LEN), jnp.int32)
    if form is Form.SLOTS:  # the prefill's cache is the slots step's: a row a sequence
        step = jax.jit(gd.decode_slots_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
        exported = jax.export.export(step)(params, cache, tokens, jnp.zeros(b, jnp.int32))
        prefill = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts, logits=True))
    else:
        decode = jax.jit(gd.decode_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
        exported = jax.export.export(decode)(params, cache, tokens, jnp.int32(0))
        prefill = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts))
    return Builtin(
        load(exported.serialize()),
        load(jax.export.export(prefill)(params, prompt).serialize()),
        params,
        cfg.max_len,
    )


def builtin_vocab() -> int:
    from hlopipe.models import gpt_decode as gd

    return gd.DecodeConfig().vocab
