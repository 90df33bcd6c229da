"""`Session.prefill_rows`: a decode step taking a position per sequence (the built-in tiny GPT's
slots form, 2 stages, 2 sequences a group) given its prefill, which starts new sequences in some
rows of a group while the others carry on. The oracle is the unsplit program run directly in
JAX on one prompt alone: the prefill (logits and cache of that one row), then the slots step
with each argmax fed back; a sequence not prefilled, the slots step fed its tokens a step at a
time. Other rows' state is checked bit for bit against what it was before."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_generate import _cache_bound

from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()
L = 8  # the built-in prefill's prompt length


@functools.cache
def _params():
    return gd.init(jax.random.key(0), CFG)  # the built-in model's parameters (seed 0)


@functools.cache
def _unsplit():
    return jax.jit(gd.prefill_fn(CFG, logits=True)), jax.jit(gd.decode_slots_fn(CFG))


def _greedy_after(cache, logits, pos, n):
    """``n`` greedy tokens of one sequence: the first the argmax of ``logits``, then the slots
    step from position ``pos`` with each fed back."""
    step = _unsplit()[1]
    out = [int(jnp.argmax(logits[0]))]
    for t in range(n - 1):
        feed = jnp.asarray([out[-1]], jnp.int32)
        logits, cache = step(_params(), cache, feed, jnp.asarray([pos + t], jnp.int32))
        out.append(int(jnp.argmax(logits[0])))
    return out


def prefilled(prompt, n):
    """The unsplit prefill on ``prompt`` alone, then ``n`` greedy tokens; and its cache."""
    logits, cache = _unsplit()[0](_params(), jnp.asarray([prompt], jnp.int32))
    return _greedy_after(cache, logits, len(prompt), n), cache


def stepped(prompt, n):
    """``n`` greedy tokens after ``prompt`` fed to the unsplit slots step a token a step."""
    step, cache = _unsplit()[1], gd.empty_cache(1, CFG)
    for pos, tok in enumerate(prompt):
        feed = jnp.asarray([tok], jnp.int32)
        logits, cache = step(_params(), cache, feed, jnp.asarray([pos], jnp.int32))
    return _greedy_after(cache, logits, len(prompt), n)


@pytest.fixture(scope="module")
def gen():
    from hlopipe.generate import Generator
    from hlopipe.serve import builtin_model

    decode, prefill, params, max_len = builtin_model(2)
    return Generator(decode, params, prefill=prefill, groups=2, max_len=max_len)


def _state(session, g):
    return [np.asarray(x) for x in session.state(g)]


def test_a_prefilled_row_equals_the_unsplit_prefill_and_leaves_the_others_bit_equal(gen):
    """Two groups of 2 sequences run 3 steps; then group 1's rows 1 and 0 (in that order, one
    prefill run) start from two prompts. Group 1's caches hold at those rows what the unsplit
    prefill makes of each prompt alone; group 0's state is bit-equal to before. The first
    tokens and the next ones (fed back from position L) equal the unsplit prefill + step on
    each prompt alone."""
    rng = np.random.default_rng(0)
    prompts = rng.integers(0, CFG.vocab, (2, L))
    start = np.array([[3, 5], [7, 11]])
    session = gen.start(tokens=start, position=0)
    session.generate(3)
    group0 = _state(session, 0)
    first = session.prefill_rows(prompts, [1, 0], group=1)
    after0, after1 = _state(session, 0), _state(session, 1)
    for before, now in zip(group0, after0, strict=True):
        assert np.array_equal(before, now)  # the other group, bit for bit
    want = [prefilled(p.tolist(), 5) for p in prompts]
    # the flat state: per layer k, v (``[b, max_len, heads, head_dim]``); row r of prompt r'
    flat = [[np.asarray(x) for x in jax.tree.leaves(cache)] for _, cache in want]
    for k, now in enumerate(after1):
        for row, which in ((1, 0), (0, 1)):
            want_kv = flat[which][k][0, :L]
            np.testing.assert_allclose(now[row, :L], want_kv, rtol=0, atol=_cache_bound(want_kv))
    assert first.tolist() == [want[0][0][0], want[1][0][0]]
    assert session.positions[1].tolist() == [L, L]
    tokens = np.array([[0, 0], [first[1], first[0]]])
    session.feed(tokens, position=np.array([[0, 0], [L, L]]))
    got = session.generate(4)
    assert got[1, 1].tolist() == want[0][0][1:]
    assert got[1, 0].tolist() == want[1][0][1:]


def test_prefilling_one_row_leaves_its_neighbour_generating_as_alone(gen):
    """One group of 2 (a session of ``with_groups(1)``, as the server's): row 0 reads a prompt
    of 3 a token a step and generates; after its third token row 1 starts from a prompt of
    the prefill's length. Row 0's state is bit-equal across the write, and both rows' tokens
    equal the unsplit program on each prompt alone."""
    one = gen.with_groups(1)
    mine, theirs = [4, 40, 9], list(range(20, 20 + L))
    session = one.start(tokens=np.array([[mine[0], 0]]), position=0)
    for pos, tok in enumerate(mine[1:], start=1):  # row 0 reads its prompt
        session.generate(1)
        session.feed(np.array([[tok, 0]]), position=np.array([[pos, 0]]))
    row0 = [int(session.generate(1)[0, 0, 0])]  # its first token, at position 2
    before = _state(session, 0)
    (first,) = session.prefill_rows(np.array([theirs]), [1])
    for b4, now in zip(before, _state(session, 0), strict=True):
        assert np.array_equal(b4[0], now[0])  # the neighbour's row, bit for bit
    row1 = [int(first)]
    for t in range(5):
        session.feed(np.array([[row0[-1], row1[-1]]]), position=np.array([[3 + t, L + t]]))
        made = session.generate(1)[0, :, 0]
        row0.append(int(made[0]))
        row1.append(int(made[1]))
    assert row0 == stepped(mine, 6)
    assert row1 == prefilled(theirs, 6)[0]


def test_bad_arguments_are_refused_by_name(gen):
    session = gen.start(tokens=np.zeros((2, 2), np.int32), position=0)
    with pytest.raises(RuntimeConfigError, match=r"prompts must be integers shaped \[n, 8\]"):
        session.prefill_rows(np.zeros((1, 5), np.int32), [0])
    with pytest.raises(RuntimeConfigError, match=r"rows must be 2 distinct integers in range\(2\)"):
        session.prefill_rows(np.zeros((2, L), np.int32), [1, 1])
    with pytest.raises(RuntimeConfigError, match=r"group 2 is not in range\(2\)"):
        session.prefill_rows(np.zeros((1, L), np.int32), [0], group=2)


# -- a prefill whose rows do not tell the cache's sequence axis ----------------------------------
B, T, D, V = 2, 6, 4, 16


def _slots_step(emb, cache, tokens, position):
    """``(logits [b, V], cache [b, T, D])``: each sequence's row written at its position."""
    x = emb[tokens]
    cache = cache.at[jnp.arange(B), position].set(x)
    return x @ emb.T + cache.sum(1) @ emb.T, cache


def _mixing_prefill(emb, prompt):
    """Its cache rows are every prompt's mean: one row cannot be written alone."""
    x = emb[prompt]  # [b, L, D]
    mean = x.mean(axis=0)  # mixes the rows
    cache = jnp.zeros((B, T, D)).at[:, : prompt.shape[1]].set(jnp.broadcast_to(mean, x.shape))
    return x[:, -1] @ emb.T, cache


def test_a_prefill_that_mixes_its_rows_is_refused_naming_the_cache():
    """The server refuses it when the engine is made, and ``prefill_rows`` when asked, naming
    the state output and where its rows were mixed; the same step served without the prefill
    is accepted."""
    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.serve import Engine

    emb = jax.random.normal(jax.random.key(1), (V, D))
    step = jax.jit(_slots_step, donate_argnums=1)
    args = (emb, jnp.zeros((B, T, D)), jnp.zeros(B, jnp.int32), jnp.zeros(B, jnp.int32))
    decode = load(jax.export.export(step)(*args).serialize())
    pre = jax.export.export(jax.jit(_mixing_prefill))(emb, jnp.zeros((B, 3), jnp.int32))
    gen = Generator(decode, [emb], prefill=load(pre.serialize()), num_stages=1, max_len=T)
    said = r"state output 1 \(.*float32\[2, 6, 4\]\) holds the sequences \(the prompt's rows"
    said += r" are mixed or not followed at reduce_sum"
    with pytest.raises(RuntimeConfigError, match=said):
        Engine(gen)
    session = gen.start(tokens=np.zeros((1, B), np.int32), position=0)
    with pytest.raises(RuntimeConfigError, match="without the prefill, prompts are read by"):
        session.prefill_rows(np.zeros((1, 3), np.int32), [0])
    Engine(Generator(decode, [emb], num_stages=1, max_len=T))


def test_row_axes_follows_the_rows_or_says_why_not():
    """The data-flow answer alone, on traced functions: the rows' axis through an embedding,
    a transpose and an update, through a split of another axis; two axes; mixed by a
    reduction; reversed; no rule (a loop); through a reshape merging it with the axes after it
    and back; mixed by one merging it with an axis before it."""
    from hlopipe.stages import row_axes

    emb = jnp.zeros((V, D))

    def of(fn, *shapes):
        closed = jax.make_jaxpr(fn)(emb, *(jnp.zeros(s, jnp.int32) for s in shapes))
        return row_axes(closed, 1, 0, range(len(closed.jaxpr.outvars)))

    def moved(emb, prompt):  # [b, L] -> [L, D, b] and into the middle of a bigger cache
        x = emb[prompt].transpose(1, 2, 0)
        return jax.lax.dynamic_update_slice(jnp.zeros((T, D, B)), x, (1, 0, 0))

    (got,) = of(moved, (B, 3))
    assert got.axes == {2} and got.lost is None
    (got,) = of(lambda e, p: e[p][:, None, :, :] + e[p][None, :, :, :], (B, 3))
    assert got.axes == {0, 1}
    (got,) = of(lambda e, p: e[p].sum(0), (B, 3))
    assert got.lost is not None and got.lost.startswith("reduce_sum")
    kept, flipped = of(lambda e, p: (jnp.split(e[p], 3, axis=1)[2], e[p][::-1]), (B, 3))
    assert kept.axes == {0} and flipped.lost is not None and flipped.lost.startswith("rev")
    (got,) = of(lambda e, p: jax.lax.fori_loop(0, 2, lambda i, x: x * 2, e[p]), (B, 3))
    assert got.lost is not None
    # merged with the axes after it for a matrix product and split again (PyTorch's linear
    # layer on [b, L, D], as torch_xla lowers it): the rows stay on axis 0; merged with an
    # axis before it, they are mixed
    merged, back = of(lambda e, p: (e[p].reshape(B * 3, D), (e[p].reshape(B * 3, D) @ e.T)
                                    .reshape(B, 3, V)), (B, 3))  # fmt: skip
    assert merged.axes == {0} and back.axes == {0} and back.lost is None
    (got,) = of(lambda e, p: e[p].transpose(1, 0, 2).reshape(3 * B, D), (B, 3))
    assert got.lost is not None and got.lost.startswith("reshape")


def _position_first(emb, cache, position, tokens):
    """:func:`_slots_step` with its position per sequence (``int32[b]``, as the token) placed
    before the token."""
    return _slots_step(emb, cache, tokens, position)


def _both_index(emb, cache, position, tokens):
    """Both ``int32[b]`` inputs compute the write index: data flow cannot tell the token."""
    return _slots_step(emb, cache, tokens, (position + tokens) % T)


def test_a_position_placed_before_the_token_is_not_taken_for_it():
    """Two integer ``[b]`` inputs beside logits: the token is the one data flow shows writing
    no cache index (not the first), checked by generating against the step run directly with
    each argmax fed back as its ``tokens``; where both compute the write index, refused naming
    both."""
    from hlopipe.generate import Generator
    from hlopipe.io import load

    emb = jax.random.normal(jax.random.key(3), (V, D))
    args = (emb, jnp.zeros((B, T, D)), jnp.zeros(B, jnp.int32), jnp.zeros(B, jnp.int32))

    def program(fn):
        return load(jax.export.export(jax.jit(fn, donate_argnums=1))(*args).serialize())

    gen = Generator(program(_position_first), [emb], num_stages=1, max_len=T)
    first = np.asarray([[1, 2]], np.int32)
    got = np.asarray(gen.start(tokens=first, position=0).generate(T - 1))[0]
    cache, tok, want = jnp.zeros((B, T, D)), jnp.asarray(first[0]), []
    for pos in range(T - 1):
        logits, cache = _slots_step(emb, cache, tok, jnp.full(B, pos, jnp.int32))
        tok = jnp.argmax(logits, -1).astype(jnp.int32)
        want.append(np.asarray(tok))
    np.testing.assert_array_equal(got, np.stack(want, -1))
    said = r"which integer input is the token .* in doubt: argument 2 .*, argument 3 "
    with pytest.raises(RuntimeConfigError, match=said):
        Generator(program(_both_index), [emb], num_stages=1, max_len=T)


def test_sampling_given_again_puts_what_changed_and_samples_as_a_fresh_session(gen, monkeypatch):
    """``Session.sampling`` given fields equal to those set last keeps them where they lie:
    from one sampling to another differing in one row's seed and another's temperature, only
    those two fields are put (one array a group each). Its seeded tokens then equal those of
    a fresh session started with the second sampling."""
    from hlopipe.generate import Sampling

    def how(seeds, temperature):
        return Sampling(np.asarray(seeds, np.uint32), np.asarray(temperature, np.float32),
                        np.ones((2, 2), np.float32), np.zeros((2, 2), np.int32))  # fmt: skip

    first = how([[1, 2], [3, 4]], [[1.0, 1.0], [0.0, 1.0]])
    second = how([[1, 9], [3, 4]], [[1.0, 1.0], [1.0, 1.0]])
    start = np.array([[3, 5], [7, 11]])
    session = gen.start(tokens=start, position=0)
    session.sampling(first)
    put, arrays = jax.device_put, []
    monkeypatch.setattr(
        jax, "device_put", lambda x, *a, **k: (arrays.append(len(x)), put(x, *a, **k))[1]
    )
    session.sampling(second)
    monkeypatch.undo()
    assert arrays == [2 * 2]  # seed and temperature, each group's
    fresh = gen.start(tokens=start, position=0, sampling=second)  # (its first: all put)
    got, want = session.generate(6), fresh.generate(6)
    np.testing.assert_array_equal(got, want)
    assert len({tuple(r) for r in want.reshape(4, 6).tolist()}) == 4  # rows sampled apart
