"""A folder written by ``hlopipe.torch.export_generation``, read for ``hlopipe generate DIR``
and ``hlopipe serve DIR``: its programs, parameters, cache length, end-of-sequence ids and
tokenizer, from its ``manifest.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from hlopipe.errors import RuntimeConfigError

MANIFEST = "manifest.json"  # hlopipe.torch.MANIFEST (that module imports no JAX, nor this one)
FORMAT = "hlopipe.generation/1"


class ExportFolder(NamedTuple):
    """What an export folder holds, as paths and values: ``decode`` and ``prefill`` (program
    files), ``params`` (the .npz, arrays by name), ``max_len`` (the cache length),
    ``eos_token_ids``, ``tokenizer`` (a ``tokenizer.json`` or None), ``batch``,
    ``prompt_len`` and ``chunk`` (the chunk step's file, written with ``chunk=``, or None)."""

    decode: str
    prefill: str
    params: str
    max_len: int
    eos_token_ids: tuple[int, ...]
    tokenizer: str | None
    batch: int
    prompt_len: int
    chunk: str | None = None


def is_export_folder(path: str) -> bool:
    """Whether ``path`` is a folder holding an export's manifest."""
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def read_export_folder(path: str) -> ExportFolder:
    """The folder's manifest read and its files checked.

    Raises:
      RuntimeConfigError: no manifest, another format, a file it names missing.
    """
    folder = Path(path)
    where = f"{path}: "
    if not folder.is_dir():
        raise RuntimeConfigError(where + "not a folder")
    file = folder / MANIFEST
    if not file.is_file():
        raise RuntimeConfigError(
            where + f"no {MANIFEST}; give a folder written by hlopipe.torch.export_generation, "
            "or the decode step's file"
        )
    try:
        m = json.loads(file.read_text())
        fmt = m.get("format")
    except (ValueError, AttributeError) as e:
        raise RuntimeConfigError(where + f"{MANIFEST} is not a JSON object ({e})") from e
    if fmt != FORMAT:
        raise RuntimeConfigError(
            where + f"{MANIFEST} is of format {fmt!r}, this hlopipe reads {FORMAT!r}; export "
            "again with this hlopipe's hlopipe.torch.export_generation"
        )
    try:
        files = {k: folder / m[k]["file"] for k in ("decode", "prefill")}
        if "chunk" in m:  # export_generation(chunk=C)
            files["chunk"] = folder / m["chunk"]["file"]
        files["params"] = folder / m["params"]
        sizes = {k: int(m[k]) for k in ("max_len", "batch", "prompt_len")}
    except (KeyError, TypeError, ValueError) as e:
        raise RuntimeConfigError(
            where + f"{MANIFEST} lacks or garbles {e}; export again with "
            "hlopipe.torch.export_generation"
        ) from e
    for k, f in files.items():
        if not f.is_file():
            raise RuntimeConfigError(where + f"the {k} file {f.name} the manifest names is missing")
    tokenizer = None
    if m.get("tokenizer"):
        t = folder / m["tokenizer"]
        t = t / "tokenizer.json" if t.is_dir() else t
        if not t.is_file():
            raise RuntimeConfigError(where + f"the tokenizer {t} the manifest names is missing")
        tokenizer = str(t)
    return ExportFolder(
        str(files["decode"]), str(files["prefill"]), str(files["params"]), sizes["max_len"],
        tuple(int(i) for i in m.get("eos_token_ids", ())), tokenizer, sizes["batch"],
        sizes["prompt_len"], str(files["chunk"]) if "chunk" in files else None,
    )  # fmt: skip
