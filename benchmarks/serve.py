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
beside the unsplit prefill of that length alone, side by side in one run. With
``--max-batch N`` (``--busy K``): the programs exported at batch 1 and served at ``N`` rows,
as users serve them, ``K`` other clients generating all the while, against the prefill of that
length alone at batch 1.

``--batch 8``: batching at serve time. The token-returning step and its prefill, exported at
batch 1, served three ways to the same load (``--clients`` streaming clients, prompts of 3 to
12): as before (``--groups`` = the largest client count groups of 1: each sequence a group,
every step reading all the weights for one token), and with ``--max-batch 8`` on one and on
two groups (the step vmapped over 8 rows: one step reads the weights once for 8 sequences).
Rows: tokens/s, TTFT and ITL p50, the server's ms per token, tokens/s over the batch-1 row's.
With ``--d-model D --layers L``, a wider tiny GPT (``d_ff`` 4D, cache 64, 2 stages) built in
this process instead, served by the engine and app over HTTP on loopback: a step that reads
more weights per token than the built-in's 156 kB.

``--move``: a sequence left alone in a high row. ``--clients``' last count (8) of streaming
clients at once on a ``--d-model`` GPT (768 wide, ``--layers`` 4, 2 stages) exported at batch
1 and served at ``--batch`` rows (8) in one group, prompts of 8 tokens, greedy: every client
asks for ``--tokens`` but the last, admitted last (the top row), for 10 times as many, so that
it runs on alone once the others end. The engine moving it down to row 0 (``Move``) against
it left in its row (the scheduler's ``moves`` off), ``--rounds`` rounds alternated: the long
one's ITL and tokens/s, all tokens/s, and the decode steps by the rows each computed.

``--llama``: a model of real size. A Llama (d 768, 12 layers, 12 heads over 4 K/V heads, MLP
2048, vocabulary 32000, an untied head: about 125M parameters, float32, random weights;
``hlopipe.models.llama_decode``) is built here, its token-returning decode step (a position
argument) and prefills exported at batch 1 into files with its parameters (.npz), and those
files served by ``hlopipe serve --stages 2 --groups 1 --max-batch N`` in a process of its own
for each N of ``--max-batches`` (8,16), to 1, 4, 8 and 16 streaming clients, prompts of mixed
lengths (log-uniform), greedy. Rows: tokens/s, TTFT and ITL p50/p99, the server's ms a token,
and the server process's resident memory (``VmRSS``, peak ``VmHWM``, from
``/proc/<pid>/status``) against the parameters plus the caches of N rows, and that less the same
server's on a Llama of a megabyte (the runtime's own); then N clients with 1-token prompts (no
prefill: the decode-bound rate). Then, side by side on the same files, alternated ``--repeats``
times (medians; the server idle while a loop runs, the load average printed): the server at 8
clients; the plain loop of the same workload (the same 8 prompts in ``Session`` calls, one
process, no HTTP, no scheduler: ``_plain_workload``: a batch's prompts of one bucket prefilled
together by ``prefill_rows`` through the same prefills, at the fewest rows holding them, the
last prompt token of each fed at its position, then the same number of tokens by ``generate``,
its prefills in its time); the plain loop of the decode steps alone (``Session.generate`` at N
rows from a token at position 0, no prefill), with the generator's host time per action
(``GenerateMetrics.host_per_action_s``) against its time per step. The default run is quick (8
tokens a request, prompts of 16 to 64, prefills of 16 and 64 tokens); ``--full``: 96 tokens,
prompts of 16 to 512, prefills of 16, 64, 128 and 512 tokens; one request a client.
``--files DIR`` keeps the exported files for a later run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hlopipe.models.llama_decode import LlamaShape

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


def _spawn(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Start a server command and wait for its ``serving ... at URL`` line: the process and
    its URL."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("serving "):
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split(" at ")[1].strip()


def _start(groups: int, form: str, max_batch: int | None = None) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "hlopipe", "serve", "--port", "0", "--groups", str(groups)]
    if max_batch is not None:  # the built-in's batch-1 token step, widened
        cmd += ["--max-batch", str(max_batch)]
    elif form == "tokens":
        cmd = [sys.executable, "-c", _SERVE_TOKENS, str(groups)]
    return _spawn(cmd, env)


# ``--batch N --host``: the built-in token step widened to N, one group, as ``hlopipe serve
# --max-batch N`` builds it, with the engine thread's OS thread id told on stdout
_SERVE_HOST = """
import sys, threading, time, jax
jax.config.update("jax_num_cpu_devices", 8)
from hlopipe.serve import build_server

def tell():
    while True:
        for t in threading.enumerate():
            if t.name == "hlopipe-engine":
                print("engine thread", t.native_id, flush=True)
                return
        time.sleep(0.01)

threading.Thread(target=tell, daemon=True).start()
build_server(groups=1, max_batch=int(sys.argv[1]), port=0).run()
"""


def _cpu_s(pid: int, tid: int) -> float:
    """Thread ``tid`` of process ``pid``'s CPU time so far, in seconds (the kernel's
    ``schedstat``: nanoseconds on the CPU)."""
    return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9


