"""Training a loss program from a file: which arguments are the batch, the parameters and the
frozen constants (`infer_roles`), their initial values and one batch (`plan_training`), the
stages and devices (`plan_stages`), and the one-device reference runs: on the plan's roles
(`train_one_device`) and on the roles the program's own tree or names give (`train_reference`,
what ``--check`` compares with);
a dataset read batch after batch (`open_dataset`, `Batches`: grain underneath, its position
saved with a checkpoint) and the run's log (`RunLog`: ``metrics.jsonl``, a `StepRecord` a
line, and TensorBoard events; `read_metrics` reads the records back).

``hlopipe train`` is a thin layer over this; from Python::

    plan = training.plan_training(hlopipe.load("loss.hlo"), batch_args="last:2")
    layout = training.plan_stages(plan.program, plan.microbatch)
    pipe = hlopipe.Pipeline(plan.loss, list(plan.params), list(plan.batch),
                            num_microbatches=plan.num_microbatches,
                            num_stages=layout.num_stages, devices=layout.devices)
"""

from hlopipe.training._check import (
    Evidence,
    ProgramRoles,
    ReferenceRun,
    program_roles,
    train_reference,
)
from hlopipe.training._data import load_npz, read_arrays, synthetic
from hlopipe.training._dataset import (
    Batches,
    DataKind,
    Dataset,
    Position,
    eval_batches,
    open_dataset,
)
from hlopipe.training._log import (
    METRICS_FILE,
    EventWriter,
    RunLog,
    StepRecord,
    crc32c,
    read_metrics,
)
from hlopipe.training._plan import StageLayout, TrainingPlan, plan_stages, plan_training
from hlopipe.training._reference import train_one_device
from hlopipe.training._roles import (
    BATCH_ARGS_SYNTAX,
    PARAMETER_ROOTS,
    Argument,
    ArgumentRoles,
    Role,
    infer_roles,
    init_by_role,
    is_parameter_name,
    name_root,
    parse_batch_args,
)

__all__ = [
    "BATCH_ARGS_SYNTAX",
    "METRICS_FILE",
    "EventWriter",
    "RunLog",
    "StepRecord",
    "crc32c",
    "read_metrics",
    "Batches",
    "DataKind",
    "Dataset",
    "Position",
    "eval_batches",
    "open_dataset",
    "PARAMETER_ROOTS",
    "Argument",
    "Evidence",
    "ProgramRoles",
    "ReferenceRun",
    "ArgumentRoles",
    "Role",
    "StageLayout",
    "TrainingPlan",
    "infer_roles",
    "init_by_role",
    "load_npz",
    "is_parameter_name",
    "name_root",
    "parse_batch_args",
    "plan_stages",
    "plan_training",
    "program_roles",
    "read_arrays",
    "synthetic",
    "train_one_device",
    "train_reference",
]
