"""The cache length is the size of the axis the position indexes in the state's update chain,
never a guess from the layout; when the chain cannot tell, the error names the candidate axes
and ``max_len`` (``--max-len`` on the command line)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.cli import main
from hlopipe.errors import RuntimeConfigError
from hlopipe.generate import Generator, generate_unsplit

B, L, T, H, HD, V = 2, 4, 12, 2, 4, 16
D = H * HD


def _keras_step(p, cache, tok, pos):
    """keras_hub's layout: one cache ``[b, L, 2, T, heads, head_dim]``, each layer's read as
    ``cache[:, i]``, K and V updated at the position and written back with ``stack``."""
    x = p["emb"][tok]
    layers = []
    for i in range(L):
        k_all, v_all = cache[:, i, 0], cache[:, i, 1]
        k = jnp.tanh(x @ p["wk"][i]).reshape(B, 1, H, HD)
        v = jnp.tanh(x @ p["wv"][i]).reshape(B, 1, H, HD)
        k_all = lax.dynamic_update_slice(k_all, k, (0, pos, 0, 0))
        v_all = lax.dynamic_update_slice(v_all, v, (0, pos, 0, 0))
        q = x.reshape(B, H, HD)
        live = jnp.arange(T)[None, None, :] <= pos
        att = jax.nn.softmax(jnp.where(live, jnp.einsum("bhd,bthd->bht", q, k_all), -1e9), -1)
        x = x + jnp.einsum("bht,bthd->bhd", att, v_all).reshape(B, D)
        layers.append(jnp.stack([k_all, v_all], axis=1))
    return jnp.argmax(x @ p["out"], -1).astype(jnp.int32), jnp.stack(layers, axis=1)


def _masked_step(p, cache, tok, pos):
    """The cache written by a select on a position mask: no update op indexes it."""
    x = p["emb"][tok]
    hit = (jnp.arange(T) == pos)[None, :, None]
    cache = jnp.where(hit, x[:, None, :], cache)
    x = x + cache.sum(1)
    return jnp.argmax(x @ p["out"], -1).astype(jnp.int32), cache


@functools.cache
def _params():
    ks = jax.random.split(jax.random.key(7), 4)
    return {
        "emb": jax.random.normal(ks[0], (V, D)),
        "wk": jax.random.normal(ks[1], (L, D, D)) / np.sqrt(D),
        "wv": jax.random.normal(ks[2], (L, D, D)) / np.sqrt(D),
        "out": jax.random.normal(ks[3], (D, V)),
    }


def _small():
    return {k: _params()[k] for k in ("emb", "out")}


def _export(step, cache_shape, params):
    ex = (params, jnp.zeros(cache_shape), jnp.zeros(B, jnp.int32), jnp.int32(0))
    return jax.export.export(jax.jit(step, donate_argnums=1))(*ex).serialize()


@functools.cache
def _keras():
    return hlopipe.load(_export(_keras_step, (B, L, 2, T, H, HD), _params()))


def test_keras_layout_cache_length_is_the_axis_the_position_indexes():
    """``[b, L, 2, T, h, d]``: the axis after the batch is the layer axis (4); the position
    indexes T (12), and all 12 positions generate the unsplit program's tokens."""
    prog = _keras()
    gen = Generator(prog, _params(), num_stages=1)
    assert gen.max_len == T
    first = np.array([[3, 5]], np.int32)
    toks = gen.start(tokens=first).generate(T)
    ref, _ = generate_unsplit(prog, _params(), T, tokens=first)
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 3


def test_an_untold_length_names_the_candidate_axes_and_max_len(tmp_path, capsys):
    blob = _export(_masked_step, (B, T, D), _small())
    prog = hlopipe.load(blob)
    with pytest.raises(RuntimeConfigError) as e:
        Generator(prog, _small(), num_stages=1)
    msg = str(e.value)
    assert "axis 1 (size 12), axis 2 (size 8)" in msg and "max_len=N" in msg
    assert "axis 0" not in msg  # the batch axis is no candidate
    gen = Generator(prog, _small(), num_stages=1, max_len=T)
    first = np.array([[1, 2]], np.int32)
    ref, _ = generate_unsplit(prog, _small(), T, tokens=first)
    np.testing.assert_array_equal(gen.start(tokens=first).generate(T), ref)
    # the command line names its flag, and takes it
    path = tmp_path / "masked.bin"
    path.write_bytes(blob)
    assert main(["generate", str(path), "--stages", "1", "--tokens", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-len N" in err[0] and "max_len" not in err[0]
    assert main(["generate", str(path), "--stages", "1", "--tokens", "4", "--max-len", "12",
                 "--check"]) == 0  # fmt: skip
    assert "check: all 8 tokens equal" in capsys.readouterr().out
