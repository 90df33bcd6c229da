"""`hlopipe plan`: a training run's layout, step time and memory, predicted from the program
(over `planner`)."""

from __future__ import annotations

import argparse
from typing import Any

from hlopipe.cli._common import Command, load, x64_if_needed
from hlopipe.errors import HlopipeError


def _add_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a training loss: an XLA program (any format) or a dump folder")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument("--device", required=True, metavar="NAME",
                   help="the device kind (cpu, a100-40gb, a100-80gb, h100, h200, b200, mi300x, "
                   "tpu-v4, tpu-v5e, tpu-v5p)")  # fmt: skip
    p.add_argument("--devices", required=True, type=int, metavar="N", help="devices in all")
    p.add_argument("--devices-per-node", type=int, metavar="K",
                   help="devices sharing a node's fast links (the device table's)")  # fmt: skip
    p.add_argument(
        "--intra-node-gbps",
        type=float,
        metavar="GB/S",
        help="bandwidth between devices of a node, each way (the device table's)",
    )
    p.add_argument(
        "--inter-node-gbps",
        type=float,
        metavar="GB/S",
        help="bandwidth per device across nodes, each way (the device table's)",
    )
    p.add_argument(
        "--global-batch",
        required=True,
        type=int,
        metavar="B",
        help="sequences (samples) per step; the program's batch is one microbatch",
    )
    p.add_argument(
        "--microbatch-size",
        type=int,
        metavar="b",
        help="sequences per microbatch (other than the program's: costed by scaling)",
    )
    for flag, what in (("--tp", "tensor"), ("--pp", "pipeline"), ("--dp", "data"),
                       ("--cp", "context")):  # fmt: skip
        p.add_argument(flag, type=int, metavar="N", help=f"the {what}-parallel degree (searched)")
    p.add_argument("--zero", type=int, choices=(0, 1, 2, 3), help="ZeRO stage (searched)")
    p.add_argument(
        "--recompute",
        choices=("none", "selective", "attention", "full"),
        help="activation recompute policy (searched): selective keeps the weight matmuls' outputs, "
        "attention their inputs and outputs (Korthikanti et al. 2022's selective)",
    )
    p.add_argument(
        "--schedule",
        help="pipeline schedule, any the runtime trains with (1f1b, interleaved-1f1b, gpipe, "
        "looped-bfs, zb-h1, zb-h2, interleaved-zb, zb-v, dualpipev; searched)",
    )
    p.add_argument(
        "--virtual-stages",
        type=int,
        metavar="V",
        help="stages per pipeline rank (interleaved schedules)",
    )
    p.add_argument(
        "--attention-as-written",
        action="store_true",
        help="cost attention as the program writes it, not as a fused kernel",
    )
    p.add_argument("--json", action="store_true", help="print the plan file's JSON object")
    p.add_argument("-o", "--output", metavar="PLAN.json", help="write the plan file")


