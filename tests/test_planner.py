"""The planner: its closed forms against independent oracles (the ZeRO paper's byte counts, a
ring all-reduce simulated chunk by chunk, hlopipe's schedule generators and simulator), what it
reads from a program against a hand count of the model's FLOPs and Megatron's column/row
pairs, its search against a brute force, and the plan file it writes for a small model against
the contract (and ``stages.split`` cutting at its ``stage_layers``)."""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import _square_llama as square_llama
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hlopipe import planner, schedules, stages
from hlopipe.cli import main
from hlopipe.errors import PlanError, RuntimeConfigError, ScheduleError
from hlopipe.models import gpt, gpt_scan
from hlopipe.planfile import Layout, PlanFile, Recompute
from hlopipe.runtime import Pipeline, check_plan_devices

CFG = gpt.GPTConfig(vocab=32, seq=16, d_model=32, n_heads=4, n_layers=6, d_ff=64)
BATCH = 2


@functools.cache
def _profile() -> planner.Profile:
    params = jax.eval_shape(lambda k: gpt.init(k, CFG), jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((BATCH, CFG.seq), jnp.int32)
    return planner.profile_program(functools.partial(gpt.loss, cfg=CFG), params, (tokens, tokens))


# --- closed forms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "itemsize, zero, dp, want",
    [
        (2, 0, 8, 2 + 4 + 4 + 8),  # bf16 weights, fp32 grads, fp32 master + Adam's m and v
        (2, 1, 4, 2 + 4 + (4 + 8) / 4),  # ZeRO-1: the optimizer's 12 bytes over dp
        (2, 2, 4, 2 + (4 + 4 + 8) / 4),  # ZeRO-2: the gradients' 4 bytes too
        (4, 2, 2, 4 + (4 + 8) / 2),
        (2, 3, 4, (2 + 4 + 4 + 8) / 4),  # ZeRO-3 (FSDP): everything over dp
        (4, 0, 2, 4 + 4 + 8),  # fp32: no master copy
        (4, 1, 2, 4 + 4 + 8 / 2),
    ],
)
def test_bytes_per_parameter_by_policy_and_zero(itemsize, zero, dp, want):
    assert planner.bytes_per_param(itemsize, zero=zero, dp=dp) == pytest.approx(want)
    assert sum(planner.split_bytes_per_param(itemsize, zero=zero, dp=dp)) == pytest.approx(want)


def _ring_all_reduce_sent(n: int, nbytes: float) -> float:
    """Bytes device 0 sends in a ring all-reduce, simulated: the buffer in n chunks; n - 1
    reduce-scatter steps then n - 1 all-gather steps, each sending one chunk to the next
    device, checked to leave every device with the full sum."""
    values = [[float(d * n + c) for c in range(n)] for d in range(n)]  # device d, chunk c
    want = [sum(values[d][c] for d in range(n)) for c in range(n)]
    sent = 0.0
    for step in range(n - 1):  # reduce-scatter
        moves = [(d, (d - step) % n) for d in range(n)]
        incoming = [(d, c, values[d][c]) for d, c in moves]
        for d, c, v in incoming:
            values[(d + 1) % n][c] += v
        sent += nbytes / n
    for step in range(n - 1):  # all-gather
        moves = [(d, (d + 1 - step) % n) for d in range(n)]
        incoming = [(d, c, values[d][c]) for d, c in moves]
        for d, c, v in incoming:
            values[(d + 1) % n][c] = v
        sent += nbytes / n
    assert all(values[d] == want for d in range(n))
    return sent


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_ring_all_reduce_moves_two_n_minus_one_over_n(n):
    nbytes = 1000.0
    assert planner.ring_all_reduce_bytes(nbytes, n) == pytest.approx(
        _ring_all_reduce_sent(n, nbytes) if n > 1 else 0.0
    )


@pytest.mark.parametrize(
    "name, p, m, v",
    [("1f1b", 4, 8, 1), ("1f1b", 4, 2, 1), ("gpipe", 3, 5, 1), ("1f1b", 3, 2, 1)],
)  # fmt: skip
def test_in_flight_is_what_the_schedule_keeps(name, p, m, v):
    sched = schedules.get(name, p, m, v if v > 1 else None)
    per_stage = schedules.peak_in_flight(sched)
    per_rank = [0] * p
    for s, n in enumerate(per_stage):
        per_rank[sched.stage_to_rank[s]] += n
    assert planner.in_flight(name if name == "gpipe" else "1f1b", p, m, v) == per_rank


def _rank_peak(sched: schedules.Schedule, p: int) -> list[int]:
    """Stage-microbatches each rank holds at once, walking its actions in order."""
    held, peak = [0] * p, [0] * p
    for rank, row in sched.actions.items():
        for action in (a for step in row if step is not None for a in step.parts):
            held[rank] += {schedules.Kind.F: 1, schedules.Kind.B: -1}.get(action.kind, 0)
            peak[rank] = max(peak[rank], held[rank])
    return peak