def _engine_steps(url: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics") as r:
        text = r.read().decode()
    values = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    return values["hlopipe_engine_steps"]


def _turn_alone(batch: int, turns: int = 200, repeats: int = 7) -> dict[int, tuple[float, float]]:
    """A server's decode turn alone, in this process, on the built-in token step widened to
    ``batch`` (one group, 2 stages, as ``hlopipe serve --max-batch`` builds it): the tokens
    and positions fed (``Session.feed``), the step issued at all rows and at its first row
    (``Session.issue``), its tokens read. Per row count: the median over ``repeats`` of
    ``turns`` turns of this thread's CPU time and the wall time, each a turn, in seconds."""
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from hlopipe.generate import Generator, widen
    from hlopipe.serve._builtin import Form, builtin_model

    decode, prefill, params, max_len = builtin_model(2, form=Form.TOKENS)
    wide = widen(decode, (prefill,), batch)
    gen = Generator(wide.decode, params, prefill=list(wide.prefills), groups=1, max_len=max_len,
                    row_prefills=wide.narrow, row_steps=wide.steps)  # fmt: skip
    session = gen.start(tokens=np.zeros((1, batch), np.int32), position=0)
    tokens = np.zeros((1, batch), np.int32)
    positions = np.zeros((1, batch), np.int64)  # (fed again each turn: the cache's first)
    out = {}
    for rows in (batch, 1):
        at = None if rows == batch else rows
        cpu, wall = [], []
        for k in range(repeats + 1):  # (the first warms)
            c0, w0 = time.thread_time(), time.perf_counter()
            for _ in range(turns):
                session.feed(tokens, position=positions)
                session.issue(1, rows=at).read()
            if k:
                cpu.append((time.thread_time() - c0) / turns)
                wall.append((time.perf_counter() - w0) / turns)
        out[rows] = (float(np.median(cpu)), float(np.median(wall)))
    return out


def _host_table(batch: int, clients: list[int], requests: int, tokens: int, rounds: int) -> None:
    """``--batch N --host``: the host's cost of a turn on the built-in model served at
    ``--max-batch N`` (one group) in a process of its own: per decode turn, the CPU time of
    the engine thread and of the event loop (the main thread: HTTP and streamed chunks),
    read from ``/proc`` around each load, and the tokens/s; ``rounds`` rounds, medians. The
    CPU time excludes XLA's own threads (the steps' compute)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("PYTHONPATH", str(ROOT))
    # (run outside any checkout: ``-c`` puts the working folder first on the path, before
    # PYTHONPATH, which names the tree measured)
    proc = subprocess.Popen([sys.executable, "-c", _SERVE_HOST, str(batch)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env, cwd=tempfile.gettempdir())  # fmt: skip
    assert proc.stdout is not None
    tid, url = 0, ""
    while not url:
        line = proc.stdout.readline()
        if line.startswith("engine thread "):
            tid = int(line.split()[-1])
        elif line.startswith("serving "):
            url = line.split(" at ")[1].strip()
        elif not line:
            raise SystemExit("the server did not start")
    got: dict[int, list[tuple[float, float, float]]] = {c: [] for c in clients}
    try:
        _load(url, 1, 1, tokens)  # warm the client and the server's paths
        for _ in range(rounds):
            for c in clients:
                e0, l0, s0 = _cpu_s(proc.pid, tid), _cpu_s(proc.pid, proc.pid), _engine_steps(url)
                r = _load(url, c, requests, tokens)
                turns = _engine_steps(url) - s0
                engine = (_cpu_s(proc.pid, tid) - e0) / turns
                loop = (_cpu_s(proc.pid, proc.pid) - l0) / turns
                got[c].append((engine, loop, r["tokens_per_s"]))
    finally:
        proc.terminate()
        proc.wait(60)
    alone = _turn_alone(batch)
    print(f"a decode turn alone (feed, issue, read; one thread, in process; load average "
          f"{os.getloadavg()[0]:.1f})")  # fmt: skip
    print("| rows computed | CPU us/turn | wall us/turn |")
    print("| ---: | ---: | ---: |")
    for rows, (cpu, wall) in alone.items():
        print(f"| {rows} | {cpu * 1e6:.0f} | {wall * 1e6:.0f} |", flush=True)
    print(f"built-in tiny GPT at --max-batch {batch}, 1 group, 2 stages; {requests} requests a "
          f"client, prompts of 3 to 12, {tokens} tokens each, streamed, greedy; medians of "
          f"{rounds} (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    print("| clients | engine thread us/turn | event loop us/turn | tokens/s |")
    print("| ---: | ---: | ---: | ---: |")
    for c in clients:
        med = np.median(np.asarray(got[c]), axis=0)
        print(f"| {c} | {med[0] * 1e6:.0f} | {med[1] * 1e6:.0f} | {med[2]:.0f} |", flush=True)


def _busy_and_tokens(url: str) -> tuple[float, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics") as r:
        text = r.read().decode()
    values = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    return values["hlopipe_engine_busy_seconds"], values["hlopipe_generated_tokens_total"]


def _client_rows(url, name, clients, requests, tokens, base: dict[int, float]) -> list[dict]:
    """After a warm-up request, one table row per client count: tokens/s, TTFT and ITL
    medians, the server's time per token, and tokens/s over ``base`` (the first setup's at
    that count, filled in by the first call). Returns each count's measures."""
    _load(url, 1, 1, tokens)  # warm the client and the server's paths
    out = []
    for c in clients:
        r = _load(url, c, requests, tokens)
        rate = r["tokens_per_s"]
        base.setdefault(c, rate)
        print(f"| {name} | {c} | {rate:.0f} | {r['ttft_p50'] * 1e3:.1f} | "
              f"{r['itl_p50'] * 1e3:.1f} | {r['server_per_token'] * 1e3:.2f} | "
              f"{rate / base[c]:.2f}x |", flush=True)  # fmt: skip
        out.append(r)
    return out


def _prompts(
    clients: int,
    requests: int,
    prompt_len: int | None = None,
    lengths: tuple[int, int] = (3, 12),
    vocab: int = 64,
) -> list[list[list[int]]]:
    """Each client's ``requests`` prompts, in order (client ``k`` draws from seed ``k``): of
    ``prompt_len`` tokens, or of ``lengths`` (low, high; log-uniform when high is over 4
    times low), random ids below ``vocab``. The load and the plain loop of the same workload
    read the same prompts."""
    out = []
    for k in range(clients):
        rng, mine = np.random.default_rng(k), []
        for _ in range(requests):
            lo, hi = lengths
            drawn = (np.exp(rng.uniform(np.log(lo), np.log(hi + 1))) if hi > 4 * lo
                     else rng.integers(lo, hi + 1))  # fmt: skip
            length = prompt_len or int(drawn)
            mine.append(rng.integers(0, vocab, length).tolist())
        out.append(mine)
    return out


def _load(
    url: str,
    clients: int,
    requests: int,
    tokens: int,
    prompt_len: int | None = None,
    lengths: tuple[int, int] = (3, 12),
    vocab: int = 64,
) -> dict[str, float]:
    """``clients`` streaming clients, ``requests`` each, one after the other: prompts of
    ``prompt_len`` or of ``lengths`` (low, high; log-uniform when high is over 4 times low)
    random ids below ``vocab``."""
    from openai import OpenAI

    client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
    model = client.models.list().data[0].id
    ttft: list[float] = []
    itl: list[float] = []
    made = [0]
    lock = threading.Lock()
    drawn = _prompts(clients, requests, prompt_len, lengths, vocab)

    def one(k: int) -> None:
        for prompt in drawn[k]:
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
    buckets: tuple[int, ...],
    chunk: int | None = None,
    d_model: int = 128,
    layers: int = 4,
    max_batch: int | None = None,
) -> tuple[Any, Any, Any]:
    """The ``--ttft`` model (``d_model`` wide, ``d_ff`` twice that, ``layers`` blocks, a
    cache of 256): its config, parameters and generator (2 stages, one group of 2 slots,
    prefills at ``buckets`` and, given ``chunk``, a chunk step of that many tokens; given
    ``max_batch``, every program exported at batch 1 and widened to that many rows, as
    ``hlopipe serve --max-batch`` serves them)."""
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp

    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(max_len=256, d_model=d_model, d_ff=2 * d_model, n_layers=layers)
    params = gd.init(jax.random.key(0), cfg)
    b = 2 if max_batch is None else 1
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
    program, narrow, steps = load(decode.serialize()), {}, {}
    if max_batch is not None:
        from hlopipe.generate import widen

        wide = widen(program, prefills, max_batch)
        program, prefills = wide.decode, list(wide.prefills)
        narrow, steps = wide.narrow, wide.steps  # as `hlopipe serve --max-batch` builds it
    gen = Generator(program, params, prefill=prefills, num_stages=2, groups=1,
                    max_len=cfg.max_len, row_prefills=narrow, row_steps=steps)  # fmt: skip
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


