"""The pipeline runtime: stages placed on device groups, run by any schedule.

Public API:

* :class:`Pipeline` — build from a loss function, a ``StagedProgram`` or a program file;
  ``init(params) -> PipelineState``, ``step(state, batch) -> (state, StepMetrics)``,
  ``infer(state, batch)``, ``timeline()``.
* :class:`PipelineState`, :class:`StepMetrics` — what ``init`` and ``step`` return.
* :class:`Placement`, :func:`place` — ranks onto groups of devices (one ``Mesh`` each).
* :class:`PipelineExecutionError` — a step failed while running (an action raised, or a
  receive timed out: deadlock or dead rank), naming the rank, step and action.
* :func:`measured_timeline` — a ``schedules.Timeline`` from measured per-action times.

One controller process, one thread per rank (see ``_executor.py``); multi-host execution
(issue 7) keeps this structure with one process per host.
"""

from hlopipe.runtime._executor import Mailbox, PipelineExecutionError
from hlopipe.runtime._pipeline import Pipeline, PipelineState, StepMetrics, measured_timeline
from hlopipe.runtime._placement import Placement, place

__all__ = [
    "Mailbox",
    "Pipeline",
    "PipelineExecutionError",
    "PipelineState",
    "Placement",
    "StepMetrics",
    "measured_timeline",
    "place",
]
