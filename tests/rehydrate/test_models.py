"""Rehydrated models against the JAX functions they were lowered from (issue 2, "How we will
know"): every model in every format, then grad, vmap and jvp of the rehydrated function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from zoo_programs import CASES, FORMATS, assert_close, case, expected, program, rehydrated

MODELS = list(CASES)


# MLIR bytecode holds the very module of the StableHLO text, and the proto the very module of
# the HLO text: for those, the loaded modules must be equal (which implies equal results).
SAME_AS = {"mlir-bytecode": "stablehlo", "hlo-proto": "hlo"}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("model", MODELS)
def test_values(model: str, fmt: str) -> None:
    c = case(model)
    if fmt in SAME_AS:
        assert program(model, fmt).format == fmt
        assert program(model, fmt).to_text() == program(model, SAME_AS[fmt]).to_text()
        return
    f = rehydrated(model, fmt)
    assert_close(jax.jit(f)(*c.args), expected(model), rtol=1e-6)


def _scalar(fn, outputs: slice):
    def loss(*args):
        outs = fn(*args)[outputs]
        return sum(jnp.sum(o) for o in outs if jnp.issubdtype(o.dtype, jnp.floating))

    return loss


# The train step's new parameters go through Adam's g / sqrt(v), whose derivative is too
# ill-conditioned to compare two differently fused programs at 1e-5: differentiate its loss.
GRAD_OUTPUTS = {"train_step": slice(-1, None)}


# Transforms on the pre-optimisation StableHLO of every model, and on the formats whose
# modules differ most (post-optimisation HLO has fusions and rewritten loops; the proto goes
# through XLA's HLO -> StableHLO conversion).
TRANSFORM_CASES = [(m, "stablehlo") for m in MODELS] + [
    ("transformer", "hlo-opt"),
    ("loops", "hlo-opt"),
    ("train_step", "hlo"),
]


@pytest.mark.parametrize(("model", "fmt"), TRANSFORM_CASES)
def test_grad(model: str, fmt: str) -> None:
    c = case(model)
    f = rehydrated(model, fmt)
    argnums = tuple(c.float_args)
    outputs = GRAD_OUTPUTS.get(model, slice(None))
    want = jax.jit(jax.grad(_scalar(c.fn, outputs), argnums))(*c.args)
    got = jax.jit(jax.grad(_scalar(f, outputs), argnums))(*c.args)
    assert_close(got, want, rtol=1e-5)


@pytest.mark.parametrize("model", ["mlp", "cnn", "loops", "cond"])
def test_vmap(model: str) -> None:
    c = case(model)
    f = rehydrated(model, "stablehlo")
    i = c.float_args[-1]  # batch one float argument, the others are shared
    x = c.args[i]
    batch = jnp.stack([x, x * 0.5 + 0.1, -x])
    in_axes = tuple(0 if j == i else None for j in range(len(c.args)))
    args = tuple(batch if j == i else a for j, a in enumerate(c.args))
    got = jax.jit(jax.vmap(f, in_axes))(*args)
    assert_close(got, jax.jit(jax.vmap(c.fn, in_axes))(*args), rtol=1e-5)


@pytest.mark.parametrize("model", ["mlp", "transformer", "loops", "cond", "train_step"])
def test_jvp(model: str) -> None:
    c = case(model)
    f = rehydrated(model, "stablehlo")
    idx = c.float_args
    outputs = GRAD_OUTPUTS.get(model, slice(None))
    tangents = [jnp.cos(jnp.arange(c.args[i].size, dtype=c.args[i].dtype)) for i in idx]
    tangents = [t.reshape(c.args[i].shape) for t, i in zip(tangents, idx, strict=True)]

    def on_floats(fn):
        def g(*xs):
            full = list(c.args)
            for i, x in zip(idx, xs, strict=True):
                full[i] = x
            return fn(*full)[outputs]

        return g

    primals = [c.args[i] for i in idx]
    want = jax.jit(lambda p, t: jax.jvp(on_floats(c.fn), p, t))(primals, tangents)
    got = jax.jit(lambda p, t: jax.jvp(on_floats(f), p, t))(primals, tangents)
    assert_close(got, want, rtol=1e-5)