def _cmd_plan(args: argparse.Namespace) -> int:
    """predict a training run's layout, step time and memory per device from the program"""
    from hlopipe import planner
    from hlopipe.planfile import Recompute

    for flag in ("devices", "global_batch", "microbatch_size", "tp", "pp", "dp", "cp",
                 "virtual_stages", "devices_per_node"):  # fmt: skip
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise HlopipeError(f"--{flag.replace('_', '-')} {value}: must be at least 1")
    if args.output is not None:
        from hlopipe.cli._common import check_output_file

        check_output_file(args.output, "-o", (".json",))
    cluster = planner.cluster_spec(
        args.device, args.devices, args.devices_per_node, args.intra_node_gbps,
        args.inter_node_gbps,
    )  # fmt: skip
    if args.schedule is not None:
        from hlopipe import schedules
        from hlopipe.errors import PlanError

        schedules.get(args.schedule, 2, 4)  # an unknown name: the schedules' own error
        args.schedule = schedules.canonical_name(args.schedule)
        if args.schedule not in planner.SCHEDULES:
            raise PlanError(
                f"--schedule {args.schedule}: the planner models {', '.join(planner.SCHEDULES)} "
                f"(their bubbles, microbatches in flight and virtual stages); plan with one of "
                f"them, or train with --schedule {args.schedule} directly"
            )
    fixed = planner.Fixed(
        tp=args.tp, pp=args.pp, dp=args.dp, cp=args.cp, zero=args.zero,
        recompute=None if args.recompute is None else Recompute(args.recompute),
        schedule=args.schedule, virtual_stages=args.virtual_stages,
        microbatch_size=args.microbatch_size,
    )  # fmt: skip
    program = load(args.file, args.module)
    with x64_if_needed(program):
        profile = planner.profile_program(program, attention_fused=not args.attention_as_written)
        plan = planner.plan_file(
            profile, cluster, args.global_batch, fixed,
            fused_attention=not args.attention_as_written, program_path=args.file,
        )  # fmt: skip
    if args.output is not None:
        try:
            plan.write(args.output)
        except OSError as e:
            raise HlopipeError(f"-o {args.output}: cannot write: {e}") from e
    if args.json:
        print(plan.to_json())
        return 0
    print(render(plan, planner.explain(profile)), end="")
    if args.output is not None:
        print(f"wrote {args.output}")
    return 0


def render(plan: Any, found: dict[str, Any]) -> str:
    """The plan as the command prints it: what the program holds, the chosen layout, its time
    and memory by kind, and the alternatives."""
    lay = plan.layout
    gib = 2**30
    shape = f"{found['layers']} repeated layers"
    if found["marked_stages"]:
        shape = f"cut at its markers into {found['marked_stages']} stages"
    lines = [
        f"program: {shape}, {found['parameters'] / 1e9:.3g}B "
        f"parameters, sequence {found['sequence']}, batch {found['batch']}, "
        f"{found['tensor_parallel_pairs_per_layer']} column/row pairs a layer",
        f"cluster: {plan.cluster.devices} x {plan.cluster.device} "
        f"({plan.cluster.devices_per_node} a node, {plan.cluster.intra_node_gbps:g} GB/s inside, "
        f"{plan.cluster.inter_node_gbps:g} GB/s across)",
        f"plan: tp {lay.tp} x pp {lay.pp} x dp {lay.dp} x cp {lay.cp}, ZeRO {lay.zero}, "
        f"recompute {lay.recompute.value}, {lay.schedule} (virtual stages "
        f"{lay.virtual_stages}), microbatch {lay.microbatch_size} x {lay.microbatches}",
        f"stage layers: {list(lay.stage_layers) or '-'}",
        f"step time {plan.step_time_s:.4g} s, {plan.tokens_per_s:.4g} tokens/s, "
        f"{plan.model_flops_per_device_s / 1e12:.4g} model TFLOP/s a device, MFU "
        f"{plan.mfu:.1%}, bubble {plan.bubble:.1%}",
        "memory a device (GiB): "
        + ", ".join(
            f"{k} {getattr(plan.memory, k) / gib:.2f}"
            for k in ("params", "grads", "optimizer", "activations", "temporary", "allocator")
        )
        + f"; total {plan.memory_per_device_bytes / gib:.2f} "
        + ("fits" if plan.fits else "DOES NOT FIT"),
    ]
    lines += [f"note: {n}" for n in plan.notes]
    if plan.alternatives:
        lines.append("alternatives:")
        for a in plan.alternatives:
            al = a.layout
            lines.append(
                f"  tp {al.tp} pp {al.pp} dp {al.dp} cp {al.cp} zero {al.zero} "
                f"{al.recompute.value} {al.schedule} v{al.virtual_stages} mb "
                f"{al.microbatch_size}x{al.microbatches}: {a.step_time_s:.4g} s, "
                f"{a.memory_per_device_bytes / gib:.2f} GiB{'' if a.fits else ' (does not fit)'}"
            )
    return "\n".join(lines) + "\n"


COMMAND = Command("plan", _add_plan, _cmd_plan, devices="--devices", global_batch="--global-batch")
