"""`hlopipe generate`: the split program's tokens checked against the unsplit one; bad input
is one `error:` line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.cli import main
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()


def _write(tmp_path):
    params = gd.init(jax.random.key(0), CFG)
    ex = (params, gd.empty_cache(2, CFG), jnp.zeros(2, jnp.int32), jnp.int32(0))
    dec = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(2,)), donate_argnums=1)
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=(2,)))
    d, p = tmp_path / "decode.bin", tmp_path / "prefill.bin"
    d.write_bytes(jax.export.export(dec)(*ex).serialize())
    p.write_bytes(jax.export.export(pre)(params, jnp.zeros((2, 8), jnp.int32)).serialize())
    np.savez(tmp_path / "params.npz", *jax.tree_util.tree_leaves(params))
    return str(d), str(p), str(tmp_path / "params.npz")


def test_generate_check(tmp_path, capsys):
    d, p, params = _write(tmp_path)
    args = ["generate", d, "--prefill", p, "--params", params, "--groups", "3", "--tokens", "12"]
    assert main([*args, "--stages", "2", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: all 72 tokens equal the unsplit program's" in out
    assert "state 0" in out
    # 42 tokens: decode steps at positions 8..48, one beyond the cache; then --stages 3
    assert main([*args[:-1], "42"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: position 48 is beyond the cache")
    assert main([*args, "--stages", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stages 3" in err[0] and "1 stage_boundary markers" in err[0]
    # a stage layout that cannot work (the flag reaches the generator's placement), or mesh
    # flags that do not fit together (stage meshes that work: test_generate_mesh.py, and under
    # launch test_generate_launch.py)
    bad = {
        ("--stage-mesh", "2x0"): "--stage-mesh '2x0': expected positive sizes",
        ("--stage-mesh", "2x2"): "--stage-mesh 2x2 has 2 axes: name them with --stage-mesh-axes",
        ("--stage-mesh", "2", "--stage-mesh-axes", "data,model"): "give 1 distinct",
        ("--stage-mesh-axes", "data"): "--stage-mesh-axes needs --stage-mesh",
        ("--stage-mesh", "8"): "2 stages needs 2 ranks x 8 devices per stage mesh = 16 devices",
    }
    for flags, message in bad.items():
        assert main([*args, *flags]) == 2, flags
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], (flags, err)


def test_generate_refuses_a_program_without_state(tmp_path, capsys):
    # nothing is aliased nor updated in place: the token is only replaced
    stateless = jax.jit(lambda p, tok, pos: (tok + pos,))
    d = tmp_path / "stateless.bin"
    ex = (gd.init(jax.random.key(0), CFG), jnp.zeros(2, jnp.int32), jnp.int32(0))
    d.write_bytes(jax.export.export(stateless)(*ex).serialize())
    assert main(["generate", str(d)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "no argument is state" in err[0]


def test_generate_check_of_a_step_returning_logits(tmp_path, capsys):
    """A decode step returning logits with a position per sequence (the built-in served
    form): `--check` compares the split generator's greedy tokens with the unsplit step's
    argmax fed back a step at a time."""
    params = gd.init(jax.random.key(0), CFG)
    step = jax.jit(gd.decode_slots_fn(CFG, stage_boundary, cuts=(2,)), donate_argnums=1)
    ex = (params, gd.empty_cache(2, CFG), jnp.zeros(2, jnp.int32), jnp.zeros(2, jnp.int32))
    d = tmp_path / "slots.bin"
    d.write_bytes(jax.export.export(step)(*ex).serialize())
    np.savez(tmp_path / "params.npz", *jax.tree_util.tree_leaves(params))
    args = ["generate", str(d), "--params", str(tmp_path / "params.npz"), "--tokens", "6"]
    assert main([*args, "--max-len", str(CFG.max_len), "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: all 12 tokens equal the unsplit program's" in out
    rows = [line.split(": ")[1].split() for line in out.splitlines() if line.startswith("group")]
    assert len(rows) == 2 and rows[0] != rows[1]  # two sequences from different first tokens
