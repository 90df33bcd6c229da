"""``Pipeline``: train and run a staged program on local devices with any schedule.

A thin facade over the parts it is made of: the frozen plan (``_plan.py``), communication
(``_comm.py``), parameters and optimizer (``_params.py``), the executor (``_executor.py``,
``_multiprocess.py``), metrics (``_metrics.py``) and checkpoints (``_checkpoint.py``).
"""

from __future__ import annotations

import copy
import functools
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Never, TypeVar, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from hlopipe import schedules
from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.runtime._comm import Comm, host_value
from hlopipe.runtime._compile import ExecKind, StageExecutables
from hlopipe.runtime._executor import StepResult
from hlopipe.runtime._fast import StepRunner
from hlopipe.runtime._finite import check_step
from hlopipe.runtime._metrics import StepMetrics, measured_timeline
from hlopipe.runtime._multiprocess import cross_process_sends
from hlopipe.runtime._params import Params, PipelineState
from hlopipe.runtime._placement import Placement, split_on_data
from hlopipe.runtime._plan import LossReduction, PipelinePlan, ScheduleChoice, build_plan
from hlopipe.runtime._process_layout import ProcessLayout
from hlopipe.runtime._program import Instr, StepPlan, StepProgram, build_program
from hlopipe.runtime._threads import carrying_context
from hlopipe.schedules import Schedule, Timeline
from hlopipe.stages import SourceKind, StagedProgram

__all__ = ["Pipeline", "PipelineState", "StepMetrics", "measured_timeline"]

T = TypeVar("T")

# F before B and I (they are compiled with F's residual layouts), I before W.
_COMPILE_ORDER = (ExecKind.INFER, ExecKind.F, ExecKind.I, ExecKind.W, ExecKind.B, ExecKind.FB)


