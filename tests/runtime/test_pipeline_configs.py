"""Configurations a user meets that the GPT tests do not: dtypes, PRNG keys, loops a stage
cannot differentiate, structured optimizers, 64-bit programs. Small models, few steps; each
compared with JAX on one device or expected to fail with a clear error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError, StageError
from hlopipe.runtime import Pipeline


def _params(dtype=jnp.float32):
    k = jax.random.split(jax.random.key(0), 2)
    return {
        "w0": (jax.random.normal(k[0], (5, 7)) / 2).astype(dtype),
        "w1": (jax.random.normal(k[1], (7, 3)) / 2).astype(dtype),
    }


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x.astype(p["w0"].dtype) @ p["w0"]))
    return jnp.mean((h @ p["w1"] - y.astype(h.dtype)) ** 2).astype(jnp.float32)


def _batch(n=8, seed=1):
    k = jax.random.split(jax.random.key(seed), 2)
    return jax.random.normal(k[0], (n, 5)), jax.random.normal(k[1], (n, 3))


def test_checkpoint_of_bfloat16_parameters_restores_them_bit_for_bit(tmp_path):
    """NumPy stores bfloat16 (an ml_dtypes type) as raw bytes; restore reads it back as
    bfloat16, parameters and adam's moments alike (it used to fail on dtype '|V2')."""
    params = _params(jnp.bfloat16)
    pipe = Pipeline(_loss, params, _batch(), num_microbatches=2, devices=jax.devices()[:2],
                    optimizer=optax.adam(1e-2))  # fmt: skip
    state, _ = pipe.step(pipe.init(params), _batch())
    pipe.save(state, tmp_path)
    back = pipe.restore(tmp_path)
    for a, b in zip(jax.tree.leaves(pipe.gather_params(state)),
                    jax.tree.leaves(pipe.gather_params(back)), strict=True):  # fmt: skip
        assert b.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
    _, m1 = pipe.step(state, _batch(seed=2))
    _, m2 = pipe.step(back, _batch(seed=2))
    assert m1.loss == m2.loss


def _reference(loss, params, batches, opt):
    """Single-device training: value_and_grad of the full-batch loss, then ``opt``."""

    @jax.jit
    def step(p, s, b):
        value, g = jax.value_and_grad(loss)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, value

    p, s, losses = params, opt.init(params), []
    for b in batches:
        p, s, value = step(p, s, b)
        losses.append(float(value))
    return losses, p


def _assert_trains_like_one_device(pipe, loss, params, batches, opt, rtol=1e-5):
    state, losses = pipe.init(params), []
    for b in batches:
        state, metrics = pipe.step(state, b)
        losses.append(metrics.loss)
    ref_losses, ref_params = _reference(loss, params, batches, opt)
    np.testing.assert_allclose(losses, ref_losses, rtol=rtol)
    got = jax.tree.leaves(pipe.gather_params(state))
    for a, b in zip(got, jax.tree.leaves(ref_params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6)


def test_jax_export_artifact_with_pytree_arguments_trains_like_one_device(tmp_path):
    """A jax.export artifact of ``loss(params, batch)`` keeps its pytrees; the pipeline feeds
    it flat leaves (it used to call the pytree form with them and fail)."""
    opt = optax.sgd(0.1)
    params, batches = _params(), [_batch(seed=1), _batch(seed=2)]
    mb = jax.tree.map(lambda x: x[:4], batches[0])
    exported = jax.export.export(jax.jit(_loss))(params, mb)
    path = tmp_path / "loss.jaxexport"
    path.write_bytes(exported.serialize())
    pipe = Pipeline(str(path), params, batches[0], num_microbatches=2,
                    devices=jax.devices()[:2], optimizer=opt)  # fmt: skip
    assert pipe.staged.num_stages == 2
    _assert_trains_like_one_device(pipe, _loss, params, batches, opt)


def test_a_stage_jax_cannot_differentiate_is_refused_naming_the_stage_and_the_loop():
    """A while_loop (dynamic trip count) cannot be reverse-differentiated, on one device either;
    the pipeline says which stage and where, as a StageError (it used to be JAX's ValueError
    from deep inside the stage compiler)."""

    def loss(p, batch):
        x, y = batch
        h = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"]))
        h = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.9), (0, h))[1]
        return jnp.mean((h @ p["w1"] - y) ** 2)

    with pytest.raises(ValueError, match="Reverse-mode"):
        jax.grad(loss)(_params(), _batch())
    with pytest.raises(
        StageError,
        match=r"stage 1 cannot be differentiated \(a while loop at .*test_pipeline_configs.py",
    ):
        Pipeline(loss, _params(), _batch(), num_microbatches=2, devices=jax.devices()[:2])


