"""``Pipeline``: train and run a staged program on local devices with any schedule."""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe import schedules
from hlopipe.errors import RuntimeConfigError, StageError
from hlopipe.runtime._compile import StageExecutables, build_executables
from hlopipe.runtime._executor import StepPlan, StepResult, StepRun
from hlopipe.runtime._multiprocess import (
    MultiProcessStepRun,
    ProcessLayout,
    move,
    split_on_data,
    transfer_order,
)
from hlopipe.runtime._placement import Placement, place
from hlopipe.schedules import Kind, Schedule, Timeline
from hlopipe.stages import StagedProgram, split


@dataclass(eq=False)
class PipelineState:
    """Parameters and optimizer state, living on their stages' devices.

    Attributes:
      values: per rank, flat parameter index -> the array on that rank (replicated on its
        mesh). A parameter used by stages on several ranks (a tied embedding) has a copy on
        each; the copy on its owner's rank (its first stage's) is the one the optimizer updates.
      opt_states: per stage, the optax state of the parameters it owns (``None`` without an
        optimizer).
      step: how many steps produced this state.

    A step *consumes* the state it is given (its buffers are donated to the update), as a
    jitted training step with donation does: always continue from the returned state.
    """

    values: list[dict[int, jax.Array]]
    opt_states: list[Any]
    step: int
    treedef: Any = field(repr=False)
    owner_rank: list[int] = field(repr=False)

    @property
    def params(self) -> Any:
        """The parameters as the pytree given to :meth:`Pipeline.init` (owner copies, each
        on its stage's devices; ``jax.device_get`` brings them to the host). Across processes,
        the leaves another process owns are ``None``; :meth:`Pipeline.gather_params` gives
        every process all of them."""
        leaves = [self.values[r].get(p) for p, r in enumerate(self.owner_rank)]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


@dataclass
class StepMetrics:
    """What :meth:`Pipeline.step` reports.

    ``loss``: mean over the microbatches of the program's first output (the step's loss).
    ``grad_norm``: global L2 norm of the parameter gradients (before the update).
    ``step_time``: wall time of the step in seconds (schedule and update).
    ``timeline``: the measured per-action timeline (milliseconds), as :func:`schedules.simulate`
    returns, so ``schedules.plot`` draws it.
    ``grads``: the gradient pytree, only when the pipeline has no optimizer.
    """

    loss: float
    grad_norm: float
    step_time: float
    timeline: Timeline
    grads: Any = None

    def __getitem__(self, key: str) -> Any:  # metrics["loss"] reads as well
        return getattr(self, key)


# (id(optimizer), owned shapes, device ids) -> (optimizer, jitted init, jitted update)
_OPT_CACHE: dict[Any, tuple[Any, Any, Any]] = {}

_COMPUTE = frozenset({Kind.F, Kind.B, Kind.I, Kind.W})

# Pipelines built in a multi-process job, numbered alike in every process (all of them build
# the same pipelines in the same order): the prefix of their coordinator keys.
_PIPE_IDS = itertools.count()


def _is_path(x: Any) -> bool:
    return isinstance(x, str | os.PathLike)


def _sds(x: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x))


def _fresh_copy(x: Any, sharding: Any) -> jax.Array:
    """``x`` on ``sharding`` in buffers of its own (the state's buffers get donated).

    ``jax.device_put(..., may_alias=False)`` still aliases the source's buffer on a device it
    shares with a multi-device target (seen with jax 0.10.2), so such arrays go via the host.
    """
    if isinstance(x, jax.Array) and set(x.devices()) & set(sharding.device_set):
        x = np.asarray(x)
    return jax.device_put(x, sharding, may_alias=False)


def _describe(avals: Sequence[Any]) -> str:
    return ", ".join(f"{jnp.dtype(a.dtype).name}{list(a.shape)}" for a in avals)


