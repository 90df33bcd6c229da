"""Pipelined generation: a tiny GPT decode step with a KV cache, split into 2, 3 and 4 stages,
against the unsplit program on one device (the oracle)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError, StageError
from hlopipe.generate import Generator, Session, generate_unsplit
from hlopipe.generate._plan import InputKind
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()
B, P, N = 2, 8, 32
CUTS = {2: (2,), 3: (1, 3), 4: (1, 2, 3)}


@functools.cache
def params():
    return gd.init(jax.random.key(0), CFG)


def _decode_jit(cuts):
    return jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=cuts), donate_argnums=1)


def _example():
    return (params(), gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))


@functools.cache
def exported(cuts, fmt="export"):
    """The decode step with the cache donated: a jax.export artifact or HLO text."""
    fn = _decode_jit(cuts)
    if fmt == "export":
        return hlopipe.load(jax.export.export(fn)(*_example()).serialize())
    return hlopipe.load(fn.lower(*_example()).as_text("hlo").encode())


@functools.cache
def exported_prefill(cuts):
    fn = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=cuts))
    return hlopipe.load(jax.export.export(fn)(params(), jnp.zeros((B, P), jnp.int32)).serialize())


@functools.cache
def _generator(S):
    """S stages with the prefill, one group, built once for the module: other tests take
    other group counts from it with ``with_groups`` (the same compiled stages)."""
    return Generator(exported(CUTS[S]), params(), prefill=exported_prefill(CUTS[S]), groups=1)


def _prompts(groups, seed=1):
    return np.asarray(gd.prompts(jax.random.key(seed), groups, B, P, CFG))


def test_the_model_gives_varied_tokens_with_margins():
    """Equality of tokens means something only if they vary and the top-1 is clear."""
    prog, pre = exported(CUTS[2]), exported_prefill(CUTS[2])
    toks, _ = generate_unsplit(prog, params(), N, prefill=pre, prompts=_prompts(2))
    assert len(np.unique(toks)) >= 8
    # top-1/top-2 margin of every decode step of group 0, from the unsplit model itself
    step, fill = _direct(stacked=False)
    cache = fill(params(), jnp.asarray(_prompts(2)[0]))[1]
    logits = jax.jit(gd.step_logits)
    margins = []
    for t in range(N - 1):
        tok, pos = jnp.asarray(toks[0, :, t]), jnp.int32(P + t)
        top = np.sort(np.asarray(logits(params(), cache, tok, pos)), axis=-1)
        margins.append(top[:, -1] - top[:, -2])
        nxt, cache = step(params(), cache, tok, pos)
        np.testing.assert_array_equal(nxt, toks[0, :, t + 1])
    assert np.min(margins) > 1e-3, np.min(margins)


def test_roles_from_export_and_hlo_text():
    for fmt, how in (("export", "tf.aliasing_output"), ("hlo", "input_output_alias")):
        roles = exported(CUTS[2], fmt).arg_roles()
        n_params = len(jax.tree_util.tree_leaves(params()))
        assert [r.role for r in roles] == ["parameter"] * n_params + ["state"] * 8 + [
            "feedback",
            "input",
        ]
        assert all(how in r.reason for r in roles.state)
        assert [r.output for r in roles.state] == list(range(1, 9))
        assert roles.feedback[0].output == 0


def test_roles_overrides_checked():
    plain = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(2,)))
    prog = hlopipe.load(jax.export.export(plain)(*_example()).serialize())
    # no donation: the caches are state all the same, each updated in place (data flow)
    found = prog.arg_roles()
    assert [r.output for r in found.state] == list(range(1, 9))
    assert all("in place (data flow); no alias declared" in r.reason for r in found.state)
    roles = prog.arg_roles(state=["[1]"])
    assert [r.path for r in roles.state] == [f"[1][{i}]['{kv}']" for i in range(4) for kv in "kv"]
    assert [r.output for r in roles.state] == list(range(1, 9))
    with pytest.raises(RuntimeConfigError, match=r"argument .*\[2\].*cannot be state of output 1"):
        prog.arg_roles(state={"[2]": 1})
    with pytest.raises(RuntimeConfigError, match="no argument 'cache'"):
        prog.arg_roles(state=["cache"])


@pytest.mark.parametrize(
    "S", [2, pytest.param(3, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow)]
)
def test_split_generation_equals_unsplit(S):
    prog, pre = exported(CUTS[S]), exported_prefill(CUTS[S])
    gen = _generator(S)
    assert gen.groups == 1 and len(gen.plans) == S
    # each state argument is read only by its stage, and donated there
    for p in gen.plans:
        mine = {x.arg for x in gen.split.state_of(p.stage)}
        assert {a for k, a in p.inputs if k is InputKind.STATE} == mine
        assert len(p.donate) == len(mine) > 0
    prompts = _prompts(2 * S, seed=S)
    # the oracle, one group at a time (a group's tokens do not depend on the others)
    ref, ref_states = generate_unsplit(prog, params(), N, prefill=pre, prompts=prompts)
    assert len(np.unique(ref)) >= 8
    decode_step, prefill = _bytes_crossing_cuts(S)
    for groups in sorted({1, 2, S, 2 * S}):
        other = gen.with_groups(groups)
        # another generator on the same compiled stages and placed parameters; gen untouched
        assert other.groups == groups and gen.groups == 1 and other.placed is gen.placed
        session = other.start(prompts[:groups])
        held = _cache_buffers(session, groups)
        _assert_cache_on_its_layers_stage(other, held, S)
        toks = session.generate(N)
        assert toks.shape == (groups, B, N)
        np.testing.assert_array_equal(toks, ref[:groups])
        for g in range(groups):
            for mine, theirs in zip(session.state(g), ref_states[g], strict=True):
                np.testing.assert_array_equal(mine, theirs)  # bit-equal caches
        # the same buffers, updated in place on their stage's devices: no cache moved
        assert _cache_buffers(session, groups) == held
        assert session.metrics.time_to_first_token_s > 0 and session.metrics.tokens == toks.size
        # measured against the closed form: every byte sent is an activation or the token
        sent, decode_sent = session.metrics.bytes_sent, session.metrics.decode_bytes_sent
        assert sum(decode_sent) == (N - 1) * groups * decode_step
        assert sum(sent) == (N - 1) * groups * decode_step + groups * prefill
        assert sent.state == decode_sent.state == 0


def _bytes_crossing_cuts(S):
    """What must cross the S - 1 cuts, from the model's sizes alone (f32 activations, i32
    tokens and positions): per decode step, to each later stage the residual stream
    f32[B, d_model] and the position i32[], and the token i32[B] from the last stage back to
    the first (the embedding); per prefill, the residual stream f32[B, P, d_model]. No cache:
    each layer's k and v are f32[B, max_len, heads, head dim], 12 KiB apiece."""
    decode_step = (S - 1) * (B * CFG.d_model * 4 + 4) + B * 4
    prefill = (S - 1) * B * P * CFG.d_model * 4
    return decode_step, prefill


