"""A decode step from PyTorch/XLA served by `Generator`: a tiny GPT with a transformers-style
static KV cache (fixture `tests/data/frameworks/torch_xla/static_cache_{decode,prefill}.*`,
made by `scripts/fixtures/torch_xla_decode.py`). Its arguments are in torch_xla's order (the
token and the `int64[1]` position come before the first cache, constants among the weights),
so roles are told by data flow. torch stored the prefill's tokens, one decode step's tokens and
the caches after it: those are the oracle for the first two tokens; the later steps (torch
stored none) are checked against the unsplit rehydrated programs."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _rounding import reordering_bound

import hlopipe
from hlopipe.generate import Generator, generate_unsplit

pytestmark = pytest.mark.x64

DIR = Path(__file__).parents[1] / "data" / "frameworks" / "torch_xla"
DEC, PRE = DIR / "static_cache_decode", DIR / "static_cache_prefill"
MANIFEST = json.loads(DEC.with_suffix(".json").read_text())
TORCH_DEC, TORCH_PRE = np.load(DEC.with_suffix(".npz")), np.load(PRE.with_suffix(".npz"))
TRUE_STATE = {v["parameter"]: v["output"] for v in MANIFEST["state"].values()}
PROMPT = TORCH_PRE["arg_16"]  # int64[4, 5]: torch's prompt; the decode fixture continues it


@functools.cache
def programs(ext: str = ".hlo"):
    return hlopipe.load(str(DEC) + ext), hlopipe.load(str(PRE) + ext)


def _params(dec):
    return [TORCH_DEC[f"arg_{r.index}"] for r in dec.arg_roles().parameters]


@pytest.mark.parametrize("ext", [".hlo", ".hlo.pb", ".opt.hlo", ".sync.hlo", ".mlir"])
def test_roles_by_data_flow(ext):
    roles = hlopipe.load(str(DEC) + ext).arg_roles()
    kinds = [a["name"] if a["kind"] == "input" else a["kind"] for a in MANIFEST["args"]]
    want = {"param": "parameter", "const": "parameter", "state": "state",
            "tokens": "feedback", "position": "input"}  # fmt: skip
    assert [r.role for r in roles] == [want[k] for k in kinds]
    assert {r.index: r.output for r in roles.state} == TRUE_STATE
    assert [(r.index, r.output) for r in roles.feedback] == [(17, 1)]  # tokens <- next_tokens
    (pos,) = roles.inputs
    assert (pos.index, pos.shape, pos.dtype) == (14, (1,), "int64")
    assert "the position" in pos.reason and "data flow" in pos.reason
    assert {r.axis for r in roles.state} == {2}  # [batch, heads, length, head_dim]
    assert not roles.ambiguous


@functools.cache
def _oracle(groups):
    dec, pre = programs()
    prompts = np.stack([PROMPT, PROMPT[::-1]])[:groups]
    return prompts, *generate_unsplit(dec, _params(dec), 4, prefill=pre, prompts=prompts)


@pytest.mark.xla_default
@pytest.mark.parametrize("S", [2, 3])
def test_generator_equals_torch_and_the_unsplit_program(S):
    """Torch's tokens and caches, then the unsplit rehydrated programs' bit for bit: a stage
    runs the unsplit program's ops at their shapes on one device, and XLA's CPU compiler picks
    each op's kernel (and so its order of summing) from the op and its shapes, not from the
    stage's cut, at its default optimisation on any vector width (checked on AVX-512 and AVX2
    by `make test`'s tiers, tests/conftest.py)."""
    dec, pre = programs()
    gen = Generator(dec, _params(dec), prefill=pre, num_stages=S, groups=2)
    assert len(gen.plans) == S and gen.max_len == 8 and gen.position.shape == (1,)
    prompts, ref, ref_states = _oracle(2)
    for G in (1, 2):
        session = gen.with_groups(G).start(prompts[:G])
        first = session.generate(2)
        # torch's own tokens: the prefill's, then one decode step's; and torch's caches after it
        np.testing.assert_array_equal(first[0, :, 0], TORCH_PRE["out_1"])
        np.testing.assert_array_equal(first[0, :, 1], TORCH_DEC["out_1"])
        mine = dict(zip((x.arg for x in gen.split.slots), session.state(0), strict=True))
        for arg, out in TRUE_STATE.items():  # torch's float32 sums against XLA's, in other
            # orders: a layer's K/V is at most 8 chained sums (norms, attention over <= 8
            # positions, projections) of <= 24 terms; the terms' magnitudes within 4x the
            # largest value (tests/_rounding.py). 1e-6 seen on AVX2 and AVX-512 at XLA's default.
            want = TORCH_DEC[f"out_{out}"]
            bound = reordering_bound(terms=24, depth=8, scale=4 * float(np.abs(want).max()))
            np.testing.assert_allclose(mine[arg], want, rtol=0, atol=bound)
        # the rest (positions 6, 7; torch stored none): the unsplit rehydrated programs
        toks = np.concatenate([first, session.generate(2)], axis=-1)
        np.testing.assert_array_equal(toks, ref[:G])
        for g in range(G):
            mine = dict(zip((x.arg for x in gen.split.slots), session.state(g), strict=True))
            for r, want in zip(dec.arg_roles().state, ref_states[g], strict=True):
                np.testing.assert_array_equal(mine[r.index], want)  # see the docstring
        assert session.metrics.bytes_sent.state == 0
    assert len(np.unique(ref[0])) >= 6


