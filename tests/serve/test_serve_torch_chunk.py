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
from _engine_run import run_all

pytestmark = pytest.mark.x64

DIR = Path(__file__).resolve().parents[1] / "data" / "frameworks" / "torch_xla"


def test_prompts_of_any_length_through_the_torch_chunk_step_give_torchs_tokens():
    """Prompts of 1, 15, 17, 64 and 200 tokens, two at a time in one group of 2 slots: 17 is
    the prefill and a padded chunk, 64 the prefill and 3 whole chunks, 200 the prefill and 12
    chunks (the last padded); each gets the tokens torch's ``model.generate`` gave."""
    from hlopipe.generate import Generator, read_export_folder
    from hlopipe.io import load

    folder = read_export_folder(str(DIR / "export_llama_chunk"))
    oracle = json.loads((DIR / "export_llama_chunk" / "torch_oracle.json").read_text())
    assert folder.chunk is not None and Path(folder.chunk).name == "chunk16.mlir"
    decode = load(folder.decode)
    programs = [load(folder.prefill), load(folder.chunk)]
    # the parameters by their state_dict names, in the decode step's order (--params does so)
    arrays = np.load(folder.params)
    names = [a["name"] for a in json.loads((DIR / "export_llama_chunk" / "manifest.json")
                                           .read_text())["decode"]["args"]]  # fmt: skip
    params = [arrays[names[r.index]] for r in decode.arg_roles().parameters
              if names[r.index] in arrays.files]  # fmt: skip
    gen = Generator(decode, params, prefill=programs, num_stages=1, groups=1,
                    max_len=folder.max_len)  # fmt: skip
    assert gen.per_sequence and gen.chunk is not None and gen.chunk.length == 16
    from hlopipe.serve import Engine

    engine = Engine(gen)
    cases = [(p, len(t)) for p, t in zip(oracle["prompts"], oracle["torch_tokens"], strict=True)]
    assert [len(p) for p, _ in cases] == [1, 15, 17, 64, 200]
    requests = run_all(engine, cases)
    assert [r.seqs[0].tokens for r in requests] == oracle["torch_tokens"]
    # every prompt of more than one token prefilled into its row, and the long ones read by
    # chunks, not by the decode step a token a turn: 5 sequences of 5 tokens, their last
    # prompt token each, take at most 30 turns where the 200-token prompt fed after the
    # prefill alone takes 184
    assert engine.prefilled == 4
    assert engine.steps <= 30
