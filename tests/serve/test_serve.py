"""`hlopipe serve` with no files (the built-in tiny GPT in its default form: a position per
sequence, logits sampled on the last stage; 2 stages, 2 groups of 2 sequences: 4 slots),
started as a real process on a free port and driven with the `openai` client and raw HTTP. The
oracle is the tiny GPT's decode step run directly in JAX in a plain loop, one prompt at a
time: its argmax (greedy) and its logits (what sampling may pick)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import openai  # the test extra's
import pytest
from _engine_run import run_all
from _greedy_oracle import greedy_fed

from hlopipe.models import gpt_decode as gd
from hlopipe.serve._builtin import PREFILL_LEN

ROOT = Path(__file__).resolve().parents[2]
CFG = gd.DecodeConfig()


_STARTED: dict[str, float] = {}  # when the server was spawned, and its ready line read


@pytest.fixture(scope="module")
def server():
    _STARTED["spawn"] = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hlopipe",
            "serve",
            "--port",
            "0",
            "--groups",
            "2",
            "--served-model-name",
            "hlopipe-tiny-gpt",
            "--served-model-name",
            "m",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # one line, once every stage is compiled
    if not line.startswith("serving "):
        proc.kill()
        pytest.fail(f"no URL line: {line!r}{proc.stdout.read()}")
    _STARTED["ready"] = time.perf_counter()
    url = line.split(" at ")[1].strip()
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _client(url):
    return openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=60)


def greedy_like_the_oracle(client, cases, model="m", context=lambda: ""):
    """``cases`` (prompt, max_tokens) sent at once as greedy completions; each one's tokens and
    text are checked against :func:`oracle` on its prompt alone (``context()``: what a failure
    shows besides). Returns the responses, in order."""

    def ask(case):
        prompt, n = case
        return client.completions.create(
            model=model, prompt=prompt, max_tokens=n, temperature=0
        ).model_dump()

    with ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(ask, cases))
    for (prompt, n), r in zip(cases, got, strict=True):
        (choice,) = r["choices"]
        want = oracle(prompt, n)
        assert choice["token_ids"] == want, (prompt, context())
        assert choice["text"] == _text(want)
    return got


def _post(url, body, raw=False, path="/completions"):
    data = body if raw else json.dumps(body).encode()
    req = urllib.request.Request(f"{url}{path}", data=data, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


@functools.cache
def _params():
    return gd.init(jax.random.key(0), CFG)  # the built-in model's parameters (seed 0)


@functools.cache
def _step():
    return jax.jit(gd.decode_slots_fn(CFG))


def _logits(tokens):
    """The logits after each of ``tokens`` (``[len, vocab]``): the unsplit decode step in
    JAX, one sequence, a token a step at positions 0, 1, ..."""
    cache = gd.empty_cache(1, CFG)
    out = []
    for pos, tok in enumerate(tokens):
        feed = jnp.asarray([tok], jnp.int32)
        logits, cache = _step()(_params(), cache, feed, jnp.asarray([pos], jnp.int32))
        out.append(np.asarray(logits[0]))
    return np.stack(out)


@functools.cache
def _prefill():
    return jax.jit(gd.prefill_fn(CFG, logits=True))


def oracle(prompt, n):
    """Greedy tokens after ``prompt``: the unsplit decode step, the prompt fed a token a step
    (of the built-in prefill's length, 8: the unsplit prefill on it alone, its argmax first),
    then each argmax fed back."""
    cache = gd.empty_cache(1, CFG)
    out: list[int] = []
    start = 0
    if len(prompt) == PREFILL_LEN:
        logits, cache = _prefill()(_params(), jnp.asarray([prompt], jnp.int32))
        out, start = [int(jnp.argmax(logits[0]))], len(prompt)
    for pos in range(start, len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        logits, cache = _step()(
            _params(), cache, jnp.asarray([feed], jnp.int32), jnp.asarray([pos], jnp.int32)
        )
        if pos >= len(prompt) - 1:
            out.append(int(jnp.argmax(logits[0])))
    return out


def _text(ids):
    return "".join(f" {x}" for x in ids)


def _metrics(base):
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{base}/metrics") as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_health_models_metrics(server):
    _, url = server
    base = url.removesuffix("/v1")
    with urllib.request.urlopen(f"{base}/health") as r:
        assert r.status == 200
    ids = [m.id for m in _client(url).models.list().data]
    assert ids == ["hlopipe-tiny-gpt", "m"]
    before = _metrics(base)
    _client(url).completions.create(model="m", prompt=[4, 2], max_tokens=5, temperature=0)
    scraped = time.perf_counter()
    after = _metrics(base)
    done = time.perf_counter()

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert delta("hlopipe_requests_total", status="200") == 1
    assert delta("hlopipe_prompt_tokens_total") == 2
    assert delta("hlopipe_generated_tokens_total") == 5
    assert delta("hlopipe_time_to_first_token_seconds_count") == 1
    assert delta("hlopipe_inter_token_latency_seconds_count") == 4
    assert after[("hlopipe_queue_depth", ())] == 0
    # the prompt's first token prefilled (right-padded), its second read by a decode step
    # that makes the first token, then 4 more made: 5 steps of one group
    assert delta("hlopipe_group_steps") == 5
    assert delta("hlopipe_prefilled_sequences") == 1
    # each stage's busy fraction: its step's time x the group steps over the time since the
    # server was ready, which this test's own clock brackets (ready after it was spawned and
    # before its ready line was read)
    steps = after[("hlopipe_group_steps", ())]
    for s in (0, 1):
        step_s = after[("hlopipe_stage_step_seconds", (("stage", str(s)),))]
        busy = after[("hlopipe_stage_busy_fraction", (("stage", str(s)),))]
        low = min(1.0, step_s * steps / (done - _STARTED["spawn"]))
        high = min(1.0, step_s * steps / (scraped - _STARTED["ready"]))
        assert step_s > 0 and low <= busy <= high, (s, step_s, steps, busy, low, high)


def test_concurrent_greedy_requests_equal_the_unsplit_program(server):
    """Thirteen requests of prompt lengths 1 to 30 at once on 4 slots (2 groups of 2:
    sequences of different lengths share a group), five of the prefill's length (8: each goes
    through the prefill into its slot's cache row, beside a neighbour mid-generation or
    prefilled in the same run; one asks for its first token only), shorter ones (through the
    prefill right-padded, their last token fed to the decode step) and longer ones (their
    first 8 tokens through the prefill, the rest read by the decode step): each gets the
    tokens the unsplit program gives its prompt alone (the decode step fed the whole prompt a
    token a step), and every prompt of more than one token was prefilled."""
    _, url = server
    base = url.removesuffix("/v1")
    rng = np.random.default_rng(3)
    cases = [(rng.integers(0, CFG.vocab, L).tolist(), n)
             for L, n in ((3, 9), (8, 6), (8, 4), (5, 12), (1, 4), (8, 10), (12, 7), (8, 1),
                          (2, 3), (8, 5), (7, 6), (9, 6), (30, 5))]  # fmt: skip
    before = _metrics(base)[("hlopipe_prefilled_sequences", ())]
    got = greedy_like_the_oracle(_client(url), cases)
    prefilled = _metrics(base)[("hlopipe_prefilled_sequences", ())] - before
    assert prefilled == sum(len(p) > 1 for p, _ in cases)
    for (prompt, n), r in zip(cases, got, strict=True):
        assert r["choices"][0]["finish_reason"] == "length"
        usage = {k: r["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        assert usage == {"prompt_tokens": len(prompt), "completion_tokens": n,
                         "total_tokens": len(prompt) + n}  # fmt: skip


def test_groups_a_request_sent_mid_generation_finishes_first_and_greedy_is_said():
    """The token-returning form (one position a group: a group is the unit), in-process on 2
    groups of 1: a short request submitted when a long one makes its first token is admitted
    at once and finishes first (the submit happens on the engine's own thread, so the order is
    exact, not a race). Over HTTP, a request at the default temperature is served greedy and
    says so, and one asking for logprobs is a 400 that says why."""
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.generate import Generator, Sampling
    from hlopipe.serve import Engine, Model, Request, Sequence, builtin_model
    from hlopipe.serve._builtin import Form

    decode, _, params, _ = builtin_model(2, form=Form.TOKENS)
    gen = Generator(decode, params, groups=2)  # no prefill: one compile fewer
    engine = Engine(gen)
    order: list[tuple[str, int]] = []
    done = threading.Event()
    short = Request(
        [Sequence([5, 6, 7], 2)],
        lambda i, tok, fin: i < 0 and order.append(("short", engine.steps)),
    )

    def on_long(i, tok, finish):
        if i < 0:
            order.append(("long", engine.steps))
            done.set()
        elif not order and tok is not None and len(long.seqs[0].tokens) == 1:
            order.append(("submit", engine.steps))
            engine.submit(short)

    long = Request([Sequence([1, 2], 40)], on_long)

    # then a client that goes away after 3 tokens: its slot stops at once, and two requests
    # of different prompt lengths (a slot each) are served
    def on_gone(i, tok, finish):
        if tok is not None and len(gone.seqs[0].tokens) == 3:
            gone.cancelled = True
            engine.submit(after)

    gone = Request([Sequence([3], 30)], on_gone)
    after_done = threading.Event()
    after = Request(
        [Sequence([4], 2), Sequence([9, 9], 2)], lambda i, tok, fin: i < 0 and after_done.set()
    )
    with _in_thread(Model("m", engine)) as url:
        engine.start()
        try:
            engine.submit(long)
            assert done.wait(120)
            engine.submit(gone)
            assert after_done.wait(120)
            steps = engine.steps
            status, headers, body = _post(f"{url}/v1", {"prompt": "4 5 6", "max_tokens": 5,
                                                         "n": 2})  # fmt: skip
            no_logprobs = _post(f"{url}/v1", {"prompt": [4], "max_tokens": 2, "logprobs": 2})
            no_penalty = _post(f"{url}/v1", {"prompt": [4], "repetition_penalty": 1.2})
        finally:
            engine.stop(60)
    assert status == 200
    assert "greedy" in headers["x-hlopipe-warning"]
    # a step returning tokens has no probabilities: logprobs is a 400 saying so
    assert (
        no_logprobs[0] == 400 and "returns tokens" in json.loads(no_logprobs[2])["error"]["message"]
    )
    error = json.loads(no_penalty[2])["error"]  # nor logits to penalize
    assert no_penalty[0] == 400 and error["param"] == "repetition_penalty"
    assert "returns tokens" in error["message"]
    r = json.loads(body)
    assert r["system_fingerprint"] == "hlopipe-greedy"
    assert [c["token_ids"] for c in r["choices"]] == [oracle([4, 5, 6], 5)] * 2
    assert [k for k, _ in order] == ["submit", "short", "long"]
    assert short.seqs[0].tokens == oracle([5, 6, 7], 2)
    assert long.seqs[0].tokens == oracle([1, 2], 40)
    assert gone.seqs[0].tokens == oracle([3], 3)  # no token after the client left
    assert [s.tokens for s in after.seqs] == [oracle([4], 2), oracle([9, 9], 2)]
    assert steps < 40 + 3 + 3 + 5  # the long one's turns, then the others' few
    session = gen.start(tokens=np.zeros((2, 1), np.int32), position=0)
    with pytest.raises(RuntimeConfigError, match="one position for a whole group"):
        session.feed(np.zeros((2, 1), np.int32), position=np.zeros((2, 1), np.int32))
    with pytest.raises(RuntimeConfigError, match="returns tokens, not logits"):
        session.sampling(Sampling(*(np.zeros((2, 1)),) * 4))


def test_stream_joins_to_the_completion(server):
    _, url = server
    prompt, n = [9, 3, 33, 7], 11
    how = {"model": "m", "prompt": prompt, "max_tokens": n, "temperature": 0}
    whole = _client(url).completions.create(**how)
    chunks = list(_client(url).completions.create(**how, stream=True))
    sampled = _client(url).completions.create(**how | {"temperature": 1.2, "seed": 8})
    streamed = _client(url).completions.create(**how | {"temperature": 1.2, "seed": 8},
                                               stream=True)  # fmt: skip
    assert "".join(c.choices[0].text for c in streamed) == sampled.choices[0].text
    assert len(chunks) == n
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
    ids = [c.choices[0].model_dump()["token_ids"] for c in chunks]  # a token a chunk, as made
    assert ids == [[x] for x in oracle(prompt, n)]
    assert [c.choices[0].text for c in chunks] == [f" {x}" for (x,) in ids]
    assert whole.choices[0].text == _text(oracle(prompt, n))
    assert [c.choices[0].finish_reason for c in chunks] == [None] * (n - 1) + ["length"]
    status, headers, body = _post(
        url, {"prompt": prompt, "max_tokens": 3, "stream": True, "temperature": 0}
    )
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = [e for e in body.split("\n\n") if e]
    assert events[-1] == "data: [DONE]" and len(events) == 4


def test_a_request_sent_mid_generation_starts_in_a_freed_slot_of_a_busy_group():
    """In-process engine, one stage, one group of 2 sequences (2 slots). A long and a short request
        share the group; when the short one ends, a third one is submitted (on the engine's
        thread: exact) and takes the freed slot at once: its tokens are all made while the long
        one, in the same group, is still generating (a group as the unit would make it wait for
        the long one). Each equals the unsplit program on its prompt alone. Then a session of 2
    groups on the same stages: a sequence started again at position 0 by ``feed`` while the
    others go on."""
    from hlopipe.generate import Generator
    from hlopipe.serve import Engine, Request, Sequence, builtin_model

    decode, _, params, max_len = builtin_model(1)  # one stage: fewer compiles
    gen = Generator(decode, params, num_stages=1, groups=1, max_len=max_len)
    engine = Engine(gen)
    events: list[tuple[str, int]] = []  # (request, tokens the long one had made then)
    done = threading.Event()

    def made() -> int:
        return len(long.seqs[0].tokens)

    def on_long(i, tok, finish):
        if i < 0:
            events.append(("long done", made()))
            done.set()

    def on_short(i, tok, finish):
        if i < 0:
            events.append(("short done", made()))
            engine.submit(third)

    def on_third(i, tok, finish):
        if tok is not None and len(third.seqs[0].tokens) == 1:
            events.append(("third first", made()))
        if i < 0:
            events.append(("third done", made()))

    long = Request([Sequence([1, 2], 30)], on_long)
    short = Request([Sequence([7, 8, 9, 10], 3)], on_short)
    third = Request([Sequence([5], 4)], on_third)
    engine.start()
    try:
        engine.submit(long)
        engine.submit(short)
        assert done.wait(120)
    finally:
        engine.stop(60)
    names = [k for k, _ in events]
    assert names == ["short done", "third first", "third done", "long done"], events
    assert all(n < 30 for k, n in events if k.startswith("third"))
    assert long.seqs[0].tokens == oracle([1, 2], 30)
    assert short.seqs[0].tokens == oracle([7, 8, 9, 10], 3)
    assert third.seqs[0].tokens == oracle([5], 4)
    assert engine.steps <= 2 + 30  # the long one's steps: the others ran beside it

    # the same stages for 2 groups in one session: each group's sequences at their own
    # positions; one sequence started again while the other three carry on
    session = gen.with_groups(2).start(tokens=np.array([[1, 2], [3, 4]]), position=0)
    got = session.generate(3)
    assert [r.tolist() for r in got.reshape(4, 3)] == [oracle([t], 3) for t in (1, 2, 3, 4)]
    tokens, positions = got[:, :, -1].copy(), np.full((2, 2), 3)
    tokens[1, 0], positions[1, 0] = 7, 0
    session.feed(tokens, position=positions)
    more = session.generate(2).reshape(4, 2).tolist()
    assert more == [oracle([1], 5)[3:], oracle([2], 5)[3:], oracle([7], 2), oracle([4], 5)[3:]]


@pytest.mark.parametrize("form", ["slots", "tokens"])
def test_each_turn_issues_every_group_before_reading_any(monkeypatch, form):
    """In-process engine, one stage, 2 groups (of 2 slots; of 1 sequence for the token form):
    the real sessions' calls, recorded as the engine thread makes them, show that every turn
    issues each running group's step before it reads any (so the groups overlap on the
    stages), reads each group once, and that both groups ran in one turn; the tokens equal the
    unsplit program's."""
    from hlopipe.generate import Generator, Issued, Session
    from hlopipe.serve import Engine, builtin_model
    from hlopipe.serve._builtin import Form

    decode, _, params, max_len = builtin_model(1, form=Form(form))
    engine = Engine(Generator(decode, params, num_stages=1, groups=2, max_len=max_len))
    calls: list[tuple[int, str, int]] = []  # (turn, "issue" or "read", session)
    issue, read = Session.issue, Issued.read

    def issue_spy(session, n=1):
        if engine.ready.is_set():  # the turns, not the warm-up
            calls.append((engine.steps, "issue", id(session)))
        return issue(session, n)

    def read_spy(issued):
        if engine.ready.is_set():
            calls.append((engine.steps, "read", id(issued.session)))
        return read(issued)

    monkeypatch.setattr(Session, "issue", issue_spy)
    monkeypatch.setattr(Issued, "read", read_spy)
    prompts = [[1, 2], [3, 4], [5, 6], [7, 8]][: 2 * engine.batch]  # every slot of both groups
    requests = run_all(engine, [(p, 4) for p in prompts])
    assert [r.seqs[0].tokens for r in requests] == [oracle(p, 4) for p in prompts]
    turns: dict[int, list[tuple[str, int]]] = {}
    for turn, kind, session in calls:
        turns.setdefault(turn, []).append((kind, session))
    assert turns
    for turn, got in turns.items():
        issued = [s for kind, s in got if kind == "issue"]
        assert got == [("issue", s) for s in issued] + [("read", s) for s in issued], turn
    assert max(len(got) for got in turns.values()) == 4  # both groups in one turn


