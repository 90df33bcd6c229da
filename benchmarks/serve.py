"""`hlopipe serve` under load: N concurrent streaming clients (the `openai` client over real
HTTP) against the built-in tiny GPT (2 stages, `--groups` groups of 2 sequences, a slot per
sequence; with `--form tokens`, the token-returning step and its prefill, groups of 1, a group
the unit), and the same program driven in a plain loop (`Session.generate` of the same number
of groups, one process, no HTTP).

Run: ``python benchmarks/serve.py [--clients 1,4,8] [--requests 8] [--tokens 24]
[--groups 4] [--form slots|tokens] [--prompt-len 8]``, or ``--ttft`` for the time to first
token by prompt length (below). Each client sends ``--requests``
requests one after the other, prompts of 3 to 12 random ids (or of ``--prompt-len``: 8 is the
built-in prefill's length, so every prompt goes through the prefill into its slot's row),
``max_tokens`` ``--tokens``, greedy, streamed. Rows: throughput (generated tokens over the
wall time of the whole load), time to first token and inter-token latency p50/p99 as the
clients see them, and the server's own time per token (the engine's busy seconds from
``/metrics`` over the tokens it made). The plain loop row: tokens/s of
``Session.generate(tokens)`` from a token for ``--groups`` groups (compilation excluded).

``--ttft``: the tiny GPT with a cache of 256 positions (d_model 128, 4 layers, 2 stages) and
its prefill exported at 16 tokens (``--buckets 16,64,256``: at each of those lengths), served
in this process (the engine and app over HTTP on loopback, one group of 2 slots), one
client: the time to first token (streamed, the median of ``--repeats`` requests, greedy,
``max_tokens`` 1) by prompt length, with the server as it is (a prompt right-padded through
the shortest prefill holding it, a longer one's first tokens through the longest) and with
its padding turned off (only prompts of a prefill's length through it, every other read a
token a step: the server before), beside the unsplit prefill exported at that very length
run alone (jitted, one device, no HTTP): what "prefill speed" means for that prompt.

``--ttft --chunk C``: issue 49's prompt lengths (1, 15, 17, 64, 200) with a prefill of 16
tokens and a chunk step of ``C`` (``generate/_chunk.py``), the time to first token with the
chunk step and with it put aside (the rest of a prompt past the prefill read a token a step),
beside the unsplit prefill of that length alone, side by side in one run.

``--batch 8``: batching at serve time. The token-returning step and its prefill, exported at
batch 1, served three ways to the same load (``--clients`` streaming clients, prompts of 3 to
12): as before (``--groups`` = the largest client count groups of 1: each sequence a group,
every step reading all the weights for one token), and with ``--max-batch 8`` on one and on
two groups (the step vmapped over 8 rows: one step reads the weights once for 8 sequences).
Rows: tokens/s, TTFT and ITL p50, the server's ms per token, tokens/s over the batch-1 row's.
With ``--d-model D --layers L``, a wider tiny GPT (``d_ff`` 4D, cache 64, 2 stages) built in
this process instead, served by the engine and app over HTTP on loopback: a step that reads
more weights per token than the built-in's 156 kB.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# the token-returning form has no flag of its own: the library's serve() on its programs
_SERVE_TOKENS = """
import sys, jax
jax.config.update("jax_num_cpu_devices", 8)
from hlopipe.serve import serve
from hlopipe.serve._builtin import Form, builtin_model
decode, prefill, _, max_len = builtin_model(2, form=Form.TOKENS)
serve(decode, prefill=prefill, groups=int(sys.argv[1]), max_len=max_len, port=0)
"""


def _start(groups: int, form: str, max_batch: int | None = None) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "hlopipe", "serve", "--port", "0", "--groups", str(groups)]
    if max_batch is not None:  # the built-in's batch-1 token step, widened
        cmd += ["--max-batch", str(max_batch)]
    elif form == "tokens":
        cmd = [sys.executable, "-c", _SERVE_TOKENS, str(groups)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("serving "):
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split(" at ")[1].strip()


def _busy_and_tokens(url: str) -> tuple[float, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics") as r:
        text = r.read().decode()
    values = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    return values["hlopipe_engine_busy_seconds"], values["hlopipe_generated_tokens_total"]


def _load(
    url: str, clients: int, requests: int, tokens: int, prompt_len: int | None = None
) -> dict[str, float]:
    from openai import OpenAI

    client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
    model = client.models.list().data[0].id
    ttft: list[float] = []
    itl: list[float] = []
    made = [0]
    lock = threading.Lock()

    def one(k: int) -> None:
        rng = np.random.default_rng(k)
        for _ in range(requests):
            length = prompt_len or int(rng.integers(3, 13))
            prompt = rng.integers(0, 64, length).tolist()
            t0 = last = time.perf_counter()
            first, gaps, n = None, [], 0
            for _chunk in client.completions.create(
                model=model, prompt=prompt, max_tokens=tokens, temperature=0, stream=True
            ):
                now = time.perf_counter()
                if first is None:
                    first = now - t0
                else:
                    gaps.append(now - last)
                last, n = now, n + 1
            with lock:
                ttft.append(first or 0.0)
                itl.extend(gaps)
                made[0] += n

    busy0, tok0 = _busy_and_tokens(url)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(clients)))
    wall = time.perf_counter() - t0
    busy1, tok1 = _busy_and_tokens(url)
    return {
        "tokens_per_s": made[0] / wall,
        "ttft_p50": float(np.percentile(ttft, 50)),
        "ttft_p99": float(np.percentile(ttft, 99)),
        "itl_p50": float(np.percentile(itl, 50)),
        "itl_p99": float(np.percentile(itl, 99)),
        "server_per_token": (busy1 - busy0) / max(tok1 - tok0, 1),
    }


def _plain_loop(groups: int, tokens: int, form: str) -> float:
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from hlopipe.generate import Generator
    from hlopipe.serve import builtin_model
    from hlopipe.serve._builtin import Form

    decode, _, params, max_len = builtin_model(2, form=Form(form))
    gen = Generator(decode, params, groups=groups, max_len=max_len)
    first = np.random.default_rng(0).integers(0, 64, (groups, gen.batch))
    gen.start(tokens=first, position=0).generate(tokens)  # compiles
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        gen.start(tokens=first, position=0).generate(tokens)
        times.append(time.perf_counter() - t0)
    return groups * gen.batch * tokens / float(np.median(times))


@contextlib.contextmanager
def _served(gen: Any) -> Iterator[tuple[Any, str]]:
    """``gen`` behind the real app on a free loopback port, in this process: the engine and
    the API's URL; the engine drained and the server stopped on leaving."""
    import socket

    import uvicorn

    from hlopipe.serve import Engine, Model, make_app

    engine = Engine(gen)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(make_app(Model("m", engine)), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    engine.start()
    engine.ready.wait()
    while not server.started:
        time.sleep(0.05)
    try:
        yield engine, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        engine.stop(60)
        server.should_exit = True
        thread.join(10)
        sock.close()


TTFT_LENGTHS = (1, 8, 15, 16, 17, 32, 64, 128, 200)
CHUNK_LENGTHS = (1, 15, 17, 64, 200)  # issue 49's: a 16-token prefill and a chunk step


def _ttft_model(
    buckets: tuple[int, ...], chunk: int | None = None, d_model: int = 128, layers: int = 4
) -> tuple[Any, Any, Any]:
    """The ``--ttft`` model (``d_model`` wide, ``d_ff`` twice that, ``layers`` blocks, a
    cache of 256): its config, parameters and generator (2 stages, one group of 2 slots,
    prefills at ``buckets`` and, given ``chunk``, a chunk step of that many tokens)."""
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp

    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(max_len=256, d_model=d_model, d_ff=2 * d_model, n_layers=layers)
    params = gd.init(jax.random.key(0), cfg)
    b = 2
    step = jax.jit(gd.decode_slots_fn(cfg, stage_boundary, cuts=(2,)), donate_argnums=1)
    zeros = jnp.zeros(b, jnp.int32)
    decode = jax.export.export(step)(params, gd.empty_cache(b, cfg), zeros, zeros)
    pre = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=(2,), logits=True))
    prefills = [load(jax.export.export(pre)(params, jnp.zeros((b, P), jnp.int32)).serialize())
                for P in buckets]  # fmt: skip
    if chunk is not None:
        fn = jax.jit(gd.chunk_fn(cfg, stage_boundary, cuts=(2,), logits=True), donate_argnums=1)
        exported = jax.export.export(fn)(params, gd.empty_cache(b, cfg),
                                         jnp.zeros((b, chunk), jnp.int32),
                                         jnp.zeros((), jnp.int32))  # fmt: skip
        prefills.append(load(exported.serialize()))
    gen = Generator(load(decode.serialize()), params, prefill=prefills, num_stages=2, groups=1,
                    max_len=cfg.max_len)  # fmt: skip
    return cfg, params, gen


