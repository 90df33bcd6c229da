"""The runtime against JAX on one device: training with every schedule, inference, HLO files.

Eight CPU devices (tests/conftest.py). One small GPT, split once at its markers, is shared by
the tests so that compiled stage executables are reused across schedules with the same
placement (compiling is what costs here).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _gpt_setup import BATCH, CFG, OPT, M, _rel, assert_same_training, loss_fn  # noqa: F401
from _gpt_setup import batches as _batches
from _gpt_setup import params as _params
from _gpt_setup import reference as _reference
from _gpt_setup import staged as _staged
from _gpt_setup import train as _train

import hlopipe
from hlopipe import schedules
from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt
from hlopipe.runtime import Pipeline

STEPS = 20


# -- every schedule trains exactly like one device ---------------------------------------------

SCHEDULES = [
    ("gpipe", 4),
    ("1f1b", 4),
    ("zb-h1", 4),
    ("zb-h2", 4),
    ("interleaved-1f1b", 2),
    ("looped-bfs", 2),
    ("zb-v", 2),
]


@functools.cache
def _pipe(name: str, ranks: int) -> Pipeline:
    """The GPT's pipeline with ``OPT``, built once per (schedule, ranks): the timeline and
    memory tests read the 1F1B and ZB-H1 ones this table trains (building compiles each
    stage's optimizer functions); each test starts from a fresh ``init`` state."""
    return Pipeline(
        _staged(), _params(), _batches(1)[0], schedule=name, num_microbatches=M,
        devices=jax.devices()[:ranks], optimizer=OPT,
    )  # fmt: skip


@pytest.mark.parametrize("name,ranks", SCHEDULES, ids=[s for s, _ in SCHEDULES])
def test_schedule_trains_like_one_device(name, ranks):
    pipe = _pipe(name, ranks)
    assert pipe.schedule.num_ranks == ranks
    losses, params = _train(pipe, STEPS)
    assert_same_training(losses, params, STEPS)
    assert losses[-1] < losses[0]


def test_data_parallel_stages_sgd_parameters_like_one_device():
    """4 stages x 2 data-parallel devices: each stage's gradient is the sum over its two
    devices' halves of every microbatch; losses and parameters equal one device's."""
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="zb-h1", num_microbatches=M,
                    devices=jax.devices()[:8], stage_mesh_shape=(2,), optimizer=OPT)  # fmt: skip
    assert pipe.placement.group_size == 2 and pipe.schedule.num_ranks == 4
    losses, params = _train(pipe, 4)
    assert_same_training(losses, params, 4)


def test_auto_schedule_is_chosen_from_a_profiled_step_and_trains_like_one_device():
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="auto", num_microbatches=M,
                    devices=jax.devices()[:4], optimizer=OPT)  # fmt: skip
    # the best of the schedules for 4 ranks x 1 stage (the 1F1B probe's placement)
    assert pipe.schedule.name in ("gpipe", "1f1b", "zb-h1", "zb-h2")
    assert pipe.schedule.num_ranks == 4 and pipe.staged.num_stages == 4
    losses, params = _train(pipe, 4)
    assert_same_training(losses, params, 4)


def test_data_parallel_stages_adamw():
    """The demo's layout, 4 stages x 2 data-parallel devices, with adamw: the losses match.

    (Parameters are compared with SGD above: adam divides by sqrt(v), so in directions where
    the gradient is ~0 (e.g. the softmax's shift invariance in qkv) ulp-level differences of
    the gradient become visible differences of the update.)
    """
    opt = optax.adamw(1e-2)
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:8], stage_mesh_shape=(2,), optimizer=opt)  # fmt: skip
    assert pipe.placement.group_size == 2 and pipe.schedule.num_ranks == 4
    losses, _ = _train(pipe, 5)
    ref_losses, _ = _reference(5, opt)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)


