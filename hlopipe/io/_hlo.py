"""HLO text and ``HloModuleProto``, through XLA's own parsers: text in the guard process
(``_guard.py``), then XLA's HLO -> StableHLO conversion into the MLIR loader."""

from __future__ import annotations

import dataclasses
import re

from hlopipe.errors import LoadError
from hlopipe.io import _guard, _xla
from hlopipe.io._mlir import _from_mlir
from hlopipe.io._program import Program
from hlopipe.io._wire import _hlo_proto_module, _is_hlo_proto
from hlopipe.io._xla import error_text
from hlopipe.marker import ATTRIBUTE


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
    return dataclasses.replace(
        prog, optimized="is_scheduled=true" in header, device_counts=_device_counts(text)
    )


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


_MARKED_GTE = re.compile(
    r"get-tuple-element\((%?[\w.\-]+)\).*?frontend_attributes=\{[^}]*?"
    + re.escape(ATTRIBUTE)
    + r'="([^"]*)"'
)


def markers_on_barriers(text: str) -> str:
    """HLO text with each stage marker XLA moved onto a barrier's ``get-tuple-element`` put
    back on the barrier.

    A marker placed from PyTorch (``hlopipe.torch``: an ``opt-barrier`` and then a custom call
    carrying the attribute) loses its custom call to XLA's passes, which move the attribute
    onto the barrier's ``get-tuple-element``; XLA's HLO -> StableHLO conversion drops that
    instruction (and its attributes), so the attribute is copied onto the barrier, where the
    loaders read markers.
    """
    if ATTRIBUTE not in text:
        return text
    barriers = {m.group(1): m.group(2) for m in _MARKED_GTE.finditer(text)}
    if not barriers:
        return text
    lines = text.split("\n")
    for k, line in enumerate(lines):
        m = re.match(r"\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=.*\bopt-barrier\(", line)
        if m is None or m.group(1) not in barriers or ATTRIBUTE in line:
            continue
        attr = f'{ATTRIBUTE}="{barriers[m.group(1)]}"'
        if "frontend_attributes={" in line:
            lines[k] = line.replace(
                "frontend_attributes={", "frontend_attributes={" + attr + ",", 1
            )
        else:
            lines[k] = line.rstrip() + f", frontend_attributes={{{attr}}}"
    return "\n".join(lines)


# the attributes of a custom call that XLA's HLO -> StableHLO conversion drops: a cuDNN
# convolution's window and dimension labels, its groups. They are copied into the call's
# frontend attributes, which the conversion keeps, as ``hlopipe.<name>``.
_CUSTOM_CALL_CONV_ATTRS = re.compile(
    r",\s*(window|dim_labels|feature_group_count|batch_group_count)=(\{[^{}]*\}|[\w>\-]+)"
)


def custom_call_window_attributes(text: str) -> str:
    """HLO text with the ``window=``, ``dim_labels=`` and group counts of each custom call (a
    cuDNN convolution in a GPU dump) also written as its frontend attributes
    ``hlopipe.window`` etc., which XLA's HLO -> StableHLO conversion keeps and the rules of
    the GPU compiler's calls (``rehydrate/ops/gpu.py``) read."""
    if "custom-call(" not in text or ("dim_labels=" not in text and "window=" not in text):
        return text
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if "custom-call(" not in line:
            continue
        found = [(m.group(1), m.group(2)) for m in _CUSTOM_CALL_CONV_ATTRS.finditer(line)]
        if not found:
            continue
        attrs = ",".join(f'{HLOPIPE_PREFIX}{name}="{value.strip("{}")}"' for name, value in found)
        if "frontend_attributes={" in line:
            lines[k] = line.replace(
                "frontend_attributes={", "frontend_attributes={" + attrs + ",", 1
            ).replace(",}", "}")
        else:
            lines[k] = line.rstrip() + f", frontend_attributes={{{attrs}}}"
    return "\n".join(lines)


HLOPIPE_PREFIX = "hlopipe."


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
    text = custom_call_window_attributes(markers_on_barriers(text))
    if not _guard.guarded():
        try:
            proto = _xla.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        except _xla.JaxRuntimeError as e:
            raise LoadError(f"{name}: not valid HLO text: {error_text(e)}") from None
    else:
        proto = _guard.hlo_text_proto(text, name)
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
            raise LoadError(f"{name}: not a valid HloModuleProto: {error_text(e)}") from None
        try:
            hlo = _xla.hlo_module_from_proto(inner)
        except (_xla.JaxRuntimeError, ValueError, RuntimeError):
            raise LoadError(f"{name}: not a valid HloModuleProto: {error_text(e)}") from None
    text = hlo.to_string()
    rewritten = custom_call_window_attributes(text)
    if rewritten != text:  # a cuDNN convolution's window, kept as frontend attributes
        hlo = _xla.hlo_module_from_text(rewritten)
    prog = _from_hlo_module_proto(hlo.as_serialized_hlo_module_proto(), name, "hlo-proto", entry)
    prog.hlo_module = hlo
    return prog


def _from_hlo_module_proto(proto: bytes, name: str, fmt: str, entry: str | None) -> Program:
    try:
        data = _xla.hlo_proto_to_stablehlo_bytes(proto)
    except (_xla.JaxRuntimeError, ValueError, RuntimeError) as e:
        raise LoadError(
            f"{name}: XLA could not convert the HLO to StableHLO: {error_text(e)}"
        ) from None
    # HLO strings may escape any byte (backend_config="\xff"): the MLIR bindings must not
    # meet one that is not UTF-8
    _guard.check_bytecode(data, name, fmt)
    prog = _from_mlir(data, name, fmt, entry)
    prog.hlo_proto = proto
    return prog
