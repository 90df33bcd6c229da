"""Reading every XLA program format into a :class:`Program`: :func:`load` and
:func:`load_bytes`, which detect the format (``_detect.py``) and hand the bytes to its loader
(``_hlo.py``, ``_mlir.py``; dump folders in ``_dump.py``), behind the crash guard
(``_guard.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

from hlopipe.errors import LoadError
from hlopipe.io import _guard
from hlopipe.io._detect import _as_text, detect_format
from hlopipe.io._dump import _load_dump_dir, dump_modules
from hlopipe.io._hlo import _from_hlo_proto, _from_hlo_text, with_module_header
from hlopipe.io._mlir import _from_export, _from_mlir, drop_unreachable
from hlopipe.io._program import Program

FORMATS = (
    "hlo-text",
    "hlo-proto",
    "stablehlo-text",
    "mlir-bytecode",
    "jax-export",
    "xla-dump",
)


def load(
    source: str | bytes | bytearray | os.PathLike[str],
    *,
    format: str | None = None,
    module: str | None = None,
    entry: str | None = None,
) -> Program:
    """Load an XLA program from a file, a dump folder, or a str/bytes holding one.

    Args:
      source: a path (file or XLA dump folder), or the program itself as ``str`` or ``bytes``.
      format: skip detection and read as this format (one of ``FORMATS``).
      module: in a dump folder, the module to pick (a substring of its name, e.g. ``jit_f``).
      entry: the entry function (default ``main``, or the only public function).

    Returns:
      a :class:`Program`.

    Raises:
      LoadError: the input is in no known format, or its parser rejected it (the message says
        which format was tried, and the parser's line and column).

    Example:
      >>> prog = hlopipe.load("train_step.hlo")
      >>> prog = hlopipe.load(jax.jit(f).lower(x).as_text())
    """
    name = "<bytes>"
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = Path(source)
        name = str(path)
        if path.is_dir():
            return _load_dump_dir(path, module=module, entry=entry)
        if not path.exists():
            raise LoadError(f"{path}: no such file or folder")
        try:
            data: bytes = path.read_bytes()
        except OSError as e:
            raise LoadError(f"{path}: cannot read: {e.strerror}") from e
    elif isinstance(source, str):
        data = source.encode()
    elif isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
    else:
        raise LoadError(f"cannot load a {type(source).__name__}: pass a path, a str or bytes")
    return load_bytes(data, name=name, format=format, entry=entry)


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and len(s) < 4096 and not s.lstrip().startswith(("HloModule", "module"))


def load_bytes(
    data: bytes, *, name: str = "<bytes>", format: str | None = None, entry: str | None = None
) -> Program:
    """Load a program held in ``data`` (see :func:`load`)."""
    fmt = format or detect_format(data, None if name == "<bytes>" else name)
    if fmt == "hlo-text":
        text = _as_text(data)
        if text is None:
            raise LoadError(f"{name}: not UTF-8 text, so not HLO text")
        return _from_hlo_text(with_module_header(text), name, entry)
    strings = None
    if fmt == "mlir-bytecode":
        strings = _guard.check_bytecode(data, name, fmt)
    elif fmt == "stablehlo-text" and _guard.guarded() and _guard.HIGH_ESCAPE.search(data):
        _guard.probe_mlir(data, name, fmt)
    if fmt == "hlo-proto":
        return _from_hlo_proto(data, name, entry)
    if fmt == "stablehlo-text":
        return _from_mlir(data, name, "stablehlo-text", entry)
    if fmt == "mlir-bytecode":
        return _from_mlir(data, name, "mlir-bytecode", entry, strings)
    if fmt == "jax-export":
        return _from_export(data, name, entry)
    raise LoadError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS[:-1])}")


# what other modules of io import from here (Program.drop_unreachable, the package's names)
__all__ = ["FORMATS", "detect_format", "drop_unreachable", "dump_modules", "load", "load_bytes"]
