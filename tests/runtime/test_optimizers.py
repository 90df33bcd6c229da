"""Every optax transformation on a pipeline equals the same optimizer on one device: on a
scanned layer loop cut across two stages (each stage holds rows of the stacked parameters)
and on a model split at markers. Statistics over a whole parameter (LAMB's and LARS's trust
ratios, adafactor's factored moments and update RMS) and sums over all parameters
(``clip_by_global_norm``) are where a per-stage update would go wrong.

The oracle is optax on one device over the caller's tree (``_reference``). Each pipeline is
built once; ``Pipeline.with_optimizer`` swaps the optimizer without compiling the stages
again, which keeps the table fast.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime import Pipeline

D, L, BATCH, M, STEPS = 6, 8, 8, 2, 3


def _layer(h, wb):
    return jnp.tanh(h @ wb["w"] + wb["b"])


def _loss_scan(params, batch):
    x, y = batch
    h = x @ params["embed"]
    h, _ = jax.lax.scan(lambda h, wb: (_layer(h, wb), None), h, params["layers"])
    return jnp.mean((h @ params["head"] - y) ** 2)


def _loss_markers(params, batch):
    x, y = batch
    h = x @ params["embed"]
    for i, wb in enumerate(params["layers"]):
        if i == L // 2:
            h = hlopipe.stage_boundary(h)
        h = _layer(h, wb)
    return jnp.mean((h @ params["head"] - y) ** 2)


LOSS = {"scan": _loss_scan, "markers": _loss_markers}


@functools.cache
def _params(kind: str):
    k = jax.random.split(jax.random.key(0), 4)
    # [L, D, D]: the stacked axis is the largest, so adafactor factors over it
    w = jax.random.normal(k[0], (L, D, D)) / np.sqrt(D)
    b = 0.1 * jax.random.normal(k[1], (L, D))
    layers = {"w": w, "b": b} if kind == "scan" else [{"w": w[i], "b": b[i]} for i in range(L)]
    return {"embed": jax.random.normal(k[2], (3, D)), "layers": layers,
            "head": jax.random.normal(k[3], (D,))}  # fmt: skip


def _batches():
    out = []
    for s in range(STEPS):
        kx, ky = jax.random.split(jax.random.key(100 + s))
        out.append((jax.random.normal(kx, (BATCH, 3)), jax.random.normal(ky, (BATCH,))))
    return out


@functools.cache
def _pipe(kind: str) -> Pipeline:
    return Pipeline(LOSS[kind], _params(kind), _batches()[0], schedule="1f1b",
                    num_microbatches=M, devices=jax.devices()[:2])  # fmt: skip


def _is_w(params):
    """By path: the weight matrices (not the biases, the embedding or the head)."""
    return jax.tree_util.tree_map_with_path(
        lambda path, _: jax.tree_util.keystr(path).endswith("['w']"), params
    )


def _labels(params):
    return jax.tree.map(lambda w: "w" if w else "rest", _is_w(params))


def _scale_by_global_sum(u, s, p=None):
    """Each update over (1 + the sum of every update's squares): a constant added to a sum
    over parameters, which the stages must count once."""
    total = functools.reduce(lambda a, b: a + b, [jnp.sum(x**2) for x in jax.tree.leaves(u)])
    return jax.tree.map(lambda x: x / (total + 1.0), u), s


def _matrices(params):
    return jax.tree.map(lambda x: x.ndim >= 2, params)


def _by_ndim(params):
    return jax.tree.map(lambda x: "matrix" if x.ndim >= 2 else "rest", params)


def _poison_head_at_step_1():
    """The head's update made infinite at the second step: one stage's flag is false, and
    ``apply_if_finite`` must skip every stage's update (a global all)."""

    def update(u, count, p=None):
        bad = jnp.where(count == 1, jnp.inf, 1.0)
        return {**u, "head": u["head"] * bad}, count + 1

    return optax.GradientTransformation(lambda p: jnp.zeros([], jnp.int32), update)


CASES = {
    "lamb": lambda: optax.lamb(3e-2),
    "lars": lambda: optax.lars(0.3),
    "adafactor": lambda: optax.adafactor(3e-2, min_dim_size_to_factor=4),
    "lion": lambda: optax.lion(3e-3),
    "adam": lambda: optax.adam(3e-2),
    "adamw": lambda: optax.adamw(3e-2, weight_decay=0.1),
    "sgd-momentum": lambda: optax.sgd(0.1, momentum=0.9),
    "clip-then-adamw": lambda: optax.chain(optax.clip_by_global_norm(0.05), optax.adamw(3e-2)),
    "lamb-then-clip": lambda: optax.chain(optax.lamb(3e-2), optax.clip_by_global_norm(0.02)),
    "masked-lamb": lambda: optax.chain(optax.masked(optax.lamb(3e-2), _is_w), optax.sgd(0.1)),
    "global-sum-plus-one": lambda: optax.chain(
        optax.GradientTransformation(lambda p: optax.EmptyState(), _scale_by_global_sum),
        optax.sgd(0.5),
    ),
    "multi-transform": lambda: optax.multi_transform(
        {"w": optax.adafactor(3e-2, min_dim_size_to_factor=4), "rest": optax.lars(0.3)}, _labels
    ),
    # the rest of issue 48's table: a learning rate estimated from sums over every parameter,
    # a sign method after a global clip, a warmup-cosine schedule with weight decay masked by
    # path (one row), an average of updates, schedule-free averaging
    "prodigy": lambda: optax.contrib.prodigy(1.0, estim_lr0=1e-3, estim_lr_coef=10.0),
    "clip-then-lion": lambda: optax.chain(optax.clip_by_global_norm(0.05), optax.lion(3e-3)),
    "schedule-masked-decay": lambda: optax.adamw(
        optax.warmup_cosine_decay_schedule(0.0, 3e-2, 2, STEPS), weight_decay=0.1, mask=_is_w
    ),
    "ema": lambda: optax.chain(optax.ema(0.5), optax.scale(-0.1)),
    "schedule-free": lambda: optax.contrib.schedule_free_adamw(3e-2, warmup_steps=1),
    # state whose tree depends on the parameters' shapes: muon's Newton-Schulz for matrices
    # (adam for the rest), labels chosen by ndim
    "muon": lambda: optax.contrib.muon(3e-2),
    "multi-transform-by-ndim": lambda: optax.multi_transform(
        {"matrix": optax.adam(3e-2), "rest": optax.sgd(0.1)}, _by_ndim
    ),
    # a mask chosen by shape: weight decay on matrices only (adamw's mask= takes the same)
    "masked-by-ndim": lambda: optax.chain(
        optax.masked(optax.add_decayed_weights(0.1), _matrices), optax.adam(3e-2)
    ),
    # branches on one global scalar: a step counter, the all-finite flag of every gradient
    "multisteps": lambda: optax.MultiSteps(optax.adam(3e-2), every_k_schedule=2),
    "apply-if-finite": lambda: optax.chain(
        _poison_head_at_step_1(), optax.apply_if_finite(optax.adam(3e-2), 3)
    ),
}


def _reference(kind: str, opt):
    loss = LOSS[kind]

    @jax.jit
    def step(p, s, b):
        value, g = jax.value_and_grad(loss)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, value

    p, s, losses = _params(kind), opt.init(_params(kind)), []
    for b in _batches():
        p, s, value = step(p, s, b)
        losses.append(float(value))
    return losses, p


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


@pytest.mark.parametrize("kind", ["scan", "markers"])
@pytest.mark.parametrize("name", list(CASES))
def test_optimizer_on_two_stages_equals_one_device(name, kind):
    opt = CASES[name]()
    pipe = _pipe(kind).with_optimizer(opt)
    if kind == "scan":  # the loop is cut: both stages hold rows of the stacked weights
        w = pipe.plan.caller_names.index("['layers']['w']")
        pieces = pipe.plan.param_pieces
        rows_on = {st.index for st in pipe.staged.stages for i in st.params_needed
                   if i < pipe.num_params and pieces[i].source == w
                   and pieces[i].start is not None}  # fmt: skip
        assert rows_on == {0, 1}
    state = pipe.init(_params(kind))
    shapes = jax.tree.map(np.shape, state.opt_states)
    losses = []
    for b in _batches():
        state, m = pipe.step(state, b)
        losses.append(m.loss)
    # each step gives back the state's shapes init gave (else every update compiles again)
    assert jax.tree.map(np.shape, state.opt_states) == shapes
    ref_losses, ref_params = _reference(kind, opt)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    got = jax.device_get(state.params)
    assert jax.tree.structure(got) == jax.tree.structure(ref_params)
    leaves = jax.tree_util.tree_flatten_with_path(got)[0]
    for (path, a), want in zip(leaves, jax.tree.leaves(ref_params), strict=True):
        assert _rel(a, want) <= 1e-5, (jax.tree_util.keystr(path), _rel(a, want))
    # the parameters moved: the optimizer did something in 3 steps
    assert _rel(jax.tree.leaves(got)[-1], jax.tree.leaves(_params(kind))[-1]) > 1e-3


def _transformation(update):
    return optax.GradientTransformation(lambda p: optax.EmptyState(), update)


def _scale_by_norm_of_head(u, s, p=None):
    n = jnp.linalg.norm(p["head"])
    return jax.tree.map(lambda x: x * n, u), s


def _embed_from_head(u, s, p=None):
    return {**u, "embed": jnp.full_like(u["embed"], jnp.sum(u["head"]))}, s


def _scale_by_max_entry(u, s, p=None):
    flat = jnp.concatenate([x.ravel() for x in jax.tree.leaves(u)])
    return jax.tree.map(lambda x: x / jnp.max(jnp.abs(flat)), u), s


def test_an_optimizer_combining_parameters_otherwise_is_refused_naming_where():
    pipe = _pipe("markers")
    where = r"_scale_by_norm_of_head.*\(tests/runtime/test_optimizers.py:\d+\)"
    where2 = r"_scale_by_max_entry.*\(tests/runtime/test_optimizers.py:\d+\)"
    with pytest.raises(RuntimeConfigError, match=rf"combines parameters .*'mul' at {where}"):
        pipe.with_optimizer(_transformation(_scale_by_norm_of_head))
    with pytest.raises(RuntimeConfigError, match=r"updates \['embed'\] depends on other para"):
        pipe.with_optimizer(_transformation(_embed_from_head))
    # every update's entries side by side, then their largest magnitude: not a sum, not an
    # all / any of flags
    with pytest.raises(RuntimeConfigError, match=rf"combines parameters .*'abs' at .*{where2}"):
        pipe.with_optimizer(_transformation(_scale_by_max_entry))