def test_interleaved_in_flight_is_the_warm_up_and_bounds_the_generator():
    # by hand, rank r of p = 4, v = 2, m = 8: (v - 1) p + 2 (p - r - 1) + 1 = 11 - 2 r
    assert planner.in_flight("1f1b", 4, 8, 2) == [11, 9, 7, 5]
    # Korthikanti et al. 2022, 4.2.3: the first rank holds p (1 + (p - 1) / (p v)) microbatches
    # of its layers; p = 16, v = 4: 19.75, 79 stages' worth (each 1/4 of the rank's layers)
    assert planner.in_flight("1f1b", 16, 32, 4)[0] == 16 * (1 + 15 / 64) * 4
    # p dividing m: a bound on the order the runtime's generator keeps (it may warm up less)
    for p, v, k in itertools.product((2, 3, 4), (2, 3, 4), (1, 2, 4)):
        walked = _rank_peak(schedules.get("interleaved-1f1b", p, k * p, v), p)
        got = planner.in_flight("1f1b", p, k * p, v)
        assert all(w <= f for w, f in zip(walked, got, strict=True)), (p, k * p, v)


def test_interleaved_in_flight_where_p_does_not_divide_m_is_what_the_runtime_holds():
    """Interleaved 1F1B with m not a multiple of p: the stage-microbatches each rank holds at
    once (forwards run, backwards not yet), walking the runtime's own action lists, are the
    planner's count on a grid of p, v and m; and the model's activations per rank follow it."""
    for p, v in itertools.product((2, 3, 4), (2, 3, 4)):
        for m in (m for m in range(1, 2 * p + 2) if m % p):
            walked = _rank_peak(schedules.get("interleaved-1f1b", p, m, v), p)
            assert planner.schedule_in_flight("interleaved-1f1b", p, m, v) == walked, (p, m, v)
    # By hand, Megatron's warm-up and one, (v - 1) k + 2 (p - r - 1) + 1 with rounds of k
    # microbatches, where the runtime keeps the textbook order (p v m beyond its generator's
    # search): p 4, m 514 (128 rounds do not divide it: rounds of p = 4) and p 16, m 255 (15
    # even rounds of 17)
    hand = [
        ((4, 514, 2), [11, 9, 7, 5]),
        ((16, 255, 2), [17 + 2 * (15 - r) + 1 for r in range(16)]),
    ]
    for (p, m, v), want in hand:
        assert _rank_peak(schedules.get("interleaved-1f1b", p, m, v), p) == want
        assert planner.in_flight("1f1b", p, m, v) == want
        assert planner.schedule_in_flight("interleaved-1f1b", p, m, v) == want
    # the model: each rank's activations are one microbatch's times that count, whatever m
    prof, cluster = _profile(), planner.cluster_spec("a100-80gb", 2)
    per_mb = None
    for m in (3, 5, 7):
        lay = Layout(tp=1, pp=2, dp=1, cp=1, zero=0, recompute=Recompute.NONE,
                     schedule="interleaved-1f1b", virtual_stages=3, microbatch_size=BATCH,
                     microbatches=m)  # fmt: skip
        held = _rank_peak(schedules.get("interleaved-1f1b", 2, m, 3), 2)
        est = planner.estimate(prof, lay, cluster)
        got = [mem.activations / n for mem, n in zip(est.rank_memory, held, strict=True)]
        per_mb = per_mb or got
        assert got == pytest.approx(per_mb, rel=1e-4), m


@pytest.mark.parametrize("p, m, v", [(4, 8, 1), (3, 6, 1), (4, 8, 2), (2, 8, 4)])
def test_pipeline_time_and_bubble_match_the_simulator(p, m, v):
    name = "1f1b" if v == 1 else "interleaved-1f1b"
    timeline = schedules.simulate(schedules.get(name, p, m, v if v > 1 else None),
                                  {"F": 1 / v, "B": 1 / v})  # fmt: skip
    assert planner.pipeline_time([2.0] * p, m, v) == pytest.approx(timeline.makespan)
    assert planner.bubble_fraction(p, m, v) == pytest.approx(timeline.bubble_fraction)
    if v == 1:
        assert planner.bubble_fraction(p, m) == pytest.approx((p - 1) / (m + p - 1))


def _brute_force_step(sched, f: float, i: float, w: float):
    """The makespan of ``sched`` with every stage's F, I and W costing ``f``, ``i``, ``w`` (a B
    ``i + w``; an F and a B run together cost both), and each stage's most microbatches held
    at once: each rank runs its list in order, an action as soon as its rank is free and
    what it needs has ended (F after the previous stage's F; B or I after this stage's F and
    the next stage's B or I; W after this stage's I), until every action has run; held
    activations counted walking each list (an F takes one in, the last backward that reads
    it, W where there is one, lets it go). Written here, apart from hlopipe's simulator."""
    cost = {"F": f, "B": i + w, "I": i, "W": w}
    lists = {r: [a for a in acts if a is not None and a.kind.value in (*cost, "OVERLAP_F_B")]
             for r, acts in sched.actions.items()}  # fmt: skip
    last = sched.num_stages - 1
    end: dict[tuple[str, int, int], float] = {}

    def needs(a):
        k, st, mb = a.kind.value, a.stage, a.microbatch
        if k == "F":
            return [("F", st - 1, mb)] if st > 0 else []
        if k in ("B", "I"):
            later = [("B", st + 1, mb)] if st < last else []
            return [("F", st, mb), *later]
        return [("B", st, mb)]  # W after this stage's I (an I ends as a B would)

    pos = dict.fromkeys(lists, 0)
    free = dict.fromkeys(lists, 0.0)
    while any(pos[r] < len(lists[r]) for r in lists):
        moved = False
        for r, acts in lists.items():
            while pos[r] < len(acts):
                a = acts[pos[r]]
                deps = [d for part in a.parts for d in needs(part)]
                if any(d not in end for d in deps):
                    break
                start = max([free[r], *(end[d] for d in deps)])
                free[r] = start + sum(cost[part.kind.value] for part in a.parts)
                for part in a.parts:
                    kind = "B" if part.kind.value == "I" else part.kind.value
                    end[(kind, part.stage, part.microbatch)] = free[r]
                pos[r] += 1
                moved = True
        assert moved, "the schedule deadlocks"
    release = "W" if any(a.kind.value == "W" for acts in lists.values() for a in acts) else "B"
    held = [0] * sched.num_stages
    peak = [0] * sched.num_stages
    for acts in lists.values():
        for a in acts:
            for part in a.parts:
                if part.kind.value == "F":
                    held[part.stage] += 1
                    peak[part.stage] = max(peak[part.stage], held[part.stage])
                elif part.kind.value == release:
                    held[part.stage] -= 1
    ranks = {a.stage: r for r, acts in lists.items() for a in acts for a in a.parts}
    return max(free.values()), peak, [ranks[st] for st in range(sched.num_stages)]