def test_gradients_without_optimizer_and_remat():
    """optimizer=None returns the gradients; remat recomputes forwards and changes nothing."""
    batch = _batches(1)[0]
    pipe = Pipeline(_staged(), _params(), batch, schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:4], remat=True)  # fmt: skip
    state = pipe.init(_params())
    _, metrics = pipe.step(state, batch)
    loss, grads = jax.jit(jax.value_and_grad(loss_fn))(_params(), batch)
    assert metrics.loss == pytest.approx(float(loss), rel=1e-6)
    assert metrics.grads is not None  # optimizer=None: the step returns its gradients
    assert jax.tree.structure(metrics.grads) == jax.tree.structure(grads)
    for a, b in zip(jax.tree.leaves(metrics.grads), jax.tree.leaves(grads), strict=True):
        assert _rel(a, b) <= 1e-5
    gnorm = np.sqrt(
        sum(np.sum(np.square(np.asarray(g, np.float64))) for g in jax.tree.leaves(grads))
    )
    assert metrics.grad_norm == pytest.approx(gnorm, rel=1e-5)


# -- skip connections and tied parameters ------------------------------------------------------


def _skip_params():
    k = jax.random.split(jax.random.key(3), 3)
    return {
        "w0": jax.random.normal(k[0], (6, 8)) * 0.5,
        "w1": jax.random.normal(k[1], (8, 8)) * 0.5,
        "w2": jax.random.normal(k[2], (8, 8)) * 0.5,
    }


def _skip_loss(p, batch):
    x, y = batch
    h0 = jnp.tanh(x @ p["w0"])
    h0 = hlopipe.stage_boundary(h0)
    h1 = jnp.tanh(h0 @ p["w1"])
    h1 = hlopipe.stage_boundary(h1)
    h2 = jnp.tanh(h1 @ p["w2"]) + h0  # skip from stage 0 to stage 2
    out = h2 @ p["w0"].T  # w0 tied between stage 0 and stage 2
    return jnp.mean((out - y) ** 2)


@pytest.mark.parametrize("name", ["1f1b", "zb-h1"])
def test_skip_connection_and_tied_weight(name):
    kx, ky = jax.random.split(jax.random.key(4))
    batch = (jax.random.normal(kx, (8, 6)), jax.random.normal(ky, (8, 6)))
    params = _skip_params()
    pipe = Pipeline(_skip_loss, params, batch, schedule=name, num_microbatches=4,
                    devices=jax.devices()[:3])  # fmt: skip
    assert any(r.src == 0 for r in pipe.staged.stage(2).receives)  # the skip is real
    _, metrics = pipe.step(pipe.init(params), batch)
    loss, grads = jax.value_and_grad(_skip_loss)(params, batch)
    assert metrics.loss == pytest.approx(float(loss), rel=1e-6)
    for k in params:
        assert _rel(metrics.grads[k], grads[k]) <= 1e-5, k


# -- inference ---------------------------------------------------------------------------------


def test_infer_equals_single_device_forward():
    batch = _batches(1)[0]
    pipe = Pipeline(_staged(), _params(), batch, schedule="zb-v", num_microbatches=M,
                    devices=jax.devices()[:2])  # fmt: skip
    out = pipe.infer(pipe.init(_params()), batch)
    assert float(out) == pytest.approx(float(loss_fn(_params(), batch)), rel=1e-6)
    assert pipe.inference_schedule().stage_to_rank == pipe.schedule.stage_to_rank


def test_infer_logits_with_inference_schedule():
    tokens = _batches(1)[0][0]

    def logits(p, toks):
        return gpt.logits(p, toks, CFG, hlopipe.stage_boundary, layers_per_stage=2)

    pipe = Pipeline(logits, _params(), tokens, schedule="inference", num_microbatches=4,
                    devices=jax.devices()[:4], stage_mesh_shape=(2,))  # fmt: skip
    got = pipe.infer(pipe.init(_params()), tokens)
    want = logits(_params(), tokens)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(hlopipe.RuntimeConfigError, match="forward-only"):
        pipe.step(pipe.init(_params()), tokens)


# -- HLO in, pipeline out ----------------------------------------------------------------------


