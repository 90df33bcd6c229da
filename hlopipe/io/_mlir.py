"""MLIR text and bytecode (StableHLO, MHLO, VHLO portable artifacts, quantized types) and
``jax.export`` artifacts, through jaxlib's MLIR bindings; the shared MLIR contexts."""

from __future__ import annotations

import dataclasses
import io
import re
import threading
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from hlopipe.errors import LoadError, UnsupportedOpError
from hlopipe.io import _bytecode, _guard, _xla
from hlopipe.io._program import Program, pick_entry
from hlopipe.io._xla import error_text

# what jaxlib's MLIR parser, StableHLO's deserializer and converters raise on input they refuse
# (a JaxRuntimeError is a RuntimeError); anything else is a bug and propagates
_REFUSALS = (ir.MLIRError, RuntimeError, ValueError)


def _from_mlir(
    data: bytes, name: str, fmt: str, entry: str | None, strings: bytes | None = None
) -> Program:
    """A program from MLIR text or bytecode (``strings``: bytecode's string section, when
    :func:`_guard.check_bytecode` has read it already)."""
    ctx = _context(len(data))
    with ctx:
        try:
            module = ir.Module.parse(data if fmt != "stablehlo-text" else data.decode())
        except (ir.MLIRError, ValueError, UnicodeDecodeError) as e:
            if fmt == "mlir-bytecode":
                try:  # a VHLO portable artifact (what jax.export stores)
                    module = _artifact_module(data)
                    fmt = "vhlo-artifact"
                except _REFUSALS:
                    raise LoadError(f"{name}: not valid MLIR bytecode: {error_text(e)}") from None
            else:
                quantized = _with_quant_dialect(data, name, e)
                if quantized is None:
                    # newer MLIR packs boolean hex constants a bit per element
                    unpacked = _unpack_bool_hex(data.decode("utf-8", "replace"))
                    if unpacked is None:
                        raise LoadError(
                            f"{name}: not valid StableHLO/MLIR text: {error_text(e)}"
                        ) from None
                    try:
                        quantized = ir.Module.parse(unpacked)
                    except (ir.MLIRError, ValueError):
                        raise LoadError(
                            f"{name}: not valid StableHLO/MLIR text: {error_text(e)}"
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
    except _REFUSALS as e:
        raise LoadError(
            f"{name}: a VHLO module (StableHLO portable artifact) that StableHLO's deserializer "
            f"cannot read: {error_text(e)}"
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
    except _REFUSALS:
        return module  # the interpreter reports the ops it cannot run


def _from_export(data: bytes, name: str, entry: str | None) -> Program:
    from jax import export as jax_export

    try:
        exp = jax_export.deserialize(bytearray(data))
    except Exception as e:  # isolation: jax's flatbuffer reader fails on the user's bytes, cut
        # short or corrupt, in many ways (struct.error, TypeError, UnicodeDecodeError, ...)
        raise LoadError(
            f"{name}: not a valid jax.export artifact: truncated or corrupt ({len(data)} bytes; "
            f"jax.export.deserialize: {error_text(e)}); export it again "
            "(jax.export.export(...).serialize())"
        ) from None
    _guard.check_bytecode(bytes(exp.mlir_module_serialized), name, "jax-export", whole=data)
    try:
        text = exp.mlir_module()
    except _REFUSALS as e:
        raise LoadError(f"{name}: not a valid jax.export artifact: {error_text(e)}") from None
    prog = _from_mlir(text.encode(), name, "stablehlo-text", entry)
    return dataclasses.replace(prog, format="jax-export", exported=exp)


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
    except _REFUSALS:
        line = text.count("\n", 0, at) + 1
        raise UnsupportedOpError(
            f"{name}:{line}: quantized element type (!quant.uniform<...>) could not be read: "
            f"{error_text(error)}"
        ) from None
