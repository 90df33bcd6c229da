"""A pipeline over a scanned GPT (8 blocks stacked [8, ...], one lax.scan) cut by ranges of
iterations: 1F1B, ZB-H1 and interleaved training equal to one device, each stage computing with
only its rows of the stacked blocks (the optimizer updates each stacked parameter whole, on one
of them: test_optimizers.py); checkpoints store the stacked parameters whole, and restore
onto another stage count and onto the unsplit program."""

from __future__ import annotations

import functools
import json

import jax
import numpy as np
import optax
import pytest

from hlopipe.models import gpt, gpt_scan
from hlopipe.runtime import Pipeline

CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=8, d_ff=32)
M = 2
STEPS = 2
OPT = optax.sgd(0.05, momentum=0.9)
loss_fn = functools.partial(gpt_scan.loss, cfg=CFG)


@functools.cache
def _params():
    return gpt_scan.init(jax.random.key(0), CFG)


def _batches(n: int, start: int = 0) -> list:
    return [gpt.batch(jax.random.key(100 + k), 8, CFG) for k in range(start, start + n)]


@functools.cache
def _reference(steps: int):
    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = OPT.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    p, s, losses = _params(), OPT.init(_params()), []
    for b in _batches(steps):
        p, s, loss = step(p, s, b)
        losses.append(float(loss))
    return losses, p


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def _assert_like_reference(losses, params, steps: int) -> None:
    ref_losses, ref_params = _reference(steps)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert jax.tree.structure(params) == jax.tree.structure(ref_params)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(ref_params), strict=True):
        assert _rel(a, b) <= 1e-5


@functools.cache
def _pipe(schedule: str, ranks: int, v: int | None = None) -> Pipeline:
    """Built once per configuration (the 1F1B pipeline on 2 ranks serves two tests: building
    compiles every stage; each test starts from a fresh ``init`` state)."""
    return Pipeline(loss_fn, _params(), _batches(1)[0], schedule=schedule, num_microbatches=M,
                    devices=jax.devices()[:ranks], optimizer=OPT, virtual_stages=v)  # fmt: skip


@pytest.mark.parametrize(
    "schedule,ranks,v", [("1f1b", 2, None), ("zb-h1", 2, None), ("interleaved-1f1b", 2, 2)]
)
def test_scanned_gpt_trains_like_one_device(schedule, ranks, v):
    pipe = _pipe(schedule, ranks, v)
    S = pipe.staged.num_stages
    assert ranks * (v or 1) == S
    # each stage holds L/S rows of each of the 10 stacked block parameters
    for st in pipe.staged.stages:  # (stage 0's first row a piece of its own)
        rows: dict[int, int] = {}
        for pc in (pipe.staged.arg_pieces[i] for i in st.params_needed):
            if pc.start is not None:
                rows[pc.source] = rows.get(pc.source, 0) + pc.stop - pc.start
        assert sorted(rows.values()) == [8 // S] * 10
    state = pipe.init(_params())
    losses = []
    for b in _batches(STEPS):
        state, m = pipe.step(state, b)
        losses.append(m.loss)
    _assert_like_reference(losses, jax.device_get(state.params), STEPS)


def test_checkpoint_stores_stacked_parameters_whole_and_restores_onto_other_splits(tmp_path):
    pipe = _pipe("1f1b", 2)
    state = pipe.init(_params())
    state, _ = pipe.step(state, _batches(1)[0])
    pipe.save(state, tmp_path)
    meta = json.loads((tmp_path / "step_00000001" / "meta.json").read_text())
    shapes = {e["path"]: e["shape"] for e in meta["params"]}
    assert shapes["['blocks']['qkv']"] == [8, 16, 48]  # whole, by the caller's path
    files = sorted(p.name for p in (tmp_path / "step_00000001" / "params").iterdir())
    assert not [f for f in files if ".rows" in f] and len(files) == len(jax.tree.leaves(_params()))
    opt_files = [p.name for p in (tmp_path / "step_00000001" / "opt").iterdir()]
    assert not [f for f in opt_files if ".rows" in f]
    # onto 4 stages on 2 ranks (other ranges, other ranks: the interleaved pipeline the test
    # above trains, built once) and onto one stage (the loop unsplit): the next step continues
    # exactly like one device
    for other, stages in ((_pipe("interleaved-1f1b", 2, 2), 4), (_pipe("gpipe", 1), 1)):
        assert other.staged.num_stages == stages
        restored = other.restore(tmp_path)
        got = jax.device_get(restored.params)
        want = jax.device_get(state.params)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(a, b)
        restored, m = other.step(restored, _batches(1, 1)[0])
        _assert_like_reference([_reference(2)[0][0], m.loss], jax.device_get(restored.params), 2)
