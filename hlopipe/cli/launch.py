"""`hlopipe launch`: N local processes of one jax.distributed job (over `runtime.launch`)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from hlopipe.cli._common import Command


def _add_launch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nproc", type=int, required=True, help="processes to start")
    p.add_argument(
        "--devices-per-process", type=int, default=1, metavar="K", help="CPU devices each"
    )
    p.add_argument(
        "--heartbeat-timeout", type=int, default=10, metavar="S",
        help="seconds without a heartbeat before a process counts as lost (default 10)",
    )  # fmt: skip
    p.add_argument(
        "--grace", type=float, default=30.0, metavar="S",
        help="after a failure, seconds the others get to stop on their own (default 30)",
    )  # fmt: skip
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...: what each process runs")


def _cmd_launch(args: argparse.Namespace) -> int:
    """start N local processes of one jax.distributed job (CPU, gloo)"""
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.runtime.launch import launch

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise RuntimeConfigError("no command to launch: hlopipe launch --nproc N -- CMD ...")
    if args.nproc < 1 or args.devices_per_process < 1:
        raise RuntimeConfigError("--nproc and --devices-per-process must be at least 1")
    import tempfile

    fd, log_path = tempfile.mkstemp(prefix="hlopipe-launch-", suffix=".log")
    out = _LaunchOutput(os.fdopen(fd, "a", buffering=1), sys.stdout)
    # the coordination service runs in this process: its C++ logs (fd 2) go to the log too
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    try:
        code = launch(
            cmd,
            nproc=args.nproc,
            devices_per_process=args.devices_per_process,
            heartbeat_timeout=args.heartbeat_timeout,
            grace=args.grace,
            out=out,  # type: ignore[arg-type]  # write() and flush() are all it uses
        )
    except BaseException:  # not caught: the log file removed, the error re-raised
        os.unlink(log_path)
        raise
    finally:
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        out.log.close()
    if code == 0:
        os.unlink(log_path)
        return 0
    kept = f"{out.hidden} lines of JAX/XLA logs and C++ stacks kept out; " if out.hidden else ""
    if out.first_error is not None:
        # a process refused the job (a layout that cannot work, a bad argument): say why
        rank, name, msg = out.first_error
        print(f"error: process {rank}: {name}: {msg} ({kept}every process's full output: "
              f"{log_path})", file=sys.stderr)  # fmt: skip
        return 2
    print(
        f"error: the job failed with exit code {code} (the first process to fail; the others "
        f"were stopped); {kept}every process's full output: {log_path}",
        file=sys.stderr,
    )
    return code


class _LaunchOutput:
    """Where `launch` streams the processes' ``[rank i] ...`` lines: all of them into a log
    file; to the terminal all but the C++ side's logs (glog lines such as ``E1130
    12:00:00.1 123 coordination_service.cc:42] ...``, gloo's ``[Gloo] Rank 0 is connected to
    1 peer ranks...``) and stack dumps, which the log keeps."""

    _GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]")
    # gloo's line for each connected pair of a collective's processes (printed to stdout)
    _GLOO = re.compile(r"^\[Gloo\] Rank \d+ is connected to \d+ peer ranks\.")
    _PREFIX = re.compile(r"^\[rank (\d+)\] ?")
    # the last line of a process's traceback when it stopped on one of hlopipe's errors
    _HLOPIPE_ERROR = re.compile(r"^\[rank (\d+)\] hlopipe\.errors\.(\w+): (.*)$")

    def __init__(self, log: Any, terminal: Any) -> None:
        self.log, self.terminal = log, terminal
        # (process, error class, message) of the first process that raised a HlopipeError
        self.first_error: tuple[str, str, str] | None = None
        self.in_stack: set[str] = set()
        self.in_log: set[str] = set()
        self.hidden = 0
        self._partial = ""

    def write(self, text: str) -> int:
        self.log.write(text)
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            m = self._HLOPIPE_ERROR.match(line)
            if m and self.first_error is None and m.group(2) != "DistributedError":
                self.first_error = (m.group(1), m.group(2), m.group(3))
            if self._noise(line):
                self.hidden += 1
            else:
                self.terminal.write(line + "\n")
        return len(text)

    # lines that continue a multi-line C++ log message (task lists, status payloads)
    _CONTINUATION = re.compile(
        r"^(\s.*|[\d, ]*|.*(type\.googleapis\.com/|RPC: /|/job:|Check the task logs|"
        r"stopped sending heartbeats).*)$"
    )

    def _noise(self, line: str) -> bool:
        m = self._PREFIX.match(line)
        rank, body = (m.group(1), line[m.end() :]) if m else ("", line)
        if self._GLOO.match(body):
            return True
        if self._GLOG.match(body):
            self.in_log.add(rank)
            return True
        if rank in self.in_log:
            if self._CONTINUATION.match(body):
                return True
            self.in_log.discard(rank)
        if "*** Begin stack trace ***" in body or "*** Check failure stack trace: ***" in body:
            self.in_stack.add(rank)
            return True
        if rank in self.in_stack:
            if "*** End stack trace ***" in body:
                self.in_stack.discard(rank)
            elif body.strip() and not body.startswith((" ", "\t", "@")):
                self.in_stack.discard(rank)
                return bool(self._GLOG.match(body))
            return True
        return bool(self._GLOG.match(body))

    def flush(self) -> None:
        self.log.flush()
        self.terminal.flush()


COMMAND = Command("launch", _add_launch, _cmd_launch)
