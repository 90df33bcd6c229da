"""Reading every XLA program format into a :class:`Program`.

The format is detected from the content, not the file name: MLIR bytecode starts with
``ML\\xefR``; HLO text starts with ``HloModule``; MLIR text has ``func.func``/``module``; of the
binary formats, a serialized HloModuleProto is a protobuf whose wire format we check in Python
before XLA's C++ parser sees it, and a ``jax.export`` artifact is a flatbuffer.
"""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from hlopipe.errors import LoadError, UnsupportedOpError
from hlopipe.io import _bytecode, _guard, _xla
from hlopipe.io._program import Program, pick_entry

MLIR_BYTECODE_MAGIC = b"ML\xefR"

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


# The first line of an HLO computation: `[ENTRY] [%]name [(params) -> result] {`.
_HLO_COMPUTATION = re.compile(r"(?:ENTRY\s+)?%?[\w.\-]+\s*(?:\([^{}]*\)\s*->\s*[^{}]*)?\{\s*\n")
_MLIR_START = re.compile(r"(?:module|func\.func|builtin\.module)\b|\"builtin\.module\"")
_MLIR_MODULE = re.compile(r"(?:module|func\.func)\b")
_MLIR_TEXT = re.compile(r"\bfunc\.func\b|^\s*module\b|\bstablehlo\.|\bmhlo\.", re.M)


def detect_format(data: bytes) -> str:
    """The format of a program held in ``data`` (see ``FORMATS``); LoadError when none fits."""
    if not data.strip():
        raise LoadError("empty input: expected an HLO or StableHLO program")
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
            "input is text but neither HLO text (starts with 'HloModule' or a computation, "
            "'name {' / 'ENTRY name {') nor MLIR text (has 'func.func' or 'module'); it starts "
            f"with {body[:40]!r}"
        )
    if _is_hlo_proto(data):
        return "hlo-proto"
    if _is_flatbuffer_export(data):
        return "jax-export"
    raise LoadError(
        "input is in no known format: not MLIR bytecode (no 'ML\\xefR' magic), not text, not a "
        "serialized HloModuleProto (bad protobuf wire format), not a jax.export artifact"
    )


def load_bytes(
    data: bytes, *, name: str = "<bytes>", format: str | None = None, entry: str | None = None
) -> Program:
    """Load a program held in ``data`` (see :func:`load`)."""
    fmt = format or detect_format(data)
    if fmt == "hlo-text":
        text = _as_text(data)
        if text is None:
            raise LoadError(f"{name}: not UTF-8 text, so not HLO text")
        return _from_hlo_text(with_module_header(text), name, entry)
    strings = None
    if fmt == "mlir-bytecode":
        strings = _check_bytecode(data, name, fmt)
    elif fmt == "stablehlo-text" and _guarded() and _HIGH_ESCAPE.search(data) is not None:
        _probe(data, name, fmt)
    if fmt == "hlo-proto":
        return _from_hlo_proto(data, name, entry)
    if fmt == "stablehlo-text":
        return _from_mlir(data, name, "stablehlo-text", entry)
    if fmt == "mlir-bytecode":
        return _from_mlir(data, name, "mlir-bytecode", entry, strings)
    if fmt == "jax-export":
        return _from_export(data, name, entry)
    raise LoadError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS[:-1])}")


# ---- HLO ------------------------------------------------------------------------------------


def with_module_header(text: str) -> str:
    """HLO text with an ``HloModule`` line: bare computations (as XLA's tests write HLO) get
    one, on the line of the first computation so that the parser's line numbers still hold.

    XLA's parser reads a module without the line only when it starts with ``ENTRY`` or
    ``name {``; with the line it also takes computations whose first one has a signature. The
    entry is the ``ENTRY`` computation, or else the last one, either way.
    """
    m = re.search(r"^[ \t]*(?!//|#|/\*)\S", text, re.M)
    if m is None or text[m.start() :].lstrip().startswith("HloModule"):
        return text
    start = m.end() - 1
    return text[:start] + "HloModule module " + text[start:]


