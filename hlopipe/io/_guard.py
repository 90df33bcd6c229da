"""Crash isolation for the loader: one warm child process that reads what could crash the
process reading it.

Fuzzing found three such inputs (``benchmarks/fuzz_load.py``): XLA's HLO text parser can fail
a CHECK on mutated text (SIGABRT in HloComputation), and jaxlib's MLIR bindings abort
(std::terminate, from nanobind) when a string in a module is not UTF-8, in a parser diagnostic
quoting corrupt bytecode, or when a string attribute or attribute name is read. So:

* HLO text is parsed here, in one child process kept for the whole session (it imports only
  XLA's parser, not jax), which sends back the module as a serialized HloModuleProto; the
  caller carries on from the proto, so the text is parsed once and the caller never runs the
  parser (:func:`hlo_text_proto`).
* MLIR bytecode (and the one inside a jax.export artifact, and what XLA's HLO converter
  writes) has its strings checked in Python first (``_bytecode.py``); bytecode whose layout
  that check does not follow, and MLIR text whose strings escape non-ASCII bytes, are loaded
  and walked in the same child first, as rehydration would (:func:`probe_mlir`). That imports
  jax there; the child is retired after it, so what the MLIR bindings did in it never serves
  the next input.

When the child dies on an input, that input is refused and the next one gets a fresh child.
``HLOPIPE_NO_PROBE=1`` skips all of it (trusted input).
"""

from __future__ import annotations

import atexit
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from hlopipe._jax_compat import HLO_TEXT_PARSER
from hlopipe.errors import LoadError

_CHILD_TEMPLATE = """
import os, struct, sys
from {parser_module} import {parser_name} as parse
inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
out.write(b"R"); out.flush()
while True:
    head = inp.read(9)
    if len(head) < 9:
        break
    data = inp.read(struct.unpack("<Q", head[1:])[0])
    try:
        if head[:1] == b"P":
            from hlopipe.io._guard import probe_in_child
            status, payload = b"0", probe_in_child(data)
        else:
            status, payload = b"0", parse(data.decode()).as_serialized_hlo_module_proto()
    except Exception as e:  # the guard child's boundary: any refusal answered, the child lives
        status, payload = b"1", str(e).encode(errors="replace")
    out.write(status + struct.pack("<Q", len(payload)) + payload); out.flush()
"""
_CHILD = _CHILD_TEMPLATE.replace("{parser_module}", HLO_TEXT_PARSER[0]).replace(
    "{parser_name}", HLO_TEXT_PARSER[1]
)


class Crashed(Exception):
    """The child died on the input (``args[0]``: how, and what it said)."""


class TimedOut(Exception):
    pass


class ParseError(Exception):
    """XLA's parser refused the text (``args[0]``: its message)."""


class ChildProcess:
    """A Python child process running ``code``, talked to over its stdin and stdout; its stderr
    goes to a temporary file, read back to say why it died (XLA's ``Check failed``...)."""

    def __init__(self, code: str, env: dict[str, str] | None = None) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (lives with the child)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )

    def log_mark(self) -> int:
        """Where the child's stderr ends now (to read what it says from here on)."""
        return self.log.seek(0, os.SEEK_END)

    def death(self, since: int) -> tuple[str, str]:
        """Wait for the child to end; how it ended, and what it wrote to stderr since ``since``."""
        rc = self.proc.wait()
        self.log.seek(since)
        said = self.log.read().decode(errors="replace")
        return f"signal {_signal_name(-rc)}" if rc < 0 else f"exit status {rc}", said

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return str(n)


