"""The planner: a training run's layout (pipeline, tensor, data and context parallel degrees,
ZeRO, recompute, schedule, microbatches) predicted from the program alone, and the plan file
that says it (``hlopipe plan``).

Public API:

* :func:`profile_program` (:class:`Profile`) — what a loss costs, read from the program: per
  part (the first stage's extra work, one repeated layer, the last stage's), its matmuls, fused
  elementwise bytes, the residuals its backward reads, its parameters and the tensor-parallel
  column/row pairs found by data flow.
* :func:`estimate` (:class:`Estimate`, :class:`ClusterSpec`) — one layout's step time and
  memory per device; :func:`cluster_spec` makes a cluster from a device name;
  :data:`EFFICIENCY` (:class:`Efficiency`, :func:`efficiency`) — the measured fractions of
  each device's datasheet rates the model runs at, each cited.
* :func:`search`, :func:`layouts`, :class:`Fixed` — the plan space and the ranked estimates;
  :func:`plan_file` — the best as a :class:`hlopipe.planfile.PlanFile`.
* The closed forms: :func:`bytes_per_param`, :func:`ring_all_reduce_bytes`,
  :func:`in_flight`, :func:`pipeline_time`, :func:`bubble_fraction`,
  :func:`grad_accumulation_bytes`; :func:`data_parallel_link` (a data-parallel group's bus
  bandwidth) and :func:`matmul_time` (a matmul's roofline) of the model.
* Every schedule the runtime trains with (:data:`SCHEDULES`), priced by those closed forms or
  by the runtime's own generator and simulator: :func:`schedule_pipeline_time`,
  :func:`schedule_in_flight`, :func:`schedule_stage_ranks`.

It imports the stage compiler (to cut and differentiate the program) and never the runtime:
a plan is made without devices.
"""

from hlopipe.planner._formulas import (
    bubble_fraction,
    bytes_per_param,
    grad_accumulation_bytes,
    in_flight,
    pipeline_time,
    ring_all_reduce_bytes,
    ring_gather_bytes,
    split_bytes_per_param,
)
from hlopipe.planner._model import (
    EFFICIENCY,
    ClusterSpec,
    Efficiency,
    Estimate,
    data_parallel_link,
    efficiency,
    estimate,
    fit_stage_layers,
    matmul_time,
    model_flops,
)
from hlopipe.planner._model import (
    part_activations as activation_bytes,
)
from hlopipe.planner._profile import (
    Matmul,
    MatmulRole,
    Profile,
    profile_program,
    profile_staged,
)
from hlopipe.planner._schedules import in_flight as schedule_in_flight
from hlopipe.planner._schedules import pipeline_time as schedule_pipeline_time
from hlopipe.planner._schedules import stage_ranks as schedule_stage_ranks
from hlopipe.planner._search import (
    SCHEDULES,
    Fixed,
    cluster_spec,
    explain,
    layouts,
    plan_file,
    search,
)

__all__ = [
    "SCHEDULES",
    "EFFICIENCY",
    "Efficiency",
    "activation_bytes",
    "efficiency",
    "ClusterSpec",
    "Estimate",
    "Fixed",
    "Matmul",
    "MatmulRole",
    "Profile",
    "bubble_fraction",
    "bytes_per_param",
    "data_parallel_link",
    "grad_accumulation_bytes",
    "matmul_time",
    "cluster_spec",
    "estimate",
    "explain",
    "fit_stage_layers",
    "in_flight",
    "layouts",
    "model_flops",
    "pipeline_time",
    "plan_file",
    "profile_program",
    "profile_staged",
    "ring_all_reduce_bytes",
    "ring_gather_bytes",
    "schedule_in_flight",
    "schedule_pipeline_time",
    "schedule_stage_ranks",
    "search",
    "split_bytes_per_param",
]
