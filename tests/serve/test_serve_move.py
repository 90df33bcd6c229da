"""A sequence left alone in a high row is moved down (``Session.move_rows``, the scheduler's
``Move``): the built-in tiny GPT's batch-1 decode step returning logits and its prefill
widened to 4 rows (``--max-batch 4``: decode steps at 1, 2 and 4 rows), one stage, served by
the engine in process. The oracle is the tiny GPT's decode step run directly in JAX, one
sequence alone at batch 1, fed its prompt a token a step, its penalties applied in NumPy
(Hugging Face's repetition, OpenAI's presence and frequency) and its token drawn as the
sampling is documented: argmax at temperature 0, else ``jax.random.categorical`` of the
logits over the temperature with the key ``fold_in(key(seed), position)``."""

from __future__ import annotations

import functools
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _engine_run import _COMPILE_EVENT

from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()
ROWS, P = 4, 8


@functools.cache
def _step():
    return jax.jit(gd.decode_slots_fn(CFG))


@functools.cache
def _params():
    return gd.init(jax.random.key(0), CFG)


def _alone(prompt, n, seed=0, temperature=0.0, presence=0.0, frequency=0.0, repetition=1.0):
    """The ``n`` tokens after ``prompt``, the sequence run alone (see the module's
    docstring)."""
    cache, out = gd.empty_cache(1, CFG), []
    for pos in range(len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        logits, cache = _step()(_params(), cache, jnp.asarray([feed], jnp.int32),
                                jnp.asarray([pos], jnp.int32))  # fmt: skip
        if pos < len(prompt) - 1:
            continue
        x = np.asarray(logits[0], np.float32)
        counts = np.bincount(out, minlength=x.size).astype(np.float32)
        seen = np.zeros(x.size, bool)
        seen[[*prompt, *out]] = True
        x = np.where(seen, np.where(x > 0, x / repetition, x * repetition), x)
        x = x - presence * (counts > 0) - frequency * counts
        if temperature == 0:
            out.append(int(np.argmax(x)))
            continue
        key = jax.random.fold_in(jax.random.key(seed), pos)
        out.append(int(jax.random.categorical(key, jnp.asarray(x / temperature, jnp.float32))))
    return out


@pytest.fixture(scope="module")
def gen():
    """The generator ``hlopipe serve --max-batch 4`` builds from these batch-1 exports."""
    from hlopipe.generate import Generator, widen
    from hlopipe.io import load

    params = _params()
    cache, z = gd.empty_cache(1, CFG), jnp.zeros(1, jnp.int32)
    decode = jax.jit(gd.decode_slots_fn(CFG), donate_argnums=1)
    prefill = jax.jit(gd.prefill_fn(CFG, logits=True))
    exported = (jax.export.export(decode)(params, cache, z, z),
                jax.export.export(prefill)(params, jnp.zeros((1, P), jnp.int32)))  # fmt: skip
    decode, prefill = (load(e.serialize()) for e in exported)
    wide = widen(decode, [prefill], rows=ROWS)
    return Generator(wide.decode, params, prefill=list(wide.prefills), num_stages=1,
                     max_len=CFG.max_len, row_steps=wide.steps)  # fmt: skip


def test_a_sequence_left_in_a_high_row_moves_down_and_its_tokens_stay_its_own(gen):
    """Four sequences fill the 4 rows at once; rows 0 and 1 end first (3 tokens), then row 2
    (8), while row 3 goes on (14): seeded draws and greedy, with penalties, prompts of the
    prefill's length (8) and shorter (3, 2: padded through it, their last token read by the
    decode step). Once rows 0 and 1 are free, rows 2 and 3 move to 0 and 1
    (the step at 2 rows, not 4); once row 0's ends, row 1's moves to 0 (1 row). Every
    sequence's tokens equal it run alone, and the decode steps, counted by the rows each
    computed as they ran, run at 2 and then 1 row, at 4 only while four sequences run;
    nothing is compiled once the engine is warm."""
    from hlopipe.generate._steps import Home
    from hlopipe.serve import Engine, Request, Sequence
    from hlopipe.serve._scheduler import SamplingParams

    assert sorted(gen.narrow_steps) == [1, 2]
    engine = Engine(gen)
    plans: list = []
    schedule = engine.scheduler.schedule
    engine.scheduler.schedule = lambda: plans.append(schedule()) or plans[-1]
    ran = {1: 0, 2: 0, 4: 0}  # decode steps run, by the rows computed
    fed = {gen.token.index: Home(*gen.first_feedback[gen.token.index])}
    for rows, step in [(ROWS, gen), *gen.narrow_steps.items()]:
        for prog in {id(p): p for p in step.step_programs(fed, 2)}.values():
            prog.run = _counted(prog.run, ran, rows, plans)
    rng = np.random.default_rng(5)
    prompt = [rng.integers(0, CFG.vocab, L).tolist() for L in (P, 3, P, 2)]
    how = [SamplingParams(seed=3, temperature=1.0, frequency=0.7),
           SamplingParams(),
           SamplingParams(seed=11, temperature=1.5, presence=1.0, repetition=1.4),
           SamplingParams(seed=7, temperature=1.2, frequency=1.5, repetition=1.3)]  # fmt: skip
    lengths = (3, 3, 8, 14)
    # one request of four sequences: admitted in one turn, rows 0 to 3 in order
    done = threading.Event()
    request = Request([Sequence(p, n, sampling=s) for p, n, s in zip(prompt, lengths, how,
                                                                     strict=True)],
                      lambda i, t, f: i < 0 and done.set())  # fmt: skip
    compiled: list[str] = []

    def listen(event: str, _secs: float, **kw) -> None:
        if event == _COMPILE_EVENT:
            compiled.append(str(kw.get("fun_name")))

    engine.start()
    try:
        assert engine.ready.wait(120) and engine.error is None
        jax.monitoring.register_event_duration_secs_listener(listen)
        engine.submit(request)
        assert done.wait(120)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
        engine.stop(60)
    got = [seq.tokens for seq in request.seqs]
    want = [_alone(p, n, s.seed, s.temperature, s.presence, s.frequency, s.repetition)
            for p, n, s in zip(prompt, lengths, how, strict=True)]  # fmt: skip
    assert got == want
    moves = [(m.src, m.dst) for plan in plans for m in plan.moves]
    assert moves == [((2, 3), (0, 1)), ((1,), (0,))]
    # the decode steps run, by the rows each computed: rows 0 and 1 take 3 turns (the first
    # token of a prompt of 8 from the prefill; the 3-token prompt's last token read by the
    # step), all four running: 4 rows; row 2 (8 tokens, its first from the prefill: 7 steps)
    # then runs beside row 3 at 2 rows; row 3 (14 tokens: its 2-token prompt's last read by
    # the step) the rest alone at 1 row. Left in place, every step would be at 4 rows.
    assert ran == {4: 3, 2: 7 - 3, 1: 14 - 7}
    assert [p.step_rows for p in plans if p.steps] == [(4,)] * 3 + [(2,)] * 4 + [(1,)] * 7
    assert compiled == []


def test_session_move_rows_carries_a_sequence_on_without_a_feed(gen):
    """``Session.move_rows`` alone, no server: a seeded, penalized sequence prefilled into
    row 3 of the 4, its counts kept on the device (``set_counts``, ``count``), takes three
    steps at 4 rows, is moved to row 0 and takes four more at 1 row, fed nothing after the
    move (its token, position, sampling, counts and cache rows are the moved ones). Its tokens
    equal it run alone."""
    from hlopipe.generate import Sampling

    prompt = np.random.default_rng(9).integers(0, CFG.vocab, P)
    how = dict(seed=5, temperature=1.3, presence=0.8, frequency=0.6, repetition=1.5)
    fields = {"seed": np.uint32, "temperature": np.float32, "top_p": np.float32,
              "top_k": np.int32, "presence": np.float32, "frequency": np.float32,
              "repetition": np.float32, "logprobs": np.bool_}  # fmt: skip
    greedy = {"top_p": 1, "repetition": 1}
    values = {f: np.full((1, ROWS), greedy.get(f, 0), t) for f, t in fields.items()}
    for f, v in how.items():
        values[f][0, 3] = v
    session = gen.start(tokens=np.zeros((1, ROWS), np.int32), position=0)
    session.sampling(Sampling(**values))
    seen = np.zeros((1, CFG.vocab), bool)
    seen[0, prompt] = True
    session.set_counts([3], np.zeros(seen.shape, np.float32), seen)
    out = [int(session.prefill_rows(prompt[None], [3])[0])]
    tokens, positions = np.zeros((1, ROWS), np.int32), np.zeros((1, ROWS), np.int64)
    tokens[0, 3], positions[0, 3] = out[0], P
    session.feed(tokens, position=positions)
    row = np.arange(ROWS) == 3
    session.count(row, tokens=tokens[0])
    for _ in range(3):
        out.append(int(session.generate(1)[0, 3, 0]))
        session.count(row)
    session.move_rows([3], [0])
    for _ in range(4):
        out.append(int(session.issue(1, rows=1).read()[0, 0, 0]))
        session.count(row[::-1])
    assert out == _alone(prompt.tolist(), len(out), **how)


@pytest.mark.parametrize("src, dst", [([3], [4]), ([3, 2], [0, 0]), ([3], [0, 1]),
                                      ([1.0], [0])])  # fmt: skip
def test_bad_rows_to_move_are_refused_by_name(gen, src, dst):
    from hlopipe.errors import RuntimeConfigError

    session = gen.start(tokens=np.zeros((1, ROWS), np.int32), position=0)
    with pytest.raises(RuntimeConfigError, match=r"move_rows: src and dst must be as many rows"):
        session.move_rows(src, dst)


def _counted(run, ran, rows, plans):
    def counted(*args, **kwargs):
        ran[rows] += bool(plans)  # serving (the warm-up schedules nothing)
        return run(*args, **kwargs)

    return counted
