"""``split(stage_layers=...)``: cuts between repeated layers at given counts (unrolled and
scanned GPTs), checked against the layers each stage's parameters hold and against JAX's
loss and gradients of the unsplit program; bad counts are named."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

import hlopipe
from hlopipe.errors import StageError
from hlopipe.models import gpt, gpt_scan

CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=4, d_ff=32)


@functools.cache
def _batch():
    return gpt.batch(jax.random.key(1), 2, CFG)


def _unrolled_params():
    return gpt.init(jax.random.key(0), CFG)


def _scanned_params():
    return gpt_scan.init(jax.random.key(0), CFG)


def _check_grads(staged, loss, params):
    ref_loss, ref_g = jax.value_and_grad(loss)(params, _batch())
    got_loss, got_g = staged.value_and_grad(params, _batch())
    assert abs(float(got_loss) - float(ref_loss)) <= 1e-5
    diffs = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), got_g, ref_g)
    assert max(jax.tree.leaves(diffs)) <= 1e-5


def test_unrolled_layers_cut_at_the_counts():
    loss = functools.partial(gpt.loss, cfg=CFG)
    params = _unrolled_params()
    staged = hlopipe.split(loss, params, _batch(), stage_layers=[1, 2, 1])
    assert staged.num_stages == 3
    assert [st.layers for st in staged.stages] == [1, 2, 1]
    # the layers' own parameters: stage s holds blocks [sum before, sum before + count)
    held = [
        sorted({int(p.split("['layers'][")[1].split("]")[0]) for p in st.param_paths
                if "['layers']" in p})
        for st in staged.stages
    ]  # fmt: skip
    assert held == [[0], [1, 2], [3]]
    assert abs(float(staged(params, _batch())) - float(loss(params, _batch()))) <= 1e-5


def test_scanned_layers_cut_at_the_counts():
    loss = functools.partial(gpt_scan.loss, cfg=CFG)
    params = _scanned_params()
    staged = hlopipe.split(loss, params, _batch(), stage_layers=[3, 1])
    assert [st.layers for st in staged.stages] == [3, 1]
    rows = [
        {a.shape[0] for a, p in zip(st.param_avals, st.param_paths, strict=True) if "blocks" in p}
        for st in staged.stages
    ]
    assert rows == [{3}, {1}]
    _check_grads(staged, loss, params)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"stage_layers": [2, 1]}, r"sums to 3, but the program has 4 repeated layers"),
        ({"stage_layers": [4, 0]}, r"at least 1 layer"),
        ({"stage_layers": [2, 2], "num_stages": 3}, r"num_stages=3 disagrees"),
    ],
)
def test_bad_counts_are_named(kwargs, match):
    loss = functools.partial(gpt_scan.loss, cfg=CFG)
    with pytest.raises(StageError, match=match):
        hlopipe.split(loss, _scanned_params(), _batch(), **kwargs)


def test_no_repeated_layers_is_refused():
    def f(w1, w2, x):
        return jnp.sum(jnp.tanh(x @ w1) @ w2)

    w1, w2, x = jnp.ones((4, 8)), jnp.ones((8, 3)), jnp.ones((2, 4))
    with pytest.raises(StageError, match="no repeated layers"):
        hlopipe.split(f, w1, w2, x, stage_layers=[1, 1])
