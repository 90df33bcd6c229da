"""A Flax linen model whose blocks are ``nn.scan``-ned over 4 layers (parameters stacked
[4, ...]): split into 2 stages by ranges of iterations, each holding 2 rows of every stacked
parameter, and trained with 1F1B equal to one device (optax on ``jax.value_and_grad``)."""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

import hlopipe

L = 4  # scanned layers
S = 2  # stages
D, D_FF, D_IN, CLASSES = 16, 32, 8, 4
M = 2
STEPS = 2
OPT = optax.sgd(0.05, momentum=0.9)


class Block(nn.Module):
    """Pre-norm residual MLP; the (carry, x) -> (carry, y) signature ``nn.scan`` expects."""

    @nn.compact
    def __call__(self, h, _):
        u = nn.Dense(D_FF)(nn.LayerNorm()(h))
        return h + nn.Dense(D)(nn.gelu(u)), None


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(D, name="embed")(x)
        blocks = nn.scan(Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=L)
        h, _ = blocks(name="blocks")(h, None)
        return nn.Dense(CLASSES, name="head")(nn.LayerNorm(name="ln_f")(h))


NET = Net()


def loss_fn(variables, batch):
    x, y = batch
    logits = NET.apply(variables, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def _batches(n: int) -> list:
    out = []
    for k in range(n):
        kx, ky = jax.random.split(jax.random.key(100 + k))
        x = jax.random.normal(kx, (8, D_IN), jnp.float32)
        out.append((x, jax.random.randint(ky, (8,), 0, CLASSES, jnp.int32)))
    return out


@functools.cache
def _variables():
    return NET.init(jax.random.key(0), _batches(1)[0][0])


def _stacked(variables) -> list:
    return jax.tree.leaves(variables["params"]["blocks"])


@functools.cache
def _reference(steps: int):
    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = OPT.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    p, s, losses = _variables(), OPT.init(_variables()), []
    for b in _batches(steps):
        p, s, loss = step(p, s, b)
        losses.append(float(loss))
    return losses, p


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def test_the_model_is_a_scan_over_stacked_parameters():
    # the premise: nn.scan stacks every block parameter [L, ...] (6: 2 Dense, 1 LayerNorm)
    stacked = _stacked(_variables())
    assert len(stacked) == 6 and all(x.shape[0] == L for x in stacked)


def test_flax_scan_splits_into_ranges_of_layers():
    staged = hlopipe.split(loss_fn, _variables(), _batches(1)[0], num_stages=S)
    assert staged.num_stages == S
    (loop,) = [r for r in staged.loops if r.splittable]
    assert loop.length == L and loop.num_params == 6
    for s in range(S):  # each stage holds L/S rows of every stacked parameter, never all L
        st = staged.stage(s)
        rows: dict[str, int] = {}  # a leaf's pieces summed (stage 0's first row is one apart)
        for a, p in zip(st.param_avals, st.param_paths, strict=True):
            if "blocks" in p:
                leaf = p.rsplit("[", 1)[0]
                rows[leaf] = rows.get(leaf, 0) + a.shape[0]
        assert list(rows.values()) == [L // S] * 6, (s, st.param_paths)


def test_flax_scan_trains_like_one_device():
    pipe = hlopipe.Pipeline(loss_fn, _variables(), _batches(1)[0], num_stages=S,
                            schedule="1f1b", num_microbatches=M, optimizer=OPT,
                            devices=jax.devices()[:S])  # fmt: skip
    assert pipe.staged.num_stages == S
    for st in pipe.staged.stages:  # (stage 0's first row a piece of its own)
        rows: dict[int, int] = {}
        for pc in (pipe.staged.arg_pieces[i] for i in st.params_needed):
            if pc.start is not None:
                rows[pc.source] = rows.get(pc.source, 0) + pc.stop - pc.start
        assert sorted(rows.values()) == [2] * 6
    state = pipe.init(_variables())
    losses = []
    for b in _batches(STEPS):
        state, m = pipe.step(state, b)
        losses.append(m.loss)
    ref_losses, ref_params = _reference(STEPS)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    got = jax.device_get(state.params)
    assert jax.tree.structure(got) == jax.tree.structure(ref_params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(ref_params), strict=True):
        assert a.shape == b.shape and _rel(a, b) <= 1e-5
    # it did train: the parameters moved from their start
    moved = [_rel(a, b) for a, b in zip(_stacked(got), _stacked(_variables()), strict=True)]
    assert max(moved) > 1e-3
