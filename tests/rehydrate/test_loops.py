"""Loop recovery: while loops with a static trip count become lax.scan, so grad works; a
data-dependent loop stays a while_loop that runs, jits and vmaps, and grad through it names it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import RehydrateError
from hlopipe.rehydrate import rehydrate

W = jax.random.normal(jax.random.key(0), (3, 3)) * 0.5
X = jax.random.normal(jax.random.key(1), (2, 3))


def _load(f, *args, dialect: str = "stablehlo"):
    low = jax.jit(f).lower(*args)
    text = low.compile().as_text() if dialect == "hlo-opt" else low.as_text(dialect=dialect)
    return hlopipe.load(text).as_function()


def _close(a, b, tol=1e-5):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def _uses_scan(f, *args) -> bool:
    jaxpr = jax.make_jaxpr(f)(*args)
    names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
    return "scan" in names and "while" not in names


def _step(i, h):
    return jnp.tanh(h @ W + 0.1 * i)


def fori(w, x):
    return lax.fori_loop(0, 4, lambda i, h: jnp.tanh(h @ w + 0.1 * i), x)


def scan(w, x):
    def body(c, s):
        c = jnp.sin(c @ w) * s
        return c, c.sum()

    return lax.scan(body, x, jnp.arange(1.0, 4.0))


def nested(w, x):
    inner = lambda i, h: lax.fori_loop(0, 2, lambda j, g: jnp.tanh(g @ w + i - j), h)  # noqa: E731
    return lax.fori_loop(0, 3, inner, x)


@pytest.mark.parametrize("dialect", ["stablehlo", "hlo", "hlo-opt"])
@pytest.mark.parametrize("fn", [fori, scan, nested], ids=["fori", "scan", "nested"])
def test_static_loops_differentiate(fn, dialect) -> None:
    f = _load(fn, W, X, dialect=dialect)
    _close(f(W, X), fn(W, X), 1e-6)
    assert _uses_scan(f, W, X)

    def loss(g):
        return lambda w, x: sum(jnp.sum(o) for o in jax.tree.leaves(g(w, x)))

    _close(jax.grad(loss(f), (0, 1))(W, X), jax.grad(loss(fn), (0, 1))(W, X))


# Loops JAX's fori_loop never writes: counting down, `<=` and `!=` bounds. The originals are
# while_loops (not reverse-differentiable), so grads compare with a Python-unrolled loop.
def down(x):
    return lax.while_loop(lambda c: c[0] > 0, lambda c: (c[0] - 1, _step(c[0], c[1])), (5, x))[1]


def down_ref(x):
    for i in range(5, 0, -1):
        x = _step(i, x)
    return x


def le(x):
    return lax.while_loop(lambda c: c[0] <= 3, lambda c: (c[0] + 1, _step(c[0], c[1])), (0, x))[1]


def le_ref(x):
    for i in range(4):
        x = _step(i, x)
    return x


def ne(x):
    return lax.while_loop(lambda c: c[0] != 9, lambda c: (c[0] + 3, _step(c[0], c[1])), (0, x))[1]


def ne_ref(x):
    for i in (0, 3, 6):
        x = _step(i, x)
    return x


@pytest.mark.parametrize(
    ("fn", "ref"), [(down, down_ref), (le, le_ref), (ne, ne_ref)], ids=["down", "le", "ne"]
)
def test_static_while_loops(fn, ref) -> None:
    f = _load(fn, X)
    _close(f(X), ref(X), 1e-6)
    assert _uses_scan(f, X)
    _close(jax.grad(lambda x: f(x).sum())(X), jax.grad(lambda x: ref(x).sum())(X))


def test_zero_trip_loop() -> None:
    def f(x):
        return lax.while_loop(lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]

    g = _load(f, X)
    _close(g(X), X)
    _close(jax.grad(lambda x: g(x).sum())(X), jnp.ones_like(X))


def dynamic(x):
    def cond(c):
        return jnp.sum(c * c) < 100.0

    return lax.while_loop(cond, lambda c: c * 1.5 + 0.1, x)


def test_dynamic_loop_runs_jits_vmaps() -> None:
    f = _load(dynamic, X)
    _close(f(X), dynamic(X), 1e-6)
    _close(jax.jit(f)(X), dynamic(X), 1e-6)
    xs = jnp.stack([X, X * 2, X * 0.1])
    _close(jax.vmap(f)(xs), jax.vmap(dynamic)(xs), 1e-6)
    _close(jax.jvp(f, (X,), (X,)), jax.jvp(dynamic, (X,), (X,)), 1e-5)


def test_grad_through_dynamic_loop_names_it() -> None:
    f = _load(dynamic, X)
    with pytest.raises(
        RehydrateError, match=r"cannot reverse-differentiate the while loop at .*:\d+"
    ):
        jax.grad(lambda x: f(x).sum())(X)


def test_loops_while_option_keeps_while() -> None:
    low = jax.jit(fori).lower(W, X)
    f = rehydrate(hlopipe.load(low.as_text()), loops="while")
    _close(f(W, X), fori(W, X), 1e-6)
    assert not _uses_scan(f, W, X)


def test_bound_from_argument_is_dynamic() -> None:
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, h: h * 1.1, x)

    g = _load(f, jnp.int32(3), X)
    _close(g(jnp.int32(3), X), f(3, X), 1e-6)
    _close(jax.jit(g)(jnp.int32(5), X), f(5, X), 1e-6)
    assert not _uses_scan(g, jnp.int32(3), X)


# TensorFlow's loop condition calls a function with the whole loop state and reads only the
# counter of it; the control state must look through the call, or every carried value (the
# data too) counts as control and the loop is taken for dynamic.
COND_CALLS_FUNCTION = """
func.func private @cond_fn(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<i1> {
  %c4 = stablehlo.constant dense<4> : tensor<i32>
  %lt = stablehlo.compare LT, %i, %c4 : (tensor<i32>, tensor<i32>) -> tensor<i1>
  return %lt : tensor<i1>
}
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %y = %x) : tensor<i32>, tensor<3xf32>
  cond {
    %p = func.call @cond_fn(%i, %y) : (tensor<i32>, tensor<3xf32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    %y1 = stablehlo.sine %y : tensor<3xf32>
    stablehlo.return %i1, %y1 : tensor<i32>, tensor<3xf32>
  }
  return %r#1 : tensor<3xf32>
}
"""


def test_condition_calling_a_function_with_the_whole_state_is_static() -> None:
    f = hlopipe.load(COND_CALLS_FUNCTION).as_function()
    x = np.array([0.3, -1.0, 2.0], np.float32)

    def ref(x):
        for _ in range(4):
            x = jnp.sin(x)
        return x

    assert _uses_scan(f, x)
    _close(jax.jit(f)(x), ref(x))
    _close(jax.grad(lambda x: f(x).sum())(x), jax.grad(lambda x: ref(x).sum())(x))


def test_remembered_trip_counts_are_bounded(monkeypatch) -> None:
    """Run eagerly, a loop whose bound is an argument has a known count on every call: the
    counts its op remembers stay bounded however many bounds it meets, and stay right."""
    from hlopipe.rehydrate import _loops, module_ir

    def f(n, x):
        return lax.fori_loop(0, n, lambda i, h: h * 1.1, x)

    prog = hlopipe.load(jax.jit(f).lower(jnp.int32(3), X).as_text())
    g = prog.as_function()
    monkeypatch.setattr(_loops, "REMEMBERED_COUNTS", 3)
    for n in (*range(8), 2, 7):
        _close(g(jnp.int32(n), X), f(n, X), 1e-6)
    (loop,) = [
        op for op in module_ir(prog).funcs[prog.entry].block.ops if op.name.endswith("while")
    ]
    assert 0 < len(loop.cache["trip_counts"]) <= 3


# TensorFlow's while loops with ``maximum_iterations``: the condition is ``i < max and
# cond(state)``, the second part data-dependent. The first part bounds the trip count.
BOUNDED = """
func.func private @cond_fn(%i: tensor<i32>, %j: tensor<i32>, %n: tensor<i32>,
                           %x: tensor<3xf32>) -> tensor<i1> {
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %a = stablehlo.compare LT, %i, %c5 : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %b = stablehlo.compare LT, %j, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %p = stablehlo.and %a, %b : tensor<i1>
  %r = stablehlo.reshape %p : (tensor<i1>) -> tensor<i1>
  return %r : tensor<i1>
}
func.func @main(%n: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:4 = stablehlo.while(%i = %c0, %j = %c0, %m = %n, %y = %x)
      : tensor<i32>, tensor<i32>, tensor<i32>, tensor<3xf32>
  cond {
    %p = func.call @cond_fn(%i, %j, %m, %y)
        : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<3xf32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    %j1 = stablehlo.add %j, %c1 : tensor<i32>
    %y1 = stablehlo.sine %y : tensor<3xf32>
    stablehlo.return %i1, %j1, %m, %y1 : tensor<i32>, tensor<i32>, tensor<i32>, tensor<3xf32>
  }
  return %r#3 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("n", [0, 2, 5, 9])
def test_loop_bounded_by_one_part_of_its_condition_differentiates(n: int) -> None:
    f = hlopipe.load(BOUNDED).as_function()
    x = np.array([0.3, -1.0, 2.0], np.float32)

    def ref(x):
        for _ in range(min(n, 5)):
            x = jnp.sin(x)
        return x

    assert _uses_scan(f, np.int32(n), x)
    _close(jax.jit(f)(np.int32(n), x), ref(x))
    got = jax.jit(jax.grad(lambda x: f(np.int32(n), x).sum()))(x)
    _close(got, jax.grad(lambda x: ref(x).sum())(x))


def test_bounded_loop_with_side_effects_stays_a_while_loop() -> None:
    """Steps past the end run the body with their results dropped: not for a body with
    effects (a side-effecting custom call), which keeps its lax.while_loop."""
    hlopipe.register_custom_call("hlopipe_test_loop_effect", lambda x: x)
    text = BOUNDED.replace(
        "%y1 = stablehlo.sine %y : tensor<3xf32>",
        "%e = stablehlo.custom_call @hlopipe_test_loop_effect(%y) {has_side_effect = true}"
        " : (tensor<3xf32>) -> tensor<3xf32>\n    %y1 = stablehlo.sine %e : tensor<3xf32>",
    )
    f = hlopipe.load(text).as_function()
    x = np.array([0.3, -1.0, 2.0], np.float32)
    assert not _uses_scan(f, np.int32(2), x)
    _close(jax.jit(f)(np.int32(2), x), jnp.sin(jnp.sin(x)))
