"""batch_norm_inference / _training / _grad against XLA compiling the same modules (the
reference interpreter aborts on these ops: openxla/stablehlo#1571), and batch_norm_grad
against JAX's own VJP of the rehydrated batch_norm_training."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.io._xla import compile_stablehlo

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)

_rng = np.random.default_rng(0)
SHAPE = (3, 4, 5)  # features on dim 1 unless a case says otherwise


def _t(shape: tuple[int, ...], et: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{et}>"


def _inference(fi: int, et: str) -> str:
    x, v = _t(SHAPE, et), _t((SHAPE[fi],), et)
    return (
        f"func.func @main(%x: {x}, %s: {v}, %o: {v}, %m: {v}, %var: {v}) -> {x} {{\n"
        f'  %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %var) '
        f"<{{epsilon = 1.0e-3 : f32, feature_index = {fi} : i64}}> "
        f": ({x}, {v}, {v}, {v}, {v}) -> {x}\n  return %0 : {x}\n}}\n"
    )


def _training(fi: int, et: str) -> str:
    x, v = _t(SHAPE, et), _t((SHAPE[fi],), et)
    return (
        f"func.func @main(%x: {x}, %s: {v}, %o: {v}) -> ({x}, {v}, {v}) {{\n"
        f'  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) '
        f"<{{epsilon = 1.0e-3 : f32, feature_index = {fi} : i64}}> "
        f": ({x}, {v}, {v}) -> ({x}, {v}, {v})\n"
        f"  return %0#0, %0#1, %0#2 : {x}, {v}, {v}\n}}\n"
    )


def _grad(fi: int, et: str) -> str:
    x, v = _t(SHAPE, et), _t((SHAPE[fi],), et)
    return (
        f"func.func @main(%x: {x}, %s: {v}, %m: {v}, %var: {v}, %dy: {x}) -> ({x}, {v}, {v}) {{\n"
        f'  %0:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %var, %dy) '
        f"<{{epsilon = 1.0e-3 : f32, feature_index = {fi} : i64}}> "
        f": ({x}, {v}, {v}, {v}, {x}) -> ({x}, {v}, {v})\n"
        f"  return %0#0, %0#1, %0#2 : {x}, {v}, {v}\n}}\n"
    )


def _args(kind: str, fi: int, dtype: Any) -> tuple[np.ndarray, ...]:
    n = SHAPE[fi]

    def vec() -> np.ndarray:
        return _rng.standard_normal(n).astype(dtype)

    x = (_rng.standard_normal(SHAPE) * 2 + 1).astype(dtype)
    var = (_rng.random(n) + 0.5).astype(dtype)
    if kind == "inference":
        return x, vec(), vec(), vec(), var
    if kind == "training":
        return x, vec(), vec()
    return x, vec(), vec(), var, _rng.standard_normal(SHAPE).astype(dtype)


_BUILD = {"inference": _inference, "training": _training, "grad": _grad}


def _xla(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    exe = compile_stablehlo(text.replace("func.func @main", "func.func public @main"))
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


def _as_list(out: Any) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, tuple | list) else (out,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fi", [0, 1, 2])
@pytest.mark.parametrize("kind", ["inference", "training", "grad"])
def test_against_xla(kind: str, fi: int, dtype: Any) -> None:
    et = "f32" if dtype == np.float32 else "f64"
    text = _BUILD[kind](fi, et)
    args = _args(kind, fi, dtype)
    want = _xla(text, args)
    fn = hlopipe.load(text).as_function()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got in (_as_list(fn(*args)), _as_list(jax.jit(fn)(*args))):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_grad_op_is_the_vjp_of_training() -> None:
    # batch_norm_grad is, by the spec, the VJP of batch_norm_training's normalised output
    # (batch statistics included): JAX differentiating the rehydrated training op agrees
    fi = 1
    x, s, o = _args("training", fi, np.float64)
    dy = _rng.standard_normal(SHAPE)
    train = hlopipe.load(_training(fi, "f64")).as_function()
    grad = hlopipe.load(_grad(fi, "f64")).as_function()
    _, mean, var = train(x, s, o)
    _, vjp = jax.vjp(lambda x, s, o: train(x, s, o)[0], x, s, o)
    want = vjp(jnp.asarray(dy))
    got = jax.jit(grad)(x, s, mean, var, dy)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    # and vmap over a leading batch of programs
    xs = np.stack([x, 2 * x])
    batched = jax.jit(jax.vmap(train, (0, None, None)))(xs, s, o)
    for k, b in enumerate(batched):
        np.testing.assert_allclose(b[1], train(2 * x, s, o)[k], rtol=1e-12)