def _sampled(url, seed, max_tokens=10, **how):
    body = {"prompt": [9, 3, 33], "max_tokens": max_tokens, "seed": seed, **how}
    status, headers, text = _post(url, body)
    assert status == 200, text
    r = json.loads(text)
    assert r["system_fingerprint"] == "hlopipe-sampled"
    assert "x-hlopipe-warning" not in headers
    return [c["token_ids"] for c in r["choices"]]


def test_sampling_with_a_seed_repeats_and_differs_across_seeds(server):
    """At temperature 1.5, the same seed sent twice at once (two slots) gives the same tokens,
    other seeds others, and the n choices of a request differ; the default temperature (1)
    samples too."""
    _, url = server
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda seed: _sampled(url, seed, temperature=1.5), [5, 5, 6, 7]))
    assert runs[0] == runs[1]
    assert runs[2] != runs[0] and runs[3] != runs[0] and runs[2] != runs[3]
    assert _sampled(url, 5, temperature=1.5) == runs[0]  # alone, in whichever slot
    first, second = _sampled(url, 11, temperature=1.5, n=2)
    assert first != second
    greedy = oracle([9, 3, 33], 10)
    assert any(_sampled(url, s)[0] != greedy for s in (1, 2))  # temperature 1 by default


def test_top_k_and_top_p_cut_what_is_sampled(server):
    """top_k=1 and a top_p below 1/vocab are greedy at any temperature; with top_k=2 at
    temperature 2 every token is one of the two largest logits of the unsplit step after the
    prompt and the tokens before it, and not always the largest."""
    _, url = server
    greedy = oracle([9, 3, 33], 10)
    assert _sampled(url, 3, temperature=2, top_k=1) == [greedy]
    assert _sampled(url, 4, temperature=2, top_p=0.01) == [greedy]
    not_top = 0
    for seed in (1, 2, 3):
        (tokens,) = _sampled(url, seed, max_tokens=12, temperature=2, top_k=2)
        logits = _logits([9, 3, 33, *tokens[:-1]])[2:]  # the logits each token was drawn from
        top2 = np.argsort(-logits, axis=-1)[:, :2]
        assert all(t in row for t, row in zip(tokens, top2, strict=True)), (tokens, top2)
        not_top += sum(t != row[0] for t, row in zip(tokens, top2, strict=True))
    assert not_top > 0