SIMULATED = ["looped-bfs", "zb-h1", "zb-h2", "interleaved-zb", "zb-v", "dualpipev"]


@pytest.mark.parametrize("name", SIMULATED)
@pytest.mark.parametrize("p, m", [(4, 8), (3, 6), (4, 12)])
def test_every_schedule_the_runtime_runs_is_priced_as_a_brute_force_runs_it(name, p, m):
    """The bubble and microbatches in flight of each schedule beyond the closed forms, for
    uniform stages, against a brute-force run of the runtime's own action lists (the planner
    prices F, I and W as shares of a rank's microbatch; here 1/4, 1/2, 1/4 and 1/2, 1/8, 3/8)."""
    v = 2 if name in ("looped-bfs", "interleaved-zb", "zb-v", "dualpipev") else 1
    sched = schedules.get(name, p, m, v if v > 1 else None)
    for f, i, w in ((16, 32, 16), (32, 8, 24)):
        makespan, peak, ranks = _brute_force_step(sched, f / 64 / v, i / 64 / v, w / 64 / v)
        got = planner.schedule_pipeline_time(name, [1.0] * p, m, v, f / 64, w / 64)
        assert got == pytest.approx(makespan, rel=1e-12)
    assert planner.schedule_stage_ranks(name, p, v) == tuple(ranks)
    per_rank = [0] * p
    for st, n in enumerate(peak):
        per_rank[ranks[st]] += n
    assert planner.schedule_in_flight(name, p, m, v) == per_rank


@pytest.mark.parametrize("p, m", [(4, 8), (3, 6), (8, 16)])
def test_zb_h1s_bubble_is_qi_et_als(p, m):
    """ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", section 3.1): a bubble of
    (p - 1)(T_F + T_B - T_W) (their B is our I) where each W fits a gap (T_W at most T_F and
    T_B, as their derivation has it), and p microbatches in flight on every stage (their
    p M_B, 1F1B's peak)."""
    for f, i, w in ((1, 2, 1), (2, 1, 1), (3, 3, 2), (6, 6, 4)):  # shares in 1/64ths
        t = f + i + w
        got = planner.schedule_pipeline_time("zb-h1", [float(t)] * p, m, 1, f / t, w / t)
        assert got == pytest.approx(m * t + (p - 1) * (f + i - w))
    assert planner.schedule_in_flight("zb-h1", p, m, 1) == [p] * p


# --- what the program says ---------------------------------------------------------------------


def test_profile_counts_the_model_and_finds_megatron_pairs():
    prof = _profile()
    b, s, d, f, v = BATCH, CFG.seq, CFG.d_model, CFG.d_ff, CFG.vocab
    assert prof.layers == CFG.n_layers and prof.seq == s and prof.batch == b
    assert prof.heads == CFG.n_heads
    # one layer's forward matmuls by hand: qkv, scores, weighted sum, proj, fc1, fc2
    layer = 2 * b * s * (d * 3 * d + d * d + 2 * d * f) + 2 * 2 * b * s * s * d
    assert prof.layer is not None and prof.layer.forward.flops == layer
    assert prof.layer.backward.flops == 2 * layer  # two matmuls back for each forward one
    head = 2 * b * s * d * v
    assert prof.last is not None and prof.last.forward.flops == layer + head
    n_params = sum(x.size for x in jax.tree.leaves(gpt.init(jax.random.key(0), CFG)))
    # the embedding is read by the first and the last stage: counted on both
    assert prof.total_param_elements == n_params + v * d
    # Megatron's pairs: qkv and fc1 split by columns, proj and fc2 by rows (found by data flow)
    rules = dict(r.rsplit("=", 1) for r in prof.param_specs)
    by_name = {k.split("'")[-2]: spec for k, spec in rules.items()}
    assert by_name == {"qkv": "None,model", "fc1": "None,model", "proj": "model,None",
                       "fc2": "model,None"}  # fmt: skip
    assert prof.column_pairs == 2
    # selective recompute keeps the weight matmuls' outputs the backward needs (qkv 3d, proj d,
    # fc1 f per token, fp32; not fc2's, only added to the residual stream) and the layer's
    # input (d); full keeps the input alone
    assert prof.layer.selective_bytes == 4 * b * s * (3 * d + d + f + d)
    assert prof.layer.input_bytes == 4 * b * s * d
    # each rule matches that weight in every layer, by the pytree's own paths, and nothing else
    params = gpt.init(jax.random.key(0), CFG)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    for rule in prof.param_specs:
        pattern, name = rule.rsplit("=", 1)[0], rule.split("'")[-2]
        matched = {p for p in paths if re.search(pattern, p)}
        assert matched == {f"['layers'][{i}]['{name}']" for i in range(CFG.n_layers)}


