"""From training to serving through the commands: a GPT's loss trained as a 2-stage pipeline
with `hlopipe train --save`, its checkpoint exported with `hlopipe export-params` and served
with `hlopipe serve --params CKPT` (a real server process, a real HTTP request). The oracle
is independent of hlopipe's runtime: the same training in plain JAX and optax on one device,
and the unsplit decode step run with those parameters, a token a step, greedy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from _greedy_oracle import greedy_fed

from hlopipe.cli import main
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

ROOT = Path(__file__).resolve().parents[1]
CFG = gd.DecodeConfig()
MB, M, T, STEPS, LR = 2, 2, 8, 3, 0.01  # microbatch, microbatches, sequence, steps, rate


def _loss_fn(boundary):
    prefill = gd.prefill_fn(CFG, boundary, cuts=(2,), logits=True, every_position=True)

    def loss(params, tokens, labels):
        logp = jax.nn.log_softmax(prefill(params, tokens)[0])
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    return loss


def _write(tmp_path: Path) -> tuple[Path, Path, Path, dict, tuple]:
    params = gd.init(jax.random.key(0), CFG)
    tok = jax.ShapeDtypeStruct((MB, T), jnp.int32)
    loss = jax.export.export(jax.jit(_loss_fn(stage_boundary)))(params, tok, tok)
    (tmp_path / "loss.bin").write_bytes(loss.serialize())
    step = jax.jit(gd.decode_slots_fn(CFG, stage_boundary, cuts=(2,)), donate_argnums=1)
    ex = (params, gd.empty_cache(2, CFG), jnp.zeros(2, jnp.int32), jnp.zeros(2, jnp.int32))
    (tmp_path / "decode.bin").write_bytes(jax.export.export(step)(*ex).serialize())
    np.savez(tmp_path / "init.npz", *jax.tree.leaves(params))
    rng = np.random.default_rng(0)
    seq = rng.integers(0, CFG.vocab, (M * MB, T + 1)).astype(np.int32)
    batch = (seq[:, :-1], seq[:, 1:])
    np.savez(tmp_path / "batch.npz", *batch)
    return tmp_path / "loss.bin", tmp_path / "decode.bin", tmp_path / "init.npz", params, batch


def _trained_on_one_device(params: dict, batch: tuple) -> dict:
    loss = _loss_fn(None)
    opt = optax.adam(LR)
    st = opt.init(params)
    for _ in range(STEPS):
        g = jax.grad(loss)(params, *batch)
        u, st = opt.update(g, st, params)
        params = optax.apply_updates(params, u)
    return params


def _greedy(params: dict, prompt: list[int], n: int) -> list[int]:
    return greedy_fed(CFG, params, prompt, n)


def test_a_trained_checkpoint_is_served_with_the_trained_parameters(tmp_path, capsys):
    loss, decode, init, params, batch = _write(tmp_path)
    ckpt, npz = tmp_path / "ckpt", tmp_path / "params.npz"
    argv = ["train", str(loss), "--data", str(tmp_path / "batch.npz"), "--params", str(init),
            "--microbatches", str(M), "--stage-devices", "1", "--steps", str(STEPS),
            "--lr", str(LR), "--save", str(ckpt)]  # fmt: skip
    assert main(argv) == 0
    assert main(["export-params", str(ckpt), "-o", str(npz)]) == 0
    capsys.readouterr()
    want = _trained_on_one_device(params, batch)
    with np.load(npz) as z:
        got = [z[k] for k in z.files]
    leaves = jax.tree.leaves(want)
    assert len(got) == len(leaves)
    for a, b in zip(got, leaves, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    # the training moved the parameters (else serving the initial ones would pass)
    assert not np.allclose(got[0], jax.tree.leaves(params)[0], atol=1e-4)

    prompt, n = [3, 1, 4, 1, 5], 6
    oracle = _greedy(want, prompt, n)
    assert oracle != _greedy(params, prompt, n)  # the trained model answers otherwise
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu")
    serve = ["serve", str(decode), "--params", str(ckpt), "--port", "0", "--groups", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hlopipe", *serve, "--max-len", str(CFG.max_len)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving "), line + proc.stdout.read()
        url = line.split(" at ")[1].strip()
        body = {"model": line.split()[1], "prompt": prompt, "max_tokens": n, "temperature": 0}
        req = urllib.request.Request(
            f"{url}/completions", data=json.dumps(body).encode(), method="POST"
        )
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=120) as r:
            answer = json.loads(r.read())
        assert answer["choices"][0]["token_ids"] == oracle
    finally:
        proc.kill()
        proc.wait()
