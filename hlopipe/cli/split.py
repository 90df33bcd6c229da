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
        "memory on it (cpu, a100-40gb, a100-80gb, h100, h200)",
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
        help="with --device: the optimizer whose state to count (adam)",
    )  # fmt: skip
    p.add_argument(
        "--memory-cap", action="store_true", help="with --device: cut so that each stage's "
        "program (parameters and one microbatch's values) fits in the device's memory",
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
    cap = stages.memory_cap(device) if device is not None and args.memory_cap else None
    with x64_if_needed(program):
        staged = stages.split(program, num_stages=args.stages, device=device, memory_cap=cap)
        argnums = None if args.no_autodiff else tuple(range(len(program.in_avals)))
        path = staged.export(args.output, format=args.format, argnums=argnums)
    print(stages.format_manifest(path), end="")
    if device is not None:
        report = staged.memory_report(
            device, schedule=args.schedule, num_microbatches=args.microbatches,
            optimizer=args.optimizer,
        )  # fmt: skip
        print(report.render(), end="")
    print(f"wrote {path}")
    return 0


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
