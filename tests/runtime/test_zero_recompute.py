"""ZeRO over a stage mesh's data axis and recompute policies per stage, on 2 stages x (2 data
x 2 model) CPU devices: the losses and parameters of plain JAX and optax on one device.

ZeRO-1 shards the optimizer state over the data axis (the update's executable all-gathers the
new parameters); ZeRO-2 the gradient accumulators too; ZeRO-3 the parameters too (the stage
executables gather them, FSDP). The recompute policies change what a stage's forward keeps
for its backward, never the gradients. The whole grid (ZeRO 0/1/3 x none/selective/full x
1F1B/interleaved, and one ZeRO-2 cell) is tested below for equality; the bytes each level
and policy keeps per device are ``benchmarks/zero_recompute.py``'s table.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.runtime import Pipeline

D, H, L, B, M, STEPS = 8, 16, 4, 8, 2, 2


def _loss(params, batch, per):
    x, y = batch
    h = x
    for i, layer in enumerate(params["layers"]):
        if i and i % per == 0:
            h = hlopipe.stage_boundary(h)
        h = h + jnp.tanh(h @ layer["w1"] + layer["b1"]) @ layer["w2"]
    return jnp.mean((h - y) ** 2)


def _params():
    k = jax.random.split(jax.random.key(0), 2 * L)
    return {
        "layers": [
            {"w1": jax.random.normal(k[2 * i], (D, H)) / np.sqrt(D), "b1": jnp.full(H, 0.1),
             "w2": jax.random.normal(k[2 * i + 1], (H, D)) / np.sqrt(H)}
            for i in range(L)
        ]
    }  # fmt: skip


SPECS = {"layers": [{"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None)}] * L}
OPT = optax.adam(1e-2)


def _batches():
    keys = [jax.random.split(jax.random.key(10 + s)) for s in range(STEPS)]
    return [(jax.random.normal(a, (B, D)), jax.random.normal(b, (B, D))) for a, b in keys]


def _one_device():
    loss = functools.partial(_loss, per=L)
    p, s, losses = _params(), OPT.init(_params()), []
    for b in _batches():
        value, g = jax.value_and_grad(loss)(p, b)
        u, s = OPT.update(g, s, p)
        p = optax.apply_updates(p, u)
        losses.append(float(value))
    return losses, p


def _data_split(x) -> bool:
    return "data" in jax.tree.leaves(tuple(x.sharding.spec))


PLAN = {
    "format": "hlopipe-plan", "version": 1, "program": {"path": None, "sha256": None},
    "cluster": {"device": "cpu", "devices": 8, "devices_per_node": 8, "intra_node_gbps": 10.0,
                "inter_node_gbps": 1.0},
    "global_batch": B,
    "plan": {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "zero": 1, "recompute": "full",
             "schedule": "interleaved-1f1b", "virtual_stages": 2, "microbatch_size": B // M // 2,
             "microbatches": M, "stage_layers": [], "stage_mesh_axes": ["data", "model"],
             "param_specs": ["w1=_,model", "b1=model", "w2=model,_"]},
}  # fmt: skip


@pytest.mark.parametrize("how", ["zero3-per-stage-recompute", "plan-interleaved-zero1"])
def test_zero_and_recompute_equal_one_device(how, tmp_path):
    if how == "zero3-per-stage-recompute":
        zero = 3
        pipe = _grid_pipe(3, "1f1b", ("selective", "full"))  # the grid's, below
        assert [ex.remat for ex in pipe.execs] == ["selective", "full"]
    else:  # a hand-written plan file: 4 stages, 2 a rank, on 2 ranks of (2 data x 2 model)
        zero = 1
        (tmp_path / "plan.json").write_text(json.dumps(PLAN))
        pipe = Pipeline.from_plan(
            functools.partial(_loss, per=1), _params(), _batches()[0],
            str(tmp_path / "plan.json"), optimizer=OPT,
        )  # fmt: skip
        assert pipe.staged.num_stages == 4 and pipe.schedule.num_ranks == 2
        w1 = pipe.param_names.index("['layers'][0]['w1']")
        assert pipe.plan.param_sharding(0, w1).spec == P(None, "model")
    state = pipe.init(_params())
    # ZeRO-1: the matrices' moments split over data, the matrices not; ZeRO-3: both (a
    # bias split over "model" has no dimension left for "data": it stays whole)
    for s, st in enumerate(state.opt_states):
        moments = [x for x in jax.tree.leaves(st) if x.ndim == 2]
        assert moments and all(_data_split(x) for x in moments), s
    held = [x for values in state.values for x in values.values() if x.ndim == 2]
    assert held and all(_data_split(x) == (zero == 3) for x in held)
    losses = []
    for b in _batches():
        state, metrics = pipe.step(state, b)
        losses.append(metrics.loss)
    want_losses, want = _one_device()
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    got = jax.device_get(state.params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # a checkpoint of the sharded state restores shard for shard
    pipe.save(state, tmp_path / "ckpt")
    back = pipe.restore(tmp_path / "ckpt")
    for a, b in zip(jax.tree.leaves(back.opt_states), jax.tree.leaves(state.opt_states),
                    strict=True):  # fmt: skip
        assert a.sharding == b.sharding
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_recompute_policies_keep_less_and_give_the_same_gradients():
    """The stages of a residual MLP differentiated under each policy: the residuals a stage's
    forward keeps shrink from none to selective (the matmul outputs kept, tanh and the adds
    redone) to full (the stage's input only), and the chained forwards and backwards give
    jax.value_and_grad's loss and gradients on one device."""
    loss = functools.partial(_loss, per=2)
    staged = hlopipe.stages.split(loss, _params(), _batches()[0])
    want_value, want = jax.value_and_grad(loss)(_params(), _batches()[0])
    kept = {}
    for policy in ("none", "selective", "full"):
        fbs = [st.forward_backward(0, remat=policy) for st in staged.stages]
        kept[policy] = sum(
            int(np.prod(a.shape)) * a.dtype.itemsize for fb in fbs for a in fb.residual_avals
        )
        value, got = staged.value_and_grad(_params(), _batches()[0], remat=policy)
        np.testing.assert_allclose(value, want_value, rtol=1e-6)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=policy)
    assert kept["none"] > kept["selective"] > kept["full"] > 0, kept


