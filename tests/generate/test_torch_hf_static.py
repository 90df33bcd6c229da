"""Stock Hugging Face models (`LlamaForCausalLM` with grouped-query attention, `GPT2LMHeadModel`;
2 layers, random weights) around `transformers` 5.x's own `StaticCache` through PyTorch/XLA
(fixtures `tests/data/frameworks/torch_xla/hf_<model>_{prefill,decode}.*`, made by
`scripts/fixtures/torch_xla_hf_static.py`). The cache has no `cache_position` input: each layer
keeps its own `int64[]` counter advanced in place, so the position lives in the state. The
oracle is torch's: the roles the generator recorded while tracing (`state`, argument kinds) and
the tokens of `model.generate(do_sample=False, cache_implementation="static")` on CPU."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

import hlopipe
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.generate._plan import prefill_args

pytestmark = pytest.mark.x64

DIR = Path(__file__).parents[1] / "data" / "frameworks" / "torch_xla"
FORMS = [".hlo", ".hlo.pb", ".mlir", ".sync.hlo", ".opt.hlo"]
MODELS = ["llama", "gpt2"]


@functools.cache
def _case(model: str, step: str):
    base = DIR / f"hf_{model}_{step}"
    return json.loads(base.with_suffix(".json").read_text()), np.load(base.with_suffix(".npz"))


@functools.cache
def _load(model: str, step: str, ext: str):
    return hlopipe.load(str(DIR / f"hf_{model}_{step}") + ext)


@pytest.mark.parametrize("ext", FORMS)
@pytest.mark.parametrize("model", MODELS)
def test_roles_equal_the_truth(model, ext):
    manifest, _ = _case(model, "decode")
    roles = _load(model, "decode", ext).arg_roles()
    want = {"param": "parameter", "const": "parameter", "state": "state", "feedback": "feedback"}
    assert [r.role for r in roles] == [want[a["kind"]] for a in manifest["args"]]
    truth = {v["parameter"]: v["output"] for v in manifest["state"].values()}
    assert {r.index: r.output for r in roles.state} == truth
    counters = {v["parameter"] for n, v in manifest["state"].items() if n.startswith("counter")}
    assert {r.index for r in roles.counters} == counters
    assert not roles.inputs and not roles.ambiguous and not roles.unresolved
    # [batch, kv heads, length, head dim]: the counters index the length axis
    assert {r.axis for r in roles.state if not r.counter} == {2}


def _params(model, ext):
    _, npz = _case(model, "decode")
    roles = _load(model, "decode", ext).arg_roles()
    return [npz[f"arg_{r.index}"] for r in roles.parameters]


def _layers(manifest):
    """Each layer's K and V cache arguments, by the generator's names."""
    at = {n: v["parameter"] for n, v in manifest["state"].items()}
    return [sorted([at[f"k_cache_{i}"], at[f"v_cache_{i}"]]) for i in range(2)]


# The proto is the HLO text's program (checked below), so it is not split again (test time);
# StableHLO's decode step splits below (alone), its prefill in the next test.
SPLIT_BY_LAYER = [".hlo", ".sync.hlo", ".opt.hlo"]


@pytest.mark.parametrize("step", ["decode", "prefill"])
@pytest.mark.parametrize("model", MODELS)
def test_the_proto_is_the_texts_program(model, step):
    assert _load(model, step, ".hlo.pb").to_text() == _load(model, step, ".hlo").to_text()


@pytest.mark.parametrize("ext", SPLIT_BY_LAYER)
@pytest.mark.parametrize("model", MODELS)
def test_prefill_and_two_stages_give_torchs_tokens(model, ext):
    manifest, _ = _case(model, "decode")
    pre_manifest, pre_npz = _case(model, "prefill")
    prompt = pre_npz[f"arg_{[a['name'] for a in pre_manifest['args']].index('prompt')}"]
    dec, pre = _load(model, "decode", ext), _load(model, "prefill", ext)
    gen = Generator(dec, _params(model, ext), prefill=pre, num_stages=2)
    assert gen.max_len == manifest["max_len"]
    # the counters are fed the position; each stage keeps its layer's caches
    assert {r.index for r in gen.roles.inputs} == {r.index for r in dec.arg_roles().counters}
    assert [sorted(x.arg for x in gen.split.state_of(s)) for s in range(2)] == _layers(manifest)
    got = np.asarray(gen.start(prompt[None]).generate(3))[0]
    np.testing.assert_array_equal(got, manifest["torch_tokens"])


@pytest.mark.parametrize("model", MODELS)
def test_stablehlo_prefill_splits_with_its_decode_step(model):
    """StableHLO scatters every layer's prompt K and V into one shared zeros constant: that
    constant is no cache's version (each stage captures it), so the prefill cuts with its
    decode step, each stage making its layer's caches, and gives torch's tokens."""
    manifest, _ = _case(model, "decode")
    pre_manifest, pre_npz = _case(model, "prefill")
    prompt = pre_npz[f"arg_{[a['name'] for a in pre_manifest['args']].index('prompt')}"]
    dec, pre = _load(model, "decode", ".mlir"), _load(model, "prefill", ".mlir")
    gen = Generator(dec, _params(model, ".mlir"), prefill=pre, num_stages=2)
    assert [sorted(x.arg for x in gen.split.state_of(s)) for s in range(2)] == _layers(manifest)
    got = np.asarray(gen.start(prompt[None]).generate(3))[0]
    np.testing.assert_array_equal(got, manifest["torch_tokens"])


@pytest.mark.parametrize("model", MODELS)
def test_decode_alone_from_torchs_state(model):
    """Without the prefill: torch's state after it (the decode fixture's arguments), the
    position told by the counters in it; the next tokens are torch's."""
    manifest, npz = _case(model, "decode")
    dec = _load(model, "decode", ".mlir")
    gen = Generator(dec, _params(model, ".mlir"), num_stages=2)
    assert [sorted(x.arg for x in gen.split.state_of(s)) for s in range(2)] == _layers(manifest)
    state = [[npz[f"arg_{r.index}"] for r in gen.roles.state]]
    tok = npz[f"arg_{gen.roles.feedback[0].index}"][None]
    got = np.asarray(gen.start(tokens=tok, state=state, position=5).generate(2))[0]
    np.testing.assert_array_equal(got, np.asarray(manifest["torch_tokens"])[:, 1:])