def _mark_optimized(prog: Program, text: str) -> Program:
    header = text[: text.find("\n")] if "\n" in text else text
    prog.extra["optimized"] = "is_scheduled=true" in header
    prog.extra["device_counts"] = _device_counts(text)
    return prog


def _device_counts(text: str) -> tuple[int | None, int | None]:
    """(replica_count, num_partitions) as HLO text's ``HloModule`` header line declares them;
    None for what it leaves out (XLA's default for both is 1). jaxlib's parser drops both
    (neither the module it parses nor the StableHLO it converts to carries them), so they are
    read from the text. An HloModuleProto carries no module config at all: XLA runs it with
    the counts its compile options give (1 and 1 by default); hlopipe records none for it."""
    m = re.match(r"\s*(HloModule\b[^\n]*)", text)
    header = m.group(1) if m else ""
    reps = re.search(r"\breplica_count=(\d+)", header)
    parts = re.search(r"\bnum_partitions=(\d+)", header)
    return (int(reps.group(1)) if reps else None, int(parts.group(1)) if parts else None)


_ELIDED = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=.*\bconstant\(\{\.\.\.\}\)", re.M)


def _from_hlo_text(text: str, name: str, entry: str | None) -> Program:
    m = _ELIDED.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise LoadError(
            f"{name}:{line}: constant {m.group(1)} is elided as 'constant({{...}})', so its values "
            "are not in this text and computing with it would give wrong answers. Load the "
            "HloModuleProto (.pb) instead, or dump with --xla_dump_large_constants"
        )
    if not _guarded():
        try:
            proto = _xla.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        except _xla.JaxRuntimeError as e:
            raise LoadError(f"{name}: not valid HLO text: {_clean(e)}") from None
        return _mark_optimized(_from_hlo_module_proto(proto, name, "hlo-text", entry), text)
    try:
        proto = _guard.parse_hlo_text(text, PROBE_TIMEOUT_S)
    except _guard.ParseError as e:
        raise LoadError(f"{name}: not valid HLO text: {_clean(e)}") from None
    except _guard.Crashed as e:
        raise LoadError(
            f"{name}: XLA's HLO parser crashed reading this text ({e}), so it is corrupt"
        ) from None
    except _guard.TimedOut:
        raise LoadError(
            f"{name}: XLA's HLO parser did not finish reading this text in "
            f"{PROBE_TIMEOUT_S:.0f} s; the input is likely corrupt"
        ) from None
    return _mark_optimized(_from_hlo_module_proto(proto, name, "hlo-text", entry), text)


def _from_hlo_proto(data: bytes, name: str, entry: str | None) -> Program:
    if not _is_hlo_proto(data):
        raise LoadError(f"{name}: not a serialized HloModuleProto (protobuf wire format broken)")
    try:
        hlo = _xla.hlo_module_from_proto(data)
    except (_xla.JaxRuntimeError, ValueError, RuntimeError) as e:
        # XLA dumps (--xla_dump_hlo_as_proto, *.hlo.pb) write an HloProto, whose field 1 is
        # the HloModuleProto.
        inner = _hlo_proto_module(data)
        if inner is None:
            raise LoadError(f"{name}: not a valid HloModuleProto: {_clean(e)}") from None
        try:
            hlo = _xla.hlo_module_from_proto(inner)
        except (_xla.JaxRuntimeError, ValueError, RuntimeError):
            raise LoadError(f"{name}: not a valid HloModuleProto: {_clean(e)}") from None
    prog = _from_hlo_module_proto(hlo.as_serialized_hlo_module_proto(), name, "hlo-proto", entry)
    prog.hlo_module = hlo
    return prog


def _from_hlo_module_proto(proto: bytes, name: str, fmt: str, entry: str | None) -> Program:
    try:
        data = _xla.hlo_proto_to_stablehlo_bytes(proto)
    except (_xla.JaxRuntimeError, ValueError, RuntimeError) as e:
        raise LoadError(
            f"{name}: XLA could not convert the HLO to StableHLO: {_clean(e)}"
        ) from None
    # HLO strings may escape any byte (backend_config="\xff"): the MLIR bindings must not
    # meet one that is not UTF-8
    _check_bytecode(data, name, fmt)
    prog = _from_mlir(data, name, fmt, entry)
    prog.hlo_proto = proto
    return prog


