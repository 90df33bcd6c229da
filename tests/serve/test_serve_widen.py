"""``--max-batch`` (``hlopipe.generate.widen``) for steps not exported at batch 1 with a position
argument: a JAX step exported at batch 2 with a position per sequence, served at 4 rows (two
groups of 2, vmapped), and a torch_xla export (``hlopipe.torch.export_generation``: batch 2,
its position in ``StaticCache`` counters) served at 4 rows in 2 stages, each row a group of
its own. Concurrent clients over real HTTP, prompts of mixed lengths.

The oracles are independent of the widening: the JAX step as a Python function, one sequence
alone, fed its prompt a token a step in a plain loop; for the torch_xla export, torch's own
``model.generate`` tokens (stored with the fixture) and the unsplit exported decode program
called in a plain loop from empty caches, its counters carried by the program itself."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError
from tests.serve.test_serve_batch import _complete, _serving

pytestmark = pytest.mark.x64  # the torch_xla export's int64 tokens and counters

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests" / "data" / "frameworks" / "torch_xla" / "export_llama"
B, LEN, D, VOCAB, P = 2, 16, 8, 32, 4


def _step(emb, w, mix, cache, tok, pos):
    """A one-layer causal step at batch ``B``: each row's token embedding written into its
    cache row at its own position, the next token read off the entries up to it, weighted by
    position and mixed."""
    rows = jnp.arange(tok.shape[0])
    cache = cache.at[rows, pos].set(emb[tok])
    return _next(emb, w, mix, cache, jnp.arange(LEN)[None] <= pos[:, None]), cache


def _prefill(emb, w, mix, prompt):
    cache = (
        jnp.zeros((prompt.shape[0], LEN, D), emb.dtype).at[:, : prompt.shape[1]].set(emb[prompt])
    )
    seen = jnp.broadcast_to(jnp.arange(LEN) < prompt.shape[1], (prompt.shape[0], LEN))
    return _next(emb, w, mix, cache, seen), cache


def _next(emb, w, mix, cache, seen):
    read = (cache * (w * seen)[:, :, None]).sum(1)
    return jnp.argmax(jnp.tanh(read @ mix) @ emb.T, -1).astype(jnp.int32)


def _weights():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((VOCAB, D)).astype(np.float32),
            rng.uniform(0.5, 1.5, LEN).astype(np.float32),
            rng.standard_normal((D, D)).astype(np.float32))  # fmt: skip


def _alone(prompt, n):
    """Greedy tokens after ``prompt``: the step run directly, the sequence alone in row 0."""
    weights = _weights()
    step = jax.jit(_step)
    cache = jnp.zeros((B, LEN, D), jnp.float32)
    out: list[int] = []
    for pos in range(len(prompt) + n - 1):
        feed = prompt[pos] if pos < len(prompt) else out[-1]
        tok, cache = step(*weights, cache, jnp.asarray([feed, 0], jnp.int32),
                          jnp.asarray([pos, 0], jnp.int32))  # fmt: skip
        if pos >= len(prompt) - 1:
            out.append(int(tok[0]))
    return out


def _programs():
    f32, i32 = jnp.float32, jnp.int32
    emb, w = jax.ShapeDtypeStruct((VOCAB, D), f32), jax.ShapeDtypeStruct((LEN,), f32)
    mix = jax.ShapeDtypeStruct((D, D), f32)
    cache = jax.ShapeDtypeStruct((B, LEN, D), f32)
    vec = jax.ShapeDtypeStruct((B,), i32)
    decode = jax.jit(_step, donate_argnums=3).lower(emb, w, mix, cache, vec, vec).as_text()
    prefill = jax.jit(_prefill).lower(emb, w, mix, jax.ShapeDtypeStruct((B, P), i32)).as_text()
    return hlopipe.load(decode), hlopipe.load(prefill)


def test_a_batch_2_export_widened_to_4_rows_equals_each_sequence_alone(tmp_path):
    """Six clients on 4 rows (two groups of the exported 2, one call of the vmapped step):
    prompts of 1 to 7 tokens (the prefill's 4: prefilled into its row alone; others padded
    or read by the step), two admitted into rows freed mid-run; each gets its sequence's
    tokens run alone."""
    from hlopipe.serve import build_server

    decode, prefill = _programs()
    np.savez(tmp_path / "p.npz", *_weights())
    said: list[str] = []
    server = build_server(decode, prefill=prefill, params_path=str(tmp_path / "p.npz"),
                          stages=1, groups=1, port=0, max_batch=4, max_len=LEN,
                          out=lambda *a, **k: said.extend(a))  # fmt: skip
    assert (server.engine.gen.batch, server.engine.gen.per_sequence) == (4, True)
    rng = np.random.default_rng(5)
    cases = [rng.integers(0, VOCAB, n).tolist() for n in (4, 2, 7, 1, 4, 5)]
    with _serving(server) as url, ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(lambda p: _complete(url, p, 6), cases))
    assert got == [_alone(p, 6) for p in cases]
    assert server.engine.prefilled >= 2  # the two prompts of the prefill's length
    assert "1 groups of 4 (a batch-2 step vmapped over groups of 2 rows, --max-batch)" in said[0]


def test_max_batch_not_a_multiple_of_the_exported_batch_is_refused():
    from hlopipe.generate import widen

    decode, prefill = _programs()
    with pytest.raises(RuntimeConfigError, match=r"max_batch.3 is not a multiple of 2"):
        widen(decode, (prefill,), 3)


def test_a_step_whose_batch_is_not_its_first_axis_is_refused():
    """A position per sequence but the cache ``[LEN, B, D]``: groups of rows would not lie
    whole along one axis; refused naming the state and what to do."""
    from hlopipe.generate import widen

    def step(emb, cache, tok, pos):
        cache = cache.at[pos, jnp.arange(B)].set(emb[tok])
        return jnp.argmax(cache.sum(0) @ emb.T, -1).astype(jnp.int32), cache

    vec = jax.ShapeDtypeStruct((B,), jnp.int32)
    avals = (jax.ShapeDtypeStruct((VOCAB, D), jnp.float32),
             jax.ShapeDtypeStruct((LEN, B, D), jnp.float32), vec, vec)  # fmt: skip
    program = hlopipe.load(jax.jit(step, donate_argnums=1).lower(*avals).as_text())
    with pytest.raises(RuntimeConfigError, match="not told to hold its batch of 2 along axis 0"):
        widen(program, (), 4)


def _llama_alone(prompt, n):
    """Greedy tokens after ``prompt``: the unsplit exported decode program called directly,
    from zero caches and counters, the prompt in both rows a token a call, each output the
    program aliases to an argument (caches and counters) carried to the next call."""
    manifest = json.loads((LLAMA / "manifest.json").read_text())
    arrays = dict(np.load(LLAMA / "params.npz"))
    prog = hlopipe.load(str(LLAMA / "decode.mlir"))
    fn = jax.jit(prog.as_function(flat=True))
    names = [a["name"] for a in manifest["decode"]["args"]]
    carried = {r.index: r.output for r in prog.arg_roles() if r.output is not None}
    given = {**arrays, **{names[i]: np.zeros(prog.in_avals[i].shape, prog.in_avals[i].dtype)
                          for i in carried}}  # fmt: skip
    out: list[int] = []
    for pos in range(len(prompt) + n - 1):
        given["tokens"] = np.full(B, prompt[pos] if pos < len(prompt) else out[-1], np.int64)
        got = fn(*[np.asarray(given[nm], a.dtype).reshape(a.shape)
                   for nm, a in zip(names, prog.in_avals, strict=True)])  # fmt: skip
        given.update({names[i]: got[o] for i, o in carried.items()})
        if pos >= len(prompt) - 1:
            out.append(int(np.argmax(got[0][0])))
    return out


def test_a_torch_xla_export_with_counters_served_at_4_rows_in_2_stages():
    """The torch_xla Llama (batch 2, counters) at ``--max-batch 4``, 2 stages: torch's own
    tokens for the fixture's prompts, and the unsplit program's for prompts of other
    lengths, all at once."""
    from hlopipe.cli._common import load
    from hlopipe.serve import build_server

    oracle = json.loads((LLAMA / "torch_oracle.json").read_text())
    decode, prefill = (
        load(str(LLAMA / "decode.mlir"), None),
        load(str(LLAMA / "prefill.mlir"), None),
    )
    said: list[str] = []
    server = build_server(decode, prefill=prefill, params_path=str(LLAMA / "params.npz"),
                          stages=2, groups=1, port=0, max_batch=4, max_len=12,
                          out=lambda *a, **k: said.extend(a))  # fmt: skip
    assert (server.engine.gen.batch, server.engine.gen.per_sequence) == (4, True)
    p0, p1 = oracle["prompts"]
    cases = [(p0, 6), (p1, 6), ([11, 40, 3], 4), ([5, 9, 21, 30, 2, 7, 44], 4), (p1[:2], 4)]
    with _serving(server) as url, ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(lambda c: _complete(url, *c), cases))
    assert got[:2] == oracle["torch_tokens"]
    assert got[2:] == [_llama_alone(p, n) for p, n in cases[2:]]
    assert server.engine.prefilled >= 2  # the fixture's prompts, each prefilled into its row
    assert ("1 groups of 4 (a batch-2 step (one position in StaticCache counters) vmapped, "
            "each row a call of its own, --max-batch)") in said[0]  # fmt: skip