class _FromPlan(Generic[T]):
    """A read-only attribute of a :class:`Pipeline` that is its plan's attribute of the same
    name (``pipe.schedule`` is ``pipe.plan.schedule``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, pipe: None, owner: type) -> _FromPlan[T]: ...
    @overload
    def __get__(self, pipe: Pipeline, owner: type) -> T: ...
    def __get__(self, pipe: Pipeline | None, owner: type) -> T | _FromPlan[T]:
        return self if pipe is None else getattr(pipe.plan, self.name)

    def __set__(self, pipe: Pipeline, value: Never) -> None:
        raise AttributeError(f"Pipeline.{self.name} is its plan's, read-only")


def check_plan_devices(layout: Any, devices: Sequence[Any]) -> int:
    """How many devices the plan ``layout`` (a :class:`~hlopipe.planfile.Layout`) occupies.

    Raises:
      RuntimeConfigError: fewer ``devices`` than that, naming both counts; context
        parallelism (``cp`` > 1), which the planner costs and the runtime does not run."""
    if layout.cp != 1:
        raise RuntimeConfigError(
            f"the plan splits the sequence over {layout.cp} devices (cp {layout.cp}): the "
            "runtime does not run context parallelism yet; plan again with --cp 1"
        )
    need = int(layout.devices_needed)
    if len(devices) < need:
        cpu = bool(devices) and devices[0].platform == "cpu"
        raise RuntimeConfigError(
            f"the plan needs {need} devices (pp {layout.pp} x dp {layout.dp} x tp "
            f"{layout.tp} x cp {layout.cp}), {len(devices)} are present: run it where there "
            "are enough, or plan again for these devices",
            *((" (on CPU: ", Keyword("jax_num_cpu_devices", need), ")") if cpu else ()),
        )
    return need


class Pipeline:
    """A program cut into stages, placed on device groups, run by a schedule.

    Args:
      program: a loss function ``fn(params, batch)``, a :class:`~hlopipe.stages.StagedProgram`
        (its flat arguments are the leaves of ``(params, batch)``), or the path of an XLA
        program file (HLO text, StableHLO, ...) whose flat arguments are ``(params leaves...,
        batch leaves...)`` at microbatch size. A program with 64-bit types (int64 labels)
        needs ``jax.config.update("jax_enable_x64", True)`` first (``hlopipe train`` sets it).
      params: the parameter pytree (arrays or ``jax.ShapeDtypeStruct``; only the structure,
        shapes and dtypes are used here — :meth:`init` takes the values).
      batch: an example full batch (pytree); every leaf has the batch on its leading axis.
      num_stages: stages to cut into when the program has no ``stage_boundary`` markers
        (default: ranks that fit on ``devices`` x virtual stages); with markers, omit it.
      schedule: a name from :func:`hlopipe.schedules.get` (``"gpipe"``, ``"1f1b"``,
        ``"interleaved-1f1b"``, ``"interleaved-zb"``, ``"looped-bfs"``, ``"zb-h1"``,
        ``"zb-h2"``, ``"zb-v"``, ``"dualpipev"``, ``"inference"``: the keys of
        ``hlopipe.schedules.GENERATORS``) or a :class:`~hlopipe.schedules.Schedule`;
        ``"auto"``: built with 1F1B, one profiled step, then the schedule
        :func:`hlopipe.schedules.best` finds fastest with the measured per-stage costs (same
        ranks and stages).
      num_microbatches: how many microbatches a batch is split into.
      virtual_stages: stages per rank (default: the schedule's own,
        :func:`hlopipe.schedules.default_virtual_stages`: 2 for interleaved-1f1b,
        interleaved-zb, looped-bfs, zb-v and dualpipev).
      devices: the devices to use (default ``jax.devices()``); rank r gets the r-th group.
      stage_mesh_shape: each stage's device mesh: a tuple of any length (every stage alike,
        default ``(1,)``), or a list with one tuple per stage (stages may differ; values moving
        between them are resharded on the way).
      stage_mesh_axes: the names of the mesh axes (default ``("data",)`` for a 1-D mesh;
        required for more axes). Microbatch arrays are split on their leading axis over the
        axis named ``"data"`` and replicated over the others.
      param_specs: a pytree like ``params`` of ``jax.sharding.PartitionSpec`` naming the stage
        mesh's axes (Megatron-style column / row splits, say); a ``None`` leaf leaves that
        parameter to sharding propagation on its stage's merged forward+backward. ``None``
        (default): the program's own sharding annotations (a loaded HLO / StableHLO file),
        else every parameter replicated. See docs/parallelism.md.
      loss_reduction: ``"mean"`` (default): the loss is a mean over the batch and microbatch
        losses are averaged; ``"sum"``: the loss is a sum over the batch, microbatch losses
        (and their gradients) are summed. Either way the step equals ``jax.value_and_grad``
        of the loss on the whole batch.
      optimizer: an ``optax.GradientTransformation`` applied per stage to the parameters that
        stage owns, equal to the same optimizer on one device: per-parameter statistics
        (sgd, adam, lamb, lars, adafactor, lion, masks and labels by path...) see whole
        parameters (a cut layer loop's stacked parameter is updated whole by one of its
        stages), and sums over parameters (``optax.clip_by_global_norm``'s norm, anywhere
        in nested chains) are summed over every stage (and process), equal to one device's
        up to the order of the additions; an all / any of per-parameter flags
        (``apply_if_finite``) is one verdict everywhere, and branches on such global values
        (``apply_if_finite``, ``MultiSteps``) are taken alike by every stage; the state is
        initialised over the parameters' full shapes (muon, labels by ``ndim``). Any other
        operation combining parameters is refused before the first step, naming it and
        where it was traced. ``None``: no update, the gradients are returned in the metrics.
      remat: recompute each stage's forward in its backward instead of keeping residuals
        (``recompute="full"``).
      recompute: what each stage's backward recomputes instead of keeping from its forward:
        ``"none"``, ``"selective"`` (the weight matmuls' outputs kept, everything else
        recomputed, as ``jax.checkpoint_policies.dots_with_no_batch_dims_saveable``),
        ``"attention"`` or ``"full"`` (the stage's inputs kept, its forward recomputed); one
        policy, or a list of one per stage
        (:class:`hlopipe.planfile.Recompute`). Default: ``remat``'s.
      zero: ZeRO's level over each stage mesh's ``"data"`` axis: ``0`` every data replica
        holds its stage's whole parameters and optimizer state; ``1`` the optimizer state is
        sharded over the data axis (each device updates its shard; the updated parameters
        are all-gathered by the update's executable); ``2`` the gradient accumulators too
        (each backward sums its gradients over the data axis into each device's shard, a
        reduce-scatter; the parameters stay replicated, DeepSpeed's stage 2, FSDP's
        ``SHARD_GRAD_OP``); ``3`` the parameters too, and so their
        gradients (FSDP: the stage executables take them sharded and XLA's SPMD partitioner
        all-gathers them where the forward and backward use them and sums the gradients
        over the data axis into each device's shard). A dimension the data axis divides is
        split (the first one a spec leaves unsplit); a parameter with none stays replicated.
      per_example: per program output (flat), whether its leading axis is the batch
        (:meth:`infer` concatenates those over the microbatches and reduces the others).
        Default: an output whose leading axis is not the microbatch's size is not; one whose
        is, for a loss function, is when tracing it at twice the microbatch doubles it; for
        a program file it is not known and :meth:`infer` refuses it, naming this keyword.
      stage_layers: how many repeated layers each stage holds (``[2, 2]``), cut as
        ``hlopipe.split(..., stage_layers=...)`` cuts (a plan file's ``stage_layers``); in
        place of ``num_stages`` (``len(stage_layers)`` stages).
      recv_timeout: seconds a receive waits before the step fails with an error naming the
        rank and action (a deadlock or a failed rank, never a hang).
      sync_actions: profile every step (as ``step(..., profile=True)`` does): each action is
        waited for on its rank, so the step is slower and its timeline measured. Default off:
        a step issues every action asynchronously and waits only at its end.
      check_finite: test each step's losses and gradients before the update; when one is not
        finite, raise ``NonFiniteError`` naming the step and the first microbatch, stage and
        action (``1F0``, ``1B0``) that made one (``runtime/_finite.py``). Default off (it
        waits for the step's values); ``hlopipe train`` turns it on.

    ``pipe.plan`` is what the constructor decided, frozen (``runtime/_plan.py``'s
    ``PipelinePlan``: shapes, stages, schedule, placement, parameter ownership); its common
    facts read through as ``pipe.schedule``, ``pipe.staged``, ``pipe.num_microbatches``,
    ``pipe.param_names``, ``pipe.devices``, ... (read-only).

    The loss must be the program's first output, a scalar that is a *mean over the batch
    axis* (or a sum, with ``loss_reduction="sum"``): the microbatch losses then average (sum)
    to the full-batch loss, and the step (each microbatch's loss cotangent is
    ``1 / num_microbatches``, or 1) equals ``jax.value_and_grad`` of the loss on the whole
    batch.

    Example:
      >>> pipe = Pipeline(loss_fn, params, batch, schedule="1f1b", num_microbatches=8,
      ...                 devices=jax.devices()[:16], stage_mesh_shape=(2, 2),
      ...                 stage_mesh_axes=("data", "model"), param_specs=specs,
      ...                 optimizer=optax.chain(optax.clip_by_global_norm(1.0),
      ...                                       optax.adamw(3e-4)))    # doctest: +SKIP
      >>> state = pipe.init(params)                                   # doctest: +SKIP
      >>> state, metrics = pipe.step(state, batch)                    # doctest: +SKIP
      >>> schedules.plot(pipe.timeline(), "timeline.png")             # doctest: +SKIP
    """

    def __init__(
        self,
        program: Any,
        params: Any,
        batch: Any,
        *,
        num_stages: int | None = None,
        schedule: str | Schedule = "1f1b",
        num_microbatches: int,
        virtual_stages: int | None = None,
        devices: Sequence[Any] | None = None,
        stage_mesh_shape: Sequence[int] | list[Sequence[int]] = (1,),
        stage_mesh_axes: Sequence[str] | None = None,
        param_specs: Any = None,
        loss_reduction: str = "mean",
        optimizer: Any = None,
        remat: bool = False,
        recv_timeout: float = 120.0,
        sync_actions: bool = False,
        check_finite: bool = False,
        zero: int = 0,
        recompute: Any = None,
        per_example: Sequence[bool] | None = None,
        stage_layers: Sequence[int] | None = None,
    ) -> None:
        if ScheduleChoice.of(schedule) is ScheduleChoice.AUTO:
            program, schedule = _auto_schedule(
                program, params, batch, num_stages=num_stages, num_microbatches=num_microbatches,
                devices=devices, stage_mesh_shape=stage_mesh_shape,
                stage_mesh_axes=stage_mesh_axes, param_specs=param_specs,
                loss_reduction=loss_reduction, remat=remat, recv_timeout=recv_timeout,
            )  # fmt: skip
            num_stages = virtual_stages = None
        self.plan: PipelinePlan = build_plan(
            program,
            params,
            batch,
            num_stages=num_stages,
            schedule=schedule,
            num_microbatches=num_microbatches,
            virtual_stages=virtual_stages,
            devices=devices,
            stage_mesh_shape=stage_mesh_shape,
            remat=remat,
            stage_mesh_axes=stage_mesh_axes,
            param_specs=param_specs,
            loss_reduction=loss_reduction,
            zero=zero,
            recompute=recompute,
            per_example=per_example,
            stage_layers=stage_layers,
        )
        self.optimizer = optimizer
        self.recv_timeout = recv_timeout
        self.sync_actions = sync_actions
        self.check_finite = check_finite
        self.comm = Comm(self.plan, recv_timeout)
        self.param_store = Params(self.plan, self.comm, optimizer)
        self._runners: dict[bool, StepRunner] = {}  # by train (True) or infer (False)
        self._timeline: Timeline | None = None
        self._last_result: StepResult | None = None
        self._reduce_losses = jax.jit(_reduce_losses, static_argnums=0)
        if self.schedule.has_backward:
            # everything a step runs is compiled, and its instructions laid out, ahead of the
            # first step
            self._runner(train=True)
            self.param_store.compile_ahead()

    @classmethod
    def from_plan(
        cls,
        program: Any,
        params: Any,
        batch: Any,
        plan: Any,
        *,
        optimizer: Any = None,
        devices: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Pipeline:
        """The pipeline a plan file lays out (``hlopipe plan -o plan.json``; the contract of
        :mod:`hlopipe.planfile`), on the devices present.

        Args:
          program, params, batch, optimizer: as for the constructor; ``batch`` holds the
            plan's global batch (``dp x microbatches x microbatch_size`` rows).
          plan: a :class:`~hlopipe.planfile.PlanFile`, its :class:`~hlopipe.planfile.Layout`,
            or the path of a plan file.
          devices: default ``jax.devices()``; the plan's first ``pp x dp x tp x cp`` are used.
          kwargs: the constructor's other keywords (``recv_timeout``, ``check_finite``...).

        The stages hold the plan's ``stage_layers`` repeated layers each, or (none given) are
        cut at the program's markers, else into ``pp x virtual_stages`` cost-balanced ones;
        each rank's mesh is ``(dp, tp)`` named ``stage_mesh_axes``;
        the plan's ``param_specs`` rules (``PATTERN=SPEC`` over the parameters' paths, as
        ``--param-spec`` reads them) lay out the parameters, a parameter no rule matches
        replicated; ``zero``, ``recompute``, ``schedule``, ``virtual_stages`` and
        ``microbatches`` as the plan says.

        Raises:
          RuntimeConfigError: fewer devices than the plan needs (naming both counts), a
            batch that is not the plan's global batch, a rule that matches no parameter,
            or anything the constructor refuses.
        """
        from hlopipe.planfile import Layout, PlanFile, load_plan
        from hlopipe.runtime._rules import parse_param_rule, specs_from_rules

        if isinstance(plan, str | os.PathLike):
            plan = load_plan(plan)
        layout: Layout = plan.layout if isinstance(plan, PlanFile) else plan
        devs = list(jax.devices() if devices is None else devices)
        need = check_plan_devices(layout, devs)
        rows = layout.dp * layout.microbatches * layout.microbatch_size
        leaves = jax.tree_util.tree_leaves(batch)
        if leaves and (not np.shape(leaves[0]) or np.shape(leaves[0])[0] != rows):
            got = np.shape(leaves[0])[0] if np.shape(leaves[0]) else "no"
            raise RuntimeConfigError(
                f"the plan's global batch is {rows} rows (dp {layout.dp} x "
                f"{layout.microbatches} microbatches x {layout.microbatch_size}); the batch "
                f"given has {got}"
            )
        specs = None
        if layout.param_specs:
            axes = tuple(layout.stage_mesh_axes)
            rules = [parse_param_rule(text, axes) for text in layout.param_specs]
            flat = jax.tree_util.tree_flatten_with_path(params)[0]
            paths = [jax.tree_util.keystr(k) for k, _ in flat]
            found = specs_from_rules(rules, paths, [np.shape(x) for _, x in flat])
            specs = jax.tree_util.tree_unflatten(
                jax.tree_util.tree_structure(params),
                [PartitionSpec() if s is None else s for s in found],
            )
        return cls(
            program, params, batch,
            schedule=layout.schedule, num_microbatches=layout.microbatches,
            virtual_stages=layout.virtual_stages, devices=devs[:need],
            stage_mesh_shape=(layout.dp, layout.tp),
            stage_mesh_axes=tuple(layout.stage_mesh_axes), param_specs=specs,
            optimizer=optimizer, zero=layout.zero, recompute=layout.recompute,
            stage_layers=layout.stage_layers or None, **kwargs,
        )  # fmt: skip

    def with_optimizer(self, optimizer: Any) -> Pipeline:
        """This pipeline with another optimizer: the same plan and compiled stages (nothing
        of the step is compiled again), the optimizer checked and its update built.

        Args:
          optimizer: as for the constructor.

        Returns:
          A new :class:`Pipeline`; states of this one do not carry over (``init`` again).

        Raises:
          RuntimeConfigError: the optimizer cannot run per stage (as the constructor).
        """
        other = copy.copy(self)
        other.optimizer = optimizer
        other.param_store = Params(self.plan, self.comm, optimizer)
        other._timeline = None
        other._last_result = None
        if self.schedule.has_backward:
            other.param_store.compile_ahead()
        return other

    # -- the plan, read through (``pipe.plan`` holds every fact; these are its common ones) --

    num_microbatches = _FromPlan[int]()
    microbatch_size = _FromPlan[int]()
    batch_size = _FromPlan[int]()
    remat = _FromPlan[bool]()
    staged = _FromPlan[StagedProgram]()
    schedule = _FromPlan[Schedule]()
    placement = _FromPlan[Placement]()
    layout = _FromPlan[ProcessLayout]()
    execs = _FromPlan[tuple[StageExecutables, ...]]()
    num_params = _FromPlan[int]()
    param_treedef = _FromPlan[Any]()
    param_avals = _FromPlan[tuple[jax.ShapeDtypeStruct, ...]]()
    param_names = _FromPlan[tuple[str, ...]]()
    owner_rank = _FromPlan[tuple[int, ...]]()
    holders = _FromPlan[tuple[tuple[int, ...], ...]]()
    owned = _FromPlan[tuple[tuple[int, ...], ...]]()

    @property
    def devices(self) -> list[Any]:
        return list(self.plan.devices)

    @property
    def last_transfer_seconds(self) -> float:
        """Seconds the last step spent in cross-process transfers (0 in one process)."""
        return self.comm.last_transfer_seconds

    @property
    def last_transfer_bytes(self) -> int:
        """Bytes the last step's cross-process transfers of this process carried between
        devices, every device pair counted (0 in one process)."""
        return self.comm.last_transfer_bytes

    def _cross_process_sends(self, *, train: bool) -> list[tuple[int, Instr]]:
        """The sends of a training (``train=True``) or inference step between this process
        and another, in order."""
        return cross_process_sends(self._program(train=train), self.layout)

    def inference_schedule(self) -> Schedule:
        """The forward-only schedule :meth:`infer` runs, on this pipeline's placement.

        ``schedules.inference`` when its placement is this one (one stage per rank, or looped
        stages); otherwise (zb-v's V) the forwards of the training schedule in its order.
        """
        return self.plan.inference_schedule()

    # -- state ---------------------------------------------------------------------------------

    def init(self, params: Any) -> PipelineState:
        """Put ``params`` on their stages' devices and create the optimizer state there.

        Each leaf goes straight to the rank(s) of the stage(s) that use it (copied, so the
        caller's arrays are never donated); nothing is gathered on one device.
        """
        return self.param_store.init(params)

    # -- running -------------------------------------------------------------------------------

    def _program(self, *, train: bool) -> StepProgram:
        """The instruction list of a training (``train=True``) or inference step."""
        return self._runner(train=train).prog

    def _runner(self, *, train: bool) -> StepRunner:
        """The training (``train=True``) or inference step, built once: its plan, its program
        (the one builder), every executable it calls compiled, and the runner that feeds it."""
        hit = self._runners.get(train)
        if hit is not None:
            return hit
        if train:
            if not self.schedule.has_backward:
                raise RuntimeConfigError(
                    f"schedule {self.schedule.name!r} is forward-only; use infer(), or a "
                    "training schedule for step()"
                )
            sched = self.schedule
        else:
            sched = self.inference_schedule()
        plan = StepPlan.build(
            schedules.lower(sched),
            list(self.execs),
            self.placement,
            train=train,
            loss=self.plan.loss if train else None,
        )
        prog = build_program(plan, self.num_params, self._loss_ct() if train else None)
        self._compile(sorted(prog.kinds))
        runner = self._runners[train] = StepRunner(self.plan, prog, self.comm)
        return runner

    def _loss_ct(self) -> Any:
        """The loss cotangent of a microbatch (``1 / num_microbatches``, or 1 for a summed
        loss) on the loss stage's devices; ``None`` where another process holds them."""
        assert self.plan.loss is not None
        ls, lk = self.plan.loss
        if not self.layout.local(self.placement.rank_of(ls)):
            return None
        scale = (
            1.0 if self.plan.loss_reduction is LossReduction.SUM else 1.0 / self.num_microbatches
        )
        return jax.device_put(
            np.asarray(scale, self.staged.out_avals[0].dtype), self.execs[ls].output_shardings[lk]
        )

    def _compile(self, kinds: list[tuple[int, ExecKind]]) -> None:
        """Compile the executables (stage, kind) of this process's stages, in parallel."""
        by_stage: dict[int, list[ExecKind]] = {}
        order = {k: n for n, k in enumerate(_COMPILE_ORDER)}
        for st, k in sorted(kinds, key=lambda sk: (sk[0], order[sk[1]])):
            if self.layout.local(self.execs[st].rank):
                by_stage.setdefault(st, []).append(k)

        def one(item: tuple[int, list[ExecKind]]) -> None:
            for k in item[1]:
                self.execs[item[0]].get(k)

        items = list(by_stage.items())
        workers = min(len(items), os.cpu_count() or 1, 8)
        if workers <= 1:
            for it in items:
                one(it)
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="hlopipe-compile") as pool:
                list(pool.map(carrying_context(one), items))

    @property
    def process_rows(self) -> tuple[int, ...]:
        """The rows of a full batch that this process's devices hold, ascending: when the
        stage meshes' ``"data"`` axis spans processes (data-parallel replicas in several
        processes), of every microbatch the rows its devices compute on (with 2 microbatches
        of 4 split over 2 processes, process 0 holds rows ``(0, 1, 4, 5)``), else every row.
        ``step(..., process_local=True)`` takes just these rows, in this order, and no row
        moves between processes."""
        return self._runner(train=True).rows

    def step(
        self,
        state: PipelineState,
        batch: Any,
        *,
        profile: bool = False,
        process_local: bool = False,
    ) -> tuple[PipelineState, StepMetrics]:
        """One training step on ``batch``: every microbatch forward and backward in the
        schedule's order, gradients summed per stage, then the optimizer update per stage.

        ``batch`` is the full batch, the same in every process; with ``process_local=True``
        it is this process's rows of it (:attr:`process_rows`), so that the processes of a
        data axis spanning them each read only their own samples.

        Every action is issued asynchronously; the step waits for the devices only at its end
        (for the loss and the gradient norm). ``profile=True`` instead waits for each action
        on its rank and measures it: the step is slower, and its measured timeline is in the
        metrics and :meth:`timeline`.

        Returns the new state (``state`` is consumed) and :class:`StepMetrics`.
        """
        runner = self._runner(train=True)
        t_start = time.perf_counter()
        profile = profile or self.sync_actions
        assert self.plan.loss is not None
        result = runner.run(state, batch, sync=profile, local=process_local)
        grads = self.param_store.total_grads(result.acc)
        # across processes every process takes part in the collectives that share the losses
        # (and the check's verdict), in one order
        losses = self._shared_losses(result) if self.layout.multi else None
        if self.check_finite:  # before the update: the parameters that made them are intact
            check_step(self, state, batch, result, state.step + 1, losses)
        new_state, pending_norm = self.param_store.update(state, grads)
        self._last_result = result
        timeline = None
        if profile:
            timeline = self._timeline = measured_timeline(
                runner.prog.plan.schedule, result, runner.prog.plan.fused
            )
        if losses is not None:
            red = np.sum if self.plan.loss_reduction is LossReduction.SUM else np.mean
            loss: Any = float(red(losses))
            grad_norm: Any = self.param_store.grad_norm(pending_norm)
        else:
            # reduced on the devices and made a float only when the caller reads it (the step
            # waits for nothing and dispatches nothing for a loss nobody reads)
            mb_losses = [result.outputs[(0, i)] for i in range(self.num_microbatches)]
            loss = functools.partial(self._loss_on_device, mb_losses)
            grad_norm = functools.partial(self.param_store.grad_norm, pending_norm)
        metrics = StepMetrics(
            loss,
            grad_norm,
            wall_s=time.perf_counter() - t_start,
            timeline=timeline,
            grads=self.plan.param_tree(grads) if self.optimizer is None else None,
        )
        return new_state, metrics

    def _loss_on_device(self, losses: list[Any]) -> Any:
        """The step's loss from its microbatch ``losses``, reduced on the loss stage's
        devices."""
        return self._reduce_losses(self.plan.loss_reduction, *losses)

    def _shared_losses(self, result: StepResult) -> np.ndarray:
        """The step's microbatch losses in float64 in every process (sent by the loss
        stage's lead process)."""
        assert self.plan.loss is not None
        m = self.num_microbatches
        owner = self.layout.rank_process[self.placement.rank_of(self.plan.loss[0])]
        losses = None
        if owner == self.layout.me:
            losses = np.array([host_value(result.outputs[(0, i)]) for i in range(m)], np.float64)
        return self.comm.share_f64(losses, owner, m)

    def save(
        self, state: PipelineState, directory: str | os.PathLike, keep: int = 2, extra: Any = None
    ) -> str:
        """Checkpoint ``state`` under ``directory`` (``step_<n>/``, atomically; the newest
        ``keep`` are kept): each parameter and its optimizer state by the parameter's path,
        written by the process holding it. Every process of the job calls it. Returns the
        folder written. ``extra``: JSON-able data committed with it (a data loader's
        position), read back by ``hlopipe.runtime.read_checkpoint_extra``. See
        ``hlopipe/runtime/_checkpoint.py`` for the layout."""
        from hlopipe.runtime import _checkpoint

        return _checkpoint.save(self, state, directory, keep, extra)

    def restore(self, directory: str | os.PathLike, step: int | None = None) -> PipelineState:
        """The state saved under ``directory`` (the newest checkpoint, or ``step``), placed on
        this pipeline's stages; it may have other stages or processes than the one that saved
        it, as long as the parameters have the same paths, shapes and dtypes. Training on from
        it gives the losses of an uninterrupted run."""
        from hlopipe.runtime import _checkpoint

        return _checkpoint.restore(self, directory, step)

    def infer(self, state: PipelineState, batch: Any) -> Any:
        """Run the forward-only schedule on ``batch``; the program's outputs for the whole
        batch: per-microbatch outputs concatenated on their leading (batch) axis; outputs
        without one (scalars, statistics over the batch such as running means) averaged over
        the microbatches (summed with ``loss_reduction="sum"``), as the loss is.
        Results are on the default device.

        Across processes every process calls it and every process gets the whole result: the
        output stages' processes send their outputs to each other process (collectives, in
        one order), one holding no stage of the pipeline too."""
        runner = self._runner(train=False)
        m = self.num_microbatches
        result = runner.run(state, batch, sync=self.sync_actions)
        if self.sync_actions:
            self._timeline = measured_timeline(
                runner.prog.plan.schedule, result, runner.prog.plan.fused
            )
        self._last_result = result
        batch_leaves = jax.tree_util.tree_leaves(batch)
        flat_out = []
        for k, src in enumerate(self.staged.out_sources):
            if src.kind is SourceKind.STAGE:
                ex = self.execs[src.stage]
                aval = ex.stage.outputs[src.index]
                split = split_on_data(ex.output_shardings[src.index])
                parts = [
                    self.comm.on_every_process(result.outputs.get((k, i)), ex.rank, aval, split)
                    for i in range(m)
                ]
                per = self.plan.per_example[k]
                if per is None or isinstance(per, str):
                    why = per or "a program file's fixed shapes cannot tell"
                    raise RuntimeConfigError(
                        f"output {k} ({aval.dtype}{list(aval.shape)}) has the microbatch's "
                        f"{aval.shape[0]} rows on its leading axis; whether it is per example "
                        f"(concatenated over the microbatches) or a statistic (averaged) is "
                        f"not known ({why}); declare it with ",
                        Keyword("per_example", "(False, True, ...)"), " (one flag per output)",
                    )  # fmt: skip
                if not per:
                    # the loss, or a statistic over the batch: reduced like the loss
                    red = np.sum if self.plan.loss_reduction is LossReduction.SUM else np.mean
                    value = red(np.stack(parts), axis=0, dtype=np.float64)
                    flat_out.append(jnp.asarray(value, parts[0].dtype))
                else:
                    flat_out.append(jnp.asarray(np.concatenate(parts, axis=0)))
            elif src.kind is SourceKind.ARG:
                i = src.index
                if i < self.num_params:
                    flat_out.append(jnp.asarray(self.param_store.on_every_process(state, i)))
                else:
                    flat_out.append(jnp.asarray(batch_leaves[i - self.num_params]))
            else:
                flat_out.append(jnp.asarray(src.value))
        return jax.tree_util.tree_unflatten(self.staged.out_tree, flat_out)

    def gather_params(self, state: PipelineState) -> Any:
        """All the parameters of ``state`` as host (numpy) arrays, in the pytree given to
        :meth:`init`, in every process. Across processes every process must call it (each
        parameter goes from its owner to every other process); in one process it is
        ``jax.device_get(state.params)``."""
        leaves = [self.param_store.on_every_process(state, p) for p in range(self.num_params)]
        return self.plan.param_tree(leaves)

    def timeline(self) -> Timeline:
        """The measured timeline of the last profiled step (times in milliseconds); plot it
        with :func:`hlopipe.schedules.plot` and compare it with a simulated one."""
        if self._timeline is None:
            raise RuntimeConfigError(
                "no step has been profiled yet; call step(state, batch, profile=True) (or "
                "build the pipeline with sync_actions=True)"
            )
        return self._timeline

    def __repr__(self) -> str:
        sizes = [int(m.devices.size) for m in self.placement.meshes]
        per_rank = (
            f"{sizes[0]} devices"
            if len(set(sizes)) == 1
            else f"({', '.join(map(str, sizes))}) devices"  # meshes differ between ranks
        )
        head = (
            f"Pipeline({self.staged.num_stages} stages, schedule {self.schedule.name!r}, "
            f"{self.schedule.num_ranks} ranks x {per_rank}, "
            f"{self.num_microbatches} microbatches of {self.microbatch_size})"
        )
        return "\n".join([head, *self._placement_lines()])

    def _placement_lines(self) -> list[str]:
        """Per rank: its stages, mesh shape and axes, devices and processes."""
        lines = []
        stages: dict[int, list[int]] = {}
        for ex in self.execs:
            stages.setdefault(ex.rank, []).append(ex.stage.index)
        for r, mesh in enumerate(self.placement.meshes):
            shape = "x".join(str(n) for n in mesh.devices.shape)
            axes = ", ".join(mesh.axis_names)
            ids = [int(d.id) for d in mesh.devices.flat]
            procs = sorted({int(d.process_index) for d in mesh.devices.flat})
            lines.append(
                f"  rank {r}: stages {stages.get(r, [])}, mesh {shape} ({axes}), devices {ids}, "
                f"process{'es' if len(procs) > 1 else ''} {', '.join(map(str, procs))}"
            )
        return lines


def _reduce_losses(reduction: LossReduction, *losses: Any) -> Any:
    total = jnp.sum(jnp.stack([x.astype(jnp.float32) for x in losses]))
    return total if reduction is LossReduction.SUM else total / len(losses)


def _auto_schedule(program: Any, params: Any, batch: Any, **kwargs: Any) -> tuple[Any, Schedule]:
    """``schedule="auto"``: build the pipeline with 1F1B, profile one step (no optimizer; the
    state is thrown away), and pick the schedule with the shortest step simulated with the
    measured per-stage costs among those for this many ranks and stages
    (:func:`hlopipe.schedules.best`). Returns the split program (not split again) and it."""
    probe = Pipeline(program, params, batch, schedule="1f1b", **kwargs)
    _, metrics = probe.step(probe.init(params), batch, profile=True)
    assert metrics.timeline is not None
    chosen = schedules.best(
        probe.schedule.num_ranks,
        probe.num_microbatches,
        costs=metrics.timeline.costs,
        num_stages=probe.staged.num_stages,
    )
    return probe.staged, chosen