def _chunk_table(repeats: int, chunk: int, d_model: int = 128, layers: int = 4,
                 max_batch: int | None = None, busy: int = 0) -> None:  # fmt: skip
    """``--ttft --chunk C``: the time to first token by prompt length with a 16-token prefill
    and a chunk step of ``C`` tokens, against the same server with its chunk step put aside
    (the prefix through the prefill, the rest a token a step) and the unsplit prefill of
    that length alone, measured side by side in one run. ``max_batch``: the programs
    exported at batch 1 and served at that many rows (``--max-batch``); ``busy``: that many
    other clients generating all the while (rows decoding beside the measured one)."""
    if max_batch is not None:
        _chunk_table_rows(repeats, chunk, d_model, layers, max_batch, busy)
        return
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


@contextlib.contextmanager
def _busy(url: str, vocab: int, clients: int) -> Iterator[None]:
    """``clients`` streaming clients sending 16-token prompts for 48 tokens each, one after
    the other, until the block ends: rows decoding beside what the block measures."""
    from openai import OpenAI

    stop = threading.Event()

    def one(k: int) -> None:
        client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
        rng = np.random.default_rng(100 + k)
        while not stop.is_set():
            prompt = rng.integers(0, vocab, 16).tolist()
            for _ in client.completions.create(model="m", prompt=prompt, max_tokens=48,
                                               temperature=0, stream=True):  # fmt: skip
                pass

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    time.sleep(0.5 if clients else 0)
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(60)


def _chunk_table_rows(repeats: int, chunk: int, d_model: int, layers: int, max_batch: int,
                      busy: int) -> None:  # fmt: skip
    """``--ttft --chunk C --max-batch N``: the decode step, prefill and chunk step exported at
    batch 1 and served at ``N`` rows (the prefill and chunks of a prompt at the fewest rows
    holding it: 1), ``busy`` other clients generating all the while; the time to first token
    against the unsplit prefill of that length alone at batch 1."""
    cfg, params, gen = _ttft_model((16,), chunk, d_model, layers, max_batch)
    assert gen.chunk is not None
    with _served(gen) as (engine, url):
        probe = _Probe(url, cfg, params, repeats)
        print(f"time to first token by prompt length: tiny GPT (d_model {d_model}, {layers} "
              f"layers, cache 256), exported at batch 1, served at --max-batch {max_batch} "
              f"(one group), 2 stages, a prefill of 16 tokens and a chunk step of {chunk} "
              f"(padding agreed: prefill {engine.pads}, chunk {gen.chunk.pads}), {busy} other "
              f"clients generating, one measured client, median of {repeats}")  # fmt: skip
        print("| prompt tokens | TTFT ms (chunks) | unsplit prefill of that length alone ms, "
              "batch 1 | TTFT / alone | 4 greedy tokens equal the decode step fed the prompt "
              "|")  # fmt: skip
        print("| ---: | ---: | ---: | ---: | :---: |")
        probe.ttft(3)
        probe.ttft(200)  # warm the chunk path
        alone = {n: probe.alone(n) for n in CHUNK_LENGTHS}  # before the other clients start
        with _busy(url, cfg.vocab, busy):
            for length in CHUNK_LENGTHS:
                now, base = probe.ttft(length), alone[length]
                print(f"| {length} | {now * 1e3:.1f} | {base * 1e3:.2f} | {now / base:.1f}x | "
                      f"{probe.equal(length)} |")  # fmt: skip


