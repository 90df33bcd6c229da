"""Chunked prefill (issue 49, part 1): a prompt longer than every prefill goes through a
prefill and a chunk step ``(params, cache, tokens[C], position) -> (logits, cache)`` exported
by the user beside it (``generate/_chunk.py``), served by the engine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _engine_run import run_all, run_all_counting_compiles
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


def test_a_batch_1_chunk_step_at_max_batch_4_equals_the_unsplit_program(recipe):
    """A batch-1 export (decode step, 16-token prefill, 16-token chunk step) widened to 4 rows
    (``--max-batch 4``), served by the engine, one stage: prompts of 1, 15, 17 and 64 fill the
    rows; 15 and 17 end first and both 200-token prompts are admitted into their rows in one
    turn while the 1-token and 64-token rows are still generating. Every sequence gets the
    tokens of the unsplit decode step fed its whole prompt, and the chunks ran at the fewest
    rows holding the prompts chunked in a turn: the 64-token prompt's 3 chunks at 1 row, the
    two 200-token prompts' 12 chunks at 2 rows in one run each (never at 4). The 64-token
    one asks for log-probabilities (which the decode step gives), so its chunks read its
    first 63 tokens, the last chunk right-padded, and the decode step its last. Decode steps
    run at the fewest rows holding the running ones (``row_steps``). Nothing is compiled
    once the engine is warm (jax's own compile events)."""
    from hlopipe.generate import Generator, widen
    from hlopipe.serve import Engine
    from hlopipe.serve._scheduler import SamplingParams

    ns = recipe[0]
    cfg = ns["cfg"]
    decode, prefill, chunk = _batch_1(ns)
    wide = widen(decode, [prefill, chunk], rows=4)
    gen = Generator(wide.decode, ns["params"], prefill=list(wide.prefills), num_stages=1,
                    groups=1, max_len=cfg.max_len, row_prefills=wide.narrow,
                    row_steps=wide.steps)  # fmt: skip
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
             for L, n in ((1, 12), (15, 2), (17, 2), (64, 4), (200, 4), (200, 4))]  # fmt: skip
    # the second of each pair run together one token repeated: its cache unlike the other's
    # (random weights attend almost evenly, so two random prompts' caches read alike)
    cases[2], cases[5] = ([9] * 17, 2), ([5] * 200, 4)
    asks = (*cases[3], frozenset(), SamplingParams(logprobs=True), [], None, False, 1)
    requests, compiled = run_all_counting_compiles(engine, [*cases[:3], asks, *cases[4:]])
    assert compiled == []  # every program, row count and writer it ran compiled at warm-up
    assert [r.seqs[0].tokens for r in requests] == [_oracle(ns, p, n) for p, n in cases]
    assert len(requests[3].seqs[0].token_logprobs) == 4
    # warm-up: one chunk at each row count; then 64 (its first 63: 16 + 3 x 16, padded) at
    # 1 row, and both 200s (16 + 11 x 16 and one from 184) together at 2 rows
    assert ran == {1: 1 + 3, 2: 1 + 12, 4: 1}


def _counted(run, ran, rows):
    def counted(*args, **kwargs):
        ran[rows] += 1
        return run(*args, **kwargs)

    return counted


def test_a_chunk_step_beside_a_batch_2_step_under_max_batch_is_refused_by_name(recipe):
    """``--max-batch`` widens a chunk step only beside a batch-1 step with a position
    argument; beside the recipe's batch-2 export it is refused, naming the chunk step, before
    anything is built."""
    from hlopipe.generate import widen

    _, (decode, prefill, chunk) = recipe
    with pytest.raises(RuntimeConfigError, match=r"takes a cache in \(a chunk step\).*batch 1"):
        widen(decode, [prefill, chunk], rows=2)
