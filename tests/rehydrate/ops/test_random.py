"""Random numbers: rng_bit_generator bit for bit against XLA compiling the same program (every
algorithm, every output type), jax.random programs against JAX, and stablehlo.rng's shapes,
ranges and determinism."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._rehydrate import rehydrate

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)


def _rbg(alg: str, state: str, out: str) -> str:
    return f"""func.func @main(%s: tensor<{state}>) -> (tensor<{state}>, tensor<3x5x{out}>) {{
      %a, %b = stablehlo.rng_bit_generator %s, algorithm = {alg}
               : (tensor<{state}>) -> (tensor<{state}>, tensor<3x5x{out}>)
      return %a, %b : tensor<{state}>, tensor<3x5x{out}>
    }}"""


@pytest.mark.parametrize("out", ["ui8", "ui32", "ui64", "i16", "f32", "bf16"])
@pytest.mark.parametrize("alg", ["THREE_FRY", "PHILOX", "DEFAULT"])
def test_rng_bit_generator_matches_xla(alg: str, out: str) -> None:
    text = _rbg(alg, "2xui64", out)
    state = np.array([12345, 678910], np.uint64)
    client = jax.devices()[0].client
    want = client.compile_and_load(text, jax.devices()[:1]).execute([jax.device_put(state)])
    f = rehydrate(text)
    for got in (f(state), jax.jit(f)(state)):
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


@pytest.mark.parametrize("out", ["ui32", "ui64", "f32", "i8"])
def test_rng_bit_generator_philox_192_bit_state_matches_xla(out: str) -> None:
    """TensorFlow's stateless random ops emit PHILOX with a ui64[3] state (jax.lax takes only
    128-bit states): the bits and the new state are still XLA's, eager and under jit."""
    text = _rbg("PHILOX", "3xui64", out)
    state = np.array([2**63 + 17, 42, 7], np.uint64)
    client = jax.devices()[0].client
    want = client.compile_and_load(text, jax.devices()[:1]).execute([jax.device_put(state)])
    f = rehydrate(text)
    for got in (f(state), jax.jit(f)(state)):
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


def test_rng_bit_generator_other_192_bit_states_are_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="ui64\\[3\\]"):
        rehydrate(_rbg("THREE_FRY", "3xui64", "ui32"))(np.arange(3, dtype=np.uint64))


@pytest.mark.parametrize("impl", ["rbg"])  # (threefry2x32 has no RBG op; unsafe_rbg: same op)
def test_jax_random_programs(impl: str) -> None:
    def draw(seed):
        key = jax.random.key(seed, impl=impl)
        k1, k2 = jax.random.split(key)
        return jax.random.uniform(k1, (4, 3)), jax.random.normal(k2, (5,))

    f = rehydrate(jax.jit(draw).lower(jnp.uint32(7)).as_text())
    for g, w in zip(f(jnp.uint32(7)), draw(jnp.uint32(7)), strict=True):
        np.testing.assert_array_equal(g, w)


def _rng(dist: str, t: str) -> str:
    return f"""func.func @main(%a: tensor<{t}>, %b: tensor<{t}>) -> tensor<200x3x{t}> {{
      %shape = stablehlo.constant dense<[200, 3]> : tensor<2xi64>
      %0 = stablehlo.rng %a, %b, %shape, distribution = {dist}
           : (tensor<{t}>, tensor<{t}>, tensor<2xi64>) -> tensor<200x3x{t}>
      return %0 : tensor<200x3x{t}>
    }}"""


def test_rng_uniform_and_normal() -> None:
    u = np.asarray(rehydrate(_rng("UNIFORM", "f32"))(np.float32(2), np.float32(5)))
    assert u.shape == (200, 3) and u.dtype == np.float32
    assert u.min() >= 2 and u.max() < 5 and abs(u.mean() - 3.5) < 0.3
    i = np.asarray(rehydrate(_rng("UNIFORM", "i32"))(np.int32(-3), np.int32(4)))
    assert i.min() >= -3 and i.max() <= 3 and len(np.unique(i)) == 7
    f = rehydrate(_rng("NORMAL", "f64"))
    one, two = np.float64(1.0), np.float64(2.0)
    n = np.asarray(f(one, two))
    assert abs(n.mean() - 1.0) < 0.3 and abs(n.std() - 2.0) < 0.3
    np.testing.assert_array_equal(n, f(one, two))  # deterministic per op site