def _chunk_parts(repeats: int, chunk: int, d_model: int, layers: int, max_batch: int) -> None:
    """``--ttft --chunk C --max-batch N --parts``: where a 200-token prompt's time goes, in
    this process, no HTTP, on the served generator's own session (2 stages, ``N`` rows): its
    ``prefill_rows`` (the 16-token prefill and the chunk runs at 1 row, back to back), the
    host time of the chunk runs' dispatch loop, the same with every run waited for (a host
    sync a run), one chunk run alone, the prefill alone; beside the unsplit prefill of 200
    tokens and the unsplit chunk step run as many times (jitted, one device, batch 1).
    Medians of ``repeats``, alternated."""
    import jax
    import jax.numpy as jnp

    from hlopipe.models import gpt_decode as gd

    cfg, params, gen = _ttft_model((16,), chunk, d_model, layers, max_batch)
    step = gen.narrow_chunk_for(1)
    assert step is not None
    session = gen.start(tokens=np.zeros((1, max_batch), np.int32), position=0)
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, cfg.vocab, (1, 200)).astype(np.int32)
    runs = len(step.starts(16, 200))
    dispatch: list[float] = []  # each chunk run's host time inside its dispatch
    wait = [False]

    def timed(run: Any) -> Any:
        def go(regs: list[Any]) -> None:
            t0 = time.perf_counter()
            run(regs)
            dispatch.append(time.perf_counter() - t0)
            if wait[0]:
                jax.block_until_ready([r for r in regs if isinstance(r, jax.Array)])

        return go

    for prog in {id(step.program): step.program, id(step.inner): step.inner}.values():
        prog.run = timed(prog.run)

    def rows(p: np.ndarray) -> float:
        t0 = time.perf_counter()
        session.prefill_rows(p, [0])
        return time.perf_counter() - t0

    rows(prompt)
    rows(prompt[:, :16])
    pre = jax.jit(gd.prefill_fn(cfg, logits=True))
    one = jax.jit(gd.chunk_fn(cfg, logits=True), donate_argnums=1)
    cache0 = gd.empty_cache(1, cfg)

    def unsplit_chunks() -> float:
        cache = jax.block_until_ready(jax.tree.map(jnp.copy, cache0))
        t0 = time.perf_counter()
        for at in step.starts(16, 200):
            out, cache = one(params, cache, jnp.asarray(prompt[:, at : at + chunk]),
                             jnp.asarray(at, jnp.int32))  # fmt: skip
        jax.block_until_ready(out)
        return time.perf_counter() - t0

    def unsplit_prefill() -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(pre(params, jnp.asarray(prompt)))
        return time.perf_counter() - t0

    unsplit_chunks(), unsplit_prefill()
    got: dict[str, list[float]] = {k: [] for k in ("async", "loop", "synced", "prefill",
                                                   "chunks", "alone")}  # fmt: skip
    for _ in range(repeats):
        dispatch.clear()
        wait[0] = False
        got["async"].append(rows(prompt))
        got["loop"].append(sum(dispatch))
        dispatch.clear()
        wait[0] = True
        got["synced"].append(rows(prompt))
        wait[0] = False
        got["prefill"].append(rows(prompt[:, :16]))
        got["chunks"].append(unsplit_chunks())
        got["alone"].append(unsplit_prefill())
    m = {k: float(np.median(v)) * 1e3 for k, v in got.items()}
    print(f"a 200-token prompt's prefill and {runs} chunk runs of {chunk} at 1 row: d_model "
          f"{d_model}, {layers} layers, exported at batch 1, --max-batch {max_batch}, 2 stages, "
          f"median of {repeats}, alternated")  # fmt: skip
    print("| what | ms | per chunk run ms |")
    print("| --- | ---: | ---: |")
    rows_ = (
        ("prefill_rows: the 16-token prefill and the chunk runs back to back", m["async"], None),
        ("  of which the chunk runs' dispatch (host)", m["loop"], m["loop"] / runs),
        ("prefill_rows, every chunk run waited for", m["synced"], None),
        ("prefill_rows of the 16-token prefill alone", m["prefill"], None),
        ("  the chunk runs (back to back less the prefill)", m["async"] - m["prefill"],
         (m["async"] - m["prefill"]) / runs),
        (f"unsplit chunk step, batch 1, one device, {runs} runs", m["chunks"],
         m["chunks"] / runs),
        ("unsplit prefill of 200 tokens, batch 1, one device", m["alone"], None),
    )  # fmt: skip
    for what, ms, per in rows_:
        print(f"| {what} | {ms:.1f} | {'' if per is None else f'{per:.2f}'} |")
    # what a run costs by its rows: k 200-token prompts in one prefill_rows (the prefill and
    # the chunk runs at k rows; at the batch, the widened step's own)
    counts = [k for k in (1, 2, 4, 8, 16) if k <= max_batch]
    for k in counts:
        session.prefill_rows(np.repeat(prompt, k, 0), list(range(k)))
    by: dict[int, list[float]] = {k: [] for k in counts}
    for _ in range(repeats):
        for k in counts:
            t0 = time.perf_counter()
            session.prefill_rows(np.repeat(prompt, k, 0), list(range(k)))
            by[k].append(time.perf_counter() - t0)
    one_row = float(np.median(by[1]))
    print("| 200-token prompts at once | rows computed | prefill_rows ms | over 1 row |")
    print("| ---: | ---: | ---: | ---: |")
    for k in counts:
        t = float(np.median(by[k]))
        print(f"| {k} | {session.prefill_rows_run if k == counts[-1] else k} | {t * 1e3:.1f} | "
              f"{t / one_row:.2f}x |")  # fmt: skip


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
            _client_rows(url, name, clients, requests, tokens, base)
        finally:
            proc.terminate()
            proc.wait(60)


def _gpt_exports(cfg: Any) -> tuple[Any, Any, Any]:
    """A tiny GPT of ``cfg`` (``hlopipe.models.gpt_decode``) cut into 2 stages by markers:
    its parameters, its token step and its 8-token prefill exported at batch 1 and loaded."""
    import jax
    import jax.numpy as jnp

    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    params = gd.init(jax.random.key(0), cfg)
    cuts = (cfg.n_layers // 2,)
    step = jax.jit(gd.decode_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
    decode = jax.export.export(step)(params, gd.empty_cache(1, cfg), jnp.zeros(1, jnp.int32),
                                     jnp.int32(0))  # fmt: skip
    pre = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts))
    prefill = jax.export.export(pre)(params, jnp.zeros((1, 8), jnp.int32))
    return params, load(decode.serialize()), load(prefill.serialize())


