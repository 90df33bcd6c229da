"""Host time of the penalties' counts per decode step of a penalized group (issue 49).

A decode step returning logits over a vocabulary of ``V`` tokens (the tiny GPT of
``hlopipe.models.gpt_decode``: 1 layer, d_model 64, its head ``[64, V]``; a position per
sequence, 8 rows, one stage), every row a penalized sequence with 64 tokens made so far, as
the server's runner drives it turn after turn:

- **before** (the runner up to issue 49 part 6): each turn, every row's ``counts`` and
  ``seen`` made on the host (``np.bincount`` of its tokens, its prompt and tokens marked) and
  put with the group's sampling (``Session.sampling``): ``[8, V]`` float32 and bool, 4.5 MB a
  turn at 128K;
- **after**: the counts kept on the device, the token each step drew counted in by one
  scatter (``Session.count``), no array of the vocabulary's size crossing from the host.

Rows: the host time of that work alone (the engine thread's, median of the turns), and the
whole turn (the step issued, the counts, its tokens read; the same step both ways), median,
before and after alternated in blocks of ``--turns`` turns, ``--repeats`` times. The machine's
load average is printed: on a shared machine read the ratios, not the absolute times.

Run: ``python benchmarks/penalties.py [--vocab 32000,128000] [--turns 20] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

ROWS, MADE, PROMPT = 8, 64, 32


def _generator(vocab: int) -> Any:
    import jax
    import jax.numpy as jnp

    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    cfg = gd.DecodeConfig(vocab=vocab, d_model=64, n_heads=4, n_layers=1, d_ff=128, max_len=256)
    params = gd.init(jax.random.key(0), cfg)
    step = jax.jit(gd.decode_slots_fn(cfg, stage_boundary, cuts=()), donate_argnums=1)
    zeros = jnp.zeros(ROWS, jnp.int32)
    exported = jax.export.export(step)(params, gd.empty_cache(ROWS, cfg), zeros, zeros)
    return Generator(load(exported.serialize()), params, num_stages=1, groups=1,
                     max_len=cfg.max_len)  # fmt: skip


def _sampling(vocab: int, tokens: list[list[int]], prompts: list[list[int]]) -> Any:
    """What the runner put each turn before: the group's sampling with every row's counts
    and seen made on the host."""
    from hlopipe.generate import Sampling

    one = np.ones((1, ROWS), np.float32)
    counts = np.zeros((1, ROWS, vocab), np.float32)
    seen = np.zeros((1, ROWS, vocab), np.bool_)
    for b in range(ROWS):
        made = np.asarray(tokens[b], np.int64)
        counts[0, b] = np.bincount(made, minlength=vocab)[:vocab]
        seen[0, b, np.asarray(prompts[b], np.int64)] = True
        seen[0, b, made] = True
    no = np.zeros((1, ROWS), np.int32)
    return Sampling(no.astype(np.uint32), 0 * one, one, no, 0.5 * one, 0.5 * one, 1.3 * one,
                    no.astype(np.bool_), counts, seen)  # fmt: skip


def _turns(session: Any, vocab: int, turns: int, before: bool, state: dict) -> list[tuple]:
    """``turns`` turns of a penalized group: (host time of the counts' work, whole turn)."""
    rows = np.ones(ROWS, np.bool_)
    out = []
    for _ in range(turns):
        t0 = time.perf_counter()
        if before:
            h = time.perf_counter()
            session.sampling(_sampling(vocab, state["tokens"], state["prompts"]))
            host = time.perf_counter() - h
        handle = session.issue(1)
        if not before:
            h = time.perf_counter()
            session.count(rows)
            host = time.perf_counter() - h
        made = handle.read()[0, :, 0]
        for b in range(ROWS):
            state["tokens"][b].append(int(made[b]))
        out.append((host, time.perf_counter() - t0))
    return out


def _table(vocabs: list[int], turns: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} (2-core machine, "
          "shared)")  # fmt: skip
    print("| vocab | counts' host time before µs | after µs | ratio | turn before ms | after ms "
          "| turn ratio |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for vocab in vocabs:
        gen = _generator(vocab)
        got: dict[bool, list[tuple]] = {True: [], False: []}
        sessions, states = {}, {}
        for before in (True, False):
            s = gen.start(tokens=np.zeros((1, ROWS), np.int32), position=0)
            prompts = [rng.integers(0, vocab, PROMPT).tolist() for _ in range(ROWS)]
            tokens = [rng.integers(0, vocab, MADE).tolist() for _ in range(ROWS)]
            if not before:  # set once, as a row is admitted: its prompt seen, its tokens counted
                counts = np.stack([np.bincount(t, minlength=vocab) for t in tokens])
                seen = np.zeros((ROWS, vocab), np.bool_)
                for b in range(ROWS):
                    seen[b, prompts[b] + tokens[b]] = True
                s.sampling(_sampling(vocab, tokens, prompts)._replace(counts=None, seen=None))
                s.set_counts(list(range(ROWS)), counts, seen)
            sessions[before], states[before] = s, {"tokens": tokens, "prompts": prompts}
            _turns(s, vocab, 3, before, states[before])  # compile, warm
        for _ in range(repeats):
            for before in (True, False):
                got[before] += _turns(sessions[before], vocab, turns, before, states[before])
        med = {k: np.median(np.asarray(v), axis=0) for k, v in got.items()}
        b_host, b_turn = med[True]
        a_host, a_turn = med[False]
        print(f"| {vocab:,} | {b_host * 1e6:,.0f} | {a_host * 1e6:,.0f} | {b_host / a_host:.0f}x "
              f"| {b_turn * 1e3:.2f} | {a_turn * 1e3:.2f} | {b_turn / a_turn:.2f}x |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="32000,128000")
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    _table([int(v) for v in args.vocab.split(",")], args.turns, args.repeats)


if __name__ == "__main__":
    main()
