"""`hlopipe split`: cut a program into stages, or merge/unmerge stage files (over `stages`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from hlopipe.cli._common import Command, ask_cpu_devices, check_output_dir, load, x64_if_needed
from hlopipe.errors import HlopipeError


def _add_split(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file", nargs="?", help="an XLA program (HLO / StableHLO text or proto, jax.export, ...)"
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--at-markers", action="store_true", help="cut at stage_boundary markers")
    how.add_argument("--stages", type=int, metavar="N", help="choose N cost-balanced stages")
    how.add_argument(
        "--merge",
        nargs=2,
        metavar=("FWD", "BWD"),
        help="merge a forward module (params, inputs) -> (outputs, residuals) and a backward "
        "module (params, residuals, cotangents) -> results into one: DIR/merged.* + .json",
    )
    how.add_argument(
        "--unmerge",
        metavar="MERGED",
        help="cut a merged module back into DIR/forward.* and DIR/backward.*, with the "
        "merged compile's shardings pinned on the residuals (needs --mesh or its .json)",
    )
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument(
        "--device",
        metavar="NAME",
        help="cost the stages with this device's roofline and print each stage's training "
        "memory on it (cpu, a100-40gb, a100-80gb, h100, h200, b200, mi300x, tpu-v4, tpu-v5e, "
        "tpu-v5p)",
    )
    p.add_argument(
        "--schedule", default="1f1b", help="with --device: the schedule to assume (1f1b)"
    )
    p.add_argument(
        "--microbatches", type=int, metavar="M", help="with --device: microbatches per step "
        "(default: the number of stages)",
    )  # fmt: skip
    p.add_argument(
        "--optimizer", choices=("adam", "adamw", "sgd"), default="adam",
        help="with --device: the optimizer whose state to count (adam: bf16 parameters with "
        "fp32 gradients, master weights and moments; sgd: the older per-stage report)",
    )  # fmt: skip
    p.add_argument(
        "--memory-cap", action="store_true", help="with --device: cut between repeated layers "
        "so that each rank's whole training memory (parameters, gradients, optimizer state, "
        "the activations of the microbatches in flight) fits in the device's memory",
    )  # fmt: skip
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    p.add_argument("--format", choices=("hlo", "stablehlo"), default="hlo", help="module format")
    p.add_argument(
        "--no-autodiff", action="store_true", help="skip the per-stage forward/backward modules"
    )
    p.add_argument(
        "--mesh",
        metavar="AxB",
        help="--merge/--unmerge: device mesh shape, e.g. 2x2 (axes 'data','model'); "
        "parameters are sharded along the last axis, inputs' first dimension along the first",
    )
    p.add_argument("--params", type=int, metavar="N", help="--merge: leading parameter count")
    p.add_argument("--outputs", type=int, metavar="N", help="--merge: forward output count")
    p.add_argument(
        "--layout", metavar="JSON", help="--unmerge: the layout file (default: MERGED's .json)"
    )


def _cmd_split(args: argparse.Namespace) -> int:
    """cut a program into pipeline stages; write modules + manifest.json"""
    from hlopipe import stages

    if args.merge or args.unmerge:
        return _split_files(args)
    if not args.file:
        raise HlopipeError("split needs a FILE with --at-markers or --stages")
    check_output_dir(args.output, "-o")
    program = load(args.file, args.module)
    if args.at_markers and program.stage_markers() == 0:
        why = (
            "it is HLO after XLA's optimisation passes (is_scheduled=true), and XLA removes "
            "the markers' optimization barriers when it compiles: compile with "
            "compiler_options=hlopipe.marker.KEEP_MARKERS to keep them, or split the program "
            "before optimisation (jax.jit(f).lower(...).as_text(), or the "
            "before_optimizations file of a dump)"
            if program.optimized
            else "add hlopipe.stage_boundary(...) where a stage ends"
        )
        raise HlopipeError(
            f"{args.file}: --at-markers, but the program has no stage_boundary markers: {why}; "
            "or pass --stages N to choose cut points automatically"
        )
    if args.device is None and (args.memory_cap or args.microbatches is not None):
        raise HlopipeError("--memory-cap and --microbatches need --device NAME")
    device = None if args.device is None else stages.device(args.device)
    cap, layers, note = None, None, ""
    with x64_if_needed(program):
        if device is not None and args.memory_cap:
            layers, note = _layers_that_fit(program, device, args)
            if layers is None:
                cap = stages.memory_cap(device)
        staged = stages.split(
            program, num_stages=None if layers else args.stages, device=device, memory_cap=cap,
            stage_layers=layers,
        )  # fmt: skip
        argnums = None if args.no_autodiff else tuple(range(len(program.in_avals)))
        path = staged.export(args.output, format=args.format, argnums=argnums)
        report = None if device is None else _memory_table(staged, device, args)
    print(stages.format_manifest(path), end="")
    if report is not None:
        print(report, end="")
    if note:
        print(f"note: {note}")
    print(f"wrote {path}")
    return 0


def _layers_that_fit(program: Any, device: Any, args: argparse.Namespace) -> tuple[
    list[int] | None, str
]:  # fmt: skip
    """``--memory-cap``: the layers per stage under which each rank's whole training memory
    (the planner's: parameters, gradients, optimizer state, the activations of the
    microbatches in flight, temporaries, the allocator) fits the device; ``None`` (and why) for
    a program without repeated layers, cut by the older per-stage cap instead."""
    from hlopipe import planner
    from hlopipe.planfile import Layout, Recompute

    if args.stages is None:
        raise HlopipeError("--memory-cap needs --stages N")
    profile = planner.profile_program(program)
    if profile.layer is None:
        return None, (
            "no repeated layers to cut between: --memory-cap counted each stage's parameters "
            "and one microbatch's values only"
        )
    layout = Layout(
        tp=1, pp=args.stages, dp=1, cp=1, zero=0, recompute=Recompute.NONE,
        schedule=args.schedule, virtual_stages=1, microbatch_size=profile.batch,
        microbatches=args.microbatches or args.stages,
    )  # fmt: skip
    cluster = planner.cluster_spec(device.name, args.stages)
    fitted = planner.fit_stage_layers(profile, layout, cluster, device.memory_bytes)
    return list(fitted), ""


def _memory_table(staged: Any, device: Any, args: argparse.Namespace) -> str:
    """Each rank's training memory on ``device`` under ``--schedule`` by the planner's model
    (the one ``hlopipe plan`` prices layouts with), one data replica, no tensor parallelism."""
    from hlopipe import planner, schedules
    from hlopipe.planfile import Layout, Recompute

    S = staged.num_stages
    v = schedules.default_virtual_stages(args.schedule)
    if S % v:
        raise HlopipeError(
            f"--schedule {args.schedule} puts {v} stages on each rank; {S} stages do not divide"
        )
    m = args.microbatches or S
    if args.optimizer == "sgd":
        report = staged.memory_report(device, schedule=args.schedule, num_microbatches=m,
                                      optimizer="sgd")  # fmt: skip
        return str(report.render())
    profile = planner.profile_staged(staged)
    layout = Layout(
        tp=1, pp=S // v, dp=1, cp=1, zero=0, recompute=Recompute.NONE, schedule=args.schedule,
        virtual_stages=v, microbatch_size=profile.batch, microbatches=m,
    )  # fmt: skip
    est = planner.estimate(profile, layout, planner.cluster_spec(device.name, S // v))
    gib = 2**30
    lines = [
        f"memory per stage on {device.name} ({device.memory_bytes / gib:.2f} GiB), "
        f"{args.schedule} with {m} microbatches, optimizer {args.optimizer} (mixed precision: "
        f"{planner.bytes_per_param(profile.param_itemsize, zero=0, dp=1):g} bytes a parameter)",
        "rank  stages        params       grads   optimizer  activations   temporary   "
        "allocator       total  fits",
    ]
    for r, mem in enumerate(est.rank_memory):
        held = ",".join(str(r + k * (S // v)) for k in range(v))
        cells = [mem.params, mem.grads, mem.optimizer, mem.activations, mem.temporary,
                 mem.allocator, mem.total]  # fmt: skip
        lines.append(
            f"{r:4}  {held:6}"
            + "".join(f"{c / gib:12.3f}" for c in cells)
            + ("  yes" if mem.total <= device.memory_bytes else "  NO")
        )
    lines.append(f"predicted step time {est.step_time_s:.4g} s (bubble {est.bubble:.1%})")
    return "\n".join(lines) + "\n"


def _split_files(args: argparse.Namespace) -> int:
    """``split --merge FWD BWD`` / ``split --unmerge MERGED``."""
    import json
    from pathlib import Path

    from hlopipe import stages

    if args.file:
        raise HlopipeError("--merge/--unmerge take their modules as option values, not FILE")
    check_output_dir(args.output, "-o")
    meta: dict[str, Any] = {}
    layout_path = None
    if args.unmerge:
        layout_path = args.layout or str(Path(args.unmerge).with_suffix(".json"))
        try:
            meta = json.loads(Path(layout_path).read_text())
        except (OSError, ValueError) as e:
            raise HlopipeError(
                f"{layout_path}: cannot read the merge layout ({e}); pass --layout"
            ) from e
    shape = _mesh_shape(args.mesh) if args.mesh else tuple((meta.get("mesh") or {}).values())
    mesh = _make_mesh(shape) if shape else None
    if args.merge:
        from hlopipe import io

        fwd, bwd = io.load(args.merge[0]), io.load(args.merge[1])
        p_sh = x_sh = None
        if mesh is not None:
            lay = stages.infer_layout(fwd, bwd, num_params=args.params, num_outputs=args.outputs)
            avals = fwd.in_avals
            p_sh = [_default_sharding(a, mesh, "param") for a in avals[: lay.num_params]]
            x_sh = [_default_sharding(a, mesh, "input") for a in avals[lay.num_params :]]
        merged = stages.merge_files(
            fwd, bwd, num_params=args.params, num_outputs=args.outputs, mesh=mesh,
            param_shardings=p_sh, input_shardings=x_sh, format=args.format,
        )  # fmt: skip
        path = merged.write(args.output)
        print(f"merged {merged.layout}")
        _print_shardings("residual", merged.residual_shardings)
        print(f"wrote {path} and {Path(path).with_suffix('.json')}")
        return 0
    parts = stages.split_merged(args.unmerge, meta, mesh=mesh, format=args.format)
    f, b = parts.write(args.output)
    print(f"split {parts.layout}")
    _print_shardings("residual", parts.residual_shardings)
    print(f"wrote {f} and {b}")
    return 0


def _mesh_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise HlopipeError(f"--mesh {text!r}: expected sizes joined by 'x', such as 2x2")
    return shape


def _make_mesh(shape: Sequence[int]) -> Any:
    import math

    import jax
    import numpy as np

    n = math.prod(shape)
    ask_cpu_devices(max(n, 8))  # on CPU, as many devices as the mesh needs
    devices = jax.devices()
    if len(devices) < n:
        raise HlopipeError(f"a {'x'.join(map(str, shape))} mesh needs {n} devices, found "
                           f"{len(devices)}")  # fmt: skip
    names = ("data", "model") if len(shape) == 2 else tuple(f"a{i}" for i in range(len(shape)))
    return jax.sharding.Mesh(np.array(devices[:n]).reshape(shape), names)


def _default_sharding(aval: Any, mesh: Any, kind: str) -> Any:
    """Parameters: the last divisible dimension of a matrix (or larger) along the last mesh
    axis. Inputs: the first dimension along the first mesh axis. Else replicated."""
    from jax.sharding import NamedSharding, PartitionSpec

    spec: list[str | None] = [None] * len(aval.shape)
    name = mesh.axis_names[-1 if kind == "param" else 0]
    size = int(mesh.shape[name])
    dims = range(len(aval.shape) - 1, -1, -1) if kind == "param" else range(min(1, len(spec)))
    if kind != "param" or len(aval.shape) >= 2:
        for d in dims:
            if aval.shape[d] % size == 0:
                spec[d] = name
                break
    return NamedSharding(mesh, PartitionSpec(*spec))


def _print_shardings(what: str, shardings: Sequence[Any] | None) -> None:
    for k, s in enumerate(shardings or []):
        print(f"  {what} {k}: {getattr(s, 'spec', s)}")


COMMAND = Command(
    "split",
    _add_split,
    _cmd_split,
    num_stages="--stages",
    device="--device",
    num_microbatches="--microbatches",
    num_params="--params",
    num_outputs="--outputs",
)