def _batch_sized(
    batch: int,
    clients: list[int],
    requests: int,
    tokens: int,
    d_model: int,
    layers: int,
    rounds: int = 1,
) -> None:
    """Batching at serve time on a wider tiny GPT built here (see the module's docstring):
    ``rounds`` rounds of every setup in turn (alternated), then the medians."""

    import jax

    jax.config.update("jax_num_cpu_devices", 8)

    from hlopipe.generate import Generator, widen
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(max_len=64, d_model=d_model, d_ff=4 * d_model, n_layers=layers)
    params, decode, prefill = _gpt_exports(cfg)
    weights = sum(x.nbytes for x in jax.tree.leaves(params))
    top = max(clients)
    wide = widen(decode, (prefill,), batch)
    # (its prefills at the fewest rows in every --max-batch row, as ``hlopipe serve`` has them)
    steps, narrow = wide.steps, wide.narrow
    setups = [
        (f"batch 1: {top} groups of 1", decode, prefill, top, {}, {}),
        (f"--max-batch {batch}, 1 group, every step at {batch} rows", wide.decode,
         wide.prefills[0], 1, narrow, {}),
        (f"--max-batch {batch}, 1 group", wide.decode, wide.prefills[0], 1, narrow, steps),
        (f"--max-batch {batch}, 2 groups", wide.decode, wide.prefills[0], 2, narrow, steps),
    ]  # fmt: skip
    print(f"tiny GPT d_model {d_model}, {layers} layers ({weights / 2**20:.1f} MiB of weights), "
          f"token step and prefill exported at batch 1, 2 stages, in-process engine over "
          f"HTTP; {requests} requests a client, prompts of 3 to 12, {tokens} tokens each, "
          "streamed, greedy")  # fmt: skip
    print("| served as | clients | tokens/s | TTFT p50 ms | ITL p50 ms | server ms/token | "
          "tokens/s / batch 1's |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    base: dict[int, float] = {}
    gens = [(name, Generator(dec, params, prefill=pref, groups=groups, max_len=cfg.max_len,
                             row_prefills=narrow, row_steps=steps))
            for name, dec, pref, groups, narrow, steps in setups]  # fmt: skip
    got: dict[str, list[list[dict]]] = {name: [] for name, _ in gens}
    for _ in range(rounds):  # alternated: every setup once a round
        for name, gen in gens:
            with _served(gen) as (_, url):
                got[name].append(_client_rows(url, name, clients, requests, tokens, base))
    if rounds > 1:
        print(f"\nmedians of {rounds} rounds (load average now {os.getloadavg()[0]:.1f})")
        print("| served as | clients | tokens/s | TTFT p50 ms | ITL p50 ms | "
              "tokens/s / batch 1's |")  # fmt: skip
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        first = gens[0][0]
        for name, _ in gens:
            for k, c in enumerate(clients):
                med = {m: float(np.median([r[k][m] for r in got[name]]))
                       for m in ("tokens_per_s", "ttft_p50", "itl_p50")}  # fmt: skip
                one = float(np.median([r[k]["tokens_per_s"] for r in got[first]]))
                print(
                    f"| {name} | {c} | {med['tokens_per_s']:.0f} | {med['ttft_p50'] * 1e3:.1f} | "
                    f"{med['itl_p50'] * 1e3:.1f} | {med['tokens_per_s'] / one:.2f}x |"
                )
    _steps_alone(cfg, params, wide, batch)


def _move_table(batch: int, clients: int, rounds: int, tokens: int, d_model: int,
                layers: int) -> None:  # fmt: skip
    """A sequence left alone in a high row moved down or left in place (see the module's
    docstring): ``rounds`` rounds, the two setups alternated, then the medians."""
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from openai import OpenAI

    from hlopipe.generate import Generator, widen
    from hlopipe.models import gpt_decode as gd

    long = 10 * tokens
    cfg = gd.DecodeConfig(max_len=1 << (8 + long).bit_length(), d_model=d_model,
                          d_ff=4 * d_model, n_layers=layers)  # fmt: skip
    params, decode, prefill = _gpt_exports(cfg)
    wide = widen(decode, (prefill,), batch)
    gen = Generator(wide.decode, params, prefill=list(wide.prefills), max_len=cfg.max_len,
                    row_prefills=wide.narrow, row_steps=wide.steps)  # fmt: skip
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, cfg.vocab, 8).tolist() for _ in range(clients)]
    wants = [tokens] * (clients - 1) + [long]  # the long one asked for last: the top row

    def round_(url: str) -> dict[str, Any]:
        client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
        got: dict[int, tuple[list[float], list[int]]] = {}
        started = threading.Semaphore(0)  # a short one's first token came: it holds a row

        def one(k: int) -> None:
            if k == clients - 1:  # admitted once the others hold their rows: the top row
                for _ in range(clients - 1):
                    assert started.acquire(timeout=60)
            stamps, ids = [], []
            for c in client.completions.create(model="m", prompt=prompts[k], max_tokens=wants[k],
                                               temperature=0, stream=True):  # fmt: skip
                if not stamps and k < clients - 1:
                    started.release()
                stamps.append(time.perf_counter())
                ids += c.choices[0].model_dump().get("token_ids") or []
            got[k] = (stamps, ids)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(one, range(clients)))
        wall = time.perf_counter() - t0
        stamps, ids = got[clients - 1]
        gaps = np.diff(stamps)
        return {"itl_p50": float(np.median(gaps)), "itl_p99": float(np.percentile(gaps, 99)),
                "long_per_s": len(gaps) / (stamps[-1] - stamps[0]),
                "all_per_s": sum(wants) / wall, "ids": ids}  # fmt: skip

    setups = (("left in its row", False), ("moved down", True))
    got: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in setups}
    steps: dict[str, list[tuple[int, ...]]] = {}
    with _served(gen) as (engine, url):
        schedule = engine.scheduler.schedule
        for r in range(rounds + 1):  # the first warms the client and the server's paths
            for name, moves in setups:
                engine.scheduler.moves = moves
                plans: list[Any] = []
                engine.scheduler.schedule = lambda p=plans: p.append(schedule()) or p[-1]
                out = round_(url)
                if r:
                    got[name].append(out)
                steps[name] = [p.step_rows for p in plans if p.steps]
    weights = sum(x.nbytes for x in jax.tree.leaves(params))
    print(f"tiny GPT d_model {d_model}, {layers} layers ({weights / 2**20:.1f} MiB of weights), "
          f"token step and prefill exported at batch 1, --max-batch {batch}, 1 group, 2 stages, "
          f"in-process engine over HTTP; {clients} streaming clients at once, prompts of 8 "
          f"(the prefill's), greedy: {clients - 1} of {tokens} tokens, the last admitted of "
          f"{long}; medians of {rounds} rounds, the setups alternated; load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| the long one's row once alone | its ITL p50 ms | its ITL p99 ms | its tokens/s | "
          "all tokens/s | decode steps by rows computed (last round) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, _ in setups:
        med = {m: float(np.median([r[m] for r in got[name]]))
               for m in ("itl_p50", "itl_p99", "long_per_s", "all_per_s")}  # fmt: skip
        by = {n: sum(1 for s in steps[name] if s == (n,)) for n in sorted({*wide.steps, batch})}
        print(f"| {name} | {med['itl_p50'] * 1e3:.2f} | {med['itl_p99'] * 1e3:.2f} | "
              f"{med['long_per_s']:.0f} | {med['all_per_s']:.0f} | "
              f"{', '.join(f'{n}: {k}' for n, k in by.items())} |")  # fmt: skip
    same = all(r["ids"] == got[setups[0][0]][0]["ids"] for name, _ in setups for r in got[name])
    print(f"the long one's tokens the same in every round and setup: {same}")


def _steps_alone(cfg: Any, params: Any, wide: Any, batch: int) -> None:
    """The step alone, one device, no pipeline: batch 1, the widened step, the widened step
    computing its first rows (``Widened.steps``), a native export; each cache donated and the
    next call given the cache the last returned, as the server runs them."""
    import jax
    import jax.numpy as jnp

    from hlopipe.models import gpt_decode as gd

    steps = wide.steps
    pos = jnp.full(batch, 3, jnp.int32)
    rows = jax.tree.map(lambda x: x[None].repeat(batch, 0), gd.empty_cache(1, cfg))
    wide_args = (rows, jnp.zeros(batch, jnp.int32), pos)
    alone = [("batch 1 (decode_fn)", gd.decode_fn(cfg), (gd.empty_cache(1, cfg),
                                                         jnp.zeros(1, jnp.int32), jnp.int32(3))),
             (f"widened to {batch}", wide.decode.as_function(), wide_args),
             *((f"widened to {batch}, its first {n} computed", steps[n].as_function(), wide_args)
               for n in sorted(steps)),
             (f"exported at {batch} (decode_slots_fn)", gd.decode_slots_fn(cfg),
              (gd.empty_cache(batch, cfg), jnp.zeros(batch, jnp.int32), pos))]  # fmt: skip
    for name, fn, (cache, *rest) in alone:
        fn = jax.jit(lambda p, c, *r, f=fn: f(p, c, *r), donate_argnums=1)
        tree = jax.tree.structure(cache)
        cache = jax.tree.map(jnp.copy, cache)  # (donated: each its own)
        times = []
        for _ in range(21):
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(params, cache, *rest))
            times.append(time.perf_counter() - t0)
            cache = jax.tree.unflatten(tree, jax.tree.leaves(out[1:]))  # (its caches, flat)
        times = times[1:]  # (the first compiles)
        print(f"the step alone, {name}: {np.median(times) * 1e3:.2f} ms (median of 20)")


