"""Batching at serve time: the built-in tiny GPT's decode step and prefill exported at batch 1
(``Form.TOKENS``), served at 8 sequences a step (``build_server(max_batch=8)``: both vmapped
over the rows), over real HTTP. The oracle is the tiny GPT's decode step run directly in JAX,
one prompt alone at batch 1, fed the whole prompt a token a step, its argmax fed back."""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _engine_run import run_all

from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig()


@functools.cache
def _step():
    return jax.jit(gd.decode_slots_fn(CFG))


def _alone(prompt, n):
    """Greedy tokens after ``prompt``, the sequence run alone at batch 1 (seed 0's
    parameters, as the built-in model's)."""
    params = gd.init(jax.random.key(0), CFG)
    cache = gd.empty_cache(1, CFG)
    out: list[int] = []
    for pos in range(len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        logits, cache = _step()(
            params, cache, jnp.asarray([feed], jnp.int32), jnp.asarray([pos], jnp.int32)
        )
        if pos >= len(prompt) - 1:
            out.append(int(jnp.argmax(logits[0])))
    return out


@contextlib.contextmanager
def _serving(server):
    """``server`` (a :class:`hlopipe.serve.Server`) served by uvicorn in a thread on its
    bound socket, its engine running: its base URL."""
    import uvicorn

    http = uvicorn.Server(uvicorn.Config(server.app, log_level="warning"))
    thread = threading.Thread(target=http.run, kwargs={"sockets": [server.sock]}, daemon=True)
    server.engine.start()
    thread.start()
    try:
        assert server.engine.ready.wait(120)
        while not http.started:
            time.sleep(0.02)
        yield f"http://127.0.0.1:{server.sock.getsockname()[1]}/v1"
    finally:
        http.should_exit = True
        thread.join(10)
        server.engine.stop(60)
        server.sock.close()


def _complete(url, prompt, n):
    body = json.dumps({"prompt": prompt, "max_tokens": n, "temperature": 0}).encode()
    req = urllib.request.Request(f"{url}/completions", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())["choices"][0]["token_ids"]


@pytest.fixture(scope="module")
def served8():
    """The built-in tiny GPT served at 8 rows (a batch-1 step vmapped), and what it said."""
    from hlopipe.serve import build_server

    said: list[str] = []
    server = build_server(stages=1, groups=1, port=0, max_batch=8,
                          out=lambda *a, **k: said.extend(a))  # fmt: skip
    return server, said


def test_a_batch_1_export_served_at_batch_8_equals_each_sequence_alone(served8):
    """Ten clients at once on 8 rows (one group): prompts of 1 to 12 tokens (of the prefill's
    8: prefilled into its row; shorter: padded through the prefill; longer: the rest read by
    the decode step), two admitted into rows freed mid-run. Each gets the tokens of its
    sequence run alone at batch 1, and the sequences share steps: far fewer steps than the
    tokens made (a batch-1 server takes a step per token)."""
    server, said = served8
    assert (server.engine.gen.batch, server.engine.gen.per_sequence) == (8, True)
    rng = np.random.default_rng(7)
    n = 6
    cases = [rng.integers(0, CFG.vocab, L).tolist() for L in (8, 3, 12, 1, 8, 5, 9, 8, 2, 11)]
    with _serving(server) as url, ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(lambda p: _complete(url, p, n), cases))
    assert got == [_alone(p, n) for p in cases]
    assert "1 groups of 8 (a batch-1 step vmapped, --max-batch)" in said[0]
    # a sequence needs at most 1 + (12 - 8) + n steps; two waves of them
    assert server.engine.steps <= 2 * (1 + 4 + n) < len(cases) * n
    assert server.engine.prefilled == sum(len(p) > 1 for p in cases)


def test_prompts_admitted_into_few_rows_are_prefilled_at_that_many_rows(served8):
    """The served generator's own session (8 rows): one prompt admitted alone, then two at
    once, then three (into rows other sequences are decoding beside). The prefill computes
    1, 2, then 4 rows (the fewest of 1, 2, 4, 8 holding them: the prompt rows it ran), not
    8, and every sequence gets the tokens of it run alone at batch 1."""
    gen = served8[0].engine.gen
    session = gen.start(tokens=np.zeros((1, 8), np.int32), position=0)
    rng = np.random.default_rng(11)
    prompts = [rng.integers(0, CFG.vocab, 8) for _ in range(6)]
    waves = [[5], [2, 7], [0, 3, 6]]  # the rows of prompts 0; 1, 2; 3, 4, 5
    tokens, positions = np.zeros((1, 8), np.int32), np.zeros((1, 8), np.int64)
    out: dict[int, list[int]] = {}
    ran, first = [], 0
    for rows in waves:
        made = session.prefill_rows(np.stack(prompts[first : first + len(rows)]), rows)
        ran.append(session.prefill_rows_run)
        for r, t in zip(rows, made, strict=True):
            out[r], tokens[0, r], positions[0, r] = [int(t)], t, 8
        first += len(rows)
        for _ in range(2):  # two steps of every row before the next wave
            session.feed(tokens, position=positions)
            tokens[0] = session.generate(1)[0, :, 0]
            positions += 1
            for r in out:
                out[r].append(int(tokens[0, r]))
    assert ran == [1, 2, 4]
    rows = [r for wave in waves for r in wave]
    assert [out[r] for r in rows] == [_alone(p.tolist(), len(out[r]))
                                      for r, p in zip(rows, prompts, strict=True)]  # fmt: skip


