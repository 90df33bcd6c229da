"""Generation on stage meshes: each stage on its own (data x model) mesh of CPU devices, its
parameters tensor parallel, its KV cache sharded and donated on its mesh, against the unsplit
program on one device."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as PS
from test_generate import CFG, CUTS, B, N, _prompts, exported, exported_prefill, params

from hlopipe.errors import RuntimeConfigError
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.generate._plan import InputKind


def megatron_specs(p):
    """Columns of qkv / fc1 / head and rows of proj / fc2 split over "model"."""
    layer = {
        "ln1": {"g": PS(), "b": PS()}, "qkv": PS(None, "model"), "proj": PS("model", None),
        "ln2": {"g": PS(), "b": PS()}, "fc1": PS(None, "model"), "fc2": PS("model", None),
    }  # fmt: skip
    return {"embed": PS(), "pos": PS(), "layers": [layer] * len(p["layers"]),
            "ln_f": {"g": PS(), "b": PS()}, "head": PS(None, "model")}  # fmt: skip


@pytest.mark.slow  # ~15 s idle (prefill and decode compiled on 2 meshes, the oracle)
def test_two_stages_on_data_by_model_meshes_generate_the_unsplit_tokens():
    prog, pre = exported(CUTS[2]), exported_prefill(CUTS[2])
    gen = Generator(
        prog, params(), prefill=pre, groups=2, stage_mesh_shape=(2, 2),
        stage_mesh_axes=("data", "model"), param_specs=megatron_specs(params()),
    )  # fmt: skip
    meshes = [set(gen.place.devices(s)) for s in range(2)]
    assert all(len(m) == 4 for m in meshes) and not meshes[0] & meshes[1]
    prompts = _prompts(2, seed=11)
    session = gen.start(prompts)
    before = session._held_state(0)[gen.split.slots[-1].arg][1]
    toks = session.generate(N)
    assert before.is_deleted()  # donated: updated in place on its mesh
    ref, ref_states = generate_unsplit(prog, params(), N, prefill=pre, prompts=prompts)
    assert len(np.unique(ref)) >= 8
    np.testing.assert_array_equal(toks, ref)
    for s, p in enumerate(gen.plans):
        qkv = [
            a for k, a in p.inputs if k is InputKind.PARAM and gen.roles[a].path.endswith("['qkv']")
        ]
        assert qkv and all(gen.placed.params[s][a].sharding.spec == PS(None, "model") for a in qkv)
    for g in range(2):
        for slot in gen.split.slots:
            at, cache = session._held_state(g)[slot.arg]
            assert at == slot.stage and cache.sharding.device_set == meshes[slot.stage]
            # [b, len, heads, head_dim]: batch over "data", heads over "model"
            assert cache.sharding.shard_shape(cache.shape) == (B // 2, CFG.max_len, 2, 8)
        # tensor parallel sums partial products in another order: equal to rounding
        for mine, theirs in zip(session.state(g), ref_states[g], strict=True):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)
    sent = session.metrics.bytes_sent
    assert sent.state == 0 and sent.activations > 0


@pytest.mark.xla_default
def test_a_data_mesh_keeps_the_caches_bit_equal():
    """Split over the batch only, every sequence is computed as on one device (stage 0 on
    two devices, stage 1 on one: activations resharded on the way): bit-equal caches as XLA
    compiles by default. Why it holds: at this width (contractions of 32 and 64 terms) XLA's
    CPU compiler emits its own dot loops, whose order of summing each output element depends on
    the contraction and the vector width, never on how many rows the batch has; run at XLA's
    default optimisation on AVX-512 and AVX2 (`make test`'s tiers, tests/conftest.py). It does
    not hold at LLVM's O0 (9 ULP apart on an AVX-512 EPYC: the batch of 1 takes XLA's
    matrix-vector loop, the batch of 2 its matrix-matrix one), nor for contractions of
    thousands of terms, which XLA hands to Eigen's blocked kernels."""
    prog = exported(CUTS[2])
    first = np.asarray(jax.random.randint(jax.random.key(3), (1, B), 0, CFG.vocab, np.int32))
    gen = Generator(prog, params(), stage_mesh_shape=[(2,), (1,)])  # meshes may differ
    session = gen.start(tokens=first)
    toks = session.generate(12)
    ref, states = generate_unsplit(prog, params(), 12, tokens=first)
    np.testing.assert_array_equal(toks, ref)
    for mine, theirs in zip(session.state(0), states[0], strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert session._held_state(0)[gen.split.slots[0].arg][1].sharding.spec[0] == "data"
    assert len(session._held_state(0)[gen.split.slots[-1].arg][1].sharding.device_set) == 1


def test_bad_meshes_are_refused():
    prog = exported(CUTS[2])
    with pytest.raises(RuntimeConfigError, match=r"2 stages needs 2 ranks x 8 devices"):
        Generator(prog, params(), stage_mesh_shape=(8,))
    bad = megatron_specs(params())
    bad["head"] = PS(None, "tensor")
    with pytest.raises(
        RuntimeConfigError, match=r"param_specs\[0\]\['head'\]: .* names mesh axis 'tensor'"
    ):
        Generator(prog, params(), stage_mesh_shape=(1, 2), stage_mesh_axes=("data", "model"),
                  param_specs=bad)  # fmt: skip
