"""`hlopipe inspect`: a program's format, signature, ops, cost, markers (over `io`, `rehydrate`)."""

from __future__ import annotations

import argparse
from typing import Any

from hlopipe.cli._common import Command, load
from hlopipe.errors import HlopipeError


def _add_inspect(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="an XLA program (any format), a dump folder, or the folder (or its manifest.json) "
        "that `hlopipe split` wrote",
    )
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--no-cost", action="store_true", help="skip XLA's cost analysis")
    p.add_argument(
        "--device",
        metavar="NAME",
        help="also show NAME's roofline and memory (cpu, a100-40gb, a100-80gb, h100, h200) "
        "and, for a program, the memory its parameters, gradients and Adam's state take there",
    )


def _cmd_inspect(args: argparse.Namespace) -> int:
    """show a program's format, signature, ops, cost, markers, unsupported ops"""
    import json
    from pathlib import Path

    manifest = Path(args.file)
    if manifest.is_dir() and (manifest / "manifest.json").is_file() and args.module is None:
        manifest = manifest / "manifest.json"  # a folder `hlopipe split -o` wrote
    device = None
    if args.device is not None:
        from hlopipe import stages

        device = stages.device(args.device)
    if manifest.name == "manifest.json":
        from hlopipe import stages

        print(stages.format_manifest(str(manifest)))
        _print_stage_arguments(str(manifest))
        if device is not None:
            print(_device_line(device))
        return 0
    from hlopipe.io import format_aval
    from hlopipe.rehydrate import module_ir, scan_unsupported

    prog = load(args.file, args.module)
    counts = prog.op_counts(entry_only=False)
    cost: dict[str, float] = {}
    if not args.no_cost:
        try:
            cost = prog.cost_analysis()
        except (HlopipeError, RuntimeError, ValueError) as e:  # XLA's refusal (a JaxRuntimeError
            # is a RuntimeError): informative only, a line of the report
            cost = {"error": str(e).splitlines()[0]}  # type: ignore[dict-item]
    unsupported = scan_unsupported(module_ir(prog), prog.entry)
    loops = [] if unsupported else _loops(prog)
    info = {
        "file": args.file,
        "format": prog.format,
        "entry": prog.entry,
        "inputs": [format_aval(a) for a in prog.in_avals],
        "input_names": _stage_file_names(args.file, len(prog.in_avals)) or prog.arg_names,
        "outputs": [format_aval(a) for a in prog.out_avals],
        "ops": dict(counts.most_common()),
        "flops": cost.get("flops"),
        "bytes_accessed": cost.get("bytes accessed"),
        "stage_markers": prog.stage_markers(),
        "loops": loops,
        "unsupported": [{"op": n, "count": c, "first": loc} for n, c, loc in unsupported],
    }
    if device is not None:
        info["device"] = _device_info(device, prog.in_avals)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    _print_info(info, counts, unsupported)
    if device is not None:
        print(_device_line(device))
        d = info["device"]
        print(
            f"on {device.name}: floating-point arguments {d['float_argument_bytes'] / 2**30:.2f}"
            f" GiB; with gradients, master weights and Adam's moments (mixed precision) "
            f"{d['training_bytes'] / 2**30:.2f}"
            f" GiB ({d['training_bytes'] / device.memory_bytes:.0%} of one device), before "
            "activations (`hlopipe split --stages N --device` reports them per stage)"
        )
    return 0


def _device_line(device: Any) -> str:
    return (
        f"device {device.name}: bf16 {device.bf16_flops_per_s / 1e12:g} TFLOP/s, fp32 "
        f"{device.fp32_flops_per_s / 1e12:g} TFLOP/s, memory {device.bytes_per_s / 1e9:g} GB/s, "
        f"{device.memory_bytes / 1e9:g} GB, link {device.link_bytes_per_s / 1e9:g} GB/s"
    )


