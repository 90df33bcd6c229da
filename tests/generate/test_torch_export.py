"""Stock Hugging Face causal LMs (Llama, GPT-2, Qwen2, Gemma with tied embeddings; 2 layers,
random weights) exported by ``hlopipe.torch.export_generation`` in a PyTorch venv (fixtures
``tests/data/frameworks/torch_xla/export_<model>/``, made by
``scripts/fixtures/hf_export_generation.py``), returning logits, in 2 stages, and served with
``hlopipe serve DIR --stages 2``.

The oracles are independent of the server: the tokens of ``model.generate(do_sample=False,
cache_implementation="static")`` in PyTorch (stored by the generator) for greedy requests, and
for a seeded sampled request the unsplit exported programs run directly in JAX, one call at a
time, their logits drawn by ``hlopipe.generate.sample`` with the choice's seed folded with each
position (the prompt's last one for the prefill's logits). ``params.npz`` is checked against
the model's ``state_dict`` keys."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.generate import sample

pytestmark = pytest.mark.x64

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "tests" / "data" / "frameworks" / "torch_xla"
MODELS = ["llama", "gpt2", "qwen2", "gemma"]
SAMPLING = {"temperature": 0.9, "top_p": 0.95, "top_k": 20, "seed": 11}


def _files(model: str):
    folder = DIR / f"export_{model}"
    manifest = json.loads((folder / "manifest.json").read_text())
    oracle = json.loads((folder / "torch_oracle.json").read_text())
    return folder, manifest, oracle


def _choice_seed(seed: int, choice: int) -> int:
    """A request's seed for its choice (docs/serving.md: each of ``n`` choices its own)."""
    from hlopipe.serve._app import _seed_of

    return _seed_of(seed, choice)


@functools.cache
def _jitted(path: Path):
    prog = hlopipe.load(str(path))
    return prog, jax.jit(prog.as_function(flat=True))


def _unsplit_sampled(model: str, prompt: list[int], n: int, seed: int) -> list[int]:
    """The exported prefill and decode step run unsplit, each argument given by its manifest
    name, the logits drawn by ``sample`` (the prompt in every row; row 0's tokens)."""
    folder, manifest, _ = _files(model)
    arrays = dict(np.load(folder / "params.npz"))
    batch, P = manifest["batch"], manifest["prompt_len"]
    L = len([a for a in manifest["decode"]["args"] if a["kind"] == "counter"])
    names = ([f"cache.{k}.{kv}" for k in range(L) for kv in ("keys", "values")]
             + [f"cache.{k}.cumulative_length" for k in range(L)])  # fmt: skip

    def run(which, given):
        prog, fn = _jitted(folder / manifest[which]["file"])
        args = []
        for a, aval in zip(manifest[which]["args"], prog.in_avals, strict=True):
            v = given.get(a["name"], arrays.get(a["name"], a.get("value")))
            args.append(np.asarray(v, aval.dtype).reshape(aval.shape))
        outs = fn(*args)
        return outs[0], dict(zip(names, outs[1:], strict=True))

    how = (jnp.full(batch, seed, jnp.uint32), jnp.full(batch, SAMPLING["temperature"]),
           jnp.full(batch, SAMPLING["top_p"]), jnp.full(batch, SAMPLING["top_k"]))  # fmt: skip
    logits, state = run("prefill", {"prompt": [prompt] * batch})
    tokens = [int(sample(logits, jnp.int64(P - 1), *how)[0])]
    for t in range(n - 1):
        logits, state = run("decode", {**state, "tokens": [tokens[-1]] * batch})
        tokens.append(int(sample(logits, jnp.int64(P + t), *how)[0]))
    return tokens


@pytest.mark.parametrize("model", MODELS)
def test_params_npz_is_keyed_by_the_state_dict(model):
    folder, manifest, oracle = _files(model)
    keys = set(np.load(folder / "params.npz").files)
    state_dict = set(oracle["state_dict_keys"])
    tied = manifest["tied"]
    assert set(tied) <= state_dict and set(tied.values()) <= keys  # a tied weight once
    # GPT-2 and Gemma tie the head to the embedding (untied by torch_xla's .to(), tied again)
    assert bool(tied) == (model in ("gpt2", "gemma"))
    assert keys & state_dict == state_dict - set(tied)
    # beyond the state_dict: named lifted scalars and the buffers it leaves out (rotary
    # inv_freq, Gemma's embed_scale), each one the decode step takes
    args = manifest["decode"]["args"]
    assert keys - state_dict == {a["name"] for a in args if a["kind"] in ("constant", "buffer")}
    lifted = [a for a in manifest["decode"]["args"] if a["kind"] == "constant"]
    assert lifted and all(np.load(folder / "params.npz")[a["name"]] == a["value"] for a in lifted)


