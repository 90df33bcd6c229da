"""Stock keras_hub models (`GPT2CausalLM`, `LlamaCausalLM` with grouped-query attention; 4
layers, random weights) around their own `call_with_cache`, exported with `jax.export` and split
with no stage markers (a user cannot put markers inside keras_hub). Fixtures
`tests/data/frameworks/keras_hub/<model>_{prefill,decode}.*`, made by
`scripts/fixtures/keras_hub_generate.py`.

keras_hub keeps ONE cache for all layers, `[batch, layers, 2, length, kv heads, head dim]`: the
layer axis is axis 1, after the batch; each layer reads `cache[:, i]` and the layers are written
back with `ops.stack(axis=1)` after the last one. Split into stages, each stage must keep the
rows of that axis its layers use, the layers spread evenly, and only the residual stream cross
between stages.

The oracles are keras_hub's: the tokens of `causal_lm.generate` with the greedy sampler on the
same prompt, and the cache keras computed after the prompt (the decode fixture's argument).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hlopipe
from hlopipe.errors import HlopipeError
from hlopipe.generate import Generator
from hlopipe.runtime import BytesSent

DIR = Path(__file__).parents[1] / "data" / "frameworks" / "keras_hub"
# No markers: the cost model cuts. A generator costs about 6.5 s of compiling (its decode step
# and prefill), so two: GPT-2 on 2 stages (two layers and their rows per stage), Llama
# (grouped-query attention, rotary positions made in every layer) on 4, one layer per stage,
# every layer boundary a cut. (GPT-2 on 4 and Llama on 2 pass as well; each adds 6.5 s.) Each
# program run unsplit is checked against keras's values by tests/rehydrate/test_frameworks.py.
SPLITS = [("gpt2", 2), ("llama", 4)]


@functools.cache
def _case(model: str, step: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    base = DIR / f"{model}_{step}"
    with np.load(base.with_suffix(".npz")) as z:
        values = {k: z[k] for k in z.files}
    return json.loads(base.with_suffix(".json").read_text()), values


def _arg(model: str, step: str, name: str) -> np.ndarray:
    manifest, values = _case(model, step)
    return values[f"arg_{[a['name'] for a in manifest['args']].index(name)}"]


def _params(model: str) -> list[np.ndarray]:
    manifest, values = _case(model, "decode")
    return [values[f"arg_{i}"] for i, a in enumerate(manifest["args"]) if a["kind"] == "param"]


@functools.cache
def _built(model: str, stages: int) -> tuple[Generator | None, HlopipeError | None]:
    """The generator of ``stages`` stages, no markers; a refusal kept, so that every test of
    this pair reports it without building again."""
    dec = hlopipe.load(DIR / f"{model}_decode.jax_export")
    pre = hlopipe.load(DIR / f"{model}_prefill.jax_export")
    try:
        return Generator(dec, _params(model), prefill=pre, num_stages=stages), None
    except HlopipeError as e:
        return None, e


def _generator(model: str, stages: int) -> Generator:
    gen, err = _built(model, stages)
    if err is not None:
        raise err
    assert gen is not None
    return gen


@functools.cache
def _run(model: str, stages: int) -> tuple[np.ndarray, list[np.ndarray], dict[str, np.ndarray]]:
    """Tokens of one group from the fixture's prompt (every token keras made), and the state
    after the prefill: the original state arguments, and what each stage's slots hold."""
    gen = _generator(model, stages)
    manifest, _ = _case(model, "decode")
    session = gen.start(_arg(model, "prefill", "prompt")[None])
    after_prefill = session.state(0), session.local_state(0)
    tokens = np.asarray(session.generate(len(manifest["keras_tokens"][0])))[0]
    return tokens, *after_prefill


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_tokens_equal_keras_hubs_generate(model, stages):
    manifest, _ = _case(model, "decode")
    tokens, _, _ = _run(model, stages)
    np.testing.assert_array_equal(tokens, manifest["keras_tokens"])


# float32 rounding of the same program compiled otherwise (XLA's passes off under the tests,
# on in keras), grown through 4 layers: the cache's values reach 10, its largest error 1e-5
CLOSE = {"rtol": 2e-4, "atol": 1e-4}


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_the_prefill_makes_keras_hubs_cache(model, stages):
    """The state after the prompt, reassembled from the stages, is the cache keras made."""
    state = _run(model, stages)[1]
    assert len(state) == 1
    np.testing.assert_allclose(state[0], _arg(model, "decode", "cache"), **CLOSE)


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_each_stage_keeps_its_layers_and_their_cache_rows(model, stages):
    """Stage s runs layers [s*L/S, (s+1)*L/S) and keeps exactly those rows of the layer axis
    (the values keras put there after the prompt), nothing more; print(gen) warns of nothing."""
    manifest, _ = _case(model, "decode")
    gen = _generator(model, stages)
    L, axis = manifest["config"]["num_layers"], manifest["layer_axis"]
    share = L // stages
    assert gen.layers() == [share] * stages, str(gen)
    assert gen.warnings() == [], str(gen)
    cache = _arg(model, "decode", "cache")
    _, _, held = _run(model, stages)
    for s in range(stages):
        slots = gen.split.state_of(s)
        assert sum(x.nbytes for x in slots) == cache.nbytes // stages, (s, str(gen))
        mine = np.concatenate([held[gen.roles[x.arg].path].ravel() for x in slots])
        rows = np.take(cache, range(s * share, (s + 1) * share), axis=axis)
        # the same values, whatever layout the slice is kept in
        np.testing.assert_allclose(np.sort(mine), np.sort(rows.ravel()), **CLOSE)


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_only_the_residual_stream_crosses(model, stages):
    """Per token: the residual stream [batch, 1, hidden] float32 between each pair of
    neighbouring stages, the token from the last stage to the first, no state."""
    manifest, _ = _case(model, "decode")
    gen = _generator(model, stages)
    token = _arg(model, "decode", "token")
    residual = token.shape[0] * manifest["config"]["hidden_dim"] * 4
    want = BytesSent(activations=(stages - 1) * residual, feedback=token.nbytes, state=0)
    assert gen.bytes_per_token() == want, str(gen)


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_cache_length_is_the_axis_the_position_indexes(model, stages):
    """16 (the length axis, 3), not the layer axis after the batch (4)."""
    manifest, _ = _case(model, "decode")
    assert _generator(model, stages).max_len == manifest["max_len"]


@pytest.mark.parametrize(("model", "stages"), SPLITS)
def test_two_groups(model, stages):
    """A second group in flight, the prompt's rows swapped: keras_hub's rows swapped (greedy
    generation treats each row alone)."""
    manifest, _ = _case(model, "decode")
    gen = _generator(model, stages).with_groups(2)
    prompt = _arg(model, "prefill", "prompt")
    want = np.asarray(manifest["keras_tokens"])
    got = np.asarray(gen.start(np.stack([prompt, prompt[::-1]])).generate(want.shape[1]))
    np.testing.assert_array_equal(got, np.stack([want, want[::-1]]))
