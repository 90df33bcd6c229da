"""``hlopipe plan`` against published training runs: predicted vs published step time (and
activation memory where the paper gives it), with the errors.

Each run's model is written the way a user writes one: a GPT-shaped loss in JAX (learned
position embeddings, pre-norm blocks of plain attention — einsum, causal mask, softmax — and a
GELU MLP of width 4h, a head tied to the embedding, token cross-entropy), bf16 parameters and
activations, abstract arguments (``jax.ShapeDtypeStruct``: no weights allocated), once with its
layers unrolled and once as a ``lax.scan`` over stacked layers. It is planned at the published
layout (degrees, recompute, microbatch size given; nothing searched) on the published device
count, and on the same devices and global batch with every degree left free (the searched
plan must fit and be predicted no slower than the published layout).

A second section, "other published runs" (``--only L3``; see the comment above
:data:`L3`), plans a Llama-shaped loss (RMSNorm, SwiGLU, grouped-query attention, RoPE, an
untied head; bf16, abstract arguments, full depth, unrolled and scanned) at the published
layouts of Llama 3 405B on 8,192 and 16,384 H100s.

Sources (every published figure below is one of these):

* [N21] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM", SC'21 (arXiv:2104.04473), Table 1 ("weak-scaling throughput"): ten GPT models
  on Selene (DGX A100 80 GB, 8 a node, HDR InfiniBand), sequence 2048, vocabulary 51,200; per
  row heads, hidden size, layers, tensor- and pipeline-parallel size, GPUs, batch size and the
  achieved teraFLOP/s per GPU. The FLOPs of a step are the paper's own count (section 5.1, eq.
  3): ``96 B s l h^2 (1 + s / 6h + V / 16 l h)`` (four passes: activation recomputation on), so
  the published step time is that count over (achieved FLOP/s per GPU x GPUs).
* [K22] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv:2205.05198, MLSys 2023), Table 3 (the 22B, 175B, 530B and 1T configurations: heads,
  hidden, layers, TP, PP, GPUs, global batch) and Table 5 (end-to-end iteration time with full
  recompute and with sequence parallelism plus selective recompute), model FLOPs
  ``72 B s l h^2 (1 + s / 6h + V / 12 l h)`` (section 6.3). Activation memory per layer by the
  paper's section 4 formulas: ``s b h (34 + 5 a s / h)`` bytes without recompute,
  ``34 s b h / t`` with tensor and sequence parallelism and selective recompute, ``2 s b h``
  with full recompute.

Selective recompute's memory, term by term (bytes per layer, in units of ``s b h / t``; 16-bit
activations, one-byte dropout masks). [K22] section 4.1 counts 34: the attention block 11 (the
QKV matmul's input 2, Q and K 4, V 2, the output projection's input 2, its dropout mask 1), the
MLP 19 (the first matmul's input 2, the GeLU's input 8, the second matmul's input 8, the dropout
mask 1), the two norms' inputs 4; selective recompute drops only the attention core's
``5 a s^2 b`` (scores, softmax, its dropout and mask). The programs here have no dropout: the
two residual dropout masks go, **32**. The paper's "selective" rows are planned with hlopipe's
``attention`` policy, which keeps exactly those (the weight matmuls' inputs and outputs; the
norms, the GeLU and attention's core recomputed): 2 + 6 + 2 + 2 + 2 + 8 + 8 + 2 = 32 (the layer's
input, the QKV output, the first norm's output, the attention output, the projection's output
(with the input, the second norm's input), the second norm's output, the first MLP matmul's
output and the GeLU's). hlopipe's ``selective`` is JAX's ``dots_with_no_batch_dims_saveable``
(the weight matmuls' outputs only, 18: -43.8%), another policy. The test suite checks the 32
by hand against the planner and the runtime's own residuals under ``attention``. Full
recompute keeps each layer's input, ``2 s b h / t`` in both.

What the published runs did that the cost model prices (``hlopipe/planner/_model.py``), as
Megatron-LM's code of the time does it (``megatron/model/distributed.py``): each microbatch's
gradients are added into fp32 ``main_grad`` buffers by a hook after every parameter's backward
(``param.main_grad.add_(param.grad.data)``: 10 bytes of HBM traffic a bf16 parameter a
microbatch), and ``allreduce_gradients`` all-reduces those buffers once the last microbatch's
backward is done (no overlap with compute). The data-parallel all-reduce runs on the NICs of
the group's members in each node (eight HDR ports for TP1, one for TP8: the ranks are ordered
TP, then DP, then PP). Attention's batched matmuls, as written (QK^T and the weighted sum over
an ``s x s`` matrix a head, contracting 64-128), are bound by HBM, not FLOPs (the roofline).
Before these three, the N21 rows were predicted 10-18% fast for TP8 and the small TP1/TP2 rows
were right only because their all-reduce ran on one port.

How the figures were checked here: [N21]'s rows were compared with two public transcriptions of
its Table 1 (found by a search of public repositories while writing this file; every number the
same), and checked for consistency: each row's parameter count from its shape (``12 l h^2 (1 +
13/12h + (V + s)/12 l h)``) equals the published one to 0.1B, and each achieved FLOP/s over
A100's 312 TFLOP/s equals the published percentage of peak. [K22]'s selective-recompute times
are checked against its model FLOPs utilization (22B 41.5%, 175B 51.4%, 530B 56.0%, 1T 56.3%,
the Megatron-LM README's table): FLOPs / (MFU x 312 TFLOP/s x GPUs) gives 1.10, 13.75, 37.86 and
71.45 s against the table's 1.10, 13.75, 37.83 and 71.49. [K22]'s full-recompute times (1.42,
18.13, 49.05, 94.42 s) are as recalled; no public copy of its Table 5 was found to check them
against. One consistency check: the abstract (arXiv:2205.05198, checked) gives the 530B model's
MFU as 54.2% with sequence parallelism and selective recompute and 42.1% with full recompute
(on 2,240 GPUs; per-GPU work is the same in both runs), so the full-recompute step should take
37.83 x 54.2 / 42.1 = 48.70 s: the recalled 49.05 is within 0.7% of it. The other three rows
are unchecked (marked *). Microbatch sizes are not in either table: 1 is
assumed for every row. The pipeline schedule is taken as 1F1B (not interleaved) for every row.

Usage:
    python benchmarks/plan_published.py [--only N21|K22|L3] [--no-scan] [--no-search] [--json F]
    python benchmarks/plan_published.py --timing    # hlopipe plan on 405B-wide 126-layer programs
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from hlopipe import planner
from hlopipe.planfile import Recompute

SEQ = 2048
VOCAB = 51200
A100_PEAK = 312e12  # NVIDIA A100 datasheet, dense BF16


class Run(NamedTuple):
    source: str
    name: str
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    batch: int
    recompute: Recompute
    published_s: float
    verified: bool


def _n21_flops(r: Run) -> float:
    b, s, l, h, v = r.batch, SEQ, r.layers, r.hidden, VOCAB
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def _k22_model_flops(r: Run) -> float:
    b, s, l, h, v = r.batch, SEQ, r.layers, r.hidden, VOCAB
    return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h))


def _n21(name, heads, hidden, layers, tp, pp, gpus, batch, tflops) -> Run:
    row = Run("N21", name, heads, hidden, layers, tp, pp, gpus, batch, Recompute.FULL, 0.0, True)
    return row._replace(published_s=_n21_flops(row) / (tflops * 1e12 * gpus))


N21 = [  # [N21] Table 1: name, heads, hidden, layers, TP, PP, GPUs, batch, achieved TFLOP/s/GPU
    _n21("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137),
    _n21("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    _n21("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142),
    _n21("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    _n21("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138),
    _n21("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    _n21("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148),
    _n21("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    _n21("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163),
    _n21("1008B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
_K22_SHAPES = {  # [K22] Table 3: heads, hidden, layers, TP, PP, GPUs, global batch
    "22B": (64, 6144, 48, 8, 1, 8, 4),
    "175B": (96, 12288, 96, 8, 8, 64, 64),
    "530B": (128, 20480, 105, 8, 35, 280, 280),
    "1T": (160, 25600, 128, 8, 64, 512, 512),
}
_K22_TIMES = {  # [K22] Table 5, seconds: (full recompute, sequence parallel + selective)
    "22B": (1.42, 1.10),
    "175B": (18.13, 13.75),
    "530B": (49.05, 37.83),
    "1T": (94.42, 71.49),
}
K22 = [
    Run("K22", name, *_K22_SHAPES[name], policy, _K22_TIMES[name][i], i == 1)
    for name in _K22_SHAPES
    for i, policy in enumerate((Recompute.FULL, Recompute.ATTENTION))
]


# --- the model, as a user writes it ----------------------------------------------------------


def _layer_norm(p: dict[str, Any], x: jax.Array) -> jax.Array:
    xf = x.astype(jnp.float32)
    mean = xf.mean(-1, keepdims=True)
    var = ((xf - mean) ** 2).mean(-1, keepdims=True)
    return ((xf - mean) * jax.lax.rsqrt(var + 1e-5)).astype(x.dtype) * p["g"] + p["b"]


def _block(p: dict[str, Any], x: jax.Array, heads: int) -> jax.Array:
    b, s, d = x.shape
    h = _layer_norm(p["ln1"], x)
    q, k, v = jnp.split(h @ p["qkv"] + p["qkv_b"], 3, axis=-1)
    q, k, v = (a.reshape(b, s, heads, d // heads) for a in (q, k, v))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // heads).astype(x.dtype)
    mask = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(mask, scores, jnp.asarray(-1e4, x.dtype))
    probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    att = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)
    x = x + att @ p["proj"] + p["proj_b"]
    h = jax.nn.gelu(_layer_norm(p["ln2"], x) @ p["fc1"] + p["fc1_b"])
    return x + h @ p["fc2"] + p["fc2_b"]


def _head_loss(params: dict[str, Any], x: jax.Array, targets: jax.Array) -> jax.Array:
    logits = (_layer_norm(params["ln_f"], x) @ params["embed"].T).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def loss_unrolled(params, tokens, targets, *, heads: int):
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    for p in params["layers"]:
        x = _block(p, x, heads)
    return _head_loss(params, x, targets)


def loss_scanned(params, tokens, targets, *, heads: int):
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    x, _ = jax.lax.scan(lambda h, p: (_block(p, h, heads), None), x, params["blocks"])
    return _head_loss(params, x, targets)


def abstract_args(r: Run, *, scanned: bool, microbatch: int = 1) -> tuple[Any, ...]:
    bf16, h = jnp.bfloat16, r.hidden

    def a(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, bf16)

    def block(*lead: int) -> dict[str, Any]:
        ln = {"g": a(*lead, h), "b": a(*lead, h)}
        return {
            "ln1": ln, "qkv": a(*lead, h, 3 * h), "qkv_b": a(*lead, 3 * h),
            "proj": a(*lead, h, h), "proj_b": a(*lead, h), "ln2": dict(ln),
            "fc1": a(*lead, h, 4 * h), "fc1_b": a(*lead, 4 * h),
            "fc2": a(*lead, 4 * h, h), "fc2_b": a(*lead, h),
        }  # fmt: skip

    params: dict[str, Any] = {
        "embed": a(VOCAB, h), "pos": a(SEQ, h), "ln_f": {"g": a(h), "b": a(h)},
    }  # fmt: skip
    if scanned:
        params["blocks"] = block(r.layers)
    else:
        params["layers"] = [block() for _ in range(r.layers)]
    tokens = jax.ShapeDtypeStruct((microbatch, SEQ), jnp.int32)
    return params, tokens, tokens


# --- planning ----------------------------------------------------------------------------------


@functools.cache
def _profile(r: Run, scanned: bool) -> planner.Profile:
    fn = functools.partial(loss_scanned if scanned else loss_unrolled, heads=r.heads)
    return planner.profile_program(fn, *abstract_args(r, scanned=scanned), attention_fused=False)


def _fixed(r: Run) -> planner.Fixed:
    return planner.Fixed(
        tp=r.tp, pp=r.pp, dp=r.gpus // (r.tp * r.pp), cp=1, zero=0, recompute=r.recompute,
        schedule="1f1b", virtual_stages=1, microbatch_size=1,
    )  # fmt: skip


def _paper_activations(r: Run, dropout: bool = True) -> float:
    """[K22] section 4: one layer's activation bytes per device for one microbatch of 1, with
    tensor and sequence parallelism (the planner assumes sequence parallelism with TP); without
    ``dropout``, less the two residual dropout masks (1 byte an element each)."""
    s, b, h, t = SEQ, 1, r.hidden, r.tp
    per = 2 if r.recompute is Recompute.FULL else (34 if dropout else 32)
    return per * s * b * h / t


def _predicted_layer_activations(prof: planner.Profile, r: Run) -> float:
    assert prof.layer is not None
    from hlopipe.planfile import Layout

    lay = Layout(
        tp=r.tp, pp=r.pp, dp=r.gpus // (r.tp * r.pp), cp=1, zero=0, recompute=r.recompute,
        schedule="1f1b", virtual_stages=1, microbatch_size=1, microbatches=1,
    )  # fmt: skip
    return planner.activation_bytes(prof.layer, lay, 1.0)


def row(r: Run, scanned: bool, search: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    prof = _profile(r, scanned)
    cluster = planner.cluster_spec("a100-80gb", r.gpus)
    plan = planner.plan_file(prof, cluster, r.batch, _fixed(r), fused_attention=False)
    plan_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "source": r.source, "run": r.name, "form": "scan" if scanned else "unrolled",
        "recompute": r.recompute.value, "layout": f"tp{r.tp} pp{r.pp} dp{r.gpus // (r.tp * r.pp)}",
        "published_s": r.published_s, "predicted_s": plan.step_time_s,
        "error": plan.step_time_s / r.published_s - 1, "verified": r.verified,
        "memory_gib": plan.memory_per_device_bytes / 2**30, "fits": plan.fits,
        "plan_s": plan_s,
    }  # fmt: skip
    if r.source == "K22":
        paper = _paper_activations(r)
        got = _predicted_layer_activations(prof, r)
        out["act_paper_mib"] = paper / 2**20
        out["act_pred_mib"] = got / 2**20
        out["act_error"] = got / paper - 1
        nodrop = _paper_activations(r, dropout=False)
        out["act_nodrop_mib"] = nodrop / 2**20
        out["act_nodrop_error"] = got / nodrop - 1
    if search:
        free = planner.plan_file(prof, cluster, r.batch, planner.Fixed(), fused_attention=False)
        lay = free.layout
        out["searched"] = (
            f"tp{lay.tp} pp{lay.pp} dp{lay.dp} cp{lay.cp} z{lay.zero} {lay.recompute.value} "
            f"{lay.schedule} v{lay.virtual_stages} mb{lay.microbatch_size}"
        )
        out["searched_s"] = free.step_time_s
        out["searched_fits"] = free.fits
        out["searched_no_slower"] = free.fits and free.step_time_s <= plan.step_time_s * (1 + 1e-9)
    return out


# --- other published runs: Llama 3 405B on H100 ------------------------------------------------
#
# [L3] Llama Team, AI @ Meta, "The Llama 3 Herd of Models" (arXiv:2407.21783, 2024), section
# 3.3.2 and Table 4 ("scaling configurations and MFU for each stage of Llama 3 405B
# pre-training"): H100 80 GB (700 W), 8 a server on NVLink, 400 Gb/s RoCE a GPU between servers;
# the model (Table 3): 126 layers, width 16,384, FFN 53,248, 128 heads, 8 key/value heads,
# vocabulary 128,256, RoPE (theta 500,000), SwiGLU, RMSNorm, an output head apart from the
# embedding. Rows: GPUs, TP, CP, PP, DP, sequence, batch size per DP group, tokens a batch,
# TFLOPs/GPU, BF16 MFU:
#   8,192   8  1  16   64    8,192  32  16M  430  43%
#   16,384  8  1  16  128    8,192  16  16M  400  41%
#   16,384  8 16  16    8  131,072  16  16M  380  38%
# The same three rows (GPUs, TP, CP, PP, tokens a batch, TFLOPS/GPU) are on P. Balaji's SC'24
# slide ("Herding Llamas", transcribed at glennklockwood.com/garden/llama-3.1); each TFLOPs/GPU
# over H100's 989 TFLOP/s dense BF16 is the published MFU (43.5%, 40.4%, 38.4%). The third row is
# not planned: its TP x CP = 128 GPUs span 16 servers, and the planner keeps a context-parallel
# group inside a node. DP and the batch per DP group follow from the slide's figures (GPUs /
# (TP CP PP); 16M tokens / 8,192 / DP). The paper does not state its FLOP count; the published
# step time is taken as a step's FLOPs by the count of Meta's open-source training library
# (torchtitan's ``get_num_flop_per_token``; the PaLM paper's appendix B, Chowdhery et al.
# 2022): ``6 N + 12 l h s`` a token, ``N`` the parameters less the input embedding table, over
# (TFLOPs/GPU x GPUs). That count equals the program's own forward and backward matmul FLOPs
# (the planner's model FLOPs, printed beside it: causal attention counted whole in both).
#
# What the paper does not publish, and how each is set here: the microbatch size (1: the
# batch per DP group is the number of microbatches, 32 and 16); the schedule is interleaved
# (section 3.3.2: Meta's tuned version of Narayanan et al.'s interleaved 1F1B), its virtual
# stages, the recompute policy and the ZeRO level are the planner's best fitting choice at the
# published degrees (the paper's data parallelism is FSDP sharding optimizer state and
# gradients, and, as recalled from section 3.3.2 (not re-checked here), not resharding the
# parameters after the forward: ZeRO-2; ZeRO 0 to 3 are searched); the cut is the planner's
# (the paper's drops one layer from the first and last
# stages; the planner's balance puts the head's stage one short).
# Attention is costed as a fused kernel (Meta's runs use one; the program writes it out, as a
# user does). What the runs overlap (the gradient reduce-scatter with the backward) is priced
# without overlap (the model's stated assumption).
#
# The 8,192-GPU row was +15.5% until the planner counted interleaved 1F1B's activations as what
# a rank holds at once (its warm-up's forwards and one: 79 stage-microbatches on the first rank
# at p 16, v 4, m 32, Korthikanti et al. 2022 section 4.2.3) rather than the sum of its four
# stages' peaks (112): with 32 microbatches selective recompute did not fit and full was
# chosen. It now fits with 0.2 GiB to spare (74.3 of 74.5 GiB), so that row's plan is on the
# edge of the memory model's allowance (5% for the allocator, a stated figure), in both forms.
# The scanned form plans as the unrolled one (selective, ZeRO-1, 74.3 GiB, -8.3%). It was +15.9%
# while its scanned layer loop kept each iteration's input under selective, the first one (the
# embedding, 256 MiB a microbatch before TP) included, which the unrolled form redoes from the
# tokens: the scanned form did not fit under selective at ZeRO-1 and planned full recompute.
# Now the split gives a cut loop that starts from a value the program makes (the embedding) a
# first iteration with a range and rows of its own (hlopipe/stages/_cuts.py), and under
# selective and attention the stage's autodiff runs that one-iteration loop at its top level,
# no rows copied, where the backward redoes the embedding from the tokens as the unrolled form
# does (hlopipe/stages/_autodiff.py). The planner prices what the runtime keeps:
# tests/runtime/test_recompute_in_loops.py checks, for both forms, the runtime's residuals, the
# compiled forwards' output bytes and the planner's count against one hand count, and the
# gradients against one device. ZeRO-2 is not chosen: hlopipe's ZeRO-2 reduce-scatters each
# microbatch's fp32 gradient into the sharded accumulator, 32 reduce-scatters of 13.8 GB a
# device on the DP NICs (9.4 s, priced without overlap, as the runtime runs it); the published
# run overlaps that with the backward.

L3_SEQ = 8192
L3_VOCAB = 128256
H100_PEAK = 989e12  # NVIDIA H100 SXM datasheet, dense BF16


class LlamaRun(NamedTuple):
    source: str
    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    tp: int
    pp: int
    cp: int
    gpus: int
    batch: int  # sequences a step (the global batch)
    tflops: float  # published TFLOPs/GPU
    device: str


L3 = [  # [L3] Table 4, the 8K-sequence rows
    LlamaRun("L3", "405B/8K", 126, 16384, 53248, 128, 8, 8, 16, 1, 8192, 64 * 32, 430, "h100"),
    LlamaRun("L3", "405B/16K", 126, 16384, 53248, 128, 8, 8, 16, 1, 16384, 128 * 16, 400, "h100"),
]


def _l3_flops(r: LlamaRun) -> float:
    """One step's FLOPs by ``6 N + 12 l h s`` a token (see above)."""
    head_dim = r.hidden // r.heads
    attn = r.hidden * (2 * r.hidden + 2 * r.kv_heads * head_dim)
    n = r.layers * (attn + 3 * r.hidden * r.ffn + 2 * r.hidden) + r.hidden * (L3_VOCAB + 1)
    return r.batch * L3_SEQ * (6 * n + 12 * r.layers * r.hidden * L3_SEQ)


