"""The stage compiler: cut a program into pipeline stages and differentiate each stage.

Public API:

* :func:`split` — a function or loaded ``Program`` → :class:`StagedProgram` (at
  ``stage_boundary`` markers, or at cost-balanced cut points with ``num_stages``);
  :func:`split_jaxpr` does the same for an already traced ClosedJaxpr.
* :class:`StagedProgram`, :class:`Stage`, :class:`Receive`, :class:`Send`,
  :class:`StageCost`, :class:`OutputSource` — the result and its parts.
* :class:`StageAutodiff` — per-stage ``forward`` / ``backward`` / ``backward_input`` /
  ``backward_weight`` (from :meth:`Stage.forward_backward`).
* :class:`CostModel`, :func:`partition`, :class:`Partition`, :func:`find_repeated_run` —
  the cost model and the exact partitioner.
* :func:`shard_stage`, :class:`ShardedStage` — consistent sharding of a stage's forward and
  backward ("merge, then split"); :func:`merge` joins a forward and backward jaxpr into one.
* :func:`format_manifest` — the stage table of an exported ``manifest.json``.
"""

from hlopipe.stages._autodiff import StageAutodiff
from hlopipe.stages._cost import CostModel, eqn_cost, jaxpr_cost
from hlopipe.stages._export import format_manifest
from hlopipe.stages._partition import Partition, RepeatedRun, find_repeated_run, partition
from hlopipe.stages._sharding import ShardedStage, merge, shard_stage
from hlopipe.stages._split import (
    OutputSource,
    Receive,
    Send,
    Stage,
    StageCost,
    StagedProgram,
    split,
    split_jaxpr,
)

__all__ = [
    "CostModel",
    "OutputSource",
    "Partition",
    "Receive",
    "RepeatedRun",
    "Send",
    "ShardedStage",
    "Stage",
    "StageAutodiff",
    "StageCost",
    "StagedProgram",
    "eqn_cost",
    "find_repeated_run",
    "format_manifest",
    "jaxpr_cost",
    "merge",
    "partition",
    "shard_stage",
    "split",
    "split_jaxpr",
]
