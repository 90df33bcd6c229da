"""Reading test files: which suite a file belongs to, its modules, and the ``check`` /
``interpreter`` dialects' custom syntax rewritten into MLIR's generic form.

Two formats (both go through one runner):

(a) StableHLO's generated testdata (``stablehlo/testdata``): ``@main`` calls ``@inputs`` and
    ``@expected``, applies one op and checks the result with ``stablehlo.custom_call
    @check.expect_eq`` / ``@check.expect_close`` / ``@check.expect_almost_eq``.
(b) The hand-written interpreter suite (``stablehlo/tests/interpret``): modules separated by
    ``// -----``; every argument-less ``func.func`` that nothing calls is a test; assertions
    are ops of the ``check`` dialect (``check.expect_eq_const %x, dense<...> : tensor<...>``,
    ``expect_almost_eq[_const]``, ``expect_eq``, ``expect_close``, ``expect_serialized_eq``).
    jaxlib registers neither the ``check`` nor the ``interpreter`` dialect, so their custom
    syntax would not parse: :func:`to_generic` rewrites those lines into MLIR's generic op
    form first, which an MLIR context that allows unregistered dialects accepts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from hlopipe.errors import HlopipeError, LoadError
from hlopipe.io import detect_format as program_format

MLIR_BYTECODE_MAGIC = b"ML\xefR"
_SPLIT = re.compile(r"^[ \t]*//[ \t]*-----[ \t]*$", re.M)
_PRETTY = re.compile(
    r"^(\s*)(?:(%[\w$.#:-]+(?:\s*,\s*%[\w$.-]+)*)\s*=\s*)?(check|interpreter)\.(\w+)\b(.*)$"
)


def detect_format(text: str) -> str:
    """The suite a test file belongs to: ``testdata`` (StableHLO's generated files),
    ``interpret`` (the hand-written suite) or ``mlir`` (any other module: its argument-less
    functions run as tests). The program itself must be StableHLO text
    (:func:`hlopipe.io.detect_format`); anything else raises :class:`LoadError`."""
    fmt = program_format(text.encode())
    if fmt != "stablehlo-text":
        raise LoadError(f"a conformance test file is StableHLO text; this one is {fmt}")
    if _SPLIT.search(text) or re.search(
        r"^\s*(?:%\S+\s*=\s*)?(?:check|interpreter)\.\w+\s", text, re.M
    ):
        return "interpret"
    if '"interpreter.' in text or '"check.' in text:  # the dialects' generic form
        return "interpret"
    if "custom_call @check." in text:
        return "testdata"
    return "mlir"


def read_test_file(path: str | os.PathLike[str]) -> str:
    """A test file's text: StableHLO text as it is; MLIR bytecode (a portable artifact of any
    version jaxlib reads, or StableHLO bytecode) and VHLO text as the StableHLO text they
    hold.

    Raises:
      OSError, UnicodeDecodeError: the file cannot be read.
      HlopipeError: bytecode that does not load.
    """
    data = Path(path).read_bytes()
    if data.startswith(MLIR_BYTECODE_MAGIC):
        fmt = "mlir-bytecode"
    elif re.search(rb"\bvhlo\.func_v\d", data):  # VHLO text
        fmt = "stablehlo-text"
    else:
        return data.decode()
    from hlopipe.io import load_bytes

    prog = load_bytes(data, name=str(path), format=fmt)
    with prog.context:
        return str(prog.module)


def collect_files(paths: Sequence[str | os.PathLike[str]], k: str | None = None) -> list[Path]:
    """The ``.mlir`` / ``.mlirbc`` files of ``paths`` (files as given, folders searched
    recursively), sorted within each folder, filtered to names containing ``k``.

    Raises:
      HlopipeError: a path that does not exist, or a folder without ``.mlir`` files.
    """
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.mlir*") if p.suffix in (".mlir", ".mlirbc"))
            if not found:
                raise HlopipeError(f"{path}: no .mlir files in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise HlopipeError(f"{path}: no such file or folder")
    if k:
        out = [p for p in out if k in str(p)]
    return out


def split_modules(text: str) -> list[tuple[int, str]]:
    """The modules of a file split at ``// -----``: (the line its text starts on, text) each;
    lines before a chunk are kept blank so MLIR's line numbers stay those of the file."""
    out: list[tuple[int, str]] = []
    line = 1
    for chunk in _SPLIT.split(text):
        if chunk.strip() and re.search(r"\bfunc\.func\b|\bmodule\b", chunk):
            first = line + chunk[: len(chunk) - len(chunk.lstrip())].count("\n")
            out.append((first, "\n" * (line - 1) + chunk))
        line += chunk.count("\n")
    return out