def test_prompts_admitted_at_once_split_across_row_counts_equal_each_alone(served8, monkeypatch):
    """An engine on the served generator (8 rows, prefills at 1, 2, 4 rows), a run's least
    cost set to 1 token so that three prompts of the prefill's length admitted at once run
    as prefills of 2 and 1 rows (not one of 4): each gets the tokens of its sequence alone."""
    from hlopipe.serve import Engine
    from hlopipe.serve import _scheduler as sched

    monkeypatch.setattr(sched, "RUN_TOKENS", 1)
    engine = Engine(served8[0].engine.gen)
    plans: list = []
    schedule = engine.scheduler.schedule
    engine.scheduler.schedule = lambda: plans.append(schedule()) or plans[-1]
    rng = np.random.default_rng(5)
    cases = [(rng.integers(0, CFG.vocab, 8).tolist(), 3) for _ in range(3)]
    requests = run_all(engine, cases)
    assert [p.rows for plan in plans for p in plan.prefills] == [(0, 1), (2,)]
    assert [r.seqs[0].tokens for r in requests] == [_alone(p, n) for p, n in cases]


def test_decode_steps_run_at_the_fewest_rows_holding_the_running_sequences(served8):
    """An engine on the served generator (8 rows; decode steps at its first 1, 2 and 4 rows
    too): one sequence alone, two more admitted beside it (asked for as its third token is
    made) that end while it goes on alone: 1, then 3, then 1 running. Each gets the tokens of
    its sequence run alone at batch 1. The decode steps run once the engine is warm, counted
    by the rows each computed, are 1 row a turn while one sequence runs and 4 while three do
    (rows 0 to 2), never 8; and nothing is compiled (jax's own compile events)."""
    from _engine_run import _COMPILE_EVENT

    from hlopipe.generate._steps import Home
    from hlopipe.serve import Engine, Request, Sequence

    gen = served8[0].engine.gen
    assert sorted(gen.narrow_steps) == [1, 2, 4]
    engine = Engine(gen)
    rng = np.random.default_rng(13)
    prompts = [rng.integers(0, CFG.vocab, 1).tolist() for _ in range(3)]
    done = threading.Semaphore(0)

    def emit_lone(i, token, finish):
        if i < 0:
            done.release()
        elif len(lone.seqs[0].tokens) == 3 and finish is None:  # its third: two more asked
            engine.submit(pair)

    lone = Request([Sequence(prompts[0], 24)], emit_lone)
    pair = Request([Sequence(prompts[1], 4), Sequence(prompts[2], 4)],
                   lambda i, t, f: i < 0 and done.release())  # fmt: skip
    ran: dict[int, int] = {1: 0, 2: 0, 4: 0, 8: 0}  # decode steps run, by the rows computed
    compiled: list[str] = []

    def listen(event: str, _secs: float, **kw) -> None:
        if event == _COMPILE_EVENT:
            compiled.append(str(kw.get("fun_name")))

    engine.start()
    try:
        assert engine.ready.wait(120) and engine.error is None
        fed = {gen.token.index: Home(*gen.first_feedback[gen.token.index])}  # where feed puts
        for rows, step in [(8, gen), *gen.narrow_steps.items()]:
            for prog in {id(p): p for p in step.step_programs(fed, 2)}.values():
                prog.run = _counted(prog.run, ran, rows)
        jax.monitoring.register_event_duration_secs_listener(listen)
        engine.submit(lone)
        assert done.acquire(timeout=120) and done.acquire(timeout=120)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
        engine.stop(60)
    got = [lone.seqs[0].tokens, *(s.tokens for s in pair.seqs)]
    assert got == [_alone(p, n) for p, n in zip(prompts, (24, 4, 4), strict=True)]
    assert ran == {1: 24 - 4, 2: 0, 4: 4, 8: 0}
    assert compiled == []


def _counted(run, ran, rows):
    def counted(*args, **kwargs):
        ran[rows] += 1
        return run(*args, **kwargs)

    return counted


@pytest.mark.parametrize("rows", [0, -2, True])
def test_max_batch_must_be_a_positive_integer(rows):
    from hlopipe.serve import build_server

    with pytest.raises(RuntimeConfigError, match="max_batch"):
        build_server(port=0, max_batch=rows)


def test_the_command_says_a_bad_max_batch_in_one_line(capsys):
    from hlopipe.cli import main

    assert main(["serve", "--port", "0", "--max-batch", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --max-batch 0 must be at least 1"]


def test_rows_are_followed_through_a_vmapped_cache_write():
    """``row_axes`` through the scatter a vmapped cache write becomes: the rows written whole
    at a position that does not depend on them stay on the vmapped axis; a position taken
    from the rows (a row written at a place of its own) loses them, named."""
    from hlopipe.stages import row_axes

    def write(cache, x, at):
        return jax.lax.dynamic_update_slice(cache, x[None, :], (at, 0))

    cache, x = jnp.zeros((8, 48, 4)), jnp.zeros((8, 4))
    fixed = jax.make_jaxpr(jax.vmap(lambda c, v: write(c, v, 3)))(cache, x)
    assert "scatter" in str(fixed)
    assert [r.axes for r in row_axes(fixed, 1, 0, [0])] == [{0}]
    placed = jax.make_jaxpr(jax.vmap(lambda c, v: write(c, v, v[0].astype(jnp.int32))))(cache, x)
    (lost,) = row_axes(placed, 1, 0, [0])
    assert lost.lost is not None and lost.lost.startswith("scatter")
