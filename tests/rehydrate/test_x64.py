"""Programs with 64-bit types run in JAX's default (32-bit) mode (issue 11, item 1).

Every test here runs with 64-bit mode off (tests/conftest.py); the programs are lowered with
it on (int64 indices, uint64 random bits, float64) or, for JAX's own PRNG, with it off (the
threefry bits are uint64 inside the program all the same). The oracle is the JAX function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import RehydrateError

BIG = 2**40 + 7  # an int64 no int32 can hold


def _f(x, idx, key):
    bits = jax.random.bits(jax.random.wrap_key_data(key), (4,), dtype=jnp.uint64)
    g = x[idx]
    return g * 2.0, idx * 3 + BIG, bits, jnp.sum(jnp.sin(x) * x)


X = np.linspace(0.0, 1.0, 5)
IDX = np.array([4, 0, 2], np.int64)


def _lowered() -> tuple[str, tuple, list[np.ndarray], np.ndarray]:
    with jax.enable_x64(True):
        key = np.asarray(jax.random.key_data(jax.random.key(0)))
        text = jax.jit(_f).lower(X, IDX, key).as_text()
        want = [np.asarray(o) for o in jax.jit(_f)(X, IDX, key)]
        grad = np.asarray(jax.grad(lambda x: _f(x, IDX, key)[3])(X))
    return text, (X, IDX, key), want, grad


def test_64_bit_program_runs_with_x64_off_and_keeps_its_dtypes() -> None:
    text, args, want, _ = _lowered()
    assert "tensor<3xi64>" in text and "ui64" in text and "f64" in text
    assert not jax.config.read("jax_enable_x64")
    f = hlopipe.rehydrate(text)
    got = f(*args)
    assert [np.asarray(g).dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)
    assert int(np.asarray(got[1])[0]) == 4 * 3 + BIG  # no int32 truncation anywhere
    assert not jax.config.read("jax_enable_x64")  # the scope did not leak


def test_64_bit_program_under_jit_grad_and_vmap() -> None:
    text, (x, idx, key), want, grad = _lowered()
    f = hlopipe.rehydrate(text)
    # under the caller's jit in 32-bit mode JAX hands in float32/int32 counterparts
    got = jax.jit(f)(x, idx, key)
    assert [np.asarray(g).dtype for g in got] == [w.dtype for w in want]
    np.testing.assert_array_equal(np.asarray(got[1]), want[1])
    np.testing.assert_array_equal(np.asarray(got[2]), want[2])
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-6)
    g = jax.grad(lambda v: f(v, idx, key)[3])(x)
    np.testing.assert_allclose(np.asarray(g), grad, rtol=1e-6)
    batched = jax.vmap(lambda v: f(v, idx, key)[3])(np.stack([x, 2 * x]))
    with jax.enable_x64(True):
        k = np.asarray(key)
        ref = [float(_f(v, idx, k)[3]) for v in (x, 2 * x)]
    np.testing.assert_allclose(np.asarray(batched), ref, rtol=1e-6)


def test_jax_dropout_with_x64_off_matches_jax() -> None:
    # JAX's default PRNG makes uint64 values inside a program lowered in 32-bit mode
    def dropout(x, key):
        keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.5, x.shape)
        return jnp.sum(jnp.where(keep, x / 0.5, 0.0) ** 2)

    x = jnp.linspace(-1.0, 1.0, 64)
    key = jax.random.key_data(jax.random.key(3))
    text = jax.jit(dropout).lower(x, key).as_text()
    assert "ui64" in text
    f = hlopipe.rehydrate(text)
    np.testing.assert_allclose(jax.jit(f)(x, key), dropout(x, key), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(f)(x, key), jax.grad(dropout)(x, key), rtol=1e-6)


def test_64_bit_argument_of_another_dtype_is_refused_by_name() -> None:
    text, (x, idx, key), _, _ = _lowered()
    f = hlopipe.rehydrate(text)
    with pytest.raises(RehydrateError, match=r"argument 1 is f32\[3\], expected i64\[3\]"):
        f(x, idx.astype(np.float32), key)
    with pytest.raises(RehydrateError, match=r"argument 0 is f64\[4\], expected f64\[5\]"):
        f(x[:4], idx, key)
    with pytest.raises(RehydrateError, match="takes 3 arguments"):
        f(x, idx)


def test_torch_like_program_with_int64_labels_trains_with_x64_off() -> None:
    # what PyTorch/XLA writes: float32 weights, int64 labels and index arithmetic in int64
    def loss(w, x, labels):
        logits = x @ w
        logp = jax.nn.log_softmax(logits)
        picked = jnp.take_along_axis(logp, labels[:, None].astype(jnp.int64), axis=1)
        return -jnp.mean(picked), jnp.sum(labels)

    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    x = np.linspace(0, 2, 8, dtype=np.float32).reshape(2, 4)
    labels = np.array([2, 0], np.int64)
    with jax.enable_x64(True):
        text = jax.jit(loss).lower(w, x, labels).as_text()
        want, want_sum = loss(w, x, labels)
        want_grad = jax.grad(lambda w: loss(w, x, labels)[0])(w)
    assert "xi64>" in text
    f = hlopipe.rehydrate(text)
    got, got_sum = jax.jit(f)(w, x, labels)
    assert got.dtype == np.float32 and got_sum.dtype == np.int64
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert int(got_sum) == int(want_sum) == 2
    g = jax.jit(jax.grad(lambda w: f(w, x, labels)[0]))(w)
    np.testing.assert_allclose(g, want_grad, rtol=1e-6)
