"""`plan_training`: what training a loss program takes (its arguments' roles, initial values,
one batch) and `plan_stages`: how many stages on which devices; each choice with the words
that explain it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError, render
from hlopipe.io import format_aval
from hlopipe.training._data import read_arrays, synthetic
from hlopipe.training._dataset import Dataset, is_one_batch, open_dataset
from hlopipe.training._roles import ArgumentRoles, Role, infer_roles, init_by_role


@dataclass(frozen=True)
class TrainingPlan:
    """A loss program ready to train: ``Pipeline(plan.loss, plan.params, plan.batch, ...)``.

    Attributes:
      program: the loaded program (its first output a scalar loss over one microbatch).
      roles: each argument's role (parameter, batch, frozen constant) and how it was chosen.
      params: the trained parameters' initial values, in argument order.
      frozen: the frozen constants' values, in argument order (closed over by ``loss``).
      batch: one full batch: each batch argument with ``num_microbatches`` microbatches.
      num_microbatches, microbatch: the batch is ``num_microbatches`` x ``microbatch`` rows.
      params_note, data_note: where the values came from, in words (text and
        :class:`~hlopipe.errors.Keyword` parts; see ``describe``).
      dataset: the samples a run reads batch after batch (``batch`` is then its first
        ``microbatches x microbatch`` samples in file order); ``None``: ``batch`` every step.
      param_roles: per parameter, where its initial value came from, in words (``"norm
        scales = 1"``, ``"from init.npz"``).
    """

    program: Any
    roles: ArgumentRoles
    params: tuple[Any, ...]
    frozen: tuple[Any, ...]
    batch: tuple[Any, ...]
    num_microbatches: int
    microbatch: int
    params_note: tuple[Any, ...]
    data_note: tuple[Any, ...]
    dataset: Dataset | None = None
    param_roles: tuple[str, ...] = ()

    @property
    def in_order(self) -> bool:
        """The program takes (parameters..., batch...) with nothing frozen: it is its own loss."""
        order = [a.position for a in self.roles.parameters + self.roles.batch]
        return not self.frozen and order == sorted(order)

    def flat(self) -> Callable[..., Any]:
        """The program over ``(*params, *batch)`` (frozen constants filled in)."""
        f = self.program.as_function(flat=True)
        if self.in_order:
            return f
        n = len(self.roles.arguments)
        slots = [a.position for a in self.roles.parameters + self.roles.batch]
        fixed = {a.position: v for a, v in zip(self.roles.frozen, self.frozen, strict=True)}

        def flat(*leaves: Any) -> Any:
            full: list[Any] = [fixed.get(i) for i in range(n)]
            for i, v in zip(slots, leaves, strict=True):
                full[i] = v
            return f(*full)

        return flat

    @property
    def loss(self) -> Any:
        """What a ``Pipeline`` trains: the program itself when it takes (parameters...,
        batch...), else a loss ``(params list, batch list)`` calling it with every argument in
        its place."""
        if self.in_order:
            return self.program
        flat = self.flat()

        def loss(params: list[Any], batch: list[Any]) -> Any:
            return flat(*params, *batch)

        return loss

    def describe(self, flags: Mapping[str, str] | None = None) -> dict[str, str]:
        """The plan in words, by topic: ``program``, ``batch``, ``frozen`` (when any),
        ``params``, ``data``; the keywords it mentions named by ``flags`` (keyword -> flag;
        default: as Python keywords)."""
        r = self.roles
        p_avals = [a.aval for a in r.parameters]
        b = r.batch
        where = "" if self.in_order else f", arguments {', '.join(str(a.position) for a in b)}"
        lines = {
            "program": f"{len(r.arguments)} arguments = {len(r.parameters)} parameters "
            f"({sum(int(np.prod(a.shape)) for a in p_avals):,} values) + a microbatch of "
            f"{len(b)} ({', '.join(format_aval(a.aval) for a in b)}{where})"
            + (f" + {len(r.frozen)} frozen constants" if r.frozen else ""),
            "batch": f"{', '.join(a.label for a in b)} ({render(r.how, flags)})",
        }
        if r.frozen:
            lines["frozen"] = (
                f"{', '.join(a.describe() for a in r.frozen)}: scalars lifted into arguments, "
                "never trained"
            )
        lines["params"] = render(self.params_note, flags)
        lines["data"] = render(self.data_note, flags)
        return lines


def plan_training(
    program: Any,
    *,
    batch_args: Any = None,
    params: str | None = None,
    data: str | None = None,
    num_microbatches: int = 4,
    int_high: int = 2,
    seed: int = 0,
    seq_len: int | None = None,
    token_dtype: str = "uint16",
) -> TrainingPlan:
    """Plan training the loss program ``program`` (a loaded :class:`~hlopipe.io.Program`).

    Args:
      batch_args: which arguments are the batch: ``"0,1"``, ``"2-4"``, ``"last:2"`` or a list
        of positions; default: inferred from the names, else the dtypes (see ``infer_roles``).
      params: an .npz with the initial values of every argument that is not the batch
        (parameters and frozen constants), in argument order; default: parameters
        initialised by role, and an error when the program has frozen constants.
      data: an .npz with one full batch (``num_microbatches`` x the program's batch), used
        every step; or a dataset (see :func:`open_dataset`): a folder or glob of .npy/.npz
        shards of samples, or a token file (``.bin`` of ``token_dtype``, a 1-D ``.npy``) cut
        into windows of ``seq_len``; default: one fixed synthetic batch.
      int_high, seed: synthetic integers in ``[0, int_high)``; the random generator's seed.

    Example:
      >>> plan = plan_training(hlopipe.load("loss.hlo"), batch_args="last:2")
      >>> pipe = hlopipe.Pipeline(plan.loss, list(plan.params), list(plan.batch),
      ...                         num_microbatches=plan.num_microbatches)
    """
    avals = list(program.in_avals)
    roles = infer_roles(avals, program.arg_names, batch_args, program.top_level_args())
    rng = np.random.default_rng(seed)
    trained, frozen, params_note, param_roles = _initial_values(roles, params, batch_args, rng)
    b_args = roles.batch
    m = num_microbatches
    dataset = None
    data_note: tuple[Any, ...]
    if data and not is_one_batch(data, b_args, m):
        dataset = open_dataset(data, b_args, seq_len=seq_len, token_dtype=token_dtype)
        B = m * int(b_args[0].aval.shape[0])
        if dataset.num_samples < B:
            raise RuntimeConfigError(
                Keyword("data", data),
                f": {dataset.num_samples} samples, a step takes {B} (",
                Keyword("num_microbatches"),
                " x the program's batch)",
            )
        rows = [dataset.source[i] for i in range(B)]
        batch = [np.stack(col) for col in zip(*rows, strict=True)]
        dropped = dataset.num_samples % B
        data_note = (f"{dataset.note}; {dataset.num_samples // B:,} steps an epoch",)
        if dropped:
            data_note += (
                f"; the last {dropped:,} of its {dataset.num_samples:,} samples are not read "
                f"in an epoch (a step takes {B:,} = ",
                Keyword("num_microbatches"),
                " x the program's batch; make the samples a multiple of it to read them all)",
            )
    elif data:
        names = [a.label for a in b_args]
        b_avals = [a.aval for a in b_args]
        batch = read_arrays(data, "data", b_avals, names, m, what="batch arguments")
        data_note = (f"from {data}, the same batch every step",)
    else:
        batch = [synthetic(a.aval, m, int_high, rng) for a in b_args]
        data_note = (
            "one fixed synthetic batch, the same every step, so the loss should fall: "
            f"integers in [0, {int_high}), floats ~ N(0, 1) (",
            Keyword("data", "FILE.npz"),
            " for yours)",
        )
    return TrainingPlan(
        program=program,
        roles=roles,
        params=tuple(trained),
        frozen=tuple(frozen),
        batch=tuple(batch),
        num_microbatches=m,
        microbatch=int(b_args[0].aval.shape[0]),
        params_note=params_note,
        data_note=data_note,
        dataset=dataset,
        param_roles=tuple(param_roles),
    )


def _initial_values(
    roles: ArgumentRoles, path: str | None, batch_args: Any, rng: Any
) -> tuple[list[Any], list[Any], tuple[Any, ...], list[str]]:
    """(parameters, frozen constants, a note, each parameter's role in words): from the file
    at ``path``, or by role."""
    if path:
        given = roles.given
        values = read_arrays(path, "params", [a.aval for a in given], [a.label for a in given])
        trained = [v for a, v in zip(given, values, strict=True) if a.role is Role.PARAMETER]
        frozen = [v for a, v in zip(given, values, strict=True) if a.role is Role.FROZEN]
        return trained, frozen, (f"from {path}",), [f"from {path}"] * len(trained)
    if roles.frozen:
        raise RuntimeConfigError(
            f"arguments {', '.join(a.describe() for a in roles.frozen)} are scalars, taken as "
            "constants a framework lifted into arguments (torch_xla does): they are frozen, "
            "never trained, and their values cannot be guessed; give every argument that is "
            "not the batch with ",
            Keyword("params", "FILE.npz"),
            " (parameters and constants in argument order)",
        )
    params: list[Any] = []
    roles_seen: dict[str, int] = {}
    each: list[str] = []
    for a in roles.parameters:
        value, role = init_by_role(a.name, a.aval, rng)
        params.append(value)
        each.append(role)
        roles_seen[role] = roles_seen.get(role, 0) + 1
    by_role: tuple[Any, ...] = (", ".join(f"{n} {r}" for r, n in roles_seen.items()),)
    if "integer parameters = 0" in roles_seen and batch_args is None:
        by_role += (
            "; integer arguments are usually data (token ids, labels): give the batch's "
            "positions with ",
            Keyword("batch_args", "I,J"),
        )
    yours = (" (", Keyword("params", "FILE.npz"), " to start from yours)")
    if any(a.name for a in roles.parameters):
        return (
            params,
            [],
            ("initialised by role from the argument names: ", *by_role, *yours),
            each,
        )
    return (
        params,
        [],
        (
            "RANDOM -- pass ",
            Keyword("params", "FILE.npz"),
            " (arrays in argument order) to train from real values: the program carries no "
            "argument names, so no parameter's role can be seen (",
            *by_role,
            ")",
        ),
        each,
    )


@dataclass(frozen=True)
class StageLayout:
    """How many stages on which devices: ``num_stages`` is ``None`` at the program's markers
    (the split finds them), ``devices`` the ones used, ``group`` devices per stage."""

    stages: int
    num_stages: int | None
    devices: tuple[Any, ...]
    group: int
    stage_note: tuple[Any, ...]
    device_note: tuple[Any, ...]
    # the simulated bubble when it exceeds half of each step, and what would lower it
    bubble_note: tuple[Any, ...] = ()


def plan_stages(
    program: Any,
    microbatch: int,
    *,
    schedule: str = "1f1b",
    stages: int | None = None,
    stage_devices: int | None = None,
    virtual_stages: int | None = None,
    devices: Sequence[Any] | None = None,
    num_microbatches: int | None = None,
    stage_layers: Sequence[int] | None = None,
) -> StageLayout:
    """Stages (at the markers, a plan's ``stage_layers`` (one stage a count), ``stages``, or
    one per device group), ranks and devices per
    stage (the most that divide ``microbatch`` unless ``stage_devices``). With
    ``num_microbatches``, a schedule that idles more than half of each step (simulated, F=1
    and B=2 per stage) gets a ``bubble_note`` saying what would lower it.

    Raises:
      RuntimeConfigError: the stages do not fit the schedule or the devices; or they would
        all sit on one rank of several devices (an interleaved schedule with as many stages as
        it puts on a rank), which is no pipeline.
    """
    import jax

    from hlopipe import schedules

    markers = program.stage_markers()
    v = virtual_stages or schedules.default_virtual_stages(schedule)
    devs = list(devices if devices is not None else jax.local_devices())
    if markers:
        S = markers + 1
        if stages and stages != S:
            raise RuntimeConfigError(
                Keyword("num_stages", stages),
                f": the program has {markers} stage markers, which make {S} stages; leave ",
                Keyword("num_stages"),
                " out",
            )
        stage_note: tuple[Any, ...] = (f"{S}, at the program's {markers} stage markers",)
    elif stage_layers:
        S = len(stage_layers)
        stage_note = (f"{S}, holding the plan's {list(stage_layers)} repeated layers",)
    elif stages:
        S = stages
        stage_note = (
            f"{S} (",
            Keyword("num_stages", S),
            "), cost-balanced: the program has no stage markers",
        )
    else:
        S = max(len(devs) // (stage_devices or 1), 1) * v
        stage_note = (
            f"{S}, cost-balanced, one per device{' group' if stage_devices else ''}: the "
            "program has no stage markers (",
            Keyword("num_stages", "N"),
            " to choose)",
        )
    if S % v:
        raise RuntimeConfigError(
            f"schedule {schedule!r} puts {v} stages on each rank, {S} stages are not a "
            "multiple of it; choose ",
            Keyword("virtual_stages"),
            " or ",
            Keyword("num_stages"),
        )
    if S // v == 1 and v > 1 and len(devs) > 1:
        more: tuple[Any, ...] = () if markers else (Keyword("num_stages", S * 2), " (2 ranks), ")
        raise RuntimeConfigError(
            f"schedule {schedule!r} puts {v} stages on each rank, so {S} stages make 1 rank: "
            "no pipeline, every stage on the same devices one after another; for a pipeline "
            "over these devices, choose ",
            *more,
            Keyword("virtual_stages", 1),
            f" ({S} ranks of one stage) or a schedule with one stage per rank, such as '1f1b'",
        )
    layout = _place(devs, S, S // v, microbatch, stage_devices, stage_note, markers)
    if num_microbatches is None:
        return layout
    note = _bubble_note(schedule, S // v, num_microbatches, v, stages=None if markers else S)
    return dataclasses.replace(layout, bubble_note=note)


def simulated_bubble(schedule: str, ranks: int, num_microbatches: int, virtual: int) -> float:
    """The idle share of a step of ``schedule`` simulated with F=1, B=2 per stage and free
    transfers (``nan`` when the schedule cannot be built for these sizes)."""
    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    try:
        sched = schedules.get(schedule, ranks, num_microbatches, virtual)
    except ScheduleError:
        return float("nan")
    unit = {schedules.CostKey(schedules.Kind.F): 1.0, schedules.CostKey(schedules.Kind.B): 2.0}
    return float(schedules.simulate(sched, unit).bubble_fraction)


def _bubble_note(schedule: str, ranks: int, m: int, v: int, stages: int | None) -> tuple[Any, ...]:
    """Words for a simulated bubble over 50%: the microbatches and the stages that lower it
    to half or less (each found by simulating), or ``()``."""
    bubble = simulated_bubble(schedule, ranks, m, v)
    if not bubble > 0.5:
        return ()
    more = next(
        (
            k
            for k in (2 * m, 4 * m, 8 * m, 16 * m)
            if simulated_bubble(schedule, ranks, k, v) <= 0.5
        ),
        None,
    )
    fewer = next(
        (r for r in range(ranks - 1, 1, -1) if simulated_bubble(schedule, r, m, v) <= 0.5), None
    )
    out: list[Any] = [
        f"the simulated bubble is {bubble:.0%} of each step ({ranks} ranks, {m} microbatches; "
        "F=1, B=2 per stage): over half of the devices' time idle; "
    ]
    ways: list[Any] = []
    if more is not None:
        ways += [
            "more microbatches (",
            Keyword("num_microbatches", more),
            f": {simulated_bubble(schedule, ranks, more, v):.0%})",
        ]
    if fewer is not None:
        if ways:
            ways.append(" or ")
        at = Keyword("num_stages", fewer * v) if stages else f"{fewer * v}: fewer markers"
        ways += ["fewer stages (", at]
        ways.append(f": {simulated_bubble(schedule, fewer, m, v):.0%})")
    return (*out, *(ways or ["more microbatches or fewer stages"]), " would lower it")


def _place(
    devs: list[Any],
    S: int,
    ranks: int,
    mb: int,
    group: int | None,
    stage_note: tuple[Any, ...],
    markers: int,
) -> StageLayout:
    platform = devs[0].platform
    if group is None:
        group = max((g for g in range(1, len(devs) // ranks + 1) if mb % g == 0), default=1)
    if ranks * group > len(devs):
        cpu = platform == "cpu"
        raise RuntimeConfigError(
            f"{ranks} ranks x {group} devices per stage need {ranks * group} devices, there are "
            f"{len(devs)}",
            *((" (", Keyword("jax_num_cpu_devices", "N"), ")") if cpu else ()),
        )
    procs = sorted({int(d.process_index) for d in devs})
    simulated = platform == "cpu" and len(devs) > len(procs)
    where = f"in {len(procs)} processes" if len(procs) > 1 else "local ones"
    device_note = (
        f"{ranks} ranks x {group} {platform.upper()} device(s) of the {len(devs)} {where}",
        *((" (simulated; ", Keyword("jax_num_cpu_devices", "N"), ")") if simulated else ()),
        ", data parallel inside each stage" if group > 1 else "",
    )
    return StageLayout(
        stages=S,
        num_stages=None if markers else S,
        devices=tuple(devs[: ranks * group]),
        group=group,
        stage_note=stage_note,
        device_note=device_note,
    )