class Pipeline:
    """A program cut into stages, placed on device groups, run by a schedule.

    Args:
      program: a loss function ``fn(params, batch)``, a :class:`~hlopipe.stages.StagedProgram`
        (its flat arguments are the leaves of ``(params, batch)``), or the path of an XLA
        program file (HLO text, StableHLO, ...) whose flat arguments are ``(params leaves...,
        batch leaves...)`` at microbatch size.
      params: the parameter pytree (arrays or ``jax.ShapeDtypeStruct``; only the structure,
        shapes and dtypes are used here — :meth:`init` takes the values).
      batch: an example full batch (pytree); every leaf has the batch on its leading axis.
      num_stages: stages to cut into when the program has no ``stage_boundary`` markers
        (default: ranks that fit on ``devices`` x virtual stages); with markers, omit it.
      schedule: a name from :func:`hlopipe.schedules.get` (``"gpipe"``, ``"1f1b"``,
        ``"interleaved-1f1b"``, ``"looped-bfs"``, ``"zb-h1"``, ``"zb-h2"``, ``"zb-v"``,
        ``"inference"``) or a :class:`~hlopipe.schedules.Schedule`.
      num_microbatches: how many microbatches a batch is split into.
      virtual_stages: stages per rank (default: the schedule's own, 2 for interleaved,
        looped-bfs and zb-v).
      devices: the devices to use (default ``jax.devices()``); rank r gets the r-th group.
      stage_mesh_shape: devices per stage, as a 1-tuple: data parallel inside each stage
        (microbatch arrays split on their leading axis, parameters replicated).
      optimizer: an ``optax.GradientTransformation`` applied per stage to the parameters that
        stage owns. Elementwise optimizers (sgd, adam, adamw, ...) then equal the same optimizer
        on one device exactly; transformations that look across parameters (global-norm
        clipping) would see one stage's parameters only and differ. ``None``: no update, the
        gradients are returned in the metrics.
      remat: recompute each stage's forward in its backward instead of keeping residuals.
      recv_timeout: seconds a receive waits before the step fails with an error naming the
        rank and action (a deadlock or a failed rank, never a hang).
      sync_actions: wait for each action to finish before the next on its rank, so the
        timeline measures execution (``False``: dispatch only, the timeline then shows issue
        times).

    The loss must be the program's first output, a scalar that is a *mean over the batch
    axis*: the microbatch losses then average to the full-batch loss, and the step (each
    microbatch's loss cotangent is ``1 / num_microbatches``) equals ``jax.value_and_grad`` of
    the loss on the whole batch.

    Example:
      >>> pipe = Pipeline(loss_fn, params, batch, schedule="1f1b", num_microbatches=8,
      ...                 devices=jax.devices()[:8], stage_mesh_shape=(2,),
      ...                 optimizer=optax.adamw(3e-4))                 # doctest: +SKIP
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
        stage_mesh_shape: Sequence[int] = (1,),
        optimizer: Any = None,
        remat: bool = False,
        recv_timeout: float = 120.0,
        sync_actions: bool = True,
    ) -> None:
        m = num_microbatches
        if not isinstance(m, int) or isinstance(m, bool) or m < 1:
            raise RuntimeConfigError(f"num_microbatches must be a positive integer, got {m!r}")
        self.num_microbatches = m
        self.optimizer = optimizer
        self.remat = remat
        self.recv_timeout = recv_timeout
        self.sync_actions = sync_actions
        self.devices = list(jax.devices() if devices is None else devices)
        self.param_treedef: Any
        self._param_leaves, self.param_treedef = jax.tree_util.tree_flatten(params)
        self.param_avals = [_sds(x) for x in self._param_leaves]
        self.batch_treedef: Any
        batch_leaves, self.batch_treedef = jax.tree_util.tree_flatten(batch)
        self.batch_avals = [_sds(x) for x in batch_leaves]
        self.num_params = len(self.param_avals)
        self.batch_size, self.microbatch_size = self._check_batch(self.batch_avals, m)
        mb_avals = [
            jax.ShapeDtypeStruct((self.microbatch_size, *a.shape[1:]), a.dtype)
            for a in self.batch_avals
        ]
        group = math.prod(stage_mesh_shape) if stage_mesh_shape else 1

        # 1. the schedule's shape (virtual stages per rank) decides the default stage count.
        if isinstance(schedule, Schedule):
            v = schedule.num_stages // schedule.num_ranks
        else:
            v = virtual_stages or schedules.get(schedule, 1, 1).num_stages
        default_stages: int | None = num_stages
        if isinstance(schedule, Schedule):
            default_stages = schedule.num_stages
        elif num_stages is None:
            default_stages = max(len(self.devices) // max(group, 1), 1) * v

        # 2. the staged program, split at microbatch size.
        self.staged = self._split(program, mb_avals, num_stages, default_stages)
        S = self.staged.num_stages
        self._check_signature(mb_avals)
        self.argnums = self._argnums()

        # 3. the schedule and the placement.
        if isinstance(schedule, Schedule):
            if schedule.is_lowered:
                raise RuntimeConfigError("pass a compute-only schedule; the pipeline lowers it")
            schedules.validate(schedule)
            sched = schedule
            if sched.num_microbatches != m:
                raise RuntimeConfigError(
                    f"the schedule is for {sched.num_microbatches} microbatches, "
                    f"num_microbatches={m}"
                )
        else:
            if S % v:
                raise RuntimeConfigError(
                    f"schedule {schedule!r} puts {v} stages on each rank, but the program has "
                    f"{S} stages (not a multiple of {v})"
                )
            sched = schedules.get(schedule, S // v, m, v if virtual_stages else None)
        if sched.num_stages != S:
            raise RuntimeConfigError(
                f"schedule {sched.name!r} has {sched.num_stages} stages, the program has {S}"
            )
        self.schedule = sched
        self.placement: Placement = place(
            self.devices,
            stage_mesh_shape,
            sched.num_ranks,
            sched.stage_to_rank,
            batch_size=self.microbatch_size,
            schedule_name=f"schedule {sched.name!r} with {S} stages on {sched.num_ranks} ranks",
        )
        self.layout = ProcessLayout.of(self.placement)
        self._uid = next(_PIPE_IDS) if self.layout.multi else -1
        self._calls = 0
        self._syncs = 0
        self._orders: dict[str, list[Any]] = {}
        self.last_transfer_seconds = 0.0
        self.execs: list[StageExecutables] = [
            build_executables(
                st,
                self.placement,
                num_param_leaves=self.num_params,
                argnums=self.argnums,
                remat=remat,
            )
            for st in self.staged.stages
        ]

        # 4. ownership of parameters: the first stage using one owns it; others hold replicas.
        users: list[list[int]] = [[] for _ in range(self.num_params)]
        for st in self.staged.stages:
            for p in st.params_needed:
                if p < self.num_params:
                    users[p].append(st.index)
        self.users = users
        self.owner = [u[0] if u else 0 for u in users]
        self.owner_rank = [self.placement.rank_of(o) for o in self.owner]
        self.holders = [
            sorted({self.owner_rank[p]} | {self.placement.rank_of(s) for s in users[p]})
            for p in range(self.num_params)
        ]
        self.owned: list[list[int]] = [[] for _ in range(S)]
        for p in range(self.num_params):
            if jnp.issubdtype(self.param_avals[p].dtype, jnp.inexact):
                self.owned[self.owner[p]].append(p)
        self.param_names = [
            jax.tree_util.keystr(k)
            for k, _ in jax.tree_util.tree_flatten_with_path(
                jax.tree_util.tree_unflatten(self.param_treedef, self.param_avals)
            )[0]
        ]
        self.loss = self._loss_location()
        self._plans: dict[str, StepPlan] = {}
        self._timeline: Timeline | None = None
        self._last_result: StepResult | None = None

    # -- construction checks -------------------------------------------------------------------

    @staticmethod
    def _check_batch(avals: list[jax.ShapeDtypeStruct], m: int) -> tuple[int, int]:
        if not avals:
            raise RuntimeConfigError("the batch has no arrays")
        sizes = {a.shape[0] if a.shape else None for a in avals}
        if None in sizes:
            raise RuntimeConfigError(
                "every batch leaf needs a leading batch axis; got shapes "
                f"{[list(a.shape) for a in avals]}"
            )
        if len(sizes) != 1:
            raise RuntimeConfigError(
                f"batch leaves disagree on the batch size (leading axes {sorted(sizes)})"  # type: ignore[type-var]
            )
        b = int(next(iter(sizes)))  # type: ignore[arg-type]
        if b % m:
            raise RuntimeConfigError(
                f"a batch of {b} does not split into {m} equal microbatches "
                f"({b} % {m} = {b % m}); choose num_microbatches dividing {b}"
            )
        return b, b // m

    def _split(
        self, program: Any, mb_avals: list[Any], num_stages: int | None, default: int | None
    ) -> StagedProgram:
        if isinstance(program, StagedProgram):
            return program
        if _is_path(program) or (hasattr(program, "as_function") and hasattr(program, "in_avals")):
            from hlopipe.io import load

            prog = load(program) if _is_path(program) else program
            target: Any = prog
            args: tuple[Any, ...] = ()
        elif callable(program):
            target = program
            args = (
                jax.tree_util.tree_unflatten(self.param_treedef, self.param_avals),
                jax.tree_util.tree_unflatten(self.batch_treedef, mb_avals),
            )
        else:
            raise RuntimeConfigError(
                "Pipeline expects a loss function, a StagedProgram or the path of a program "
                f"file, got {type(program).__name__}"
            )
        try:
            return split(target, *args, num_stages=num_stages)
        except StageError as e:
            if num_stages is None and "no stage_boundary markers" in str(e) and default:
                return split(target, *args, num_stages=default)
            raise

    def _check_signature(self, mb_avals: list[Any]) -> None:
        """The program takes ``params..., one microbatch...``: name the first argument that
        differs (not the whole signature), with the rule for batch arguments."""
        want = list(self.staged.in_avals)
        have = [*self.param_avals, *mb_avals]
        n_p = self.num_params
        rule = (
            f"full batch = microbatches x the program's batch: the program takes a microbatch; "
            f"a batch of {self.batch_size} in {self.num_microbatches} microbatches gives "
            f"{self.microbatch_size}"
        )
        if len(want) != len(have):
            raise RuntimeConfigError(
                f"the program takes {len(want)} arguments, params + batch give {len(have)} "
                f"({n_p} parameter leaves + {len(mb_avals)} batch leaves)"
            )
        paths = list(getattr(self.staged, "in_paths", None) or [])
        for k, (w, h) in enumerate(zip(want, have)):
            if tuple(w.shape) == tuple(h.shape) and jnp.dtype(w.dtype) == jnp.dtype(h.dtype):
                continue
            what = f"parameter {k}" if k < n_p else f"batch leaf {k - n_p}"
            name = f" {paths[k]}" if k < len(paths) and paths[k] != f"[{k}]" else ""
            given = _describe([h])
            if k >= n_p:
                full = self.batch_avals[k - n_p]
                given = f"{_describe([h])} (one microbatch of {_describe([full])})"
            raise RuntimeConfigError(
                f"argument {k}{name} ({what}): the program expects {_describe([w])}, "
                f"given {given}" + (f"; {rule}" if k >= n_p else "")
            )

    def _argnums(self) -> tuple[int, ...]:
        argnum: dict[int, int] = {}
        for st in self.staged.stages:
            argnum.update(zip(st.params_needed, st.param_argnums))
        p_nums = {a for i, a in argnum.items() if i < self.num_params}
        b_nums = {a for i, a in argnum.items() if i >= self.num_params}
        if p_nums & b_nums:
            raise RuntimeConfigError(
                "parameters and batch share a positional argument of the program "
                f"(argument {sorted(p_nums & b_nums)}); pass them as separate arguments"
            )
        return tuple(sorted(p_nums))

    def _loss_location(self) -> tuple[int, int] | None:
        if not self.schedule.has_backward:
            return None
        src = self.staged.out_sources[0] if self.staged.out_sources else None
        aval = self.staged.out_avals[0] if self.staged.out_avals else None
        if (
            src is None
            or aval is None
            or src.kind != "stage"
            or aval.shape != ()
            or not jnp.issubdtype(aval.dtype, jnp.floating)
        ):
            raise RuntimeConfigError(
                f"training with schedule {self.schedule.name!r} needs the program's first "
                "output to be a scalar floating loss computed by a stage; got "
                f"{_describe(self.staged.out_avals[:1]) or 'no outputs'}"
            )
        return (src.stage, src.index)

    # -- state ---------------------------------------------------------------------------------

    def _check_params(self, params: Any) -> list[Any]:
        leaves, treedef = jax.tree_util.tree_flatten(params)
        if not treedef == self.param_treedef:  # PyTreeDef: == only
            raise RuntimeConfigError(
                f"params have structure {treedef}, the pipeline was built for {self.param_treedef}"
            )
        for k, (x, a) in enumerate(zip(leaves, self.param_avals)):
            if tuple(np.shape(x)) != tuple(a.shape) or jnp.result_type(x) != a.dtype:
                raise RuntimeConfigError(
                    f"parameter {self.staged.in_paths[k]}: {_describe([_sds(x)])}, the pipeline "
                    f"was built for {_describe([a])}"
                )
        return leaves

    def init(self, params: Any) -> PipelineState:
        """Put ``params`` on their stages' devices and create the optimizer state there.

        Each leaf goes straight to the rank(s) of the stage(s) that use it (copied, so the
        caller's arrays are never donated); nothing is gathered on one device.
        """
        leaves = self._check_params(params)
        values: list[dict[int, jax.Array]] = [{} for _ in range(self.placement.num_ranks)]
        for p, x in enumerate(leaves):
            for r in self.holders[p]:
                if self.layout.local(r):
                    values[r][p] = _fresh_copy(x, self.placement.replicated(r))
        opt_states: list[Any] = [None] * self.staged.num_stages
        if self.optimizer is not None:
            for s, owned in enumerate(self.owned):
                if not self.layout.local(self.placement.rank_of(s)):
                    continue
                own = [values[self.owner_rank[p]][p] for p in owned]
                opt_states[s] = self._optimizer_fns(s)[0](own)
        return PipelineState(values, opt_states, 0, self.param_treedef, self.owner_rank)

    # -- running -------------------------------------------------------------------------------

    def _plan(self, mode: str) -> StepPlan:
        if mode not in self._plans:
            if mode == "train":
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
                self.execs,
                self.placement,
                train=mode == "train",
                loss=self.loss if mode == "train" else None,
            )
            kinds = ["infer"]
            if mode == "train":
                split_bw = any(
                    a is not None and a.kind is Kind.I
                    for row in sched.actions.values()
                    for a in row
                )
                kinds = ["F", "I", "W"] if split_bw else ["F", "B"]
            self._compile(kinds)
            self._plans[mode] = plan
        return self._plans[mode]

    def _compile(self, kinds: list[str]) -> None:
        def one(ex: StageExecutables) -> None:
            for k in kinds:
                ex.get(k)

        execs = [ex for ex in self.execs if self.layout.local(ex.rank)]
        workers = min(len(execs), os.cpu_count() or 1, 8)
        if workers <= 1:
            for ex in execs:
                one(ex)
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="hlopipe-compile") as pool:
                list(pool.map(one, execs))

    def inference_schedule(self) -> Schedule:
        """The forward-only schedule :meth:`infer` runs, on this pipeline's placement.

        ``schedules.inference`` when its placement is this one (one stage per rank, or looped
        stages); otherwise (zb-v's V) the forwards of the training schedule in its order.
        """
        s = self.schedule
        if not s.has_backward:
            return s
        v = s.num_stages // s.num_ranks
        inf = schedules.inference(s.num_ranks, s.num_microbatches, v)
        if inf.stage_to_rank == s.stage_to_rank:
            return inf
        fwd = {
            r: [a for a in row if a is not None and a.kind is Kind.F]
            for r, row in s.actions.items()
        }
        out = s.replace_actions(fwd)
        out.name = f"inference ({s.name} order)"
        return out

    def _check_batch_value(self, batch: Any) -> list[Any]:
        leaves, treedef = jax.tree_util.tree_flatten(batch)
        if not treedef == self.batch_treedef:
            raise RuntimeConfigError(
                f"batch has structure {treedef}, the pipeline was built for {self.batch_treedef}"
            )
        got = [_sds(x) for x in leaves]
        if any(
            tuple(g.shape) != tuple(a.shape) or g.dtype != a.dtype
            for g, a in zip(got, self.batch_avals)
        ):
            raise RuntimeConfigError(
                f"batch is ({_describe(got)}), the pipeline was built for "
                f"({_describe(self.batch_avals)})"
            )
        return leaves

    def _stage_args(self, state: PipelineState, batch: Any) -> dict[tuple[int, int], list[Any]]:
        leaves = self._check_batch_value(batch)
        b, m = self.microbatch_size, self.num_microbatches
        host = [np.asarray(x) for x in leaves]
        pl = self.placement
        placed: dict[tuple[int, int, int], Any] = {}  # (leaf, rank, microbatch) -> array
        args: dict[tuple[int, int], list[Any]] = {}
        for st in self.staged.stages:
            r = pl.rank_of(st.index)
            if not self.layout.local(r):
                continue
            for i in range(m):
                row = []
                for p in st.params_needed:
                    if p < self.num_params:
                        row.append(state.values[r][p])
                        continue
                    key = (p - self.num_params, r, i)
                    if key not in placed:
                        part = host[key[0]][i * b : (i + 1) * b]
                        placed[key] = jax.device_put(part, pl.data(r, part))
                    row.append(placed[key])
                args[(st.index, i)] = row
        return args

    def step(self, state: PipelineState, batch: Any) -> tuple[PipelineState, StepMetrics]:
        """One training step on ``batch``: every microbatch forward and backward in the
        schedule's order, gradients summed per stage, then the optimizer update per stage.

        Returns the new state (``state`` is consumed) and :class:`StepMetrics`.
        """
        plan = self._plan("train")
        t_start = time.perf_counter()
        m = self.num_microbatches
        args = self._stage_args(state, batch)
        acc = [ex.zeros() if self.layout.local(ex.rank) else [] for ex in self.execs]
        assert self.loss is not None
        ls, lk = self.loss
        loss_ct = None
        if self.layout.local(self.placement.rank_of(ls)):
            loss_ct = jax.device_put(
                np.asarray(1.0 / m, dtype=self.staged.out_avals[0].dtype),
                self.execs[ls].output_shardings[lk],
            )
        run = self._run(plan, "train", args, acc, loss_ct)
        result = run.run()
        del args
        self.last_transfer_seconds = getattr(run, "transfer_seconds", 0.0)
        losses = self._gather_losses(result, ls, m)
        grads = self._total_grads(result.acc)
        new_state, grad_norm = self._update(state, grads)
        self._calls += 1
        step_time = time.perf_counter() - t_start
        self._timeline = measured_timeline(plan.schedule, result)
        self._last_result = result
        metrics = StepMetrics(
            loss=float(np.mean(losses)),
            grad_norm=grad_norm,
            step_time=step_time,
            timeline=self._timeline,
        )
        if self.optimizer is None:
            metrics.grads = jax.tree_util.tree_unflatten(self.param_treedef, grads)
        return new_state, metrics

    def _run(self, plan: StepPlan, mode: str, args: Any, acc: Any, loss_ct: Any) -> StepRun:
        if not self.layout.multi:
            return StepRun(plan, args, acc, loss_ct, timeout=self.recv_timeout,
                           sync=self.sync_actions)  # fmt: skip
        if mode not in self._orders:
            self._orders[mode] = transfer_order(plan, self.layout)
        return MultiProcessStepRun(
            plan, args, acc, loss_ct, timeout=self.recv_timeout, sync=self.sync_actions,
            layout=self.layout, order=self._orders[mode],
        )  # fmt: skip

    def _kv_prefix(self) -> str:
        return f"hlopipe/pipe{self._uid}/call{self._calls}"

    def _gather_losses(self, result: StepResult, ls: int, m: int) -> list[Any]:
        """The microbatch losses, on every process (published by the loss stage's)."""
        owner = self.layout.rank_process[self.placement.rank_of(ls)]
        if owner == self.layout.me:
            losses = [np.asarray(result.outputs[(0, i)], dtype=np.float64) for i in range(m)]
            if self.layout.multi:
                from hlopipe.runtime import distributed

                distributed.kv_set(
                    f"{self._kv_prefix()}/loss", ",".join(repr(float(x)) for x in losses)
                )
            return losses
        from hlopipe.runtime import distributed

        text = distributed.kv_get(f"{self._kv_prefix()}/loss", self.recv_timeout, who=owner)
        return [np.float64(float(x)) for x in text.split(",")]

    def _move(self, value: Any, src_rank: int, dst_rank: int, aval: Any) -> Any:
        return move(
            value, self.placement, self.layout, src_rank, dst_rank, aval,
            self.placement.replicated(dst_rank),
        )  # fmt: skip

    def _total_grads(self, acc: list[list[Any]]) -> list[Any]:
        """Per parameter, the sum of its stages' gradients, on its owner's rank (``None``
        for a parameter another process owns)."""
        per_param: dict[int, list[tuple[int, Any]]] = {}
        for ex, g in zip(self.execs, acc):
            st = ex.stage
            local = self.layout.local(ex.rank)
            for n, k in enumerate(ex.autodiff.diff_params):
                gk = g[n] if local else None
                per_param.setdefault(st.params_needed[k], []).append((st.index, gk))
        out: list[Any] = []
        for p, a in enumerate(self.param_avals):
            owner = self.owner_rank[p]
            rep = self.placement.replicated(owner)
            parts = per_param.get(p)
            if not parts:
                local = self.layout.local(owner)
                out.append(jax.device_put(np.zeros(a.shape, a.dtype), rep) if local else None)
                continue
            total = self._move(parts[0][1], self.placement.rank_of(parts[0][0]), owner, a)
            for s, g in parts[1:]:
                moved = self._move(g, self.placement.rank_of(s), owner, a)
                if moved is not None:
                    total = total + moved
            out.append(total)
        return out

    def _update(self, state: PipelineState, grads: list[Any]) -> tuple[PipelineState, float]:
        if self.optimizer is None:
            sq = sum(
                float(np.sum(np.square(np.asarray(g, np.float64))))
                for g in grads
                if g is not None and jnp.issubdtype(g.dtype, jnp.inexact)
            )
            return state, math.sqrt(self._sum_over_processes("sq", sq))

        values = [dict(v) for v in state.values]
        opt_states = list(state.opt_states)
        sqnorms = []
        for s, owned in enumerate(self.owned):
            new: list[Any] = [None] * len(owned)
            if self.layout.local(self.placement.rank_of(s)):
                own = [values[self.owner_rank[p]][p] for p in owned]
                update = self._optimizer_fns(s)[1]
                new, opt_states[s], sq = update([grads[p] for p in owned], opt_states[s], own)
                sqnorms.append(sq)
            for p, x in zip(owned, new):
                for r in self.holders[p]:
                    if r == self.owner_rank[p]:
                        if x is not None:
                            values[r][p] = x
                        continue
                    moved = self._move(x, self.owner_rank[p], r, self.param_avals[p])
                    if moved is not None:
                        values[r][p] = moved
        grad_norm = math.sqrt(self._sum_over_processes("sq", sum(float(x) for x in sqnorms)))
        return (
            PipelineState(values, opt_states, state.step + 1, self.param_treedef, self.owner_rank),
            grad_norm,
        )

    def _sum_over_processes(self, name: str, x: float) -> float:
        """``x`` summed over the processes holding ranks (exact: float reprs through the
        coordinator; summed in process order, so every process gets the same value)."""
        if not self.layout.multi:
            return x
        from hlopipe.runtime import distributed

        prefix = f"{self._kv_prefix()}/{name}"
        distributed.kv_set(f"{prefix}/{self.layout.me}", repr(float(x)))
        procs = sorted(set(self.layout.rank_process))
        return sum(
            float(distributed.kv_get(f"{prefix}/{q}", self.recv_timeout, who=q)) for q in procs
        )

    def _optimizer_fns(self, s: int) -> tuple[Any, Any]:
        """Stage ``s``'s jitted ``optimizer.init`` and update (cached across pipelines with the
        same optimizer object, owned parameter shapes and devices)."""
        import optax

        rank = self.placement.rank_of(s)
        # The state is the optimizer's over {parameter path: array}, so that its per-parameter
        # leaves carry the parameter's path (checkpoints store them by it, not by stage).
        names = tuple(self.param_names[p] for p in self.owned[s])
        key = (
            id(self.optimizer),
            tuple(
                (tuple(self.param_avals[p].shape), str(self.param_avals[p].dtype))
                for p in self.owned[s]
            ),
            names,
            self.placement.device_ids(rank),
        )
        hit = _OPT_CACHE.get(key)
        if hit is not None and hit[0] is self.optimizer:
            return hit[1], hit[2]
        rep = self.placement.replicated(rank)
        opt = self.optimizer

        def init_fn(p: list[Any]) -> Any:
            return opt.init(dict(zip(names, p)))

        def update(g: list[Any], st: Any, p: list[Any]) -> Any:
            gd, pd = dict(zip(names, g)), dict(zip(names, p))
            upd, st = opt.update(gd, st, pd)
            sq = sum((jnp.sum(jnp.square(x.astype(jnp.float32))) for x in g), jnp.float32(0))
            new = optax.apply_updates(pd, upd)
            return [new[n] for n in names], st, sq

        init = jax.jit(init_fn, out_shardings=rep)
        upd = jax.jit(update, out_shardings=rep, donate_argnums=(1, 2))
        _OPT_CACHE[key] = (opt, init, upd)
        return init, upd

    def _next_sync_id(self) -> int:
        self._syncs += 1
        return self._syncs

    def save(self, state: PipelineState, directory: str | os.PathLike, keep: int = 2) -> str:
        """Checkpoint ``state`` under ``directory`` (``step_<n>/``, atomically; the newest
        ``keep`` are kept): each parameter and its optimizer state by the parameter's path,
        written by the process holding it. Every process of the job calls it. Returns the
        folder written. See ``hlopipe/runtime/_checkpoint.py`` for the layout."""
        from hlopipe.runtime import _checkpoint

        return _checkpoint.save(self, state, directory, keep)

    def restore(self, directory: str | os.PathLike, step: int | None = None) -> PipelineState:
        """The state saved under ``directory`` (the newest checkpoint, or ``step``), placed on
        this pipeline's stages; it may have other stages or processes than the one that saved
        it, as long as the parameters have the same paths, shapes and dtypes. Training on from
        it gives the losses of an uninterrupted run."""
        from hlopipe.runtime import _checkpoint

        return _checkpoint.restore(self, directory, step)

    def infer(self, state: PipelineState, batch: Any) -> Any:
        """Run the forward-only schedule on ``batch``; the program's outputs for the whole
        batch: per-microbatch outputs concatenated on their leading (batch) axis, scalar
        outputs averaged over the microbatches (a mean loss stays the full-batch mean).
        Results are on the default device.

        Across processes every process calls it and every process gets the whole result: the
        output stages' processes send their outputs to each other process (collectives, in
        one order)."""
        if self.layout.multi and self.layout.me not in self.layout.rank_process:
            raise RuntimeConfigError(
                f"process {self.layout.me} holds no stage of this pipeline, so infer() cannot "
                "deliver its outputs there; give the pipeline devices of every process"
            )
        plan = self._plan("infer")
        m = self.num_microbatches
        args = self._stage_args(state, batch)
        result = self._run(plan, "infer", args, [[] for _ in self.execs], None).run()
        del args
        self._timeline = measured_timeline(plan.schedule, result)
        self._last_result = result
        batch_leaves = jax.tree_util.tree_leaves(batch)
        flat_out = []
        for k, src in enumerate(self.staged.out_sources):
            if src.kind == "stage":
                ex = self.execs[src.stage]
                aval = ex.stage.outputs[src.index]
                split = split_on_data(ex.output_shardings[src.index])
                parts = [
                    self._on_every_process(result.outputs.get((k, i)), ex.rank, aval, split)
                    for i in range(m)
                ]
                if parts[0].ndim == 0:
                    flat_out.append(jnp.asarray(np.mean(parts, dtype=np.float64), parts[0].dtype))
                else:
                    flat_out.append(jnp.asarray(np.concatenate(parts, axis=0)))
            elif src.kind == "arg":
                i = src.index
                if i < self.num_params:
                    flat_out.append(jnp.asarray(self._param_on_every_process(state, i)))
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
        leaves = [self._param_on_every_process(state, p) for p in range(self.num_params)]
        return jax.tree_util.tree_unflatten(self.param_treedef, leaves)

    def _param_on_every_process(self, state: PipelineState, p: int) -> np.ndarray:
        """Parameter ``p``'s owner copy as a host array in every process."""
        r = self.owner_rank[p]
        value = state.values[r].get(p) if self.layout.local(r) else None
        return self._on_every_process(value, r, self.param_avals[p], False)

    def _on_every_process(self, value: Any, src_rank: int, aval: Any, split: bool) -> np.ndarray:
        """``value``, held by ``src_rank`` (``None`` in other processes), as a host array in
        every process: one transfer to each other process, every process in the same order.
        ``split``: whether ``value`` is split on its leading axis over the rank's devices."""
        if not self.layout.multi:
            return np.asarray(value)
        owner = self.layout.rank_process[src_rank]
        out = value
        for q in sorted(set(self.layout.rank_process) - {owner}):
            dst = self.layout.rank_process.index(q)  # q's first rank
            pl = self.placement
            sharding = pl.data(dst, aval) if split else pl.replicated(dst)
            moved = move(value, pl, self.layout, src_rank, dst, aval, sharding)
            if q == self.layout.me:
                out = moved
        return np.asarray(out)

    def timeline(self) -> Timeline:
        """The measured timeline of the last step or inference (times in milliseconds); plot
        it with :func:`hlopipe.schedules.plot` and compare it with a simulated one."""
        if self._timeline is None:
            raise RuntimeConfigError("no step has run yet; call step() or infer() first")
        return self._timeline

    def __repr__(self) -> str:
        return (
            f"Pipeline({self.staged.num_stages} stages, schedule {self.schedule.name!r}, "
            f"{self.schedule.num_ranks} ranks x {self.placement.group_size} devices, "
            f"{self.num_microbatches} microbatches of {self.microbatch_size})"
        )


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
    return Timeline(schedule, costs, events, makespan, busy, idle, dict(result.peak_live))