class _Probe:
    """What the ``--ttft`` tables measure against a served model: the time to first token
    (streamed, ``max_tokens`` 1, greedy, the median of ``repeats`` requests), a greedy answer
    against the unsplit decode step fed the whole prompt a token a step, and the unsplit
    prefill of a prompt's length alone (jitted, one device, no HTTP)."""

    def __init__(self, url: str, cfg: Any, params: Any, repeats: int) -> None:
        import jax
        from openai import OpenAI

        from hlopipe.models import gpt_decode as gd

        self.client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
        self.cfg, self.params, self.repeats = cfg, params, repeats
        self.rng = np.random.default_rng(0)
        self.step = jax.jit(gd.decode_slots_fn(cfg))

    def ttft(self, length: int) -> float:
        times = []
        for _ in range(self.repeats):
            prompt = self.rng.integers(0, self.cfg.vocab, length).tolist()
            t0 = time.perf_counter()
            stream = self.client.completions.create(model="m", prompt=prompt, max_tokens=1,
                                                    temperature=0, stream=True)  # fmt: skip
            next(iter(stream))
            times.append(time.perf_counter() - t0)
            with contextlib.suppress(StopIteration):
                list(stream)
        return float(np.median(times))

    def equal(self, length: int, n: int = 4) -> bool:
        import jax.numpy as jnp

        from hlopipe.models import gpt_decode as gd

        prompt = self.rng.integers(0, self.cfg.vocab, length).tolist()
        got = self.client.completions.create(model="m", prompt=prompt, max_tokens=n,
                                             temperature=0)  # fmt: skip
        cache, out = gd.empty_cache(1, self.cfg), []
        for pos in range(length + n - 1):
            feed = prompt[pos] if pos < length else out[-1]
            logits, cache = self.step(self.params, cache, jnp.asarray([feed], jnp.int32),
                                      jnp.asarray([pos], jnp.int32))  # fmt: skip
            if pos >= length - 1:
                out.append(int(jnp.argmax(logits[0])))
        return got.choices[0].model_dump()["token_ids"] == out

    def alone(self, length: int, batch: int = 1) -> float:
        import jax
        import jax.numpy as jnp

        from hlopipe.models import gpt_decode as gd

        fn = jax.jit(gd.prefill_fn(self.cfg, logits=True))
        shape = (batch, length)
        prompt = jnp.asarray(self.rng.integers(0, self.cfg.vocab, shape), jnp.int32)
        jax.block_until_ready(fn(self.params, prompt))
        times = []
        for _ in range(self.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(self.params, prompt))
            times.append(time.perf_counter() - t0)
        return float(np.median(times))


