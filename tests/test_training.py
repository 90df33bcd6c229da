"""hlopipe.training: the roles of a loss program's arguments (batch, parameters, frozen
constants), its plan, and the one-device reference run; the library under `hlopipe train`."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe import training
from hlopipe.errors import Keyword, RuntimeConfigError, render
from hlopipe.training import Role

FRAMEWORKS = Path(__file__).parent / "data" / "frameworks"
F32 = jnp.float32


def _sds(*shape: int, dtype=F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def mlp_loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w"] + params["b"]) - y) ** 2)


MLP_ARGS = ({"w": _sds(3, 2), "b": _sds(2)}, _sds(4, 3), _sds(4, 2))


@pytest.fixture(scope="module")
def mlp_hlo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("training") / "mlp.hlo"
    path.write_text(jax.jit(mlp_loss).lower(*MLP_ARGS).as_text(dialect="hlo"))
    return path


def roles_of(r: training.ArgumentRoles) -> list[str]:
    return [a.role.value for a in r.arguments]


def test_float_x_and_y_beside_params_are_the_batch(mlp_hlo) -> None:
    """(params, x, y) with float x and y: the names say x and y are data. The dtype rule alone
    took only y as the batch and trained x as a parameter."""
    prog = hlopipe.load(mlp_hlo)
    r = training.infer_roles(prog.in_avals, prog.arg_names)
    assert [a.name for a in r.batch] == ["x", "y"]
    assert [a.name for a in r.parameters] == ["params__b__", "params__w__"] and not r.frozen
    assert r.how == ("by name: the arguments outside params",)


@pytest.mark.parametrize("root", ["params", "variables", "state", "weights"])
def test_parameter_roots_and_export_paths(root) -> None:
    avals = [_sds(3, 2), _sds(2), _sds(4, 3), _sds(4, 2)]
    names = [f"{root}['w']", f"{root}['b']", "x", "y"]
    assert roles_of(training.infer_roles(avals, names)) == ["parameter"] * 2 + ["batch"] * 2
    # jax.export names by position: a dict's leaves are the parameters, arrays the data
    export = ["[0]['b']", "[0]['w']", "[1]", "[2]"]
    assert roles_of(training.infer_roles(avals, export)) == ["parameter"] * 2 + ["batch"] * 2


def test_without_names_the_dtypes_decide_and_say_so() -> None:
    avals = [_sds(3, 2), _sds(4, 3), _sds(4, dtype=jnp.int32)]
    r = training.infer_roles(avals, [None, None, None])
    assert roles_of(r) == ["parameter", "parameter", "batch"]
    assert "the trailing integer ones" in r.how[0]
    r = training.infer_roles(avals[:2], [None, None])
    assert roles_of(r) == ["parameter", "batch"] and "the last one" in r.how[0]


@pytest.mark.parametrize(
    "spec, want",
    [("0", [0]), ("2", [2]), ("0,1", [0, 1]), ("1-3", [1, 2, 3]), ("last:2", [3, 4]), ([4], [4])],
)
def test_batch_args_name_positions(spec, want) -> None:
    """A single number is a position (torch_xla's input_ids at 0), not "the last N"."""
    assert training.parse_batch_args(spec, 5) == want


@pytest.mark.parametrize(
    "spec, words",
    [
        ("x", "expected positions from 0 such as 0 (one argument), 0,1 or 2-4"),
        ("last:0", "or last:N for the last N arguments"),
        ("0,7", "positions must be distinct, from 0 to 4"),
        ("1,1", "positions must be distinct"),
        ("0-4", "leave at least one parameter"),
    ],
)
def test_batch_args_errors_show_the_syntax(spec, words) -> None:
    with pytest.raises(RuntimeConfigError) as e:
        training.parse_batch_args(spec, 5)
    assert words in str(e.value) and "last:N" in str(e.value)
    assert e.value.keywords == (Keyword("batch_args", spec),)
    assert e.value.render({"batch_args": "--batch-args"}).startswith(f"--batch-args {spec}: ")


def test_torch_xla_lifted_scalars_are_frozen() -> None:
    """torch_xla's program takes its lifted scalar constants (f64[] and f32[]) as arguments;
    the fixture's manifest, written by the generator from torch, says which are constants."""
    case = FRAMEWORKS / "torch_xla" / "attention_layernorm_gelu"
    manifest = json.loads(case.with_suffix(".json").read_text())
    prog = hlopipe.load(case.with_suffix(".hlo"))
    inputs = [i for i, a in enumerate(manifest["args"]) if a["kind"] == "input"]
    r = training.infer_roles(prog.in_avals, prog.arg_names, batch_args=str(inputs[0]))
    kinds = {"param": "parameter", "input": "batch", "const": "frozen"}
    assert roles_of(r) == [kinds[a["kind"]] for a in manifest["args"]]
    # without values for them, planning refuses rather than guess 0.7978 or -inf
    with pytest.raises(RuntimeConfigError) as e:
        training.plan_training(prog, batch_args=str(inputs[0]))
    assert "are scalars, taken as constants a framework lifted into arguments" in str(e.value)
    assert "7 (f64[])" in str(e.value) and Keyword("params", "FILE.npz") in e.value.keywords


def lifted_loss(p0, p1, p2, p3):
    """torch_xla's shape of a loss: generic argument names, a scale lifted into an argument."""
    return jnp.mean((jnp.tanh(p2 @ p0) * p1 - p3) ** 2)


def test_frozen_constants_are_given_and_never_trained(tmp_path) -> None:
    args = (_sds(3, 2), _sds(), _sds(4, 3), _sds(4, 2))
    path = tmp_path / "lifted.hlo"
    path.write_text(jax.jit(lifted_loss).lower(*args).as_text(dialect="hlo"))
    w = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    scale = np.float32(0.7978)
    np.savez(tmp_path / "p.npz", w, scale)
    prog = hlopipe.load(path)
    assert prog.arg_names == [None] * 4
    plan = training.plan_training(
        prog, batch_args="2,3", params=str(tmp_path / "p.npz"), num_microbatches=2
    )
    assert [a.position for a in plan.roles.frozen] == [1] and plan.frozen == (scale,)
    assert len(plan.params) == 1 and np.array_equal(plan.params[0], w)
    assert "1 (f32[]): scalars lifted into arguments, never trained" in plan.describe()["frozen"]
    # the loss a Pipeline trains has the constant in place: the JAX function is the oracle
    x, y = plan.batch
    got = plan.loss([w], [x[:4], y[:4]])
    np.testing.assert_allclose(got, lifted_loss(w, scale, x[:4], y[:4]), rtol=1e-6)
    # the reference run trains w only: the same as optax on the JAX loss with scale fixed
    opt = optax.sgd(0.1)
    losses = training.train_one_device(plan, opt, steps=3)

    def ref_loss(w):
        return sum(lifted_loss(w, scale, x[i : i + 4], y[i : i + 4]) for i in (0, 4)) / 2

    want, wj, st = [], jnp.asarray(w), opt.init(jnp.asarray(w))
    for _ in range(3):
        v, g = jax.value_and_grad(ref_loss)(wj)
        u, st = opt.update(g, st, wj)
        wj = optax.apply_updates(wj, u)
        want.append(float(v))
    np.testing.assert_allclose(losses, want, rtol=1e-5)


def test_a_scalar_under_params_is_a_parameter() -> None:
    r = training.infer_roles([_sds(), _sds(4, 3)], ["params['temperature']", "x"])
    assert [a.role for a in r.arguments] == [Role.PARAMETER, Role.BATCH]


# ---- roles from the program's own tree; --check's reference on them -------------------------


def layers_loss(params, x, y):
    """A loss of four {"w", "b"} layers, as a user exports it with jax.export."""
    h = x
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        h = jnp.tanh(h) if i < 3 else h
    return jnp.mean((h - y) ** 2)


LAYERS_ARGS = (
    [{"w": _sds(a, b), "b": _sds(b)} for a, b in ((5, 6), (6, 6), (6, 6), (6, 2))],
    _sds(4, 5),
    _sds(4, 2),
)


@pytest.fixture(scope="module")
def layers_export(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "layers.jax_export"
    path.write_bytes(jax.export.export(jax.jit(layers_loss))(*LAYERS_ARGS).serialize())
    return path


def test_a_jax_export_tree_makes_argument_0_the_parameters(layers_export) -> None:
    """loss(params, x, y) exported with jax.export: the 8 leaves of argument 0 are the
    parameters, x and y the batch. The dtype rule took y alone and trained x at random."""
    prog = hlopipe.load(layers_export)
    assert prog.top_level_args() == [0] * 8 + [1, 2]
    plan = training.plan_training(prog, num_microbatches=2)
    assert [a.position for a in plan.roles.parameters] == list(range(8))
    assert [a.position for a in plan.roles.batch] == [8, 9] and not plan.roles.frozen
    assert "by the program's tree (jax.export)" in plan.describe()["batch"]
    assert plan.describe()["program"].startswith("10 arguments = 8 parameters (134 values)")
    # the program's own reading agrees, without the plan
    roles = training.program_roles(prog)
    assert roles.evidence is training.Evidence.TREE
    assert roles.parameters == tuple(range(8)) and roles.batch == (8, 9)


def test_top_level_args_count_keywords_after_the_positional_ones() -> None:
    def loss(params, x, *, y):
        return layers_loss(params, x, y)

    exported = jax.export.export(jax.jit(loss))(*LAYERS_ARGS[:2], y=LAYERS_ARGS[2])
    prog = hlopipe.io.load_bytes(bytes(exported.serialize()))
    assert prog.top_level_args() == [0] * 8 + [1, 2]
    assert training.program_roles(prog).batch == (8, 9)


@pytest.mark.parametrize("make_opt", [lambda: optax.adam(0.05), lambda: optax.sgd(0.5)],
                         ids=["adam", "sgd"])  # fmt: skip
def test_the_reference_calls_the_program_as_exported(layers_export, make_opt) -> None:
    """--check's reference: the oracle is optax on the Python loss itself, on one device.
    sgd as well as adam: adam's step hardly changes when the gradients are summed over the
    microbatches instead of averaged (it divides by their scale), sgd's is m times larger."""
    plan = training.plan_training(hlopipe.load(layers_export), num_microbatches=2)
    opt = make_opt()
    run = training.train_reference(plan, opt, steps=3)
    assert run.differences == () and run.roles.evidence is training.Evidence.TREE
    leaves = {a.name: v for a, v in zip(plan.roles.parameters, plan.params, strict=True)}
    params = [{k: jnp.asarray(leaves[f"[0][{i}]['{k}']"]) for k in "wb"} for i in range(4)]
    x, y = plan.batch

    def loss(p):
        return sum(layers_loss(p, x[i : i + 4], y[i : i + 4]) for i in (0, 4)) / 2

    @jax.jit
    def step(params, st):
        v, g = jax.value_and_grad(loss)(params)
        u, st = opt.update(g, st, params)
        return optax.apply_updates(params, u), st, v

    want, st = [], jax.jit(opt.init)(params)
    for _ in range(3):
        params, st, v = step(params, st)
        want.append(float(v))
    np.testing.assert_allclose(run.losses, want, rtol=1e-5)


def test_the_reference_refuses_roles_the_program_does_not_give(layers_export) -> None:
    """A wrong --batch-args (y alone: x trained as a parameter) cannot match itself."""
    plan = training.plan_training(hlopipe.load(layers_export), batch_args="9")
    run = training.train_reference(plan, optax.sgd(0.1), steps=1)
    assert run.losses is None
    assert run.differences == (
        "argument 8 [1] (f32[4,5]) is a parameter in the plan, in the batch by the program",
    )


def test_the_reference_takes_named_roles_from_the_names(mlp_hlo) -> None:
    """HLO text with JAX's names (params__b__, params__w__, x, y): the names are the evidence;
    a --batch-args that trains x is refused there too."""
    prog = hlopipe.load(mlp_hlo)
    roles = training.program_roles(prog)
    assert roles.evidence is training.Evidence.NAMES
    assert roles.parameters == (0, 1) and roles.batch == (2, 3)
    run = training.train_reference(training.plan_training(prog, batch_args="3"), None, 1)
    assert run.losses is None and len(run.differences) == 1
    assert run.differences[0].startswith("argument 2 x (f32[4,3]) is a parameter in the plan")


def test_torch_xla_integer_labels_are_the_batch() -> None:
    """torch_xla's loss takes (labels i64[8], b2, w2, b1, w1, x): no names, the labels first.
    The fixture's manifest (written from torch) says which are data. The labels used to be an
    "integer parameter = 0"."""
    case = FRAMEWORKS / "torch_xla" / "mlp_xent"
    manifest = json.loads(case.with_suffix(".json").read_text())
    prog = hlopipe.load(case.with_suffix(".hlo"))
    assert prog.arg_names == [None] * 6 and prog.top_level_args() is None
    r = training.infer_roles(prog.in_avals, prog.arg_names)
    kinds = {"param": "parameter", "input": "batch", "label": "batch"}
    assert roles_of(r) == [kinds[a["kind"]] for a in manifest["args"]]
    assert "with the integer argument(s) 0 of the same leading dimension" in r.how[0]
    # nothing in the program shows the roles: the reference cannot check them
    assert training.program_roles(prog).evidence is training.Evidence.NONE


# ---- defaults that say what they did --------------------------------------------------------


def _one_f_one_b_bubble(p: int, m: int) -> float:
    """1F1B's idle share with F=1, B=2 and free transfers, p ranks, m >= 1 microbatches: each
    rank works m (F + B) of a step lasting (m + p - 1)(F + B)."""
    return (p - 1) / (m + p - 1)


def test_a_plan_idling_over_half_says_so_and_what_lowers_it(mlp_hlo) -> None:
    """No markers, 8 devices: 8 stages with 4 microbatches idle 7/11 of each step."""
    prog = hlopipe.load(mlp_hlo)
    devices = jax.devices()[:8]
    layout = training.plan_stages(prog, 4, devices=devices, num_microbatches=4)
    assert layout.stages == 8
    flags = {"num_microbatches": "--microbatches", "num_stages": "--stages"}
    note = render(layout.bubble_note, flags)
    assert f"the simulated bubble is {_one_f_one_b_bubble(8, 4):.0%} of each step" in note
    # the smallest doubling of the microbatches and the most stages that idle half or less
    assert _one_f_one_b_bubble(8, 8) <= 0.5 < _one_f_one_b_bubble(6, 4)
    assert f"more microbatches (--microbatches 8: {_one_f_one_b_bubble(8, 8):.0%})" in note
    assert f"fewer stages (--stages 5: {_one_f_one_b_bubble(5, 4):.0%}) would lower it" in note
    # enough microbatches: nothing to say
    assert _one_f_one_b_bubble(8, 16) <= 0.5
    assert training.plan_stages(prog, 4, devices=devices, num_microbatches=16).bubble_note == ()


def test_interleaving_every_stage_on_one_rank_is_refused(mlp_hlo) -> None:
    """--stages 2 --schedule interleaved-1f1b on 8 devices used to become 1 rank x 8 devices
    without a word: no pipeline at all."""
    prog = hlopipe.load(mlp_hlo)
    kw = dict(schedule="interleaved-1f1b", stages=2, num_microbatches=4)
    with pytest.raises(RuntimeConfigError) as e:
        training.plan_stages(prog, 4, devices=jax.devices()[:8], **kw)
    assert "so 2 stages make 1 rank: no pipeline" in str(e.value)
    assert Keyword("num_stages", 4) in e.value.keywords
    assert Keyword("virtual_stages", 1) in e.value.keywords
    # honoured when it can be: 4 stages make 2 ranks; on one device there is no other choice
    assert (
        training.plan_stages(prog, 4, devices=jax.devices()[:8], **{**kw, "stages": 4}).stages == 4
    )
    assert training.plan_stages(prog, 4, devices=jax.devices()[:1], **kw).stages == 2
