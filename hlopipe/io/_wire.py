"""The protobuf wire format, walked just far enough to say whether bytes are a serialized
``HloModuleProto`` (or an ``HloProto`` holding one) before XLA's C++ parser sees them."""

from __future__ import annotations


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