def _cache_buffers(session, groups):
    """Each group's cache arrays as they sit on the devices: {(group, argument): (devices,
    buffer address)}."""
    out = {}
    for g in range(groups):
        for arg, (_, value) in session._held_state(g).items():
            out[g, arg] = (frozenset(value.devices()), value.unsafe_buffer_pointer())
    return out


def _assert_cache_on_its_layers_stage(gen, held, S):
    """Layer i's k and v (flat arguments after the parameters: [1][i]['k'], [1][i]['v']) sit on
    the devices of the stage that runs layer i (from the cuts), and the stages' devices are
    disjoint, so a cache on its stage is on no other."""
    n_params = len(jax.tree_util.tree_leaves(params()))
    devs = [frozenset(gen.place.devices(s)) for s in range(S)]
    assert sum(len(d) for d in devs) == len(frozenset().union(*devs))
    layers = {
        (g, n_params + 2 * i + j): i for g, _ in held for i in range(CFG.n_layers) for j in (0, 1)
    }
    assert set(held) == set(layers)
    for key, (on, _) in held.items():
        stage = sum(c <= layers[key] for c in CUTS[S])
        assert on == devs[stage], (key, stage)


def test_hlo_text_decode_without_prefill():
    prog = exported(CUTS[3], "hlo")
    gen = Generator(prog, params(), groups=3)
    first = np.asarray(jax.random.randint(jax.random.key(5), (3, B), 0, CFG.vocab, jnp.int32))
    session = gen.start(tokens=first, position=0)
    toks = session.generate(16)
    ref, states = generate_unsplit(prog, params(), 16, tokens=first, position=0)
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 8
    # HLO text is rehydrated op by op: stage and whole program fuse differently, so the caches
    # agree to rounding here (the jax.export tests above check bit equality); every cache of
    # every group
    for g in range(3):
        for mine, theirs in zip(session.state(g), states[g], strict=True):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)


