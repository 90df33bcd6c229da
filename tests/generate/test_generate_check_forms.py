"""`hlopipe generate --check` for each form of prefill and decode step: each returning the
token or the logits. The oracle is the unsplit JAX functions run directly in a plain loop
(greedy: each argmax fed back), not hlopipe's own unsplit run."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe.cli import main
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig(n_layers=2, max_len=16)
B, P, N = 2, 4, 5


@functools.cache
def _params():
    return gd.init(jax.random.key(7), CFG)


def _write(tmp_path, prefill_logits: bool, decode_logits: bool):
    params = _params()
    ex = (params, gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(1,), logits=decode_logits),
                  donate_argnums=1)  # fmt: skip
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=(1,), logits=prefill_logits))
    d, p = tmp_path / "decode.bin", tmp_path / "prefill.bin"
    d.write_bytes(jax.export.export(dec)(*ex).serialize())
    p.write_bytes(jax.export.export(pre)(params, jnp.zeros((B, P), jnp.int32)).serialize())
    np.savez(tmp_path / "params.npz", *jax.tree_util.tree_leaves(params))
    prompts = np.asarray(gd.prompts(jax.random.key(1), 1, B, P, CFG))[0]
    np.save(tmp_path / "prompts.npy", prompts)
    return ["generate", str(d), "--prefill", str(p), "--params", str(tmp_path / "params.npz"),
            "--prompts", str(tmp_path / "prompts.npy"), "--stages", "2"], prompts  # fmt: skip


def _direct(prompts: np.ndarray) -> np.ndarray:
    """Greedy tokens ``[b, N]``: the unsplit prefill then the decode step, argmax fed back."""
    params = _params()
    logits, cache = jax.jit(gd.prefill_fn(CFG, logits=True))(params, jnp.asarray(prompts))
    step = jax.jit(gd.decode_fn(CFG, logits=True))
    out = [np.argmax(np.asarray(logits), -1)]
    for t in range(N - 1):
        logits, cache = step(params, cache, jnp.asarray(out[-1], jnp.int32), jnp.int32(P + t))
        out.append(np.argmax(np.asarray(logits), -1))
    return np.stack(out, -1)


@pytest.mark.parametrize("prefill_logits, decode_logits", [(True, True), (False, True)])
def test_check_agrees_for_each_form(tmp_path, capsys, prefill_logits, decode_logits):
    args, prompts = _write(tmp_path, prefill_logits, decode_logits)
    out_file = tmp_path / "tokens.npy"
    assert main([*args, "--tokens", str(N), "--output", str(out_file), "--check"]) == 0
    out = capsys.readouterr().out
    assert f"check: all {B * N} tokens equal the unsplit program's" in out
    want = _direct(prompts)
    assert len({tuple(r) for r in want}) == B  # the sequences differ: equality means something
    np.testing.assert_array_equal(np.load(out_file)[0], want)


def test_a_logits_prefill_with_a_token_decode_step_is_one_error(tmp_path, capsys):
    args, _ = _write(tmp_path, prefill_logits=True, decode_logits=False)
    assert main([*args, "--tokens", str(N), "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "is logits (float32[2, 64]) but the decode step returns a token" in err[0], err


def test_generate_without_a_file_runs_the_builtin_model(tmp_path, capsys):
    """As `hlopipe serve` does: the built-in tiny GPT (its position per sequence, its logits
    prefill), greedy, against the same functions run directly with the same parameters."""
    cfg = gd.DecodeConfig()
    prompts = np.asarray(gd.prompts(jax.random.key(2), 1, 2, 8, cfg))[0]
    np.save(tmp_path / "prompts.npy", prompts)
    out_file = tmp_path / "tokens.npy"
    argv = ["generate", "--prompts", str(tmp_path / "prompts.npy"), "--tokens", "4"]
    assert main([*argv, "--output", str(out_file), "--seed", "3"]) == 0
    capsys.readouterr()
    params = gd.init(jax.random.key(3), cfg)  # serve's --seed 3 is the parameters' seed
    logits, cache = jax.jit(gd.prefill_fn(cfg, logits=True))(params, jnp.asarray(prompts))
    step = jax.jit(gd.decode_slots_fn(cfg))
    seq = [np.argmax(np.asarray(logits), -1)]
    for t in range(3):
        pos = jnp.full(2, 8 + t, jnp.int32)
        logits, cache = step(params, cache, jnp.asarray(seq[-1], jnp.int32), pos)
        seq.append(np.argmax(np.asarray(logits), -1))
    np.testing.assert_array_equal(np.load(out_file)[0], np.stack(seq, -1))
    assert main(["generate", "--params", "p.npz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--params given without a decode step file" in err[0], err