def _toy(pos_shape, pos_dtype):
    """A flat decode step whose token and position come before its cache (as torch_xla orders
    them), the position of shape ``pos_shape`` and type ``pos_dtype``: HLO text, no tree."""

    def step(tok, pos, w, cache):
        at, zero = jnp.reshape(pos, ()).astype(jnp.int32), jnp.int32(0)
        cache = jax.lax.dynamic_update_slice(cache, w[tok][:, None, :], (zero, at, zero))
        logits = jnp.tanh(cache.sum(1)) @ w.T
        return jnp.argmax(logits, -1).astype(tok.dtype), cache

    ex = (jnp.zeros(3, jnp.int32), jnp.zeros(pos_shape, pos_dtype),
          jnp.zeros((11, 6), jnp.float32), jnp.zeros((3, 7, 6), jnp.float32))  # fmt: skip
    text = jax.jit(step, donate_argnums=3).lower(*ex).as_text("hlo")
    return hlopipe.load(text.encode())


# with torch's int64[1] above and gpt_decode's int32[] (test_generate.py), every pair is run
@pytest.mark.parametrize("shape, dtype", [((), "int64"), ((1,), "int32")])
def test_position_scalar_or_one_element_int32_or_int64(shape, dtype):
    prog = _toy(shape, dtype)
    roles = prog.arg_roles()
    assert [r.role for r in roles] == ["feedback", "input", "parameter", "state"]
    assert (roles[1].shape, roles[1].dtype, roles[3].axis) == (shape, dtype, 1)
    w = np.random.default_rng(0).standard_normal((11, 6)).astype(np.float32)
    tokens = np.array([[1, 5, 9], [2, 3, 4]], np.int32)
    gen = Generator(prog, [w], num_stages=1, groups=2)
    assert gen.max_len == 7
    got = gen.start(tokens=tokens, position=0).generate(7)
    ref, _ = generate_unsplit(prog, [w], 7, tokens=tokens, position=0)
    np.testing.assert_array_equal(got, ref)
    assert len(np.unique(ref)) >= 4


def test_optimised_pair_without_markers_is_cut_with_its_decode_step():
    """XLA's optimised forms of the two, cut into 3 stages by the cost model, once cut at
    other layers (the prefill was refused); the prefill is now cut where the decode step
    keeps each cache, and gives torch's tokens."""
    dec, pre = programs(".opt.hlo")
    gen = Generator(dec, _params(dec), prefill=pre, num_stages=3)
    slots = {x.arg: x.stage for x in gen.split.slots}
    for o, arg in gen.prefill.state_of_out.items():
        assert gen.prefill.staged.out_sources[o].stage == slots[arg]
    session = gen.start(PROMPT[None])
    toks = session.generate(2)
    np.testing.assert_array_equal(toks[0, :, 0], TORCH_PRE["out_1"])
    np.testing.assert_array_equal(toks[0, :, 1], TORCH_DEC["out_1"])
    assert session.metrics.bytes_sent.state == 0
