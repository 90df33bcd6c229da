"""The plan space and its search: every layout of the degrees not given, priced by
:func:`~hlopipe.planner._model.estimate`, those that do not fit dropped, the rest ranked by
step time."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
from dataclasses import dataclass
from typing import Any

from hlopipe.errors import Keyword, PlanError
from hlopipe.planfile import ZERO_LEVELS, Alternative, Cluster, Layout, PlanFile, Recompute
from hlopipe.planner import _schedules as SCH
from hlopipe.planner._model import ClusterSpec, Estimate, estimate, model_flops
from hlopipe.planner._profile import Profile
from hlopipe.stages import device as named_device

#: The schedules a plan may choose: every training schedule the runtime runs.
SCHEDULES = SCH.ALL


@dataclass(frozen=True)
class Fixed:
    """The degrees and policies a user gave (``None``: searched)."""

    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    zero: int | None = None
    recompute: Recompute | None = None
    schedule: str | None = None
    virtual_stages: int | None = None
    microbatch_size: int | None = None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts(
    profile: Profile, devices: int, global_batch: int, fixed: Fixed, devices_per_node: int
) -> list[Layout]:
    """Every layout of the plan space that uses all ``devices`` and the whole global batch:
    tp (a divisor of a node's devices and of the attention heads' count), pp
    (at most the layers), dp, cp (only where the program has attention over a sequence),
    ZeRO, recompute, schedule, virtual stages and microbatch size (a simulated schedule's
    layouts whether or not the runtime's generator makes it for that shape: :func:`search`
    asks it)."""
    out = []
    tps = [fixed.tp] if fixed.tp else [t for t in _divisors(devices) if t <= devices_per_node]
    pps = [fixed.pp] if fixed.pp else _divisors(devices)
    cps = [fixed.cp] if fixed.cp else ([1, 2, 4, 8] if profile.seq > 1 else [1])
    zeros = [fixed.zero] if fixed.zero is not None else list(ZERO_LEVELS)
    recomputes = [fixed.recompute] if fixed.recompute else list(Recompute)
    mbs = (
        [fixed.microbatch_size]
        if fixed.microbatch_size
        else [b for b in (1, 2, 4, 8, 16) if b <= global_batch]
    )
    for tp, pp, cp in itertools.product(tps, pps, cps):
        if devices % (tp * pp * cp):
            continue
        dp = devices // (tp * pp * cp)
        if fixed.dp and dp != fixed.dp:
            continue
        fixed_stages = profile.fixed_stages
        if fixed_stages is None and (
            pp > max(profile.layers, 1) or (pp > 1 and profile.whole is not None)
        ):
            continue
        if fixed_stages is not None and fixed_stages % pp:
            continue
        if cp > 1 and (profile.seq % cp or tp * cp > devices_per_node):
            continue
        if profile.heads and profile.heads % tp:  # tensor parallelism splits whole heads
            continue
        schedules = [fixed.schedule] if fixed.schedule else (SCHEDULES if pp > 1 else ("1f1b",))
        for schedule, zero, recompute, mb in itertools.product(schedules, zeros, recomputes, mbs):
            if global_batch % (dp * mb):
                continue
            m = global_batch // (dp * mb)
            name = SCH.canonical(schedule)
            looped = SCH.SEARCHED_VIRTUAL[name][0] > 1  # stages a rank holds: 2 or more
            vs = [fixed.virtual_stages] if fixed.virtual_stages else SCH.SEARCHED_VIRTUAL[name]
            if fixed_stages is not None and not fixed.virtual_stages:
                vs = (fixed_stages // pp,)
            for v in vs:
                # interleaved 1F1B where pp does not divide m: the runtime runs it, but its
                # closed-form time assumes rounds of pp (the memory would be right, walked)
                if looped and (v < 2 or (name == "interleaved-1f1b" and m % pp)):
                    continue
                if not looped and v != 1:
                    continue
                if fixed_stages is not None and pp * v != fixed_stages:
                    continue
                if fixed_stages is None and pp * v > max(profile.layers, 1):
                    continue
                if zero and dp * cp == 1:
                    continue
                out.append(
                    Layout(
                        tp=tp, pp=pp, dp=dp, cp=cp, zero=zero, recompute=recompute,
                        schedule=schedule, virtual_stages=v, microbatch_size=mb,
                        microbatches=m,
                    )
                )  # fmt: skip
    return out


def search(
    profile: Profile,
    cluster: ClusterSpec,
    global_batch: int,
    fixed: Fixed,
    *,
    fused_attention: bool = True,
) -> list[Estimate]:
    """Every layout's estimate, those that fit first, each group by step time.

    The layouts of the closed-form schedules are all priced. Those of a simulated schedule
    (:mod:`._schedules`) are priced in the order of their bound (:func:`_bound`: the same
    layout under 1F1B with no bubble at all, its ranks' work spread evenly, its data-parallel
    and optimizer time for an even share of the parameters), until the bound reaches the
    :data:`EXACT`-th fastest fitting time found so far: the rest could not be among those, so
    the first :data:`EXACT` are exact. A free search simulates pipelines of at most
    :data:`SIMULATED_LIMIT` ranks x microbatches x virtual stages (a named ``--schedule`` any):
    beyond that a 405B-wide search's simulations would cost minutes.
    """
    found = layouts(profile, cluster.devices, global_batch, fixed, cluster.devices_per_node)
    if not found:
        raise PlanError(
            f"no layout of {cluster.devices} devices and a global batch of {global_batch} "
            "meets the degrees given; check that ",
            Keyword("devices"),
            " is tp * pp * dp * cp and ",
            Keyword("global_batch"),
            " a multiple of dp * microbatch_size",
        )
    simulated = [lay for lay in found if SCH.canonical(lay.schedule) in SCH.SIMULATED]
    estimates = [
        estimate(profile, lay, cluster, fused_attention=fused_attention)
        for lay in found
        if SCH.canonical(lay.schedule) not in SCH.SIMULATED
    ]
    fitting = sorted(e.step_time_s for e in estimates if e.fits)[:EXACT]
    plain = {_shape(e.layout): e for e in estimates if e.layout.schedule == "1f1b"}
    bounded = []
    for lay in simulated:
        if lay.pp * lay.microbatches * lay.virtual_stages > SIMULATED_LIMIT and not fixed.schedule:
            continue
        base = plain.get(_shape(lay))
        bounded.append((0.0 if base is None else _bound(base), id(lay), lay))
    for bound, _, lay in sorted(bounded, key=lambda x: x[:2]):  # the most promising first
        if len(fitting) >= EXACT and bound >= fitting[-1]:
            break  # the rest are bounded above the EXACT-th fastest fitting time too
        if not SCH.runs(lay.schedule, lay.pp, lay.microbatches, lay.virtual_stages):
            continue
        est = estimate(profile, lay, cluster, fused_attention=fused_attention)
        estimates.append(est)
        if est.fits:
            bisect.insort(fitting, est.step_time_s)
            del fitting[EXACT:]
    return sorted(estimates, key=lambda e: (not e.fits, e.step_time_s, _simplicity(e.layout)))


#: The fastest fitting layouts a search prices exactly whatever their schedule (see search).
EXACT = 8
#: The largest pipeline (ranks x microbatches x virtual stages) whose simulated schedules a
#: free search prices (see search).
SIMULATED_LIMIT = 2048


def _shape(layout: Layout) -> tuple[int | str, ...]:
    """A layout without its schedule and virtual stages."""
    return (layout.tp, layout.pp, layout.dp, layout.cp, layout.zero, layout.recompute.value,
            layout.microbatch_size)  # fmt: skip


def _bound(plain: Estimate) -> float:
    """A lower bound on the step time of ``plain``'s layout under any schedule and virtual
    stages, from its 1F1B estimate: the microbatches' work with no bubble, spread evenly over
    the ranks (more stages only add sends), and the data-parallel and optimizer time (both in
    proportion to the parameters of the rank holding the most) for an even share of the
    parameters (a V schedule puts the first and last stages on one rank)."""
    lay = plain.layout
    params = [m.params for m in plain.rank_memory]
    even = sum(params) / len(params) / max(max(params), 1)
    work = lay.microbatches * sum(plain.rank_time_s) / lay.pp
    return (work + (plain.data_parallel_s + plain.optimizer_s) * even) * (1 - 1e-9)


def _simplicity(layout: Layout) -> tuple[int, ...]:
    """Between equal times, the plainer layout (fewer moving parts)."""
    return (
        layout.pp * layout.virtual_stages,
        layout.tp,
        layout.cp,
        layout.zero,
        list(Recompute).index(layout.recompute),
    )


def cluster_spec(
    device: str,
    devices: int,
    devices_per_node: int | None = None,
    intra_node_gbps: float | None = None,
    inter_node_gbps: float | None = None,
) -> ClusterSpec:
    """A :class:`ClusterSpec` from a device name (``stages.DEVICES``) and count, its node size
    and links the device table's unless given (GB/s, each way)."""
    dev = named_device(device)
    return ClusterSpec(
        device=dev,
        devices=devices,
        devices_per_node=devices_per_node or dev.devices_per_node,
        intra_node_bytes_per_s=(intra_node_gbps * 1e9) if intra_node_gbps else dev.link_bytes_per_s,
        inter_node_bytes_per_s=(inter_node_gbps * 1e9)
        if inter_node_gbps
        else (dev.inter_node_bytes_per_s or dev.link_bytes_per_s),
    )


