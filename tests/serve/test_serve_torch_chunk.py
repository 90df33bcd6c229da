"""Chunked prefill from PyTorch (issue 49, part 1): a stock Hugging Face ``LlamaForCausalLM``
(2 layers, hidden 64, random weights) exported by ``hlopipe.torch.export_generation(...,
chunk=16)`` in a PyTorch venv (``scripts/fixtures/hf_export_chunk.py``; fixture
``tests/data/frameworks/torch_xla/export_llama_chunk/``): a prefill of 16 tokens, a decode step
taking a position per sequence and a chunk step of 16 tokens, served together as
``hlopipe serve DIR`` builds them. The oracle is torch's own: the tokens of
``model.generate(do_sample=False)`` in eager PyTorch, stored by the generator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _engine_run import run_all_counting_compiles

pytestmark = pytest.mark.x64

DIR = Path(__file__).resolve().parents[1] / "data" / "frameworks" / "torch_xla"


def _generator(num_stages):
    """The folder's decode step, prefill and chunk step, as ``hlopipe serve DIR`` builds
    them, on ``num_stages`` stages, one group of 2 rows."""
    from hlopipe.generate import Generator, read_export_folder
    from hlopipe.io import load

    folder = read_export_folder(str(DIR / "export_llama_chunk"))
    assert folder.chunk is not None and Path(folder.chunk).name == "chunk16.mlir"
    decode = load(folder.decode)
    programs = [load(folder.prefill), load(folder.chunk)]
    # the parameters by their state_dict names, in the decode step's order (--params does so)
    arrays = np.load(folder.params)
    names = [a["name"] for a in json.loads((DIR / "export_llama_chunk" / "manifest.json")
                                           .read_text())["decode"]["args"]]  # fmt: skip
    params = [arrays[names[r.index]] for r in decode.arg_roles().parameters
              if names[r.index] in arrays.files]  # fmt: skip
    return Generator(decode, params, prefill=programs, num_stages=num_stages, groups=1,
                     max_len=folder.max_len)  # fmt: skip


def test_prompts_of_any_length_through_the_torch_chunk_step_give_torchs_tokens():
    """Prompts of 1, 15, 17, 64 and 200 tokens, two at a time in one group of 2 slots: 17 is
    the prefill and a padded chunk, 64 the prefill and 3 whole chunks, 200 the prefill and 12
    chunks (the last padded); each gets the tokens torch's ``model.generate`` gave."""
    oracle = json.loads((DIR / "export_llama_chunk" / "torch_oracle.json").read_text())
    gen = _generator(num_stages=1)
    assert gen.per_sequence and gen.chunk is not None and gen.chunk.length == 16
    from hlopipe.serve import Engine

    engine = Engine(gen)
    cases = [(p, len(t)) for p, t in zip(oracle["prompts"], oracle["torch_tokens"], strict=True)]
    assert [len(p) for p, _ in cases] == [1, 15, 17, 64, 200]
    requests, compiled = run_all_counting_compiles(engine, cases)
    assert [r.seqs[0].tokens for r in requests] == oracle["torch_tokens"]
    assert compiled == []  # nothing left to compile once warm, at 1 stage as at 2 (below)
    # every prompt of more than one token prefilled into its row, and the long ones read by
    # chunks, not by the decode step a token a turn: 5 sequences of 5 tokens, their last
    # prompt token each, take at most 30 turns where the 200-token prompt fed after the
    # prefill alone takes 184
    assert engine.prefilled == 4
    assert engine.steps <= 30


def test_serving_after_the_warm_up_compiles_nothing():
    """After the engine's warm-up, at 2 stages: prompts of 1, 15, 16, 17, 64 and 200 tokens
    (the prefill alone, padded, exact, a padded chunk, whole chunks, an overlapping last
    chunk), each greedy, with log-probabilities, sampled with a seed and with penalties, all
    queued at once into one group of 2 rows (prefills beside running rows): XLA compiles
    nothing while they are served, as jax itself reports its compilations. A real user's
    first request must not pay a compile the warm-up could have paid. The greedy ones get
    torch's tokens."""
    from hlopipe.serve import Engine
    from hlopipe.serve._scheduler import SamplingParams

    oracle = json.loads((DIR / "export_llama_chunk" / "torch_oracle.json").read_text())
    prompts = [*oracle["prompts"][:2], oracle["prompts"][4][:16], *oracle["prompts"][2:]]
    assert [len(p) for p in prompts] == [1, 15, 16, 17, 64, 200]
    ways = (SamplingParams(), SamplingParams(logprobs=True),
            SamplingParams(seed=5, temperature=0.8),
            SamplingParams(presence=0.5, frequency=0.5, repetition=1.3))  # fmt: skip
    cases = [(p, 2, frozenset(), s, [], None, False, 2 if s.logprobs else None)
             for s in ways for p in prompts]  # fmt: skip
    engine = Engine(_generator(num_stages=2))
    requests, compiled = run_all_counting_compiles(engine, cases)
    assert compiled == []
    assert all(len(r.seqs[0].tokens) == 2 for r in requests)
    greedy = [r.seqs[0].tokens for r in requests[: len(prompts)]]
    torch = [t[:2] for t in oracle["torch_tokens"]]
    assert [greedy[i] for i in (0, 1, 3, 4, 5)] == torch
    assert engine.prefilled == 4 * (len(prompts) - 1)
