"""The single controller's step path (``runtime/_stream.py``, ``runtime/_fast.py``): what it
decides once per pipeline instead of per step, and what it leaves until asked for.

One tiny 2-stage MLP on 2 devices, built once (building compiles every stage)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe.runtime import Pipeline
from hlopipe.runtime._program import PipelineExecutionError

M = 4


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"]))
    return jnp.mean((jnp.tanh(h @ p["w1"]) - y) ** 2)


def _params():
    k0, k1 = jax.random.split(jax.random.key(0))
    return {"w0": jax.random.normal(k0, (8, 8)) * 0.4, "w1": jax.random.normal(k1, (8, 8)) * 0.4}


def _batch():
    kx, ky = jax.random.split(jax.random.key(1))
    return np.asarray(jax.random.normal(kx, (16, 8))), np.asarray(jax.random.normal(ky, (16, 8)))


@functools.cache
def _pipe():
    return Pipeline(_loss, _params(), _batch(), schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:2], optimizer=optax.sgd(0.1))  # fmt: skip


def test_the_loss_is_reduced_only_when_read(monkeypatch):
    """A step dispatches nothing for its loss; reading ``metrics.loss`` reduces the
    microbatch losses then, once, to the loss JAX computes on the whole batch."""
    pipe = _pipe()
    calls = []
    reduce = pipe._reduce_losses
    monkeypatch.setattr(pipe, "_reduce_losses", lambda *a: calls.append(a) or reduce(*a))
    params, batch = _params(), _batch()
    _, metrics = pipe.step(pipe.init(params), batch)
    assert calls == []
    want = float(jax.jit(_loss)(params, batch))
    assert metrics.loss == pytest.approx(want, rel=1e-5)
    assert metrics.loss == pytest.approx(want, rel=1e-5)  # read twice, reduced once
    assert len(calls) == 1


def test_an_instruction_with_too_few_results_is_named():
    """An instruction whose callable returns fewer results than it has slots fails the step
    with an error naming the rank, the step of its row and the action (not a silently
    shorter register file)."""
    pipe = _pipe()
    stream = pipe._runner(train=True).stream
    assert stream is not None
    saved = stream._prepared
    n, fn, get, outs, frees = next(p for p in saved if p[1] is not None and len(p[3]) > 1)
    stream._prepared = [
        (n, lambda *a: fn(*a)[:-1], get, outs, frees) if p[0] == n else p for p in saved
    ]
    try:
        with pytest.raises(PipelineExecutionError, match=r"rank \d+, step \d+: .* results"):
            pipe.step(pipe.init(_params()), _batch())
    finally:
        stream._prepared = saved


def test_gradients_without_an_optimizer_are_the_stages_accumulators():
    """Every parameter has one stage computing its gradient on its owner's rank here, so the
    step's gradients are those stages' accumulators as they are (nothing summed or moved),
    equal to JAX's gradient of the whole batch."""
    params, batch = _params(), _batch()
    pipe = Pipeline(_loss, params, batch, schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:2])  # fmt: skip
    assert pipe.param_store._direct_grads() != []
    _, metrics = pipe.step(pipe.init(params), batch)
    want = jax.grad(_loss)(params, batch)
    for k in params:
        np.testing.assert_allclose(metrics.grads[k], want[k], rtol=1e-5, atol=1e-6)


def test_a_process_local_block_is_the_devices_rows_of_every_microbatch() -> None:
    """A process feeding its own rows (``process_local``): a device's block of a
    ``(microbatches, microbatch, ...)`` leaf, cut from the process's rows, is that block of
    the global batch, also when the process's devices hold rows apart (offsets 2:4 and 6:8 of
    microbatches of 8). The oracle is the global array sliced directly."""
    from hlopipe.runtime._fast import _device_block

    whole = np.arange(3 * 8 * 2).reshape(3, 8, 2)  # 3 microbatches of 8 rows
    held = [2, 3, 6, 7]
    column = {o: j for j, o in enumerate(held)}
    for lo, hi in [(2, 4), (6, 8), (7, 8)]:
        index = (slice(None), slice(lo, hi), slice(None))
        block = _device_block(whole[:, held], column, 8, index)
        np.testing.assert_array_equal(block, whole[:, lo:hi])


def test_a_batch_on_devices_elsewhere_trains_like_jax():
    """A batch of arrays on one device each, but not the devices that read them (``x`` on the
    second stage's device, ``y`` on the first's; the first stage reads ``x``, the second
    ``y``), moves in the step's batched copy; a leaf split over two devices moves by
    ``device_put``. Both steps give the loss and the SGD update of JAX on the whole batch."""
    pipe = _pipe()
    params, (x, y) = _params(), _batch()
    d0, d1, d2 = jax.devices()[:3]
    mesh = jax.sharding.Mesh(np.array([d1, d2]), ("data",))
    split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    want_loss, want_grads = jax.value_and_grad(_loss)(params, (x, y))
    for batch in [(jax.device_put(x, d1), jax.device_put(y, d0)),
                  (jax.device_put(x, split), jax.device_put(y, d1))]:  # fmt: skip
        state, metrics = pipe.step(pipe.init(params), batch)
        assert metrics.loss == pytest.approx(float(want_loss), rel=1e-5)
        got = pipe.gather_params(state)
        for k in params:
            want = params[k] - 0.1 * want_grads[k]
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want), rtol=1e-5, atol=1e-6)
