"""The planner's cost model, term by term, against hand computations from the shapes and the
cited figures: the gradient accumulator's traffic, a data-parallel group's bus bandwidth over
the node's NICs, a matmul's roofline."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe import planner, stages
from hlopipe.models import gpt
from hlopipe.planfile import Layout, Recompute

CFG = gpt.GPTConfig(vocab=32, seq=16, d_model=32, n_heads=4, n_layers=6, d_ff=64)
BATCH = 2


@functools.cache
def _profile() -> planner.Profile:
    params = jax.eval_shape(lambda k: gpt.init(k, CFG), jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((BATCH, CFG.seq), jnp.int32)
    return planner.profile_program(functools.partial(gpt.loss, cfg=CFG), params, (tokens, tokens))


def _layout(**kw) -> Layout:
    base = dict(tp=1, pp=1, dp=1, cp=1, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                virtual_stages=1, microbatch_size=BATCH, microbatches=1)  # fmt: skip
    return Layout(**{**base, **kw})


@pytest.mark.parametrize("itemsize, want", [(2, 2 + 4 + 4), (4, 4 + 4 + 4)])
def test_a_microbatchs_gradient_is_added_into_the_fp32_accumulator(itemsize, want):
    # the microbatch's gradient read, the fp32 accumulator read and written
    assert planner.grad_accumulation_bytes(itemsize) == want


def test_each_microbatch_pays_the_accumulation_on_its_ranks_parameters():
    """A microbatch's time on a rank less the same program's with no parameters counted (the
    matmuls, and so the compute, unchanged) is the accumulator's bytes over the rank's
    parameters at the A100's achieved HBM rate (1.80 TB/s measured), by hand."""
    prof = _profile()
    parts = {k: getattr(prof, k) for k in ("first", "layer", "last")}
    bare = replace(prof, **{k: replace(v, param_elements=0) for k, v in parts.items()})
    cluster = planner.cluster_spec("a100-80gb", 2)
    for pp in (1, 2):
        lay = _layout(pp=pp, microbatches=4)
        est = planner.estimate(prof, lay, cluster, stage_layers=(CFG.n_layers // pp,) * pp)
        ref = planner.estimate(bare, lay, cluster, stage_layers=(CFG.n_layers // pp,) * pp)
        for r in range(pp):
            first, last = prof.first.param_elements, prof.last.param_elements
            layers = CFG.n_layers // pp - (r == 0) - (r == pp - 1)
            elems = (r == 0) * first + (r == pp - 1) * last + layers * prof.layer.param_elements
            want = elems * (4 + 4 + 4) / 1.80e12  # fp32 here: gradient 4, accumulator 4 + 4
            assert est.rank_time_s[r] - ref.rank_time_s[r] == pytest.approx(want)


A100_PORT = 25e9 * 24 / 25  # HDR 200 Gb/s, 24 of 25 GB/s achieved (NVIDIA/nccl issue 812)
A100_NVLINK = 300e9 * 230 / 300  # NVLink 3, 230 GB/s all-reduce bus bandwidth (nccl-tests 149)


@pytest.mark.parametrize(
    "tp, dp, want",
    [
        (1, 32, 8 * A100_PORT),  # 8 members a node: NVIDIA's measured 192 GB/s across nodes
        (2, 32, 4 * A100_PORT),  # 4 members a node, on 4 NICs
        (8, 32, 1 * A100_PORT),  # one member a node (TP fills the node): its own port
        (1, 8, A100_NVLINK),  # inside one node
        (2, 4, A100_NVLINK),
    ],
)
def test_a_data_parallel_groups_bandwidth_is_its_nics_in_a_node(tp, dp, want):
    cluster = planner.cluster_spec("a100-80gb", tp * dp)
    got = planner.data_parallel_link(_layout(tp=tp, dp=dp), cluster)
    assert got == pytest.approx(want)


def test_a_matmul_is_the_longer_of_its_flops_and_its_bytes():
    """The roofline by hand on an A100 (108 SMs, 312 TFLOP/s at 86.9%, 2.039 TB/s at 88.3%):
    attention's scores of 16 heads (k = 128, an s x s product a head) are bound by memory; a
    weight matmul of 2048 x 8192 by 8192 x 8192 by FLOPs."""
    dev = planner.cluster_spec("a100-80gb", 1).device
    flops_rate = 312e12 * 271.2 / 312
    hbm = 2.039e12 * 1.80 / 2.039
    scores = planner.Matmul(b=16, m=2048, n=2048, k=128, role=planner.MatmulRole.HEADS)
    tiles = 16 * 16 * 16
    waves = math.ceil(tiles / 108)
    compute = 2 * 16 * 2048 * 2048 * 128 / (flops_rate * tiles / (waves * 108))
    memory = 2 * 16 * (2048 * 128 + 128 * 2048 + 2048 * 2048) / hbm
    assert memory > compute
    assert planner.matmul_time(scores, dev, 1, 312e12, 2) == pytest.approx(memory)
    assert planner.matmul_time(scores, dev, 1, 312e12, 0) == pytest.approx(compute)  # no bytes
    weight = planner.Matmul(b=1, m=2048, n=8192, k=8192, role=planner.MatmulRole.COLUMN)
    tiles = 16 * 64
    waves = math.ceil(tiles / 108)
    compute = 2 * 2048 * 8192 * 8192 / (flops_rate * tiles / (waves * 108))
    assert planner.matmul_time(weight, dev, 1, 312e12, 2) == pytest.approx(compute)


def _closed_form_attention_kept() -> int:
    """[K22] section 4.1's activations of one layer less its two dropout masks (no dropout
    here), by hand from the shapes, in elements a token: the QKV matmul's input h, Q and K 2h,
    V h, the output projection's input h, the MLP's first matmul's input h, the GeLU's input
    f and the second matmul's input f, the two norms' inputs 2h: 8h + 2f (the paper's 32 sbh
    at 2 bytes and f = 4h). Here at 4 bytes (the model is fp32); the second norm's input is
    kept as the projection's output (the layer's input is kept anyway): the same bytes."""
    h, f = CFG.d_model, CFG.d_ff
    return 4 * BATCH * CFG.seq * (8 * h + 2 * f)


def test_attention_recompute_keeps_the_papers_selective_activations():
    """The planner's bytes under ``attention`` recompute, the runtime's residuals under the same
    policy (the stage autodiff's cut, an independent walk), and the hand count agree; the
    runtime's chained forwards and backwards under it give jax.value_and_grad's gradients."""
    prof = _profile()
    want = _closed_form_attention_kept()
    lay = _layout(recompute=Recompute.ATTENTION)
    assert planner.activation_bytes(prof.layer, lay, 1.0) == want
    params = jax.eval_shape(lambda k: gpt.init(k, CFG), jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((BATCH, CFG.seq), jnp.int32)
    loss = functools.partial(gpt.loss, cfg=CFG)
    staged = stages.split(loss, params, (tokens, tokens), stage_layers=[1, 1, 3, 1])
    fb = staged.stage(1).forward_backward(0, remat="attention")
    assert sum(a.size * a.dtype.itemsize for a in fb.residual_avals) == want
    # smaller than keeping everything, more than the matmul outputs alone
    assert prof.layer.residual_bytes > want > prof.layer.selective_bytes
    # the stage's backward under the policy gives the gradients jax.vjp of its function gives
    st = staged.stage(1)
    rng = np.random.default_rng(1)

    def normal(a, std=1.0):
        return jnp.asarray(std * rng.standard_normal(a.shape), a.dtype)

    ps = [normal(a, 0.1) for a in st.param_avals]  # weights of a trained model's scale
    xs = [normal(r.aval) for r in st.receives]
    fun = jax.extend.core.jaxpr_as_fun(st.jaxpr)
    cts = [normal(o) for o in st.jaxpr.out_avals]

    @jax.jit
    def reference(p, x, c):
        outs, vjp = jax.vjp(lambda p, x: fun(*p, *x), p, x)
        return outs, *vjp(c)

    @jax.jit
    def cut(p, x, c):
        outs, res = fb.forward(p, x)
        return outs, *fb.backward(p, res, [c[i] for i in fb.diff_outputs])

    outs, want_p, want_x = reference(ps, xs, cts)
    got_outs, got_x, got_p = cut(ps, xs, cts)
    for a, b in zip(got_outs, outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    for i, g in zip(fb.diff_inputs, got_x, strict=True):
        np.testing.assert_allclose(g, want_x[i], rtol=1e-5, atol=1e-6)
    for i, g in zip(fb.diff_params, got_p, strict=True):
        np.testing.assert_allclose(g, want_p[i], rtol=1e-5, atol=1e-6)
    assert len(fb.diff_params) == len(ps) and fb.diff_inputs


def test_attention_recompute_runs_the_elementwise_work_again_not_a_fused_kernel():
    """Under ``attention`` recompute the backward redoes the forward's elementwise regions
    (norms, activations: their bytes at the A100's achieved 1.80 TB/s) and, with attention
    costed as a fused kernel, not the kernel (its output, a weight matmul's operand, is kept):
    a step's one rank takes that much longer than with nothing recomputed, by hand."""
    prof = _profile()
    cluster = planner.cluster_spec("a100-80gb", 1)
    none = planner.estimate(prof, _layout(), cluster)
    redo = planner.estimate(prof, _layout(recompute=Recompute.ATTENTION), cluster)
    fwd_bytes = (
        prof.first.forward.fused_bytes
        + prof.last.forward.fused_bytes
        + (CFG.n_layers - 2) * prof.layer.forward.fused_bytes
    )
    assert redo.rank_time_s[0] - none.rank_time_s[0] == pytest.approx(fwd_bytes / 1.80e12)