@functools.cache
def exported_stacked(cuts):
    """Decode step and prefill with one [L, ...] cache (per k and v) for all layers."""
    fn = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=cuts), donate_argnums=1)
    ex = (params(), gd.empty_cache(B, CFG, stacked=True), jnp.zeros(B, jnp.int32), jnp.int32(0))
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=cuts, stacked=True))
    return (
        hlopipe.load(jax.export.export(fn)(*ex).serialize()),
        hlopipe.load(jax.export.export(pre)(params(), jnp.zeros((B, P), jnp.int32)).serialize()),
    )


@pytest.mark.parametrize("S", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_cache_stacked_over_layers_is_sliced_per_stage(S):
    """One [L, ...] cache for all layers: each stage keeps [L/S, ...] of it, prefill and
    decode; no byte of it crosses a stage."""
    prog, pre = exported_stacked(CUTS[S])
    gen = Generator(prog, params(), prefill=pre, groups=2)
    whole = sum(int(np.prod(r.shape)) * 4 for r in prog.arg_roles().state)
    L = CFG.n_layers
    for s in range(S):
        assert gen.state_bytes(s) * S == whole  # 1/S of the cache on each stage
        kept = gen.split.state_of(s)
        lo, hi = s * L // S, (s + 1) * L // S
        assert [x.path for x in kept] == [f"[1]['{kv}'][{lo}:{hi}]" for kv in "kv"]
        assert all(gen.roles[x.arg].shape[0] == L // S for x in kept)
    prompts = _prompts(2, seed=S)
    session = gen.start(prompts)
    toks = session.generate(N)
    ref, ref_states = generate_unsplit(prog, params(), N, prefill=pre, prompts=prompts)
    assert len(np.unique(ref)) >= 8
    np.testing.assert_array_equal(toks, ref)
    for g in range(2):
        mine = session.state(g)
        assert [m.shape for m in mine] == [(L, B, CFG.max_len, 4, 8)] * 2
        for a, b in zip(mine, ref_states[g], strict=True):
            np.testing.assert_array_equal(a, b)  # bit-equal, reassembled
    sent = session.metrics.bytes_sent
    assert sent.state == 0
    act = sum(p.send_bytes for p in gen.plans)
    prefill_act = sum(p.send_bytes for p in gen.prefill.plans)
    assert act > 0 and prefill_act > 0
    # only activations and the token move, prefill included: no cache bytes
    assert sent.activations == (N - 1) * 2 * act + 2 * prefill_act
    # a given (reassembled) state is sliced back onto the stages
    first = toks[:, :, -1]
    again = gen.start(tokens=first, position=0, state=[session.state(g) for g in range(2)])
    np.testing.assert_array_equal(again.state(1)[0], session.state(1)[0])


def _tiny_stacked(body):
    w = jnp.arange(32, dtype=jnp.float32).reshape(8, 4) / 7.0
    ex = ({"w": w}, jnp.zeros((2, B, 4), jnp.float32), jnp.zeros(B, jnp.int32), jnp.int32(0))
    prog = hlopipe.load(jax.export.export(jax.jit(body, donate_argnums=1))(*ex).serialize())
    return prog, {"w": w}


def test_stacked_cache_that_cannot_be_sliced_is_refused():
    def crossing(p, cache, tokens, position):
        x = p["w"][tokens] + position.astype(jnp.float32)
        cache = jax.lax.dynamic_update_slice(cache, x[None], (0, 0, 0))
        x = stage_boundary(x * 2.0)
        x = x + cache[0]  # stage 1 reads layer 0, kept by stage 0
        cache = jax.lax.dynamic_update_slice(cache, x[None], (1, 0, 0))
        return jnp.argmax(x, -1).astype(jnp.int32), cache

    with pytest.raises(StageError, match=r"\[1\]\[0:1\].*stage.*after slicing \[1\] into"):
        Generator(*_tiny_stacked(crossing))

    def by_position(p, cache, tokens, position):
        x = p["w"][tokens] + position.astype(jnp.float32)
        cache = jax.lax.dynamic_update_slice(cache, x[None], (position % 2, 0, 0))
        x = stage_boundary(x * 2.0)
        cache = jax.lax.dynamic_update_slice(cache, x[None], (1, 0, 0))
        return jnp.argmax(x + cache[0], -1).astype(jnp.int32), cache

    with pytest.raises(StageError, match=r"\(\[1\]\).*not sliceable.*known only at run time"):
        Generator(*_tiny_stacked(by_position))


def test_prefill_with_other_markers_is_refused_naming_the_stage():
    with pytest.raises(StageError, match=r"stage 1 makes the state \[1\]\[1\]\['k'\].*stage 0"):
        Generator(exported(CUTS[2]), params(), prefill=exported_prefill((1,)))


def test_bad_input():
    gen = Generator(exported(CUTS[2]), params(), prefill=exported_prefill(CUTS[2]), groups=2)
    with pytest.raises(RuntimeConfigError, match="position 48 is beyond the cache"):
        gen.start(_prompts(2)).generate(42)
    with pytest.raises(RuntimeConfigError, match=r"prompts must be .*groups, batch = \(2, 2\)"):
        gen.start(np.zeros((2, 3, P), np.int32))
    with pytest.raises(RuntimeConfigError, match=r"cannot be feedback of output 0"):
        Generator(exported(CUTS[2]), params(), feedback={"[3]": 0})
    stateless = jax.jit(lambda p, tok, pos: (tok + pos,))
    prog = hlopipe.load(jax.export.export(stateless)(params(), *_example()[2:]).serialize())
    with pytest.raises(RuntimeConfigError, match="no argument is state"):
        Generator(prog, params())


def test_compiled_hlo_with_markers_generates_the_unsplit_tokens():
    from hlopipe.marker import KEEP_MARKERS

    compiled = _decode_jit(CUTS[2]).lower(*_example()).compile(compiler_options=KEEP_MARKERS)
    prog = hlopipe.load(compiled.as_text().encode())
    roles = prog.arg_roles()
    assert [r.output for r in roles.state] == list(range(1, 9))
    assert all("input_output_alias" in r.reason for r in roles.state)
    first = np.asarray(jax.random.randint(jax.random.key(7), (2, B), 0, CFG.vocab, jnp.int32))
    toks = Generator(prog, params(), groups=2).start(tokens=first, position=0).generate(12)
    np.testing.assert_array_equal(toks, generate_unsplit(prog, params(), 12, tokens=first)[0])


def test_sharded_export_roles_from_buffer_donor():
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as PS

    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    rep, by_batch = NamedSharding(mesh, PS()), NamedSharding(mesh, PS("x"))
    ex = _example()
    shardings = (jax.tree.map(lambda _: rep, ex[0]), jax.tree.map(lambda _: by_batch, ex[1]))
    fn = jax.jit(
        gd.decode_fn(CFG, stage_boundary, cuts=(2,)),
        donate_argnums=1,
        in_shardings=(*shardings, rep, rep),
    )
    prog = hlopipe.load(jax.export.export(fn)(*ex).serialize())
    roles = prog.arg_roles()
    assert all("jax.buffer_donor" in r.reason for r in roles.state)
    # matched by path: cache [1][i]['k'] to result [1][i]['k']
    assert [r.output for r in roles.state] == list(range(1, 9))
    assert roles.feedback[0].path == "[2]" and roles.inputs[0].path == "[3]"


def test_without_markers_the_cost_model_cuts():
    prog = exported(())
    gen = Generator(prog, params(), num_stages=2, groups=2)
    assert len(gen.plans) == 2 and all(gen.split.state_of(s) for s in range(2))
    first = np.asarray(jax.random.randint(jax.random.key(5), (2, B), 0, CFG.vocab, jnp.int32))
    toks = gen.start(tokens=first).generate(8)
    np.testing.assert_array_equal(toks, generate_unsplit(prog, params(), 8, tokens=first)[0])
    assert gen.start(tokens=first).generate(1).shape == (2, B, 1)


def test_sampling_with_a_key_fed_back():
    """A sampled decode step: the raw key is feedback (made and read by the last stage)."""
    fn = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(2,), sample=True), donate_argnums=1)
    ex = (*_example(), jax.random.PRNGKey(0))
    prog = hlopipe.load(jax.export.export(fn)(*ex).serialize())
    roles = prog.arg_roles()
    assert [(r.path, r.output) for r in roles.feedback] == [("[2]", 0), ("[4]", 9)]
    gen = Generator(prog, params(), groups=2)
    first = np.asarray(jax.random.randint(jax.random.key(5), (2, B), 0, CFG.vocab, jnp.int32))
    keys = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in (11, 12)])
    session = gen.start(tokens=first, feedback={"[4]": keys})
    toks = session.generate(16)
    ref, _ = generate_unsplit(prog, params(), 16, tokens=first, feedback={"[4]": keys})
    np.testing.assert_array_equal(toks, ref)
    assert len(np.unique(toks)) >= 8
    assert session.metrics.bytes_sent.feedback == 15 * 2 * B * 4  # the token only
    other = gen.start(tokens=first, feedback={"[4]": keys[::-1]}).generate(16)
    assert not np.array_equal(other, toks)  # the key matters
    with pytest.raises(
        RuntimeConfigError, match=r"feedback argument 47 \(\[4\], uint32\[2\]\) needs a first"
    ):
        gen.start(tokens=first)
    with pytest.raises(RuntimeConfigError, match=r"feedback \[4\]: expected uint32\[2, 2\]"):
        gen.start(tokens=first, feedback={"[4]": keys[:1]})


