"""The pipeline runtime: stages placed on device groups, run by any schedule.

Public API:

* :class:`Pipeline` — build from a loss function, a ``StagedProgram`` or a program file;
  ``init(params) -> PipelineState``, ``step(state, batch) -> (state, StepMetrics)``
  (``profile=True``: a measured timeline), ``infer(state, batch)``, ``timeline()``.
* :class:`PipelineState`, :class:`StepMetrics` — what ``init`` and ``step`` return;
  :class:`Metrics`, the base :class:`StepMetrics` shares with generation's
  :class:`GenerateMetrics` (bytes sent as :class:`BytesSent`).
* :class:`Placement`, :func:`place` — ranks onto groups of devices (one ``Mesh`` each).
* :class:`PipelineExecutionError` — a step failed while running (an action raised, or a
  receive timed out: deadlock or dead rank), naming the rank, step and action.
* :func:`measured_timeline` — a ``schedules.Timeline`` from measured per-action times.
* :func:`read_checkpoint_extra` — the JSON data saved with a checkpoint (``save(...,
  extra=)``: ``hlopipe train`` keeps its data position there);
  :func:`read_checkpoint_params` — a checkpoint's parameters by path, as host arrays, without
  a pipeline; :func:`latest_checkpoint_step` — the newest complete checkpoint's step.
* :func:`compare_losses` — two runs' losses compared; a non-finite loss never matches.
* :class:`ProcessLayout`, :class:`Links`, :func:`move_group`, :func:`on_every_process`,
  :func:`host_copy`, :func:`param_spec_leaves` — the placement and transfer pieces other
  runners (``hlopipe.generate``) reuse: which process holds each rank, the compiled
  cross-process transfers, one move between two ranks, a rank's value as a host array in every
  process (or in its own processes), and the parameter specs checked against every rank's
  mesh; :class:`ParamRule`, :func:`parse_param_rule`, :func:`specs_from_rules` — partitioning
  rules (``--param-spec PATTERN=SPEC``) over parameter paths, for every front end.

A step is one instruction list per pipeline and mode (``_program.py``, the one builder), run by
one of three interpreters: in one process the asynchronous single controller (``_stream.py``);
a profiled step a thread per rank that waits for and times each instruction (``_executor.py``);
across processes each process's rank threads and a link thread for the collectives
(``_multiprocess.py``). See docs/runtime-performance.md.
"""

from hlopipe.runtime._checkpoint import latest_step as latest_checkpoint_step
from hlopipe.runtime._checkpoint import read_extra as read_checkpoint_extra
from hlopipe.runtime._checkpoint import read_params as read_checkpoint_params
from hlopipe.runtime._comm import Links, host_copy, move_group, on_every_process
from hlopipe.runtime._executor import Mailbox, PipelineExecutionError
from hlopipe.runtime._finite import compare_losses
from hlopipe.runtime._metrics import BytesSent, GenerateMetrics, Metrics
from hlopipe.runtime._pipeline import (
    Pipeline,
    PipelineState,
    StepMetrics,
    check_plan_devices,
    measured_timeline,
)
from hlopipe.runtime._placement import Placement, place
from hlopipe.runtime._placement import spec_leaves as param_spec_leaves
from hlopipe.runtime._plan import LossReduction, ScheduleChoice
from hlopipe.runtime._process_layout import ProcessLayout
from hlopipe.runtime._rules import ParamRule, parse_param_rule, specs_from_rules

__all__ = [
    "BytesSent",
    "GenerateMetrics",
    "Links",
    "LossReduction",
    "Mailbox",
    "ParamRule",
    "Metrics",
    "Pipeline",
    "PipelineExecutionError",
    "PipelineState",
    "Placement",
    "ProcessLayout",
    "ScheduleChoice",
    "StepMetrics",
    "check_plan_devices",
    "compare_losses",
    "latest_checkpoint_step",
    "host_copy",
    "measured_timeline",
    "move_group",
    "on_every_process",
    "param_spec_leaves",
    "parse_param_rule",
    "place",
    "read_checkpoint_extra",
    "read_checkpoint_params",
    "specs_from_rules",
]