def _child_env() -> dict[str, str]:
    """The guard child's environment: a probe there loads with hlopipe (this checkout's, with
    no guard of its own) on the CPU."""
    env = dict(os.environ, HLOPIPE_NO_PROBE="1", JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class _Child(ChildProcess):
    def __init__(self) -> None:
        super().__init__(_CHILD, _child_env())
        self.ready = False

    def request(self, kind: bytes, text: bytes, timeout: float) -> bytes:
        """Send ``text`` to be parsed (kind ``H``) or probed (``P``); the child's answer."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        log_start = self.log_mark()
        try:
            if not self.ready:
                self.ready = self._read(1, timeout) == b"R"
            self.proc.stdin.write(kind + struct.pack("<Q", len(text)) + text)
            self.proc.stdin.flush()
            status = self._read(1, timeout)
            (n,) = struct.unpack("<Q", self._read(8, timeout))
            payload = self._read(n, timeout)
        except (BrokenPipeError, EOFError, OSError):
            how, log = self.death(log_start)
            said = log.split()
            raise Crashed(f"{how}; it said: {' '.join(said[-30:])[-300:]}") from None
        if status == b"1":
            raise ParseError(payload.decode())
        return payload

    def _read(self, n: int, timeout: float) -> bytes:
        assert self.proc.stdout is not None
        out = b""
        while len(out) < n:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                raise TimedOut
            chunk = self.proc.stdout.read1(n - len(out))  # type: ignore[attr-defined]
            if not chunk:
                raise EOFError
            out += chunk
        return out


_lock = threading.Lock()
_child: list[_Child] = []


def parse_hlo_text(text: str, timeout: float) -> bytes:
    """The serialized HloModuleProto of HLO ``text``, parsed by XLA in the guard process.

    Raises:
      ParseError: XLA's parser refused the text (its message).
      Crashed: the parser took the child down (the next call starts a new one).
      TimedOut: no answer in ``timeout`` seconds (the child is stopped).
    """
    with _lock:
        if not _child:
            _child.append(_Child())
        try:
            return _child[0].request(b"H", text.encode(), timeout)
        except (Crashed, TimedOut):
            _child.pop().close()
            raise


def probe(data: bytes, fmt: str, timeout: float) -> None:
    """Load ``data`` as ``fmt`` in the guard process and read every attribute of the module,
    as rehydration does; the child is retired afterwards (see the module's docstring).

    Raises:
      Crashed: that took the child down.
      TimedOut: no answer in ``timeout`` seconds.
    """
    with _lock:
        if not _child:
            _child.append(_Child())
        try:
            _child[0].request(b"P", fmt.encode() + b"\0" + data, timeout)
        finally:
            _child.pop().close()


def warm() -> None:
    """Start the guard process now (it takes a fraction of a second), not at the first load."""
    with _lock:
        if not _child:
            _child.append(_Child())


@atexit.register
def _stop() -> None:
    with _lock:
        while _child:
            _child.pop().close()


# ---- in the child: a probe -------------------------------------------------------------------


def probe_in_child(request: bytes) -> bytes:
    """In the guard child: load the input (``fmt\\0data``) and touch every attribute, as
    rehydration does. What the loader refuses is no crash: the answer is empty either way."""
    from hlopipe.io._load import load_bytes

    fmt, _, data = request.partition(b"\0")
    try:
        prog = load_bytes(data, format=fmt.decode())
        with prog.context:
            _touch(prog.module.operation)
    except Exception:  # in the guard child, whose only question is whether the process
        pass  # survives: a refusal is no crash (the parent loads again and reports it)
    return b""


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
    from jaxlib.mlir import ir

    if isinstance(attr, ir.StringAttr | ir.FlatSymbolRefAttr):
        attr.value  # noqa: B018
    elif isinstance(attr, ir.ArrayAttr):
        for a in attr:
            _touch_attr(name, a)
    elif isinstance(attr, ir.DictAttr):
        for i in range(len(attr)):
            _touch_attr(attr[i].name, attr[i].attr)


# ---- the loader's side ------------------------------------------------------------------------

PROBE_TIMEOUT_S = 120.0
HIGH_ESCAPE = re.compile(rb"\\[89a-fA-F][0-9a-fA-F]")  # MLIR text escaping a non-ASCII byte


def guarded() -> bool:
    """Whether inputs go through the guard (``HLOPIPE_NO_PROBE=1``: trusted, they do not)."""
    return os.environ.get("HLOPIPE_NO_PROBE") != "1"


def hlo_text_proto(text: str, name: str) -> bytes:
    """The serialized HloModuleProto of HLO ``text``, parsed in the guard process; LoadError
    for text XLA refuses, or that takes the parser down or does not finish."""
    from hlopipe.io._xla import error_text

    try:
        return parse_hlo_text(text, PROBE_TIMEOUT_S)
    except ParseError as e:
        raise LoadError(f"{name}: not valid HLO text: {error_text(e)}") from None
    except Crashed as e:
        raise LoadError(
            f"{name}: XLA's HLO parser crashed reading this text ({e}), so it is corrupt"
        ) from None
    except TimedOut:
        raise LoadError(
            f"{name}: XLA's HLO parser did not finish reading this text in "
            f"{PROBE_TIMEOUT_S:.0f} s; the input is likely corrupt"
        ) from None


def probe_mlir(data: bytes, name: str, fmt: str) -> None:
    """LoadError when loading ``data`` as ``fmt`` takes the guard process down (or does not
    finish); nothing when it does not (the caller then loads it itself)."""
    try:
        probe(data, fmt, PROBE_TIMEOUT_S)
    except Crashed as e:
        raise LoadError(
            f"{name}: jaxlib's MLIR parser crashed reading this {fmt} input ({e}), so it is "
            "corrupt (often a string that is not UTF-8)"
        ) from None
    except TimedOut:
        raise LoadError(
            f"{name}: jaxlib's parser did not finish reading this {fmt} input in "
            f"{PROBE_TIMEOUT_S:.0f} s; the input is likely corrupt"
        ) from None


def check_bytecode(data: bytes, name: str, fmt: str, whole: bytes | None = None) -> bytes | None:
    """Refuse bytecode with a string that is not UTF-8; bytecode this check cannot follow is
    probed in the guard process first (``whole``: the input to give it, if not ``data``).
    Returns the string section when it was read (see :func:`_bytecode.check_strings`)."""
    from hlopipe.io import _bytecode

    if not guarded():
        return None
    try:
        return _bytecode.check_strings(data)
    except _bytecode.BadString as e:
        where, raw = e.args
        raise LoadError(
            f"{name}: {where} of this {fmt} input is not UTF-8 ({raw!r}), so it is corrupt"
        ) from None
    except _bytecode.NotUnderstood:
        probe_mlir(whole if whole is not None else data, name, fmt)
        return None
