"""Export of a staged program: per-stage HLO / StableHLO text and ``manifest.json``."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax.extend.core import jaxpr_as_fun

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._staged import SourceKind

if TYPE_CHECKING:
    from hlopipe.stages._staged import StagedProgram

MANIFEST_VERSION = 2  # 2: a stage's program arguments are "arguments" (were "params")
_EXT = {"hlo": ".hlo", "stablehlo": ".mlir"}


def _aval(a: Any) -> dict[str, Any]:
    return {"shape": list(a.shape), "dtype": str(np.dtype(a.dtype))}


def module_text(closed: Any, format: str) -> str:
    """HLO or StableHLO text of a ClosedJaxpr (markers become attributed barriers)."""
    avals = [J.sds(a) for a in closed.in_avals]
    # keep_unused: the module's signature is the documented one (a backward that does not
    # read some parameter still takes it), so files can be merged and chained by position
    lowered = jax.jit(lambda *a: jaxpr_as_fun(closed)(*a), keep_unused=True).lower(*avals)
    return lowered.as_text(dialect="hlo") if format == "hlo" else lowered.as_text()


def manifest_dict(
    staged: StagedProgram, files: dict[str, Any], autodiff: dict[int, Any] | None = None
) -> dict[str, Any]:
    """The manifest as a dict (see :func:`export` for the layout)."""
    cm = staged.cost_model
    stages = []
    transfers = []
    for st in staged.stages:
        transfers += [
            {"src": st.index, "dst": snd.dst, "output": snd.output, "input": snd.input,
             **_aval(snd.aval), "bytes": J.aval_bytes(snd.aval)}
            for snd in st.sends
        ]  # fmt: skip
        entry = _stage_entry(st, files)
        fb = (autodiff or {}).get(st.index)
        if fb is not None:
            entry["autodiff"] = _autodiff_entry(st.index, fb, files)
        stages.append(entry)
    part = staged.partition
    return {
        "version": MANIFEST_VERSION,
        "format": files.get("format"),
        "num_stages": staged.num_stages,
        "program": {
            "file": files.get("program"),
            "inputs": [
                {"index": i, "path": p, **_aval(a), **_rows(staged, i)}
                for i, (p, a) in enumerate(zip(staged.in_paths, staged.in_avals, strict=True))
            ],
            "outputs": _program_outputs(staged),
        },
        "stages": stages,
        "transfers": transfers,
        "cost_model": {
            "flops_per_s": cm.flops_per_s,
            "bytes_per_s": cm.bytes_per_s,
            "link_bytes_per_s": cm.link_bytes_per_s,
        },
        "partition": None
        if part is None
        else {"bottleneck_s": part.bottleneck, "stage_costs_s": list(part.stage_costs)},
        "repeated_layers": None
        if staged.repeated is None
        else {
            "start": staged.repeated.start,
            "period": staged.repeated.period,
            "count": staged.repeated.count,
        },
    }


def _rows(staged: StagedProgram, i: int) -> dict[str, Any]:
    """For an input that is rows of a caller's stacked argument (a cut layer loop): which
    argument (``rows_of``, its flat index in the caller's signature) and which rows."""
    pieces = staged.arg_pieces
    if pieces is None or pieces[i].start is None:
        return {}
    pc = pieces[i]
    return {"rows_of": pc.source, "rows": [pc.start, pc.stop]}


def _stage_entry(st: Any, files: dict[str, Any]) -> dict[str, Any]:
    """One stage's manifest entry: its file, arguments, inputs, outputs and cost."""
    to: dict[int, list[list[int]]] = {}
    for snd in st.sends:
        to.setdefault(snd.output, []).append([snd.dst, snd.input])
    prog_out = dict(st.program_outputs)
    cost = st.cost
    return {
        "index": st.index,
        "file": files.get(f"stage{st.index}"),
        "num_eqns": st.num_eqns,
        "layers": st.layers,
        "arguments": [
            {"arg": i, "path": p, **_aval(a)}
            for i, p, a in zip(st.params_needed, st.param_paths, st.param_avals, strict=True)
        ],
        "inputs": [{"from_stage": r.src, "output": r.output, **_aval(r.aval)} for r in st.receives],
        "outputs": [
            {**_aval(a), "to": to.get(k, []), "program_output": prog_out.get(k)}
            for k, a in enumerate(st.outputs)
        ],
        "cost": None
        if cost is None
        else {
            "flops": cost.flops,
            "bytes": cost.bytes,
            "compute_time_s": cost.compute_time,
            "recv_bytes": cost.recv_bytes,
            "transfer_time_s": cost.transfer_time,
            "param_bytes": cost.param_bytes,
            "memory_bytes": cost.memory_bytes,
            "time_s": cost.time,
        },
    }


def _autodiff_entry(index: int, fb: Any, files: dict[str, Any]) -> dict[str, Any]:
    """A stage's ``autodiff`` entry: its forward/backward files and what they differentiate."""
    return {
        "forward": files.get(f"stage{index}.forward"),
        "backward": files.get(f"stage{index}.backward"),
        "backward_input": files.get(f"stage{index}.backward_input"),
        "backward_weight": files.get(f"stage{index}.backward_weight"),
        "diff_params": list(fb.diff_params),
        "diff_inputs": list(fb.diff_inputs),
        "diff_outputs": list(fb.diff_outputs),
        "residuals": [_aval(a) for a in fb.residual_avals],
        "w_residuals": [_aval(a) for a in fb.w_residual_avals],
        "remat": fb.remat,
    }


def _program_outputs(staged: StagedProgram) -> list[dict[str, Any]]:
    """Each program output's aval and where it comes from (a stage, an argument, a constant)."""
    outputs = []
    for k, (src, a) in enumerate(zip(staged.out_sources, staged.out_avals, strict=True)):
        s: dict[str, Any] = {"kind": src.kind}
        if src.kind is SourceKind.STAGE:
            s.update(stage=src.stage, output=src.index)
        elif src.kind is SourceKind.ARG:
            s.update(arg=src.index)
        outputs.append({"index": k, **_aval(a), "source": s})
    return outputs


def export(
    staged: StagedProgram,
    directory: str,
    *,
    format: str = "hlo",
    argnums: int | Sequence[int] | None = 0,
) -> str:
    """Write the program, each stage and its autodiff parts as text, and ``manifest.json``.

    Files: ``program<ext>`` (whole program, markers kept), ``stage<i><ext>`` and, when the
    program's first output is a scalar loss and ``argnums`` is not ``None``,
    ``stage<i>.forward<ext>``, ``.backward``, ``.backward_input``, ``.backward_weight``;
    ``<ext>`` is ``.hlo`` or ``.mlir``. Returns the manifest path.

    A stage file ``stage<i>`` takes, in this order, the program arguments the stage reads
    (``stages[i].arguments`` in the manifest: parameters and batch leaves alike, each with
    ``arg``, its position in the whole program, and ``path``, its name) and then the values it
    receives (``stages[i].inputs``: ``from_stage`` and that stage's ``output`` index); it
    returns ``stages[i].outputs``, each with ``to`` (``[stage, input index]`` pairs) and
    ``program_output`` (which output of the whole program it is, or ``null``). Chaining the
    stage files by hand is running stage 0, then feeding each output to the inputs it lists.
    """
    if format not in _EXT:
        raise StageError(f"unknown export format {format!r}; use 'hlo' or 'stablehlo'")
    os.makedirs(directory, exist_ok=True)
    ext = _EXT[format]
    files: dict[str, Any] = {"format": format}

    def write(key: str, closed: Any) -> None:
        name = f"{key}{ext}"
        with open(os.path.join(directory, name), "w") as f:
            f.write(module_text(closed, format))
        files[key] = name

    write("program", staged.jaxpr)
    autodiff: dict[int, Any] = {}
    want_ad = (
        argnums is not None
        and staged.out_avals
        and staged.out_avals[0].shape == ()
        and J.is_inexact(staged.out_avals[0])
    )
    for st in staged.stages:
        write(f"stage{st.index}", st.jaxpr)
        if want_ad:
            assert argnums is not None
            fb = st.forward_backward(argnums)
            autodiff[st.index] = fb
            write(f"stage{st.index}.forward", fb.forward_jaxpr)
            write(f"stage{st.index}.backward", fb.backward_jaxpr)
            write(f"stage{st.index}.backward_input", fb.input_jaxpr)
            write(f"stage{st.index}.backward_weight", fb.weight_jaxpr)
    path = os.path.join(directory, "manifest.json")
    with open(path, "w") as f:
        json.dump(manifest_dict(staged, files, autodiff), f, indent=1)
    return path


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def render_manifest(m: dict[str, Any]) -> str:
    """The stage table of a manifest dict, as text."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{m['num_stages']} stages" + (f" ({m['format']})" if m.get("format") else ""))
    for col in (
        "stage",
        "eqns",
        "layers",
        "arguments",
        "receives",
        "sends to",
        "GFLOP",
        "pred. ms",
        "memory",
        "file",
    ):
        t.add_column(col, justify="left" if col in ("receives", "sends to", "file") else "right")
    for st in m["stages"]:
        args = st.get("arguments", st.get("params", []))  # "params" in version 1
        pbytes = sum(int(np.prod(p["shape"])) * np.dtype(p["dtype"]).itemsize for p in args)
        recv: dict[int, int] = {}
        for r in st["inputs"]:
            recv[r["from_stage"]] = recv.get(r["from_stage"], 0) + int(
                np.prod(r["shape"]) * np.dtype(r["dtype"]).itemsize
            )
        dsts = sorted({d for o in st["outputs"] for d, _ in o["to"]})
        outs = [o["program_output"] for o in st["outputs"] if o["program_output"] is not None]
        cost = st.get("cost") or {}
        t.add_row(
            str(st["index"]),
            str(st["num_eqns"]),
            "-" if st.get("layers") is None else str(st["layers"]),
            f"{len(args)} ({_fmt_bytes(pbytes)})",
            ", ".join(f"{s}: {_fmt_bytes(b)}" for s, b in sorted(recv.items())) or "-",
            ", ".join(map(str, dsts)) + (f" out{outs}" if outs else "") or "-",
            f"{cost.get('flops', 0) / 1e9:.3f}",
            f"{cost.get('time_s', 0) * 1e3:.3f}",
            _fmt_bytes(cost.get("memory_bytes", 0)),
            st.get("file") or "-",
        )
    buf = io.StringIO()
    Console(file=buf, width=140, force_terminal=False, color_system=None).print(t)
    return buf.getvalue()


def format_manifest(path: str) -> str:
    """The stage table of an exported ``manifest.json`` (for ``hlopipe inspect``).

    Example:
      >>> print(format_manifest("out/manifest.json"))             # doctest: +SKIP
    """
    try:
        with open(path) as f:
            m = json.load(f)
        if "stages" not in m:
            raise KeyError("stages")
    except (OSError, ValueError, KeyError) as e:
        raise StageError(f"{path} is not an hlopipe stage manifest: {e}") from e
    return render_manifest(m)