# --- markers placed from torch (hlopipe.torch.mark_stages after layer 0) ---------------------


def _marked(model: str, step: str, ext: str):
    """The case with the marker placed after layer 0 (``hf_<model>_marked_<step>``)."""
    return _load(f"{model}_marked", step, ext)


@pytest.mark.parametrize("ext", FORMS)
@pytest.mark.parametrize("model", MODELS)
def test_markers_from_torch_are_read_in_every_form(model, ext):
    """The one marker torch placed is read from every form: the attributed custom call (HLO
    text, proto, StableHLO, the sync dump) and, after XLA's passes, the attribute XLA moved
    onto the barrier's get-tuple-element (the optimised dump)."""
    for step in ("decode", "prefill"):
        assert _marked(model, step, ext).stage_markers() == 1, step


# a few forms split and run (each Generator costs seconds): GPT-2's StableHLO, Llama's
# optimised dump (where XLA schedules layer 0's V cache update after the barrier: the split
# moves it back before the marker), Llama's HLO text below (with the torch.export prefill);
# the other forms carry the same marker op (above)
@pytest.mark.parametrize(("model", "ext"), [("gpt2", ".mlir"), ("llama", ".opt.hlo")])
def test_markers_from_torch_split_at_layer_0(model, ext):
    """A marker placed from torch after layer 0 (forward hook, model code untouched): the
    prefill and decode step split in 2 there without num_stages, each stage keeping its
    layer's caches, and give torch's `model.generate` tokens."""
    manifest, npz = _case(f"{model}_marked", "decode")
    pre_manifest, pre_npz = _case(f"{model}_marked", "prefill")
    prompt = pre_npz[f"arg_{[a['name'] for a in pre_manifest['args']].index('prompt')}"]
    dec, pre = _marked(model, "decode", ext), _marked(model, "prefill", ext)
    params = [npz[f"arg_{r.index}"] for r in dec.arg_roles().parameters]
    gen = Generator(dec, params, prefill=pre)
    assert gen.split.num_stages == 2
    assert [sorted(x.arg for x in gen.split.state_of(s)) for s in range(2)] == _layers(manifest)
    got = np.asarray(gen.start(prompt[None]).generate(3))[0]
    np.testing.assert_array_equal(got, manifest["torch_tokens"])


def test_torch_marker_attribute_is_the_marker_attribute():
    """hlopipe.torch repeats the attribute (it imports no JAX); it must be the one read."""
    import hlopipe.marker
    import hlopipe.torch

    assert hlopipe.torch.ATTRIBUTE == hlopipe.marker.ATTRIBUTE
    assert hlopipe.torch.KEEP_MARKERS_XLA_FLAGS.endswith(
        hlopipe.marker.KEEP_MARKERS["xla_disable_hlo_passes"]
    )


# --- a prefill from torch.export beside the lazy-tensor decode step (Llama) ---------------


def _export_prefill(marked: bool):
    """The torch.export prefill, its prompt and its own arguments (the prompt left out)."""
    case = "llama_marked_export" if marked else "llama_export"
    manifest, npz = _case(case, "prefill")
    names = [a["name"] for a in manifest["args"]]
    k = names.index("prompt")
    own = [npz[f"arg_{i}"] for i in range(len(names)) if i != k]
    return hlopipe.load(str(DIR / f"hf_{case}_prefill.mlir")), npz[f"arg_{k}"], own