# ---- MLIR -----------------------------------------------------------------------------------


def _from_mlir(
    data: bytes, name: str, fmt: str, entry: str | None, strings: bytes | None = None
) -> Program:
    """A program from MLIR text or bytecode (``strings``: bytecode's string section, when
    :func:`_check_bytecode` has read it already)."""
    ctx = _context(len(data))
    with ctx:
        try:
            module = ir.Module.parse(data if fmt != "stablehlo-text" else data.decode())
        except (ir.MLIRError, ValueError, UnicodeDecodeError) as e:
            if fmt == "mlir-bytecode":
                try:  # a VHLO portable artifact (what jax.export stores)
                    module = _artifact_module(data)
                    fmt = "vhlo-artifact"
                except Exception:
                    raise LoadError(f"{name}: not valid MLIR bytecode: {_clean(e)}") from None
            else:
                quantized = _with_quant_dialect(data, name, e)
                if quantized is None:
                    # newer MLIR packs boolean hex constants a bit per element
                    unpacked = _unpack_bool_hex(data.decode("utf-8", "replace"))
                    if unpacked is None:
                        raise LoadError(
                            f"{name}: not valid StableHLO/MLIR text: {_clean(e)}"
                        ) from None
                    try:
                        quantized = ir.Module.parse(unpacked)
                    except (ir.MLIRError, ValueError):
                        raise LoadError(
                            f"{name}: not valid StableHLO/MLIR text: {_clean(e)}"
                        ) from None
                module = quantized
        if _is_vhlo(module):
            module = _from_vhlo(module, data, fmt, name)
            fmt = "vhlo-artifact"
        if fmt in ("stablehlo-text", "mlir-bytecode") and _may_have_mhlo_ops(data, fmt, strings):
            module = _normalise_mhlo(module, ctx)
        entry_name = entry or pick_entry(module, ctx)
    return Program(format=fmt, module=module, context=ctx, entry=entry_name, source=name)


def _is_vhlo(module: ir.Module) -> bool:
    """Whether the module holds VHLO ops (a portable artifact, or VHLO text): jaxlib registers
    the VHLO dialect, so such bytecode parses as it is, with nothing to run until converted."""
    return any(op.operation.name.startswith("vhlo.") for op in module.body.operations)


def _from_vhlo(module: ir.Module, data: bytes, fmt: str, name: str) -> ir.Module:
    """A VHLO module (of any version jaxlib still reads) as StableHLO, with StableHLO's own
    deserializer; in the current context."""
    if fmt != "mlir-bytecode":  # VHLO text: the deserializer takes bytecode
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
        data = buf.getvalue()
    try:
        return _artifact_module(data)
    except Exception as e:
        raise LoadError(
            f"{name}: a VHLO module (StableHLO portable artifact) that StableHLO's deserializer "
            f"cannot read: {_clean(e)}"
        ) from None


_BOOL_HEX = re.compile(r'dense<"0x([0-9A-Fa-f]*)">(\s*:\s*tensor<((?:\d+x)*)i1>)')


def _unpack_bool_hex(text: str) -> str | None:
    """``text`` with each boolean hex constant written one bit per element (newer MLIR packs
    ``i1`` elements eight to a byte, lowest bit first; PyTorch/XLA's StableHLO text does)
    rewritten one byte per element, as jaxlib's parser reads them; None when there is none."""
    changed = False

    def unpack(m: re.Match[str]) -> str:
        nonlocal changed
        n = int(np.prod([int(d) for d in m.group(3).split("x") if d], dtype=np.int64))
        packed = bytes.fromhex(m.group(1))
        if len(packed) == n or len(packed) != (n + 7) // 8:
            return m.group(0)
        changed = True
        bits = np.unpackbits(np.frombuffer(packed, np.uint8), bitorder="little")[:n]
        return f'dense<"0x{bits.astype(np.uint8).tobytes().hex().upper()}">{m.group(2)}'

    out = _BOOL_HEX.sub(unpack, text)
    return out if changed else None