_PRETTY_FUNC = re.compile(r"func\.func\s+(?:public\s+|private\s+)?@([\w$.-]+)\s*\(\s*\)")
# MLIR's generic form: "func.func"() <{function_type = () -> (), sym_name = "name"}> ({...
_GENERIC_FUNC = re.compile(r'"func\.func"\s*\(\s*\)\s*<?\{(?P<attrs>[^{}]*)\}')


def any_func(text: str) -> str | None:
    """The name of some argument-less function of the module text (an entry to load it by),
    written in the custom or the generic form."""
    m = _PRETTY_FUNC.search(text)
    if m:
        return m.group(1)
    for g in _GENERIC_FUNC.finditer(text):
        attrs = g.group("attrs")
        name = re.search(r'sym_name\s*=\s*"([^"]+)"', attrs)
        if name and re.search(r"function_type\s*=\s*\(\s*\)\s*->", attrs):
            return name.group(1)
    return None


def referenced(name: str, text: str) -> bool:
    """Whether the module text uses ``@name`` anywhere besides its definition (a generic-form
    definition names it as ``sym_name = "name"``, without the ``@``)."""
    uses = len(re.findall(rf"@{re.escape(name)}(?![\w$.-])", text))
    defined = re.search(rf"func\.func\s+(?:public\s+|private\s+)?@{re.escape(name)}\s*\(", text)
    return uses > (1 if defined else 0)


def to_generic(text: str) -> str:
    """Rewrite the custom syntax of ``check.*`` and ``interpreter.print/probe`` ops into
    MLIR's generic form (jaxlib registers neither dialect), keeping line numbers.

    ``check.expect_eq_const %x, dense<1> : tensor<2xi32>`` becomes
    ``"check.expect_eq_const"(%x) {value = dense<1> : tensor<2xi32>} : (tensor<2xi32>) -> ()``.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _PRETTY.match(_strip_comment(line)):
            out.append(line)
            i += 1
            continue
        # an op may span lines: while its brackets are open, after a trailing comma or
        # colon, and onto lines that start with what only follows its operands
        stmt, j = _strip_comment(line), i
        while j + 1 < len(lines) and _continues(stmt, lines[j + 1]):
            j += 1
            stmt += " " + _strip_comment(lines[j]).strip()
        m = _PRETTY.match(stmt)
        assert m is not None
        indent, results, dialect, name, rest = m.groups()
        try:
            generic = _generic(results, f"{dialect}.{name}", rest.strip())
        except ValueError as e:
            raise LoadError(f"line {i + 1}: cannot read {dialect}.{name}: {e}") from None
        out.append(indent + generic)
        out.extend("" for _ in range(j - i))
        i = j + 1
    return "\n".join(out)


_GOES_ON = re.compile(r"(?:[:,{]|dense<|dense_resource<|array<|sparse<|[A-Za-z_]\w*\s*=)")


def _continues(stmt: str, following: str) -> bool:
    """Whether the custom-syntax op in ``stmt`` goes on on the ``following`` line: a bracket
    is left open, ``stmt`` ends with a comma or colon, or the line starts with what only
    follows an operand (a type after ``:``, a constant, an attribute dictionary, a
    ``key = value``). A line that starts a new op (``%x = ...``, ``"dialect.op"(...)``,
    ``func.return``) does not."""
    if _depth(stmt) > 0 or stmt.endswith((",", ":")):
        return True
    return bool(_GOES_ON.match(_strip_comment(following).strip()))


def _strip_comment(line: str) -> str:
    in_str = False
    for k, ch in enumerate(line):
        if ch == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", k):
            return line[:k].rstrip()
    return line.rstrip()


def _depths(s: str, k: int = 0) -> Iterator[tuple[int, int]]:
    """(index, bracket depth after it) for each character of ``s`` from ``k``; brackets in
    string literals do not count."""
    depth, in_str = 0, False
    for i in range(k, len(s)):
        ch = s[i]
        if ch == '"':
            in_str = not in_str
        elif not in_str and ch in "<([{":
            depth += 1
        elif not in_str and ch in ">)]}":
            depth -= 1
        yield i, depth


def _depth(s: str) -> int:
    """How many brackets ``s`` leaves open."""
    return next(reversed(list(_depths(s))), (0, 0))[1]


def _take_balanced(s: str, k: int) -> int:
    """Index just past the bracketed group that opens at or after ``s[k]``'s word."""
    opened = False
    for i, depth in _depths(s, k):
        opened = opened or depth > 0
        if opened and depth == 0:
            return i + 1
    raise ValueError(f"unbalanced brackets in {s!r}")


