"""The serving engine across the processes of a ``jax.distributed`` job (``hlopipe launch``).

Process 0 serves HTTP and decides: which requests take which rows, their prompts, their
sampling, when a sequence stops. Every process holds some stages, and every decode step is a
collective program over all of them, so every process must issue the same session calls in
the same order. Process 0's runner (``_runner.py``) sends the calls of each plan it is about to
make (an :class:`Op` each: a group's session started, fed, given its sampling, prefilled, its
rows moved, its step issued, its tokens read, its log-probabilities read) through the
coordination service's key-value store before making them, a plan's calls in one key: one broadcast
(:meth:`Leader.queue` each, then :meth:`Leader.flush`); the end of serving on its own
(:meth:`Leader.send`). Every other process runs an engine of its own without HTTP
(:meth:`Engine.follow`) whose runner reads the calls in order and makes them. A turn issues
every group's step before it reads any (so the groups overlap on the stages), and a follower
does the same: it issues on :attr:`OpKind.STEP` and reads on :attr:`OpKind.READ`, in process
0's order. The tokens a step makes, and its log-probabilities where read, reach every process
through the generator itself (``Issued.read_all`` and ``Issued.logprobs`` return them
everywhere), so a follower needs nothing else.

Waits are bounded by the runtime's heartbeat: a follower waiting for the next call checks its
peers every second (:func:`hlopipe.runtime.distributed.kv_get`), so a process 0 that died is
named instead of waited for; process 0's step, a collective, fails naming a dead follower.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from hlopipe.runtime import distributed

_PREFIX = "hlopipe/serve/op/"
_TIMES = "hlopipe/serve/stage-times/"  # each process's stage step times (nan: not its stage)
# keys older than this many broadcasts are deleted: every read is a collective over every
# process and returns the tokens to each, so a follower is never more than a turn (one
# broadcast) behind
_KEEP = 4096


class OpKind(StrEnum):
    """A session call of the engine, as process 0 sends it to the others."""

    START = "start"  # a slot's new session: prompts [1, b, L] (the prefill) or tokens [1, b]
    FEED = "feed"  # tokens [1, b] (and positions [1, b], a position per sequence)
    SAMPLING = "sampling"  # the four Sampling fields, [1, b] each
    STEP = "step"  # one decode step of the slot's session issued (``Session.issue``)
    READ = "read"  # the issued steps of groups [n] read at once; their tokens reach every process
    LOGPROBS = "logprobs"  # the slot's step read last: its log-probabilities, everywhere
    PREFILL = "prefill"  # prompts [n, L] into rows [n], their lengths [n] (prefill_rows)
    COUNTS = "counts"  # rows [n], their prompts [n, L] (-1 after the end): penalties' counts set
    COUNT = "count"  # rows [b] (bool): the tokens the slot's last step drew, counted
    COUNT_FED = "count-fed"  # rows [b] (bool): the tokens last fed to the slot, counted
    MOVE = "move"  # rows src [m] moved to rows dst [m], all they hold (``Session.move_rows``)
    STOP = "stop"  # the engine drained and ended: every process stops
    FAIL = "fail"  # process 0's engine failed (``message``): every process stops with it


@dataclass(frozen=True)
class Op:
    """One call: its kind, the slot whose session it is on, its arrays (see :class:`OpKind`),
    and for :attr:`OpKind.FAIL` why."""

    kind: OpKind
    slot: int = 0
    values: tuple[np.ndarray, ...] = ()
    message: str = ""

    def encode(self) -> str:
        arrays = [[str(v.dtype), list(v.shape), v.ravel().tolist()] for v in self.values]
        return json.dumps({"kind": self.kind.value, "slot": self.slot, "values": arrays,
                           "message": self.message})  # fmt: skip

    @classmethod
    def decode(cls, text: str) -> Op:
        d = json.loads(text)
        values = tuple(np.asarray(flat, dtype).reshape(shape) for dtype, shape, flat in d["values"])
        return cls(OpKind(d["kind"]), int(d["slot"]), values, str(d["message"]))


class Leader:
    """Process 0's end: :meth:`queue` holds the next calls, :meth:`flush` publishes those held
    in one key (a broadcast), :meth:`send` both."""

    def __init__(self) -> None:
        self.sent = 0  # broadcasts
        self._held: list[Op] = []

    def gather_times(self, mine: list[float], timeout: float = 600.0) -> list[float]:
        """Each stage's step time (``Session.profile``) from the process that holds it:
        ``mine`` (``nan`` where another process holds the stage) completed by the others'."""
        times = list(mine)
        for q in range(1, distributed.process_count()):
            theirs = json.loads(distributed.kv_get(f"{_TIMES}{q}", timeout, who=q))
            times = [b if math.isnan(a) else a for a, b in zip(times, theirs, strict=True)]
        return times

    def queue(self, op: Op) -> None:
        """Hold ``op`` for the next broadcast."""
        self._held.append(op)

    def flush(self) -> None:
        """Publish the calls held, in order, in one key (nothing when none is held)."""
        if not self._held:
            return
        text = json.dumps([op.encode() for op in self._held])
        self._held = []
        distributed.kv_set(f"{_PREFIX}{self.sent}", text)
        if self.sent >= _KEEP:
            distributed.kv_delete(f"{_PREFIX}{self.sent - _KEEP}")
        self.sent += 1

    def send(self, op: Op) -> None:
        """Publish ``op`` now (after any held)."""
        self.queue(op)
        self.flush()


class Follower:
    """Another process's end: :meth:`receive` waits for the next call (as long as process 0
    lives: a lost peer raises :class:`~hlopipe.errors.DistributedError` naming it)."""

    def __init__(self) -> None:
        self.received = 0  # broadcasts
        self._pending: list[Op] = []

    def share_times(self, mine: list[float]) -> None:
        """This process's stage step times, for process 0's ``/metrics``."""
        distributed.kv_set(f"{_TIMES}{distributed.process_index()}", json.dumps(mine))

    def receive(self, timeout: float = math.inf) -> Op | None:
        """The next call, in process 0's order (waiting for its next broadcast when this
        one's calls are used up); ``None`` when no broadcast came within ``timeout`` seconds
        (process 0 idle)."""
        if not self._pending:
            text = distributed.kv_wait(f"{_PREFIX}{self.received}", timeout)
            if text is None:
                return None
            self.received += 1
            self._pending = [Op.decode(item) for item in json.loads(text)]
        return self._pending.pop(0)