@pytest.mark.parametrize("marked", [False, True])
def test_export_prefill_arguments_are_matched_to_the_decode_steps(marked):
    """torch.export orders the weights its own way, lifts the counters' initial values and
    bakes in the scalars the lazy decode step takes: each weight is matched (by shape and
    data flow) to the decode parameter holding torch's same tensor, the counters' starts are
    torch's, without prefill_params."""
    case = "llama_marked" if marked else "llama"
    _, npz = _case(case, "decode")
    pre_manifest, pre_npz = _case(f"{case}_export", "prefill")
    pre, dec = _export_prefill(marked)[0], _load(case, "decode", ".hlo")
    got = prefill_args(pre, dec.arg_roles(), "the prefill", None, dec)
    kinds = [a["kind"] for a in pre_manifest["args"]]
    assert kinds[got.prompt] == "input"
    assert sorted(got.param_of) == [i for i, k in enumerate(kinds) if k == "param"]
    for i, a in got.param_of.items():  # torch's values: the same tensor at both arguments
        np.testing.assert_array_equal(pre_npz[f"arg_{i}"], npz[f"arg_{a}"], err_msg=str(i))
    assert sorted(got.constants) == [i for i, k in enumerate(kinds) if k == "const"]
    for i, v in got.constants.items():
        np.testing.assert_array_equal(v, pre_npz[f"arg_{i}"])
    assert got.describe().startswith("prefill arguments matched by shape 1, data flow 21;")


def test_export_prefill_gives_torchs_token_and_caches_with_and_without_its_own_params():
    """Unsplit, matched and given (prefill_params): torch's first token and torch's caches
    after the prefill (the lazy decode step's state arguments) either way (the prefill
    alone: one compile); a wrong prefill_params is named."""
    manifest, npz = _case("llama", "decode")
    pre, prompt, own = _export_prefill(False)
    dec = _load("llama", "decode", ".hlo")
    params = _params("llama", ".hlo")
    caches = [r.index for r in dec.arg_roles().state if not r.counter]
    for given in (None, own):
        got, states = generate_unsplit(dec, params, 1, prefill=pre, prompts=prompt[None],
                                       prefill_params=given)  # fmt: skip
        np.testing.assert_array_equal(got[0, :, 0], np.asarray(manifest["torch_tokens"])[:, 0])
        made = dict(zip((r.index for r in dec.arg_roles().state), states[0], strict=True))
        for a in caches:
            np.testing.assert_allclose(made[a], npz[f"arg_{a}"], atol=1e-5, err_msg=str(a))
    with pytest.raises(hlopipe.HlopipeError, match=r"prefill_params holds 23 arrays.*the 24"):
        generate_unsplit(dec, params, 3, prefill=pre, prompts=prompt[None],
                         prefill_params=own[1:])  # fmt: skip
    wrong = [*own[:11], own[11].astype(np.int32), *own[12:]]  # argument 12, lifted_tensor_0
    with pytest.raises(hlopipe.HlopipeError, match=r"argument 12 as int32\[\].*int64\[\]"):
        generate_unsplit(dec, params, 3, prefill=pre, prompts=prompt[None], prefill_params=wrong)


def test_marked_export_prefill_splits_at_the_torch_marker():
    """The marker survives torch.export, and the prefill, its arguments matched (no
    prefill_params), splits at it like the lazy decode step, each stage making its layer's
    caches, and gives torch's tokens."""
    manifest, npz = _case("llama_marked", "decode")
    pre, prompt, _ = _export_prefill(True)
    assert pre.stage_markers() == 1
    dec = _marked("llama", "decode", ".hlo")
    params = [npz[f"arg_{r.index}"] for r in dec.arg_roles().parameters]
    gen = Generator(dec, params, prefill=pre)
    assert [sorted(x.arg for x in gen.split.state_of(s)) for s in range(2)] == _layers(manifest)
    got = np.asarray(gen.start(prompt[None]).generate(3))[0]
    np.testing.assert_array_equal(got, manifest["torch_tokens"])


def test_export_prefill_from_the_shell_names_its_flag(tmp_path, capsys):
    """The CLI says --prefill-params where the library says prefill_params (one error line,
    before any compile): a prefill whose weights cannot be told apart from its decode step's
    (Llama's prefill beside GPT-2's decode step), and a wrong --prefill-params file."""
    from hlopipe.cli import main

    pre, _, own = _export_prefill(False)
    np.savez(tmp_path / "own.npz", *own[1:])
    for model, more, says in [
        ("gpt2", [], "give the prefill its own arguments: --prefill-params (every argument"),
        ("llama", ["--prefill-params", str(tmp_path / "own.npz")],
         "--prefill-params holds 23 arrays"),
    ]:  # fmt: skip
        np.savez(tmp_path / "params.npz", *_params(model, ".hlo"))
        args = ["generate", str(DIR / f"hf_{model}_decode.hlo"), "--prefill", pre.source,
                "--params", str(tmp_path / "params.npz")]  # fmt: skip
        assert main([*args, *more]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