def test_selective_recompute_keeps_what_jax_saves_under_that_policy():
    """The oracle: JAX's own residuals of one layer under ``jax.checkpoint`` with
    ``dots_with_no_batch_dims_saveable`` (the weight matmuls' outputs it may keep, read off
    ``print_saved_residuals``), plus the layer's input. The last weight matmul's output (only
    added to the residual stream) is not among them; counting it was the planner's old error."""
    import contextlib
    import io

    from jax.ad_checkpoint import print_saved_residuals

    params = jax.eval_shape(lambda k: gpt.init(k, CFG), jax.random.key(0))
    layer = params["layers"][1]
    x = jax.ShapeDtypeStruct((BATCH, CFG.seq, CFG.d_model), jnp.float32)
    policy = jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    f = jax.checkpoint(lambda p, h: gpt.block(p, h, CFG.n_heads), policy=policy)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(f, layer, x)
    want = 0
    for line in out.getvalue().splitlines():
        m = re.match(r"(\w+)\[([\d,]*)\]", line)
        if m and "from the argument p" not in line:  # activations (and the input), not weights
            want += np.dtype({"f32": np.float32, "bf16": jnp.bfloat16}[m.group(1)]).itemsize * (
                math.prod(int(d) for d in m.group(2).split(",") if d)
            )
    lay = Layout(tp=1, pp=1, dp=1, cp=1, zero=0, recompute=Recompute.SELECTIVE, schedule="1f1b",
                 virtual_stages=1, microbatch_size=BATCH, microbatches=1)  # fmt: skip
    assert planner.activation_bytes(_profile().layer, lay, 1.0) == want