@pytest.mark.parametrize("model", MODELS)
def test_served_in_two_stages_like_torch(model):
    """`hlopipe serve DIR --stages 2`: greedy completions of the fixture's prompts equal
    torch's `model.generate`; a seeded sampled one (two choices) equals the unsplit programs'
    logits drawn by the same sampler."""
    folder, _, oracle = _files(model)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu")
    argv = ["serve", str(folder), "--stages", "2", "--groups", "1", "--port", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "hlopipe", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving "), line + proc.stdout.read()
        url = line.split(" at ")[1].strip() + "/completions"
        name = line.split()[1]  # the served model's name: the export folder's
        assert name == folder.name

        def complete(body):
            req = urllib.request.Request(url, json.dumps({"model": name, **body}).encode())
            with urllib.request.urlopen(req, timeout=120) as r:
                return [c["token_ids"] for c in json.loads(r.read())["choices"]]

        n = len(oracle["torch_tokens"][0])
        for prompt, want in zip(oracle["prompts"], oracle["torch_tokens"], strict=True):
            assert complete({"prompt": prompt, "max_tokens": n, "temperature": 0}) == [want]
        prompt = oracle["prompts"][0]
        got = complete({"prompt": prompt, "max_tokens": n, "n": 2, **SAMPLING})
    finally:
        proc.kill()
        proc.wait()
    want = [_unsplit_sampled(model, prompt, n, _choice_seed(SAMPLING["seed"], k)) for k in (0, 1)]
    assert got == want
    assert got[0] != got[1] and got[0] != oracle["torch_tokens"][0]  # sampled, not greedy


def test_params_are_matched_by_name_and_a_wrong_name_is_one_error(tmp_path, capsys):
    """`--params` by name: the arrays in another order still generate torch's tokens; one
    missing and one unknown name are one error line naming both."""
    from hlopipe.cli import main

    folder, _, oracle = _files("llama")
    arrays = dict(np.load(folder / "params.npz"))
    np.savez(tmp_path / "reversed.npz", **dict(reversed(arrays.items())))
    np.save(tmp_path / "prompts.npy", np.asarray(oracle["prompts"]))
    n = len(oracle["torch_tokens"][0])
    argv = ["generate", str(folder), "--stages", "2", "--prompts", str(tmp_path / "prompts.npy"),
            "--tokens", str(n), "--output", str(tmp_path / "tokens.npy")]  # fmt: skip
    assert main([*argv, "--params", str(tmp_path / "reversed.npz")]) == 0
    capsys.readouterr()
    np.testing.assert_array_equal(np.load(tmp_path / "tokens.npy")[0], oracle["torch_tokens"])
    arrays["model.norm.weights"] = arrays.pop("model.norm.weight")
    np.savez(tmp_path / "renamed.npz", **arrays)
    assert main([*argv, "--params", str(tmp_path / "renamed.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "no array named 'model.norm.weight'" in err[0]
    assert "arrays no argument takes: 'model.norm.weights'" in err[0]


def test_a_token_returning_export_generates_torchs_tokens(tmp_path, capsys):
    """`returns="tokens"` (the argmax in the programs): `hlopipe generate DIR --check` gives
    torch's greedy tokens, the unsplit programs' too."""
    from hlopipe.cli import main

    folder, manifest, oracle = _files("llama_tokens")
    assert manifest["returns"] == "tokens"
    np.save(tmp_path / "prompts.npy", np.asarray(oracle["prompts"]))
    n = len(oracle["torch_tokens"][0])
    assert main(["generate", str(folder), "--stages", "2", "--prompts",
                 str(tmp_path / "prompts.npy"), "--tokens", str(n), "--check", "--output",
                 str(tmp_path / "tokens.npy")]) == 0  # fmt: skip
    assert f"check: all {2 * n} tokens equal the unsplit program's" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "tokens.npy")[0], oracle["torch_tokens"])


def test_a_broken_folder_is_one_error_line(tmp_path, capsys):
    import shutil

    from hlopipe.cli import main

    folder, manifest, _ = _files("llama")
    cases = {
        "format": ({**manifest, "format": "other/2"}, "is of format 'other/2', this hlopipe"),
        "key": ({k: v for k, v in manifest.items() if k != "max_len"}, "lacks or garbles"),
        "file": ({**manifest, "params": "gone.npz"}, "the params file gone.npz the manifest"),
        # a chunk step (export_generation(chunk=C)) is checked like the others
        "chunk": ({**manifest, "chunk": {"file": "gone.mlir"}}, "the chunk file gone.mlir"),
    }
    for name, (m, says) in cases.items():
        shutil.copytree(folder, tmp_path / name)
        (tmp_path / name / "manifest.json").write_text(json.dumps(m))
        assert main(["generate", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], (name, err)


def test_an_exported_training_loss_is_torchs_and_trains(tmp_path, capsys, monkeypatch):
    """`export_training` (GPT-2, tied embedding): the unsplit program's loss and gradients
    equal torch's (stored by the generator, by `state_dict` name); the manifest's command
    trains it in 2 stages from its first loss, torch's."""
    import shlex
    import shutil

    from hlopipe.cli import main

    folder = DIR / "export_gpt2_train"
    manifest = json.loads((folder / "manifest.json").read_text())
    torch_loss = json.loads((folder / "torch_oracle.json").read_text())["torch_loss"]
    grads = np.load(folder / "torch_grads.npz")
    params, batch = np.load(folder / "params.npz"), np.load(folder / "batch.npz")
    assert set(params.files) | set(manifest["tied"]) >= set(grads.files)  # state_dict names
    prog = hlopipe.load(str(folder / "loss.mlir"))
    names = [a["name"] for a in manifest["args"]]
    assert prog.arg_names == names
    args = [batch[n] if n in batch.files else params[n] for n in names]
    wrt = [i for i, n in enumerate(names) if n in grads.files]

    def loss(*ws):
        full = list(args)
        for i, w in zip(wrt, ws, strict=True):
            full[i] = w
        out = prog.as_function(flat=True)(*full)
        return out[0] if isinstance(out, list | tuple) else out

    value, got = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(wrt)))))(
        *[args[i] for i in wrt]
    )
    assert float(value) == pytest.approx(torch_loss, rel=1e-5)
    for i, g in zip(wrt, got, strict=True):
        np.testing.assert_allclose(g, grads[names[i]], rtol=1e-3, atol=1e-5, err_msg=names[i])
    shutil.copytree(folder, tmp_path / "train")
    monkeypatch.chdir(tmp_path / "train")
    argv = shlex.split(manifest["command"])
    assert argv[:2] == ["hlopipe", "train"]
    assert main([*argv[1:], "--steps", "2"]) == 0
    out = capsys.readouterr().out
    first = float(out.split("step    1  loss ")[1].split()[0])
    assert first == pytest.approx(torch_loss, rel=1e-5), out


def test_a_tokenizer_given_by_a_relative_path_is_copied_into_the_folder(tmp_path, monkeypatch):
    """The manifest names the tokenizer relative to the export folder, so a path given
    relative to the caller's directory is copied in (a repo folder's JSON files, or one
    tokenizer.json), never recorded as given."""
    from hlopipe.torch._generation import _save_tokenizer

    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (repo / name).write_text(json.dumps({"name": name}))
    monkeypatch.chdir(tmp_path)
    for given, out, want in (("repo", "a", "tokenizer"), ("repo/tokenizer.json", "b", None)):
        (tmp_path / out).mkdir()
        named = _save_tokenizer(given, tmp_path / out)
        want = want or "tokenizer/tokenizer.json"
        assert named == want
        got = tmp_path / out / named
        read = got / "tokenizer.json" if got.is_dir() else got
        assert json.loads(read.read_text()) == {"name": "tokenizer.json"}
    with pytest.raises(ValueError, match="tokenizer='nowhere' is no file or folder"):
        _save_tokenizer("nowhere", tmp_path / "a")
