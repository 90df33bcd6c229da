"""The GPT of :mod:`hlopipe.models.gpt` with its blocks stacked ``[n_layers, ...]`` and run by
one ``lax.scan`` (as MaxText's ``scan_layers``, Flax's ``nn.scan`` and Equinox stacks write
it): the program holds one loop over the stacked parameters instead of ``n_layers`` copies
of the block. ``fori=True`` writes the same loop as a ``lax.fori_loop`` reading ``W[i]``.

Pure JAX, like :mod:`hlopipe.models.gpt` (whose block, norm and batches it reuses).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hlopipe.models import gpt
from hlopipe.models.gpt import GPTConfig, batch, layer_norm

__all__ = ["GPTConfig", "batch", "init", "logits", "loss", "stack", "unstack"]

Params = dict[str, Any]
_CFG = GPTConfig()  # the default configuration (gpt.GPTConfig())


def stack(params: Params) -> Params:
    """:mod:`~hlopipe.models.gpt` parameters with the ``layers`` list stacked into ``blocks``
    (every leaf gets a leading ``[n_layers]`` axis)."""
    out = {k: v for k, v in params.items() if k != "layers"}
    out["blocks"] = jax.tree.map(lambda *xs: jnp.stack(xs), *params["layers"])
    return out


def unstack(params: Params) -> Params:
    """The inverse of :func:`stack`."""
    n = jax.tree.leaves(params["blocks"])[0].shape[0]
    out = {k: v for k, v in params.items() if k != "blocks"}
    out["layers"] = [jax.tree.map(lambda x, i=i: x[i], params["blocks"]) for i in range(n)]
    return out


def init(key: jax.Array, cfg: GPTConfig = _CFG) -> Params:
    """The parameters of ``gpt.init(key, cfg)``, stacked (see :func:`stack`)."""
    return stack(gpt.init(key, cfg))


def logits(params: Params, tokens: jax.Array, cfg: GPTConfig = _CFG,
           fori: bool = False) -> jax.Array:  # fmt: skip
    """Logits ``[batch, seq, vocab]``: the blocks run as one loop over ``params["blocks"]``."""
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    blocks = params["blocks"]
    if fori:
        n = jax.tree.leaves(blocks)[0].shape[0]

        def body_i(i: Any, h: jax.Array) -> jax.Array:
            return gpt.block(jax.tree.map(lambda w: w[i], blocks), h, cfg.n_heads)

        x = jax.lax.fori_loop(0, n, body_i, x)
    else:

        def body(h: jax.Array, p: Params) -> tuple[jax.Array, None]:
            return gpt.block(p, h, cfg.n_heads), None

        x, _ = jax.lax.scan(body, x, blocks)
    x = layer_norm(params["ln_f"], x)
    return x @ params["embed"].T


def loss(params: Params, batch: tuple[jax.Array, jax.Array], cfg: GPTConfig = _CFG,
         fori: bool = False) -> jax.Array:  # fmt: skip
    """Mean next-token cross-entropy of ``batch = (tokens, targets)`` (as ``gpt.loss``)."""
    tokens, targets = batch
    logp = jax.nn.log_softmax(logits(params, tokens, cfg, fori), axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0].mean()