def test_a_scanned_program_profiles_as_its_unrolled_form():
    params = jax.eval_shape(lambda k: gpt_scan.init(k, CFG), jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((BATCH, CFG.seq), jnp.int32)
    scanned = planner.profile_program(
        functools.partial(gpt_scan.loss, cfg=CFG), params, (tokens, tokens)
    )
    unrolled = _profile()
    assert scanned.layers == unrolled.layers
    assert scanned.layer is not None and unrolled.layer is not None
    assert scanned.layer.forward.flops == unrolled.layer.forward.flops
    assert scanned.layer.backward.flops == unrolled.layer.backward.flops
    assert planner.model_flops(scanned) == planner.model_flops(unrolled)
    # what each part keeps under the two partial policies: the same, the first part too (the
    # scanned stage 0 peels its loop's first iteration, so the embedding is redone from the
    # tokens in the backward, as the unrolled stage does, not stacked as the loop's first carry)
    for part in ("first", "layer", "last"):
        a, b = getattr(scanned, part), getattr(unrolled, part)
        assert (a.selective_kept_bytes, a.attention_kept_bytes) == (
            b.selective_kept_bytes, b.attention_kept_bytes), part  # fmt: skip
    # the pairs found through the scan: the stacked weights split on their last two axes
    by_name = {r.split("'")[-2]: r.rsplit("=", 1)[1] for r in scanned.param_specs}
    assert by_name == {"qkv": "None,None,model", "fc1": "None,None,model",
                       "proj": "None,model,None", "fc2": "None,model,None"}  # fmt: skip


def _attention_layer_loss(params, x, *, fused_call: bool):
    b, s, d = x.shape
    for p in params:
        q, k, v = ((x @ p[n]).reshape(b, s, 4, d // 4) for n in ("q", "k", "v"))
        if fused_call:
            a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // 4)
            scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
            a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
        x = x + a.reshape(b, s, d) @ p["o"]
    return jnp.mean(x**2)


def test_attention_written_either_way_is_found_and_costed_alike():
    d, s = 32, 16
    w = jax.ShapeDtypeStruct((d, d), jnp.float32)
    params = [{n: w for n in ("q", "k", "v", "o")} for _ in range(4)]
    x = jax.ShapeDtypeStruct((2, s, d), jnp.float32)
    profs = [
        planner.profile_program(functools.partial(_attention_layer_loss, fused_call=f), params, x)
        for f in (False, True)
    ]
    for prof in profs:
        assert prof.seq == s and prof.layer is not None
        attention = [m for m in prof.layer.forward.matmuls if m.attention]
        assert len(attention) == 2 and all(m.role == "heads" for m in attention)
    assert profs[0].layer.forward.flops == profs[1].layer.forward.flops


@pytest.mark.parametrize("tp, dp", [(1, 8), (2, 4), (4, 2)])
def test_zero1_all_gathers_the_updated_parameter_shards(tp, dp):
    """ZeRO-1 (Rajbhandari et al. 2020, section 5.1: each data-parallel rank updates its
    shard of the parameters, then the shards are all-gathered) moves, on each device, the
    parameters it holds (all of them over tp, one stage here) times (dp - 1) / dp over the
    data-parallel links, after the step (nothing overlaps it): the closed form from a program
    of 4 layers of four d x d fp32 weights and no other parameter. ZeRO-2 reduce-scatters each
    of the m microbatches' fp32 gradients into the sharded accumulator instead of one
    all-reduce, then gathers as ZeRO-1: (m + 1) (dp - 1) / dp of those bytes."""
    d, layers = 32, 4
    w = jax.ShapeDtypeStruct((d, d), jnp.float32)
    params = [{n: w for n in ("q", "k", "v", "o")} for _ in range(layers)]
    x = jax.ShapeDtypeStruct((2, 16, d), jnp.float32)
    prof = planner.profile_program(
        functools.partial(_attention_layer_loss, fused_call=False), params, x
    )
    gbps = 100.0  # the node's links; the nominal cpu device applies no efficiency to them
    cluster = planner.cluster_spec("cpu", 8, devices_per_node=8, intra_node_gbps=gbps)
    plain = Layout(tp=tp, pp=1, dp=dp, cp=1, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                   virtual_stages=1, microbatch_size=2, microbatches=1)  # fmt: skip
    zero0 = planner.estimate(prof, plain, cluster)
    zero1 = planner.estimate(prof, replace(plain, zero=1), cluster)
    held = layers * 4 * d * d / tp * 4  # bytes of the parameters on one device
    gathered = held * (dp - 1) / dp
    assert zero1.data_parallel_s - zero0.data_parallel_s == pytest.approx(gathered / (gbps * 1e9))
    for m in (1, 3):
        zero2 = planner.estimate(prof, replace(plain, zero=2, microbatches=m), cluster)
        assert zero2.data_parallel_s == pytest.approx((m + 1) * gathered / (gbps * 1e9))


# --- the search --------------------------------------------------------------------------------


def test_every_named_device_has_its_measured_efficiencies():
    """A device added to the table without a cited efficiency record would silently take the
    H100's figures: each named device has its own record, each fraction in (0, 1]."""
    assert set(stages.DEVICES) == set(planner.EFFICIENCY)
    for name, eff in planner.EFFICIENCY.items():
        fractions = (eff.matmul, eff.memory, eff.intra_link, eff.inter_node)
        assert all(0.0 < f <= 1.0 for f in fractions), name
        assert eff.basis and eff.measured in ("cpu", "a100", "h100"), name


def test_a_gpu_dumps_fused_attention_is_attention_to_the_planner():
    """A loss dumped after XLA's GPU passes (tests/data/gpu: attention as
    ``__cudnn$fmhaSoftmax``, its dots as cuBLAS calls, an MLP matmul whose ``[b s, f]`` output
    is square) profiles, on attention, as the JAX program it was made from: the same sequence
    length and heads, attention matmuls and FLOPs forward and backward, selective recompute's
    bytes, and what the backward keeps outside attention's core (all a fused kernel keeps).
    The core residuals differ as the two are written (by hand, ``b h s s`` f32 values: the
    plain softmax keeps exp, its broadcast sum's powers, the quotient and its cast, 5; the
    rehydrated call ``exp(s - max)`` inside its log-sum-exp and ``exp(s - lse)``, 2). The
    head size equals the sequence here (8): a rule by shape takes the call's Q, K and V for
    scores."""
    import hlopipe

    data = Path(__file__).resolve().parent / "data" / "gpu"
    b, h, s, dh = 4, 2, 8, 8
    scores = b * h * s * s * 4
    got, core = {}, {}
    for name in ("tiny_transformer.hlo", "tiny_transformer.gpu.hlo"):
        prog = hlopipe.load((data / name).read_text())
        prof = planner.profile_program(prog, attention_fused=False)
        parts = prof.marked or (prof.whole,)
        got[name] = (prof.seq, prof.heads, [
            (sum(m.attention for m in p.forward.matmuls), p.forward.attention_flops,
             p.backward.attention_flops, p.residual_bytes - p.attention_residual_bytes,
             p.selective_bytes)
            for p in parts
        ])  # fmt: skip
        core[name] = [p.attention_residual_bytes for p in parts]
    want = got["tiny_transformer.hlo"]
    assert want[0] == s and want[1] == h
    for n, fwd, bwd, *_ in want[2]:  # QK^T and PV forward, four matmuls back
        assert (n, fwd, bwd) == (2, 2 * 2 * b * h * s * s * dh, 4 * 2 * b * h * s * s * dh)
    assert got["tiny_transformer.gpu.hlo"] == want
    assert core == {"tiny_transformer.hlo": [5 * scores] * 2,
                    "tiny_transformer.gpu.hlo": [2 * scores] * 2}  # fmt: skip


LLAMA_S, LLAMA_L = 64, 4  # the sequence equals the width (_square_llama.D)


@pytest.mark.parametrize("written", ["einsum", "dot_product_attention", "scan"])
def test_attention_is_found_by_data_flow_when_the_width_equals_the_sequence(written):
    """Attention's core (scores to probabilities) is what lies between the two matmuls of
    two activations, not every square value: at d_model == seq and batch 1 the planner finds
    the heads (so tensor parallelism is searched), and attention's FLOPs and bytes equal the
    closed forms from the shapes. Attention written with einsums, with
    ``jax.nn.dot_product_attention`` and inside a scan over stacked layers."""
    d, s, h, n = square_llama.D, LLAMA_S, square_llama.H, LLAMA_L
    f32 = jnp.float32
    shapes = square_llama.SHAPES
    if written == "scan":
        params = {k: jax.ShapeDtypeStruct((n, *v), f32) for k, v in shapes.items()}
    else:
        params = [{k: jax.ShapeDtypeStruct(v, f32) for k, v in shapes.items()} for _ in range(n)]
    x = jax.ShapeDtypeStruct((1, s, d), f32)
    prof = planner.profile_program(functools.partial(square_llama.loss, written=written), params,
                                   x)  # fmt: skip
    assert (prof.seq, prof.heads, prof.batch) == (s, h, 1)
    layer = prof.layer
    assert layer is not None
    # QK^T and PV: 2 b s s d each forward; dP, dS K, dS^T Q and P^T dO back
    assert [m.b for m in layer.forward.matmuls if m.attention] == [h, h]
    assert layer.forward.attention_flops == 2 * 2 * s * s * d
    assert layer.backward.attention_flops == 4 * 2 * s * s * d
    # the backward of exp(x - max) / sum keeps exp's output and the quotient, h s s f32 each
    # (JAX's print_saved_residuals lists these two; the mask and the where's fill it lists too
    # are constants, made again); a fused kernel keeps neither
    assert layer.attention_residual_bytes == 2 * h * s * s * 4
    assert layer.forward.kv_bytes == 2 * s * d * 4  # V, and K its size: context parallelism's
    tps = {lay.tp for lay in planner.layouts(prof, 8, 8, planner.Fixed(), 8)}
    assert tps == {1, 2, 4}  # whole heads: 4 of them


@functools.cache
def _generated(name: str, p: int, m: int, v: int) -> bool:
    """Whether the runtime's generator makes this schedule (asked once a shape)."""
    try:
        schedules.get(name, p, m, v)
    except ScheduleError:
        return False
    return True


def test_search_equals_a_brute_force_over_the_space():
    prof = _profile()
    cluster = planner.cluster_spec("a100-40gb", 8, devices_per_node=4)
    batch = 8
    best = None
    for tp, pp, cp in itertools.product((1, 2, 4, 8), repeat=3):
        if 8 % (tp * pp * cp) or tp * cp > 4 or pp > CFG.n_layers or CFG.seq % cp:
            continue
        if CFG.n_heads % tp:
            continue
        dp = 8 // (tp * pp * cp)
        scheds = ("1f1b", "interleaved-1f1b", "gpipe", *SIMULATED) if pp > 1 else ("1f1b",)
        for sched, zero, rc, mb in itertools.product(scheds, (0, 1, 2, 3), list(Recompute),
                                                     (1, 2, 4, 8, 16)):  # fmt: skip
            if batch % (dp * mb) or (zero and dp * cp == 1):
                continue
            m = batch // (dp * mb)
            vs = {"interleaved-1f1b": (2, 4), "looped-bfs": (2, 4), "interleaved-zb": (2, 4),
                  "zb-v": (2,), "dualpipev": (2,)}.get(sched, (1,))  # fmt: skip
            for v in vs:
                if (sched == "interleaved-1f1b" and m % pp) or pp * v > CFG.n_layers:
                    continue
                if not _generated(sched, pp, m, v):  # a shape it refuses is no layout
                    continue
                lay = Layout(tp=tp, pp=pp, dp=dp, cp=cp, zero=zero, recompute=rc,
                             schedule=sched, virtual_stages=v, microbatch_size=mb,
                             microbatches=m)  # fmt: skip
                est = planner.estimate(prof, lay, cluster)
                if est.fits and (best is None or est.step_time_s < best.step_time_s):
                    best = est
    ranked = planner.search(prof, cluster, batch, planner.Fixed())
    assert best is not None and ranked[0].fits
    assert ranked[0].step_time_s == pytest.approx(best.step_time_s, rel=1e-12)
    assert len(ranked) == len({id(e) for e in ranked})


def test_given_degrees_are_kept_and_a_bad_batch_is_refused():
    prof = _profile()
    cluster = planner.cluster_spec("h100", 8)
    plan = planner.plan_file(prof, cluster, 16, planner.Fixed(tp=2, pp=2, zero=1))
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp * plan.layout.cp) == (2, 2, 2)
    assert plan.layout.zero == 1
    with pytest.raises(PlanError, match="no layout of 8 devices"):
        planner.plan_file(prof, cluster, 3, planner.Fixed(dp=2, microbatch_size=1))


def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for first in range(1, total - parts + 2):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def test_a_memory_cap_on_the_whole_training_memory_equals_a_brute_force():
    prof = _profile()
    lay = Layout(tp=1, pp=3, dp=1, cp=1, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                 virtual_stages=1, microbatch_size=BATCH, microbatches=8)  # fmt: skip
    cluster = planner.cluster_spec("h100", 3)
    ests = {c: planner.estimate(prof, lay, cluster, stage_layers=c)
            for c in _compositions(CFG.n_layers, 3)}  # fmt: skip
    worst = {c: max(m.total for m in e.rank_memory) for c, e in ests.items()}
    cap = sorted(set(worst.values()))[1]  # the second-tightest: some cuts fit, others not
    fitting = [c for c in ests if worst[c] <= cap]
    assert 0 < len(fitting) < len(ests)
    best = min(max(ests[c].rank_time_s) for c in fitting)
    got = planner.fit_stage_layers(prof, lay, cluster, cap)
    assert got in fitting and max(ests[got].rank_time_s) == pytest.approx(best)
    with pytest.raises(PlanError, match="no cut of 6 layers into 3 stages fits"):
        planner.fit_stage_layers(prof, lay, cluster, min(worst.values()) * 0.9)


def test_split_device_reports_the_planners_memory():
    params = jax.eval_shape(lambda k: gpt.init(k, CFG), jax.random.key(0))
    tokens = jax.ShapeDtypeStruct((BATCH, CFG.seq), jnp.int32)
    staged = stages.split(functools.partial(gpt.loss, cfg=CFG), params, (tokens, tokens),
                          stage_layers=[2, 4])  # fmt: skip
    lay = Layout(tp=1, pp=2, dp=1, cp=1, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                 virtual_stages=1, microbatch_size=BATCH, microbatches=4)  # fmt: skip
    cluster = planner.cluster_spec("h100", 2)
    from_split = planner.estimate(planner.profile_staged(staged), lay, cluster,
                                  fused_attention=False)  # fmt: skip
    from_plan = planner.estimate(_profile(), lay, cluster, stage_layers=(2, 4),
                                 fused_attention=False)  # fmt: skip
    fused = planner.estimate(planner.profile_staged(staged), lay, cluster)
    assert from_split.rank_memory == from_plan.rank_memory  # one model, either way in
    assert from_split.step_time_s == pytest.approx(from_plan.step_time_s, rel=0.01)
    # against the split itself: each stage's trained parameters at fp32's 4 + 4 + 8 bytes,
    # and the residuals its autodiff's forward returns that change with its inputs (those
    # made from constants alone are the same on any two runs, and made again) times 1F1B's
    # min(p - r, m) microbatches in flight
    trained = set(range(len(jax.tree.leaves(params))))
    for r, mem in enumerate(from_split.rank_memory):
        st = staged.stage(r)
        elements = sum(math.prod(a.shape) for i, a in zip(st.params_needed, st.param_avals,
                       strict=True) if i in trained)  # fmt: skip
        assert (mem.params, mem.grads, mem.optimizer) == (4 * elements, 4 * elements,
                                                          8 * elements)  # fmt: skip
        fb = st.forward_backward((0,))
        runs = [fb.forward(*_random_inputs(st, seed)) for seed in (1, 2)]
        varying = [a for a, b in zip(runs[0][1], runs[1][1], strict=True)
                   if not np.array_equal(a, b)]  # fmt: skip
        assert mem.activations == sum(a.nbytes for a in varying) * min(2 - r, 4)
        # a fused attention kernel keeps none of the scores and probabilities [..., s, s]
        scores = sum(a.nbytes for a in varying if a.shape[-2:] == (CFG.seq, CFG.seq))
        assert scores > 0
        assert fused.rank_memory[r].activations == mem.activations - scores * min(2 - r, 4)


def _random_inputs(stage, seed: int):
    """Random values for a stage's parameters (tokens in the vocabulary) and inputs."""
    keys = iter(jax.random.split(jax.random.key(seed), 64))

    def one(a):
        if jnp.issubdtype(a.dtype, jnp.integer):
            return jax.random.randint(next(keys), a.shape, 0, CFG.vocab, a.dtype)
        return jax.random.normal(next(keys), a.shape, a.dtype)

    return [one(a) for a in stage.param_avals], [one(r.aval) for r in stage.receives]


# --- the plan file for a small model -----------------------------------------------------------


def test_a_small_models_plan_is_a_valid_plan_file_that_split_accepts():
    prof = _profile()
    plan = planner.plan_file(prof, planner.cluster_spec("cpu", 8), 8, planner.Fixed(pp=2, tp=2))
    back = PlanFile.from_json(plan.to_json(), source="plan.json")
    assert back == plan
    lay = back.layout
    assert lay.devices_needed == 8 and lay.dp * lay.microbatches * lay.microbatch_size == 8
    assert sum(lay.stage_layers) == CFG.n_layers and len(lay.stage_layers) == lay.num_stages
    params = gpt.init(jax.random.key(0), CFG)
    batch = gpt.batch(jax.random.key(1), BATCH, CFG)
    staged = stages.split(functools.partial(gpt.loss, cfg=CFG), params, batch,
                          stage_layers=list(lay.stage_layers))  # fmt: skip
    assert [st.layers for st in staged.stages] == list(lay.stage_layers)


def test_plan_command_prints_json_and_refuses_bad_input(tmp_path, capsys):
    program = "hlopipe/models/data/tiny_gpt_loss.hlo"
    out = tmp_path / "plan.json"
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "8",
                 "--tp", "1", "--json", "-o", str(out)])  # fmt: skip
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["plan"]["tp"] == 1 and printed["cluster"]["devices"] == 4
    assert {"step_time_s", "memory_per_device_bytes", "model_flops_per_step", "mfu", "fits"} <= set(
        printed
    )
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "3",
                 "--dp", "2"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no layout of 4 devices")
    # a schedule no training runs is refused; a spelling of one the runtime trains with is that
    # one, planned at the virtual stages its generator makes (ZB-V: 2)
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "8",
                 "--schedule", "inference"])  # fmt: skip
    assert code == 2
    assert "error: --schedule inference: the planner models 1f1b" in capsys.readouterr().err
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "8",
                 "--pp", "2", "--schedule", "ZB_V", "--json"])  # fmt: skip
    assert code == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["schedule"] == "zb-v" and plan["virtual_stages"] == 2
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "8",
                 "--pp", "2", "--schedule", "Interleaved_1F1B", "--json"])  # fmt: skip
    assert code == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["schedule"] == "interleaved-1f1b" and plan["virtual_stages"] > 1
    # a plan with context parallelism says that the runtime does not run it
    code = main(["plan", program, "--device", "cpu", "--devices", "4", "--global-batch", "8",
                 "--cp", "2", "--json"])  # fmt: skip
    assert code == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("cp 2: context parallelism is costed here") for n in notes), notes