def test_stream_gives_the_tokens_of_the_unsplit_program_step_by_step():
    """2 stages x 2 groups with a prefill: ``stream`` yields each step's tokens, equal to the
    oracle's; stopped early, the step it issued ahead comes first from the next call."""
    prog, pre = exported(CUTS[2]), exported_prefill(CUTS[2])
    gen = _generator(2).with_groups(2)
    assert gen.groups == 2 and len(gen.plans) == 2
    prompts = _prompts(2, seed=4)
    ref, ref_states = generate_unsplit(prog, params(), N, prefill=pre, prompts=prompts)
    session = gen.start(prompts)
    rows = list(session.stream(N))
    assert [r.shape for r in rows] == [(2, B)] * N
    np.testing.assert_array_equal(np.stack(rows, axis=-1), ref)
    for g in range(2):
        for mine, theirs in zip(session.state(g), ref_states[g], strict=True):
            np.testing.assert_array_equal(mine, theirs)
    m = session.metrics
    assert m.tokens == 2 * B * N and m.time_to_first_token_s > 0
    assert sum(m.decode_bytes_sent) == (N - 1) * 2 * _bytes_crossing_cuts(2)[0]
    assert m.decode_bytes_sent.state == 0

    session = gen.start(prompts)
    it = session.stream(N)
    head = [next(it) for _ in range(5)]  # the prefill's token and 4 steps'; a 5th issued
    it.close()
    assert session.position == P + 5
    rest = session.generate(N - 5)  # the 5th step's tokens first, then N - 6 steps
    np.testing.assert_array_equal(np.concatenate([np.stack(head, -1), rest], -1), ref)
    assert session.position == P + N - 1


