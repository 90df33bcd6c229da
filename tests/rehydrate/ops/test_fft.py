"""stablehlo.fft: every FFT type, through jnp.fft, against JAX (values, grad, vmap)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe.rehydrate._rehydrate import rehydrate

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)
X = np.random.default_rng(0).standard_normal((3, 4, 6))
CASES = {
    "fft": (jnp.fft.fft, X + 1j * X[::-1]),
    "ifft2": (jnp.fft.ifft2, X + 0.5j * X),
    "rfftn": (lambda x: jnp.fft.rfftn(x, axes=(1, 2)), X),
    "irfft": (lambda z: jnp.fft.irfft(z, n=10), X + 1j * X),
    "rfft_f32": (jnp.fft.rfft, X.astype(np.float32)),
}


@pytest.mark.parametrize("name", CASES)
def test_fft(name: str) -> None:
    fn, x = CASES[name]
    f = rehydrate(jax.jit(fn).lower(x).as_text())
    tol = 1e-5 if x.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(f(x), fn(x), rtol=tol, atol=tol)
    np.testing.assert_allclose(jax.jit(f)(x), fn(x), rtol=tol, atol=tol)
    if x.dtype == np.float64:
        loss = lambda g: lambda x: jnp.sum(jnp.abs(g(x)) ** 2)  # noqa: E731

        def real_grad(g: Any) -> Any:
            return jax.grad(loss(g))(x)

        np.testing.assert_allclose(real_grad(f), real_grad(fn), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(jax.vmap(f)(x[None]), jax.vmap(fn)(x[None]), rtol=tol, atol=tol)
