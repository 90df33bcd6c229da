"""A decode step returning logits served with its prefill (which returns logits too), and a
streaming client that disconnects mid-generation.

The model is the tiny GPT (``hlopipe.models.gpt_decode``) with a long cache (so that a request
of many tokens takes many steps), one position a group, 2 stages, exported with
``jax.export`` and loaded: ``decode -> (logits [b, vocab], cache)`` and ``prefill -> (logits
[b, vocab], cache)``. The oracle is the unsplit prefill and decode step run directly in JAX in
a plain loop (greedy: each argmax fed back), and ``jax.random.categorical`` with the key the
docs name (the seed folded with the position) for a sampled first token."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
import urllib.request

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe.errors import RuntimeConfigError
from hlopipe.models import gpt_decode as gd

# two layers (a stage each); a long cache: a request of many tokens takes many steps
CFG = gd.DecodeConfig(n_layers=2, max_len=1024)
B, P = 2, 4  # sequences per group; the prefill's prompt length


@functools.cache
def _params():
    return gd.init(jax.random.key(3), CFG)


@functools.cache
def _unsplit():
    """The unsplit programs, jitted directly (no stage markers)."""
    return jax.jit(gd.prefill_fn(CFG, logits=True)), jax.jit(gd.decode_fn(CFG, logits=True))


def oracle(prompt, n):
    """Greedy tokens after ``prompt`` (of the prefill's length): the unsplit prefill, then
    the decode step with each argmax fed back."""
    prefill, decode = _unsplit()
    logits, cache = prefill(_params(), jnp.asarray([prompt] * B, jnp.int32))
    out = [int(jnp.argmax(logits[0]))]
    for t in range(n - 1):
        feed = jnp.asarray([out[-1]] * B, jnp.int32)
        logits, cache = decode(_params(), cache, feed, jnp.int32(len(prompt) + t))
        out.append(int(jnp.argmax(logits[0])))
    return out


@pytest.fixture(scope="module")
def gen():
    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.marker import stage_boundary

    params = _params()
    cache, tokens = gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32)
    decode = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=(1,), logits=True), donate_argnums=1)
    prefill = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=(1,), logits=True))
    exported = jax.export.export(decode)(params, cache, tokens, jnp.int32(0))
    pre = jax.export.export(prefill)(params, jnp.zeros((B, P), jnp.int32))
    return Generator(load(exported.serialize()), params, prefill=load(pre.serialize()))


def test_generator_samples_the_first_token_from_the_prefills_logits(gen):
    """Greedy: the tokens equal the unsplit prefill + decode loop. Sampled: a seed repeats,
    and the first token is the draw from the prefill's logits with the sequence's seed folded
    with the prompt's last position (as each decode step's token is drawn)."""
    from hlopipe.generate import Sampling

    prompts = np.array([[[5, 17, 2, 40], [9, 9, 33, 1]]])
    got = gen.start(prompts).generate(5)
    assert [row.tolist() for row in got[0]] == [oracle(list(p), 5) for p in prompts[0]]
    seeds = np.array([[11, 12]], np.uint32)
    how = Sampling(seeds, np.full((1, B), 2.0, np.float32), np.ones((1, B), np.float32),
                   np.zeros((1, B), np.int32))  # fmt: skip
    a = gen.start(prompts, sampling=how).generate(5)
    b = gen.start(prompts, sampling=how).generate(5)
    np.testing.assert_array_equal(a, b)
    logits, _ = _unsplit()[0](_params(), jnp.asarray(prompts[0]))

    @jax.jit  # one compile
    def draw(seed, row):
        return jax.random.categorical(jax.random.fold_in(jax.random.key(seed), P - 1), row / 2.0)

    assert a[0, :, 0].tolist() == [int(draw(seeds[0, k], logits[k])) for k in range(B)]
    assert (a[0, :, 0] != got[0, :, 0]).any()  # a draw, not the argmax


@pytest.fixture(scope="module")
def served(gen):
    """The generator served over HTTP in this process (one group of 2: one slot)."""
    import uvicorn

    from hlopipe.serve import Engine, Model, make_app

    engine = Engine(gen)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(make_app(Model("m", engine)), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    engine.start()
    thread.start()
    try:
        assert engine.ready.wait(300)
        _until(lambda: server.started, "the HTTP server started")
        yield engine, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        engine.stop(60)
        sock.close()


def _until(ok, what, timeout=60.0):
    """Poll ``ok()`` until true (bounded: a failure names ``what``)."""
    end = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > end:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.01)


def _post(url, body):
    req = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def _metrics(url):
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{url}/metrics") as r:
        text = r.read().decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if not s.labels}  # fmt: skip


def test_served_greedy_and_seeded_requests_through_the_prefill(served):
    """Prompts of the prefill's length (through it) and of another (read by the decode step):
    greedy equals the unsplit programs; a seeded request sampled at temperature 1.5 repeats."""
    _, url = served
    prompt = [7, 3, 60, 21]
    r = _post(url, {"prompt": [prompt, [4, 4, 8]], "max_tokens": 6, "temperature": 0})
    assert r["system_fingerprint"] == "hlopipe-sampled"
    assert r["choices"][0]["token_ids"] == oracle(prompt, 6)
    sampled = {"prompt": prompt, "max_tokens": 6, "temperature": 1.5, "seed": 5, "n": 2}
    first, again = _post(url, sampled), _post(url, sampled)
    ids = [c["token_ids"] for c in first["choices"]]
    assert ids == [c["token_ids"] for c in again["choices"]]
    assert oracle(prompt, 6) not in ids
    assert any(i[0] != ids[0][0] for i in ids[1:]) or ids[0][0] != oracle(prompt, 1)[0]


def test_logprobs_one_position_a_group(served):
    """One position a group, a prompt of the prefill's length (read by the decode step when
    logprobs are asked for: the prefill gives none): greedy tokens and their log-probabilities
    equal the unsplit decode step fed the prompt, then each token, a token a step."""
    _, url = served
    prompt = [7, 3, 60, 21]
    r = _post(url, {"prompt": prompt, "max_tokens": 4, "temperature": 0, "logprobs": 2})
    choice = r["choices"][0]
    assert choice["token_ids"] == oracle(prompt, 4)
    decode, cache, rows = _unsplit()[1], gd.empty_cache(B, CFG), []
    for pos, tok in enumerate(prompt + choice["token_ids"][:-1]):
        logits, cache = decode(_params(), cache, jnp.asarray([tok] * B, jnp.int32), jnp.int32(pos))
        rows.append(np.asarray(jax.nn.log_softmax(logits[0].astype(jnp.float32))))
    want = np.stack(rows[len(prompt) - 1 :])
    got = choice["logprobs"]
    np.testing.assert_allclose(got["token_logprobs"], want[range(4), choice["token_ids"]],
                               atol=1e-4)  # fmt: skip
    for row, top in zip(want, got["top_logprobs"], strict=True):
        ids = np.argsort(-row)[:2]
        assert list(top) == [f" {i}" for i in ids]
        np.testing.assert_allclose(list(top.values()), row[ids], atol=1e-4)


def test_penalties_one_position_a_group_through_the_prefill(served):
    """One position a group, a prompt of the prefill's length (its first token drawn from the
    prefill's logits): greedy with a frequency and a repetition penalty equals the unsplit
    prefill and decode step with the penalties applied to their logits in NumPy (OpenAI's
    subtraction over the generated tokens' counts, Hugging Face's division or multiplication
    over the prompt's and output's tokens). The counts of the tokens made so far are kept
    on the device, each counted as it is made: both prompts' tokens differ from the same
    penalties over the prompt alone (no token counted)."""
    _, url = served
    frequency, repetition = 1.0, 1.5
    for prompt, n in (([7, 3, 60, 21], 10), ([30, 32, 48, 60], 8)):
        how = {"frequency_penalty": frequency, "repetition_penalty": repetition}
        r = _post(url, {"prompt": prompt, "max_tokens": n, "temperature": 0, **how})
        prefill, decode = _unsplit()
        logits, cache = prefill(_params(), jnp.asarray([prompt] * B, jnp.int32))
        out: list[int] = []
        for t in range(n):
            if t:
                feed = jnp.asarray([out[-1]] * B, jnp.int32)
                logits, cache = decode(_params(), cache, feed, jnp.int32(len(prompt) + t - 1))
            x = np.asarray(logits[0], np.float64)
            seen = np.zeros(x.size, bool)
            seen[[*prompt, *out]] = True
            x = np.where(seen, np.where(x > 0, x / repetition, x * repetition), x)
            out.append(int(np.argmax(x - frequency * np.bincount(out, minlength=x.size))))
        assert r["choices"][0]["token_ids"] == out
        assert out != oracle(prompt, n)


def test_a_streaming_client_that_disconnects_frees_its_slot(served):
    """One slot (a group of 2). A streaming request of 1000 tokens holds it; a second request
    waits in the queue. The first client reads one chunk and closes its connection: the
    engine stops its sequence, the waiting request takes the slot and completes, and far
    fewer decode steps were run than the first request asked for."""
    engine, url = served
    host, port = url.removeprefix("http://").split(":")
    base = _metrics(url)["hlopipe_engine_steps"]
    body = json.dumps({"prompt": [1, 2, 3, 4], "max_tokens": 1000, "stream": True,
                       "temperature": 0}).encode()  # fmt: skip
    conn = socket.create_connection((host, int(port)), timeout=60)
    conn.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
    got = b""
    while b"data: " not in got:  # the first chunk: the sequence holds the slot
        got += conn.recv(4096)
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(__import__("concurrent.futures").futures.ThreadPoolExecutor(1))
        waiting = pool.submit(_post, url, {"prompt": [8, 6, 4, 2], "max_tokens": 3,
                                           "temperature": 0})  # fmt: skip
        _until(lambda: engine.queue_depth() == 1, "the second request queued")
        conn.close()  # the client goes away mid-stream
        r = waiting.result(timeout=120)
    assert r["choices"][0]["token_ids"] == oracle([8, 6, 4, 2], 3)
    after = _metrics(url)
    assert after["hlopipe_running_sequences"] == 0 and after["hlopipe_queue_depth"] == 0
    steps = after["hlopipe_engine_steps"] - base
    print(f"{steps} steps")
    assert steps < 250  # of the 1000 the first one asked for


def test_a_prefill_with_every_positions_logits_is_sampled_at_the_last(gen):
    """A prefill returning ``[b, length, vocab]``: that output is taken as its logits (the
    rest its state, in order), and the sampler draws from the last position's (greedy: their
    argmax, computed here with numpy)."""
    from hlopipe.generate import Sampling, sample
    from hlopipe.generate._plan import prefill_outputs

    state = [jax.ShapeDtypeStruct(r.shape, r.dtype) for r in gen.roles.state]
    every = jax.ShapeDtypeStruct((B, P, CFG.vocab), jnp.float32)
    fake = type("Prefill", (), {"out_avals": [*state[:1], every, *state[1:]]})
    out, state_of = prefill_outputs(fake, gen.roles, gen.token.index)
    assert out == 1 and sorted(state_of.values()) == sorted(r.index for r in gen.roles.state)
    logits = np.random.default_rng(0).normal(size=(B, P, CFG.vocab)).astype(np.float32)
    greedy = Sampling.greedy(B)
    got = jax.jit(sample)(jnp.asarray(logits), jnp.int32(P - 1), *greedy)  # one compile
    np.testing.assert_array_equal(got, logits[:, -1].argmax(-1))
    wrong = jax.ShapeDtypeStruct((B, CFG.vocab + 1), jnp.float32)  # not the step's vocabulary
    fake.out_avals = [wrong, *state]
    with pytest.raises(RuntimeConfigError, match=r"nor logits \(float \[b, 64\]"):
        prefill_outputs(fake, gen.roles, gen.token.index)