def test_a_step_dispatches_its_stage_and_nothing_else(monkeypatch):
    """1 stage, no markers: a decode step is one dispatch of the stage's executable; nothing
    is put from the host (the positions are placed once per generator) and nothing is read
    until every step is issued; ``generate`` then reads its tokens in one batched copy, and
    ``stream`` reads step t's tokens after issuing step t + 1."""
    import dataclasses

    gen = Generator(exported(()), params(), num_stages=1)
    events: list[str] = []
    comp = gen.placed.compiled[0]
    assert comp is not None

    def step(*args):
        events.append("step")
        return comp.fn(*args)

    # the step programs are built lazily, from the generator's executables
    traced = dataclasses.replace(gen.placed, compiled=(dataclasses.replace(comp, fn=step),))
    monkeypatch.setattr(gen, "placed", traced)
    put, get = jax.device_put, jax.device_get
    read = Session._row  # a step's tokens onto the host (a stream's read)
    monkeypatch.setattr(jax, "device_put", lambda *a, **k: (events.append("put"), put(*a, **k))[1])
    monkeypatch.setattr(jax, "device_get", lambda x: (events.append(f"get {len(x)}"), get(x))[1])
    monkeypatch.setattr(Session, "_row", lambda s, r: (events.append("read"), read(s, r))[1])
    first = np.asarray(jax.random.randint(jax.random.key(5), (1, B), 0, CFG.vocab, jnp.int32))
    ref = generate_unsplit(exported(()), params(), 9, tokens=first)[0]
    n = 9
    session = gen.start(tokens=first)
    events.clear()
    np.testing.assert_array_equal(session.generate(n), ref)
    assert events[: n + 2] == ["put"] + ["step"] * n + [f"get {n}"]  # positions 0..8, once
    assert "step" not in events[n + 2 :] and "put" not in events[n + 2 :]

    session = gen.start(tokens=first)
    events.clear()
    np.testing.assert_array_equal(session.generate(n), ref)
    assert events[: n + 1] == ["step"] * n + [f"get {n}"]
    assert "step" not in events[n + 1 :] and "put" not in events[n + 1 :]

    session = gen.start(tokens=first)
    events.clear()
    rows = []
    for row in session.stream(n):
        events.append("yield")
        rows.append(row)
    np.testing.assert_array_equal(np.stack(rows, -1), ref)
    want = ["step", "step", "read", "yield"] + ["step", "read", "yield"] * (n - 2)
    assert events == [*want, "read", "yield"]