def _device_info(device: Any, avals: Any) -> dict[str, Any]:
    """A program's floating-point arguments (taken as parameters) on ``device``: their bytes,
    and the bytes training them takes by the planner's precision policy (``planner.
    bytes_per_param``: 16-bit parameters with fp32 gradients, master weights and Adam's two
    moments; 32-bit ones with fp32 gradients and moments), before activations."""
    import jax.numpy as jnp
    import numpy as np

    from hlopipe.planner import bytes_per_param

    floats = [a for a in avals if jnp.issubdtype(a.dtype, jnp.inexact)]
    nbytes = sum(int(np.prod(a.shape)) * jnp.dtype(a.dtype).itemsize for a in floats)
    training = sum(
        int(np.prod(a.shape)) * bytes_per_param(jnp.dtype(a.dtype).itemsize, zero=0, dp=1)
        for a in floats
    )
    return {
        "name": device.name,
        "memory_bytes": device.memory_bytes,
        "float_argument_bytes": nbytes,
        "training_bytes": training,
    }


def _loops(prog: Any) -> list[str]:
    """What splitting would make of the program's loops (layer loops are cut by ranges)."""
    try:
        from hlopipe.stages import describe_loops

        return describe_loops(prog)
    except HlopipeError as e:  # a program the splitter refuses: informative only, like the cost
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        return [f"(loops not analysed: {why})"]


def _print_stage_arguments(manifest: str) -> None:
    """Each stage's file arguments by name, in order (see docs/stage-files.md)."""
    import json
    from pathlib import Path

    m = json.loads(Path(manifest).read_text())
    print("stage file arguments, in order: the program arguments it reads, then what it receives")
    for st in m["stages"]:
        names = [a["path"] for a in st.get("arguments", st.get("params", []))]
        recv = [f"stage {r['from_stage']} output {r['output']}" for r in st["inputs"]]
        print(
            f"  stage {st['index']}: {', '.join(names) or '-'}"
            + (f" | received: {', '.join(recv)}" if recv else "")
        )


def _stage_file_names(path: str, n: int) -> list[str] | None:
    """For a stage file written by `split`, its arguments' names from the manifest next to
    it: the program arguments it reads, then ``from stage S output J`` for what it receives."""
    import json
    from pathlib import Path

    manifest = Path(path).parent / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        m = json.loads(manifest.read_text())
        for st in m.get("stages", []):
            if st.get("file") == Path(path).name:
                names = [a["path"] for a in st.get("arguments", st.get("params", []))]
                names += [
                    f"from stage {r['from_stage']} output {r['output']}" for r in st["inputs"]
                ]
                return names if len(names) == n else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


def _print_info(info: dict[str, Any], counts: Any, unsupported: list[Any]) -> None:
    """What `inspect` found, as text and tables."""
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    console.print(
        f"[bold]{info['file']}[/]  format [cyan]{info['format']}[/]  entry @{info['entry']}"
    )
    if any(info["input_names"]):
        console.print(f"inputs ({len(info['inputs'])}):")
        width = max(len(n or "") for n in info["input_names"])
        for i, (n, a) in enumerate(zip(info["input_names"], info["inputs"], strict=True)):
            console.print(f"  {i:>3}  {n or '-':<{width}}  {a}", soft_wrap=True)
    else:
        console.print(f"inputs : ({', '.join(info['inputs'])})", soft_wrap=True)
    console.print(f"outputs: ({', '.join(info['outputs'])})", soft_wrap=True)
    if info["flops"] is not None:
        console.print(
            f"cost   : {info['flops']:.4g} FLOPs, {info['bytes_accessed']:.4g} bytes "
            "accessed (XLA cost analysis, before optimisation)"
        )
    console.print(f"stage markers: {info['stage_markers']}")
    for line in info["loops"]:
        console.print(f"loop: {line}", soft_wrap=True)
    table = Table("op", "count", title=f"{sum(counts.values())} ops")
    for name, n in counts.most_common():
        table.add_row(name, str(n))
    console.print(table)
    if unsupported:
        console.print(f"[red]unsupported ops ({len(unsupported)}):[/]")
        for name, n, loc in unsupported:
            console.print(f"  {name}  x{n}  first at {loc}", soft_wrap=True)
    else:
        console.print("[green]every op has a rehydration rule[/]")


COMMAND = Command("inspect", _add_inspect, _cmd_inspect)
