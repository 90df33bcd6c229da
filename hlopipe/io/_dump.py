"""XLA dump folders (``--xla_dump_to``): their modules by name and stage, and the file of a
module the loader reads."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from hlopipe.errors import Keyword, LoadError
from hlopipe.io._program import Program

_DUMP_FILE = re.compile(r"^module_(\d+)\.(.+)$")
# where a module's name ends: its stage (XLA prefixes the backend: cpu_after_optimizations)
_DUMP_STAGE = re.compile(r"^(.+?)\.(?:before_optimizations|(?:[a-z]+_)?after_optimizations)\b")


def dump_modules(path: str | os.PathLike[str]) -> dict[str, dict[str, Path]]:
    """The modules of an XLA dump folder: name -> {stage: file}, e.g. 'module_0000.jit_f' ->
    {'before_optimizations.pb': ..., 'before_optimizations.txt': ...}. A module's name may
    hold dots (PyTorch/XLA's 'SyncTensorsGraph.40'): it ends where its stage begins."""
    files = [(m, f) for f in sorted(Path(path).iterdir()) if (m := _DUMP_FILE.match(f.name))]
    names: dict[str, str] = {}
    for m, _ in files:
        stage = _DUMP_STAGE.match(m.group(2))
        if stage and m.group(1) not in names:
            names[m.group(1)] = stage.group(1)
    out: dict[str, dict[str, Path]] = {}
    for m, f in files:
        name = names.get(m.group(1))
        if name is None or not m.group(2).startswith(name + "."):
            continue
        key = f"module_{m.group(1)}.{name}"
        rest = f.name[len(key) + 1 :]
        if rest.endswith((".txt", ".pb", ".mlir", ".hlo")) and "buffer-assignment" not in rest:
            out.setdefault(key, {})[rest] = f
    return out


def _load_dump_dir(path: Path, module: str | None, entry: str | None) -> Program:
    from hlopipe.io._load import load  # the module's file, in whatever format it is

    modules = dump_modules(path)
    if not modules:
        raise LoadError(f"{path}: a folder, but not an XLA dump folder (no module_*.* files)")
    if module is not None:
        picked = [k for k in modules if module in k]
        if not picked:
            raise LoadError(f"{path}: no module matches {module!r}; modules: {', '.join(modules)}")
    else:
        picked = list(modules)
    if len(picked) > 1:
        exact = [k for k in picked if k.split(".", 1)[1] == module]
        if len(exact) == 1:
            picked = exact
        else:
            raise LoadError(
                f"{path}: {len(picked)} modules, pick one with ",
                Keyword("module", "NAME"),
                ": " + ", ".join(picked),
            )
    files = modules[picked[0]]
    order = [
        "before_optimizations.hlo.pb",
        "before_optimizations.pb",
        "before_optimizations.txt",
        "after_optimizations.hlo.pb",
        "after_optimizations.pb",
        "after_optimizations.txt",
    ]
    # XLA names the optimized module after its backend: cpu_after_optimizations.txt
    order += sorted(f for f in files if re.fullmatch(r"[a-z]+_after_optimizations\.(?:pb|txt)", f))
    for want in order:
        if want in files:
            prog = load(files[want], entry=entry)
            return dataclasses.replace(
                prog, format=f"xla-dump/{prog.format}", dump_file=str(files[want])
            )
    raise LoadError(
        f"{path}: module {picked[0]} has no HLO text or proto file ({', '.join(files)})"
    )
