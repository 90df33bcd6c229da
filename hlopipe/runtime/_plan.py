"""The frozen plan of a pipeline: what its constructor decides once and never changes.

``build_plan`` checks the arguments, splits the program at microbatch size, picks the
schedule and the placement, builds each stage's executables (compiled later, ahead of the
first step) and decides which stage owns each parameter. Everything else in the runtime reads
the :class:`PipelinePlan`; nothing writes to it.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe import schedules
from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.planfile import Recompute
from hlopipe.runtime._compile import StageExecutables, build_executables
from hlopipe.runtime._placement import (
    Placement,
    default_group_size,
    over_data,
    place,
    spec_leaves,
)
from hlopipe.runtime._process_layout import ProcessLayout
from hlopipe.runtime._stacked_params import join_rows, param_pieces, piece_names, piece_specs
from hlopipe.schedules import Kind, Schedule
from hlopipe.stages import (
    SourceKind,
    StagedProgram,
    arg_partition_specs,
    recompute_policy,
    split,
)
from hlopipe.stages._jaxpr import check_64bit_mode


def sds(x: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x))


def describe(avals: Sequence[Any]) -> str:
    return ", ".join(f"{jnp.dtype(a.dtype).name}{list(a.shape)}" for a in avals)


class LossReduction(enum.StrEnum):
    """How the program's loss combines the batch's examples, and so the microbatches' losses
    and gradients: a mean (averaged over the microbatches) or a sum (summed)."""

    MEAN = "mean"
    SUM = "sum"


class ScheduleChoice(enum.StrEnum):
    """A schedule asked for by what it should be rather than by name: ``AUTO``, the fastest
    on the measured per-stage costs (:func:`hlopipe.schedules.best`)."""

    AUTO = "auto"

    @classmethod
    def of(cls, schedule: Any) -> ScheduleChoice | None:
        """The choice ``schedule`` names, ``None`` for a schedule's own name (or object)."""
        if not isinstance(schedule, str):
            return None
        try:
            return cls(schedule)
        except ValueError:
            return None