def test_issued_steps_of_several_sessions_are_read_in_any_order(monkeypatch):
    """3 sessions of one group (a server's groups) on 2 stages: each issues 2 steps, then 1
    more, and nothing is read from the devices until every one is issued; the handles are
    read in reverse order, then each session generates on. Every session's tokens equal the
    unsplit program's, and a handle read again gives the same tokens."""
    from hlopipe.generate import Issued

    prog = exported(CUTS[2])
    gen = Generator(prog, params(), groups=1)
    first = np.asarray(jax.random.randint(jax.random.key(7), (3, B), 0, CFG.vocab, jnp.int32))
    ref = generate_unsplit(prog, params(), 6, tokens=first)[0]  # [3, B, 6]
    sessions = [gen.start(tokens=first[g : g + 1]) for g in range(3)]
    reads: list[str] = []
    get = jax.device_get
    monkeypatch.setattr(jax, "device_get", lambda x: (reads.append("get"), get(x))[1])
    two = [s.issue(2) for s in sessions]
    one = [s.issue() for s in sessions]
    assert reads == [] and all(isinstance(h, Issued) for h in two + one)
    assert [s.position for s in sessions] == [3] * 3
    got_one = [h.read() for h in reversed(one)][::-1]
    got_two = [h.read() for h in reversed(two)][::-1]
    rest = [s.generate(3) for s in sessions]
    for g in range(3):
        tokens = np.concatenate([got_two[g], got_one[g], rest[g]], axis=-1)
        np.testing.assert_array_equal(tokens, ref[g : g + 1])
    assert two[0].read() is got_two[0]
    assert sessions[0].metrics is not None and sessions[0].metrics.tokens == 3 * B
    with pytest.raises(RuntimeConfigError, match="issue needs a positive number"):
        sessions[0].issue(0)


@functools.cache
def _direct(stacked):
    """The unsplit model's decode step and prefill, jitted once for the module."""
    return jax.jit(gd.decode_fn(CFG)), jax.jit(gd.prefill_fn(CFG, stacked=stacked))


def _model_directly(n, *, prompts=None, tokens=None, stacked=False):
    """The source model's own decode loop (``gpt_decode`` in JAX, no hlopipe): each group's
    tokens [groups, B, n] and final cache leaves, greedy like the programs."""
    step, fill = _direct(stacked)
    out, caches = [], []
    for g in range(len(prompts) if prompts is not None else len(tokens)):
        if prompts is not None:
            tok, cache = fill(params(), jnp.asarray(prompts[g]))
            seq, pos, steps = [tok], P, n - 1
        else:
            tok, cache = jnp.asarray(tokens[g]), gd.empty_cache(B, CFG, stacked=stacked)
            seq, pos, steps = [], 0, n
        for t in range(steps):
            tok, cache = step(params(), cache, tok, jnp.int32(pos + t))
            seq.append(tok)
        out.append(np.stack([np.asarray(x) for x in seq], axis=-1))
        caches.append([np.asarray(c) for c in jax.tree_util.tree_leaves(cache)])
    return np.stack(out), caches


