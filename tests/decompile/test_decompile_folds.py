"""Each fold of the jnp style against the JAX function it came from: the idiom is in the
source, and the source computes the same values (with inputs whose every element differs, so
a fold reading the wrong axis, operand or constant fails) with no more equations. Ops without
a pattern stay plain lax calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from decompile_helpers import as_tuple, assert_close, equations, from_source, program_of
from jax import lax

from hlopipe.decompile import decompile


def _r(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@dataclass(frozen=True)
class Fold:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    has: tuple[str, ...]  # in the jnp source
    lacks: tuple[str, ...] = ()  # not in the jnp source


X, W, B = _r(4, 6), _r(6, 3, seed=1), _r(3, seed=2)
FOLDS = [
    Fold("matmul", lambda x, w: x @ w, (X, W), (" @ ",), ("dot_general", "einsum")),
    Fold("matmul_3d_lhs", lambda x, w: x @ w, (_r(2, 4, 6), W), (" @ ",), ("dot_general",)),
    Fold(
        "batched_matmul",
        lambda a, b: a @ b,
        (_r(2, 4, 6), _r(2, 6, 5, seed=1)),
        (" @ ",),
        ("dot_general",),
    ),
    Fold(
        "einsum_transposed_rhs",
        lambda x, w: lax.dot_general(x, w, (((1,), (1,)), ((), ()))),
        (X, _r(3, 6, seed=1)),
        ('jnp.einsum("ab,cb->ac"',),
    ),
    Fold(
        "einsum_attention",
        lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k),
        (_r(2, 3, 4, 5), _r(2, 3, 6, 5, seed=1)),
        ('jnp.einsum("abcd,abed->abce"',),
    ),
    Fold("bias_broadcast", lambda x, b: x + b, (_r(4, 3), B), (" + ",), ("broadcast",)),
    Fold(
        "middle_broadcast",
        lambda x, m: x - m[:, None],
        (X, _r(4, seed=1)),
        ("[:, None]",),
        ("broadcast",),
    ),
    Fold(
        "leading_broadcast",
        lambda x, m: x * m[None, :, None],
        (_r(2, 4, 3), _r(4, seed=1)),
        ("[:, None]",),
        ("broadcast",),
    ),
    Fold("scalar", lambda x: x * 2.5 - 1.25, (X,), (" * 2.5", " - 1.25"), ("broadcast",)),
    Fold("sum_axis", lambda x: x.sum(axis=0), (X,), (".sum(axis=0)",)),
    Fold("max_last", lambda x: x.max(axis=-1), (X,), (".max(axis=-1)",)),
    Fold("mean_all", lambda x: x.mean(), (X,), (".mean()",), ("/",)),
    Fold("mean_axis", lambda x: x.mean(axis=1), (_r(2, 5, 3),), (".mean(axis=1)",), ("/",)),
    Fold(
        "two_broadcasts",
        lambda x: x.sum(axis=-1, keepdims=True) * x.max(axis=0, keepdims=True),
        (X,),
        ("arg0.sum(axis=-1)[:, None] * arg0.max(axis=0)",),
        ("broadcast",),
    ),
    Fold(
        "keepdims",
        lambda x: (x.sum(axis=-1, keepdims=True), x.max(axis=0, keepdims=True)),
        (X,),
        (".sum(axis=-1, keepdims=True)", ".max(axis=0, keepdims=True)"),
        ("broadcast",),
    ),
    Fold(
        "layer_norm_reads_as_one",
        lambda x: (
            (x - x.mean(-1, keepdims=True))
            * lax.rsqrt(((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5)
        ),
        (X,),
        (".mean(axis=-1, keepdims=True)", "+ 1e-05"),
        ("broadcast", "/"),
    ),
    Fold(
        "softmax",
        lambda x: jax.nn.softmax(x, axis=-1) * 2.0 + jax.nn.softmax(x, axis=0),
        (X,),
        ("jax.nn.softmax(arg0, axis=-1)", "jax.nn.softmax(arg0, axis=0)"),
        ("jnp.exp",),
    ),
    Fold(
        "log_softmax",
        lambda x: jax.nn.log_softmax(x, axis=-1),
        (_r(2, 3, 5),),
        ("jax.nn.log_softmax(arg0, axis=-1)",),
        ("jnp.exp", "jnp.log"),
    ),
    Fold(
        "softmax_look_alike",  # exp(x - max) / sum over another axis: no fold
        lambda x: (
            jnp.exp(x - x.max(-1, keepdims=True))
            / jnp.exp(x - x.max(-1, keepdims=True)).sum(0, keepdims=True)
        ),
        (X,),
        ("jnp.exp(",),
        ("softmax",),
    ),
    Fold(
        "softmax_wrong_stretch",  # the sum stretched back along the other axis: no fold
        lambda x: (e := jnp.exp(x - x.max(-1, keepdims=True))) / e.sum(-1)[None, :],
        (_r(4, 4),),
        ("jnp.exp(",),
        ("softmax",),
    ),
    Fold("gelu", jax.nn.gelu, (X * 3,), ("jax.nn.gelu(arg0)",), ("jnp.tanh",)),
    Fold(
        "gelu_look_alike",  # 0.04 instead of 0.044715: no fold
        lambda x: x * (0.5 * (1.0 + jnp.tanh(0.7978846 * (x + 0.04 * (x * x * x))))),
        (X,),
        ("jnp.tanh(",),
        ("gelu",),
    ),
    Fold("slice", lambda x: x[1:3, ::2] + x[:2, 3:], (X,), ("arg0[1:3, ::2]", "arg0[:2, 3:]")),
    Fold(
        "fori_loop",
        lambda w, x: lax.fori_loop(2, 5, lambda i, h: jnp.tanh(h @ w + i), x),
        (_r(6, 6, seed=3) * 0.5, X),
        ("lax.fori_loop(2, 5, ", "(i, carry)", "i.astype(jnp.float32)"),
        ("lax.scan", "while_loop"),
    ),
    Fold(
        "scan_over_rows",  # lowered to a counting while loop: recovered as a fori_loop
        lambda x: lax.scan(lambda c, r: (c * 0.5 + r, c.sum()), jnp.zeros(6), x, reverse=True),
        (X,),
        ("lax.fori_loop(0, 4, ",),
        ("lax.scan",),
    ),
    Fold(
        "causal_mask",
        lambda x: jnp.where(jnp.tril(jnp.ones((4, 4), bool)), x[:, :4], -1e9),
        (X,),
        ("jnp.where(",),
        ("select_n", "+ 0", "jnp.full"),
    ),
    Fold(
        "boolean_select",
        lambda x: (lax.select(x > 0, jnp.zeros_like(x, bool), jnp.ones_like(x, bool)), x),
        (X,),
        ("~(arg0 > 0.0)",),
        ("select_n",),
    ),
    Fold("float_plus_zero_stays", lambda x: x + 0.0, (-np.abs(X) * 0,), (" + 0.0",)),
    Fold("sum_over_other_count", lambda x: x.sum() / 5.0, (X,), (".sum() / 5.0",), (".mean",)),
    Fold(
        "where",
        lambda x: jnp.where(x > 0, x, 0.5),
        (X,),
        ("jnp.where(", " > 0.0", ", 0.5)"),
        ("select_n",),
    ),
    Fold("relu", jax.nn.relu, (X,), ("jax.nn.relu(",), ("jnp.maximum",)),
    Fold("maximum", jnp.maximum, (X, _r(4, 6, seed=1)), ("jnp.maximum(",)),
    Fold(
        "unary",
        lambda x: jnp.tanh(jnp.exp(-x)) + jnp.sqrt(jnp.abs(x)),
        (X,),
        ("jnp.tanh(jnp.exp(-", "jnp.sqrt(jnp.abs("),
        ("lax.",),
    ),
    Fold(
        "shapes",
        lambda x: x.T.reshape(2, 12).astype(jnp.int32),
        (X,),
        (".T.reshape((2, 12)).astype(jnp.int32)",),
        ("lax.",),
    ),
    Fold(
        "transpose_3d",
        lambda x: x.transpose(2, 0, 1),
        (_r(2, 3, 4),),
        (".transpose((2, 0, 1))",),
    ),
    Fold(
        "transpose_chain",
        lambda x: (
            x.transpose(0, 2, 1, 3).transpose(0, 1, 3, 2)
            + x.transpose(1, 0, 2, 3).transpose(1, 0, 2, 3)
        ),
        (_r(2, 3, 3, 3),),
        (".transpose((0, 2, 3, 1)) + arg0",),
    ),
    Fold(
        "reshape_chain",
        lambda x: x.reshape(24).reshape(4, 6) + x.reshape(6, 4).reshape(2, 12).reshape(4, 6),
        (X,),
        (" + ",),
        ("reshape((24,))",),
    ),
]


def _check(case: Fold) -> str:
    prog = program_of(case.fn, *case.args)
    d = decompile(prog)
    g = from_source(d)
    want = jax.jit(case.fn)(*case.args)
    assert_close(as_tuple(jax.jit(g)(*case.args)), as_tuple(want), rtol=1e-6)
    mine = equations(jax.make_jaxpr(g)(*case.args))
    assert mine <= equations(jax.make_jaxpr(prog.as_function())(*case.args))
    return d.source


@pytest.mark.parametrize("case", FOLDS, ids=[f.name for f in FOLDS])
def test_fold(case: Fold) -> None:
    src = _check(case)
    body = src.split("def main", 1)[1]
    for s in case.has:
        assert s in body, (s, body)
    for s in case.lacks:
        assert s not in body, (s, body)


# ---- no pattern: the plain lax call ---------------------------------------------------------
I = np.array([[-7, 7], [5, -5]], np.int32)
J = np.array([[2, 2], [-3, 3]], np.int32)
PLAIN = [
    Fold("int_div", lambda a, b: lax.div(a, b), (I, J), ("lax.div(",), (" / ", "//")),
    Fold("int_rem", lambda a, b: lax.rem(a, b), (I, J), ("lax.rem(",), ("%",)),
    Fold("popcount", lax.population_count, (I,), ("lax.population_count(",)),
    Fold("rsqrt", lax.rsqrt, (np.abs(X) + 0.1,), ("lax.rsqrt(",)),
    Fold(
        "non_numpy_broadcast",
        lambda x: lax.broadcast_in_dim(x, (3, 4, 6), (1, 2)) * 2.0,
        (X,),
        ("* 2.0",),
    ),
    Fold("pad", lambda x: lax.pad(x, 0.0, [(1, 0, 1), (0, 2, 0)]), (X,), ("lax.pad(",)),
    Fold("iota", lambda x: x + lax.iota(jnp.float32, 6), (X,), ("lax.iota(",)),
]


@pytest.mark.parametrize("case", PLAIN, ids=[f.name for f in PLAIN])
def test_plain_lax_fallback(case: Fold) -> None:
    test_fold(case)


def test_lax_style_writes_no_folds() -> None:
    prog = program_of(lambda x, w, b: jax.nn.relu(x @ w + b).mean(), X, W, B)
    src = decompile(prog, style="lax").source.split("def main", 1)[1]
    for idiom in (" @ ", " + ", ".mean(", "jax.nn.relu", "jnp.where"):
        assert idiom not in src
    assert "lax.dot_general(" in src and "lax.max(" in src
