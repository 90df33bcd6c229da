"""A warm child process that runs XLA's HLO text parser for the loader.

XLA's HLO text parser can fail a CHECK on mutated text (SIGABRT in HloComputation, found by
fuzzing), which would end the process that called it. So HLO text is parsed here, in one
child process kept for the whole session (it imports only XLA's parser, not jax), which sends back
the module as a serialized HloModuleProto; the caller carries on from the proto, so the text
is parsed once and the caller never runs the parser. When the child dies on an input, that
input is refused and the next one gets a fresh child.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from typing import IO

from hlopipe._jax_compat import HLO_TEXT_PARSER

_CHILD_TEMPLATE = """
import os, struct, sys
from {parser_module} import {parser_name} as parse
inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
out.write(b"R"); out.flush()
while True:
    head = inp.read(8)
    if len(head) < 8:
        break
    text = inp.read(struct.unpack("<Q", head)[0]).decode()
    try:
        status, payload = b"0", parse(text).as_serialized_hlo_module_proto()
    except Exception as e:
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


class _Child(ChildProcess):
    def __init__(self) -> None:
        super().__init__(_CHILD, dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        self.ready = False

    def parse(self, text: bytes, timeout: float) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        log_start = self.log_mark()
        try:
            if not self.ready:
                self.ready = self._read(1, timeout) == b"R"
            self.proc.stdin.write(struct.pack("<Q", len(text)) + text)
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
            return _child[0].parse(text.encode(), timeout)
        except (Crashed, TimedOut):
            _child.pop().close()
            raise


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
