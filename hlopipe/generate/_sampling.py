"""Sampling a decode step's logits on its last stage: temperature, top-k, top-p, a seed per
sequence.

A decode step that returns logits (``float[b, vocab]`` where a token-returning one returns
``int[b]``) has its token chosen by :func:`sample`, run as one more executable of the step on
the stage that makes the logits (``_steps.py``); the chosen token is what is fed back. Each
sequence's parameters live in its group's registers (:class:`Sampling`, put by
``Session.sampling``); its random key is its seed folded with its position, so a sequence's
tokens depend on its seed and its own tokens only, never on the other sequences of its group or
on when it was admitted. Temperature 0 is greedy (argmax).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.errors import RuntimeConfigError


class Sampling(NamedTuple):
    """Per sequence of a group (each ``[b]``): ``seed`` (uint32), ``temperature`` (float32, 0:
    greedy), ``top_p`` (float32 in (0, 1]; 1: no cut), ``top_k`` (int32; 0: no cut); the
    penalties (:func:`penalize`, ``None``: none) ``presence``, ``frequency`` (float32; 0:
    none), ``repetition`` (float32; 1: none), ``logprobs`` (bool: whether the step's
    log-probabilities are wanted, :func:`token_logprobs`; none computed unless one sequence of
    the group wants them), with ``counts`` (float32 ``[b, vocab]``: how often each token was
    generated) and ``seen`` (bool ``[b, vocab]``: the tokens of the prompt and the output)."""

    seed: Any
    temperature: Any
    top_p: Any
    top_k: Any
    presence: Any = None
    frequency: Any = None
    repetition: Any = None
    logprobs: Any = None
    counts: Any = None
    seen: Any = None

    @classmethod
    def greedy(cls, batch: int) -> Sampling:
        return cls(
            np.zeros(batch, np.uint32),
            np.zeros(batch, np.float32),
            np.ones(batch, np.float32),
            np.zeros(batch, np.int32),
        )


_PENALTIES = ("presence", "frequency", "repetition", "counts", "seen")


def sample(
    logits: jax.Array,
    position: jax.Array,
    seed: jax.Array,
    temperature: jax.Array,
    top_p: jax.Array,
    top_k: jax.Array,
    presence: jax.Array | None = None,
    frequency: jax.Array | None = None,
    repetition: jax.Array | None = None,
    logprobs: jax.Array | None = None,
    counts: jax.Array | None = None,
    seen: jax.Array | None = None,
) -> jax.Array:
    """The next token ``int32[b]`` of each sequence from ``logits [b, vocab]``.

    Args:
      logits: the decode step's output (or a prefill's: ``[b, vocab]``, or ``[b, length,
        vocab]`` of which the last position is sampled).
      position: the step's position (``[]``, ``[1]`` or per sequence ``[b]``): folded into
        each sequence's key with its seed.
      seed / temperature / top_p / top_k: per sequence, as :class:`Sampling` holds them.
      presence / frequency / repetition / counts / seen: the penalties (all or none), applied
        to the logits first (:func:`penalize`).
      logprobs: not read here (:class:`Sampling`'s field, read beside the draw).

    Returns:
      argmax where ``temperature == 0``; else a draw from ``softmax(logits / temperature)``
      restricted to the ``top_k`` largest logits (when ``top_k > 0``) and then to the smallest
      set of them whose probability reaches ``top_p``.
    """
    if logits.ndim == 3:  # a prefill's logits at every prompt position: the last one's
        logits = logits[:, -1]
    penalties = (presence, frequency, repetition, counts, seen)
    if any(p is not None for p in penalties):
        if any(p is None for p in penalties):
            given = [n for n, p in zip(_PENALTIES, penalties, strict=True) if p is not None]
            raise RuntimeConfigError(
                f"sample: penalties {given} given without the others: give presence, "
                "frequency, repetition, counts and seen together (Sampling's penalty fields)"
            )
        logits = penalize(logits, *penalties)  # type: ignore[arg-type]  # none is None
    b, vocab = logits.shape
    logits = logits.astype(jnp.float32)
    greedy = jnp.argmax(logits, axis=-1).astype(jnp.int32)
    pos = jnp.broadcast_to(jnp.reshape(position, (-1,)), (b,)).astype(jnp.uint32)
    scaled = logits / jnp.maximum(temperature, jnp.float32(1e-6))[:, None]
    ordered = jnp.sort(scaled, axis=-1)[:, ::-1]  # largest first
    k = jnp.where(top_k > 0, jnp.minimum(top_k, vocab), vocab)
    kth = jnp.take_along_axis(ordered, (k - 1)[:, None], axis=-1)
    ordered = jnp.where(ordered >= kth, ordered, -jnp.inf)
    probs = jax.nn.softmax(ordered, axis=-1)
    before = jnp.cumsum(probs, axis=-1) - probs  # the mass of the larger ones
    kept = (before < top_p[:, None]) & (ordered > -jnp.inf)
    floor = jnp.min(jnp.where(kept, ordered, jnp.inf), axis=-1, keepdims=True)
    masked = jnp.where(scaled >= floor, scaled, -jnp.inf)
    keys = jax.vmap(lambda s, p: jax.random.fold_in(jax.random.key(s), p))(seed, pos)
    drawn = jax.vmap(jax.random.categorical)(keys, masked).astype(jnp.int32)
    return jnp.where(temperature > 0, drawn, greedy)


# How many of the largest log-probabilities a step gives beside its token: OpenAI's chat API
# allows ``top_logprobs`` up to 20 (its completions API ``logprobs`` up to 5)
TOP_LOGPROBS = 20


def token_logprobs(logits: jax.Array, token: jax.Array, k: int = TOP_LOGPROBS) -> jax.Array:
    """The log-probabilities a sampled step gives beside its token, computed on the stage
    making the logits so that only ``[b, 1 + 2k]`` floats a step (no logits) can reach the
    host: per sequence ``log_softmax(logits)`` at ``token``, then the ``k`` largest, then
    their token ids (as floats, one array a step: exact for any vocabulary below 2**24
    tokens). The distribution is the step's own logits' (before temperature and the cuts),
    as OpenAI's and vLLM's ``logprobs`` are; a vocabulary smaller than ``k`` gives its size."""
    if logits.ndim == 3:  # a prefill's logits at every prompt position: the last one's
        logits = logits[:, -1]
    lp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    chosen = jnp.take_along_axis(lp, token.astype(jnp.int32)[:, None], axis=-1)
    top, ids = jax.lax.top_k(lp, min(k, lp.shape[-1]))
    return jnp.concatenate([chosen, top, ids.astype(jnp.float32)], axis=-1)


def penalize(
    logits: jax.Array,
    presence: jax.Array,
    frequency: jax.Array,
    repetition: jax.Array,
    counts: jax.Array,
    seen: jax.Array,
) -> jax.Array:
    """``logits [b, vocab]`` (or a prefill's ``[b, length, vocab]``: the last position's)
    with each sequence's penalties applied, in vLLM's order: first the repetition penalty of
    Keskar et al. 2019 (CTRL) as Hugging Face's ``RepetitionPenaltyLogitsProcessor`` applies
    it, the logit of a token ``seen`` in the prompt or the output divided by ``repetition``
    where positive and multiplied where negative; then OpenAI's ``logits[t] -= presence *
    (counts[t] > 0) + frequency * counts[t]`` over the generated tokens' ``counts``."""
    if logits.ndim == 3:
        logits = logits[:, -1]
    x = logits.astype(jnp.float32)
    r = repetition[:, None]
    x = jnp.where(seen, jnp.where(x > 0, x / r, x * r), x)
    return x - presence[:, None] * (counts > 0) - frequency[:, None] * counts


def count_tokens(
    counts: jax.Array, seen: jax.Array, tokens: jax.Array, rows: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The penalties' ``counts`` and ``seen`` (``[b, vocab]``) with ``tokens [k]`` (``k <=
    b``: a step of the first ``k`` rows) counted in at the rows where ``rows [b]`` (bool) is
    set: ``counts[r, tokens[r]] += 1`` and ``seen[r, tokens[r]] = True`` (a scatter on the
    device: no ``[b, vocab]`` array crosses from the host)."""
    k = tokens.shape[0]
    at = (jnp.arange(k), tokens.astype(jnp.int32))
    counts = counts.at[at].add(rows[:k].astype(counts.dtype))
    return counts, seen.at[at].max(rows[:k])


def set_count_row(
    counts: jax.Array, seen: jax.Array, row: jax.Array, new_counts: jax.Array, new_seen: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``counts`` and ``seen`` with row ``row`` (``[]``) replaced by ``new_counts``,
    ``new_seen`` (``[1, vocab]``): a sequence admitted into that row."""
    start = (row, jnp.int32(0))
    return (jax.lax.dynamic_update_slice(counts, new_counts, start),
            jax.lax.dynamic_update_slice(seen, new_seen, start))  # fmt: skip
