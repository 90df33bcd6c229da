"""Per-stage memory for training on a named device under a schedule.

A stage holds its parameters, their gradients (in the parameters' dtype), the optimizer's
state (Adam: two moments per parameter element, in fp32; no fp32 master copy; SGD none) and,
for every microbatch in flight, its activations for one microbatch. The activations of one
microbatch are counted as every value the stage's equations make plus what it receives (an
upper bound: the backward keeps a subset of them). How many microbatches are in flight on a
stage is read off the schedule's action list (:func:`hlopipe.schedules.peak_in_flight`:
1F1B holds ``min(S - s, M)`` on stage ``s``, GPipe all ``M``; under a zero-bubble schedule a
microbatch is counted until its ``W``, an upper bound: after its ``I`` only what ``W`` reads
is kept). A rank running several stages (an interleaved schedule) holds the sum of theirs.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from hlopipe.errors import Keyword, StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._devices import Device, device

if TYPE_CHECKING:
    from hlopipe.schedules import Schedule
    from hlopipe.stages._staged import StagedProgram


class Optimizer(enum.StrEnum):
    """The optimizer whose state the report counts, and its bytes per parameter element."""

    ADAM = "adam"  # two fp32 moments
    ADAMW = "adamw"  # the same two moments
    SGD = "sgd"  # no state

    @property
    def bytes_per_element(self) -> int:
        return 0 if self is Optimizer.SGD else 8

    def describe(self) -> str:
        return "sgd (no state)" if self is Optimizer.SGD else f"{self.value} (two fp32 moments)"


class StageMemory(NamedTuple):
    """One stage's memory (bytes): ``params``, ``grads``, ``optimizer`` and ``activations``
    (one microbatch's times ``in_flight``); ``total`` their sum. ``rank``: the device it runs
    on (a rank holds several stages under an interleaved schedule)."""

    stage: int
    rank: int
    layers: int | None
    params: int
    grads: int
    optimizer: int
    activations_per_microbatch: int
    in_flight: int

    @property
    def activations(self) -> int:
        return self.activations_per_microbatch * self.in_flight

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer + self.activations


@dataclass(frozen=True)
class MemoryReport:
    """:class:`StageMemory` per stage on ``device`` under ``schedule`` with
    ``num_microbatches`` microbatches; :meth:`fits` and :meth:`render`."""

    device: Device
    schedule: str
    num_microbatches: int
    optimizer: str
    stages: tuple[StageMemory, ...]

    def rank_totals(self) -> dict[int, int]:
        """Bytes per rank: the totals of the stages it holds."""
        out: dict[int, int] = {}
        for m in self.stages:
            out[m.rank] = out.get(m.rank, 0) + m.total
        return out

    def fits(self) -> bool:
        """Whether every rank's stages fit in the device's memory."""
        return all(t <= self.device.memory_bytes for t in self.rank_totals().values())

    def render(self) -> str:
        """The report as a text table."""
        d = self.device
        head = (
            f"memory per stage on {d.name} ({_gib(d.memory_bytes)}), {self.schedule} with "
            f"{self.num_microbatches} microbatches, optimizer {self.optimizer}\n"
        )
        ranks = self.rank_totals()
        cols = ("stage", "rank", "layers", "params", "grads", "optimizer", "act/microbatch",
                "in flight", "activations", "total", "fits")  # fmt: skip
        rows = [
            (str(m.stage), str(m.rank), "-" if m.layers is None else str(m.layers), _gib(m.params),
             _gib(m.grads), _gib(m.optimizer), _gib(m.activations_per_microbatch),
             str(m.in_flight), _gib(m.activations), _gib(m.total),
             "yes" if ranks[m.rank] <= d.memory_bytes else "NO")
            for m in self.stages
        ]  # fmt: skip
        width = [max(len(c), *(len(r[k]) for r in rows)) for k, c in enumerate(cols)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(cols, width, strict=True))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, width, strict=True)) for r in rows]
        return head + "\n".join(lines) + "\n"


def _gib(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def memory_report(
    staged: StagedProgram,
    device_name: str | Device,
    *,
    schedule: str | Schedule = "1f1b",
    num_microbatches: int | None = None,
    param_args: Sequence[int] | None = None,
    optimizer: str | Optimizer = Optimizer.ADAM,
) -> MemoryReport:
    """Each stage's training memory on a named device under a schedule.

    Args:
      staged: the split program (a training loss).
      device_name: a name of :data:`DEVICES` (``"h100"``, ``"a100-40gb"``...) or a
        :class:`Device`.
      schedule: the schedule to assume: a name of :func:`hlopipe.schedules.get` (one stage
        per rank, or the schedule's default stages per rank) or a ``Schedule``.
      num_microbatches: microbatches per step with a schedule's name (default: the number of
        stages).
      param_args: the flat arguments that are parameters (trained: gradients and optimizer
        state); default: the first positional argument's leaves when the arguments are
        trees (a function ``loss(params, batch...)``), else (a loaded program's flat
        arguments) every floating-point argument.
      optimizer: ``"adam"``, ``"adamw"`` (two fp32 moments per element) or ``"sgd"`` (none).

    Returns:
      a :class:`MemoryReport`.

    Raises:
      StageError: an unknown device or optimizer, or a schedule that does not place this many
        stages.
    """
    from hlopipe import schedules

    dev = device(device_name)
    try:
        opt = Optimizer(str(getattr(optimizer, "value", optimizer)).lower())
    except ValueError:
        raise StageError(
            f"optimizer {optimizer!r}: unknown; known: {', '.join(o.value for o in Optimizer)}"
        ) from None
    num_stages = staged.num_stages
    if isinstance(schedule, schedules.Schedule):
        sched = schedule
    else:
        m = num_stages if num_microbatches is None else num_microbatches
        v = schedules.default_virtual_stages(schedule)
        if num_stages % v:
            raise StageError(
                f"schedule {schedule!r} puts {v} stages on each rank, and {num_stages} stages "
                f"do not divide evenly: pick another schedule, or a multiple of {v} for ",
                Keyword("num_stages"),
            )
        sched = schedules.get(schedule, num_stages // v, m)
    if sched.num_stages != num_stages:
        raise StageError(
            f"schedule {sched.name!r} runs {sched.num_stages} stages, the program has {num_stages}"
        )
    in_flight = schedules.peak_in_flight(sched)
    trained = set(_param_args(staged) if param_args is None else param_args)
    rows = []
    for st, held in zip(staged.stages, in_flight, strict=True):
        avals = [staged.in_avals[i] for i in st.params_needed if i in trained]
        params = sum(J.aval_bytes(a) for a in avals)
        elements = sum(int(_size(a.shape)) for a in avals)
        jaxpr = st.jaxpr.jaxpr
        act = sum(J.aval_bytes(v.aval) for e in jaxpr.eqns for v in e.outvars)
        per_mb = act + sum(J.aval_bytes(r.aval) for r in st.receives)
        state = opt.bytes_per_element * elements
        rank = sched.stage_to_rank[st.index]
        rows.append(StageMemory(st.index, rank, st.layers, params, params, state, per_mb, held))
    return MemoryReport(dev, sched.name, sched.num_microbatches,
                        opt.describe(), tuple(rows))  # fmt: skip


def memory_cap(device_name: str | Device) -> int:
    """A ``memory_cap`` for :func:`~hlopipe.stages.split` from a device: its memory."""
    return device(device_name).memory_bytes


def _size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _param_args(staged: StagedProgram) -> list[int]:
    """The flat arguments taken for parameters (see :func:`memory_report`)."""
    argnums = {
        i: num
        for st in staged.stages
        for i, num in zip(st.params_needed, st.param_argnums, strict=True)
    }
    nums = list(argnums.values())
    if len(set(nums)) > 1 and len(set(nums)) < len(nums):  # a tree of parameters first
        return [i for i, num in argnums.items() if num == 0]
    return [i for i, a in enumerate(staged.in_avals) if J.is_inexact(a)]
