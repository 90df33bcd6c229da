"""A small multi-layer perceptron regression model (pure JAX)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp


def init(key: jax.Array, sizes: Sequence[int] = (16, 32, 32, 8)) -> list[dict[str, jax.Array]]:
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {"w": jax.random.normal(k, (a, b), jnp.float32) / jnp.sqrt(a), "b": jnp.zeros(b)}
        for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
    ]


def forward(
    params: list[dict[str, jax.Array]], x: jax.Array, boundary: Callable[[Any], Any] | None = None
) -> jax.Array:
    for i, p in enumerate(params):
        if boundary is not None and i:
            x = boundary(x)
        x = x @ p["w"] + p["b"]
        if i < len(params) - 1:
            x = jnp.tanh(x)
    return x


def loss(
    params: list[dict[str, jax.Array]],
    batch: tuple[jax.Array, jax.Array],
    boundary: Callable[[Any], Any] | None = None,
) -> jax.Array:
    x, y = batch
    return jnp.mean((forward(params, x, boundary) - y) ** 2)
