"""Checkpoint mistakes are refused by name, with what to do: a checkpoint of another program, a
missing or damaged folder, an optimizer the checkpoint was not saved with; and an array that
spans several devices is stored once, shard by shard, and read onto other shardings."""

from __future__ import annotations

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.errors import HlopipeError
from hlopipe.runtime import Pipeline, _checkpoint


def _params(width=7):
    k = jax.random.split(jax.random.key(4), 2)
    return {
        "l0": {"w": jax.random.normal(k[0], (5, width)) / 2, "b": jnp.full((width,), 0.3)},
        "l1": {"w": jax.random.normal(k[1], (width, 3)) / 2, "b": jnp.full((3,), -0.2)},
    }


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x @ p["l0"]["w"] + p["l0"]["b"]))
    return jnp.mean((h @ p["l1"]["w"] + p["l1"]["b"] - y) ** 2)


def _batch():
    k = jax.random.split(jax.random.key(1), 2)
    return jax.random.normal(k[0], (8, 5)), jax.random.normal(k[1], (8, 3))


def _pipe(width=7, optimizer=None):
    return Pipeline(_loss, _params(width), _batch(), num_microbatches=2,
                    devices=jax.devices()[:2], optimizer=optimizer)  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint of step 1 of the 7-wide MLP trained with adam, and its pipeline."""
    root = tmp_path_factory.mktemp("ckpt")
    pipe = _pipe(optimizer=optax.adam(1e-2))
    state, _ = pipe.step(pipe.init(_params()), _batch())
    pipe.save(state, root)
    return root, pipe


def _refused(pipe, root, *words):
    with pytest.raises(HlopipeError) as e:
        pipe.restore(root)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_a_checkpoint_of_another_program_is_refused(saved):
    root, _ = saved
    _refused(_pipe(width=6), root, "saved from another program", "['l0']['b']", "(6,)")


def test_a_missing_folder_and_a_missing_optimizer_state_are_named(tmp_path):
    _refused(_pipe(), tmp_path / "nothing", "no checkpoint under", "save one")
    no_opt = tmp_path / "no-opt"
    _pipe().save(_pipe().init(_params()), no_opt)
    _refused(_pipe(optimizer=optax.adam(1e-2)), no_opt, "no optimizer state", "another optimizer")


def test_a_damaged_checkpoint_is_named(saved, tmp_path):
    root, pipe = saved
    broken = tmp_path / "broken"
    shutil.copytree(root, broken)
    step = broken / "step_00000001"
    shutil.rmtree(step / "params" / _checkpoint._dirname("['l1']['w']"))
    _refused(pipe, broken, "missing or damaged", "older step")
    (step / "meta.json").write_text("{not json")
    _refused(pipe, broken, "meta.json is not readable", "damaged")
    (step / "meta.json").write_text(json.dumps({"format": "something-else"}))
    _refused(pipe, broken, "not an hlopipe checkpoint", "something-else")


@pytest.mark.parametrize("spec", [P("data"), P()])
def test_an_array_over_several_devices_is_stored_once_and_read_onto_other_shardings(tmp_path, spec):
    """Sharded (each shard written by its holder) or replicated (replica 0 written): one
    stored array, read whole onto one device and shard by shard onto another mesh."""
    value = np.arange(32, dtype=np.float32).reshape(8, 4)
    mesh = Mesh(np.array(jax.devices()[:4]), ("data",))
    x = jax.device_put(value, NamedSharding(mesh, spec))
    stored = _checkpoint._spec(str(tmp_path), "params", "['w']")
    _checkpoint._run([_checkpoint._write(x, stored)])
    aval = jax.ShapeDtypeStruct((8, 4), np.float32)
    other = Mesh(np.array(jax.devices()[4:6]), ("model",))
    targets = [jax.sharding.SingleDeviceSharding(jax.devices()[7]),
               NamedSharding(other, P(None, "model"))]  # fmt: skip
    reads = _checkpoint._run([_checkpoint._read(stored, aval, sh) for sh in targets])
    for sh, back in zip(targets, reads, strict=True):
        assert back.sharding == sh
        np.testing.assert_array_equal(np.asarray(back), value)


def _classifier(params, batch):
    tokens, labels = batch
    h = hlopipe.stage_boundary(jnp.tanh(params["embed"][tokens].mean(axis=1)))
    logp = jax.nn.log_softmax(h @ params["out"])
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def test_the_cli_says_in_one_line_that_a_checkpoint_is_of_another_program(saved, tmp_path, capsys):
    from hlopipe.cli import main

    root, _ = saved
    f32, i32 = jnp.float32, jnp.int32
    args = ({"embed": jax.ShapeDtypeStruct((8, 4), f32), "out": jax.ShapeDtypeStruct((4, 3), f32)},
            (jax.ShapeDtypeStruct((4, 3), i32), jax.ShapeDtypeStruct((4,), i32)))  # fmt: skip
    hlo = jax.jit(_classifier).lower(*args).as_text(dialect="hlo")
    (tmp_path / "module_0001.jit_loss.before_optimizations.txt").write_text(hlo)
    argv = ["train", str(tmp_path), "--module", "jit_loss", "--cpu-devices", "2",
            "--microbatches", "2", "--steps", "1", "--resume", str(root)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "saved from another program" in err[0], err