def _llama_files(folder: Path, s: LlamaShape, buckets: tuple[int, ...]) -> tuple[int, int]:
    """The decode step (batch 1, a position argument, the next token returned) and a prefill
    at each of ``buckets`` exported into ``folder``, with the parameters in argument order:
    ``(parameter bytes, count)``."""
    import jax
    import jax.numpy as jnp

    from hlopipe.models import llama_decode

    params = jax.jit(llama_decode.init, static_argnums=1)(jax.random.key(0), s)
    avals = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), params)
    cache = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype),
                         llama_decode.empty_cache(1, s))  # fmt: skip
    decode, prefill = llama_decode.decode_fn(s), llama_decode.prefill_fn(s)

    i32 = jnp.int32
    step = jax.export.export(jax.jit(decode, donate_argnums=1))(
        avals, cache, jax.ShapeDtypeStruct((1,), i32), jax.ShapeDtypeStruct((), i32)
    )
    (folder / "decode.jax_export").write_bytes(step.serialize())
    for P in buckets:
        pre = jax.export.export(jax.jit(prefill))(avals, jax.ShapeDtypeStruct((1, P), i32))
        (folder / f"prefill_{P}.jax_export").write_bytes(pre.serialize())
    leaves = [np.asarray(x) for x in jax.tree.leaves(params)]
    np.savez(folder / "params.npz", *leaves)
    return sum(x.nbytes for x in leaves), sum(x.size for x in leaves)


def _memory(pid: int) -> dict[str, int]:
    """The process's resident memory now and at its peak (``/proc/<pid>/status``), bytes."""
    got = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(value.split()[0]) * 1024
    return got


def _serve_files(folder: Path, buckets: tuple[int, ...], max_batch: int,
                 max_len: int) -> tuple[subprocess.Popen, str]:  # fmt: skip
    """``hlopipe serve`` on the exported files in a process of its own, 2 stages, one group
    of ``max_batch`` rows: the process and its URL."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "hlopipe", "serve", str(folder / "decode.jax_export"),
           *(a for P in buckets for a in ("--prefill", str(folder / f"prefill_{P}.jax_export"))),
           "--params", str(folder / "params.npz"), "--stages", "2", "--groups", "1",
           "--max-batch", str(max_batch), "--max-len", str(max_len), "--port", "0",
           "--cpu-devices", "2"]  # fmt: skip
    return _spawn(cmd, env)


def _idle_memory(pid: int) -> dict[str, int]:
    """``_memory`` once the server has been idle a while (longer than the engine waits before
    it gives back the memory malloc holds free)."""
    time.sleep(1.5)
    return _memory(pid)


class _Peak:
    """The largest ``VmRSS`` of a process while a load runs (sampled every 20 ms)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _memory(self.pid)["VmRSS"])
            time.sleep(0.02)

    def __enter__(self) -> _Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _runtime_rss(max_batch: int) -> int:
    """The resident memory of the same server command on a Llama of 2 layers of width 64 (a
    megabyte of weights) after one request: what Python, JAX, the compiled stages and the
    HTTP server hold whatever the model's size."""
    import tempfile

    from hlopipe.models.llama_decode import LlamaShape

    tiny = LlamaShape(layers=2, d=64, ff=128, heads=4, kv_heads=2, vocab=500, max_len=128)
    with tempfile.TemporaryDirectory(prefix="hlopipe-serve-bench-") as tmp:
        folder = Path(tmp)
        _llama_files(folder, tiny, (16,))
        proc, url = _serve_files(folder, (16,), max_batch, tiny.max_len)
        try:
            _load(url, 1, 1, 2, lengths=(16, 16), vocab=tiny.vocab)
            return _idle_memory(proc.pid)["VmRSS"]
        finally:
            proc.terminate()
            proc.wait(60)


def _plain_generator(folder: Path, buckets: tuple[int, ...], rows: int, max_len: int) -> Any:
    """The files as a user loads them for a plain loop: widened to ``rows`` (with the
    prefills at fewer rows, as ``hlopipe serve --max-batch`` does), 2 stages, one group."""
    from hlopipe.generate import Generator, load_params, widen
    from hlopipe.io import load

    decode = load(str(folder / "decode.jax_export"))
    prefills = [load(str(folder / f"prefill_{P}.jax_export")) for P in buckets]
    params = load_params(str(folder / "params.npz"), decode.arg_roles(), 0)
    wide = widen(decode, prefills, rows)
    return Generator(wide.decode, params, prefill=list(wide.prefills), num_stages=2, groups=1,
                     max_len=max_len, row_prefills=wide.narrow)  # fmt: skip


def _plain_loop_files(gen: Any, tokens: int, repeats: int) -> dict[str, float]:
    """The decode steps alone in a plain loop: ``Session.generate(tokens)`` from a token at
    position 0 at every row (no prefill, no HTTP): tokens/s, and the generator's host time
    per action against its time per step."""
    rows = gen.batch
    first = np.random.default_rng(0).integers(0, 1000, (1, rows)).astype(np.int32)
    gen.start(tokens=first, position=0).generate(tokens)  # compiles
    times, host, step = [], [], []
    for _ in range(repeats):
        session = gen.start(tokens=first, position=0)
        t0 = time.perf_counter()
        session.generate(tokens)
        times.append(time.perf_counter() - t0)
        host.append(session.metrics.host_per_action_s)
        step.append(session.metrics.inter_token_s)
    return {"tokens_per_s": rows * tokens / float(np.median(times)),
            "host_per_action": float(np.median(host)), "step": float(np.median(step))}  # fmt: skip


def _heads(prompt: list[int], buckets: tuple[int, ...]) -> tuple[list[int], int]:
    """What a prefill of ``buckets`` reads for ``prompt`` and where the decode step goes on:
    the whole prompt when it has a bucket's length (the prefill's token is the first
    generated), else its first ``len - 1`` tokens right-padded to the shortest bucket
    holding them (the last prompt token then fed to the decode step at its position)."""
    L = len(prompt)
    if L in buckets:
        return prompt, L
    P = min((b for b in buckets if b >= L - 1), default=max(buckets))
    n = min(L - 1, P)
    return prompt[:n] + [prompt[n - 1]] * (P - n), n


