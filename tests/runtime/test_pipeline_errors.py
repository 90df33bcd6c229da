"""Bad input fails before anything runs; a failure while running names the rank and action."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import hlopipe
from hlopipe import schedules
from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime import Mailbox, Pipeline, PipelineExecutionError, _compile
from hlopipe.runtime._program import StepPlan, build_program


def _params():
    k = jax.random.split(jax.random.key(0), 2)
    return {"w0": jax.random.normal(k[0], (4, 8)), "w1": jax.random.normal(k[1], (8, 4))}


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"]))
    return jnp.mean((h @ p["w1"] - y) ** 2)


BATCH = (jnp.ones((8, 4)), jnp.zeros((8, 4)))


def _pipe(**kw):
    args = {"schedule": "1f1b", "num_microbatches": 2, "devices": jax.devices()[:2]}
    args.update(kw)
    return Pipeline(_loss, _params(), BATCH, **args)


def test_batch_not_divisible():
    with pytest.raises(RuntimeConfigError, match=r"a batch of 8 does not split into 3"):
        _pipe(num_microbatches=3)


def test_batch_leaves_disagree():
    with pytest.raises(RuntimeConfigError, match="disagree on the batch size"):
        Pipeline(_loss, _params(), (jnp.ones((8, 4)), jnp.zeros((6, 4))), num_microbatches=2)


def test_more_ranks_than_devices():
    with pytest.raises(RuntimeConfigError, match=r"needs 2 ranks x 1 devices .* only 1 given"):
        _pipe(devices=jax.devices()[:1])


def test_stage_mesh_does_not_fit():
    with pytest.raises(RuntimeConfigError, match=r"x 3 devices per stage mesh = 6 devices, only 4"):
        _pipe(devices=jax.devices()[:4], stage_mesh_shape=(3,))
    with pytest.raises(RuntimeConfigError, match="needs 16 devices, only 8"):
        _pipe(devices=jax.devices()[:8], stage_mesh_shape=(16,))
    with pytest.raises(RuntimeConfigError, match="needs stage_mesh_axes naming them"):
        _pipe(devices=jax.devices()[:8], stage_mesh_shape=(2, 2))
    with pytest.raises(RuntimeConfigError, match="must name each of the 2 axes"):
        _pipe(devices=jax.devices()[:8], stage_mesh_shape=(2, 2), stage_mesh_axes=("data",))
    with pytest.raises(RuntimeConfigError, match=r"a list of 3 shapes; give one per stage \(2\)"):
        _pipe(devices=jax.devices()[:8], stage_mesh_shape=[(2,), (2,), (1,)])


def test_stages_not_a_multiple_of_virtual_stages():
    with pytest.raises(RuntimeConfigError, match="not a multiple of 3"):
        _pipe(schedule="interleaved-1f1b", virtual_stages=3)


def test_parameter_structure_mismatch():
    pipe = _pipe()
    with pytest.raises(RuntimeConfigError, match="params have structure"):
        pipe.init({"w0": _params()["w0"]})
    bad = dict(_params(), w1=jnp.ones((8, 5)))
    with pytest.raises(RuntimeConfigError, match=r"parameter \[0\]\['w1'\]: float32\[8, 5\]"):
        pipe.init(bad)
    with pytest.raises(RuntimeConfigError, match="batch is"):
        pipe.step(None, (jnp.ones((4, 4)), jnp.zeros((4, 4))))  # type: ignore[arg-type]


def test_program_file_arguments_mismatch(tmp_path):
    from hlopipe.demo import demo_files

    path, _ = demo_files()
    with pytest.raises(RuntimeConfigError, match="the program takes 46 arguments"):
        Pipeline(str(path), _params(), BATCH, num_microbatches=2, devices=jax.devices()[:4])


def test_signature_mismatch_names_the_argument(tmp_path):
    from hlopipe.demo import demo_files
    from hlopipe.models import gpt

    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(0), cfg)
    batch = gpt.batch(jax.random.key(1), 8, cfg)  # the program's batch, not 2 microbatches of it
    with pytest.raises(RuntimeConfigError) as e:
        Pipeline(str(path), params, batch, num_microbatches=2, devices=jax.devices()[:4])
    msg = str(e.value)
    assert msg.startswith(
        "argument 44 batch_0_ (batch leaf 0): the program expects int32[8, 16], given "
    )
    assert "full batch = microbatches x the program's batch" in msg and len(msg) < 400


def test_loss_must_be_a_scalar():
    def two(p, batch):
        return hlopipe.stage_boundary(batch[0] @ p["w0"]) @ p["w1"]

    with pytest.raises(RuntimeConfigError, match="scalar floating loss"):
        Pipeline(two, _params(), BATCH, num_microbatches=2, devices=jax.devices()[:2])


def test_failing_action_names_rank_and_action(monkeypatch):
    pipe = _pipe(schedule="inference")
    state = pipe.init(_params())
    real = _compile.StageExecutables.get

    def get(self, kind):
        if self.stage.index == 1:

            def boom(*a):
                raise ValueError("injected")

            return boom
        return real(self, kind)

    monkeypatch.setattr(_compile.StageExecutables, "get", get)
    with pytest.raises(
        PipelineExecutionError,
        match=r"rank 1, step 1: F of stage 1, microbatch 0 failed: ValueError: injected",
    ):
        pipe.infer(state, BATCH)


def test_lost_transfer_times_out_instead_of_hanging(monkeypatch):
    """The threaded interpreter (profiling, and across processes) waits for a value another
    rank sends with a timeout: a value that never comes is an error naming where."""
    pipe = _pipe(schedule="inference", recv_timeout=0.5, sync_actions=True)
    state = pipe.init(_params())
    # rank 0's sends get lost: rank 1 waits for data that never comes
    monkeypatch.setattr(Mailbox, "put", lambda self, key, value: None)
    with pytest.raises(
        PipelineExecutionError,
        match=r"rank 1, step 0: RECV_F of stage 1, microbatch 0 waited 0.5 s",
    ):
        pipe.infer(state, BATCH)


def test_schedule_that_cannot_finish_is_refused_naming_where():
    """The one builder orders a step by a dry run: a schedule with a cycle in it (rank 0's
    first backward moved before its first forward) has no order, and is refused before
    anything runs, naming where each rank would wait."""
    pipe = _pipe()
    lowered = schedules.lower(pipe.schedule)
    row = [a for a in lowered.actions[0] if a is not None]
    first_b = next(a for a in row if a.kind.value == "B")
    lowered.actions[0] = [first_b, *(a for a in row if a is not first_b)]
    plan = StepPlan.build(
        lowered, list(pipe.execs), pipe.placement, train=True, loss=pipe.plan.loss
    )
    with pytest.raises(
        PipelineExecutionError,
        match=r"cannot finish .*rank 0 at step 0 \(B of stage 0, microbatch 0\); "
        r"rank 1 at step 0 \(RECV_F of stage 1, microbatch 0\)",
    ):
        build_program(plan, pipe.num_params, None)
