"""What a step reports: :class:`StepMetrics` and the measured :class:`Timeline`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.runtime._executor import StepResult
from hlopipe.schedules import Kind, Schedule, Timeline

_COMPUTE = frozenset({Kind.F, Kind.B, Kind.I, Kind.W})


@dataclass
class StepMetrics:
    """What :meth:`Pipeline.step` reports.

    ``loss``: mean (sum, with ``loss_reduction="sum"``) over the microbatches of the
    program's first output (the step's loss).
    ``grad_norm``: global L2 norm of the parameter gradients (before the update).
    ``step_time``: wall time of the step in seconds (schedule and update).
    ``timeline``: the measured per-action timeline (milliseconds), as :func:`schedules.simulate`
    returns, so ``schedules.plot`` draws it; ``None`` unless the step was profiled
    (``step(..., profile=True)``).
    ``grads``: the gradient pytree, only when the pipeline has no optimizer.
    """

    loss: float
    grad_norm: float
    step_time: float
    timeline: Timeline | None
    grads: Any = None

    def __getitem__(self, key: str) -> Any:  # metrics["loss"] reads as well
        return getattr(self, key)


def measured_timeline(schedule: Schedule, result: StepResult) -> Timeline:
    """A :class:`~hlopipe.schedules.Timeline` from measured events (milliseconds).

    ``costs`` holds the mean measured duration of each kind (``F``, ``B``, ``I``, ``W``,
    ``send``) and of each kind per stage (``F@2``), ready for :func:`schedules.simulate`;
    ``peak_activations`` is the most residual sets each rank actually held at once.
    """
    events = {r: list(evs) for r, evs in result.events.items()}
    makespan = max((e for evs in events.values() for _, _, e in evs), default=0.0)
    busy = {r: sum(e - s for a, s, e in evs if a.kind in _COMPUTE) for r, evs in events.items()}
    idle = {r: makespan - b for r, b in busy.items()}
    sums: dict[str, list[float]] = {}
    for evs in events.values():
        for a, s, e in evs:
            if a.kind in _COMPUTE:
                sums.setdefault(a.kind.value, []).append(e - s)
                sums.setdefault(f"{a.kind.value}@{a.stage}", []).append(e - s)
            elif a.kind in (Kind.SEND_F, Kind.SEND_B):
                sums.setdefault("send", []).append(e - s)
    costs = {k: float(np.mean(v)) for k, v in sums.items()}
    return Timeline(
        schedule, costs, events, makespan, busy, idle, dict(result.peak_live), unit="ms"
    )
