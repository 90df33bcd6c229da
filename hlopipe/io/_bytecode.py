"""A check of MLIR bytecode before jaxlib reads it: every string must be UTF-8.

jaxlib's MLIR bindings abort the process (std::terminate, from nanobind) on a string that is
not UTF-8: when a parser diagnostic quotes it, or when a string attribute, attribute name or
op name is read. In bytecode every such string sits in one of two places, the string section
(names, string attributes, file names of locations) and the attribute/type entries stored as
their textual form, so checking those two up front, in Python, keeps the parser from seeing
one. See MLIR's ``BytecodeReader.cpp`` for the layout read here.
"""

from __future__ import annotations

MAGIC = b"ML\xefR"
_STRING, _DIALECT, _ATTR_TYPE, _ATTR_TYPE_OFFSET = 0, 1, 2, 3
_KNOWN_SECTIONS = set(range(9))  # string ... properties: MLIR's bytecode versions 0-6


class NotUnderstood(Exception):
    """The bytes do not follow the layout this reader knows (corrupt, or a newer version)."""


class BadString(Exception):
    """A string of the module is not UTF-8 (``args``: where, and the bytes)."""


def check_strings(data: bytes) -> bytes:
    """The strings of the string section (each followed by a NUL), after checking that each
    string of the module is UTF-8.

    Raises:
      BadString: a string (or a textual attribute or type) is not UTF-8.
      NotUnderstood: the layout is not one this reader knows; the caller must be careful.
    """
    if not data.startswith(MAGIC):
        raise NotUnderstood("no bytecode magic")
    r = _Reader(data, len(MAGIC))
    r.varint()  # version
    end = data.find(b"\x00", r.pos)
    if end < 0:
        raise NotUnderstood("no producer string")
    _utf8(data[r.pos : end], "the producer string")
    r.pos = end + 1
    sections: dict[int, bytes] = {}
    pos, size = r.pos, len(data)
    while pos < size:  # read inline, not through _Reader: this loop is most of a small load
        code = data[pos]
        sid, aligned = code & 0x7F, code & 0x80
        length, pos = _varint_at(data, pos + 1)
        if aligned:
            alignment, pos = _varint_at(data, pos)
            if alignment == 0 or alignment & (alignment - 1) or alignment > 4096:
                raise NotUnderstood("bad alignment")
            pad = -pos % alignment
            if data[pos : pos + pad] != b"\xcb" * pad:
                raise NotUnderstood("bad padding")
            pos += pad
        if sid not in _KNOWN_SECTIONS or sid in sections:
            raise NotUnderstood(f"section {sid}")
        if length > size - pos:
            raise NotUnderstood("truncated")
        sections[sid] = data[pos : pos + length]
        pos += length
    if _STRING not in sections:
        raise NotUnderstood("no string section")
    strings = _strings(sections[_STRING])
    if _ATTR_TYPE in sections and _ATTR_TYPE_OFFSET in sections:
        _textual_entries(sections[_ATTR_TYPE], sections[_ATTR_TYPE_OFFSET])
    return strings


def _strings(section: bytes) -> bytes:
    r = _Reader(section, 0)
    count = r.varint()
    if count > len(section):
        raise NotUnderstood("string count")
    end = len(section)
    sizes = section[r.pos : r.pos + count]
    if len(sizes) == count and not sizes.translate(None, _ODD):
        # every size a one-byte varint (strings under 64 bytes): at C speed
        end -= (sum(sizes) - count) >> 1
        r.pos += count
        if end < r.pos:
            raise NotUnderstood("string sizes overlap the strings")
        count = 0
    for _ in range(count):  # sizes are stored in reverse order, strings back to front
        size = r.varint()
        if size == 0 or size > end or section[end - 1] != 0:
            raise NotUnderstood("string size")
        end -= size
    if r.pos > end:
        raise NotUnderstood("string sizes overlap the strings")
    # NUL is one byte in UTF-8: the strings are UTF-8 each if they are all together
    blob = section[end:]
    _utf8(blob, "a string")
    return blob


# the odd bytes: a one-byte varint
_ODD = bytes(range(1, 256, 2))
# the bytes b with b & 3 == 3: a one-byte varint of a custom-encoded entry
_CUSTOM_ONE_BYTE = bytes(b for b in range(256) if b & 3 == 3)


def _textual_entries(section: bytes, offsets: bytes) -> None:
    try:
        section.decode("utf-8")
        return  # no entry can be other than UTF-8 (large constants make this fail: walk)
    except UnicodeDecodeError:
        pass
    r = _Reader(offsets, 0)
    total = r.varint() + r.varint()  # attributes, then types
    pos = seen = 0
    limit = len(section)
    while seen < total:
        r.varint()  # dialect
        n = r.varint()
        if n == 0 or seen + n > total:
            raise NotUnderstood("attribute/type group")
        at = r.pos
        group = offsets[at : at + n]
        if len(group) == n and not group.translate(None, _CUSTOM_ONE_BYTE):
            # every entry custom-encoded, its varint one byte (size << 2 | 0b11): at C speed
            pos += (sum(group) - 3 * n) >> 2
            if pos > limit:
                raise NotUnderstood("attribute/type entry size")
            r.pos = at + n
            seen += n
            continue
        for _ in range(n):
            first = offsets[at] if at < len(offsets) else 0
            if first & 1:  # a one-byte varint, nearly always: read inline
                enc, at = first >> 1, at + 1
            else:
                r.pos = at
                enc = r.varint()
                at = r.pos
            size = enc >> 1
            if pos + size > limit:
                raise NotUnderstood("attribute/type entry size")
            if not enc & 1:  # stored as its textual form, NUL-terminated
                _utf8(section[pos : pos + size].rstrip(b"\x00"), "an attribute or type")
            pos += size
        r.pos = at
        seen += n


def _utf8(s: bytes, what: str) -> None:
    try:
        s.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadString(what, s[max(0, e.start - 20) : e.end + 20]) from None


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    """MLIR's prefix varint at ``pos`` and the position after it: the first byte's trailing
    zeros count the bytes that follow."""
    if pos >= len(data):
        raise NotUnderstood("truncated")
    first = data[pos]
    if first & 1:
        return first >> 1, pos + 1
    if first == 0:
        end = pos + 9
        if end > len(data):
            raise NotUnderstood("truncated")
        return int.from_bytes(data[pos + 1 : end], "little"), end
    extra = (first & -first).bit_length() - 1
    end = pos + 1 + extra
    if end > len(data):
        raise NotUnderstood("truncated")
    return int.from_bytes(data[pos:end], "little") >> (extra + 1), end


class _Reader:
    def __init__(self, data: bytes, pos: int):
        self.data, self.pos = data, pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise NotUnderstood("truncated")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise NotUnderstood("truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def varint(self) -> int:
        value, self.pos = _varint_at(self.data, self.pos)
        return value