def log_softmax_after(prompt, tokens):
    """``log_softmax`` of the unsplit step's logits each of ``tokens`` was chosen from (the
    prompt, then the tokens before it, fed a token a step), in float64: ``[len(tokens),
    vocab]``."""
    x = _logits([*prompt, *tokens[:-1]])[len(prompt) - 1 :].astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_best_of_returns_the_draws_most_likely_a_token(server):
    """``best_of`` 4 with ``n`` 2 on two prompts, sampled with a seed: each prompt's choices
    are, of the four draws the same request makes with ``n`` 4 (the same seeds), the two
    with the highest mean log-probability a token, computed here with ``log_softmax`` of the
    unsplit step's logits, best first; ``usage`` counts every draw. Streamed, below ``n``
    or above 16: a 400 naming it."""
    _, url = server
    client = _client(url)
    prompts = [[3, 9, 1], [7, 7]]
    how = {"model": "m", "prompt": prompts, "max_tokens": 5, "temperature": 1.8, "seed": 21}
    drawn = client.completions.create(**how, n=4).model_dump()["choices"]
    best = client.completions.create(**how, n=2, best_of=4).model_dump()
    for i, prompt in enumerate(prompts):
        draws = [c["token_ids"] for c in drawn[4 * i : 4 * i + 4]]
        assert len({tuple(d) for d in draws}) > 2, draws  # the choice means something
        means = [float(np.mean(log_softmax_after(prompt, d)[np.arange(5), d])) for d in draws]
        order = sorted(range(4), key=lambda k: -means[k])
        got = [c["token_ids"] for c in best["choices"][2 * i : 2 * i + 2]]
        assert got == [draws[order[0]], draws[order[1]]], (means, draws, got)
    assert [c["index"] for c in best["choices"]] == [0, 1, 2, 3]
    assert all(c["logprobs"] is None for c in best["choices"])  # made to rank, not asked for
    assert best["usage"]["completion_tokens"] == 2 * 4 * 5 and best["usage"]["prompt_tokens"] == 5
    for extra, says in (({"best_of": 4, "stream": True}, "cannot be streamed"),
                        ({"best_of": 1, "n": 2}, "between n"),
                        ({"best_of": 17}, "between n")):  # fmt: skip
        with pytest.raises(openai.BadRequestError, match=says) as e:
            client.completions.create(**how, extra_body=extra)
        assert e.value.param == "best_of"


