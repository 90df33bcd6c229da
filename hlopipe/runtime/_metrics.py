"""What a step reports: :class:`StepMetrics` and the measured :class:`Timeline`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from hlopipe.runtime._executor import StepResult
from hlopipe.schedules import CostKey, CostKind, Kind, Schedule, Timeline

_COMPUTE = frozenset({Kind.F, Kind.B, Kind.I, Kind.W})


class StepMetrics:
    """What :meth:`Pipeline.step` reports.

    ``loss``: mean (sum, with ``loss_reduction="sum"``) over the microbatches of the
    program's first output (the step's loss).
    ``grad_norm``: global L2 norm of the parameter gradients (before the update).
    In one process both are computed on the devices and become Python floats only when read
    (reading one waits for the step): a training loop that does not read them every step
    enqueues the next step while this one runs.
    ``step_time``: host time of the step in seconds (issuing it; with ``profile=True`` the
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
        step_time: float,
        timeline: Timeline | None,
        grads: Any = None,
    ) -> None:
        self._loss = loss
        self._grad_norm = grad_norm
        self.step_time = step_time
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

    def __getitem__(self, key: str) -> Any:  # metrics["loss"] reads as well
        return getattr(self, key)

    def __repr__(self) -> str:
        return (
            f"StepMetrics(loss={self.loss!r}, grad_norm={self.grad_norm!r}, "
            f"step_time={self.step_time!r})"
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