def _dropout_loss(p, batch):
    x, y, keys = batch  # one typed PRNG key per example: a microbatch takes its own
    h = jnp.tanh(x @ p["w0"])
    keep = jax.vmap(lambda k: jax.random.bernoulli(k, 0.75, h.shape[1:]))(keys)
    h = hlopipe.stage_boundary(jnp.where(keep, h / 0.75, 0.0))
    return jnp.mean((h @ p["w1"] - y) ** 2)


@pytest.mark.parametrize("profile", [False, True], ids=["stream", "threads"])
def test_typed_prng_keys_in_the_batch_train_like_one_device(profile):
    """Dropout keyed per example (a batch leaf of typed keys, which NumPy cannot hold): the
    microbatches take their keys' slices (it used to fail converting the keys to NumPy)."""
    opt = optax.sgd(0.1)
    batches = [(*_batch(seed=s), jax.random.split(jax.random.key(s), 8)) for s in (1, 2)]
    pipe = Pipeline(_dropout_loss, _params(), batches[0], num_microbatches=4,
                    devices=jax.devices()[:2], optimizer=opt, sync_actions=profile)  # fmt: skip
    _assert_trains_like_one_device(pipe, _dropout_loss, _params(), batches, opt)


def _xent(w0, w1, x, labels):
    h = hlopipe.stage_boundary(jnp.tanh(x @ w0))
    logp = jax.nn.log_softmax(h @ w1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


@pytest.fixture(scope="module")
def int64_labels_program(tmp_path_factory):
    """A loss with int64 labels as HLO text (what TensorFlow and PyTorch programs have)."""
    p = _params()
    with jax.enable_x64(True):
        args = (p["w0"], p["w1"], jax.ShapeDtypeStruct((4, 5), jnp.float32),
                jax.ShapeDtypeStruct((4,), jnp.int64))  # fmt: skip
        text = jax.jit(_xent).lower(*args).compiler_ir("hlo").as_hlo_text()
    path = tmp_path_factory.mktemp("x64") / "xent.hlo"
    path.write_text(text)
    return str(path)


def test_a_64bit_program_outside_64bit_mode_is_refused_clearly(int64_labels_program):
    """Outside JAX's 64-bit mode the stages of an int64 program cannot be rebuilt (it used to
    fail with 'lax.eq requires arguments to have the same dtypes' in the stage compiler)."""
    params = [_params()["w0"], _params()["w1"]]
    batch = (_batch()[0], jnp.zeros(8, jnp.int32))
    with pytest.raises(StageError, match=r"64-bit types \(int64.*jax_enable_x64"):
        Pipeline(int64_labels_program, params, batch, num_microbatches=2,
                 devices=jax.devices()[:2])  # fmt: skip
    with pytest.raises(StageError, match=r"64-bit types \(int64.*jax_enable_x64"):
        hlopipe.split(hlopipe.load(int64_labels_program))


def test_a_64bit_program_in_64bit_mode_trains_like_one_device(int64_labels_program):
    opt = optax.sgd(0.1)
    # globally (the conftest puts it back): the pipeline compiles and runs in threads
    jax.config.update("jax_enable_x64", True)
    params = [_params()["w0"], _params()["w1"]]
    labels = jax.random.randint(jax.random.key(3), (2, 8), 0, 3, dtype=jnp.int64)
    batches = [(_batch(seed=s)[0].astype(jnp.float32), labels[s]) for s in (0, 1)]
    pipe = Pipeline(int64_labels_program, params, batches[0], num_microbatches=2,
                    devices=jax.devices()[:2], optimizer=opt)  # fmt: skip

    def loss(p, b):  # the program's batch is one microbatch of 4: average two of them
        halves = [jax.tree.map(lambda v, i=i: v[4 * i : 4 * i + 4], b) for i in (0, 1)]
        return sum(_xent(*p, *h) for h in halves) / 2

    _assert_trains_like_one_device(pipe, loss, params, batches, opt)


@pytest.mark.parametrize("profile", [False, True], ids=["stream", "threads"])
def test_a_64bit_program_trains_under_the_enable_x64_context(int64_labels_program, profile):
    """``with jax.enable_x64(True):`` is per thread: the threads the pipeline starts (parallel
    compilation, the rank threads of a profiled step) run under the caller's setting."""
    opt = optax.sgd(0.1)
    with jax.enable_x64(True):
        params = [_params()["w0"], _params()["w1"]]
        labels = jax.random.randint(jax.random.key(3), (2, 8), 0, 3, dtype=jnp.int64)
        batches = [(_batch(seed=s)[0].astype(jnp.float32), labels[s]) for s in (0, 1)]
        pipe = Pipeline(int64_labels_program, params, batches[0], num_microbatches=2,
                        devices=jax.devices()[:2], optimizer=opt, sync_actions=profile)  # fmt: skip

        def loss(p, b):
            halves = [jax.tree.map(lambda v, i=i: v[4 * i : 4 * i + 4], b) for i in (0, 1)]
            return sum(_xent(*p, *h) for h in halves) / 2

        _assert_trains_like_one_device(pipe, loss, params, batches, opt)
    assert not jax.config.read("jax_enable_x64")


def test_cli_train_and_split_run_a_64bit_program_in_64bit_mode(
    int64_labels_program, capsys, tmp_path
):
    from hlopipe.cli import main

    code = main(["train", int64_labels_program, "--steps", "2", "--check", "--microbatches",
                 "2", "--batch-args", "last:2"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    # names w0, w1, x, labels show no parameters: the pipeline agrees, the roles unchecked
    assert "(the pipeline agrees); the roles are UNCHECKED" in out.out
    assert not jax.config.read("jax_enable_x64")  # put back after the run
    out_dir = tmp_path / "stages"
    assert main(["split", int64_labels_program, "--at-markers", "-o", str(out_dir)]) == 0
    assert (out_dir / "manifest.json").exists()


def _no_bias_decay(p):
    """A weight-decay mask by path, as people write them: no decay on biases."""
    return jax.tree_util.tree_map_with_path(lambda path, _: path[-1].key != "b", p)


def _mlp_params():
    k = jax.random.split(jax.random.key(4), 2)
    return {
        "l0": {"w": jax.random.normal(k[0], (5, 7)) / 2, "b": jnp.full((7,), 0.3)},
        "l1": {"w": jax.random.normal(k[1], (7, 3)) / 2, "b": jnp.full((3,), -0.2)},
    }


def _mlp_loss(p, batch, marker=True):
    x, y = batch
    h = jnp.tanh(x @ p["l0"]["w"] + p["l0"]["b"])
    h = hlopipe.stage_boundary(h) if marker else h
    return jnp.mean((h @ p["l1"]["w"] + p["l1"]["b"] - y) ** 2)


STRUCTURED_OPTIMIZERS = {
    "adamw-mask-by-path": optax.adamw(0.1, weight_decay=0.5, mask=_no_bias_decay),
    "multi-transform-label-tree": optax.multi_transform(
        {"sgd": optax.sgd(0.1), "adam": optax.adam(0.05)},
        {"l0": {"w": "sgd", "b": "adam"}, "l1": {"w": "adam", "b": "sgd"}},
    ),
}


@pytest.mark.parametrize("name", list(STRUCTURED_OPTIMIZERS))
def test_optimizer_masks_and_labels_see_the_parameter_tree(name):
    """Masks and labels written for the user's pytree (by path, or as a pytree) get that tree
    on every stage. The stages used to get a flat {path string: array} dict: a mask by path
    then decayed the biases too (a silent wrong value) and a label pytree was refused."""
    opt = STRUCTURED_OPTIMIZERS[name]
    batches = [_batch(seed=s) for s in (1, 2, 3)]
    pipe = Pipeline(_mlp_loss, _mlp_params(), batches[0], num_microbatches=2,
                    devices=jax.devices()[:2], optimizer=opt)  # fmt: skip
    _assert_trains_like_one_device(pipe, _mlp_loss, _mlp_params(), batches, opt, rtol=1e-4)


def test_structured_optimizer_state_restores_onto_other_stages(tmp_path):
    """The optimizer state over the parameter tree (masked nodes included) is saved per
    parameter path and restored onto another stage count; training goes on as if unbroken."""
    opt = STRUCTURED_OPTIMIZERS["multi-transform-label-tree"]

    def loss(p, b):
        return _mlp_loss(p, b, marker=False)

    batches = [_batch(seed=s) for s in (1, 2, 3)]
    kw = {"num_microbatches": 2, "optimizer": opt}
    two = Pipeline(loss, _mlp_params(), batches[0], num_stages=2, devices=jax.devices()[:2], **kw)
    state, m0 = two.step(two.init(_mlp_params()), batches[0])
    two.save(state, tmp_path)
    one = Pipeline(loss, _mlp_params(), batches[0], num_stages=1, devices=jax.devices()[2:3], **kw)
    state = one.restore(tmp_path)
    losses = [m0.loss]
    for b in batches[1:]:
        state, m = one.step(state, b)
        losses.append(m.loss)
    ref_losses, ref_params = _reference(loss, _mlp_params(), batches, opt)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for a, b in zip(
        jax.tree.leaves(one.gather_params(state)), jax.tree.leaves(ref_params), strict=True
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def test_cli_train_takes_batch_arguments_at_any_position(tmp_path, capsys):
    """TensorFlow's programs take (x, labels, parameters...): --batch-args 0,1 names them, and
    training equals one device (before, the batch could only be the trailing arguments)."""
    from hlopipe.cli import main

    p = _params()
    args = (jax.ShapeDtypeStruct((4, 5), jnp.float32), jax.ShapeDtypeStruct((4,), jnp.int32),
            p["w0"], p["w1"])  # fmt: skip
    text = jax.jit(lambda x, lab, w0, w1: _xent(w0, w1, x, lab)).lower(*args).as_text()
    path = tmp_path / "batch_first.mlir"
    path.write_text(text)
    code = main(["train", str(path), "--batch-args", "0,1", "--steps", "2", "--check",
                 "--microbatches", "2", "--int-high", "3"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "2 parameters (56 values) + a microbatch of 2 (f32[4,5], i32[4], arguments 0, 1)" in (
        out.out
    )
    assert "(the pipeline agrees); the roles are UNCHECKED" in out.out
    assert main(["train", str(path), "--batch-args", "0,7"]) == 2
    assert "positions must be distinct, from 0 to 3" in capsys.readouterr().err
    # without --batch-args, the labels (an integer argument) would be a parameter: said so
    from hlopipe import training

    plan = training.plan_training(hlopipe.load(path))
    assert "integer arguments are usually data" in plan.describe()["params"]


def test_infer_reduces_batch_statistics_and_concatenates_per_example_outputs():
    """Aux outputs: a batch mean of width 7 (a running statistic: not per example) is averaged
    over the microbatches like the loss; per-example predictions are concatenated. The
    statistic used to be concatenated as if it were per example (shape 14 instead of 7)."""

    def loss(p, batch):
        x, y = batch
        h = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"]))
        pred = h @ p["w1"]
        return jnp.mean((pred - y) ** 2), {"h_mean": jnp.mean(h, axis=0), "pred": pred}

    batch = _batch(n=8)
    pipe = Pipeline(loss, _params(), batch, num_microbatches=2, devices=jax.devices()[:2])
    got = pipe.infer(pipe.init(_params()), batch)
    want = loss(_params(), batch)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_per_example_outputs_are_declared_or_refused_never_guessed():
    """A staged program (fixed shapes, as a file's) whose second output has the microbatch's
    rows: infer refuses it naming per_example; declared, it is concatenated as one device
    gives it. A loss function that cannot be traced at twice the microbatch is refused with
    the trace's own error, not taken for per example by its shape."""

    def loss(p, batch):
        x, y = batch
        pred = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"])) @ p["w1"]
        return jnp.mean((pred - y) ** 2), pred

    batch = _batch(n=8)
    mb = jax.tree.map(lambda a: a[:4], batch)
    staged = hlopipe.stages.split(loss, _params(), mb)
    pipe = Pipeline(staged, _params(), batch, num_microbatches=2, devices=jax.devices()[:2])
    with pytest.raises(RuntimeConfigError, match=r"output 1 .*declare it with per_example="):
        pipe.infer(pipe.init(_params()), batch)
    pipe = Pipeline(staged, _params(), batch, num_microbatches=2, devices=jax.devices()[:2],
                    per_example=(False, True))  # fmt: skip
    got = pipe.infer(pipe.init(_params()), batch)
    np.testing.assert_allclose(got[1], loss(_params(), batch)[1], rtol=1e-5, atol=1e-6)

    def fixed(p, b):  # written for 4 rows only
        return loss(p, jax.tree.map(lambda a: a.reshape(4, *a.shape[1:]), b))

    pipe = Pipeline(fixed, _params(), batch, num_microbatches=2, devices=jax.devices()[:2])
    with pytest.raises(RuntimeConfigError, match=r"tracing the loss function at 8 rows failed"):
        pipe.infer(pipe.init(_params()), batch)


def test_stage_meshes_that_differ_train_like_one_device_and_print_as_they_are():
    opt = optax.sgd(0.1)
    batches = [_batch(seed=1)]
    pipe = Pipeline(_loss, _params(), batches[0], num_microbatches=2, devices=jax.devices()[:3],
                    stage_mesh_shape=[(2,), (1,)], optimizer=opt)  # fmt: skip
    assert "2 ranks x (2, 1) devices" in repr(pipe)  # was "2 ranks x 2 devices"
    _assert_trains_like_one_device(pipe, _loss, _params(), batches, opt)


def test_a_batch_leaf_without_batch_axis_says_where_shared_values_go():
    x, y = _batch()
    with pytest.raises(RuntimeConfigError, match=r"leading batch axis.*goes into params.*split"):
        Pipeline(lambda p, b: _loss(p, b[:2]) * b[2], _params(), (x, y, jnp.float32(2.0)),
                 num_microbatches=2, devices=jax.devices()[:2])  # fmt: skip
