"""The format of a program from its content, not its file name.

MLIR bytecode starts with ``ML\\xefR``; HLO text starts with ``HloModule`` (or a bare
computation); MLIR text has ``func.func``/``module``; of the binary formats, a serialized
HloModuleProto is a protobuf whose wire format is checked in Python (``_wire.py``), and a
``jax.export`` artifact is a flatbuffer.
"""

from __future__ import annotations

import re

from hlopipe.errors import LoadError
from hlopipe.io._wire import _is_hlo_proto

MLIR_BYTECODE_MAGIC = b"ML\xefR"

# The first line of an HLO computation: `[ENTRY] [%]name [(params) -> result] {`.
_HLO_COMPUTATION = re.compile(r"(?:ENTRY\s+)?%?[\w.\-]+\s*(?:\([^{}]*\)\s*->\s*[^{}]*)?\{\s*\n")
_MLIR_START = re.compile(r"(?:module|func\.func|builtin\.module)\b|\"builtin\.module\"")
_MLIR_MODULE = re.compile(r"(?:module|func\.func)\b")
_MLIR_TEXT = re.compile(r"\bfunc\.func\b|^\s*module\b|\bstablehlo\.|\bmhlo\.", re.M)


def detect_format(data: bytes, name: str | None = None) -> str:
    """The format of a program held in ``data`` (see ``FORMATS``); LoadError when none fits,
    naming ``name`` (the file ``data`` came from) when given."""
    subject = f"{name} is" if name else "input is"
    if not data.strip():
        what = f"{name} is empty" if name else "empty input"
        raise LoadError(f"{what}: expected an HLO or StableHLO program")
    if data.startswith(MLIR_BYTECODE_MAGIC):
        return "mlir-bytecode"
    text = _as_text(data)
    if text is not None:
        body = _strip_comments(text)
        if body.startswith("HloModule"):
            return "hlo-text"
        if _MLIR_MODULE.match(body):  # what MLIR writes (the search below would find it first)
            return "stablehlo-text"
        if _HLO_COMPUTATION.match(body) and not _MLIR_START.match(body):
            # A module without its `HloModule` line, as most of XLA's own test HLO is written:
            # bare computations, the ENTRY one (or else the last one) is the entry.
            return "hlo-text"
        if _MLIR_TEXT.search(body):
            return "stablehlo-text"
        raise LoadError(
            f"{subject} text but neither HLO text (starts with 'HloModule' or a computation, "
            "'name {' / 'ENTRY name {') nor MLIR text (has 'func.func' or 'module'); it starts "
            f"with {body[:40]!r}"
        )
    if _is_hlo_proto(data):
        return "hlo-proto"
    if _is_flatbuffer_export(data):
        return "jax-export"
    raise LoadError(
        f"{subject} in no known format: not MLIR bytecode (no 'ML\\xefR' magic), not "
        "text, not a serialized HloModuleProto (bad protobuf wire format), not a jax.export "
        f"artifact ({len(data)} bytes, starting {data[:8]!r})"
    )


def _as_text(data: bytes) -> str | None:
    if b"\x00" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _strip_comments(text: str) -> str:
    """``text`` from its first line that is neither blank nor a comment."""
    m = _FIRST_LINE.search(text)
    return text[m.start() :].lstrip() if m else ""


_FIRST_LINE = re.compile(r"^[ \t]*(?!//|#)\S", re.M)


def _is_flatbuffer_export(data: bytes) -> bool:
    if len(data) < 8:
        return False
    root = int.from_bytes(data[:4], "little")
    return 4 <= root < len(data)
