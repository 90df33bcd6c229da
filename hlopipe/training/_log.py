"""What a training run leaves to read back: ``metrics.jsonl`` (a JSON object per step, appended
on resume) and TensorBoard event files (scalars, written in TensorBoard's record format by
hand: a few protobuf fields and CRC-32C framing, so no TensorFlow or tensorboard package is
needed to write them)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass

from hlopipe.errors import LoadError

METRICS_FILE = "metrics.jsonl"


@dataclass(frozen=True)
class StepRecord:
    """One training step as ``metrics.jsonl`` holds it (a JSON object a line: these fields by
    name, those that are ``None`` left out) and TensorBoard shows it (each number a scalar).

    Attributes:
      step: the global step, from 1.
      loss: the step's loss.
      grad_norm: the global L2 norm of the gradients.
      step_time_s: host time of the step, in seconds.
      tokens_per_s / samples_per_s: the step's throughput (tokens for token data, else
        samples); the other is ``None``.
      bubble: the schedule's idle fraction, simulated with the costs the last profiled step
        measured (``None`` before one was).
      eval_loss: the mean evaluation loss, on evaluation steps.
    """

    step: int
    loss: float
    grad_norm: float
    step_time_s: float
    tokens_per_s: float | None = None
    samples_per_s: float | None = None
    bubble: float | None = None
    eval_loss: float | None = None

    def to_json(self) -> str:
        """The record's line of ``metrics.jsonl`` (no newline)."""
        return json.dumps({k: v for k, v in dataclasses.asdict(self).items() if v is not None})

    @classmethod
    def from_json(cls, line: str, where: str = METRICS_FILE) -> StepRecord:
        """The record of a ``metrics.jsonl`` line.

        Raises:
          LoadError: the line is not a JSON object of these fields (``where`` names it).
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise LoadError(f"{where}: not a JSON line ({e.msg})") from e
        if not isinstance(obj, dict) or not {"step", "loss"} <= obj.keys() <= fields:
            raise LoadError(
                f"{where}: not a step record of hlopipe's metrics.jsonl (fields "
                f"{', '.join(sorted(fields))}; step and loss required): {line.strip()[:80]}"
            )
        return cls(**obj)

    def scalars(self) -> dict[str, float]:
        """The numbers TensorBoard shows: every field but the step, those given."""
        values = dataclasses.asdict(self)
        del values["step"]
        return {k: float(v) for k, v in values.items() if v is not None}


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, the checksum of TFRecord framing."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the data, the data's masked CRC."""
    n = struct.pack("<Q", len(data))
    return (
        n + struct.pack("<I", _masked(crc32c(n))) + data + struct.pack("<I", _masked(crc32c(data)))
    )


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _event(wall_time: float, step: int | None = None, body: bytes = b"") -> bytes:
    """A ``tensorflow.Event``: wall_time (1, double), step (2, int64), then ``body``."""
    out = _varint(1 << 3 | 1) + struct.pack("<d", wall_time)
    if step is not None:
        out += _varint(2 << 3 | 0) + _varint(step)
    return out + body


