"""Parallelism inside a stage: N-D stage meshes, parameter specs, merged sharding, optimizers
that read across parameters, summed losses, checkpoints onto another layout.

Eight CPU devices in this process (tests/conftest.py); the issue's 16-device configuration
(4 stages x a 2 x 2 mesh, 1F1B / ZB-H1 / interleaved) runs in a process of its own
(``_mesh_job.py``). JAX on one device is the oracle throughout.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt
from hlopipe.runtime import Pipeline
from hlopipe.runtime._compile import ExecKind, collective_counts

CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=2, d_ff=32)
BATCH, M, STEPS = 8, 2, 2
MESH = {"stage_mesh_shape": (2, 2), "stage_mesh_axes": ("data", "model")}
loss_fn = functools.partial(gpt.loss, cfg=CFG, boundary=hlopipe.stage_boundary, layers_per_stage=1)
SGD = optax.sgd(0.1, momentum=0.9)
ADAMW = optax.adamw(1e-2)  # one object: the clip tests' unclipped run is computed once


MODEL = P("model")


def megatron_specs(params, bias=MODEL):
    layer = {
        "ln1": {"g": P(), "b": P()}, "qkv": P(None, "model"), "proj": P("model", None),
        "ln2": {"g": P(), "b": P()}, "fc1": P(None, "model"), "fc1_b": bias,
        "fc2": P("model", None), "fc2_b": P(),
    }  # fmt: skip
    return {"embed": P(), "pos": P(), "layers": [layer] * len(params["layers"]),
            "ln_f": {"g": P(), "b": P()}}  # fmt: skip


@functools.cache
def _params():
    return gpt.init(jax.random.key(0), CFG)


def _batches(n=STEPS):
    return [gpt.batch(jax.random.key(100 + k), BATCH, CFG) for k in range(n)]


@functools.cache
def _staged():
    mb = jax.tree.map(lambda x: x[: BATCH // M], _batches(1)[0])
    return hlopipe.split(loss_fn, _params(), mb)


@functools.cache
def _reference(opt, fn=loss_fn, steps=STEPS):
    """One-device training (losses, gradient norms, parameters), once per (optimizer object,
    loss, steps): several tests train the same configuration against it."""

    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(fn)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss, optax.tree.norm(g)

    p, s = _params(), opt.init(_params())
    losses, norms = [], []
    for b in _batches(steps):
        p, s, loss, n = step(p, s, b)
        losses.append(float(loss))
        norms.append(float(n))
    return losses, norms, p


def _train(pipe, steps=STEPS):
    state = pipe.init(_params())
    losses, norms = [], []
    for b in _batches(steps):
        state, m = pipe.step(state, b)
        losses.append(m.loss)
        norms.append(m.grad_norm)
    return losses, norms, state


def _assert_params(state, want, rtol=1e-5):
    got = jax.tree.leaves(jax.device_get(state.params))
    for g, w in zip(got, jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)


@functools.cache
def _megatron_pipe(schedule="zb-h1"):
    specs = megatron_specs(_params(), bias=None)  # fc1_b left to propagation
    return Pipeline(_staged(), _params(), _batches(1)[0], schedule=schedule, num_microbatches=M,
                    devices=jax.devices()[:8], param_specs=specs, optimizer=SGD,
                    **MESH)  # fmt: skip


def test_megatron_specs_on_2x2_meshes_train_like_one_device():
    pipe = _megatron_pipe()
    losses, _, state = _train(pipe)
    ref_losses, _, ref_params = _reference(SGD)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    _assert_params(state, ref_params)
    qkv = state.params["layers"][1]["qkv"]
    assert qkv.sharding.spec == P(None, "model") and len(qkv.sharding.device_set) == 4
    # fc1_b had no spec: propagation chose, and the state holds it as the stage uses it
    ex = pipe.execs[0]
    k = ex.stage.params_needed.index(pipe.param_names.index("['layers'][0]['fc1_b']"))
    assert ex.requested_shardings[k] is None
    chosen = ex.param_shardings[k]
    assert chosen is not None and state.params["layers"][0]["fc1_b"].sharding == chosen


def test_no_collective_between_forward_and_backward_that_merged_did_not_have():
    pipe = _megatron_pipe()
    for ex in pipe.execs:
        merged = collective_counts(ex.get(ExecKind.MERGED))
        merged_iw = collective_counts(ex.get(ExecKind.MERGED_IW))
        assert merged, "the Megatron-split stage should hold collectives"
        for parts, whole in [
            ((ExecKind.F, ExecKind.B), merged),
            ((ExecKind.I, ExecKind.W), merged_iw),
        ]:
            split: dict[str, int] = {}
            for kind in parts:
                for op, (_, nbytes) in collective_counts(ex.get(kind)).items():
                    split[op] = split.get(op, 0) + nbytes
            for op, nbytes in split.items():
                assert nbytes <= whole.get(op, (0, 0))[1], (ex.stage.index, parts, op, split, whole)
        # the residuals F hands to B are laid out as the merged program chose
        res_out = list(ex.get(ExecKind.F).output_shardings)[len(ex.stage.outputs) :]
        p = ex.autodiff.num_params
        res_in = list(ex.get(ExecKind.B).input_shardings[0])[p : p + ex.autodiff.num_residuals]
        assert [s.spec for s in res_out] == [s.spec for s in res_in]


def test_collective_counts_reads_hlo():
    text = """
  %all-reduce.1 = f32[16,32]{1,0} all-reduce(f32[16,32]{1,0} %x), replica_groups={{0,1}}
  %ag = (f32[4]{0}, bf16[2,2]{1,0}) all-gather-start(%a, %b), dimensions={0}
  %agd = f32[8]{0} all-gather-done(%ag)
  %cp = s32[3]{0} collective-permute(s32[3]{0} %c), source_target_pairs={{0,1}}
