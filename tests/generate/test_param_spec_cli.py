"""`--param-spec PATTERN=SPEC` on `hlopipe generate` and `hlopipe serve`: parameters laid out on
each stage's `model` axis by rules over their paths, tokens equal to the unsplit program's;
bad rules are one `error:` line and exit 2."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_generate_cli import _write

import hlopipe.generate._generator as generator_module
from hlopipe.cli import main
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()
MESH = ["--stages", "2", "--stage-mesh", "1x2", "--stage-mesh-axes", "data,model"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The tiny GPT's decode step and prefill cut in 2, its parameters in an .npz (as
    ``test_generate_cli`` writes them), and the path of each parameter leaf (the decode step's
    arguments start with them, in order)."""
    d, p, npz = _write(tmp_path_factory.mktemp("param_spec"))
    leaves = jax.tree_util.tree_leaves_with_path(gd.init(jax.random.key(0), CFG))
    names = [jax.tree_util.keystr(k) for k, _ in leaves]
    return d, p, npz, names, [np.shape(v) for _, v in leaves]


def test_generate_lays_out_parameters_by_rule(files, capsys, monkeypatch):
    d, p, params, names, shapes = files
    made = []

    class Recording(generator_module.Generator):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(generator_module, "Generator", Recording)
    argv = ["generate", d, "--prefill", p, "--params", params, "--tokens", "4", *MESH]
    # Megatron's pair: qkv split by columns, proj by rows; the first matching rule wins, so
    # the catch-all last rule reaches neither; fc1/fc2 and the rest keep the default
    rules = ["--param-spec", r"qkv'\]$=_,model", "--param-spec", "proj=model,None",
             "--param-spec", r"\['(qkv|proj)'\]=model"]  # fmt: skip
    assert main([*argv, *rules, "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: all 8 tokens equal the unsplit program's" in out
    (gen,) = made
    placed = {a: x for stage in gen.placed.params for a, x in stage.items()}
    seen = set()
    for i, (name, shape) in enumerate(zip(names, shapes, strict=True)):
        x = placed[i]  # parameter i is argument i
        assert len(x.sharding.device_set) == 2, name
        shard = x.sharding.shard_shape(x.shape)
        if name.endswith("['qkv']"):  # [d, 3d] over 2 devices on its columns: [d, 3d/2]
            assert shard == (shape[0], shape[1] // 2), name
        elif name.endswith("['proj']"):  # [d, d] on its rows: [d/2, d]
            assert shard == (shape[0] // 2, shape[1]), name
        else:  # no rule: the program's default (no annotations: replicated)
            assert shard == shape, name
        seen.add(name.rsplit("[", 1)[-1])
    assert {"'qkv']", "'proj']", "'fc1']"} <= seen


def test_param_spec_errors_are_one_line(files, capsys):
    d, p, params, _, _ = files
    argv = ["generate", d, "--prefill", p, "--params", params, *MESH]
    bad = {
        ("--param-spec", "qkv"): "--param-spec qkv: expected PATTERN=SPEC",
        ("--param-spec", "qkv[=_,model"): "'qkv[' is not a regular expression",
        ("--param-spec", "qkv=_,_,model"): "3 axes for [0]['layers'][0]['qkv'], which has 2 "
        "dimensions",
        ("--param-spec", "qkv=_,tensor"): "no mesh axis 'tensor'; the stage mesh's axes "
        "(--stage-mesh-axes) are data, model",
        ("--param-spec", "qvk=_,model"): "'qvk' is found in no parameter's path; closest:",
        ("--param-spec", "qkv=model,model"): "names a mesh axis twice",
    }
    for flags, message in bad.items():
        assert main([*argv, *flags]) == 2, flags
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], (flags, err)
    # a stage mesh of one axis, "data" by default: no "model" axis to split on; none at all
    assert main(["generate", d, "--stage-mesh", "2", "--param-spec", "qkv=_,model"]) == 2
    assert "no mesh axis 'model'; the stage mesh's axes" in capsys.readouterr().err
    assert main(["generate", d, "--param-spec", "qkv=_,model"]) == 2
    err = capsys.readouterr().err
    assert "there is no stage mesh; give one with that axis (--stage-mesh 1x2" in err
    # the closest parameter names are named
    assert main([*argv, "--param-spec", "['layers'][0]['qvk']=_,model"]) == 2
    assert "[0]['layers'][0]['qkv']" in capsys.readouterr().err


class _Built(Exception):
    """Raised once the served generator is built: the test reads its placement, nothing
    is served."""


def test_serve_takes_param_spec(capsys, monkeypatch):
    """The flag reaches the served (built-in) model's parameters: laid out as asked on the
    stage meshes; a rule found in none of them is refused by name before any compile."""
    import hlopipe.generate

    made = []

    class Recording(generator_module.Generator):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)
            raise _Built

    monkeypatch.setattr(hlopipe.generate, "Generator", Recording)
    argv = ["serve", *MESH, "--port", "0"]
    with pytest.raises(_Built):
        main([*argv, "--param-spec", "fc1=_,model"])
    (gen,) = made
    fc1 = [r.index for r in gen.roles.parameters if r.path.endswith("['fc1']")]
    placed = {a: x for stage in gen.placed.params for a, x in stage.items()}
    assert len(fc1) == CFG.n_layers
    for a in fc1:  # [d, d_ff] on its columns over 2 devices
        x = placed[a]
        assert x.sharding.shard_shape(x.shape) == (x.shape[0], x.shape[1] // 2)
    assert main([*argv, "--param-spec", "qvk=_,model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--param-spec qvk=_,model: 'qvk' is found in no parameter" in err[0]
    assert "'qkv']" in err[0]
    assert main([*argv, "--param-spec", "qkv=_,_,model"]) == 2
    assert "3 axes for [0]['layers'][0]['qkv']" in capsys.readouterr().err


def test_parameters_no_rule_matches_keep_the_programs_own_annotations():
    """A decode step exported with its parameters sharded (``fc1`` on its columns over
    ``model``): a rule lays out ``qkv``; ``fc1`` keeps the layout the program was exported
    with, the other parameters (exported replicated) stay whole. The oracle is the sharding
    given to ``jax.jit``, not hlopipe's reading of it."""
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as PS

    from hlopipe.generate import param_specs_from_rules, parse_param_rule
    from hlopipe.io import load

    mesh = Mesh(np.array(jax.devices()[:2]).reshape(1, 2), ("data", "model"))
    params = gd.init(jax.random.key(0), CFG)
    given = jax.tree_util.tree_map_with_path(
        lambda k, _: PS(None, "model") if jax.tree_util.keystr(k).endswith("['fc1']") else PS(),
        params,
    )
    shard = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), given)
    ex = (params, gd.empty_cache(2, CFG), jnp.zeros(2, jnp.int32), jnp.int32(0))
    step = jax.jit(gd.decode_fn(CFG), in_shardings=(shard, None, None, None))
    program = load(jax.export.export(step)(*ex).serialize())
    axes = ("data", "model")
    rules = [parse_param_rule("qkv=model,_", axes)]
    got = param_specs_from_rules(rules, program, (1, 2), axes, params=params)
    leaves = jax.tree_util.tree_leaves_with_path(got, is_leaf=lambda x: isinstance(x, PS))
    want = jax.tree_util.tree_leaves(given, is_leaf=lambda x: isinstance(x, PS))
    assert len(leaves) == len(want)
    for (k, spec), exported in zip(leaves, want, strict=True):
        name = jax.tree_util.keystr(k)
        expected = PS("model", None) if name.endswith("['qkv']") else exported
        assert _axes(spec) == _axes(expected), (name, spec, expected)
    assert any(_axes(s) == (None, "model") for _, s in leaves)  # fc1's, kept


def _axes(spec):
    """A spec's axes, trailing ``None`` (not split) dropped: ``PS(None, None) == PS()``."""
    out = list(spec)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)
