"""The model zoo of the rehydration tests and every format each model can be loaded from.

A :class:`Case` is a JAX function of flat arrays (the oracle) plus its arguments; ``sources``
lowers it once and gives it as each format ``hlopipe.load`` reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

import hlopipe
from hlopipe.models import cnn, gpt, mlp

FORMATS = ("stablehlo", "hlo", "hlo-opt", "hlo-proto", "mlir-bytecode", "jax-export")


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., tuple[Any, ...]]  # flat arrays -> tuple of arrays
    args: tuple[Any, ...]

    @property
    def float_args(self) -> list[int]:
        return [i for i, a in enumerate(self.args) if jnp.issubdtype(a.dtype, jnp.floating)]


def _flat(f: Callable[..., Any], *args: Any) -> tuple[Callable[..., tuple], tuple]:
    leaves, tree = jax.tree.flatten(args)

    def flat(*xs: Any) -> tuple:
        return tuple(jax.tree.leaves(f(*jax.tree.unflatten(tree, xs))))

    return flat, tuple(leaves)


def _mlp() -> Case:
    params = mlp.init(jax.random.key(0), (4, 8, 3))
    x = jax.random.normal(jax.random.key(1), (2, 4))
    y = jax.random.normal(jax.random.key(2), (2, 3))
    return Case("mlp", *_flat(lambda p, x, y: mlp.loss(p, (x, y)), params, x, y))


def _cnn() -> Case:
    params = cnn.init(jax.random.key(0), channels=2, classes=3)
    x = jax.random.normal(jax.random.key(1), (2, 8, 8, 2))
    labels = jnp.array([0, 2], jnp.int32)
    return Case("cnn", *_flat(lambda p, x, lab: cnn.loss(p, (x, lab)), params, x, labels))


GPT_CFG = gpt.GPTConfig(vocab=16, seq=4, d_model=8, n_heads=2, n_layers=1, d_ff=16)


def _transformer() -> Case:
    params = gpt.init(jax.random.key(0), GPT_CFG)
    tokens, targets = gpt.batch(jax.random.key(1), 2, GPT_CFG)
    return Case(
        "transformer",
        *_flat(lambda p, t, u: gpt.loss(p, (t, u), GPT_CFG), params, tokens, targets),
    )


def _loops() -> Case:
    def f(w: jax.Array, x: jax.Array) -> tuple:
        h = lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w + i), x)
        h, ys = lax.scan(lambda c, s: (jnp.sin(c) * s + c, c.sum()), h, jnp.arange(1.0, 4.0))
        return h, ys

    w = jax.random.normal(jax.random.key(0), (4, 4)) * 0.5
    x = jax.random.normal(jax.random.key(1), (2, 4))
    return Case("loops", *_flat(f, w, x))


def _cond() -> Case:
    def f(x: jax.Array, i: jax.Array) -> jax.Array:
        a = lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)
        return lax.switch(i, [lambda v: v * 2.0, jnp.exp, jnp.tanh], a)

    return Case("cond", *_flat(f, jnp.array([0.5, -0.2, 0.3]), jnp.int32(1)))


def _train_step() -> Case:
    params = mlp.init(jax.random.key(0), (4, 8, 3))
    opt = optax.adam(1e-2)
    state = opt.init(params)
    x = jax.random.normal(jax.random.key(1), (2, 4))
    y = jax.random.normal(jax.random.key(2), (2, 3))

    def step(p: Any, s: Any, x: jax.Array, y: jax.Array) -> tuple:
        loss, g = jax.value_and_grad(lambda p: mlp.loss(p, (x, y)))(p)
        updates, s = opt.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss

    return Case("train_step", *_flat(step, params, state, x, y))


CASES: dict[str, Callable[[], Case]] = {
    "mlp": _mlp,
    "cnn": _cnn,
    "transformer": _transformer,
    "loops": _loops,
    "cond": _cond,
    "train_step": _train_step,
}


@functools.cache
def case(name: str) -> Case:
    return CASES[name]()


@functools.cache
def expected(name: str) -> tuple:
    """The original function's results (jitted, as the rehydrated one is run)."""
    c = case(name)
    return jax.jit(c.fn)(*c.args)


@functools.cache
def lowered(name: str) -> Any:
    c = case(name)
    return jax.jit(c.fn).lower(*c.args)


def source(name: str, fmt: str) -> str | bytes:
    """Model ``name`` in format ``fmt`` (one of FORMATS), as hlopipe.load takes it."""
    from hlopipe._jax_compat import hlo_module_from_text
    from hlopipe._jax_compat import mlir as jax_mlir

    low = lowered(name)
    if fmt == "stablehlo":
        return low.as_text()
    if fmt == "hlo":
        return low.as_text(dialect="hlo")
    if fmt == "hlo-opt":
        return low.compile().as_text()
    if fmt == "hlo-proto":
        text = low.as_text(dialect="hlo")
        return hlo_module_from_text(text).as_serialized_hlo_module_proto()
    if fmt == "mlir-bytecode":
        return jax_mlir.module_to_bytecode(low.compiler_ir("stablehlo"))
    if fmt == "jax-export":
        c = case(name)
        return bytes(jax.export.export(jax.jit(c.fn))(*c.args).serialize())
    raise ValueError(fmt)


@functools.cache
def program(name: str, fmt: str) -> hlopipe.Program:
    return hlopipe.load(source(name, fmt))


def rehydrated(name: str, fmt: str) -> Callable[..., Any]:
    """The rehydrated function, returning a tuple like the case's fn."""
    f = program(name, fmt).as_function()

    def g(*args: Any) -> tuple:
        out = f(*args)
        return out if isinstance(out, tuple) else (out,)

    return g


def assert_close(got: Any, want: Any, rtol: float, atol: float | None = None) -> None:
    got, want = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        if a.dtype == jax.dtypes.float0:
            continue
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol if atol is None else atol)