"""
    assert collective_counts(text) == {
        "all-reduce": (1, 16 * 32 * 4), "all-gather": (1, 16 + 8), "collective-permute": (1, 12)
    }  # fmt: skip


def test_heterogeneous_stage_meshes_reshard_between_stages():
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:6], stage_mesh_shape=[(2, 2), (1, 2)],
                    stage_mesh_axes=("data", "model"), param_specs=megatron_specs(_params()),
                    optimizer=SGD)  # fmt: skip
    assert [dict(m.shape) for m in pipe.placement.meshes] == [
        {"data": 2, "model": 2}, {"data": 1, "model": 2}
    ]  # fmt: skip
    # the activation leaves rank 0 split on data and arrives whole on rank 1
    assert pipe.execs[0].output_shardings[0].spec == P("data")
    assert pipe.execs[1].input_shardings[0].spec == P()
    losses, _, state = _train(pipe)
    ref_losses, _, ref_params = _reference(SGD)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    _assert_params(state, ref_params)
    # the tied embedding: its gradient from stage 1 (mesh 1x2) reaches stage 0's mesh (2x2)
    assert len(state.params["embed"].sharding.device_set) == 4


CLIP_CASES = {
    # max_norm below the gradients' norm: the clip acts in every step
    "clip-then-adamw": optax.chain(optax.clip_by_global_norm(0.3), ADAMW),
    "sgd-then-clip": optax.chain(optax.sgd(0.5), optax.clip_by_global_norm(0.05)),
}


@pytest.mark.parametrize("name", list(CLIP_CASES))
def test_global_norm_clipping_equals_one_device(name):
    opt = CLIP_CASES[name]
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:2], optimizer=opt)  # fmt: skip
    losses, norms, state = _train(pipe, 3)
    ref_losses, ref_norms, ref_params = _reference(opt, steps=3)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(norms, ref_norms, rtol=1e-5)
    _assert_params(state, ref_params, rtol=1e-4)  # Adam amplifies ulps of the gradients
    # the clip matters: without it the run differs
    assert not np.allclose(_reference(ADAMW, steps=3)[0], ref_losses, rtol=1e-4)


@functools.cache
def _two_stage_pipe():
    return Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:2])  # fmt: skip


@pytest.mark.parametrize("name", ["normalize-then-sgd", "nested-chain"])
def test_global_norms_anywhere_equal_one_device(name):
    """A global norm wherever it sits (normalize_by_update_norm, a clip in a nested chain) is
    summed over the stages. Per-parameter statistics (LAMB, adafactor...): test_optimizers."""
    opt = {
        "normalize-then-sgd": optax.chain(optax.normalize_by_update_norm(), optax.sgd(0.01)),
        "nested-chain": optax.chain(optax.chain(optax.clip_by_global_norm(0.3), optax.sgd(0.5))),
    }[name]
    losses, norms, state = _train(_two_stage_pipe().with_optimizer(opt), 3)
    ref_losses, ref_norms, ref_params = _reference(opt, steps=3)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(norms, ref_norms, rtol=1e-5)
    _assert_params(state, ref_params, rtol=1e-4)


def _sum_loss(params, batch):
    return loss_fn(params, batch) * batch[0].shape[0]


def test_summed_loss_with_loss_reduction_sum():
    mb = jax.tree.map(lambda x: x[: BATCH // M], _batches(1)[0])
    staged = hlopipe.split(_sum_loss, _params(), mb)
    pipe = Pipeline(staged, _params(), _batches(1)[0], schedule="gpipe", num_microbatches=M,
                    devices=jax.devices()[:2], optimizer=optax.sgd(0.01),
                    loss_reduction="sum")  # fmt: skip
    losses, _, state = _train(pipe)
    ref_losses, _, ref_params = _reference(optax.sgd(0.01), fn=_sum_loss)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    _assert_params(state, ref_params)
    out = pipe.infer(state, _batches(1)[0])
    assert np.isclose(float(out), float(_sum_loss(jax.device_get(state.params), _batches(1)[0])),
                      rtol=1e-5)  # fmt: skip


def test_bad_param_specs_are_named():
    kw = dict(schedule="1f1b", num_microbatches=M, devices=jax.devices()[:8], **MESH)
    specs = megatron_specs(_params())
    specs["layers"][0] = dict(specs["layers"][0], qkv=P(None, "tensor"))
    with pytest.raises(RuntimeConfigError, match=r"\['layers'\]\[0\]\['qkv'\].*axis 'tensor'"):
        Pipeline(_staged(), _params(), _batches(1)[0], param_specs=specs, **kw)
    specs = megatron_specs(_params())
    specs["pos"] = P("model", "data", None)
    with pytest.raises(RuntimeConfigError, match=r"\['pos'\].*3 entries.*2 dimensions"):
        Pipeline(_staged(), _params(), _batches(1)[0], param_specs=specs, **kw)
    specs = megatron_specs(_params())
    specs["embed"] = "model"
    with pytest.raises(RuntimeConfigError, match=r"\['embed'\]: expected a .*PartitionSpec"):
        Pipeline(_staged(), _params(), _batches(1)[0], param_specs=specs, **kw)
    with pytest.raises(RuntimeConfigError, match="param_specs must have the structure"):
        Pipeline(_staged(), _params(), _batches(1)[0], param_specs={"embed": P()}, **kw)
    with pytest.raises(RuntimeConfigError, match="loss_reduction must be"):
        Pipeline(_staged(), _params(), _batches(1)[0], loss_reduction="avg", **kw)


def test_checkpoint_of_sharded_stages_restores_onto_another_layout(tmp_path):
    pipe = _megatron_pipe()  # the ZB-H1 pipeline the tests above build: its layout is the point
    state = pipe.init(_params())
    state, _ = pipe.step(state, _batches(1)[0])
    want = jax.device_get(state.params)
    pipe.save(state, tmp_path)
    # onto 2 stages of one device each, parameters replicated
    other = Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                     devices=jax.devices()[:2], optimizer=SGD)  # fmt: skip
    back = other.restore(tmp_path)
    assert back.step == 1
    for g, w in zip(
        jax.tree.leaves(jax.device_get(back.params)), jax.tree.leaves(want), strict=True
    ):
        np.testing.assert_array_equal(g, w)
    assert len(back.params["layers"][0]["qkv"].sharding.device_set) == 1
    # and training on from there gives the loss and the parameters of the uninterrupted run
    # (the parameters read the restored momentum: the loss alone does not)
    back, m = other.step(back, _batches(2)[1])
    ref_losses, _, ref_params = _reference(SGD)
    np.testing.assert_allclose(m.loss, ref_losses[1], rtol=1e-5)
    _assert_params(back, ref_params)


def _annotated_file(path):
    """The GPT loss exported as StableHLO with its weights sharded on a 2-device "model" mesh
    (Megatron-style; ``sdy.sharding`` on the arguments), flat ``(params..., tokens, targets)``."""
    from jax.sharding import Mesh, NamedSharding

    leaves, tree = jax.tree.flatten(_params())
    specs = jax.tree.leaves(megatron_specs(_params()), is_leaf=lambda x: isinstance(x, P))
    mesh = Mesh(np.array(jax.devices()[:2]), ("model",))

    def flat(*a):
        return loss_fn(jax.tree.unflatten(tree, a[: len(leaves)]), (a[-2], a[-1]))

    shardings = [NamedSharding(mesh, s) for s in specs] + [NamedSharding(mesh, P())] * 2
    mb = jax.tree.map(lambda x: x[: BATCH // M], _batches(1)[0])
    text = jax.jit(flat, in_shardings=shardings).lower(*leaves, *mb).as_text()
    assert 'sdy.sharding<@mesh, [{}, {"model"}]>' in text
    path.write_text(text)
    return path


def test_loaded_program_sharding_annotations_are_the_parameter_specs(tmp_path):
    file = _annotated_file(tmp_path / "gpt.mlir")
    pipe = Pipeline(str(file), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:8], optimizer=SGD, **MESH)  # fmt: skip
    names = pipe.param_names
    assert pipe.plan.param_specs[names.index("['layers'][0]['qkv']")] == P(None, "model")
    assert pipe.plan.param_specs[names.index("['layers'][1]['fc2']")] == P("model", None)
    losses, _, state = _train(pipe)
    ref_losses, _, ref_params = _reference(SGD)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    _assert_params(state, ref_params)
    assert state.params["layers"][1]["fc1"].sharding.spec == P(None, "model")


MESH_JOB = str(Path(__file__).with_name("_mesh_job.py"))


@pytest.mark.devices16
def test_16_devices_4_stages_of_2x2_meshes_train_like_one_device():
    """The issue's configuration: 1F1B, ZB-H1 and interleaved with sgd + clip (losses and
    parameters), 1F1B with adamw + clip_by_global_norm too (losses), in a process with 16 CPU
    devices."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    run = subprocess.run([sys.executable, MESH_JOB, "1f1b", "zb-h1", "interleaved-1f1b"],
                         capture_output=True, text=True, timeout=900, env=env)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    assert run.stdout.count("OK ") == 3, run.stdout