def _plain_workload(gen: Any, prompts: list[list[int]], tokens: int,
                    buckets: tuple[int, ...]) -> float:  # fmt: skip
    """The server's workload as a user's loop of ``Session`` calls (one process, no HTTP,
    no scheduler): the prompts taken ``gen.batch`` at a time, in order; each batch's prompts
    of one bucket prefilled together into their rows (``Session.prefill_rows``: the same
    prefill files, at the fewest rows holding them), the last prompt token of each fed at
    its position (``Session.feed``), then ``tokens`` decode steps (``Session.generate``).
    Returns the generated tokens a second (``tokens`` a prompt) over the wall time of the
    whole loop, prefills included."""
    rows = gen.batch
    session = gen.start(tokens=np.zeros((1, rows), np.int32), position=0)
    made, t0 = 0, time.perf_counter()
    for at in range(0, len(prompts), rows):
        batch = prompts[at : at + rows]
        by_bucket: dict[int, list[tuple[int, list[int]]]] = {}
        covered = []
        for i, prompt in enumerate(batch):
            head, n = _heads(prompt, buckets)
            by_bucket.setdefault(len(head), []).append((i, head))
            covered.append(n)
        feed = np.zeros((1, rows), np.int32)
        position = np.zeros((1, rows), np.int64)
        for got in by_bucket.values():
            where = [i for i, _ in got]
            first = session.prefill_rows(np.asarray([h for _, h in got], np.int32), where)
            for i, tok in zip(where, first, strict=True):
                n, prompt = covered[i], batch[i]
                whole = n == len(prompt)
                feed[0, i], position[0, i] = (tok, n) if whole else (prompt[n], n)
        session.feed(feed, position=position)
        session.generate(tokens)
        made += len(batch) * tokens
    return made / (time.perf_counter() - t0)


