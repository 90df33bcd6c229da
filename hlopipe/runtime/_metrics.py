"""What a pipeline reports: :class:`Metrics` (:class:`StepMetrics` for a training step,
:class:`GenerateMetrics` for generation) and the measured :class:`Timeline`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from hlopipe.runtime._executor import StepResult
from hlopipe.schedules import CostKey, CostKind, Kind, Schedule, Timeline

_COMPUTE = frozenset({Kind.F, Kind.B, Kind.I, Kind.W})


@dataclass
class Metrics:
    """What a pipeline reports for one call, common to training (:class:`StepMetrics`) and
    generation (:class:`GenerateMetrics`).

    Attributes:
      wall_s: host time of the call in seconds.
    """

    wall_s: float


class BytesSent(NamedTuple):
    """Bytes moved between stages, by what they carry."""

    activations: int  # a stage's output to the next stage
    feedback: int  # the last stage's token back to the first
    state: int  # state (a KV cache) moved between stages: 0 when it stays on its stage


@dataclass
class GenerateMetrics(Metrics):
    """What a generation session reports after its last ``generate`` (or exhausted
    ``stream``), as ``Session.metrics``.

    Attributes:
      wall_s: host time of the call, from its first step issued to its last token read.
      tokens: the tokens the call returned.
      tokens_per_s: ``tokens / wall_s``.
      inter_token_s: ``wall_s`` per step.
      host_per_action_s: host time spent issuing one stage's step of one group.
      bytes_sent: bytes sent since the session started, the prefill's included.
      decode_bytes_sent: bytes sent by this call.
      prefill_dispatch_s: host time to issue the prefill (``None`` without one).
      time_to_first_token_s: from ``start`` until group 0's first token was ready, read once
        every step is issued (``None`` when the session started from tokens, not prompts).
    """

    tokens: int
    tokens_per_s: float
    inter_token_s: float
    host_per_action_s: float
    bytes_sent: BytesSent
    decode_bytes_sent: BytesSent
    prefill_dispatch_s: float | None = None
    time_to_first_token_s: float | None = None


class StepMetrics(Metrics):
    """What :meth:`Pipeline.step` reports.

    ``loss``: mean (sum, with ``loss_reduction="sum"``) over the microbatches of the
    program's first output (the step's loss).
    ``grad_norm``: global L2 norm of the parameter gradients (before the update).
    In one process both are computed on the devices and become Python floats only when read
    (reading one waits for the step): a training loop that does not read them every step
    enqueues the next step while this one runs.
    ``wall_s``: host time of the step in seconds (issuing it; with ``profile=True`` the
    whole step, every action waited for).
    ``timeline``: the measured per-action timeline (milliseconds), as :func:`schedules.simulate`
    returns, so ``schedules.plot`` draws it; ``None`` unless the step was profiled
    (``step(..., profile=True)``).
    ``grads``: the gradient pytree, only when the pipeline has no optimizer.
    """

    def __init__(
        self,
        loss: float | Callable[[], float],
        grad_norm: float | Callable[[], float],
        wall_s: float,
        timeline: Timeline | None,
        grads: Any = None,
    ) -> None:
        super().__init__(wall_s)
        self._loss = loss
        self._grad_norm = grad_norm
        self.timeline = timeline
        self.grads = grads

    @property
    def loss(self) -> float:
        if callable(self._loss):
            self._loss = float(self._loss())
        return self._loss

    @property
    def grad_norm(self) -> float:
        if callable(self._grad_norm):
            self._grad_norm = float(self._grad_norm())
        return self._grad_norm

    def __repr__(self) -> str:
        return (
            f"StepMetrics(loss={self.loss!r}, grad_norm={self.grad_norm!r}, wall_s={self.wall_s!r})"
        )


def measured_timeline(
    schedule: Schedule, result: StepResult, fused: Collection[tuple[int, int]] = ()
) -> Timeline:
    """A :class:`~hlopipe.schedules.Timeline` from measured events (milliseconds); ``fused``:
    the (stage, microbatch) pairs whose F and B ran as one executable (``Timeline.fused``).

    ``costs`` holds the mean measured duration of each kind (``F``, ``B``, ``I``, ``W``,
    ``send``) and of each kind per stage (``F@2``), by :class:`~hlopipe.schedules.CostKey`,
    ready for :func:`schedules.simulate`;
    ``peak_activations`` is the most residual sets each rank actually held at once.
    """
    events = {r: list(evs) for r, evs in result.events.items()}
    makespan = max((e for evs in events.values() for _, _, e in evs), default=0.0)
    busy = {r: sum(e - s for a, s, e in evs if a.kind in _COMPUTE) for r, evs in events.items()}
    idle = {r: makespan - b for r, b in busy.items()}
    sums: dict[CostKey, list[float]] = {}
    for evs in events.values():
        for a, s, e in evs:
            if a.kind in _COMPUTE:
                sums.setdefault(CostKey(a.kind), []).append(e - s)
                sums.setdefault(CostKey(a.kind, a.stage), []).append(e - s)
            elif a.kind in (Kind.SEND_F, Kind.SEND_B):
                sums.setdefault(CostKey(CostKind.SEND), []).append(e - s)
    costs = {k: float(np.mean(v)) for k, v in sums.items()}
    return Timeline(
        schedule,
        costs,
        events,
        makespan,
        busy,
        idle,
        dict(result.peak_live),
        unit="ms",
        fused=frozenset(fused),
    )