def test_logprobs_equal_the_log_softmax_of_the_unsplit_steps_logits(server):
    """``logprobs: 3``, greedy and seeded (a prompt of the prefill's length too): each token's
    log-probability and the three largest (ids as text, largest first) equal ``log_softmax``
    of the unsplit step's logits; the stream's chunks carry the same, one token each."""
    _, url = server
    client = _client(url)
    cases = (([9, 3, 33], {"temperature": 0}),
             (list(range(1, PREFILL_LEN + 1)), {"temperature": 1.5, "seed": 7}))  # fmt: skip
    for prompt, how in cases:
        r = client.completions.create(model="m", prompt=prompt, max_tokens=6, logprobs=3, **how)
        choice = r.choices[0].model_dump()
        tokens, got = choice["token_ids"], choice["logprobs"]
        want = log_softmax_after(prompt, tokens)
        if how["temperature"] == 0:
            assert tokens == oracle(prompt, 6)
        else:  # drawn: not every token the argmax
            assert (np.argmax(want, axis=-1) != tokens).any()
        assert got["tokens"] == [f" {t}" for t in tokens]
        np.testing.assert_allclose(got["token_logprobs"], want[range(6), tokens], atol=1e-4)
        assert len(got["top_logprobs"]) == 6
        for row, top in zip(want, got["top_logprobs"], strict=True):
            ids = np.argsort(-row)[:3]
            assert list(top) == [f" {i}" for i in ids]
            np.testing.assert_allclose(list(top.values()), row[ids], atol=1e-4)
        assert got["text_offset"] == [sum(len(f" {t}") for t in tokens[:k]) for k in range(6)]
        chunks = list(client.completions.create(model="m", prompt=prompt, max_tokens=6,
                                                logprobs=3, stream=True, **how))  # fmt: skip
        joined: dict[str, list] = {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                                   "text_offset": []}  # fmt: skip
        for c in chunks:
            lp = c.choices[0].logprobs.model_dump()
            assert len(lp["tokens"]) == 1
            for key, values in joined.items():
                values += lp[key]
        assert joined == got