def _shared_weight_loss(p, batch):
    """Four stages; ``w`` is read by stage 0 (after a column-split matmul: propagation splits
    its rows) and stage 3 (after a replicated one: propagation replicates it). Under a V
    schedule both stages are on rank 0."""
    x, y = batch
    z = hlopipe.stage_boundary(jax.numpy.tanh(x @ p["w1"]) @ p["w"])
    z = hlopipe.stage_boundary(jax.numpy.tanh(z @ p["b"]))
    z = hlopipe.stage_boundary(jax.numpy.tanh(z @ p["c"]))
    return jax.numpy.mean((jax.numpy.tanh(z @ p["a"]) @ p["w"] - y) ** 2)


def test_stages_of_one_rank_that_propagation_laid_out_differently_share_a_parameter():
    """The step's program reshards a parameter for a stage whose layout of it differs
    from the rank's stored one (it used to pass the stored array: a sharding mismatch)."""
    ks = jax.random.split(jax.random.key(3), 6)
    shapes = {"w1": (8, 16), "w": (16, 8), "b": (8, 8), "c": (8, 8), "a": (8, 16)}
    params = {
        k: jax.random.normal(kk, s) * 0.3 for (k, s), kk in zip(shapes.items(), ks[:5], strict=True)
    }
    batches = [(jax.random.normal(k, (8, 8)), jax.numpy.ones((8, 8))) for k in ks[5:]] * 2
    staged = hlopipe.split(_shared_weight_loss, params, jax.tree.map(lambda a: a[:4], batches[0]))
    specs = {"w1": P(None, "model"), "w": None, "b": P(), "c": P(), "a": P()}
    pipe = Pipeline(staged, params, batches[0], schedule="zb-v", num_microbatches=2,
                    devices=jax.devices()[:8], param_specs=specs, optimizer=optax.sgd(0.1),
                    **MESH)  # fmt: skip
    assert pipe._runner(train=True).stream is not None  # the single controller runs the step
    # stage 3's copy of w is resharded once per step, not once per microbatch
    reshards = [ins for ins in pipe._program(train=True).instrs if ins.op == "reshard"]
    assert len(reshards) == 1 and reshards[0].where[2].stage == 3
    w = pipe.param_names.index("['w']")
    s0, s3 = pipe.execs[0], pipe.execs[3]
    assert s0.rank == s3.rank == 0
    layouts = [ex.param_shardings[ex.stage.params_needed.index(w)].spec for ex in (s0, s3)]
    assert layouts[0] != layouts[1], layouts  # the case this test is about
    state = pipe.init(params)
    p, s = params, optax.sgd(0.1).init(params)
    for n, b in enumerate(batches):
        # the profiling interpreter runs the same program (the reshard included)
        state, m = pipe.step(state, b, profile=n % 2 == 1)
        loss, g = jax.value_and_grad(_shared_weight_loss)(p, b)
        u, s = optax.sgd(0.1).update(g, s, p)
        p = optax.apply_updates(p, u)
        np.testing.assert_allclose(m.loss, float(loss), rtol=1e-5)
    _assert_params(state, p)


