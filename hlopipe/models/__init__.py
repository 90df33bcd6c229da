"""Small built-in models for the demo, the tests and the benchmarks (pure JAX)."""

from hlopipe.models import cnn, gpt, gpt_scan, llama, llama_decode, mlp

__all__ = ["cnn", "gpt", "gpt_scan", "llama", "llama_decode", "mlp"]
