"""A small convolutional classifier with batch norm and pooling (pure JAX)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax


def init(key: jax.Array, channels: int = 3, classes: int = 10) -> dict[str, Any]:
    k = jax.random.split(key, 3)
    return {
        "conv1": jax.random.normal(k[0], (3, 3, channels, 8), jnp.float32) * 0.2,
        "bn1": {"g": jnp.ones(8), "b": jnp.zeros(8)},
        "conv2": jax.random.normal(k[1], (3, 3, 8, 16), jnp.float32) * 0.1,
        "bn2": {"g": jnp.ones(16), "b": jnp.zeros(16)},
        "head": jax.random.normal(k[2], (16, classes), jnp.float32) * 0.1,
    }


def _conv(x: jax.Array, w: jax.Array, stride: int = 1) -> jax.Array:
    return lax.conv_general_dilated(
        x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def _batch_norm(p: dict[str, jax.Array], x: jax.Array, eps: float = 1e-5) -> jax.Array:
    mean = x.mean((0, 1, 2))
    var = x.var((0, 1, 2))
    return (x - mean) * lax.rsqrt(var + eps) * p["g"] + p["b"]


def _max_pool(x: jax.Array) -> jax.Array:
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _avg_pool(x: jax.Array) -> jax.Array:
    s = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return s / 4.0


def forward(params: dict[str, Any], x: jax.Array) -> jax.Array:
    x = jax.nn.relu(_batch_norm(params["bn1"], _conv(x, params["conv1"])))
    x = _max_pool(x)
    x = jax.nn.relu(_batch_norm(params["bn2"], _conv(x, params["conv2"])))
    x = _avg_pool(x)
    return x.mean((1, 2)) @ params["head"]


def loss(params: dict[str, Any], batch: tuple[jax.Array, jax.Array]) -> jax.Array:
    x, labels = batch
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()
