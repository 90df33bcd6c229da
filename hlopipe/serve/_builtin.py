"""The model ``hlopipe serve`` serves without files: the built-in tiny GPT
(``hlopipe.models.gpt_decode``), its decode step and prefill cut into stages by markers."""

from __future__ import annotations

from typing import Any

BATCH = 1  # sequences per group: one request a group, so that groups batch continuously
PREFILL_LEN = 8
CUTS = {1: (), 2: (2,), 3: (1, 3), 4: (1, 2, 3)}  # the layers after which each stage begins


def builtin_model(stages: int = 2, seed: int = 0) -> tuple[Any, Any, Any]:
    """``(decode, prefill, params)``: the tiny GPT's programs (loaded ``Program``s, exported
    with ``jax.export``, the cache donated) and its parameters from ``seed``."""
    import jax
    import jax.numpy as jnp

    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig()
    cuts = CUTS[stages]
    params = gd.init(jax.random.key(seed), cfg)
    decode = jax.jit(gd.decode_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
    example = (params, gd.empty_cache(BATCH, cfg), jnp.zeros(BATCH, jnp.int32), jnp.int32(0))
    prefill = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts))
    prompt = jnp.zeros((BATCH, PREFILL_LEN), jnp.int32)
    return (
        load(jax.export.export(decode)(*example).serialize()),
        load(jax.export.export(prefill)(params, prompt).serialize()),
        params,
    )


def builtin_vocab() -> int:
    from hlopipe.models import gpt_decode as gd

    return gd.DecodeConfig().vocab