def _artifact_module(data: bytes) -> ir.Module:
    """A VHLO portable artifact as a StableHLO module of the current context (jaxlib gives
    the module, or its text)."""
    out = _xla.deserialize_portable_artifact(data)
    return out if isinstance(out, ir.Module) else ir.Module.parse(out)


def drop_unreachable(module: ir.Module, entry: str) -> None:
    """Remove the private functions the entry never reaches (MLIR's symbol-dce), in the
    current context. See :meth:`Program.drop_unreachable`."""
    entry_op, others = None, 0
    for top in module.body.operations:
        op = top.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            entry_op = op
        else:
            others += 1
    if entry_op is None or not others:
        return  # nothing to drop (pick_entry / find_func report a missing entry)
    visibility = entry_op.attributes.get("sym_visibility", None)
    if visibility is not None:  # a private entry (entry=NAME) is a root too
        del entry_op.attributes["sym_visibility"]
    try:
        _symbol_dce().run(module.operation)
    except ir.MLIRError:
        pass  # nothing removed: the interpreter still reads only what the entry reaches
    finally:
        if visibility is not None:
            entry_op.attributes["sym_visibility"] = visibility


# A context is costly to make (every dialect JAX registers is loaded: several ms, more than
# parsing a model), so loads share one. A context never frees what it uniques (types,
# attributes, constants), so a fresh one is made after this many bytes of input; programs
# keep the context they were loaded in.
_CONTEXT_BYTES = 256 << 20
_contexts = threading.local()


def _context(nbytes: int) -> ir.Context:
    ctx, used = getattr(_contexts, "ctx", None), getattr(_contexts, "used", 0)
    if ctx is None or used + nbytes > _CONTEXT_BYTES:
        ctx, used = _xla.make_context(), 0
        _contexts.ctx, _contexts.dce = ctx, None
    _contexts.used = used + nbytes
    return ctx


def _symbol_dce() -> Any:
    """MLIR's symbol-dce pass, in the current (shared) context, made once per context."""
    from jaxlib.mlir import passmanager

    if getattr(_contexts, "dce", None) is None or _contexts.dce_ctx is not ir.Context.current:
        _contexts.dce = passmanager.PassManager.parse("builtin.module(symbol-dce)")
        _contexts.dce_ctx = ir.Context.current
    return _contexts.dce


# An MHLO op by name: generic form ("mhlo.topk"(...)) or custom form (= mhlo.topk ...); MHLO
# attribute names (mhlo.sharding = ..., {mhlo.frontend_attributes = ...}) are not ops.
_GENERIC_AT = re.compile(rb'"mhlo\.[a-z_]+"\s*\(')
_CUSTOM_AT = re.compile(rb"mhlo\.[a-z_]+\b(?!\s*=)")


def _text_has_mhlo_op(data: bytes) -> bool:
    """Whether MLIR text has an MHLO op (looked for only where "mhlo." occurs: fast)."""
    i = data.find(b"mhlo.")
    while i >= 0:
        if i and data[i - 1] == 0x22:  # '"': an op in generic form?
            if _GENERIC_AT.match(data, i - 1):
                return True
        else:
            p = i - 1
            while p >= 0 and data[p] in (0x20, 0x09):
                p -= 1
            # after '=' or at the start of a line, and not an attribute name (name = ...)
            if (p < 0 or data[p] in (0x3D, 0x0A)) and _CUSTOM_AT.match(data, i):
                return True
        i = data.find(b"mhlo.", i + 5)
    return False


def _may_have_mhlo_ops(data: bytes, fmt: str, strings: bytes | None) -> bool:
    if fmt == "stablehlo-text":
        return _text_has_mhlo_op(data)
    try:  # in bytecode, a dialect used by an op is named in the string section
        if strings is None:
            strings = _bytecode.check_strings(data)
        return strings.startswith(b"mhlo\x00") or b"\x00mhlo\x00" in strings
    except (_bytecode.NotUnderstood, _bytecode.BadString):
        return True


# MHLO ops that XLA's HLO -> StableHLO conversion leaves in place; the interpreter runs them.
_MHLO_KEEP = {"mhlo.fusion", "mhlo.return", "mhlo.copy"}


