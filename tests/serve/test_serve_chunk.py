"""Chunked prefill (issue 49, part 1): a prompt longer than every prefill goes through a
prefill and a chunk step ``(params, cache, tokens[C], position) -> (logits, cache)`` exported
by the user beside it (``generate/_chunk.py``), served by the engine."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _engine_run import _COMPILE_EVENT, run_all, run_all_counting_compiles
from _greedy_oracle import greedy_fed

from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt_decode as gd

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    """docs/serving.md's JAX recipe run as written (in a tmp dir): its namespace (``cfg``,
    ``params``, ``b``, ``C``), and the decode step, the prefill and the chunk step it wrote,
    loaded."""
    from hlopipe.io import load

    page = (ROOT / "docs" / "serving.md").read_text()
    (code,) = [b for b in re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
               if "chunk_fn" in b]  # fmt: skip
    where = tmp_path_factory.mktemp("recipe")
    cwd = os.getcwd()
    os.chdir(where)
    try:
        ns: dict = {}
        exec(compile(code, "docs/serving.md", "exec"), ns)
    finally:
        os.chdir(cwd)
    programs = [load((where / f).read_bytes()) for f in ("decode.bin", "prefill16.bin",
                                                         "chunk16.bin")]  # fmt: skip
    return ns, programs


def _oracle(ns, prompt, n):
    """Greedy tokens after ``prompt``: the unsplit decode step fed the whole prompt a token a
    step (no prefill, no chunk), then each argmax fed back."""
    return greedy_fed(ns["cfg"], ns["params"], prompt, n)


def test_prompts_longer_than_the_prefill_through_chunks_equal_the_unsplit_program(recipe):
    """In-process engine, one stage, one group of 2 slots, a prefill of 16 tokens and a chunk
    step of 16: prompts of 1, 15, 17, 64 and 200 tokens, two at a time. 64 and 200 go
    through the prefill and chunks (64: whole chunks, the chunk's token the first; 200: the
    last chunk ending at its end, from inside the one before: ``overlaps``); each gets the
    tokens the unsplit decode step gives when fed the whole prompt a token a step."""
    from hlopipe.generate import Generator
    from hlopipe.serve import Engine

    ns, (decode, prefill, chunk) = recipe
    cfg = ns["cfg"]
    gen = Generator(decode, ns["params"], prefill=[prefill, chunk], num_stages=1, groups=1,
                    max_len=cfg.max_len)  # fmt: skip
    assert gen.chunk is not None and gen.chunk.length == ns["C"] == 16 and gen.chunk.pads
    assert not gen.chunk.apart  # a position for the call (int[]): its rows at one position
    engine = Engine(gen)
    rng = np.random.default_rng(7)
    cases = [(rng.integers(0, cfg.vocab, L).tolist(), 4) for L in (1, 15, 17, 64, 200)]
    requests = run_all(engine, cases)
    assert [r.seqs[0].tokens for r in requests] == [_oracle(ns, p, n) for p, n in cases]
    # every prompt of more than one token prefilled; 64 and 200 by 3 and 12 chunks
    assert engine.prefilled == 4
    # and the chunks read the long prompts, not the decode step a token a turn: each sequence
    # needs at most its last prompt token and 4 made ones of decode turns (5 x 5, even one
    # at a time), where the 200-token prompt alone fed after the prefill takes 184
    assert engine.steps <= 25


def _chunk_one_late(cfg, logits=False):
    """A chunk step that writes its tokens one position later than it is told (a wrong
    offset, the way an export that adds the prefill's length twice would)."""
    right = gd.chunk_fn(cfg, logits=logits)
    return lambda params, cache, tokens, position: right(params, cache, tokens, position + 1)


def test_a_chunk_step_at_the_wrong_position_is_refused(recipe):
    """The chunk step's check (the prefill and a chunk, unsplit, against the decode loop fed
    the same prompt token by token) refuses a chunk whose position is off by one, naming the
    chunk step and the cache that differs."""
    from hlopipe.generate import Generator
    from hlopipe.io import load

    ns, (decode, prefill, _) = recipe
    cfg, params, b, C = ns["cfg"], ns["params"], ns["b"], ns["C"]
    late = jax.jit(_chunk_one_late(cfg, logits=True), donate_argnums=1)
    exported = jax.export.export(late)(
        params, gd.empty_cache(b, cfg), jnp.zeros((b, C), jnp.int32), jnp.zeros((), jnp.int32)
    )
    with pytest.raises(RuntimeConfigError, match=r"the chunk step.*the cache .* differs"):
        Generator(decode, params, prefill=[prefill, load(exported.serialize())], num_stages=1,
                  max_len=cfg.max_len)  # fmt: skip


def _batch_1(ns):
    """The recipe's decode step, 16-token prefill and 16-token chunk step exported at batch 1
    (the way users export for ``--max-batch``), loaded."""
    from hlopipe.io import load

    cfg, params, P, C = ns["cfg"], ns["params"], 16, ns["C"]
    cache, z = gd.empty_cache(1, cfg), jnp.zeros(1, jnp.int32)
    decode = jax.jit(gd.decode_slots_fn(cfg), donate_argnums=1)
    prefill = jax.jit(gd.prefill_fn(cfg, logits=True))
    chunk = jax.jit(gd.chunk_fn(cfg, logits=True), donate_argnums=1)
    exported = (
        jax.export.export(decode)(params, cache, z, z),
        jax.export.export(prefill)(params, jnp.zeros((1, P), jnp.int32)),
        jax.export.export(chunk)(params, cache, jnp.zeros((1, C), jnp.int32),
                                 jnp.zeros((), jnp.int32)),
    )  # fmt: skip
    return [load(e.serialize()) for e in exported]


@pytest.fixture(scope="module")
def wide4(recipe):
    """The recipe's batch-1 export (``_batch_1``) widened to 4 rows (``--max-batch 4``),
    served at 2 stages: its generator (shared: it compiles once for the tests below)."""
    from hlopipe.generate import Generator, widen

    ns = recipe[0]
    decode, prefill, chunk = _batch_1(ns)
    wide = widen(decode, [prefill, chunk], rows=4)
    return Generator(wide.decode, ns["params"], prefill=list(wide.prefills), num_stages=2,
                     groups=1, max_len=ns["cfg"].max_len, row_prefills=wide.narrow,
                     row_steps=wide.steps)  # fmt: skip


def test_a_batch_1_chunk_step_at_max_batch_4_equals_the_unsplit_program(recipe, wide4):
    """A batch-1 export (decode step, 16-token prefill, 16-token chunk step) widened to 4 rows
    (``--max-batch 4``), served by the engine at 2 stages (``wide4``): prompts of 1, 15, 17 and
    64 fill the rows; 15 and 17 end first and prompts of 200 and 120 tokens are admitted into
    their rows in one turn while the 1-token and 64-token rows are still generating. Every
    sequence gets the tokens of the unsplit decode step fed its whole prompt, and the chunks ran
    at the fewest rows holding the prompts chunked in a turn: the 64-token prompt's 3 chunks at
    1 row, the 200-token and 120-token prompts' 12 and 7 chunks at 2 rows in 12 runs, each row
    at its own position (never at 4, nor a length at a time). The 64-token one asks for
    log-probabilities (which the decode step gives), so its chunks read its first 63 tokens, the
    last chunk right-padded, and the decode step its last. Decode steps run at the fewest rows
    holding the running ones (``row_steps``). Nothing is compiled once the engine is warm (jax's
    own compile events)."""
    from hlopipe.serve import Engine
    from hlopipe.serve._scheduler import SamplingParams

    ns, gen = recipe[0], wide4
    cfg = ns["cfg"]
    assert sorted(gen.narrow_steps) == [1, 2]  # decode steps at the fewest rows too
    chunk_ok = gen.chunk is not None and gen.chunk.pads and gen.chunk.overlaps
    assert chunk_ok and sorted(gen.narrow_chunks) == [1, 2]
    ran: dict[int, int] = {1: 0, 2: 0, 4: 0}  # chunks run, by the rows each computed
    for step in (gen.chunk, *gen.narrow_chunks.values()):
        for prog in {id(step.program): step.program, id(step.inner): step.inner}.values():
            prog.run = _counted(prog.run, ran, step.rows)
    engine = Engine(gen)
    rng = np.random.default_rng(3)
    cases = [(rng.integers(0, cfg.vocab, L).tolist(), n)
             for L, n in ((1, 12), (15, 2), (17, 2), (64, 4), (200, 4), (120, 4))]  # fmt: skip
    # the second of each pair run together one token repeated: its cache unlike the other's
    # (random weights attend almost evenly, so two random prompts' caches read alike)
    cases[2], cases[5] = ([9] * 17, 2), ([5] * 120, 4)
    asks = (*cases[3], frozenset(), SamplingParams(logprobs=True), [], None, False, 1)
    requests, compiled = run_all_counting_compiles(engine, [*cases[:3], asks, *cases[4:]])
    assert compiled == []  # every program, row count and writer it ran compiled at warm-up
    want = [_oracle(ns, p, n) for p, n in cases]
    assert [r.seqs[0].tokens for r in requests] == want
    assert len(requests[3].seqs[0].token_logprobs) == 4
    # warm-up: one chunk at each row count; then 64 (its first 63: 16 + 3 x 16, padded) at
    # 1 row, and 200 (16 + 11 x 16 and one from 184) and 120 (16 + 6 x 16 and one from 104)
    # together at 2 rows, each at its own position, 120's last chunk run again 5 times (a
    # run a length: 12 + 7 at 1 row)
    assert ran == {1: 1 + 3, 2: 1 + 12, 4: 1}
    # three prompts (200, 120, 64) into rows 0, 1, 3 of a session: no run of 3 rows, so at 4
    # (rows 2 computed for nothing), the 12 chunk runs of the longest, a position a row
    session = gen.start(tokens=np.zeros((1, 4), np.int32), position=0)
    which, rows = (4, 5, 3), [0, 1, 3]
    ends = np.asarray([len(cases[i][0]) for i in which])
    padded = np.zeros((3, 200), np.int32)
    for j, i in enumerate(which):
        padded[j, : ends[j]] = cases[i][0]
    got = [[int(t)] for t in session.prefill_rows(padded, rows, lengths=ends)]
    assert session.prefill_rows_run == 4 and ran == {1: 1 + 3, 2: 1 + 12, 4: 1 + 12}
    tokens, positions = np.zeros((1, 4), np.int32), np.zeros((1, 4), np.int64)
    for _ in range(3):
        tokens[0, rows], positions[0, rows] = [g[-1] for g in got], ends + len(got[0]) - 1
        session.feed(tokens, position=positions)
        for g, t in zip(got, session.generate(1)[0, rows, 0], strict=True):
            g.append(int(t))
    assert got == [want[i] for i in which]


def _counted(run, ran, rows):
    def counted(*args, **kwargs):
        ran[rows] += 1
        return run(*args, **kwargs)

    return counted


def test_a_batch_2_chunk_step_at_max_batch_4_equals_the_unsplit_program(recipe):
    """The recipe's batch-2 export (a position a sequence, its chunk step's one a call)
    widened to 4 rows, two groups of 2 (``--max-batch 4``), served by the engine, one stage:
    prompts of 1, 64 and 200 tokens admitted at once. Each row's chunks are a call of the
    batch-2 chunk step of its own (its sequence in both rows, row 0 kept), all 4 rows a run,
    each row at its own position (the check finds them apart): the 64- and 200-token
    prompts share 12 runs, and every sequence gets the tokens of the unsplit decode step fed
    its whole prompt."""
    from hlopipe.generate import Generator, widen
    from hlopipe.serve import Engine

    ns, (decode, prefill, chunk) = recipe
    cfg = ns["cfg"]
    wide = widen(decode, [prefill, chunk], rows=4)
    assert wide.says == "a batch-2 step vmapped over groups of 2 rows" and not wide.narrow
    gen = Generator(wide.decode, ns["params"], prefill=list(wide.prefills), num_stages=1,
                    groups=1, max_len=cfg.max_len)  # fmt: skip
    assert gen.chunk is not None and gen.chunk.rows == 4 and gen.chunk.overlaps
    ran = {4: 0}
    for prog in {
        id(gen.chunk.program): gen.chunk.program,
        id(gen.chunk.inner): gen.chunk.inner,
    }.values():
        prog.run = _counted(prog.run, ran, 4)
    engine = Engine(gen)
    rng = np.random.default_rng(5)
    cases = [(rng.integers(0, cfg.vocab, L).tolist(), n) for L, n in ((1, 6), (64, 3))]
    cases.append(([7] * 200, 3))  # one token repeated: a cache unlike a random prompt's
    requests = run_all(engine, cases)
    assert [r.seqs[0].tokens for r in requests] == [_oracle(ns, p, n) for p, n in cases]
    assert gen.chunk.apart  # its rows checked to start at their own positions
    assert ran == {4: 1 + 12}  # warm-up's one, then 64's and 200's together
    assert engine.steps <= 6  # the prompts read by chunks, not a token a turn


def test_a_chunk_step_whose_rows_share_a_position_is_not_run_apart(recipe):
    """A batch-2 chunk step taking a position int[2] but reading only its first (its rows
    at one position) passes the chunk check, which runs its rows alike, and is not taken as
    running its rows apart: the check with rows at different positions finds a row that
    differs from the decode loop's."""
    from hlopipe.generate import Generator
    from hlopipe.io import load

    ns, (decode, prefill, _) = recipe
    cfg, params, b, C = ns["cfg"], ns["params"], ns["b"], ns["C"]
    right = gd.chunk_fn(cfg, logits=True)
    first = jax.jit(lambda p, c, t, pos: right(p, c, t, pos[0]), donate_argnums=1)
    exported = jax.export.export(first)(
        params, gd.empty_cache(b, cfg), jnp.zeros((b, C), jnp.int32), jnp.zeros(b, jnp.int32)
    )
    gen = Generator(decode, params, prefill=[prefill, load(exported.serialize())],
                    num_stages=1, max_len=cfg.max_len)  # fmt: skip
    assert gen.chunk is not None and gen.chunk.overlaps and not gen.chunk.apart


def test_nothing_compiles_once_warm_after_jax_caches_are_cleared(recipe, wide4, monkeypatch):
    """The engine clears JAX's caches once warm (``jax.clear_caches``; a function jitted
    before compiles again after): every executable it serves with afterwards is held by its
    owner (the stages' ``Compiled``; the row writers, the samplers, the penalties' counts and
    ``_take_rows``: ``Held``). The batch-1 export widened to 4 rows at 2 stages (``wide4``):
    prompts of 1, 15, 17, 64 and 200 tokens (a prefill, chunks), greedy, penalized, with
    log-probabilities, seeded with a top-p and top-k cut, and two seeded sequences in one
    request (``n`` 2). Once warm, nothing is compiled (jax's own compile events); the greedy
    tokens equal the unsplit decode step fed the whole prompt, and every sequence's tokens
    equal those of the same requests served by another engine on the same generator that
    kept JAX's caches."""
    from hlopipe.serve import Engine, Request, Sequence
    from hlopipe.serve._scheduler import SamplingParams as SP

    ns, gen = recipe[0], wide4
    cfg = ns["cfg"]
    rng = np.random.default_rng(11)
    prompts = [rng.integers(0, cfg.vocab, L).tolist() for L in (1, 15, 17, 64, 200, 9)]
    hows = [SP(), SP(presence=0.5, frequency=0.4, repetition=1.3), SP(logprobs=True),
            SP(seed=5, temperature=0.9, top_p=0.8, top_k=6), SP()]  # fmt: skip

    def requests(done):
        made = [Request([Sequence(p, 4, frozenset(), how, logprobs=2 if how.logprobs else None)],
                        lambda i, t, f: i < 0 and done.release())
                for p, how in zip(prompts, hows, strict=False)]  # fmt: skip
        pair = [Sequence(prompts[-1], 4, frozenset(), SP(seed=s, temperature=1.0)) for s in (9, 10)]
        return [*made, Request(pair, lambda i, t, f: i < 0 and done.release())]

    def serve(counting):
        done, compiled = threading.Semaphore(0), []

        def listen(event, _secs, **kw):
            if event == _COMPILE_EVENT:
                compiled.append(str(kw.get("fun_name")))

        engine, made = Engine(gen), requests(done)
        probe = jax.jit(lambda x: x + 1)
        probe(1)  # compiled now, through jax.jit's caches
        engine.start()
        try:
            assert engine.ready.wait(120) and engine.error is None
            if counting:
                jax.monitoring.register_event_duration_secs_listener(listen)
                probe(1)  # compiled again: the caches were cleared
                assert compiled == ["jit(<lambda>)"]
                compiled.clear()
            for r in made:
                engine.submit(r)
            for _ in made:
                assert done.acquire(timeout=120)
        finally:
            if counting:
                jax.monitoring.unregister_event_duration_listener(listen)
            engine.stop(60)
        return [[s.tokens for s in r.seqs] for r in made], compiled

    cleared, compiled = serve(counting=True)
    assert compiled == []  # every executable called once warm was held through the clear
    with monkeypatch.context() as m:
        m.setattr(jax, "clear_caches", lambda: None)  # this engine keeps JAX's caches
        kept, _ = serve(counting=False)
    assert cleared == kept
    greedy = [0, 4]
    assert [cleared[i][0] for i in greedy] == [_oracle(ns, prompts[i], 4) for i in greedy]
    assert cleared[-1][0] != cleared[-1][1]  # two seeds: two draws