def test_hlo_file_trains_like_the_jax_function():
    from hlopipe.demo import demo_files

    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(meta["param_seed"]), cfg)
    m = 2
    batches = [gpt.batch(jax.random.key(k), meta["batch"] * m, cfg) for k in range(3)]
    pipe = Pipeline(str(path), params, batches[0], schedule="1f1b", num_microbatches=m,
                    devices=jax.devices()[:4], optimizer=OPT)  # fmt: skip
    assert pipe.staged.num_stages == 4
    state = pipe.init(params)

    @jax.jit
    def ref_step(p, s, b):
        loss, g = jax.value_and_grad(gpt.loss)(p, b, cfg)
        u, s = OPT.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    ref_p, ref_s = params, OPT.init(params)
    for b in batches:
        state, metrics = pipe.step(state, b)
        ref_p, ref_s, ref_loss = ref_step(ref_p, ref_s, b)
        assert metrics.loss == pytest.approx(float(ref_loss), rel=1e-5)
    for a, b in zip(
        jax.tree.leaves(jax.device_get(state.params)), jax.tree.leaves(ref_p), strict=True
    ):
        assert _rel(a, b) <= 1e-5


# -- timeline ----------------------------------------------------------------------------------


def test_measured_timeline(tmp_path):
    batch = _batches(1)[0]
    pipe = _pipe("1f1b", 4)
    state, metrics = pipe.step(pipe.init(_params()), batch)
    assert metrics.timeline is None  # a normal step measures nothing
    with pytest.raises(RuntimeConfigError, match="no step has been profiled"):
        pipe.timeline()
    _, metrics = pipe.step(state, batch, profile=True)
    tl = pipe.timeline()
    assert tl is metrics.timeline
    lowered = schedules.lower(pipe.schedule)
    for r, row in lowered.actions.items():
        assert [a for a, _, _ in tl.events[r]] == [a for a in row if a is not None]
        ends = [e for _, _, e in tl.events[r]]
        assert ends == sorted(ends)
    assert tl.makespan > 0 and 0 <= tl.bubble_fraction < 1
    # the residuals actually held follow the schedule's peak-activation figure
    assert tl.peak_activations == schedules.simulate(pipe.schedule).peak_activations
    assert {"F", "B", "send"} <= set(map(str, tl.costs))
    out = tmp_path / "timeline.png"
    schedules.plot(tl, out)
    assert out.stat().st_size > 0


# -- memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1"])
def test_activations_held_match_the_simulated_peak(schedule):
    """The register file of a normal (asynchronous) step holds, per rank, at most as many
    microbatches' activations as the simulator says, and every send buffer and activation is
    released by the end of the step."""
    batch = _batches(1)[0]
    pipe = _pipe(schedule, 4)
    runner = pipe._runner(train=True)
    assert runner.stream is not None
    regs = runner.fill(pipe.init(_params()), batch)
    peak = runner.stream.run_counting(regs)
    assert peak == schedules.simulate(pipe.schedule).peak_activations
    assert runner.stream.held_slots(regs) == []


def test_ctrl_c_during_a_threaded_step_stops_every_rank_thread(monkeypatch):
    """Ctrl-C reaching the caller's thread while it starts a profiled step's rank threads (a
    thread's start waits for it to run: under load, long enough to be interrupted): the
    interrupt propagates, and the ranks already started stop, rather than wait for data from
    ranks that never start (they are not daemons: the interpreter's exit would wait on them
    forever, as a `hlopipe train` interrupted under load once did)."""
    import threading
    import time

    batch = _batches(1)[0]
    pipe = _pipe("1f1b", 4)
    state, _ = pipe.step(pipe.init(_params()), batch)  # compiled
    start, started = threading.Thread.start, []

    def interrupted_start(self):
        if self.name.startswith("hlopipe-rank-") and started:
            raise KeyboardInterrupt
        start(self)
        started.append(self)

    monkeypatch.setattr(threading.Thread, "start", interrupted_start)
    with pytest.raises(KeyboardInterrupt):
        pipe.step(state, batch, profile=True)
    monkeypatch.undo()
    assert started
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.is_alive() for t in started)