def penalized_greedy(prompt, n, presence=0.0, frequency=0.0, repetition=1.0):
    """Greedy tokens after ``prompt`` with the penalties applied in NumPy to the unsplit
    step's logits (fed a token a step): each logit of a token of the prompt or the output so
    far divided by ``repetition`` if positive, else multiplied (Hugging Face's), then
    ``presence * (count > 0) + frequency * count`` over the generated tokens subtracted
    (OpenAI's)."""
    cache, out = gd.empty_cache(1, CFG), []
    for pos in range(len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        logits, cache = _step()(_params(), cache, jnp.asarray([feed], jnp.int32),
                                jnp.asarray([pos], jnp.int32))  # fmt: skip
        if pos < len(prompt) - 1:
            continue
        x = np.asarray(logits[0], np.float64)
        counts = np.bincount(out, minlength=x.size).astype(np.float64)
        seen = np.zeros(x.size, bool)
        seen[[*prompt, *out]] = True
        x = np.where(seen, np.where(x > 0, x / repetition, x * repetition), x)
        out.append(int(np.argmax(x - presence * (counts > 0) - frequency * counts)))
    return out


def test_penalties_equal_numpy_on_the_unsplit_steps_logits(server):
    """presence, frequency and repetition penalties (a prompt of the prefill's length too,
    whose first token the prefill draws), greedy: the tokens equal the penalties applied in
    NumPy to the unsplit step's logits, and differ from the unpenalized ones."""
    _, url = server
    client = _client(url)
    short = [9, 3, 33]
    # of the prefill's length, the model's own greedy continuation: what it says next repeats
    whole = oracle(list(range(1, PREFILL_LEN + 1)), PREFILL_LEN)
    cases = ((short, {"frequency_penalty": 1.5}), (short, {"presence_penalty": 2.0}),
             (whole, {"repetition_penalty": 1.8}),
             (whole, {"presence_penalty": 0.5, "frequency_penalty": 0.5,
                      "repetition_penalty": 1.3}))  # fmt: skip
    for prompt, how in cases:
        r = client.completions.create(model="m", prompt=prompt, max_tokens=10, temperature=0,
                                      extra_body=how)  # fmt: skip
        tokens = r.choices[0].model_dump()["token_ids"]
        names = ("presence", "frequency", "repetition")
        args = {n: how[f"{n}_penalty"] for n in names if f"{n}_penalty" in how}
        assert tokens == penalized_greedy(prompt, 10, **args), how
        assert tokens != oracle(prompt, 10), how
    status, _, text = _post(url, {"prompt": short, "presence_penalty": 2.5})
    assert status == 400 and json.loads(text)["error"]["param"] == "presence_penalty"


def test_penalized_rows_admitted_at_different_turns_count_their_own_tokens(server):
    """Eight requests at once on 4 rows (2 groups of 2), seven penalized and one not, of
    different lengths: rows are refilled as sequences end, so later sequences are admitted
    into rows a penalized sequence held, beside rows mid-generation. The penalties' counts
    live on the device (set from a row's prompt at admission, the prefill's token counted
    when the prompt was read whole, then each step's token): every sequence's tokens equal
    the penalties applied in NumPy to the unsplit step's logits over its own tokens only."""
    _, url = server
    client = _client(url)
    whole = oracle(list(range(1, PREFILL_LEN + 1)), PREFILL_LEN)  # repeats itself
    cases = [(whole, 12, {"frequency_penalty": 1.5}), ([5], 9, {"presence_penalty": 1.0}),
             ([9, 3, 33], 4, {"frequency_penalty": 0.8, "repetition_penalty": 1.4}),
             (whole[::-1], 7, {"repetition_penalty": 1.8}), ([2, 4, 8], 10, {}),
             (whole, 11, {"presence_penalty": 0.5, "frequency_penalty": 0.5}),
             ([7, 7, 1, 60, 3], 8, {"frequency_penalty": 1.2}),
             # read whole by the prefill, whose token (53) comes back at the 7th
             ([54, 40, 32, 17, 19, 2, 4, 1], 8, {"frequency_penalty": 1.5})]  # fmt: skip

    def ask(case):
        prompt, n, how = case
        r = client.completions.create(model="m", prompt=prompt, max_tokens=n, temperature=0,
                                      extra_body=how)  # fmt: skip
        return r.choices[0].model_dump()["token_ids"]

    with ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(ask, cases))
    names = ("presence", "frequency", "repetition")
    for (prompt, n, how), tokens in zip(cases, got, strict=True):
        args = {k: how[f"{k}_penalty"] for k in names if f"{k}_penalty" in how}
        assert tokens == penalized_greedy(prompt, n, **args), how