def _take_type(s: str) -> tuple[str, str]:
    """A type at the start of ``s`` (``tensor<...>``, ``!stablehlo.token``, ``f32``); returns
    (type, rest)."""
    s = s.lstrip()
    m = re.match(r"[!\w.]+", s)
    if not m:
        raise ValueError(f"expected a type at {s[:40]!r}")
    k = m.end()
    if k < len(s) and s[k] == "<":
        k = _take_balanced(s, k)
    return s[:k], s[k:]


_KEY_VALUE = re.compile(
    r"\s*,?\s*([A-Za-z_]\w*)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[-+\w.]+)(\s*:\s*[if]\d+)?"
)
_INT_ATTRS = {"max_ulp_difference", "min_ulp_difference", "iter", "iteration"}


def _generic(results: str | None, name: str, rest: str) -> str:
    """One op of the custom syntax (``rest``: what follows its name) in generic form."""
    operands, s = _take_operands(rest)
    attrs, vtype, s = _take_constant(s)
    more, s = _take_key_values(s)
    attrs += more
    types, more = _take_types_and_attr_dicts(s)
    attrs += more
    if not types:
        types = [vtype] if vtype else []
    if len(types) == 1 and len(operands) > 1:
        types = types * len(operands)
    if len(types) != len(operands):
        raise ValueError(f"{len(operands)} operands but types {types}")
    results_types = ""
    if name in ("interpreter.probe", "interpreter.print"):
        results_types = types[0]
        if not results:
            raise ValueError("the op's result is not named")
    attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
    lhs = f"{results} = " if results else ""
    return (
        f'{lhs}"{name}"({", ".join(operands)}){attr_text} : '
        f"({', '.join(types)}) -> ({results_types})"
    )


def _take_operands(s: str) -> tuple[list[str], str]:
    operands = []
    while m := re.match(r"\s*(%[\w$.-]+(?:#\d+)?)\s*,?", s):
        operands.append(m.group(1))
        s = s[m.end() :]
    return operands, s.strip()


def _take_constant(s: str) -> tuple[list[str], str, str]:
    """A leading ``dense<...> : type`` becomes the ``value`` attribute."""
    if not s.startswith(("dense<", "dense_resource<", "array<", "sparse<")):
        return [], "", s
    k = _take_balanced(s, 0)
    value = s[:k]
    s = s[k:].lstrip()
    if not s.startswith(":"):
        raise ValueError("a constant without its type")
    vtype, s = _take_type(s[1:])
    return [f"value = {value} : {vtype}"], vtype, s.lstrip().removeprefix(",").lstrip()


def _take_key_values(s: str) -> tuple[list[str], str]:
    """The ``key = value`` pairs of the custom syntax, typed as MLIR attributes."""
    attrs = []
    pair = re.compile(
        r"\s*,?\s*([A-Za-z_]\w*)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[-+\w.]+)(\s*:\s*[if]\d+)?"
    )
    while m := pair.match(s):
        key, val, typ = m.group(1), m.group(2), m.group(3)
        key = "iteration" if key == "iter" else key
        if typ:
            attrs.append(f"{key} = {val}{typ}")
        elif val.startswith('"'):
            attrs.append(f"{key} = {val}")
        elif key in _INT_ATTRS:
            attrs.append(f"{key} = {val} : i64")
        else:
            attrs.append(f"{key} = {_mlir_float(val)} : f64")
        s = s[m.end() :]
    return attrs, s.strip().removeprefix(",").strip()


def _mlir_float(text: str) -> str:
    """A float literal as MLIR reads it: with a decimal point (MLIR reads ``1e-06`` as an
    integer followed by garbage)."""
    out = repr(float(text))
    if "." in out or not out[-1].isdigit():  # inf, nan
        return out
    mantissa, e, exponent = out.partition("e")
    return f"{mantissa}.0{e}{exponent}"


def _take_types_and_attr_dicts(s: str) -> tuple[list[str], list[str]]:
    """The operand types, and an attr-dict, possibly after the colon (expect_close's place)."""
    types: list[str] = []
    attrs: list[str] = []
    while s:
        if s.startswith("{"):
            k = _take_balanced(s, 0)
            inner = s[1 : k - 1].strip()
            if inner:
                attrs.append(inner)
            s = s[k:].strip()
        elif s.startswith((":", ",")):
            s = s[1:].strip()
        else:
            t, s = _take_type(s)
            types.append(t)
            s = s.strip()
    return types, attrs
