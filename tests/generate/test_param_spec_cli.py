"""`--param-spec PATTERN=SPEC` on `hlopipe generate` and `hlopipe serve`: parameters laid out on
each stage's `model` axis by rules over their paths, tokens equal to the unsplit program's;
bad rules are one `error:` line and exit 2."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe.generate._generator as generator_module
from hlopipe.cli import main
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()
MESH = ["--stages", "2", "--stage-mesh", "1x2", "--stage-mesh-axes", "data,model"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The tiny GPT's decode step and prefill cut in 2, its parameters in an .npz, and the
    path of each parameter leaf (the decode step's arguments start with them, in order)."""
    tmp = tmp_path_factory.mktemp("param_spec")
    params = gd.init(jax.random.key(0), CFG)
    ex = (params, gd.empty_cache(2, CFG), jnp.zeros(2, jnp.int32), jnp.int32(0))
    dec = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(2,)), donate_argnums=1)
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=(2,)))
    d, p = tmp / "decode.bin", tmp / "prefill.bin"
    d.write_bytes(jax.export.export(dec)(*ex).serialize())
    p.write_bytes(jax.export.export(pre)(params, jnp.zeros((2, 8), jnp.int32)).serialize())
    np.savez(tmp / "params.npz", *jax.tree_util.tree_leaves(params))
    leaves = jax.tree_util.tree_leaves_with_path(params)
    names = [jax.tree_util.keystr(k) for k, _ in leaves]
    return str(d), str(p), str(tmp / "params.npz"), names, [np.shape(v) for _, v in leaves]


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