def _ttft_table(repeats: int, buckets: tuple[int, ...]) -> None:
    """The time to first token by prompt length (see the module's docstring)."""
    cfg, params, gen = _ttft_model(buckets)
    with _served(gen) as (engine, url):
        probe = _Probe(url, cfg, params, repeats)
        print(f"time to first token by prompt length: tiny GPT (d_model 128, 4 layers, cache 256), "
              f"2 stages, prefills of {', '.join(map(str, buckets))} tokens, one group of 2 slots, "
              f"one client, median of "
              f"{repeats}; padding agreed at warm-up: {engine.pads}")  # fmt: skip
        print("| prompt tokens | TTFT ms (padded / prefix prefilled) | TTFT ms (a token a step "
              "unless a prefill's length) | ratio | unsplit prefill of that length alone ms | "
              "TTFT / alone | 4 greedy tokens equal the decode step fed the prompt |")  # fmt: skip
        print("| ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
        probe.ttft(3)  # warm the client and the server's paths
        for length in TTFT_LENGTHS:
            engine.pads = True
            now = probe.ttft(length)
            engine.pads = False
            before = probe.ttft(length)
            engine.pads = True
            base = probe.alone(length)
            print(f"| {length} | {now * 1e3:.1f} | {before * 1e3:.1f} | {before / now:.1f}x | "
                  f"{base * 1e3:.2f} | {now / base:.1f}x | {probe.equal(length)} |")  # fmt: skip


def _chunk_table(repeats: int, chunk: int, d_model: int = 128, layers: int = 4) -> None:
    """``--ttft --chunk C``: the time to first token by prompt length with a 16-token prefill
    and a chunk step of ``C`` tokens, against the same server with its chunk step put aside
    (the prefix through the prefill, the rest a token a step) and the unsplit prefill of
    that length alone, measured side by side in one run."""
    cfg, params, gen = _ttft_model((16,), chunk, d_model, layers)
    assert gen.chunk is not None
    with _served(gen) as (engine, url):
        probe = _Probe(url, cfg, params, repeats)
        print(f"time to first token by prompt length: tiny GPT (d_model {d_model}, {layers} "
              f"layers, cache 256), 2 stages, a prefill of 16 tokens and a chunk step of "
              f"{chunk} (padding agreed: prefill {engine.pads}, chunk {gen.chunk.pads}), one "
              f"group of 2 slots, one client, median of {repeats}")  # fmt: skip
        print("| prompt tokens | TTFT ms (chunks) | TTFT ms (no chunk step: the rest a token a "
              "step) | ratio | unsplit prefill of that length alone ms, batch 1 | TTFT / alone "
              "| alone at the export's batch 2 ms | TTFT / that | 4 greedy tokens equal the "
              "decode step fed the prompt |")  # fmt: skip
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
        probe.ttft(3)
        probe.ttft(200)  # warm the chunk path
        kept = gen.chunk
        for length in CHUNK_LENGTHS:
            now = probe.ttft(length)
            gen.chunk = None  # the engine's routing only: what the server did before
            before = probe.ttft(length)
            gen.chunk = kept
            base, wide = probe.alone(length), probe.alone(length, gen.batch)
            print(f"| {length} | {now * 1e3:.1f} | {before * 1e3:.1f} | {before / now:.1f}x | "
                  f"{base * 1e3:.2f} | {now / base:.1f}x | {wide * 1e3:.2f} | {now / wide:.1f}x "
                  f"| {probe.equal(length)} |")  # fmt: skip


def _batch_table(batch: int, clients: list[int], requests: int, tokens: int) -> None:
    """Batching at serve time (see the module's docstring)."""
    top = max(clients)
    setups = [(f"batch 1: {top} groups of 1", top, None),
              (f"--max-batch {batch}, 1 group", 1, batch),
              (f"--max-batch {batch}, 2 groups", 2, batch)]  # fmt: skip
    print(f"hlopipe serve, built-in tiny GPT, token step and prefill exported at batch 1, 2 "
          f"stages; {requests} requests a client, prompts of 3 to 12, {tokens} tokens each, "
          "streamed, greedy")  # fmt: skip
    print("| served as | clients | tokens/s | TTFT p50 ms | ITL p50 ms | server ms/token | "
          "tokens/s / batch 1's |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    base: dict[int, float] = {}
    for name, groups, max_batch in setups:
        proc, url = _start(groups, "tokens", max_batch)
        try:
            _load(url, 1, 1, tokens)  # warm the client and the server's paths
            for c in clients:
                r = _load(url, c, requests, tokens)
                rate = r["tokens_per_s"]
                base.setdefault(c, rate)
                print(f"| {name} | {c} | {rate:.0f} | {r['ttft_p50'] * 1e3:.1f} | "
                      f"{r['itl_p50'] * 1e3:.1f} | {r['server_per_token'] * 1e3:.2f} | "
                      f"{rate / base[c]:.2f}x |", flush=True)  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(60)


def _batch_sized(
    batch: int, clients: list[int], requests: int, tokens: int, d_model: int, layers: int
) -> None:
    """Batching at serve time on a wider tiny GPT built here (see the module's docstring)."""

    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp

    from hlopipe.generate import Generator, widen
    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(max_len=64, d_model=d_model, d_ff=4 * d_model, n_layers=layers)
    params = gd.init(jax.random.key(0), cfg)
    cuts = (layers // 2,)
    step = jax.jit(gd.decode_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
    decode = jax.export.export(step)(params, gd.empty_cache(1, cfg), jnp.zeros(1, jnp.int32),
                                     jnp.int32(0))  # fmt: skip
    pre = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts))
    prefill = jax.export.export(pre)(params, jnp.zeros((1, 8), jnp.int32))
    decode, prefill = load(decode.serialize()), load(prefill.serialize())
    weights = sum(x.nbytes for x in jax.tree.leaves(params))
    top = max(clients)
    wide = widen(decode, (prefill,), batch)
    setups = [
        (f"batch 1: {top} groups of 1", decode, prefill, top),
        (f"--max-batch {batch}, 1 group", wide.decode, wide.prefills[0], 1),
        (f"--max-batch {batch}, 2 groups", wide.decode, wide.prefills[0], 2),
    ]
    print(f"tiny GPT d_model {d_model}, {layers} layers ({weights / 2**20:.1f} MiB of weights), "
          f"token step and prefill exported at batch 1, 2 stages, in-process engine over "
          f"HTTP; {requests} requests a client, prompts of 3 to 12, {tokens} tokens each, "
          "streamed, greedy")  # fmt: skip
    print("| served as | clients | tokens/s | TTFT p50 ms | ITL p50 ms | server ms/token | "
          "tokens/s / batch 1's |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    base: dict[int, float] = {}
    for name, dec, pref, groups in setups:
        gen = Generator(dec, params, prefill=pref, groups=groups, max_len=cfg.max_len)
        with _served(gen) as (_, url):
            _load(url, 1, 1, tokens)  # warm the client and the server's paths
            for c in clients:
                r = _load(url, c, requests, tokens)
                rate = r["tokens_per_s"]
                base.setdefault(c, rate)
                print(f"| {name} | {c} | {rate:.0f} | {r['ttft_p50'] * 1e3:.1f} | "
                      f"{r['itl_p50'] * 1e3:.1f} | {r['server_per_token'] * 1e3:.2f} | "
                      f"{rate / base[c]:.2f}x |", flush=True)  # fmt: skip
    # the step alone, one device, no pipeline: batch 1, the widened step, a native export
    one = jax.jit(gd.decode_fn(cfg))
    widened = jax.jit(wide.decode.as_function())
    native = jax.jit(gd.decode_slots_fn(cfg))
    pos = jnp.full(batch, 3, jnp.int32)
    rows = jax.tree.map(lambda x: x[None].repeat(batch, 0), gd.empty_cache(1, cfg))
    alone = [("batch 1 (decode_fn)", one, (gd.empty_cache(1, cfg), jnp.zeros(1, jnp.int32),
                                           jnp.int32(3))),
             (f"widened to {batch}", widened, (rows, jnp.zeros(batch, jnp.int32), pos)),
             (f"exported at {batch} (decode_slots_fn)", native,
              (gd.empty_cache(batch, cfg), jnp.zeros(batch, jnp.int32), pos))]  # fmt: skip
    for name, fn, args in alone:
        jax.block_until_ready(fn(params, *args))
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(params, *args))
            times.append(time.perf_counter() - t0)
        print(f"the step alone, {name}: {np.median(times) * 1e3:.1f} ms (median of 20)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="1,4,8")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--form", choices=("slots", "tokens"), default="slots")
    ap.add_argument("--prompt-len", type=int, default=None, help="every prompt this long "
                    "(default: 3 to 12 tokens)")  # fmt: skip
    ap.add_argument("--ttft", action="store_true", help="the time to first token by prompt "
                    "length instead (a 16-token prefill)")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--buckets", default="16", help="--ttft: the prefills' prompt lengths")
    ap.add_argument("--chunk", type=int, default=None, help="--ttft: a 16-token prefill and a "
                    "chunk step of this many tokens (issue 49's lengths)")  # fmt: skip
    ap.add_argument("--batch", type=int, default=None, help="batching at serve time: a batch-1 "
                    "export served at this --max-batch beside the server at batch 1")  # fmt: skip
    ap.add_argument("--d-model", type=int, default=None, help="--batch (--ttft --chunk): a tiny "
                    "GPT this wide built here (default: the built-in, served by the command; "
                    "128)")  # fmt: skip
    ap.add_argument("--layers", type=int, default=4, help="--batch --d-model: its layers")
    args = ap.parse_args()
    if args.batch and args.d_model:
        clients = [int(x) for x in args.clients.split(",")]
        _batch_sized(args.batch, clients, args.requests, args.tokens, args.d_model, args.layers)
        return
    if args.batch:
        clients = [int(x) for x in args.clients.split(",")]
        _batch_table(args.batch, clients, args.requests, args.tokens)
        return
    if args.ttft and args.chunk:
        _chunk_table(args.repeats, args.chunk, args.d_model or 128, args.layers)
        return
    if args.ttft:
        _ttft_table(args.repeats, tuple(int(x) for x in args.buckets.split(",")))
        return
    proc, url = _start(args.groups, args.form)
    how = {"slots": "of 2", "tokens": "of 1"}
    served = {"slots": "a slot per sequence", "tokens": "tokens returned, with a prefill"}
    try:
        _load(url, 1, 1, args.tokens)  # warm the client and the server's paths
        prompts = f"prompts of {args.prompt_len}" if args.prompt_len else "prompts of 3 to 12"
        print(f"hlopipe serve, built-in tiny GPT, 2 stages, {args.groups} groups "
              f"{how[args.form]} ({served[args.form]}); {args.requests} requests a client, "
              f"{prompts}, {args.tokens} tokens each, streamed")  # fmt: skip
        print("| clients | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | "
              "server ms/token |")  # fmt: skip
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c in (int(x) for x in args.clients.split(",")):
            r = _load(url, c, args.requests, args.tokens, args.prompt_len)
            print(f"| {c} | {r['tokens_per_s']:.0f} | {r['ttft_p50'] * 1e3:.1f} | "
                  f"{r['ttft_p99'] * 1e3:.1f} | {r['itl_p50'] * 1e3:.1f} | "
                  f"{r['itl_p99'] * 1e3:.1f} | {r['server_per_token'] * 1e3:.2f} |")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(60)
    rate = _plain_loop(args.groups, args.tokens, args.form)
    print(f"plain loop (Session.generate, {args.groups} groups {how[args.form]} from a token, "
          f"greedy, no HTTP): {rate:.0f} tokens/s")  # fmt: skip


if __name__ == "__main__":
    main()
