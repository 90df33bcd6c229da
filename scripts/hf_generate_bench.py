"""`model.generate` in eager PyTorch on a Hugging Face Llama of the size `benchmarks/serve.py
--llama` serves (d 768, 12 layers, 12 heads over 4 K/V heads, MLP 2048, vocabulary 32000,
about 125M parameters, float32, random weights): tokens/s at batch 1 and 8, greedy, the
comparison issue 49 asks for beside the server's table. Speed only: the weights are not the
benchmark's.

Run in a venv of its own with torch and transformers (not hlopipe's):
``/tmp/venv/bin/python scripts/hf_generate_bench.py [--batches 1,8] [--tokens 8]
[--prompt-len 16] [--repeats 3] [--threads 2]``.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      num_key_value_heads=4, intermediate_size=2048, vocab_size=32000,
                      max_position_embeddings=640, tie_word_embeddings=False)  # fmt: skip
    model = LlamaForCausalLM(cfg).eval()
    count = sum(p.numel() for p in model.parameters())
    print(f"transformers LlamaForCausalLM, {count / 1e6:.0f}M parameters, float32, eager, "
          f"{args.threads} threads; prompts of {args.prompt_len}, {args.tokens} new tokens, "
          f"greedy, median of {args.repeats}")  # fmt: skip
    print("| batch | model.generate tokens/s | ms per token step |")
    print("| ---: | ---: | ---: |")
    for batch in (int(b) for b in args.batches.split(",")):
        ids = torch.randint(0, cfg.vocab_size, (batch, args.prompt_len))
        kwargs = dict(max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False,
                      attention_mask=torch.ones_like(ids), pad_token_id=0)  # fmt: skip
        with torch.inference_mode():
            model.generate(ids, **kwargs)  # warm
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                model.generate(ids, **kwargs)
                times.append(time.perf_counter() - t0)
        wall = statistics.median(times)
        print(f"| {batch} | {batch * args.tokens / wall:.1f} | {wall / args.tokens * 1e3:.0f} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