def _forward_first(ex):
    """What a runtime that lets the forward choose would pin: compile F alone (parameters
    as requested, residuals free), read its parameter and residual shardings."""
    from jax.extend.core import jaxpr_as_fun

    fb = ex.autodiff
    f = (
        jax.jit(lambda *a: tuple(jaxpr_as_fun(fb.forward_jaxpr)(*a)),
                in_shardings=(*ex.requested_shardings, *ex.input_shardings),
                out_shardings=(*ex.output_shardings, *[None] * fb.num_residuals),
                keep_unused=True)
        .lower(*[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in fb.forward_jaxpr.in_avals])
        .compile()
    )  # fmt: skip
    is_sh = lambda s: isinstance(s, jax.sharding.Sharding)  # noqa: E731
    flat = functools.partial(jax.tree.leaves, is_leaf=is_sh)
    return flat(f.input_shardings[0])[: fb.num_params], flat(f.output_shardings)[fb.num_outputs :]


def test_residuals_and_parameters_are_laid_out_as_the_merged_program_chose():
    """The tied embedding split on d_model: on the last stage the forward alone lays the
    residuals out otherwise than the merged forward + backward does; the runtime's F and B
    use the merged program's layouts."""
    specs = megatron_specs(_params())
    specs["embed"] = P(None, "model")
    pipe = Pipeline(_staged(), _params(), _batches(1)[0], schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:8], param_specs=specs, optimizer=SGD,
                    **MESH)  # fmt: skip
    differs = 0
    for ex in pipe.execs:
        fb = ex.autodiff
        O, R = fb.num_outputs, fb.num_residuals
        merged = ex.get(ExecKind.MERGED)
        m_res = [s.spec for s in merged.output_shardings[O : O + R]]
        m_par = [s.spec for s in jax.tree.leaves(merged.input_shardings[0])[: fb.num_params]]
        f, b = ex.get(ExecKind.F), ex.get(ExecKind.B)
        assert [s.spec for s in f.output_shardings[O:]] == m_res
        assert [s.spec for s in list(b.input_shardings[0])[fb.num_params :][:R]] == m_res
        assert [s.spec for s in f.input_shardings[0][: fb.num_params]] == m_par
        ff_par, ff_res = _forward_first(ex)
        differs += [s.spec for s in ff_res] != m_res or [s.spec for s in ff_par] != m_par
    assert differs, "forward-first and merged agree on every stage: the test would not bite"
    losses, _, _ = _train(pipe, 1)
    np.testing.assert_allclose(losses, _reference(SGD)[0][:1], rtol=1e-5)  # its first step
