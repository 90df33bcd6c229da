"""The time and memory of one layout of a profiled program on a cluster.

What it models, per microbatch on each pipeline rank: every matmul at the device's peak times
an efficiency (wave quantization of 128x128 output tiles over the device's compute units, as
NVIDIA's "Matrix Multiplication Background" guide describes, times the device's measured GEMM
efficiency, :data:`EFFICIENCY`), or its operands' and product's bytes at the memory rate when
that is longer (the roofline, :func:`matmul_time`: attention's matmuls as written),
every fused elementwise region at the device's memory bandwidth times its measured
streaming efficiency, tensor parallelism's all-reduces of each row matmul's output (forward,
backward, and the recomputed forward) on the node's links, the send of the stage's output to
the next stage (and its gradient back) on the node's or the cluster's links, and the extra
forward recompute runs, and each microbatch's gradients added into the fp32 accumulator
(:func:`_formulas.grad_accumulation_bytes` over the rank's parameters at the memory rate). A
step is the pipeline (:func:`_schedules.pipeline_time`), then the
data-parallel gradient all-reduce (on the NICs of the group's members in a node,
:func:`data_parallel_link`; at ZeRO 0, 1 and 3, as hlopipe's runtime all-reduces and
each device slices its shard; ZeRO-3's all-gathers of the parameters are priced, and so is
ZeRO-1's all-gather of the updated parameter shards; ZeRO-2 instead reduce-scatters each
microbatch's fp32 gradient into the sharded accumulator, ``m (n - 1) / n`` of the gradient
bytes, and all-gathers the updated parameters once, ``(n - 1) / n`` of their bytes: at
``m = 2`` the bus bytes of ZeRO-1's all-reduce and gather, more above) and the optimizer
step. Nothing overlaps with compute (Megatron-LM 2021 overlaps none of these in the runs the
benchmark compares with:
its ``DistributedDataParallel.allreduce_gradients`` all-reduces the accumulated fp32 gradients
once the last microbatch's backward is done, ``megatron/model/distributed.py``; an overlapped
run is faster than predicted).

Memory per device: parameters, gradients and optimizer state by :func:`bytes_per_param`, all
divided by TP (norm gains and biases are replicated in practice: under 0.1% of a layer's), the
activations the backward
reads (the per-stage autodiff's residuals; with selective or attention recompute those of
the autodiff cut under that policy, as the runtime keeps them; with full recompute only each
layer's input), divided by TP and CP (sequence
parallelism with TP, as Korthikanti et al. 2022), times the microbatches in flight on the
rank, the largest single value of the backward as a temporary, and ``ALLOCATOR_ALLOWANCE`` of
the rest for the allocator.

Constants (the only ones not read from the program or the device table): the achieved
fractions of each device's datasheet rates (:data:`EFFICIENCY`, each a published measurement,
cited below; links at those fractions too), and ``ALLOCATOR_ALLOWANCE`` (a stated allowance,
not a measurement).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from hlopipe.errors import PlanError
from hlopipe.planfile import Layout, Memory, Recompute
from hlopipe.planner import _formulas as F
from hlopipe.planner import _schedules as SCH
from hlopipe.planner._profile import Matmul, MatmulRole, PartCost, Profile
from hlopipe.stages import Device


class Efficiency(NamedTuple):
    """What fraction of a device's datasheet rate a well-shaped kernel reaches, each a
    published measurement (the sources below): ``matmul`` of the dense BF16 peak by a large
    GEMM, ``memory`` of the HBM bandwidth by a streaming kernel, ``intra_link`` of the node's
    link (each way) by NCCL's ring or a peer copy, ``inter_node`` of the network port (each
    way) by NCCL's bus bandwidth across nodes. ``measured`` names the device whose
    measurements these are (another device's where this one has none: said in ``basis``)."""

    matmul: float
    memory: float
    intra_link: float
    inter_node: float
    measured: str
    basis: str


# The measurements (value = measured / datasheet rate, both from the source):
# * GEMM: S. Bekman, "Machine Learning Engineering Open Book", "Maximum Achievable Matmul FLOPS
#   comparison table" (github.com/stas00/ml-engineering, compute/accelerator/README.md; BF16
#   ``torch.matmul``, best shape of a brute-force search, mean of 100 iterations): A100 SXM
#   271.2 of 312 TFLOP/s (86.9%), H100 SXM 794.5 of 989 (80.3%, "H200 is the same"), B200
#   SXM 1,745 of 2,250 (77.6%), MI300X 668.4 of 1,300 (51.4%, TunableOp on).
# * HBM: A100 80 GB SXM, a streaming read kernel at 1.80 of 2.039 TB/s (88%, confirmed by Nsight
#   Compute; NVIDIA Developer Forums, "Trouble to Reach Peak Bandwidth of A100", 2025); H100
#   SXM device-to-device copy 2,903 of 3,350 GB/s (86.7%; AI @ Georgia Tech and Voltage Park,
#   github.com/aigatech/vpbenchmarking, 8x H100 80GB HBM3 SXM5).
# * NVLink: A100, NCCL all-reduce bus bandwidth ~230 GB/s of NVLink 3's 300 GB/s each way
#   (NVIDIA's S. Jeaugey, NVIDIA/nccl-tests issue 149, 2023); H100, p2pBandwidthLatencyTest
#   unidirectional P2P writes 371-377 GB/s of 450 (NVIDIA/nccl issue 1264, HGX H100 SXM; 376
#   taken: 83.6%). NCCL's NVLink SHARP all-reduce (476 GB/s bus bandwidth on one H100 node,
#   NVIDIA/nccl-tests issue 290) is not a ring and not modelled.
# * Network: DGX A100, 8 x 200 Gb/s HDR, all-reduce bus bandwidth 192 GB/s across nodes, 24 of
#   25 GB/s a port (96%; NVIDIA's D. Addison, NVIDIA/nccl issue 812); NDR 400 Gb/s, 46-48 GB/s
#   a port (47 of 50 taken: 94%; the same, NVIDIA/nccl-tests issue 290).
_A100 = Efficiency(271.2 / 312, 1.80 / 2.039, 230 / 300, 24 / 25, "a100",
                   "GEMM, HBM, NVLink, HDR: A100 measurements")  # fmt: skip
_H100 = Efficiency(794.5 / 989, 2903 / 3350, 376 / 450, 47 / 50, "h100",
                   "GEMM, HBM, NVLink, NDR: H100 measurements")  # fmt: skip
#: Per device name (``stages.DEVICES``). A device with no published measurement of a kind takes
#: the nearest measured device's figure, said in ``basis``; ``cpu`` is a nominal host whose
#: rates are the cost model's defaults, not a datasheet, so no efficiency applies.
EFFICIENCY: dict[str, Efficiency] = {
    "cpu": Efficiency(1.0, 1.0, 1.0, 1.0, "cpu", "nominal host: none applied"),
    "a100-80gb": _A100,
    "a100-40gb": _A100._replace(basis="the A100 80 GB's HBM figure (no 40 GB measurement)"),
    "h100": _H100,
    "h200": _H100._replace(basis="GEMM measured ('same as H100'); HBM, links: the H100's"),
    "b200": _H100._replace(
        matmul=1745 / 2250, basis="GEMM measured on B200; HBM, NVLink 5: the H100's"
    ),
    "mi300x": _H100._replace(
        matmul=668.4 / 1300, basis="GEMM measured on MI300X; HBM, links: the H100's"
    ),
    "tpu-v4": _H100._replace(basis="no TPU measurement found: the H100's figures"),
    "tpu-v5e": _H100._replace(basis="no TPU measurement found: the H100's figures"),
    "tpu-v5p": _H100._replace(basis="no TPU measurement found: the H100's figures"),
}


def efficiency(device: Device) -> Efficiency:
    """The :class:`Efficiency` of ``device`` (the H100's for a device not in the table)."""
    return EFFICIENCY.get(device.name, _H100)


#: Memory the allocator loses to fragmentation, as a fraction of what is allocated: hlopipe's
#: stated allowance, NOT a measurement. The published measurements found are of PyTorch's
#: caching allocator (GMLake, Guo et al., ASPLOS'24: fragmentation up to ~30% in LLM training),
#: whose per-tensor allocations XLA does not make (a compiled step's buffers are assigned
#: statically, one temporary allocation); no measurement of XLA's allocator was found.
ALLOCATOR_ALLOWANCE = 0.05
#: Output tile of the matmul wave-quantization model (NVIDIA, "Matrix Multiplication
#: Background User's Guide": tiles of 128x128 and up, one per SM at a time).
TILE = 128


@dataclass(frozen=True)
class ClusterSpec:
    """The devices a layout runs on."""

    device: Device
    devices: int
    devices_per_node: int
    intra_node_bytes_per_s: float
    inter_node_bytes_per_s: float


@dataclass(frozen=True)
class Estimate:
    """One layout's prediction."""

    layout: Layout
    step_time_s: float
    pipeline_s: float
    data_parallel_s: float
    optimizer_s: float
    bubble: float
    memory: Memory
    fits: bool
    model_flops_per_step: float
    stage_layers: tuple[int, ...]
    rank_memory: tuple[Memory, ...] = ()
    rank_time_s: tuple[float, ...] = ()  # forward and backward of one microbatch, each rank

    @property
    def memory_per_device_bytes(self) -> int:
        return self.memory.total


def data_parallel_link(layout: Layout, cluster: ClusterSpec) -> float:
    """The achieved bus bandwidth (bytes/s, each way) of one data-parallel group's all-reduce.

    Ranks are laid out tensor-parallel innermost, then data-parallel, then pipeline (Megatron-LM's
    order, Narayanan et al. 2021, section 3.3: tensor parallelism inside a node). A group inside
    one node runs on the node's links. A group spanning nodes has ``k = devices_per_node /
    (tp cp)`` members in each node (at most ``dp``); NCCL's rings cross each node boundary on
    the NICs of those ``k`` GPUs (one NIC a GPU on a DGX A100), so the group's bus bandwidth is
    ``k`` ports' worth, at most the node's link: NVIDIA's measurement of eight GPUs a node
    across DGX A100 nodes is 192 GB/s, 8 x 24 GB/s (NVIDIA/nccl issue 812, the ``inter_node``
    figure of :data:`EFFICIENCY`). The ``tp cp`` groups of a node run at once, each on its own
    ``k`` NICs."""
    eff = efficiency(cluster.device)
    intra = cluster.intra_node_bytes_per_s * eff.intra_link
    inter = cluster.inter_node_bytes_per_s * eff.inter_node
    inner = layout.tp * layout.cp
    if inner * layout.dp <= cluster.devices_per_node:
        return intra
    k = max(1, min(layout.dp, cluster.devices_per_node // inner))
    return min(intra, k * inter)


def matmul_time(
    mm: Matmul, device: Device, tp: int, flops_per_s: float, itemsize: int = 2
) -> float:
    """Seconds for ``mm`` (all ``count`` of it) split ``tp`` ways: its largest axis divided
    (tensor parallelism shards output features, contracted features or heads). The roofline
    (Williams, Waterman & Patterson, "Roofline", CACM 2009): the longer of its FLOPs at the
    achieved matmul rate and its bytes (both operands read, the product written, ``itemsize``
    bytes an element) at the achieved memory rate. Attention's matmuls contract the head
    dimension (64-128) and write or read an ``s x s`` matrix a head: on an A100 (312 TFLOP/s
    over 2.04 TB/s: 153 FLOPs a byte) they are bound by memory, the weight matmuls by FLOPs."""
    dims = [mm.b, mm.m, mm.n, mm.k]
    if tp > 1:
        i = max(range(4), key=lambda j: dims[j])
        dims[i] = -(-dims[i] // tp)
    b, m, n, k = dims
    flops = 2.0 * b * m * n * k * mm.count
    tiles = b * math.ceil(m / TILE) * math.ceil(n / TILE)
    units = max(device.compute_units, 1)
    waves = math.ceil(tiles / units)
    quantized = tiles / (waves * units)
    eff = efficiency(device)
    compute = flops / (flops_per_s * eff.matmul * quantized)
    moved = float(itemsize) * b * (m * k + k * n + m * n) * mm.count  # 0: FLOPs alone
    return max(compute, moved / (device.bytes_per_s * eff.memory))


def _pass_time(
    matmuls: tuple[Matmul, ...], fused_bytes: float, device: Device, tp: int, cp: int,
    flops_per_s: float, scale: float, itemsize: int, fused_attention: bool,
) -> float:  # fmt: skip
    # a fused attention kernel keeps its scores on chip: its matmuls move no s x s matrix
    mm = (
        sum(
            matmul_time(
                m, device, tp, flops_per_s, 0 if fused_attention and m.attention else itemsize
            )
            for m in matmuls
        )
        / cp
    )
    mem = fused_bytes / (tp * cp) / (device.bytes_per_s * efficiency(device).memory)
    return scale * (mm + mem)


def part_times(
    part: PartCost, layout: Layout, device: Device, flops_per_s: float, scale: float,
    tp_link: float, fused_attention: bool, cp_link: float = 0.0, itemsize: int = 2,
) -> tuple[float, float]:  # fmt: skip
    """(forward, backward) seconds of one microbatch of ``part``, recompute's extra forward
    in the backward, tensor parallelism's all-reduces included."""
    tp, cp = layout.tp, layout.cp
    fwd_b = part.forward.fused_bytes + (0.0 if fused_attention else part.forward.attention_bytes)
    bwd_b = part.backward.fused_bytes + (0.0 if fused_attention else part.backward.attention_bytes)
    args = (device, tp, cp, flops_per_s, scale, itemsize, fused_attention)
    fwd = _pass_time(part.forward.matmuls, fwd_b, *args)
    bwd = _pass_time(part.backward.matmuls, bwd_b, *args)
    if fused_attention:  # the fused backward recomputes the scores (FlashAttention's bwd)
        scores = tuple(m for m in part.forward.matmuls if m.attention)
        bwd += _pass_time(scores, 0.0, *args) / 2
    comm = 0.0
    if tp > 1:
        per = F.ring_all_reduce_bytes(part.row_output_bytes * scale / cp, tp)
        comm = per / tp_link
    if cp > 1:  # ring attention: each rank's keys and values pass the ring (forward), and
        # their gradients pass back (backward: twice, keys/values and their gradients)
        kv = F.ring_gather_bytes(part.forward.kv_bytes * scale / tp, cp)
        fwd += kv / cp_link
        bwd += 2 * kv / cp_link
    extra = 0.0
    if layout.recompute is Recompute.FULL:
        extra = fwd + comm
    elif layout.recompute is Recompute.SELECTIVE or layout.recompute is Recompute.ATTENTION:
        # all but the weight matmuls again (ATTENTION keeps the last elementwise op before
        # each weight matmul too: under a region's bytes, counted as redone); a fused
        # attention kernel's output is a weight matmul's operand, so ATTENTION keeps it
        again = tuple(
            m
            for m in part.forward.matmuls
            if m.role is MatmulRole.HEADS
            and not (layout.recompute is Recompute.ATTENTION and fused_attention and m.attention)
        )
        extra = _pass_time(again, fwd_b, *args)
    return fwd + comm, bwd + comm + extra


def part_activations(
    part: PartCost, layout: Layout, scale: float, fused_attention: bool = True
) -> float:
    """Bytes one microbatch of ``part`` keeps for its backward on one device (a fused
    attention kernel keeps no attention-internal value: its backward makes them again)."""
    if layout.recompute is Recompute.FULL:
        kept = part.input_bytes
    elif layout.recompute is Recompute.SELECTIVE:
        kept = part.selective_bytes
    elif layout.recompute is Recompute.ATTENTION:
        kept = part.residual_bytes if part.attention_kept_bytes < 0 else part.attention_kept_bytes
    elif fused_attention:
        kept = part.residual_bytes - part.attention_residual_bytes
    else:
        kept = part.residual_bytes
    return kept * scale / (layout.tp * layout.cp)


def estimate(
    profile: Profile,
    layout: Layout,
    cluster: ClusterSpec,
    *,
    fused_attention: bool = True,
    stage_layers: tuple[int, ...] | None = None,
) -> Estimate:
    """The step time and per-device memory of ``layout`` (see the module docstring)."""
    dev = cluster.device
    flops_per_s = dev.bf16_flops_per_s if profile.param_itemsize < 4 else dev.fp32_flops_per_s
    scale = layout.microbatch_size / max(profile.batch, 1)
    eff = efficiency(dev)
    intra = cluster.intra_node_bytes_per_s * eff.intra_link  # achieved rates, each way
    inter = cluster.inter_node_bytes_per_s * eff.inter_node
    tp_link = intra
    if layout.tp * layout.cp > cluster.devices_per_node:
        tp_link = inter
    S = layout.num_stages
    parts = _stage_parts(profile, S, stage_layers)
    counts = tuple(n for n, _ in parts)
    # per stage: forward, backward seconds and kept bytes of one microbatch
    priced: dict[int, tuple[float, float, float, float, int]] = {}

    def price(part: PartCost) -> tuple[float, float, float, float, int]:
        if id(part) not in priced:
            pf, pb = part_times(
                part,
                layout,
                dev,
                flops_per_s,
                scale,
                tp_link,
                fused_attention,
                tp_link,
                profile.param_itemsize,
            )
            priced[id(part)] = (
                pf,
                pb,
                part_activations(part, layout, scale, fused_attention),
                _params_per_device(part, layout.tp),
                int(part.backward.largest_value * scale / layout.tp),
            )
        return priced[id(part)]

    per_stage: list[tuple[float, float, float, float, int]] = []
    for n_layers, extra in parts:
        items: list[tuple[PartCost, int]] = [(p, 1) for p in extra]
        if profile.layer is not None:
            items.append((profile.layer, n_layers - len(extra)))
        f = b = act = params = 0.0
        temp = 0
        for part, times in items:
            pf, pb, pa, pp_, pt = price(part)
            f += pf * times
            b += pb * times
            act += pa * times
            params += pp_ * times
            temp = max(temp, pt)
        per_stage.append((f, b, act, params, temp))
    p, v = layout.pp, layout.virtual_stages
    hbm = dev.bytes_per_s * eff.memory
    # the send of each stage's output (and the gradient back), once per microbatch; with
    # Megatron's scatter/gather each TP rank sends 1/tp of it
    pp_link = intra
    if layout.tp * layout.cp * layout.dp * min(p, 2) > cluster.devices_per_node:
        pp_link = inter
    rank_time = [0.0] * p
    rank_act = [0.0] * p
    rank_params = [0.0] * p
    rank_temp = [0] * p
    flight = SCH.in_flight(layout.schedule, p, layout.microbatches, v)
    rank_of = SCH.stage_ranks(layout.schedule, p, v)
    for s, (f, b, _act, params, temp) in enumerate(per_stage):
        r = rank_of[s]
        send = 0.0
        if p > 1 and s < S - 1:
            sent = profile.layer if profile.layer is not None else parts[s][1][-1]
            send = 2 * sent.output_bytes * scale / (layout.tp * layout.cp)
            send /= pp_link
        accumulate = params * F.grad_accumulation_bytes(profile.param_itemsize) / hbm
        rank_time[r] += f + b + send + accumulate
        rank_params[r] += params
        rank_temp[r] = max(rank_temp[r], temp)
    for r in range(p):
        stages_of_r = [x for x, q in zip(per_stage, rank_of, strict=True) if q == r]
        per_mb = sum(x[2] for x in stages_of_r) / v
        rank_act[r] = per_mb * flight[r]
    busy = sum(x[0] + x[1] for x in per_stage) or 1.0
    weights = _weight_grad_share(profile) * sum(x[1] for x in per_stage) / busy
    forwards = sum(x[0] for x in per_stage) / busy
    pipeline = SCH.pipeline_time(
        layout.schedule, rank_time, layout.microbatches, v, forwards, weights
    )
    worst = max(rank_time)
    bubble = 1.0 - layout.microbatches * worst / pipeline if pipeline else 0.0
    # data parallel: gradients (fp32) all-reduced, or reduce-scattered + gathered (ZeRO)
    dp = layout.dp * layout.cp
    dp_link = data_parallel_link(layout, cluster)
    grad_bytes = max(rank_params) * 4.0
    dp_bytes = F.ring_all_reduce_bytes(grad_bytes, dp)
    if layout.zero >= 3:  # parameters gathered for forward and backward of every microbatch
        dp_bytes += (
            2
            * layout.microbatches
            * F.ring_gather_bytes(max(rank_params) * profile.param_itemsize, dp)
        )
    if layout.zero == 2:  # each microbatch's gradient reduce-scattered into the accumulator
        dp_bytes = layout.microbatches * F.ring_gather_bytes(grad_bytes, dp)
    if layout.zero in (1, 2):  # each rank's updated shard gathered after the step
        dp_bytes += F.ring_gather_bytes(max(rank_params) * profile.param_itemsize, dp)
    data_parallel = dp_bytes / dp_link
    # the optimizer: Adam reads and writes parameters, gradients, master weights, moments
    opt_elems = max(rank_params) / (dp if layout.zero >= 1 else 1)
    optimizer = opt_elems * 2 * F.bytes_per_param(profile.param_itemsize, zero=0, dp=1)
    optimizer /= dev.bytes_per_s * eff.memory
    step = pipeline + data_parallel + optimizer
    # memory: the rank holding the most
    by_rank = []
    for r in range(p):
        pb, gb, ob = F.split_bytes_per_param(profile.param_itemsize, zero=layout.zero, dp=dp)
        elems = rank_params[r]
        body = Memory(
            params=int(elems * pb),
            grads=int(elems * gb),
            optimizer=int(elems * ob),
            activations=int(rank_act[r]),
            temporary=int(rank_temp[r]),
        )
        by_rank.append(replace(body, allocator=int(ALLOCATOR_ALLOWANCE * body.total)))
    memory = max(by_rank, key=lambda m: m.total)
    return Estimate(
        layout=layout,
        step_time_s=step,
        pipeline_s=pipeline,
        data_parallel_s=data_parallel,
        optimizer_s=optimizer,
        bubble=bubble,
        memory=memory,
        fits=memory.total <= dev.memory_bytes,
        model_flops_per_step=model_flops(profile) * layout.dp * layout.microbatches * scale,
        stage_layers=counts,
        rank_memory=tuple(by_rank),
        rank_time_s=tuple(rank_time),
    )


def fit_stage_layers(
    profile: Profile,
    layout: Layout,
    cluster: ClusterSpec,
    memory_bytes: float,
    *,
    fused_attention: bool = True,
) -> tuple[int, ...]:
    """Layers per stage (one stage a rank) making the slowest rank fastest while every rank's
    whole training memory (:func:`estimate`'s: parameters, gradients, optimizer state, the
    activations of the microbatches in flight there, temporaries, the allocator) is at most
    ``memory_bytes``.

    Raises:
      PlanError: the program has no repeated layers, or no cut fits.
    """
    if profile.layer is None or layout.virtual_stages != 1:
        raise PlanError(
            "a memory cap on the whole training memory cuts between repeated layers, one stage "
            "a rank; the program has none to cut between"
        )
    L, S = profile.layers, layout.pp
    mem = []  # mem[n - 1][r]: rank r's memory holding n layers; time likewise
    time = []
    for n in range(1, L + 1):
        est = estimate(profile, layout, cluster, fused_attention=fused_attention,
                       stage_layers=(n,) * S)  # fmt: skip
        mem.append([m.total for m in est.rank_memory])
        time.append(list(est.rank_time_s))
    most = [max((n for n in range(1, L + 1) if mem[n - 1][r] <= memory_bytes), default=0)
            for r in range(S)]  # fmt: skip
    if min(most) < 1 or sum(most) < L:
        worst = min(range(S), key=lambda r: most[r])
        raise PlanError(
            f"no cut of {L} layers into {S} stages fits in {memory_bytes / 2**30:.1f} GiB a "
            f"device: rank {worst} holds at most {most[worst]} layers "
            f"({mem[0][worst] / 2**30:.1f} GiB with one); use more stages or devices"
        )

    def within(limit: float) -> list[int]:
        return [max((n for n in range(1, most[r] + 1) if time[n - 1][r] <= limit), default=0)
                for r in range(S)]  # fmt: skip

    candidates = sorted({t for row in time for t in row})
    lo, hi = 0, len(candidates) - 1
    while lo < hi:  # the least time limit under which the ranks hold every layer
        mid = (lo + hi) // 2
        got = within(candidates[mid])
        if min(got) >= 1 and sum(got) >= L:
            hi = mid
        else:
            lo = mid + 1
    counts = within(candidates[lo])
    while sum(counts) > L:  # the surplus off the slowest ranks
        r = max(range(S), key=lambda i: (time[counts[i] - 1][i], i) if counts[i] > 1 else (-1, i))
        counts[r] -= 1
    return tuple(counts)


def model_flops(profile: Profile) -> float:
    """Model FLOPs of one program batch: its forward and backward matmuls, no recompute."""
    total = 0.0
    if profile.whole is not None:
        parts = [(part, 1) for part in profile.marked or (profile.whole,)]
    else:
        assert profile.first and profile.layer and profile.last
        parts = [(profile.first, 1), (profile.last, 1), (profile.layer, profile.layers - 2)]
    for part, n in parts:
        total += n * (part.forward.flops + part.backward.flops)
    return total


def _params_per_device(part: PartCost, tp: int) -> float:
    return part.param_elements / tp


def _weight_grad_share(profile: Profile) -> float:
    """The share of a layer's backward FLOPs that make the weights' gradients (a zero-bubble
    schedule's W; the rest is its I)."""
    part = profile.layer if profile.layer is not None else profile.whole
    if part is None or not part.backward.flops:
        return 0.5
    return part.backward.weight_grad_flops / part.backward.flops


def _stage_parts(
    profile: Profile, num_stages: int, given: tuple[int, ...] | None
) -> list[tuple[int, list[PartCost]]]:
    """Per stage: its layer count and the parts costed apart (the first stage's and the last
    stage's, which hold a layer each), the rest being copies of ``profile.layer``."""
    if profile.whole is not None:
        marked = profile.marked or (profile.whole,)
        if len(marked) != num_stages:
            raise PlanError(
                f"the program is cut at its markers into {len(marked)} stages; a layout of "
                f"{num_stages} (pp * virtual stages) cannot run it"
            )
        return [(1, [part]) for part in marked]
    assert profile.first and profile.last and profile.layer
    counts = list(given) if given else balance(profile, num_stages)
    out: list[tuple[int, list[PartCost]]] = []
    for s, n in enumerate(counts):
        extra = []
        if s == 0:
            extra.append(profile.first)
        if s == num_stages - 1:
            extra.append(profile.last)
        if s == 0 and num_stages == 1:
            n = max(n, 2)
        out.append((n, extra))
    return out


def balance(profile: Profile, num_stages: int) -> list[int]:
    """Layers per stage making the slowest stage fastest, by FLOPs: the first and the last
    stage carry the embedding and the head beside their layers."""
    assert profile.first and profile.last and profile.layer
    layer = profile.layer.forward.flops + profile.layer.backward.flops or 1.0
    first = profile.first.forward.flops + profile.first.backward.flops - layer
    last = profile.last.forward.flops + profile.last.backward.flops - layer
    return list(_balance(profile.layers, num_stages, layer, max(first, 0.0), max(last, 0.0)))


@functools.lru_cache(maxsize=4096)
def _balance(L: int, num_stages: int, layer: float, first: float, last: float) -> tuple[int, ...]:
    if num_stages == 1:
        return (L,)
    extra = [0.0] * num_stages
    extra[0] += first
    extra[-1] += last

    def layers_within(limit: float) -> list[int]:
        return [int((limit - e) // layer) if limit > e else 0 for e in extra]

    lo, hi = 0.0, L * layer + sum(extra)
    for _ in range(60):
        mid = (lo + hi) / 2
        got = layers_within(mid)
        if sum(got) >= L and min(got) >= 1:
            hi = mid
        else:
            lo = mid
    counts = [max(1, n) for n in layers_within(hi)]
    while sum(counts) > L:  # the surplus off the slowest stages
        s = max(range(num_stages), key=lambda i: (counts[i] * layer + extra[i], i))
        if counts[s] <= 1:
            s = max(range(num_stages), key=lambda i: counts[i])
        counts[s] -= 1
    return tuple(counts)