def _normalise_mhlo(module: ir.Module, ctx: ir.Context) -> ir.Module:
    """MHLO text (legacy JAX/TF) -> StableHLO, with XLA's legalisation."""
    text = str(module)
    ops = {n for n in re.findall(r"[\"\s](mhlo\.[a-z_]+)[\"\s(]", text)} - _MHLO_KEEP
    if not ops:
        return module
    from hlopipe._jax_compat import mlir as jax_mlir

    try:
        converted = _xla.mhlo_to_stablehlo(jax_mlir.module_to_bytecode(module))
        return ir.Module.parse(converted)
    except Exception:
        return module  # the interpreter reports the ops it cannot run


def _from_export(data: bytes, name: str, entry: str | None) -> Program:
    from jax import export as jax_export

    try:
        exp = jax_export.deserialize(bytearray(data))
    except Exception as e:
        raise LoadError(f"{name}: not a valid jax.export artifact: {_clean(e)}") from None
    _check_bytecode(bytes(exp.mlir_module_serialized), name, "jax-export", whole=data)
    try:
        text = exp.mlir_module()
    except Exception as e:
        raise LoadError(f"{name}: not a valid jax.export artifact: {_clean(e)}") from None
    prog = _from_mlir(text.encode(), name, "stablehlo-text", entry)
    prog.format = "jax-export"
    prog.extra["exported"] = exp
    return prog


# ---- the crash guard -------------------------------------------------------------------------

# jaxlib's MLIR bindings abort the process (std::terminate, from nanobind) when a string in a
# module is not UTF-8: in a parser diagnostic quoting corrupt bytecode, or when a string
# attribute or attribute name is read. XLA's HLO text parser can fail a CHECK (SIGABRT in
# HloComputation) on mutated text. Fuzzing found all three (benchmarks/fuzz_load.py). So:
# - HLO text is parsed by XLA in a warm child process (_guard), which hands back the proto;
# - MLIR bytecode (and the one inside a jax.export artifact, and what XLA's HLO converter
#   writes) has its strings checked in Python first (_bytecode); bytecode whose layout that
#   check does not follow, and MLIR text whose strings escape non-ASCII bytes, are parsed and
#   walked in a child process first (_probe).
# HLOPIPE_NO_PROBE=1 skips all of this (trusted input).
PROBE_TIMEOUT_S = 120.0
_HIGH_ESCAPE = re.compile(rb"\\[89a-fA-F][0-9a-fA-F]")


def _guarded() -> bool:
    return os.environ.get("HLOPIPE_NO_PROBE") != "1"


def _check_bytecode(data: bytes, name: str, fmt: str, whole: bytes | None = None) -> bytes | None:
    """Refuse bytecode with a string that is not UTF-8; bytecode this check cannot follow is
    parsed in a child process first (``whole``: the input to give it, if not ``data``).
    Returns the string section when it was read (see :func:`_bytecode.check_strings`)."""
    if not _guarded():
        return None
    try:
        return _bytecode.check_strings(data)
    except _bytecode.BadString as e:
        where, raw = e.args
        raise LoadError(
            f"{name}: {where} of this {fmt} input is not UTF-8 ({raw!r}), so it is corrupt"
        ) from None
    except _bytecode.NotUnderstood:
        _probe(whole if whole is not None else data, name, fmt)
        return None


def _probe(data: bytes, name: str, fmt: str) -> None:
    import signal
    import subprocess
    import sys

    env = dict(os.environ, HLOPIPE_NO_PROBE="1", JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    code = "import sys; from hlopipe.io._load import _probe_child; _probe_child(sys.argv[1])"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, fmt],
            input=data,
            env=env,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise LoadError(
            f"{name}: jaxlib's parser did not finish reading this {fmt} input in "
            f"{PROBE_TIMEOUT_S:.0f} s; the input is likely corrupt"
        ) from None
    if proc.returncode == 0:
        return
    rc = proc.returncode
    why = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    tail = " ".join(proc.stderr.decode(errors="replace").split()[-30:])
    raise LoadError(
        f"{name}: jaxlib's MLIR parser crashed reading this {fmt} input ({why}), so it is "
        f"corrupt (often a string that is not UTF-8); parser said: {tail[-300:]}"
    )