# Issue 48's grid: ZeRO 0/1/3 x recompute none/selective/full x (1F1B, interleaved 1F1B) on 2
# stages x (2 data x 2 model). Recompute is per stage, so one pipeline carries several
# policies: interleaved 1F1B's 4 stages all three, 1F1B's 2 stages two pipelines' worth.
# ZeRO-2 (the gradient accumulators sharded too, the parameters not) differs from ZeRO-1 in
# the accumulators only: one cell.
GRID = [
    (zero, schedule, recompute)
    for zero in (0, 1, 3)
    for schedule, recompute in (
        ("1f1b", ("selective", "full")),
        ("1f1b", ("none", "none")),
        ("interleaved-1f1b", ("none", "selective", "full", "none")),
    )
] + [(2, "1f1b", ("none", "none"))]


@functools.cache
def _grid_pipe(zero: int, schedule: str, recompute: tuple[str, ...]) -> Pipeline:
    """One pipeline of the grid (built once: the tests start each from a fresh state)."""
    return Pipeline(
        functools.partial(_loss, per=2 if schedule == "1f1b" else 1), _params(), _batches()[0],
        schedule=schedule, num_microbatches=M, devices=jax.devices()[:8],
        stage_mesh_shape=(2, 2), stage_mesh_axes=("data", "model"), param_specs=SPECS,
        optimizer=OPT, zero=zero, recompute=list(recompute),
    )  # fmt: skip


def test_the_zero_and_recompute_grid_equals_one_device():
    want_losses, want = _one_device()
    for zero, schedule, recompute in GRID:
        pipe = _grid_pipe(zero, schedule, recompute)
        assert [ex.remat for ex in pipe.execs] == list(recompute)
        assert pipe.schedule.num_ranks == 2
        state = pipe.init(_params())
        # the level acted: the matrices' moments split over data from ZeRO-1, the matrices
        # themselves at ZeRO-3
        moments = [x for st in state.opt_states for x in jax.tree.leaves(st) if x.ndim == 2]
        assert moments and all(_data_split(x) == (zero >= 1) for x in moments)
        held = [x for values in state.values for x in values.values() if x.ndim == 2]
        assert held and all(_data_split(x) == (zero == 3) for x in held)
        losses = []
        for b in _batches():
            state, metrics = pipe.step(state, b)
            losses.append(metrics.loss)
        where = f"zero {zero}, {schedule}, recompute {recompute}"
        # the gradient accumulators a step starts from (and its backwards return): a
        # (D, H) or (H, D) matrix split over "model" by SPECS, over "data" besides from
        # ZeRO-2 (its own sharding) or ZeRO-3 (its parameter's), so a quarter on a device
        for ex in pipe.execs:
            accs = [a for a in ex.zeros() if a.ndim == 2]
            per_device = {a.addressable_shards[0].data.nbytes for a in accs}
            assert accs and per_device == {D * H * 4 // (2 * (2 if zero >= 2 else 1))}, where
        np.testing.assert_allclose(losses, want_losses, rtol=1e-5, err_msg=where)
        got = jax.device_get(state.params)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=where)