def _rms_norm(g: jax.Array, x: jax.Array) -> jax.Array:
    xf = x.astype(jnp.float32)
    return (xf * jax.lax.rsqrt((xf * xf).mean(-1, keepdims=True) + 1e-5)).astype(x.dtype) * g


def _rope(x: jax.Array, theta: float = 500000.0) -> jax.Array:
    _, s, _, d = x.shape
    inv = 1.0 / theta ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    angle = jnp.arange(s, dtype=jnp.float32)[:, None] * inv[None, :]
    cos, sin = jnp.cos(angle)[None, :, None, :], jnp.sin(angle)[None, :, None, :]
    xf = x.astype(jnp.float32)
    x1, x2 = xf[..., : d // 2], xf[..., d // 2 :]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).astype(x.dtype)


def _llama_block(p: dict[str, Any], x: jax.Array, heads: int, kv_heads: int) -> jax.Array:
    b, s, d = x.shape
    hd = d // heads
    h = _rms_norm(p["attn_norm"], x)
    q = _rope((h @ p["wq"]).reshape(b, s, heads, hd))
    k = _rope((h @ p["wk"]).reshape(b, s, kv_heads, hd))
    v = (h @ p["wv"]).reshape(b, s, kv_heads, hd)
    k, v = (jnp.repeat(a, heads // kv_heads, axis=2) for a in (k, v))  # grouped-query
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd).astype(x.dtype)
    mask = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(mask, scores, jnp.asarray(-1e4, x.dtype))
    probs = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    x = x + jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d) @ p["wo"]
    h = _rms_norm(p["mlp_norm"], x)
    return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]