def plan_file(
    profile: Profile,
    cluster: ClusterSpec,
    global_batch: int,
    fixed: Fixed = Fixed(),
    *,
    fused_attention: bool = True,
    program_path: str | os.PathLike[str] | None = None,
    alternatives: int = 5,
) -> PlanFile:
    """Search (or price the given layout) and write the result as a :class:`PlanFile`.

    Raises:
      PlanError: no layout meets the degrees given.
    """
    ranked = search(profile, cluster, global_batch, fixed, fused_attention=fused_attention)
    best = ranked[0]
    notes = []
    scale = best.layout.microbatch_size / max(profile.batch, 1)
    if best.layout.microbatch_size != profile.batch:
        notes.append(
            f"microbatch size {best.layout.microbatch_size} costed by scaling the program's "
            f"batch of {profile.batch} (x{scale:g})"
        )
    notes.append(
        "attention costed as a fused kernel" if fused_attention else "attention costed as written"
    )
    if not best.fits:
        notes.append("no layout fits in the device's memory; the fastest is shown")
    if best.layout.cp > 1:
        notes.append(
            f"cp {best.layout.cp}: context parallelism is costed here, hlopipe's runtime does "
            "not run it yet (train --plan refuses it); plan with --cp 1 for a plan it runs"
        )
    if best.layout.tp > 1 and not profile.param_specs:
        notes.append(
            "no param_specs: the program's parameter paths do not name their layer; the "
            "runtime's sharding propagation (or --param-spec rules) lays the weights out"
        )
    layout = _with_cuts(best, profile)
    peak = (
        cluster.device.bf16_flops_per_s
        if profile.param_itemsize < 4
        else cluster.device.fp32_flops_per_s
    )
    flops = best.model_flops_per_step
    per_device_s = flops / best.step_time_s / cluster.devices
    sha = None
    if program_path is not None and os.path.isfile(program_path):
        with open(program_path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
    return PlanFile(
        cluster=Cluster(
            device=cluster.device.name,
            devices=cluster.devices,
            devices_per_node=cluster.devices_per_node,
            intra_node_gbps=cluster.intra_node_bytes_per_s / 1e9,
            inter_node_gbps=cluster.inter_node_bytes_per_s / 1e9,
        ),
        global_batch=global_batch,
        layout=layout,
        program_path=None if program_path is None else os.fspath(program_path),
        program_sha256=sha,
        step_time_s=best.step_time_s,
        tokens_per_s=global_batch * max(profile.seq, 1) / best.step_time_s,
        model_flops_per_step=flops,
        model_flops_per_device_s=per_device_s,
        mfu=per_device_s / peak,
        bubble=best.bubble,
        memory_per_device_bytes=best.memory_per_device_bytes,
        memory=best.memory,
        fits=best.fits,
        notes=tuple(notes),
        alternatives=tuple(
            Alternative(_with_cuts(e, profile), e.step_time_s, e.memory_per_device_bytes, e.fits)
            for e in ranked[1 : 1 + alternatives]
        ),
    )


def _with_cuts(est: Estimate, profile: Profile) -> Layout:
    from dataclasses import replace

    lay = est.layout
    cuts = est.stage_layers if profile.whole is None and lay.num_stages > 1 else ()
    specs = profile.param_specs if lay.tp > 1 else ()
    return replace(lay, stage_layers=tuple(cuts), param_specs=tuple(specs))


def explain(profile: Profile) -> dict[str, Any]:
    """What the profile found, for the command's output."""
    return {
        "layers": profile.layers,
        "marked_stages": profile.fixed_stages,
        "sequence": profile.seq,
        "batch": profile.batch,
        "parameters": profile.total_param_elements,
        "model_flops_per_batch": model_flops(profile),
        "tensor_parallel_pairs_per_layer": profile.column_pairs,
    }
