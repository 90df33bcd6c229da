"""``split(stage_layers=...)``: cuts between repeated layers at given counts (unrolled and
scanned GPTs), checked against the layers each stage's parameters hold and against JAX's
loss and gradients of the unsplit program; bad counts are named."""

from __future__ import annotations

import functools

import _square_llama as square_llama
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
    # rows of each stacked leaf a stage holds, its pieces summed (stage 0's first row is a
    # piece of its own: the loop's first iteration runs apart)
    rows = []
    for st in staged.stages:
        held: dict[str, int] = {}
        for a, p in zip(st.param_avals, st.param_paths, strict=True):
            if "blocks" in p:
                leaf = p.rsplit("[", 1)[0]
                held[leaf] = held.get(leaf, 0) + a.shape[0]
        rows.append(set(held.values()))
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


def _llama_args(n_layers):
    shapes = square_llama.SHAPES
    keys = iter(jax.random.split(jax.random.key(2), n_layers * len(shapes) + 1))
    params = [
        {n: 1.0 + 0.1 * jax.random.normal(next(keys), s) if len(s) == 1
            else jax.random.normal(next(keys), s) / jnp.sqrt(s[0]) for n, s in shapes.items()}
        for _ in range(n_layers)
    ]  # fmt: skip
    d = square_llama.D  # a sequence of d tokens: square activations
    return params, jax.random.normal(next(keys), (1, d, d))


def _layers_held(staged):
    """Per stage, the indices of the layers whose weights it reads (``params[k]``)."""
    return [
        sorted({int(p.split("[")[2].split("]")[0]) for p in st.param_paths if p.startswith("[0]")})
        for st in staged.stages
    ]


@pytest.mark.parametrize("n_layers", [2, 3, 4, 6])
def test_unrolled_llama_counts_the_layers_it_was_built_with(n_layers):
    """An unrolled Llama whose first layer reads the residual stream as an argument counts
    the layers it was built with (an argument crosses a cut free, so a cut a few equations
    into layer 0 once looked cheaper than the layer's start, and a layer was lost: 3 of 4 at
    this width), and a split with one detected layer per stage cuts at the layers' starts: it
    puts layer ``k``'s weights, and only those, on stage ``k``."""
    params, x = _llama_args(n_layers)
    assert hlopipe.stages.count_layers(square_llama.loss, params, x) == n_layers
    staged = hlopipe.split(square_llama.loss, params, x, stage_layers=[1] * n_layers)
    assert _layers_held(staged) == [[k] for k in range(n_layers)]
    # cut at a layer's start, a stage receives the residual stream alone (a few equations in,
    # it would also receive what the layer's first equations made)
    assert [len(st.receives) for st in staged.stages] == [0] + [1] * (n_layers - 1)


def test_a_split_at_the_detected_llama_layers_runs_to_the_program_s_loss():
    """The layers found are the program's: stages cut one detected layer each, run in turn,
    give the loss of the unsplit program run directly."""
    params, x = _llama_args(3)
    layers = hlopipe.stages.count_layers(square_llama.loss, params, x)
    assert layers is not None
    staged = hlopipe.split(square_llama.loss, params, x, stage_layers=[1] * layers)
    want = float(square_llama.loss(params, x))
    assert abs(float(staged(params, x)) - want) <= 1e-5 * abs(want)