def _llama_head_loss(params: dict[str, Any], x: jax.Array, targets: jax.Array) -> jax.Array:
    logits = (_rms_norm(params["norm"], x) @ params["output"]).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def llama_loss_unrolled(params, tokens, targets, *, heads: int, kv_heads: int):
    x = params["embed"][tokens]
    for p in params["layers"]:
        x = _llama_block(p, x, heads, kv_heads)
    return _llama_head_loss(params, x, targets)


def llama_loss_scanned(params, tokens, targets, *, heads: int, kv_heads: int):
    x = params["embed"][tokens]
    x, _ = jax.lax.scan(
        lambda h, p: (_llama_block(p, h, heads, kv_heads), None), x, params["blocks"]
    )
    return _llama_head_loss(params, x, targets)


def llama_args(r: LlamaRun, *, scanned: bool) -> tuple[Any, ...]:
    h, kv = r.hidden, r.kv_heads * (r.hidden // r.heads)

    def a(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16)

    def block(*lead: int) -> dict[str, Any]:
        return {
            "attn_norm": a(*lead, h), "wq": a(*lead, h, h), "wk": a(*lead, h, kv),
            "wv": a(*lead, h, kv), "wo": a(*lead, h, h), "mlp_norm": a(*lead, h),
            "w1": a(*lead, h, r.ffn), "w3": a(*lead, h, r.ffn), "w2": a(*lead, r.ffn, h),
        }  # fmt: skip

    params: dict[str, Any] = {"embed": a(L3_VOCAB, h), "norm": a(h), "output": a(h, L3_VOCAB)}
    if scanned:
        params["blocks"] = block(r.layers)
    else:
        params["layers"] = [block() for _ in range(r.layers)]
    tokens = jax.ShapeDtypeStruct((1, L3_SEQ), jnp.int32)
    return params, tokens, tokens


@functools.cache
def _llama_profile(r: LlamaRun, scanned: bool) -> planner.Profile:
    loss = llama_loss_scanned if scanned else llama_loss_unrolled
    fn = functools.partial(loss, heads=r.heads, kv_heads=r.kv_heads)
    return planner.profile_program(fn, *llama_args(r, scanned=scanned))


def llama_row(r: LlamaRun, scanned: bool, search: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    prof = _llama_profile(r, scanned)
    cluster = planner.cluster_spec(r.device, r.gpus)
    dp = r.gpus // (r.tp * r.pp * r.cp)
    fixed = planner.Fixed(
        tp=r.tp, pp=r.pp, dp=dp, cp=r.cp, microbatch_size=1, schedule="interleaved-1f1b"
    )
    plan = planner.plan_file(prof, cluster, r.batch, fixed)
    plan_s = time.perf_counter() - t0
    lay = plan.layout
    published_s = _l3_flops(r) / (r.tflops * 1e12 * r.gpus)
    out: dict[str, Any] = {
        "source": r.source, "run": r.name, "form": "scan" if scanned else "unrolled",
        "recompute": lay.recompute.value,
        "layout": f"tp{r.tp} pp{r.pp} dp{dp} cp{r.cp} v{lay.virtual_stages} z{lay.zero}",
        "published_s": published_s, "predicted_s": plan.step_time_s,
        "error": plan.step_time_s / published_s - 1, "verified": True,
        "memory_gib": plan.memory_per_device_bytes / 2**30, "fits": plan.fits, "plan_s": plan_s,
        "published_tflops": r.tflops,
        "predicted_tflops": _l3_flops(r) / (plan.step_time_s * r.gpus) / 1e12,
        "flops_ratio": plan.model_flops_per_step / _l3_flops(r),
    }  # fmt: skip
    if search:
        free = planner.plan_file(prof, cluster, r.batch, planner.Fixed())
        f = free.layout
        out["searched"] = (
            f"tp{f.tp} pp{f.pp} dp{f.dp} cp{f.cp} z{f.zero} {f.recompute.value} "
            f"{f.schedule} v{f.virtual_stages} mb{f.microbatch_size}"
        )
        out["searched_s"] = free.step_time_s
        out["searched_fits"] = free.fits
        out["searched_no_slower"] = free.fits and free.step_time_s <= plan.step_time_s * (1 + 1e-9)
    return out


def time_405b() -> list[tuple[str, float, int]]:
    """``hlopipe plan`` end to end (a fresh process: load, rehydrate, profile, search) on a
    405B-wide, 126-layer program (Llama 3.1 405B's width 16384, 128 heads, 126 layers; this
    file's GPT block with an MLP of 4 x 16384), as unrolled HLO text and as a scanned
    ``jax.export``: the wall seconds and the exit status of each."""
    import os
    import subprocess
    import tempfile

    r = Run("L405", "405B", 128, 16384, 126, 8, 16, 16384, 2048, Recompute.FULL, 0.0, False)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        unrolled = functools.partial(loss_unrolled, heads=r.heads)
        text = jax.jit(unrolled).lower(*abstract_args(r, scanned=False)).as_text("hlo")
        hlo = os.path.join(tmp, "l405.hlo")
        with open(hlo, "w") as f:
            f.write(text)
        scanned = functools.partial(loss_scanned, heads=r.heads)
        exported = jax.export.export(jax.jit(scanned))(*abstract_args(r, scanned=True))
        exp = os.path.join(tmp, "l405.jax_export")
        with open(exp, "wb") as f:
            f.write(exported.serialize())
        for name, path in (("unrolled HLO text", hlo), ("scanned jax.export", exp)):
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "hlopipe", "plan", path, "--device", "h100",
                 "--devices", "16384", "--global-batch", "2048", "--json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            out.append((name, time.perf_counter() - t0, done.returncode))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", choices=("N21", "K22", "L3"),
                    help="one source (L3: the other published runs, Llama 3 on H100)")  # fmt: skip
    ap.add_argument("--no-scan", action="store_true", help="only the unrolled programs")
    ap.add_argument("--no-search", action="store_true", help="skip the free search")
    ap.add_argument("--rows", help="comma-separated run names")
    ap.add_argument("--json", help="write the rows as JSON")
    ap.add_argument("--timing", action="store_true",
                    help="only time `hlopipe plan` on 405B-wide, 126-layer programs")  # fmt: skip
    args = ap.parse_args(argv)
    if args.timing:
        for name, seconds, code in time_405b():
            print(f"hlopipe plan, 405B-wide 126 layers, {name}: {seconds:.1f} s (exit {code})")
        return 0
    runs: list[Run | LlamaRun] = [r for r in N21 + K22 + L3 if args.only in (None, r.source)]
    if args.rows:
        runs = [r for r in runs if r.name in args.rows.split(",")]
    rows = []
    head = (f"{'src':4} {'run':7} {'form':8} {'recomp':9} {'layout':15} {'published':>9} "
            f"{'predicted':>9} {'error':>7} {'mem GiB':>8} {'plan s':>6}  searched")  # fmt: skip
    print(head)
    for r in runs:
        for scanned in (False,) if args.no_scan else (False, True):
            search = not args.no_search and not scanned
            x = (
                llama_row(r, scanned, search)
                if isinstance(r, LlamaRun)
                else row(r, scanned, search)
            )
            rows.append(x)
            mark = "" if x["verified"] else "*"
            extra = ""
            if "searched" in x:
                extra = (f"{x['searched']}: {x['searched_s']:.2f}s "
                         f"{'ok' if x['searched_no_slower'] else 'SLOWER/NOFIT'}")  # fmt: skip
            print(
                f"{x['source']:4} {x['run']:7} {x['form']:8} {x['recompute']:9} {x['layout']:15} "
                f"{x['published_s']:8.2f}{mark:1} {x['predicted_s']:9.2f} {x['error']:+7.1%} "
                f"{x['memory_gib']:8.1f} {x['plan_s']:6.1f}  {extra}",
                flush=True,
            )
    for label, keep in (("all rows", ("N21", "K22", "L3")), ("Megatron-LM (A100)", ("N21", "K22")),
                        ("other published runs (L3, H100)", ("L3",))):  # fmt: skip
        errors = [abs(x["error"]) for x in rows if x["source"] in keep]
        if errors:
            print(f"\nstep time, {label}: mean |error| {statistics.mean(errors):.1%}, max "
                  f"{max(errors):.1%}, rows within 15%: {sum(e <= 0.15 for e in errors)}/"
                  f"{len(errors)} (* = published figure not independently verified)")  # fmt: skip
    l3 = [x for x in rows if x["source"] == "L3"]
    if l3:
        print("\n[L3] TFLOPs/GPU by 6N + 12lhs a token (published, predicted) and the program's "
              "model FLOPs over that count:")  # fmt: skip
        for x in l3:
            print(
                f"  {x['run']:9} {x['form']:8} published {x['published_tflops']:5.0f} "
                f"(MFU {x['published_tflops'] * 1e12 / H100_PEAK:.1%})  "
                f"predicted {x['predicted_tflops']:5.0f}  program / formula {x['flops_ratio']:.6f}"
            )
    acts = [x for x in rows if "act_error" in x and x["form"] == "unrolled"]
    if acts:
        print(
            "\nactivations of one layer, one microbatch, one device, MiB: [K22] section 4's "
            "formula (34 sbh/t selective, 2 sbh/t full), the same without the two residual "
            "dropout masks (32 sbh/t; no dropout here), and what the planner keeps (the "
            "paper's selective rows planned with hlopipe's `attention` policy; see the "
            "docstring):"
        )
        for x in acts:
            print(
                f"  {x['run']:5} {x['recompute']:9} paper {x['act_paper_mib']:7.1f}  "
                f"no dropout {x['act_nodrop_mib']:7.1f}  predicted {x['act_pred_mib']:7.1f}  "
                f"{x['act_error']:+.1%} vs paper, {x['act_nodrop_error']:+.1%} vs no dropout"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
