"""The derivative decisions of ``rehydrate/_safe_grad.py``, each against JAX's own gradient.

1. A select whose untaken branch has a non-finite value or derivative gets a zero cotangent
   there (the double-``where`` form): exact GELU from HLO text, HloModuleProto and jax.export
   equals ``jax.nn.gelu(approximate=False)``'s gradient; guarded divisions and logs equal the
   double-``where`` JAX program's. A NaN the program does compute stays.
2. ``max``/``min`` against a constant give the variable 0 at a tie, as ``jax.nn.relu`` and
   ``jax.nn.relu6`` do; ``max`` of two variables keeps ``lax.max``'s split.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe._jax_compat import hlo_module_from_text
from hlopipe.rehydrate import module_ir
from hlopipe.rehydrate._safe_grad import prepared

KINK = np.array([-1e-3, 0.0, 1e-3, -3.0, 0.5, 6.0, 5.0, -10.0], np.float32)


def _gelu(x):
    return jax.nn.gelu(x, approximate=False)


def _source(fn, fmt, *args):
    low = jax.jit(fn).lower(*args)
    if fmt == "hlo-text":
        return low.as_text(dialect="hlo")
    if fmt == "hlo-proto":
        return hlo_module_from_text(low.as_text(dialect="hlo")).as_serialized_hlo_module_proto()
    if fmt == "jax-export":
        return bytes(jax.export.export(jax.jit(fn))(*args).serialize())
    return low.as_text()


def _grad(f, *args, argnums=0):
    return jax.jit(jax.grad(lambda *a: f(*a).sum(), argnums=argnums))(*args)


@pytest.mark.parametrize("fmt", ["hlo-text", "hlo-proto", "jax-export", "stablehlo"])
def test_exact_gelu_gradient_is_jaxs_at_zero(fmt: str) -> None:
    f = hlopipe.load(_source(_gelu, fmt, KINK)).as_function()
    got = np.asarray(_grad(f, KINK))
    want = np.asarray(_grad(_gelu, KINK))
    assert np.isfinite(got).all(), got
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # forward mode too: the guard keeps the tangent of the taken lanes
    _, t_got = jax.jvp(f, (KINK,), (jnp.ones_like(KINK),))
    _, t_want = jax.jvp(_gelu, (KINK,), (jnp.ones_like(KINK),))
    np.testing.assert_allclose(t_got, t_want, rtol=1e-5, atol=1e-6)


# XLA's form of TF's DivNoNan and of a guarded log; the oracle is the double-where JAX program
DIV_NO_NAN = """HloModule div_no_nan

ENTRY main {
  x = f32[6] parameter(0)
  y = f32[6] parameter(1)
  zero = f32[] constant(0)
  zeros = f32[6] broadcast(zero), dimensions={}
  is_zero = pred[6] compare(y, zeros), direction=EQ
  q = f32[6] divide(x, y)
  ROOT r = f32[6] select(is_zero, zeros, q)
}
"""

GUARDED_LOG = """HloModule guarded_log