def _probe_child(fmt: str) -> None:
    """In the child: load the input from stdin and touch every attribute, as rehydration does.
    Exits 0 unless the process dies."""
    import sys

    data = sys.stdin.buffer.read()
    try:
        prog = load_bytes(data, format=fmt)
        with prog.context:
            _touch(prog.module.operation)
    except Exception:
        pass
    sys.stdout.flush()
    os._exit(0)


def _touch(op: Any) -> None:
    attributes = op.attributes
    for i in range(len(attributes)):
        _touch_attr(attributes[i].name, attributes[i].attr)
    str(op.location)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                _touch(inner.operation)


def _touch_attr(name: str, attr: Any) -> None:
    if isinstance(attr, ir.StringAttr | ir.FlatSymbolRefAttr):
        attr.value  # noqa: B018
    elif isinstance(attr, ir.ArrayAttr):
        for a in attr:
            _touch_attr(name, a)
    elif isinstance(attr, ir.DictAttr):
        for i in range(len(attr)):
            _touch_attr(attr[i].name, attr[i].attr)


# ---- dump folders ---------------------------------------------------------------------------


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
                f"{path}: {len(picked)} modules, pick one with module=NAME (--module NAME): "
                + ", ".join(picked)
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
            prog.format = f"xla-dump/{prog.format}"
            prog.extra["dump_file"] = str(files[want])
            return prog
    raise LoadError(
        f"{path}: module {picked[0]} has no HLO text or proto file ({', '.join(files)})"
    )


# ---- helpers ---------------------------------------------------------------------------------


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


def _clean(e: BaseException) -> str:
    msg = str(e)
    msg = msg.replace("INVALID_ARGUMENT: ", "")
    return " ".join(msg.split())[:2000]


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _wire_ok(data: bytes, start: int, end: int, depth: int) -> bool:
    """Whether data[start:end] is a well-formed protobuf message (nested messages checked to a
    few levels where a length-delimited field parses as one; strings are not)."""
    pos = start
    while pos < end:
        key, pos = _read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            return False
        if wire == 0:
            _, pos = _read_varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = _read_varint(data, pos)
            pos += n
        else:
            return False
        if pos > end:
            return False
    return pos == end


def _is_hlo_proto(data: bytes) -> bool:
    # HloModuleProto starts with field 1 (name, a string) as XLA writes it.
    if not data or data[0] != 0x0A:
        return False
    try:
        return _wire_ok(data, 0, len(data), 0)
    except ValueError:
        return False


def _hlo_proto_module(data: bytes) -> bytes | None:
    """The HloModuleProto inside an HloProto (its field 1), or None."""
    try:
        n, pos = _read_varint(data, 1)
    except ValueError:
        return None
    inner = data[pos : pos + n]
    if len(inner) != n or not _is_hlo_proto(inner):
        return None
    return inner


def _is_flatbuffer_export(data: bytes) -> bool:
    if len(data) < 8:
        return False
    root = int.from_bytes(data[:4], "little")
    return 4 <= root < len(data)


def _with_quant_dialect(data: bytes, name: str, error: Exception) -> ir.Module | None:
    """Text with quantized element types, parsed once the ``quant`` dialect is loaded (None for
    other text). jaxlib's contexts register that dialect without loading it, so StableHLO's
    verifier rejects ``!quant.uniform`` types until StableHLO's deserializer (which loads
    every dialect it reads) has run in the context: an empty portable artifact loads it."""
    text = data.decode(errors="replace")
    at = text.find("!quant.")
    if at < 0:
        return None
    try:
        _xla.deserialize_portable_artifact(_xla.empty_portable_artifact())
        return ir.Module.parse(text)
    except Exception:
        line = text.count("\n", 0, at) + 1
        raise UnsupportedOpError(
            f"{name}:{line}: quantized element type (!quant.uniform<...>) could not be read: "
            f"{_clean(error)}"
        ) from None