def test_stop_string_ends_the_text_before_it(server):
    _, url = server
    want = oracle([2, 4, 8], 12)
    stop = f" {want[3]} "  # the text before the first " <4th token> " (a token, not a prefix)
    r = _client(url).completions.create(
        model="m", prompt=[2, 4, 8], max_tokens=12, stop=stop, temperature=0
    )
    full = _text(want) + " "
    assert r.choices[0].text == full[: full.index(stop)]
    assert r.choices[0].finish_reason == "stop"


BAD = [
    (b"{not json", None),
    (b"[1, 2]", None),
    ({"max_tokens": 3}, "prompt"),
    ({"prompt": [1] * 49, "max_tokens": 1}, "prompt"),  # longer than the cache (48)
    ({"prompt": [1, 2], "max_tokens": 48}, "max_tokens"),  # past the cache
    ({"prompt": [1, 2], "max_tokens": "8"}, "max_tokens"),  # a field of the wrong type
    ({"prompt": [1, 2], "stream": 1}, "stream"),
    ({"prompt": [1, 2], "colour": "red"}, "colour"),
    ({"prompt": [1, 64]}, "prompt"),  # outside the vocabulary
    ({"prompt": []}, "prompt"),
    ({"prompt": "once upon a time"}, "prompt"),  # text, and no tokenizer
    ({"prompt": [1], "n": 0}, "n"),
    ({"prompt": [1], "temperature": -1}, "temperature"),
    ({"prompt": [1], "top_k": -2}, "top_k"),
    ({"prompt": [1], "top_k": 1.5}, "top_k"),
]


def test_bad_requests_get_400_and_the_server_keeps_serving(server):
    proc, url = server
    for body, param in BAD:
        status, _, text = _post(url, body, raw=isinstance(body, bytes))
        assert status == 400, (body, text)
        err = json.loads(text)["error"]
        assert err["type"] == "invalid_request_error" and err["message"], body
        assert err["param"] == param, (body, err)
    with pytest.raises(openai.BadRequestError):
        _client(url).completions.create(model="m", prompt=[1] * 60, max_tokens=1)
    chat = {"messages": [{"role": "user", "content": "hello"}]}  # and no tokenizer: no template
    status, _, text = _post(url, chat, path="/chat/completions")
    assert status == 400 and "--chat-template FILE" in json.loads(text)["error"]["message"]
    assert proc.poll() is None
    r = _client(url).completions.create(model="m", prompt=[1, 2], max_tokens=3, temperature=0)
    assert r.choices[0].model_dump()["token_ids"] == oracle([1, 2], 3)


def _http(method, url, body=None, headers=None):
    """A raw request: its status, headers and body text (an error's too)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def _openai_error(text):
    """OpenAI's error body, checked to be exactly its four fields: the ``error``."""
    body = json.loads(text)
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def test_routes_models_and_request_ids_as_openai_answers_them(server):
    """``GET /v1/models/{id}`` (a served name's card; another name a 404 ``model_not_found``);
    a route not served a 404 and a method not allowed a 405, both in OpenAI's error body; an
    ``x-request-id`` sent is echoed on every answer (served, streamed, refused, not found)
    and none is made up when none is sent."""
    _, url = server
    base = url.removesuffix("/v1")
    client = _client(url)
    card = client.models.retrieve("m").model_dump()
    assert card["id"] == "m" and card["object"] == "model" and card["max_model_len"] == 48
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-4")
    assert (e.value.code, e.value.param) == ("model_not_found", "model")
    status, _, text = _http("POST", f"{url}/embeddings", {"input": "x"})
    err = _openai_error(text)
    assert status == 404 and err["type"] == "invalid_request_error"
    assert "POST /v1/embeddings" in err["message"] and err["code"] is None
    status, headers, text = _http("GET", f"{url}/completions")
    assert status == 405 and headers["allow"] == "POST"
    assert "GET /v1/completions" in _openai_error(text)["message"]
    ask = {"prompt": [2, 4], "max_tokens": 2, "temperature": 0}
    for path, body, want in (("/v1/completions", ask, 200),
                             ("/v1/completions", ask | {"stream": True}, 200),
                             ("/v1/completions", ask | {"colour": 1}, 400),
                             ("/v1/nowhere", ask, 404), ("/metrics", ask, 405)):  # fmt: skip
        rid = f"r-{want}-{len(body)}"
        status, headers, _ = _http("POST", f"{base}{path}", body, {"x-request-id": rid})
        assert (status, headers.get("x-request-id")) == (want, rid), path
    assert "x-request-id" not in _http("POST", f"{url}/completions", ask)[1]
    raw = client.completions.with_raw_response.create(
        model="m", prompt=[2, 4], max_tokens=2, temperature=0, extra_headers={"x-request-id": "7"}
    )
    assert raw.headers["x-request-id"] == "7"
    assert raw.parse().choices[0].model_dump()["token_ids"] == oracle([2, 4], 2)


