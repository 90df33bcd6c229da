"""The stage compiler: cut a program into pipeline stages and differentiate each stage.

Public API:

* :func:`split` — a function or loaded ``Program`` → :class:`StagedProgram` (at
  ``stage_boundary`` markers, or at cost-balanced cut points with ``num_stages``);
  :func:`split_jaxpr` does the same for an already traced ClosedJaxpr; :class:`Cuts` is
  their keywords (the TypedDict mypy checks a call against).
* :class:`StagedProgram`, :class:`Stage`, :class:`Receive`, :class:`Send`,
  :class:`StageCost`, :class:`OutputSource` (:class:`SourceKind`) — the result and its parts.
* :class:`StageAutodiff` — per-stage ``forward`` / ``backward`` / ``backward_input`` /
  ``backward_weight`` (from :meth:`Stage.forward_backward`).
* :class:`CostModel`, :func:`partition`, :class:`Partition`, :func:`find_repeated_run` —
  the cost model and the exact partitioner.
* :func:`shard_stage`, :class:`ShardedStage` — consistent sharding of a stage's forward and
  backward ("merge, then split"); :func:`merge` joins a forward and backward jaxpr into one;
  :func:`compile_merged` compiles the merged program once, a :class:`MergedCompile` of the
  shardings it chose (what the runtime pins on each stage's F / B / I / W / FB; its
  ``consistent()`` compiles forward and backward apart, pinned); :func:`arg_partition_specs`
  reads a loaded program's argument sharding annotations as ``PartitionSpec``s.
* :func:`merge_files` / :func:`split_merged` — the same at the file level: a forward and a
  backward module (paths, text or ``Program``) merged into one module, and a merged module cut
  back into forward and backward with the merged compile's shardings pinned
  (:class:`MergedModule`, :class:`SplitModules`, :class:`MergeLayout`).
* :func:`count_layers` — the repeated layers ``split(stage_layers=...)`` cuts between.
* :func:`describe_loops` — the program's top-level loops: layer loops (a ``scan`` over
  parameters stacked ``[L, ...]``, cut by ranges of iterations when splitting) and, with the
  reason, loops left whole.
* :func:`format_manifest` — the stage table of an exported ``manifest.json``.
* :func:`split_stateful` / :func:`split_stacked` / :func:`prefer_stacked` — a program
  carrying state (a decode step) split with each piece of state on one stage (a cache stacked
  over the layers sliced along its layer axis, told by data flow); :func:`length_axes` — the
  axis of each state argument the position indexes (the cache length); :func:`row_axes`
  (:class:`RowAxes`) — the axis of each output an argument's rows land on (a prefill's
  prompt rows in its cache: one sequence's row written alone); :func:`split_prefill` —
  a prefill cut so that each cache is made on the stage its decode step keeps it on;
  :func:`sink_constants` — a program re-traced with values made from constants alone made where
  they are read.
* :data:`DEVICES`, :class:`Device`, :func:`device` — named devices (a roofline and a memory
  size); :func:`memory_report` (:class:`MemoryReport`, :class:`StageMemory`) — each stage's
  training memory on one under a schedule; :func:`memory_cap` — a ``memory_cap`` from one.
"""

from hlopipe.stages._autodiff import StageAutodiff, recompute_policy
from hlopipe.stages._cost import CostModel, eqn_cost, jaxpr_cost
from hlopipe.stages._devices import DEVICES, Device, device
from hlopipe.stages._export import format_manifest
from hlopipe.stages._files import (
    MergedModule,
    MergeLayout,
    SplitModules,
    infer_layout,
    merge_files,
    split_merged,
)
from hlopipe.stages._loops import describe_loops
from hlopipe.stages._memory import (
    MemoryReport,
    Optimizer,
    StageMemory,
    memory_cap,
    memory_report,
)
from hlopipe.stages._partition import Partition, RepeatedRun, find_repeated_run, partition
from hlopipe.stages._prefill import sink_constants, split_prefill
from hlopipe.stages._rows import RowAxes, row_axes
from hlopipe.stages._sharding import (
    MergedCompile,
    ShardedStage,
    arg_partition_specs,
    compile_merged,
    merge,
    shard_stage,
)
from hlopipe.stages._split import Cuts, count_layers, split, split_jaxpr
from hlopipe.stages._stacked import StackedSplit, prefer_stacked, retrace_outputs, split_stacked
from hlopipe.stages._staged import (
    OutputSource,
    Receive,
    Send,
    SourceKind,
    Stage,
    StageCost,
    StagedProgram,
)
from hlopipe.stages._state import (
    StateCrossesStages,
    StatefulSplit,
    length_axes,
    split_stateful,
    state_sends,
)

__all__ = [
    "DEVICES",
    "CostModel",
    "Device",
    "MemoryReport",
    "Optimizer",
    "StageMemory",
    "device",
    "memory_cap",
    "memory_report",
    "Cuts",
    "count_layers",
    "MergeLayout",
    "MergedCompile",
    "MergedModule",
    "OutputSource",
    "Partition",
    "Receive",
    "RepeatedRun",
    "RowAxes",
    "Send",
    "ShardedStage",
    "SourceKind",
    "SplitModules",
    "Stage",
    "StageAutodiff",
    "recompute_policy",
    "StackedSplit",
    "StageCost",
    "StagedProgram",
    "StateCrossesStages",
    "StatefulSplit",
    "arg_partition_specs",
    "compile_merged",
    "describe_loops",
    "eqn_cost",
    "find_repeated_run",
    "format_manifest",
    "infer_layout",
    "jaxpr_cost",
    "length_axes",
    "row_axes",
    "merge",
    "merge_files",
    "partition",
    "shard_stage",
    "sink_constants",
    "split",
    "split_jaxpr",
    "split_merged",
    "split_prefill",
    "split_stacked",
    "prefer_stacked",
    "split_stateful",
    "state_sends",
    "retrace_outputs",
]