def test_the_oracle_is_the_model_run_directly():
    """``generate_unsplit`` reads roles, prefill arguments and the position with the code under
    test; here it is checked against the model's own loop in JAX: without a prefill (HLO text,
    tokens and caches from zero) and with a prefill making one cache stacked over the layers."""
    first = np.asarray(jax.random.randint(jax.random.key(5), (2, B), 0, CFG.vocab, jnp.int32))
    want, want_cache = _model_directly(12, tokens=first)
    got, got_cache = generate_unsplit(exported(CUTS[3], "hlo"), params(), 12, tokens=first)
    assert len(np.unique(want)) >= 8
    np.testing.assert_array_equal(got, want)
    prompts = _prompts(2, seed=6)
    want_s, want_cache_s = _model_directly(N, prompts=prompts, stacked=True)
    dec, pre = exported_stacked(CUTS[2])
    got_s, got_cache_s = generate_unsplit(dec, params(), N, prefill=pre, prompts=prompts)
    np.testing.assert_array_equal(got_s, want_s)
    for a, b in ((got_cache, want_cache), (got_cache_s, want_cache_s)):
        for mine, theirs in zip(a, b, strict=True):  # every group
            assert [m.shape for m in mine] == [t.shape for t in theirs]
            for m, t in zip(mine, theirs, strict=True):  # every cache array
                np.testing.assert_allclose(m, t, rtol=0, atol=_cache_bound(t))


def _cache_bound(want):
    """How far two evaluations of the tiny GPT's K/V cache may be apart when they differ only
    in the order of their sums (another program form, another vector width): the last layer's
    K/V is at most 7 chained sums a layer (norm, projections, attention's softmax and weighted
    sum over <= max_len positions, the MLP) over n_layers layers, each of at most
    max(d_ff, max_len) terms whose magnitudes stay within 4x the largest value
    (tests/_rounding.py)."""
    from _rounding import reordering_bound  # tests/ (pytest's path; the launched jobs import
    # this module from tests/generate alone)

    terms = max(CFG.d_ff, CFG.max_len, CFG.d_model)
    return reordering_bound(terms, 7 * CFG.n_layers, 4 * float(np.abs(want).max()))


def test_fed_tokens_read_by_two_stages_equal_the_program_run_directly():
    """``feed`` leaves the tokens on the host for the executable reading them to transfer
    (one process); where a second stage reads them too (a move from the first), they are put
    first. Tokens fed after 3 steps, then 4 more, equal the step run directly, fed alike."""

    def body(p, cache, tokens, position):
        h = p["w"][tokens] + cache + position.astype(jnp.float32)
        x = stage_boundary(h * 2.0)
        x = x + p["v"][tokens[::-1]]  # stage 1 reads the tokens too
        return jnp.argmax(x, -1).astype(jnp.int32), h / 8.0

    w = jnp.arange(32, dtype=jnp.float32).reshape(8, 4) % 7.0 / 3.0
    p = {"v": w[::-1] % 2.0, "w": w}
    step = jax.jit(body, donate_argnums=1)
    example = (p, jnp.zeros((B, 4), jnp.float32), jnp.zeros(B, jnp.int32), jnp.int32(0))
    gen = Generator(hlopipe.load(jax.export.export(step)(*example).serialize()), p,
                    max_len=16)  # fmt: skip
    reads = [p.stage for p in gen.plans if (InputKind.FEEDBACK, gen.token.index) in p.inputs]
    assert reads == [0, 1]
    first, fed = np.array([[1, 6]], np.int32), np.array([[7, 2]], np.int32)
    session = gen.start(tokens=first, position=0)
    got = np.concatenate([session.generate(3), (session.feed(fed), session.generate(4))[1]], -1)

    direct, tok, c = [], jnp.asarray(first[0]), jnp.zeros((B, 4), jnp.float32)
    for pos in range(7):
        if pos == 3:
            tok = jnp.asarray(fed[0])
        tok, c = jax.jit(body)(p, c, tok, jnp.int32(pos))
        direct.append(np.asarray(tok))
    np.testing.assert_array_equal(got[0], np.stack(direct, -1))
    assert len(set(got[0].ravel().tolist())) > 2  # tokens that vary