def _llama_table(
    clients: list[int],
    batches: list[int],
    requests: int,
    tokens: int,
    buckets: tuple[int, ...],
    lengths: tuple[int, int],
    s: LlamaShape,
    repeats: int = 3,
    files: Path | None = None,
) -> None:
    """``hlopipe serve`` on a Llama of real size (see the module's docstring)."""
    import tempfile

    import jax

    jax.config.update("jax_num_cpu_devices", 2)  # the plain loop's 2 stages

    with tempfile.TemporaryDirectory(prefix="hlopipe-serve-bench-") as tmp:
        folder = files or Path(tmp)
        if files is not None and (files / "params.npz").exists():  # exported by an earlier run
            leaves = list(np.load(files / "params.npz").values())
            param_bytes, count = sum(x.nbytes for x in leaves), sum(x.size for x in leaves)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            param_bytes, count = _llama_files(folder, s, buckets)
        print(f"Llama d {s.d}, {s.layers} layers, {s.heads} heads over {s.kv_heads} K/V heads, "
              f"MLP {s.ff}, vocabulary {s.vocab} ({count / 1e6:.0f}M parameters, "
              f"{param_bytes / 2**20:.0f} MiB float32), cache {s.max_len}; decode step "
              f"(token-returning) and prefills of {', '.join(map(str, buckets))} tokens exported "
              f"at batch 1, served by `hlopipe serve --stages 2 --groups 1 --max-batch N` in a "
              f"process of its own; {requests} request(s) a client, prompts of {lengths[0]} to "
              f"{lengths[1]} tokens (log-uniform), {tokens} tokens each, streamed, greedy; "
              f"load average at the start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
              flush=True)  # fmt: skip
        print(
            "| --max-batch | clients | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | "
            "ITL p99 ms | server ms/token | VmRSS under load MiB | VmRSS idle MiB | VmHWM MiB | "
            "RSS idle / (params + caches) |"
        )
        print("|" + " ---: |" * 12)
        last_rss: dict[int, int] = {}
        side: dict[int, dict[str, Any]] = {}
        at = 8  # the client count compared with the plain loops
        prompts = [p for c in _prompts(at, requests, None, lengths, s.vocab) for p in c]
        for n in batches:
            proc, url = _serve_files(folder, buckets, n, s.max_len)
            need = param_bytes + n * s.cache_bytes_per_row()
            try:
                _load(url, 1, 1, 2, lengths=(16, 16), vocab=s.vocab)  # warm the paths
                for c in clients:
                    with _Peak(proc.pid) as peak:
                        r = _load(url, c, requests, tokens, lengths=lengths, vocab=s.vocab)
                    m = _idle_memory(proc.pid)
                    last_rss[n] = m["VmRSS"]
                    print(f"| {n} | {c} | {r['tokens_per_s']:.1f} | {r['ttft_p50'] * 1e3:.0f} | "
                          f"{r['ttft_p99'] * 1e3:.0f} | {r['itl_p50'] * 1e3:.0f} | "
                          f"{r['itl_p99'] * 1e3:.0f} | {r['server_per_token'] * 1e3:.1f} | "
                          f"{peak.peak / 2**20:.0f} | {m['VmRSS'] / 2**20:.0f} | "
                          f"{m['VmHWM'] / 2**20:.0f} | "
                          f"{m['VmRSS'] / need:.2f}x |", flush=True)  # fmt: skip
                # decode-bound: one 1-token prompt a row (no prefill)
                r = _load(url, n, 1, max(32, tokens), prompt_len=1, vocab=s.vocab)
                bound = r["tokens_per_s"]
                print(f"| {n} | {n} (1-token prompts, {max(32, tokens)} tokens) | "
                      f"{r['tokens_per_s']:.1f} | {r['ttft_p50'] * 1e3:.0f} | "
                      f"{r['ttft_p99'] * 1e3:.0f} | {r['itl_p50'] * 1e3:.0f} | "
                      f"{r['itl_p99'] * 1e3:.0f} | {r['server_per_token'] * 1e3:.1f} | | | | |",
                      flush=True)  # fmt: skip
                # side by side, alternated (the server idle while the loop runs): the server
                # at 8 clients, the same workload in a plain loop, the decode steps alone
                gen = _plain_generator(folder, buckets, n, s.max_len)
                _plain_workload(gen, prompts, tokens, buckets)  # compiles its paths
                runs: dict[str, list[float]] = {"server": [], "workload": [], "load": []}
                for _ in range(repeats):
                    runs["load"].append(os.getloadavg()[0])
                    runs["server"].append(_load(url, at, requests, tokens, lengths=lengths,
                                                vocab=s.vocab)["tokens_per_s"])  # fmt: skip
                    runs["workload"].append(_plain_workload(gen, prompts, tokens, buckets))
                decode = _plain_loop_files(gen, max(32, tokens), repeats)
                del gen
                side[n] = {**{k: float(np.median(v)) for k, v in runs.items()},
                           "bound": bound, "decode": decode,
                           "load_range": (min(runs["load"]), max(runs["load"]))}  # fmt: skip
            finally:
                proc.terminate()
                proc.wait(60)
        print(
            f"params + caches: {param_bytes / 2**20:.0f} MiB + N x "
            f"{s.cache_bytes_per_row() / 2**20:.1f} MiB"
        )
        for n in batches:
            base = _runtime_rss(n)
            need = param_bytes + n * s.cache_bytes_per_row()
            print(f"--max-batch {n}: the same server on a 1 MiB Llama holds {base / 2**20:.0f} "
                  f"MiB (the runtime); the last VmRSS above less that: "
                  f"{(last_rss[n] - base) / need:.2f}x params + caches")  # fmt: skip
        print()
        print(f"Side by side, alternated {repeats} times (medians): the server at {at} clients "
              f"(the rows above' workload); the plain loop of the same workload (the same "
              f"{at} prompts in `Session` calls, one process, no HTTP: each "
              f"batch of N prompts' heads prefilled a bucket at a time by `prefill_rows` "
              f"through the same prefill files, their last prompt tokens fed, then {tokens} "
              f"decode steps by `generate`, prefills included in its time); the plain loop of "
              f"decode steps alone (`generate({max(32, tokens)})` from a token at position 0 at "
              f"every row, no prefill).")  # fmt: skip
        print(
            "| --max-batch | load | server, 8 clients | plain loop, same workload | / it | "
            "plain loop, decode alone | / it | server, N 1-token prompts (decode-bound) | "
            "/ decode alone | step ms | host us per action | host per action / step |"
        )
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "| ---: |")  # fmt: skip
        for n, r in side.items():
            d = r["decode"]
            share = d["host_per_action"] / d["step"] * 100
            lo, hi = r["load_range"]
            print(f"| {n} | {lo:.1f}-{hi:.1f} | {r['server']:.1f} | {r['workload']:.1f} | "
                  f"{r['server'] / r['workload']:.2f}x | {d['tokens_per_s']:.1f} | "
                  f"{r['server'] / d['tokens_per_s']:.2f}x | {r['bound']:.1f} | "
                  f"{r['bound'] / d['tokens_per_s']:.2f}x | {d['step'] * 1e3:.1f} | "
                  f"{d['host_per_action'] * 1e6:.0f} | {share:.2f}% |", flush=True)  # fmt: skip


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
    ap.add_argument("--max-batch", type=int, default=None, help="--ttft --chunk: exported at "
                    "batch 1 and served at this many rows")  # fmt: skip
    ap.add_argument("--busy", type=int, default=0, help="--ttft --chunk --max-batch: other "
                    "clients generating while the time to first token is measured")  # fmt: skip
    ap.add_argument("--parts", action="store_true", help="--ttft --chunk --max-batch: where "
                    "a 200-token prompt's time goes (in process)")  # fmt: skip
    ap.add_argument("--batch", type=int, default=None, help="batching at serve time: a batch-1 "
                    "export served at this --max-batch beside the server at batch 1")  # fmt: skip
    ap.add_argument("--d-model", type=int, default=None, help="--batch (--ttft --chunk): a tiny "
                    "GPT this wide built here (default: the built-in, served by the command; "
                    "128)")  # fmt: skip
    ap.add_argument("--layers", type=int, default=4, help="--batch --d-model: its layers")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="--batch --d-model: rounds of every setup in turn, then their medians (--batch "
        "--host: rounds of every client count)",
    )
    ap.add_argument("--move", action="store_true", help="a sequence left alone in a high "
                    "row moved down or left: --clients' last count at once, one of 10x "
                    "--tokens, on a --d-model (768) GPT at --batch (8) rows")  # fmt: skip
    ap.add_argument("--host", action="store_true", help="--batch: the engine thread's and "
                    "the event loop's CPU time a turn on the built-in model (--rounds: "
                    "medians)")  # fmt: skip
    ap.add_argument("--llama", action="store_true", help="a Llama of real size (about 125M "
                    "parameters) exported to files and served at --max-batch 8 and 16 in a "
                    "process of its own, beside the plain loop on the same files")  # fmt: skip
    ap.add_argument("--max-batches", default="8,16", help="--llama: the --max-batch values")
    ap.add_argument("--full", action="store_true", help="--llama: 96 tokens a request, "
                    "prompts of 16 to 512, prefills of 16,64,128,512 (default: quick, 8 tokens, "
                    "prompts of 16 to 64, prefills of 16,64); 1 request a client")  # fmt: skip
    ap.add_argument("--files", default=None, help="--llama: a folder for the exported files, "
                    "reused when it holds them (default: a temporary one)")  # fmt: skip
    args = ap.parse_args()
    if args.llama:
        clients = [int(x) for x in (args.clients if args.clients != "1,4,8" else "1,4,8,16")
                   .split(",")]  # fmt: skip
        batches = [int(x) for x in args.max_batches.split(",")]
        files = Path(args.files) if args.files else None
        from hlopipe.models.llama_decode import LlamaShape

        shape = LlamaShape(layers=12, d=768, ff=2048, heads=12, kv_heads=4, vocab=32000,
                           max_len=640)  # fmt: skip
        if args.full:
            _llama_table(clients, batches, 1, 96, (16, 64, 128, 512), (16, 512), shape,
                         args.repeats, files)  # fmt: skip
        else:
            _llama_table(clients, batches, 1, 8, (16, 64), (16, 64), shape, args.repeats,
                         files)  # fmt: skip
        return
    if args.move:
        _move_table(args.batch or 8, int(args.clients.split(",")[-1]), args.rounds,
                    args.tokens, args.d_model or 768, args.layers)  # fmt: skip
        return
    if args.batch and args.d_model:
        clients = [int(x) for x in args.clients.split(",")]
        _batch_sized(args.batch, clients, args.requests, args.tokens, args.d_model, args.layers,
                     args.rounds)  # fmt: skip
        return
    if args.batch and args.host:
        clients = [int(x) for x in args.clients.split(",")]
        _host_table(args.batch, clients, args.requests, args.tokens, args.rounds)
        return
    if args.batch:
        clients = [int(x) for x in args.clients.split(",")]
        _batch_table(args.batch, clients, args.requests, args.tokens)
        return
    if args.ttft and args.chunk and args.parts:
        _chunk_parts(args.repeats, args.chunk, args.d_model or 128, args.layers,
                     args.max_batch or 8)  # fmt: skip
        return
    if args.ttft and args.chunk:
        _chunk_table(args.repeats, args.chunk, args.d_model or 128, args.layers,
                     args.max_batch, args.busy)  # fmt: skip
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