@dataclass(frozen=True, eq=False)
class PipelinePlan:
    """Shapes, stages, schedule, placement and parameter ownership of one pipeline."""

    num_microbatches: int
    devices: tuple[Any, ...]
    param_treedef: Any
    param_avals: tuple[jax.ShapeDtypeStruct, ...]
    batch_treedef: Any
    batch_avals: tuple[jax.ShapeDtypeStruct, ...]
    batch_size: int
    microbatch_size: int
    staged: StagedProgram
    argnums: tuple[int, ...]
    schedule: Schedule
    placement: Placement
    layout: ProcessLayout
    execs: tuple[StageExecutables, ...]
    remat: bool
    # per stage: what its backward recomputes (``remat=True``: FULL everywhere)
    recompute: tuple[Recompute, ...]
    # ZeRO: 0 nothing sharded over the data axis; 1 the optimizer state; 2 the gradient
    # accumulators too (the parameters replicated); 3 the parameters too (their gradients
    # follow them), gathered by XLA where the stage computes
    zero: int
    # ownership: the first stage using a parameter owns it; others hold replicas
    users: tuple[tuple[int, ...], ...]
    owner: tuple[int, ...]
    owner_rank: tuple[int, ...]
    holders: tuple[tuple[int, ...], ...]  # per parameter: the ranks holding a copy
    owned: tuple[tuple[int, ...], ...]  # per stage: the inexact parameters it updates
    param_names: tuple[str, ...]
    loss: tuple[int, int] | None  # (stage, output index) of the scalar loss
    # per parameter leaf: the PartitionSpec asked for it (None: sharding propagation decides)
    param_specs: tuple[Any, ...] = ()
    loss_reduction: LossReduction = LossReduction.MEAN
    # per program output: whether it has the batch on its leading axis (infer concatenates
    # those over the microbatches and reduces the others, like the loss)
    # per output: whether it is per example; None or a reason (str): not known (infer refuses)
    per_example: tuple[bool | str | None, ...] = ()
    # A cut layer loop hands each stage its rows of a stacked parameter: the runtime's
    # parameter leaves are then those pieces (``param_treedef``/``param_avals``/
    # ``param_names`` describe them; a stacked leaf is a tuple of its ranges, named
    # ``path[start:stop]``), and ``param_pieces`` says which rows of which caller leaf each
    # is (empty: the leaves are the caller's). ``caller_*`` describe the caller's tree.
    param_pieces: tuple[Any, ...] = ()
    caller_treedef: Any = None
    caller_avals: tuple[jax.ShapeDtypeStruct, ...] = ()
    caller_names: tuple[str, ...] = ()

    def param_sharding(self, rank: int, p: int) -> Any:
        """The sharding parameter leaf ``p`` has on ``rank``: the one its first stage there
        uses (what ``param_specs`` asked, or what propagation chose), else its spec's."""
        for ex in self.execs:
            if ex.rank == rank and p in ex.stage.params_needed:
                return ex.param_shardings[ex.stage.params_needed.index(p)]
        spec = self.param_specs[p] if self.param_specs else None
        return NamedSharding(self.placement.meshes[rank], spec or PartitionSpec())

    @property
    def num_params(self) -> int:
        return len(self.param_avals)

    def inference_schedule(self) -> Schedule:
        """The forward-only schedule ``infer`` runs, on this plan's placement.

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

    def check_params(self, params: Any) -> list[Any]:
        """The leaves of ``params`` (the caller's tree), checked, as the runtime's parameter
        leaves (a stacked parameter of a cut layer loop as its rows per range)."""
        want_tree = self.caller_treedef if self.param_pieces else self.param_treedef
        want = self.caller_avals if self.param_pieces else self.param_avals
        names = self.caller_names if self.param_pieces else self.staged.in_paths
        leaves, treedef = jax.tree_util.tree_flatten(params)
        if not treedef == want_tree:  # PyTreeDef: == only
            raise RuntimeConfigError(
                f"params have structure {treedef}, the pipeline was built for {want_tree}"
            )
        for k, (x, a) in enumerate(zip(leaves, want, strict=True)):
            if tuple(np.shape(x)) != tuple(a.shape) or jnp.result_type(x) != a.dtype:
                raise RuntimeConfigError(
                    f"parameter {names[k]}: {describe([sds(x)])}, the pipeline "
                    f"was built for {describe([a])}"
                )
        if not self.param_pieces:
            return leaves
        return [
            leaves[pc.source] if pc.start is None else leaves[pc.source][pc.start : pc.stop]
            for pc in self.param_pieces
        ]

    def param_tree(self, leaves: Sequence[Any]) -> Any:
        """The caller's parameter tree from the runtime's leaves (``None`` for a leaf of
        which a piece is ``None``: held by another process). The rows of a stacked parameter
        are joined on the first piece's devices (or on the host, as NumPy, if they are)."""
        if not self.param_pieces:
            return jax.tree_util.tree_unflatten(self.param_treedef, list(leaves))
        parts: list[list[tuple[int, Any]]] = [[] for _ in self.caller_avals]
        for pc, x in zip(self.param_pieces, leaves, strict=True):
            parts[pc.source].append((pc.start or 0, x))
        out = [join_rows([x for _, x in sorted(ps, key=lambda t: t[0])]) for ps in parts]
        return jax.tree_util.tree_unflatten(self.caller_treedef, out)

    def check_batch(self, batch: Any) -> list[Any]:
        leaves, treedef = jax.tree_util.tree_flatten(batch)
        if not treedef == self.batch_treedef:
            raise RuntimeConfigError(
                f"batch has structure {treedef}, the pipeline was built for {self.batch_treedef}"
            )
        got = [sds(x) for x in leaves]
        if any(
            tuple(g.shape) != tuple(a.shape) or g.dtype != a.dtype
            for g, a in zip(got, self.batch_avals, strict=True)
        ):
            raise RuntimeConfigError(
                f"batch is ({describe(got)}), the pipeline was built for "
                f"({describe(self.batch_avals)})"
            )
        return leaves


def host_leaves(leaves: Sequence[Any]) -> list[Any]:
    """Batch leaves to slice into microbatches: on the host (NumPy), except typed PRNG key
    arrays, which NumPy cannot hold; those stay JAX arrays (sliced and moved alike)."""
    return [
        x if jax.dtypes.issubdtype(jnp.result_type(x), jax.dtypes.prng_key) else np.asarray(x)
        for x in leaves
    ]


def _is_path(x: Any) -> bool:
    return isinstance(x, str | os.PathLike)


def _batch_sizes(avals: list[jax.ShapeDtypeStruct], m: int) -> tuple[int, int]:
    if not avals:
        raise RuntimeConfigError("the batch has no arrays")
    sizes = {a.shape[0] if a.shape else None for a in avals}
    if None in sizes:
        raise RuntimeConfigError(
            "every batch leaf needs a leading batch axis (it is split into microbatches); got "
            f"shapes {[list(a.shape) for a in avals]}: a value shared by the whole batch (a "
            "scale, a PRNG key) goes into params or is closed over by the loss function; "
            "keys per example: jax.random.split(key, batch_size)"
        )
    if len(sizes) != 1:
        raise RuntimeConfigError(
            f"batch leaves disagree on the batch size (leading axes {sorted(sizes)})"  # type: ignore[type-var]
        )
    b = int(next(iter(sizes)))  # type: ignore[arg-type]
    if b % m:
        raise RuntimeConfigError(
            f"a batch of {b} does not split into {m} equal microbatches "
            f"({b} % {m} = {b % m}); choose ",
            Keyword("num_microbatches"),
            f" dividing {b}",
        )
    return b, b // m


def _has_markers(jaxpr: Any) -> bool:
    """Whether ``jaxpr`` or a jaxpr nested in it holds a ``stage_boundary`` marker."""
    for e in jaxpr.eqns:
        if e.primitive.name == "stage_boundary":
            return True
        for v in e.params.values():
            for sub in v if isinstance(v, tuple | list) else (v,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns") and _has_markers(inner):
                    return True
    return False


def _split(
    program: Any,
    param_treedef: Any,
    param_avals: list[Any],
    batch_treedef: Any,
    mb_avals: list[Any],
    num_stages: int | None,
    default: int | None,
    stage_layers: Sequence[int] | None = None,
) -> StagedProgram:
    if isinstance(program, StagedProgram):
        return program
    if _is_path(program) or (hasattr(program, "as_function") and hasattr(program, "in_avals")):
        from hlopipe.io import load

        prog = load(program) if _is_path(program) else program
        target: Any = prog
        args: tuple[Any, ...] = ()
        fn = prog.as_function(flat=True)  # a jax.export artifact's own pytrees are not used
        trace_args = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in prog.in_avals]  # type: ignore[union-attr]
    elif callable(program):
        target = program
        args = (
            jax.tree_util.tree_unflatten(param_treedef, param_avals),
            jax.tree_util.tree_unflatten(batch_treedef, mb_avals),
        )
        fn, trace_args = program, list(args)
    else:
        raise RuntimeConfigError(
            "Pipeline expects a loss function, a StagedProgram or the path of a program "
            f"file, got {type(program).__name__}"
        )
    slice_args = range(len(param_avals))
    if stage_layers:  # a plan.s layers per stage (split refuses counts the program lacks)
        return split(target, *args, stage_layers=stage_layers, slice_args=slice_args)
    # Without markers the program is cut into the default number of stages.
    if num_stages is None and default and not _has_markers(jax.make_jaxpr(fn)(*trace_args).jaxpr):
        num_stages = default
    # only parameters may reach a stage as rows of a layer loop (the batch is microbatched)
    return split(target, *args, num_stages=num_stages, slice_args=slice_args)


def _check_64bit(staged: StagedProgram) -> None:
    """A staged program with 64-bit types needs JAX's 64-bit mode (split checks the same;
    this catches a StagedProgram split in that mode and run outside it)."""
    for st in staged.stages:
        check_64bit_mode(st.jaxpr.jaxpr, f"stage {st.index}")


def _check_signature(
    staged: StagedProgram,
    param_avals: Sequence[Any],
    mb_avals: Sequence[Any],
    batch_avals: Sequence[Any],
    m: int,
) -> None:
    """The program takes ``params..., one microbatch...``: name the first argument that
    differs (not the whole signature), with the rule for batch arguments."""
    want = list(staged.in_avals)
    have = [*param_avals, *mb_avals]
    n_p = len(param_avals)
    if len(want) != len(have):
        raise RuntimeConfigError(
            f"the program takes {len(want)} arguments, params + batch give {len(have)} "
            f"({n_p} parameter leaves + {len(mb_avals)} batch leaves)"
        )
    paths = list(getattr(staged, "in_paths", None) or [])
    for k, (w, h) in enumerate(zip(want, have, strict=True)):
        if tuple(w.shape) == tuple(h.shape) and w.dtype == h.dtype:
            continue
        what = f"parameter {k}" if k < n_p else f"batch leaf {k - n_p}"
        name = f" {paths[k]}" if k < len(paths) and paths[k] != f"[{k}]" else ""
        given = describe([h])
        rule = ""
        if k >= n_p:
            full = batch_avals[k - n_p]
            given = f"{describe([h])} (one microbatch of {describe([full])})"
            rule = (
                "; full batch = microbatches x the program's batch: the program takes a "
                f"microbatch; a batch of {full.shape[0]} in {m} microbatches gives "
                f"{h.shape[0]}"
            )
        raise RuntimeConfigError(
            f"argument {k}{name} ({what}): the program expects {describe([w])}, given {given}{rule}"
        )


def _argnums(staged: StagedProgram, num_params: int) -> tuple[int, ...]:
    argnum: dict[int, int] = {}
    for st in staged.stages:
        argnum.update(zip(st.params_needed, st.param_argnums, strict=True))
    p_nums = {a for i, a in argnum.items() if i < num_params}
    b_nums = {a for i, a in argnum.items() if i >= num_params}
    if p_nums & b_nums:
        raise RuntimeConfigError(
            "parameters and batch share a positional argument of the program "
            f"(argument {sorted(p_nums & b_nums)}); pass them as separate arguments"
        )
    return tuple(sorted(p_nums))


def _loss_location(staged: StagedProgram, schedule: Schedule) -> tuple[int, int] | None:
    if not schedule.has_backward:
        return None
    src = staged.out_sources[0] if staged.out_sources else None
    aval = staged.out_avals[0] if staged.out_avals else None
    if (
        src is None
        or aval is None
        or src.kind is not SourceKind.STAGE
        or aval.shape != ()
        or not jnp.issubdtype(aval.dtype, jnp.floating)
    ):
        raise RuntimeConfigError(
            f"training with schedule {schedule.name!r} needs the program's first "
            "output to be a scalar floating loss computed by a stage; got "
            f"{describe(staged.out_avals[:1]) or 'no outputs'}"
        )
    return (src.stage, src.index)


def build_plan(
    program: Any,
    params: Any,
    batch: Any,
    *,
    num_stages: int | None,
    schedule: str | Schedule,
    num_microbatches: int,
    virtual_stages: int | None,
    devices: Sequence[Any] | None,
    stage_mesh_shape: Any,
    remat: bool,
    stage_mesh_axes: Sequence[str] | None = None,
    param_specs: Any = None,
    loss_reduction: str = "mean",
    zero: int = 0,
    recompute: Any = None,
    per_example: Sequence[bool] | None = None,
    stage_layers: Sequence[int] | None = None,
) -> PipelinePlan:
    """Check the arguments and decide everything a :class:`~hlopipe.runtime.Pipeline` needs
    (see its docstring for the arguments)."""
    m, reduction = _check_counts(num_microbatches, loss_reduction)
    devs = list(jax.devices() if devices is None else devices)
    param_avals, param_treedef = _flat_avals(params)
    batch_avals, batch_treedef = _flat_avals(batch)
    batch_size, mb_size = _batch_sizes(batch_avals, m)
    mb_avals = [jax.ShapeDtypeStruct((mb_size, *a.shape[1:]), a.dtype) for a in batch_avals]

    # 1. the schedule's shape (virtual stages per rank) decides the default stage count.
    group = default_group_size(stage_mesh_shape)
    v, default_stages = _stage_count(schedule, virtual_stages, num_stages, len(devs), group,
                                     stage_mesh_shape)  # fmt: skip

    # 2. the staged program, split at microbatch size.
    staged, caller, pieces, param_treedef, param_avals = _staged(
        program, param_treedef, param_avals, batch_treedef, batch_avals, mb_avals, m,
        num_stages, default_stages, stage_layers,
    )  # fmt: skip
    argnums = _argnums(staged, len(param_avals))

    # 3. the schedule and the placement (refused where a mesh crosses processes unevenly).
    sched = _resolve_schedule(schedule, v, virtual_stages, staged.num_stages, m)
    placement = _place(sched, devs, stage_mesh_shape, stage_mesh_axes, mb_size)
    if pieces:  # specs (given or annotated) are the caller's: each piece takes its leaf's
        param_specs = piece_specs(param_specs, caller[0], param_treedef, pieces)
    if zero not in (0, 1, 2, 3):
        raise RuntimeConfigError(
            Keyword("zero", zero), " is not a ZeRO level: 0 (nothing sharded over the data "
            "axis), 1 (the optimizer state), 2 (the gradients too) or 3 (the parameters too)"
        )  # fmt: skip
    policies = _policies(recompute, remat, staged.num_stages)
    specs, execs = _executables(
        program, staged, placement, param_specs, param_treedef, param_avals, argnums,
        policies, train=sched.has_backward, pieces=pieces,
        num_caller_params=len(caller[1]), zero=zero,
    )  # fmt: skip

    # 4. ownership of parameters: the first stage using one owns it; others hold replicas.
    own = _ownership(staged, placement, param_avals, pieces)
    return PipelinePlan(
        num_microbatches=m, devices=tuple(devs), param_treedef=param_treedef,
        param_avals=tuple(param_avals), batch_treedef=batch_treedef,
        batch_avals=tuple(batch_avals), batch_size=batch_size, microbatch_size=mb_size,
        staged=staged, argnums=argnums, schedule=sched, placement=placement,
        layout=ProcessLayout.of(placement),
        execs=execs, remat=remat, recompute=policies, zero=zero, **own,
        loss=_loss_location(staged, sched),
        param_specs=tuple(specs), loss_reduction=reduction,
        per_example=_per_example(program, staged, caller[0], list(caller[1]), batch_treedef,
                                 mb_avals, per_example), **_caller_fields(pieces, caller),
    )  # fmt: skip


def _staged(
    program: Any,
    param_treedef: Any,
    param_avals: list[Any],
    batch_treedef: Any,
    batch_avals: list[Any],
    mb_avals: list[Any],
    m: int,
    num_stages: int | None,
    default_stages: int | None,
    stage_layers: Sequence[int] | None = None,
) -> tuple[StagedProgram, tuple[Any, tuple[Any, ...], Any], tuple[Any, ...], Any, list[Any]]:
    """The program split into stages and checked; the caller's parameter tree (treedef,
    avals, names); the pieces a cut layer loop made of it and the parameters they give."""
    staged = _split(
        program, param_treedef, param_avals, batch_treedef, mb_avals, num_stages, default_stages,
        stage_layers,
    )  # fmt: skip
    _check_64bit(staged)
    caller = (param_treedef, tuple(param_avals), _names(param_treedef, param_avals))
    pieces, param_treedef, param_avals = param_pieces(staged, param_treedef, param_avals)
    _check_signature(staged, param_avals, mb_avals, batch_avals, m)
    return staged, caller, pieces, param_treedef, param_avals  # fmt: skip


def _place(
    sched: Schedule,
    devs: list[Any],
    stage_mesh_shape: Any,
    stage_mesh_axes: Sequence[str] | None,
    mb_size: int,
) -> Placement:
    """The schedule's ranks placed on ``devs``, each a mesh of ``stage_mesh_shape``."""
    return place(
        devs,
        stage_mesh_shape,
        sched.num_ranks,
        sched.stage_to_rank,
        batch_size=mb_size,
        schedule_name=f"schedule {sched.name!r} with {sched.num_stages} stages on "
        f"{sched.num_ranks} ranks",
        stage_mesh_axes=stage_mesh_axes,
    )


def _caller_fields(pieces: tuple[Any, ...], caller: tuple[Any, tuple[Any, ...], Any]) -> dict:
    """The plan's fields about the caller's own parameter tree (``caller``: treedef, avals,
    names) and the pieces a cut layer loop made of it (names per piece)."""
    names = piece_names(pieces, caller[2]) if pieces else caller[2]
    return {
        "param_names": names,
        "param_pieces": pieces,
        "caller_treedef": caller[0],
        "caller_avals": caller[1],
        "caller_names": caller[2],
    }


def _per_example(
    program: Any,
    staged: StagedProgram,
    param_treedef: Any,
    param_avals: list[Any],
    batch_treedef: Any,
    mb_avals: list[Any],
    declared: Sequence[bool] | None = None,
) -> tuple[bool | str | None, ...]:
    """Which outputs carry the batch on their leading axis (``None``, or the words of why:
    not known, which :meth:`Pipeline.infer` refuses, naming what to give). An output that is a
    scalar or whose leading axis is not the microbatch's size does not. One whose leading axis
    is: as ``declared`` (``Pipeline(per_example=...)``, one flag per output) says; else, for a loss
    function, traced (abstractly) at twice the microbatch: it does when its leading axis
    doubles (a statistic over the batch, say running means, does not), and is not known when
    that trace fails (its error kept as the reason); for a program file (fixed shapes)
    nothing is guessed.

    Raises:
      RuntimeConfigError: ``declared`` has another length than the outputs, or declares an
        output per example whose leading axis is not the microbatch.
    """
    mb = int(mb_avals[0].shape[0])
    outs = staged.out_avals
    candidate = [bool(a.shape) and a.shape[0] == mb for a in outs]
    if declared is not None:
        flags = [bool(x) for x in declared]
        if len(flags) != len(outs):
            raise RuntimeConfigError(
                Keyword("per_example", tuple(flags)), f": {len(flags)} flags, the program has "
                f"{len(outs)} outputs (one flag per output, the loss's False)"
            )  # fmt: skip
        for k, (flag, can) in enumerate(zip(flags, candidate, strict=True)):
            if flag and not can:
                raise RuntimeConfigError(
                    Keyword("per_example", tuple(flags)), f": output {k} ({describe([outs[k]])}) "
                    f"has no leading axis of the microbatch's {mb} rows"
                )  # fmt: skip
        return tuple(flags)
    if not any(candidate):
        return (False,) * len(outs)
    if isinstance(program, StagedProgram) or _is_path(program) or not callable(program):
        return tuple(None if c else False for c in candidate)
    double = [jax.ShapeDtypeStruct((2 * mb, *a.shape[1:]), a.dtype) for a in mb_avals]
    try:
        got = jax.eval_shape(
            program,
            jax.tree_util.tree_unflatten(param_treedef, param_avals),
            jax.tree_util.tree_unflatten(batch_treedef, double),
        )
    except Exception as e:  # isolation: the user's function, at a batch it was not traced at
        # not known, and said with the trace's own error where it is needed (infer): a
        # training run never asks
        why = f"tracing the loss function at {2 * mb} rows failed ({type(e).__name__}: {e})"
        return tuple(why if c else False for c in candidate)
    leaves = jax.tree_util.tree_leaves(got)
    if len(leaves) != len(outs):
        why = f"the loss function gives {len(leaves)} outputs at {2 * mb} rows, {len(outs)} at {mb}"
        return tuple(why if c else False for c in candidate)
    return tuple(
        c and tuple(o.shape) == (2 * mb, *a.shape[1:])
        for o, a, c in zip(leaves, outs, candidate, strict=True)
    )


def _policies(recompute: Any, remat: bool, num_stages: int) -> tuple[Recompute, ...]:
    """Per stage, its recompute policy: ``recompute`` (one policy, or a list of one per
    stage), else ``remat`` (True: full)."""
    if recompute is None:
        return (recompute_policy(remat),) * num_stages
    if isinstance(recompute, str):
        return (_policy(recompute),) * num_stages
    given = list(recompute)
    if len(given) != num_stages:
        raise RuntimeConfigError(
            Keyword("recompute", given), f": {len(given)} policies for {num_stages} stages; "
            "give one policy, or one per stage"
        )  # fmt: skip
    return tuple(_policy(r) for r in given)


def _policy(name: Any) -> Recompute:
    try:
        return Recompute(name)
    except ValueError:
        valid = ", ".join(repr(r.value) for r in Recompute)
        raise RuntimeConfigError(
            Keyword("recompute", name), f" is not a recompute policy; use one of {valid}"
        ) from None


def _executables(
    program: Any,
    staged: StagedProgram,
    placement: Placement,
    param_specs: Any,
    param_treedef: Any,
    param_avals: list[Any],
    argnums: tuple[int, ...],
    policies: Sequence[Recompute],
    *,
    train: bool,
    pieces: Sequence[Any] = (),
    num_caller_params: int = 0,
    zero: int = 0,
) -> tuple[list[Any], tuple[StageExecutables, ...]]:
    """The parameters' partition specs (given, or the program's own annotations) and every
    stage's executables on its rank. ZeRO-3 adds the data axis to each parameter's spec
    (:func:`over_data`): the stages' executables take their parameters sharded over it and
    XLA's SPMD partitioner gathers them where they are used (FSDP). ZeRO-2 adds it to the
    gradient accumulators' only: each backward's gradient is reduced over the data axis into
    the device's shard (a reduce-scatter, or on XLA:CPU an all-reduce and a slice)."""
    num_params = len(param_avals)
    flat = None
    if param_specs is None:
        flat = _annotated_specs(program, placement, num_caller_params or num_params)
        if flat is not None and pieces:
            flat = [flat[pc.source] for pc in pieces]
    specs = spec_leaves(param_specs, param_treedef, param_avals, staged.in_paths, placement, flat)

    def requested(rank: int, p: int) -> Any:
        spec = specs[p]
        mesh = placement.meshes[rank]
        if zero == 3:
            return NamedSharding(mesh, over_data(spec, param_avals[p].shape, mesh))
        return None if spec is None else NamedSharding(mesh, spec)

    def grad_requested(rank: int, p: int) -> Any:
        mesh = placement.meshes[rank]
        return NamedSharding(mesh, over_data(specs[p], param_avals[p].shape, mesh))

    execs = tuple(
        build_executables(
            st,
            placement,
            num_param_leaves=num_params,
            argnums=argnums,
            remat=policies[st.index],
            param_sharding=requested,
            grad_sharding=grad_requested if zero == 2 else None,
            train=train,
        )
        for st in staged.stages
    )
    return specs, execs


def _flat_avals(tree: Any) -> tuple[list[Any], Any]:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return [sds(x) for x in leaves], treedef


def _check_counts(num_microbatches: Any, loss_reduction: str) -> tuple[int, LossReduction]:
    m = num_microbatches
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise RuntimeConfigError(
            Keyword("num_microbatches"), f" must be a positive integer, got {m!r}"
        )
    try:
        reduction = LossReduction(loss_reduction)
    except ValueError:
        raise RuntimeConfigError(
            f"loss_reduction must be 'mean' or 'sum', got {loss_reduction!r}"
        ) from None
    return m, reduction


def _names(treedef: Any, avals: list[Any]) -> tuple[str, ...]:
    """Each parameter leaf's path in the parameter tree (for messages and checkpoints)."""
    tree = jax.tree_util.tree_unflatten(treedef, avals)
    return tuple(jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_flatten_with_path(tree)[0])


def _stage_count(
    schedule: str | Schedule,
    virtual_stages: int | None,
    num_stages: int | None,
    num_devices: int,
    group: int,
    stage_mesh_shape: Any,
) -> tuple[int, int | None]:
    """Stages per rank, and the stage count to split into when the caller gave none."""
    if isinstance(schedule, Schedule):
        return schedule.num_stages // schedule.num_ranks, schedule.num_stages
    v = virtual_stages or schedules.default_virtual_stages(schedule)
    if num_stages is not None:
        return v, num_stages
    if isinstance(stage_mesh_shape, list):
        return v, len(stage_mesh_shape)
    return v, max(num_devices // max(group, 1), 1) * v


def _resolve_schedule(
    schedule: str | Schedule, v: int, virtual_stages: int | None, S: int, m: int
) -> Schedule:
    """The compute schedule for ``S`` stages and ``m`` microbatches (overlaps split)."""
    if isinstance(schedule, Schedule):
        if schedule.is_lowered:
            raise RuntimeConfigError("pass a compute-only schedule; the pipeline lowers it")
        schedules.validate(schedule)
        sched = schedule
        if sched.num_microbatches != m:
            raise RuntimeConfigError(
                f"the schedule is for {sched.num_microbatches} microbatches, ",
                Keyword("num_microbatches", m),
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
    if sched.has_overlaps:
        # F&B overlaps (DualPipeV) run as their forward, then their backward
        sched = schedules.split_overlaps(sched)
    return sched


def _ownership(
    staged: StagedProgram, placement: Placement, param_avals: list[Any], pieces: Sequence[Any] = ()
) -> dict:
    """Who uses, owns and holds each parameter: the first stage using one owns it (its
    optimizer state and update; only floating parameters), the others hold replicas. The
    rows of a cut layer loop's stacked parameter (``pieces``) are owned together, by one of
    the stages using them (the least loaded, counting the bytes each owns), so that the
    optimizer updates the parameter whole, as on one device."""
    num_params = len(param_avals)
    users: list[list[int]] = [[] for _ in range(num_params)]
    for st in staged.stages:
        for p in st.params_needed:
            if p < num_params:
                users[p].append(st.index)
    owner = [u[0] if u else 0 for u in users]
    rows: dict[int, list[int]] = {}
    for p, pc in enumerate(pieces):
        if pc.start is not None:
            rows.setdefault(pc.source, []).append(p)
    load = [0] * staged.num_stages

    def nbytes(ps: Sequence[int]) -> int:
        return sum(math.prod(param_avals[p].shape) * param_avals[p].dtype.itemsize for p in ps)

    stacked = {p for ps in rows.values() for p in ps}
    for p in range(num_params):
        if p not in stacked:
            load[owner[p]] += nbytes([p])
    for ps in sorted(rows.values(), key=lambda ps: (-nbytes(ps), ps[0])):
        home = min(sorted({owner[p] for p in ps}), key=lambda s: load[s])
        load[home] += nbytes(ps)
        for p in ps:
            owner[p] = home
    owner_rank = [placement.rank_of(o) for o in owner]
    holders = [
        tuple(sorted({owner_rank[p]} | {placement.rank_of(s) for s in users[p]}))
        for p in range(num_params)
    ]
    owned: list[list[int]] = [[] for _ in range(staged.num_stages)]
    for p in range(num_params):
        if jnp.issubdtype(param_avals[p].dtype, jnp.inexact):
            owned[owner[p]].append(p)
    return {
        "users": tuple(tuple(u) for u in users),
        "owner": tuple(owner),
        "owner_rank": tuple(owner_rank),
        "holders": tuple(holders),
        "owned": tuple(tuple(o) for o in owned),
    }


def _annotated_specs(program: Any, placement: Placement, num_params: int) -> Any:
    """Parameter specs from a loaded program's own sharding annotations (``mhlo.sharding``,
    ``sdy.sharding`` on its arguments), flat; ``None`` when it is no file or has none."""
    if not (_is_path(program) or hasattr(program, "entry_func")):
        return None
    from hlopipe.io import load

    prog = load(program) if _is_path(program) else program
    mesh = placement.meshes[0]
    specs = arg_partition_specs(prog, [(n, int(s)) for n, s in dict(mesh.shape).items()])
    return None if specs is None else list(specs[:num_params])