def test_echo_best_of_response_format_and_prompt_lists_as_openai_clients_send_them(server):
    """Two prompts of token ids, ``n`` 2 with ``best_of`` 2, ``echo``, ``response_format``
    text, ``user`` and ``seed``: each choice (prompt-major, as OpenAI orders them) is its
    prompt's text then the oracle's greedy answer, and ``usage`` counts each prompt once and
    every answer's tokens; streamed with ``include_usage``, the prompt comes first, the chunks
    join to the same texts, every chunk but the last has ``usage: null`` and the last has
    the same usage. What would change the answer and is not implemented is a 400 naming
    the field."""
    _, url = server
    client = _client(url)
    prompts, n = [[2, 4, 8], [5, 1]], 4
    how = {"model": "m", "prompt": prompts, "max_tokens": n, "temperature": 0, "n": 2,
           "best_of": 2, "echo": True, "user": "ann", "seed": 5}  # fmt: skip
    extra = {"response_format": {"type": "text"}}
    r = client.completions.create(**how, extra_body=extra).model_dump()
    want = [oracle(p, n) for p in prompts for _ in range(2)]
    assert [c["index"] for c in r["choices"]] == [0, 1, 2, 3]
    assert [c["token_ids"] for c in r["choices"]] == want
    texts = [_text(prompts[k // 2]) + _text(w) for k, w in enumerate(want)]
    assert [c["text"] for c in r["choices"]] == texts
    usage = {"prompt_tokens": 5, "completion_tokens": 4 * n, "total_tokens": 5 + 4 * n}
    assert {k: r["usage"][k] for k in usage} == usage
    streamed = how | extra | {"stream": True, "stream_options": {"include_usage": True}}
    status, _, text = _post(url, streamed)
    events = [json.loads(e.removeprefix("data: ")) for e in text.split("\n\n")[:-2]]
    assert status == 200 and text.endswith("data: [DONE]\n\n")
    joined = ["", "", "", ""]
    for event in events[:-1]:
        assert "usage" in event and event["usage"] is None
        (choice,) = event["choices"]
        joined[choice["index"]] += choice["text"]
    assert joined == texts
    assert events[-1]["choices"] == [] and events[-1]["usage"] == usage
    # what LangChain's completions LLM sends by default: every no-op value accepted
    langchain = {"model": "m", "prompt": ["2 4 8"], "temperature": 0, "top_p": 1,
                 "frequency_penalty": 0, "presence_penalty": 0, "n": 1, "logit_bias": {},
                 "max_tokens": n, "seed": None, "logprobs": None, "best_of": 1, "stop": None,
                 "stream": False}  # fmt: skip
    status, _, text = _post(url, langchain)
    assert status == 200 and json.loads(text)["choices"][0]["token_ids"] == want[0]
    one = {"model": "m", "prompt": [2, 4], "max_tokens": 2}
    for body, param, says in (
        ({"echo": True, "logprobs": 1}, "echo", "prompt's log-probabilities"),
        ({"response_format": {"type": "json_object"}}, "response_format", "guided"),
        ({"response_format": {"type": "json_schema", "json_schema": {}}}, "response_format",
         "guided"),
        ({"response_format": {"type": "xml"}}, "response_format", '{"type": "text"}'),
        ({"max_completion_tokens": 2}, "max_completion_tokens", "unknown field"),
        ({"tool_choice": "none"}, "tool_choice", "unknown field"),  # chat's, not completions'
    ):  # fmt: skip
        with pytest.raises(openai.BadRequestError, match=says) as e:
            client.completions.create(**one, extra_body=body)
        assert e.value.param == param, body


@contextlib.contextmanager
def _in_thread(model):
    """``make_app(model)`` served by uvicorn in a thread on a free port: its base URL."""
    import socket

    import uvicorn

    from hlopipe.serve import make_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(make_app(model), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _stand_in_generator(session):
    """What the engine reads of a generator, each new session being ``session``: for the
    states a real one passes through too quickly to test (compiling, a failing step)."""
    token = types.SimpleNamespace(dtype="int32", shape=(1,))
    gen = types.SimpleNamespace(
        groups=1,
        batch=1,
        max_len=8,
        prefill=None,
        prefills=(),
        chunk=None,
        narrow={},
        token=token,
        per_sequence=False,
        logits_out=None,
        plans=(),
    )
    gen.with_groups = lambda g: types.SimpleNamespace(start=lambda *a, **k: session)
    return gen


def test_health_is_503_until_compiled():
    """An engine that has not compiled yet (never started): /health and completions answer
    503; once ready, /health answers 200."""
    from hlopipe.serve import Engine, Model

    engine = Engine(_stand_in_generator(None))
    with _in_thread(Model("m", engine)) as url:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{url}/health")
        assert e.value.code == 503
        assert _post(f"{url}/v1", {"prompt": [1], "max_tokens": 1})[0] == 503
        engine.ready.set()
        with urllib.request.urlopen(f"{url}/health") as r:
            assert r.status == 200


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_engine_that_fails_answers_500_and_leaves_no_request_waiting():
    """A decode step that raises after the warm-up (a bug): the request in flight, and every
    later one, get a 500 with OpenAI's error body (none hangs); /health answers 500."""
    from hlopipe.serve import Engine, Model

    class Failing:
        calls = 0

        def generate(self, n):
            return self.issue(n).read()

        def issue(self, n):
            Failing.calls += 1
            if Failing.calls > 2:  # the warm-up's two steps pass
                raise RuntimeError("a bug in a step")
            return types.SimpleNamespace(read=lambda: np.zeros((1, 1, n), np.int32))

        def feed(self, tokens):
            pass

    engine = Engine(_stand_in_generator(Failing()))
    with _in_thread(Model("m", engine)) as url:
        engine.start()
        assert engine.ready.wait(30)
        for body in ({"prompt": [1, 2], "max_tokens": 3}, {"prompt": [1], "max_tokens": 2}):
            status, _, text = _post(f"{url}/v1", body)
            assert status == 500
            assert "a bug in a step" in json.loads(text)["error"]["message"]
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{url}/health")
        assert e.value.code == 500


def test_the_docs_examples_run_as_written(server, tmp_path):
    """docs/serving.md's curl and openai examples, and the README's curl, against this
    server (its port for 8000); each answers the greedy tokens."""
    import re
    import shlex

    _, url = server
    hostport = url.removeprefix("http://").removesuffix("/v1")
    page = (ROOT / "docs" / "serving.md").read_text()
    (curl,) = re.findall(r"^```bash\n(curl -s \S+/v1/completions .*?)\n```", page, re.M | re.S)
    readme = (ROOT / "README.md").read_text()
    (readme_curl,) = re.findall(
        r"^(curl -s http://127.0.0.1:8000/v1/completions .*)$", readme, re.M
    )
    for command in (curl, readme_curl):
        argv = shlex.split(command.replace("127.0.0.1:8000", hostport))
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
        assert json.loads(out)["choices"][0]["token_ids"] == oracle([17, 4, 9], 8)
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    # the openai completions one (the chat ones: test_serve_chat.py; the chunk step's JAX
    # recipe: test_serve_chunk.py; the PyTorch one runs in scripts/fixtures/hf_export_chunk.py)
    (code,) = [b for b in blocks if "OpenAI(" in b and ".chat." not in b]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code.replace("127.0.0.1:8000", hostport)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, streamed = proc.stdout.splitlines()
    assert first == _text(oracle([17, 4, 9], 8)) + " 8"
    assert streamed == _text(oracle([1, 2, 3], 8))


def test_ctrl_c_stops_cleanly(server):
    """Last: Ctrl-C stops the server (exit 0) after a streamed request it was serving; its
    output has the startup summary and a line for each request (a 404 among them)."""
    proc, url = server
    client = _client(url)
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt=[3], max_tokens=2)
    stream = client.completions.create(model="m", prompt=[3], max_tokens=30, stream=True)
    first = next(iter(stream))
    proc.send_signal(signal.SIGINT)
    rest = list(stream)  # the request in flight is drained, not cut
    assert len(rest) + 1 == 30 and first.choices[0].text
    assert proc.wait(60) == 0
    out = proc.stdout.read()
    assert "stopped" in out
    # the startup summary (after the URL and end-ids lines), and a log line per request
    assert ("model hlopipe-tiny-gpt: 2 stages, 2 groups of 2, cache 48 positions, prefill 8 "
            "tokens (other lengths padded), step returns logits, sampled") in out  # fmt: skip
    assert re.search(
        r"cmpl-\w+ /v1/completions 200 model=m prompt_tokens=1 "
        r"completion_tokens=30 finish=length ttft_ms=[\d.]+ ",
        out,
    ), out[-2000:]
    assert re.search(r"/v1/completions 404 the model 'other' does not exist", out)


def test_prompts_of_any_length_through_prefills_of_two_lengths_equal_the_unsplit_program():
    """In-process engine, one stage, one group of 2 slots, the tiny GPT's prefill exported at
    4 and at 8 tokens (buckets): prompts of 1 to 30 tokens, two at a time. A prompt of a
    prefill's length goes through it; a shorter one through the shortest prefill holding all
    but its last token, right-padded; a longer one's first 8 tokens through the longer; the
    rest is read by the decode step. Each gets the tokens the unsplit decode step gives when
    fed the whole prompt a token a step (the oracle), and every prompt of more than one
    token was prefilled (the warm-up's check let padding on)."""
    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.serve import Engine, builtin_model

    decode, _, params, max_len = builtin_model(1)
    prefills = []
    for length in (8, 4):
        fn = jax.jit(gd.prefill_fn(CFG, logits=True))
        exported = jax.export.export(fn)(params, jnp.zeros((2, length), jnp.int32))
        prefills.append(load(exported.serialize()))
    gen = Generator(decode, params, prefill=prefills, num_stages=1, groups=1, max_len=max_len)
    engine = Engine(gen)
    rng = np.random.default_rng(5)
    lengths = (1, 3, 4, 5, 7, 8, 9, 16, 30)
    cases = [(rng.integers(0, CFG.vocab, L).tolist(), 5) for L in lengths]
    requests = run_all(engine, cases)
    assert engine.pads and engine.prefill_lens == (4, 8)
    assert [r.seqs[0].tokens for r in requests] == [_oracle_fed(p, n) for p, n in cases]
    assert engine.prefilled == sum(len(p) > 1 for p, _ in cases)


def _oracle_fed(prompt, n):
    """Greedy tokens after ``prompt``: the unsplit decode step fed the whole prompt a token a
    step (no prefill at all), then each argmax fed back."""
    return greedy_fed(CFG, _params(), prompt, n)