ENTRY main {
  x = f32[6] parameter(0)
  zero = f32[] constant(0)
  zeros = f32[6] broadcast(zero), dimensions={}
  positive = pred[6] compare(x, zeros), direction=GT
  l = f32[6] log(x)
  s = f32[6] multiply(l, l)
  ROOT r = f32[6] select(positive, s, zeros)
}
"""


def _div_no_nan(x, y):
    zero = y == 0
    return jnp.where(zero, 0.0, x / jnp.where(zero, 1.0, y))


def _guarded_log(x):
    pos = x > 0
    l = jnp.log(jnp.where(pos, x, 1.0))
    return jnp.where(pos, l * l, 0.0)


def test_guarded_division_and_log_equal_the_double_where() -> None:
    x = np.array([1.5, -2.0, 0.0, 3.0, 0.0, 0.25], np.float32)
    y = np.array([0.0, 2.0, 0.0, -0.5, 4.0, 0.0], np.float32)
    f = hlopipe.load(DIV_NO_NAN).as_function()
    np.testing.assert_array_equal(jax.jit(f)(x, y), _div_no_nan(x, y))
    for got, want in zip(
        _grad(f, x, y, argnums=(0, 1)), _grad(_div_no_nan, x, y, argnums=(0, 1)), strict=True
    ):
        assert np.isfinite(np.asarray(got)).all(), got
        np.testing.assert_allclose(got, want, rtol=1e-6)
    g = hlopipe.load(GUARDED_LOG).as_function()
    np.testing.assert_allclose(_grad(g, x), _grad(_guarded_log, x), rtol=1e-6)
    assert np.isfinite(np.asarray(_grad(g, x))).all()


def _where_divide(a, b):
    return jnp.where(b != 0, a / b, 0.0)


@jax.jit
def _divide(a, b):  # a called function of its own: the risky op in one call...
    return a / b


def _where_of_calls(a, b):  # ...the select in another (JAX's call @_where)
    return jax.jit(_where_divide)(a, b) + jnp.where(b != 0, _divide(a, b), 0.0)


def _double_where(a, b):
    return jnp.where(b != 0, a / jnp.where(b != 0, b, 1.0), 0.0)


@pytest.mark.parametrize(
    "fn, fmt, calls, factor",
    [
        (_where_divide, "hlo-text", 1, 1),
        (_where_divide, "stablehlo", 1, 1),
        (_where_divide, "optimized", 0, 1),
        (_where_of_calls, "hlo-text", 4, 2),
        (_where_of_calls, "stablehlo", 4, 2),
    ],
)
def test_guards_see_through_calls(fn, fmt: str, calls: int, factor: float) -> None:
    """``jnp.where(b != 0, a / b, 0)``: JAX lowers the where to ``call @_where``; unoptimised
    (the select in a called function, the division outside it, or each in a call of its own)
    it differentiates as XLA's optimised program (the calls inlined) does: 0 where untaken,
    as the double-where JAX program."""
    a = np.array([1.0, 2.0, 3.0, -4.0, 0.5], np.float32)
    b = np.array([1.0, 0.0, 2.0, 0.0, -0.25], np.float32)
    low = jax.jit(fn).lower(a, b)
    if fmt == "optimized":
        text = low.compile().as_text()
    else:
        text = _source(fn, fmt, a, b)
    # the fixture is the form it claims: calls unoptimised, none after XLA's inlining
    found = len(re.findall(r"\bcall\(|\bcall @", text))
    assert found >= calls if calls else found == 0, text
    f = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.jit(f)(a, b), factor * _double_where(a, b), rtol=1e-6)
    got = _grad(f, a, b, argnums=(0, 1))
    want = _grad(lambda a, b: factor * _double_where(a, b), a, b, argnums=(0, 1))
    for g, w in zip(got, want, strict=True):
        assert np.isfinite(np.asarray(g)).all(), g
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_nan_the_program_computes_stays() -> None:
    """log taken at 0 (the select picks it): the gradient is the literal one, infinite."""
    text = GUARDED_LOG.replace("direction=GT", "direction=GE").replace("[6]", "[2]")
    g = hlopipe.load(text).as_function()
    x = np.array([0.0, 2.0], np.float32)

    def literal(x):
        l = jnp.log(x)
        return jnp.where(x >= 0, l * l, 0.0)

    got, want = np.asarray(_grad(g, x)), np.asarray(_grad(literal, x))
    assert not np.isfinite(got[0]) and not np.isfinite(want[0])
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6)


def test_smooth_branches_are_left_alone_and_xla_folds_the_guards() -> None:
    """A select whose branches have finite derivatives (ReLU's) is not rewritten; where guards
    are added, the compiled forward program is the same size as without them."""
    relu_sel = jax.jit(lambda x: jnp.where(x > 0, x * 2.0, x * 0.1)).lower(KINK)
    prog = hlopipe.load(relu_sel.as_text(dialect="hlo"))
    block = module_ir(prog).funcs[prog.entry].block
    assert prepared(block) is block

    prog = hlopipe.load(_source(_gelu, "hlo-text", KINK))
    block = module_ir(prog).funcs[prog.entry].block
    guarded = prepared(block)
    assert any(op.name == "hlopipe.grad_guard" for op in guarded.ops)
    compiled = jax.jit(prog.as_function()).lower(KINK).compile().as_text()
    direct = jax.jit(_gelu).lower(KINK).compile().as_text()
    count = lambda t: len(re.findall(r"^\s+\S+ = ", t, re.M))  # noqa: E731
    assert "select(" in compiled
    assert count(compiled) <= count(direct) + 8, (count(compiled), count(direct))


def _relu6_lax(x):
    return jnp.minimum(jnp.maximum(x, 0.0), 6.0)


@pytest.mark.parametrize("fmt", ["hlo-text", "stablehlo"])
def test_max_min_against_a_constant_give_the_constant_the_tie(fmt: str) -> None:
    f = hlopipe.load(_source(_relu6_lax, fmt, KINK)).as_function()
    np.testing.assert_array_equal(jax.jit(f)(KINK), jax.nn.relu6(KINK))
    np.testing.assert_array_equal(_grad(f, KINK), _grad(jax.nn.relu6, KINK))
    # lax.max itself splits the tie: the rehydrated program differs from it on purpose
    assert float(_grad(_relu6_lax, KINK)[1]) == 0.5
    # NaN still propagates through the value
    nan = np.array([np.nan], np.float32)
    g = hlopipe.load(_source(_relu6_lax, fmt, nan)).as_function()
    assert np.isnan(np.asarray(jax.jit(g)(nan))).all()


def test_max_of_two_variables_keeps_the_split() -> None:
    f = hlopipe.load(_source(jnp.maximum, "hlo-text", KINK, KINK)).as_function()
    got = _grad(f, KINK, KINK, argnums=(0, 1))
    want = _grad(jnp.maximum, KINK, KINK, argnums=(0, 1))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert float(got[0][1]) == 0.5


def test_literal_derivatives_differentiate_the_ops_as_written() -> None:
    """``derivatives="literal"`` (what the decompiler reads) leaves both decisions out: the
    kink splits as ``lax.max`` does and the exact GELU's untaken branch poisons again, while
    the values stay the program's."""
    prog = hlopipe.load(_source(_relu6_lax, "hlo-text", KINK))
    literal = hlopipe.rehydrate(prog, derivatives="literal")
    framework = hlopipe.rehydrate(prog)  # the same module, rehydrated both ways in one process
    np.testing.assert_array_equal(jax.jit(literal)(KINK), jax.jit(framework)(KINK))
    np.testing.assert_array_equal(_grad(literal, KINK), _grad(_relu6_lax, KINK))
    np.testing.assert_array_equal(_grad(framework, KINK), _grad(jax.nn.relu6, KINK))
    with pytest.raises(ValueError, match="derivatives must be"):
        hlopipe.rehydrate(prog, derivatives="torch")