def _scalar(tag: str, value: float) -> bytes:
    """``Summary.Value`` {tag (1), simple_value (2, float)} inside ``Summary`` (Event field 5)."""
    v = _field(1, tag.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", value)
    return _field(1, v)


class EventWriter:
    """Scalars into a TensorBoard event file under ``directory`` (``tensorboard --logdir``)."""

    def __init__(self, directory: str) -> None:
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.hlopipe"
        self.path = os.path.join(directory, name)
        self._f = open(self.path, "ab")  # noqa: SIM115 -- held open for the run; close()
        self._f.write(_record(_event(time.time(), body=_field(3, b"brain.Event:2"))))

    def restart(self, step: int) -> None:
        """Mark a resumed run at ``step``: a ``SessionLog`` START event, on which TensorBoard
        drops the earlier files' events after ``step`` (a killed run's steps, run again)."""
        session_log = _varint(1 << 3 | 0) + _varint(1)  # SessionLog {status (1): START (1)}
        self._f.write(_record(_event(time.time(), step, _field(6, session_log))))
        self._f.flush()

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        summary = b"".join(
            _scalar(tag, float(v))
            for tag, v in values.items()
            if v is not None and math.isfinite(v)
        )
        self._f.write(_record(_event(time.time(), step, _field(5, summary))))
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class RunLog:
    """A run's log folder: ``metrics.jsonl`` (appended: a resumed run continues it) and a
    TensorBoard event file. ``write`` takes one step's :class:`StepRecord`.

    Args:
      directory: the folder (made if missing).
      resumed_at: the step a resumed run starts from (its checkpoint's). The records of later
        steps, which a run killed between saves logged and this run trains again, are dropped
        from ``metrics.jsonl``, so that every step is logged once; TensorBoard is told by a
        START event at that step.
    """

    def __init__(self, directory: str, resumed_at: int | None = None) -> None:
        os.makedirs(directory, exist_ok=True)
        self.metrics_path = os.path.join(directory, METRICS_FILE)
        self.dropped = 0  # records of steps after ``resumed_at`` taken out
        if resumed_at is not None and os.path.exists(self.metrics_path):
            self.dropped = _drop_after(self.metrics_path, resumed_at)
        if resumed_at is not None:
            for name in sorted(os.listdir(directory)):
                if name.startswith("events.out.tfevents."):
                    _drop_events_after(os.path.join(directory, name), resumed_at)
        self._metrics = open(self.metrics_path, "a")  # noqa: SIM115 -- closed by close()
        self._events = EventWriter(directory)
        if resumed_at is not None:
            self._events.restart(resumed_at)

    def write(self, record: StepRecord) -> None:
        self._metrics.write(record.to_json() + "\n")
        self._metrics.flush()
        self._events.scalars(record.step, record.scalars())

    def close(self) -> None:
        self._metrics.close()
        self._events.close()


def _records(data: bytes) -> list[bytes]:
    """The records of a TFRecord file's bytes (length, its CRC, the data, its CRC); a torn
    last record (a run killed while writing it) is left out."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if pos + 16 + n > len(data):
            break
        out.append(data[pos + 12 : pos + 12 + n])
        pos += 16 + n
    return out


def _event_step(event: bytes) -> int | None:
    """An ``Event``'s step (field 2), ``None`` when it has none; the other fields skipped by
    their wire type."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        v = shift = 0
        while True:
            b = event[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    while pos < len(event):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
            if number == 2:
                return value
        elif wire == 1:
            pos += 8
        elif wire == 2:
            size = varint()  # read before pos is added to: varint moves pos
            pos += size
        elif wire == 5:
            pos += 4
        else:
            return None
    return None


def _drop_events_after(path: str, step: int) -> None:
    """Rewrite the event file ``path`` without the events of steps after ``step`` (a killed
    run's, trained again by the resumed run), so that TensorBoard shows each step once
    whatever its reload policy (it honours a START event only within one file's run)."""
    with open(path, "rb") as f:
        records = _records(f.read())
    kept = [r for r in records if (_event_step(r) or 0) <= step]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.writelines(_record(r) for r in kept)
    os.replace(tmp, path)


def _drop_after(path: str, step: int) -> int:
    """Rewrite ``path`` without the records of steps after ``step``; how many went."""
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    kept = [line for line in lines if StepRecord.from_json(line, path).step <= step]
    if len(kept) < len(lines):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(kept)
        os.replace(tmp, path)
    return len(lines) - len(kept)


def read_metrics(directory: str) -> list[StepRecord]:
    """The records of ``directory/metrics.jsonl``, in order.

    Raises:
      LoadError: a line is not a step record.
    """
    path = os.path.join(directory, METRICS_FILE)
    with open(path) as f:
        return [StepRecord.from_json(line, path) for line in f if line.strip()]
