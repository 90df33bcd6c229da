"""The oracle of the serving and training-to-serving tests on ``hlopipe.models.gpt_decode``:
greedy tokens from the unsplit decode step run directly, one sequence."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from hlopipe.models import gpt_decode as gd


@functools.cache
def _step(cfg: gd.DecodeConfig):
    return jax.jit(gd.decode_slots_fn(cfg))


def greedy_fed(cfg: gd.DecodeConfig, params, prompt: list[int], n: int) -> list[int]:
    """``n`` greedy tokens after ``prompt``: the unsplit decode step fed the whole prompt a
    token a step (no prefill, no chunk), then each argmax fed back."""
    cache, out = gd.empty_cache(1, cfg), []
    for pos in range(len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        logits, cache = _step(cfg)(
            params, cache, jnp.asarray([feed], jnp.int32), jnp.asarray([pos], jnp.int32)
        )
        if pos >= len(prompt) - 1:
            out.append(int(jnp.argmax(logits[0])))
    return out