def test_inspect_device_counts_bf16_parameters(tmp_path, capsys):
    def loss(w, x):
        return jnp.sum((x @ w).astype(jnp.float32) ** 2)

    args = (jax.ShapeDtypeStruct((64, 32), jnp.bfloat16), jax.ShapeDtypeStruct((4, 64), jnp.int8))
    exported = jax.export.export(jax.jit(loss))(*args)
    path = tmp_path / "loss.jax_export"
    path.write_bytes(exported.serialize())
    assert main(["inspect", str(path), "--device", "h100", "--json", "--no-cost"]) == 0
    info = json.loads(capsys.readouterr().out)["device"]
    assert info["float_argument_bytes"] == 64 * 32 * 2
    assert info["training_bytes"] == 64 * 32 * 18  # bf16 + fp32 grads, master weights, m, v


def test_a_plan_for_8_cpu_devices_trains_as_one_device(tmp_path, capsys, monkeypatch):
    """`hlopipe plan` on a marker-free 6-layer program file (pp 2, dp 2 and cp 1 given; tp,
    ZeRO, recompute, schedule, virtual stages and the layers per stage chosen by the planner),
    then `hlopipe train --plan` on the 8 simulated CPU devices: the stages hold the plan's
    layers, and the losses are those of the program run directly on one device (--check)."""
    params = gpt.init(jax.random.key(0), CFG)
    tok = jax.ShapeDtypeStruct((8, CFG.seq), jnp.int32)
    lowered = jax.jit(functools.partial(gpt.loss, cfg=CFG)).lower(params, (tok, tok))
    program = tmp_path / "loss.hlo"
    program.write_text(lowered.as_text(dialect="hlo"))
    path = tmp_path / "plan.json"
    assert main(["plan", str(program), "--device", "cpu", "--devices", "8", "--global-batch",
                 "16", "--pp", "2", "--dp", "2", "--cp", "1", "--microbatch-size", "4",
                 "-o", str(path)]) == 0  # fmt: skip
    capsys.readouterr()
    lay = PlanFile.from_json(path.read_text(), source=str(path)).layout
    assert lay.devices_needed == 8 and sum(lay.stage_layers) == CFG.n_layers
    # the pipeline `train` builds from the plan (seen, not replaced: the one that trains below)
    built: list[Pipeline] = []
    from_plan = Pipeline.from_plan

    def seen(cls, *args, **kwargs):
        built.append(from_plan(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(Pipeline, "from_plan", classmethod(seen))
    assert main(["train", str(program), "--plan", str(path), "--steps", "2", "--check"]) == 0
    out = capsys.readouterr().out
    # the runtime cuts where the plan says (the layers each stage holds, read off its split)
    (pipe,) = built
    assert [st.layers for st in pipe.staged.stages] == list(lay.stage_layers)
    assert re.search(rf"^stages +{lay.num_stages}, holding the plan's", out, re.M), out
    assert f"each stage on a {lay.dp}x{lay.tp} mesh (data, model)" in out
    steps = [float(x) for x in re.findall(r"^step +\d+ +loss ([\d.]+)", out, re.M)]
    (check,) = re.findall(r"^check: .*loss ([\d.]+) -> ([\d.]+); max \|loss difference\| (\S+)",
                          out, re.M)  # fmt: skip
    assert len(steps) == 2 and steps[1] < steps[0]
    np.testing.assert_allclose([float(check[0]), float(check[1])], [steps[0], steps[1]],
                               rtol=1e-4)  # fmt: skip
    assert float(check[2]) < 1e-5 * steps[0]


def test_a_context_parallel_plan_is_refused_by_the_runtime(tmp_path):
    lay = Layout(tp=1, pp=2, dp=2, cp=2, zero=0, recompute=Recompute.NONE, schedule="1f1b",
                 virtual_stages=1, microbatch_size=1, microbatches=4)  # fmt: skip
    with pytest.raises(RuntimeConfigError, match=r"cp 2\): the runtime does not run context"):
        check_plan_devices(lay, jax.devices())
