"""The step protocol, written once: a lowered schedule turned into a :class:`StepProgram`.

A dry run of the lowered schedule (:func:`dry_run`: ranks advance round-robin as far as their
data allows) emits, action by action, the instructions of the step over a register file of
slots: ``compute`` (a stage executable), ``send`` (the values one stage sends at one send point
to one other rank, in one batched copy), ``reshard`` (a parameter laid out as a stage of its
rank wants it), ``sum`` (cotangents of one output from several consumers, in stage order),
``recv`` (a rank taking what was sent to it) and ``mark`` (an action with nothing to do of its
own: a B that ran inside a fused F+B). Each instruction says which slots it frees (after its
last reader). The list's order is one global order that respects every rank's row and every
data dependency; the cross-process collectives (``send`` instructions between processes) are
issued in it, by every process alike.

Three interpreters run the same list: the asynchronous single controller (``_stream.py``), the
profiling one (``_executor.py``: a thread per rank, every instruction waited for and timed)
and the multi-process one (``_multiprocess.py``). Every executable a program calls is in
:attr:`StepProgram.kinds`, compiled before the first step, so no interpreter compiles inside a
step.

Decided once here, for every interpreter:

* A stage whose output cotangents are known when its forward runs (it holds the loss and
  nobody sends it cotangents) and whose B is the next compute action after its F on its rank
  runs F and B as one ``FB`` executable (no residuals kept).
* An ``I`` directly followed on its rank by the ``W`` of the same stage and microbatch runs as
  one ``B`` (one dispatch, no weight residuals kept); the W action is then a ``mark``.
* A parameter a stage wants in another layout than its rank's copy (sharding propagation chose
  differently for two stages of one rank; compared with ``is_equivalent_to``) is resharded once
  per step, before the stage's first use of it, not once per microbatch.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax

from hlopipe._jax_compat import device_to_device
from hlopipe.errors import HlopipeError
from hlopipe.runtime._compile import ExecKind, StageExecutables, executable_of
from hlopipe.runtime._placement import Placement
from hlopipe.schedules import Action, Kind, Schedule

_COMPUTE = (Kind.F, Kind.B, Kind.I, Kind.W)


class PipelineExecutionError(HlopipeError):
    """A pipeline step failed while running: an action raised, or a receive timed out."""


@dataclass(eq=False)
class StepPlan:
    """What a step needs that does not change between steps."""

    schedule: Schedule  # lowered
    execs: list[StageExecutables]
    placement: Placement
    train: bool
    loss: tuple[int, int] | None  # (stage, output index) of the scalar loss
    expected_cts: list[dict[int, int]]  # per stage: output -> number of cotangent senders
    send_points: dict[int, set[tuple[Kind, int, int]]] = field(default_factory=dict)
    # (stage, microbatch) whose F and B run as one fused executable (see the module docstring)
    fused: set[tuple[int, int]] = field(default_factory=set)
    # (stage, microbatch) whose I and W run as one B
    fused_iw: set[tuple[int, int]] = field(default_factory=set)

    @classmethod
    def build(
        cls,
        schedule: Schedule,
        execs: list[StageExecutables],
        placement: Placement,
        *,
        train: bool,
        loss: tuple[int, int] | None,
    ) -> StepPlan:
        expected: list[dict[int, int]] = [defaultdict(int) for _ in execs]
        if train:
            for ex in execs:
                diff_in = set(ex.autodiff.diff_inputs)
                for j, rc in enumerate(ex.stage.receives):
                    if j in diff_in:
                        expected[rc.src][rc.output] += 1
        points: dict[int, set[tuple[Kind, int, int]]] = {}
        for r, row in schedule.actions.items():
            points[r] = {
                (a.kind, a.stage, a.microbatch)
                for a in row
                if a is not None and a.kind in (Kind.SEND_F, Kind.SEND_B)
            }
        fused: set[tuple[int, int]] = set()
        fused_iw: set[tuple[int, int]] = set()
        if train:
            for row in schedule.actions.values():
                compute = [a for a in row if a is not None and a.kind in _COMPUTE]
                for a, b in itertools.pairwise(compute):
                    if (a.stage, a.microbatch) != (b.stage, b.microbatch):
                        continue
                    alone = not any(expected[a.stage].values())
                    if a.kind is Kind.F and b.kind is Kind.B and alone:
                        fused.add((a.stage, a.microbatch))
                    if a.kind is Kind.I and b.kind is Kind.W:
                        fused_iw.add((a.stage, a.microbatch))
        return cls(schedule, execs, placement, train, loss, expected, points, fused, fused_iw)


def dry_run(
    actions: dict[int, list[Action | None]], advance: Callable[[int, int, Action], bool]
) -> dict[int, tuple[int, Action]]:
    """Walk every rank's lowered row round-robin, each as far as ``advance(rank, position,
    action)`` allows (it returns ``False`` when the action's data is not there yet), until
    every row is done or none can move. Returns ``{}`` when all finished, else where each
    unfinished rank is stuck (a deadlock in the schedule)."""
    rows = {r: [(t, a) for t, a in enumerate(row) if a is not None] for r, row in actions.items()}
    pos = dict.fromkeys(rows, 0)
    while True:
        progressed = False
        for r, row in rows.items():
            while pos[r] < len(row) and advance(r, *row[pos[r]]):
                pos[r] += 1
                progressed = True
        stuck = {r: row[pos[r]] for r, row in rows.items() if pos[r] < len(row)}
        if not stuck or not progressed:
            return stuck


Where = tuple[int, int, Action]  # rank, position in its lowered row, action (for errors)


@dataclass(frozen=True)
class Instr:
    """One instruction of a step (see the module docstring for ``op``)."""

    op: str
    fn: Any  # compute: (stage, kind); reshard/sum/send: a callable; recv/mark: None
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    frees: tuple[int, ...]
    where: Where
    dst: int = -1  # send: the receiving rank
    avals: tuple[Any, ...] = ()  # send: the values' avals
    shardings: tuple[Any, ...] = ()  # send: their shardings on the receiving rank
    waits: tuple[int, ...] = ()  # slots another rank writes that this one reads first
    posts: tuple[int, ...] = ()  # results another rank reads

    @property
    def rank(self) -> int:
        return self.where[0]


@dataclass
class StepProgram:
    """One step (or inference pass) of a :class:`StepPlan` as one instruction list.

    Inputs, filled per step by the caller: ``param_slots[(rank, p)]``,
    ``batch_slots[(leaf, rank, i)]`` (microbatch ``i`` of batch leaf ``leaf`` on ``rank``),
    ``acc_slots[s]`` (stage ``s``'s gradient accumulators, zero at the start of a step,
    donated); ``const`` (the loss cotangent, zero cotangents: ``(rank, value)``, a value given
    as ``(aval, sharding)`` until :meth:`place_consts`). Results: ``output_slots[(flat_k, i)]``
    and, after the run, ``acc_slots``.
    """

    plan: StepPlan
    num_params: int
    n: int = 1  # slot 0 stays unused
    instrs: list[Instr] = field(default_factory=list)
    param_slots: dict[tuple[int, int], int] = field(default_factory=dict)
    batch_slots: dict[tuple[int, int, int], int] = field(default_factory=dict)
    acc_slots: dict[int, list[int]] = field(default_factory=dict)
    output_slots: dict[tuple[int, int], int] = field(default_factory=dict)
    const: dict[int, tuple[int, Any]] = field(default_factory=dict)
    kinds: set[tuple[int, ExecKind]] = field(default_factory=set)  # (stage, kind) it calls
    peak_live: dict[int, int] = field(default_factory=dict)
    # per rank, per (stage, microbatch): the slots of its residuals (and W residuals)
    activation_slots: dict[int, dict[tuple[int, int], list[int]]] = field(default_factory=dict)

    def slot(self) -> int:
        self.n += 1
        return self.n - 1

    def keep(self) -> set[int]:
        """Slots that outlive the step's instructions: inputs, accumulators, outputs, consts."""
        out = set(self.param_slots.values()) | set(self.const) | set(self.output_slots.values())
        for acc in self.acc_slots.values():
            out.update(acc)
        return out

    def rank_instrs(self, rank: int) -> list[tuple[int, Instr]]:
        return [(n, ins) for n, ins in enumerate(self.instrs) if ins.rank == rank]

    def place_consts(self, local: Callable[[int], bool]) -> None:
        """Put the constants of this process's ranks on their devices (once)."""
        import numpy as np

        for k, (r, v) in list(self.const.items()):
            if isinstance(v, tuple) and local(r):
                aval, sh = v
                self.const[k] = (r, jax.device_put(np.zeros(aval.shape, aval.dtype), sh))

    def resolve(self, local: Callable[[int], bool]) -> list[Any]:
        """Per instruction, what to call (``None``: nothing; or not this process's rank)."""
        execs = self.plan.execs
        out: list[Any] = []
        for ins in self.instrs:
            if not local(ins.rank) or ins.fn is None:
                out.append(None)
            elif isinstance(ins.fn, tuple):
                out.append(execs[ins.fn[0]].get(ins.fn[1]))
            else:
                out.append(ins.fn)
        return out


def build_program(plan: StepPlan, num_params: int, loss_ct: Any) -> StepProgram:
    """The one builder: ``plan``'s lowered schedule as a :class:`StepProgram`.

    ``loss_ct``: the loss cotangent on the loss stage's devices (``None`` where another
    process holds that stage, or for inference). Raises
    :class:`PipelineExecutionError` naming where each rank is stuck when the schedule cannot
    finish (a receive whose data never comes)."""
    prog = StepProgram(plan, num_params)
    b = _Builder(prog, loss_ct)
    stuck = dry_run(plan.schedule.actions, b.advance)
    if stuck:
        where = "; ".join(f"rank {r} at step {t} ({a.describe()})" for r, (t, a) in stuck.items())
        raise PipelineExecutionError(
            f"schedule {plan.schedule.name!r} cannot finish (a receive whose data no action "
            f"sends): {where}"
        )
    prog.peak_live = {r: b.peak[r] for r in plan.schedule.actions}
    prog.instrs = _linked(prog, b.raw)
    return prog


def _linked(prog: StepProgram, raw: list[Instr]) -> list[Instr]:
    """``raw`` with its frees (each slot cleared right after its last reader, or at once when
    nothing reads it), and, for the threaded interpreters, which slots each instruction takes
    from another rank (``waits``) and which of its results another rank reads (``posts``)."""
    keep = prog.keep()
    last: dict[int, int] = {}
    written: dict[int, int] = {}
    writer: dict[int, int] = {}
    for n, ins in enumerate(raw):
        for k in ins.ins:
            last[k] = n
        for k in ins.outs:
            written.setdefault(k, n)
            writer.setdefault(k, ins.rank)
    frees: list[list[int]] = [[] for _ in raw]
    for k, n in last.items():
        if k not in keep:
            frees[n].append(k)
    for k, n in written.items():
        if k not in keep and k not in last:
            frees[n].append(k)  # a result nobody reads (an unused output)
    taken: set[tuple[int, int]] = set()
    posted: set[int] = set()
    waits: list[list[int]] = [[] for _ in raw]
    for n, ins in enumerate(raw):
        for k in ins.ins:
            if k in writer and writer[k] != ins.rank and (ins.rank, k) not in taken:
                taken.add((ins.rank, k))
                waits[n].append(k)
                posted.add(k)
    out = []
    for n, ins in enumerate(raw):
        fr = sorted({k for k in frees[n] if k not in ins.outs})  # an accumulator stays
        posts = tuple(k for k in ins.outs if k in posted)
        out.append(dataclasses.replace(ins, frees=tuple(fr), waits=tuple(waits[n]), posts=posts))
    return out


def _sum(*xs: Any) -> tuple[Any]:
    return (functools.reduce(operator.add, xs),)


def _put(*xs: Any, shardings: Sequence[Any]) -> Any:
    return jax.device_put(xs, tuple(shardings))


def _one_device(sharding: Any) -> Any:
    """The device of a sharding on one device, else ``None``."""
    devices = sharding.device_set
    return next(iter(devices)) if len(devices) == 1 else None


def _mover(sources: Sequence[Any], shardings: Sequence[Any]) -> Callable[..., Any]:
    """The move of values laid out as ``sources`` to ``shardings``, all in one call. In a
    one-process job, when each source and target is one device, jaxlib's batched copy (the
    copy ``device_put`` makes for them, without its Python checks: a fifth of its host time on
    CPU), the copies laid out as ``shardings`` (as the receiving executable was compiled for);
    else, and in every multi-process job, one ``jax.device_put``."""
    targets = [_one_device(sh) for sh in shardings]
    if (
        jax.process_count() == 1
        and None not in targets
        and all(_one_device(sh) is not None for sh in sources)
    ):
        return device_to_device(targets, shardings)
    return functools.partial(_put, shardings=tuple(shardings))


class _Item(NamedTuple):
    """A value one stage sends to another (or keeps, when both are on one rank)."""

    key: tuple[Any, ...]  # (kind, receiving stage, its input or output index, microbatch)
    src: int  # the sending stage
    slot: int  # where the value is
    dst: int  # the receiving rank
    sharding: Any  # its sharding there
    aval: Any
    source: Any  # its sharding on the sending rank (the sending executable's)


class _Builder:
    """Emits a :class:`StepProgram`'s instructions during the dry run: :meth:`advance` turns
    one action into instructions, or says that its data is not there yet. Values in flight are
    slots in ``box``, by key."""

    def __init__(self, prog: StepProgram, loss_ct: Any) -> None:
        self.pr = prog
        self.plan = prog.plan
        self.execs = prog.plan.execs
        self.train = prog.plan.train
        self.box: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
        self.pending: dict[tuple[Kind, int, int], list[_Item]] = {}
        self.res: dict[tuple[int, int], list[int]] = {}
        self.wres: dict[tuple[int, int], list[int]] = {}
        self.taken_in: dict[tuple[int, int], list[int]] = {}
        self.taken_ct: dict[tuple[int, int], list[int]] = {}
        self.zeros: dict[tuple[int, int], int] = {}
        self.live: Counter[int] = Counter()
        self.peak: Counter[int] = Counter()
        self.raw: list[Instr] = []
        self.loss_slot = -1
        # A parameter's value on a rank has the sharding its first stage there uses
        # (PipelinePlan.param_sharding); a stage of that rank wanting another layout reads a
        # copy, resharded once per step before its first use.
        self.home: dict[tuple[int, int], Any] = {}
        for ex in self.execs:
            for p, sh in zip(ex.stage.params_needed, ex.param_shardings, strict=True):
                if p < prog.num_params:
                    self.home.setdefault((ex.rank, p), sh)
        self.resharded: dict[tuple[int, int], int] = {}
        if self.train:
            for ex in self.execs:
                prog.acc_slots[ex.stage.index] = [prog.slot() for _ in ex.acc_avals]
            if self.plan.loss is not None:
                self.loss_slot = prog.slot()
                prog.const[self.loss_slot] = (self.execs[self.plan.loss[0]].rank, loss_ct)

    # -- slots and instructions ----------------------------------------------------------------

    def emit(self, op: str, fn: Any, ins: list[int], outs: list[int], where: Where,
             **kw: Any) -> None:  # fmt: skip
        if op == "compute":
            self.pr.kinds.add(fn)
        self.raw.append(Instr(op, fn, tuple(ins), tuple(outs), (), where, **kw))

    def slots(self, n: int) -> list[int]:
        return [self.pr.slot() for _ in range(n)]

    def args_of(self, s: int, i: int, where: Where) -> list[int]:
        pr = self.pr
        ex = self.execs[s]
        r = ex.rank
        out = []
        for p, want, aval in zip(ex.stage.params_needed, ex.param_shardings,
                                 ex.stage.param_avals, strict=True):  # fmt: skip
            if p < pr.num_params:
                out.append(self.param_slot(s, r, p, want, len(aval.shape), where))
            else:
                bkey = (p - pr.num_params, r, i)
                if bkey not in pr.batch_slots:
                    pr.batch_slots[bkey] = pr.slot()
                out.append(pr.batch_slots[bkey])
        return out

    def param_slot(self, s: int, r: int, p: int, want: Any, ndim: int, where: Where) -> int:
        pr = self.pr
        if (r, p) not in pr.param_slots:
            pr.param_slots[(r, p)] = pr.slot()
        slot = pr.param_slots[(r, p)]
        if want.is_equivalent_to(self.home[(r, p)], ndim):
            return slot
        if (s, p) not in self.resharded:
            self.resharded[(s, p)] = pr.slot()
            put = _mover([self.home[(r, p)]], [want])
            self.emit("reshard", put, [slot], [self.resharded[(s, p)]], where)
        return self.resharded[(s, p)]

    # -- transfers -----------------------------------------------------------------------------

    def deliver(self, r: int, items: list[_Item], where: Where) -> None:
        """Same rank -> the slot itself; each other rank -> one ``send`` of its values."""
        by_dst: dict[int, list[_Item]] = {}
        for it in items:
            if it.dst == r:
                self.box.setdefault(it.key, []).append((it.src, it.slot))
            else:
                by_dst.setdefault(it.dst, []).append(it)
        for dst, group in by_dst.items():
            outs = self.slots(len(group))
            for it, o in zip(group, outs, strict=True):
                self.box.setdefault(it.key, []).append((it.src, o))
            shardings = tuple(it.sharding for it in group)
            put = _mover([it.source for it in group], shardings)
            self.emit("send", put, [it.slot for it in group], outs, where, dst=dst,
                      avals=tuple(it.aval for it in group), shardings=shardings)  # fmt: skip

    def post(self, r: int, kind: Kind, s: int, i: int, items: list[_Item], where: Where) -> None:
        if (kind, s, i) in self.plan.send_points[r]:
            self.pending[(kind, s, i)] = items
        else:
            self.deliver(r, items, where)

    def inputs_ready(self, s: int, i: int) -> bool:
        if (s, i) in self.taken_in:
            return True
        return all(
            (Kind.SEND_F, s, j, i) in self.box for j in range(len(self.execs[s].stage.receives))
        )

    def take_inputs(self, s: int, i: int) -> list[int]:
        got = self.taken_in.pop((s, i), None)
        if got is not None:
            return got
        n = len(self.execs[s].stage.receives)
        return [self.box.pop((Kind.SEND_F, s, j, i))[0][1] for j in range(n)]

    def cts_ready(self, s: int, i: int) -> bool:
        if (s, i) in self.taken_ct:
            return True
        exp = self.plan.expected_cts[s]
        return all(
            len(self.box.get((Kind.SEND_B, s, k, i), ())) >= exp.get(k, 0)
            for k in self.execs[s].autodiff.diff_outputs
        )

    def take_cts(self, s: int, i: int, where: Where) -> list[int]:
        """The cotangent slot of each differentiable output: the loss cotangent, a zero
        constant, the one received, or the sum (in stage order) of several."""
        got = self.taken_ct.pop((s, i), None)
        if got is not None:
            return got
        ex = self.execs[s]
        exp = self.plan.expected_cts[s]
        out = []
        for k in ex.autodiff.diff_outputs:
            n = exp.get(k, 0)
            vals = [v for _, v in sorted(self.box.pop((Kind.SEND_B, s, k, i), []))] if n else []
            if self.plan.loss == (s, k):
                vals.insert(0, self.loss_slot)
            if not vals:
                if (s, k) not in self.zeros:
                    z = self.zeros[(s, k)] = self.pr.slot()
                    self.pr.const[z] = (ex.rank, (ex.stage.outputs[k], ex.output_shardings[k]))
                vals = [self.zeros[(s, k)]]
            if len(vals) == 1:
                out.append(vals[0])
            else:
                o = self.pr.slot()
                self.emit("sum", _sum, vals, [o], where)
                out.append(o)
        return out

    def emit_outputs(self, r: int, s: int, i: int, outs: list[int], where: Where) -> None:
        ex = self.execs[s]
        for k, flat_k in ex.stage.program_outputs:
            self.pr.output_slots[(flat_k, i)] = outs[k]
        items = []
        for send in ex.stage.sends:
            dst = self.execs[send.dst]
            key = (Kind.SEND_F, send.dst, send.input, i)
            sh, aval = dst.input_shardings[send.input], dst.stage.receives[send.input].aval
            source = ex.output_shardings[send.output]
            items.append(_Item(key, s, outs[send.output], dst.rank, sh, aval, source))
        self.post(r, Kind.SEND_F, s, i, items, where)

    def emit_input_cts(self, r: int, s: int, i: int, cts: list[int], where: Where) -> None:
        ex = self.execs[s]
        items = []
        for j, g in zip(ex.autodiff.diff_inputs, cts, strict=True):
            rc = ex.stage.receives[j]
            src = self.execs[rc.src]
            key = (Kind.SEND_B, rc.src, rc.output, i)
            sh, aval = src.output_shardings[rc.output], src.stage.outputs[rc.output]
            # the cotangent of input j, as B, I and FB give it (a sum of several: the same)
            source = ex.input_shardings[j]
            items.append(_Item(key, s, g, src.rank, sh, aval, source))
        self.post(r, Kind.SEND_B, s, i, items, where)

    # -- actions -------------------------------------------------------------------------------

    def advance(self, r: int, t: int, a: Action) -> bool:
        """Emit action ``a`` (position ``t`` of rank ``r``'s row); ``False`` when its data
        is not there yet (the dry run tries again later). Every action emits at least one
        instruction (a ``mark`` if nothing else), so that a profiled step times each."""
        s, k, i = a.stage, a.kind, a.microbatch
        fused = (s, i) in self.plan.fused
        exe = executable_of(
            k, train=self.train, fused_fb=fused, fused_iw=(s, i) in self.plan.fused_iw
        )
        needs_in = k is Kind.RECV_F or (k is Kind.F and (s, i) not in self.taken_in)
        if needs_in and not self.inputs_ready(s, i):
            return False
        needs_ct = k is Kind.RECV_B or (k in (Kind.B, Kind.I) and not fused)
        if (needs_ct or (k is Kind.F and fused)) and self.train and not self.cts_ready(s, i):
            return False
        where = (r, t, a)
        before = len(self.raw)
        if k is Kind.RECV_F:
            got = self.taken_in[(s, i)] = self.take_inputs(s, i)
            self.emit("recv", None, got, [], where)
        elif k is Kind.RECV_B:
            got = self.taken_ct[(s, i)] = self.take_cts(s, i, where) if self.train else []
            self.emit("recv", None, got, [], where)
        elif exe in (ExecKind.INFER, ExecKind.F, ExecKind.FB):
            self.forward(r, s, i, exe, where)
        elif exe is ExecKind.B:  # a B, or an I run with its W
            self.backward(r, s, i, where)
        elif exe is ExecKind.I:
            self.input_grad(r, s, i, where)
        elif exe is ExecKind.W:
            acc = self.pr.acc_slots[s]
            ins = [*self.args_of(s, i, where), *self.wres.pop((s, i)), *acc]
            self.emit("compute", (s, ExecKind.W), ins, acc, where)
            self.live[r] -= 1
        elif k in (Kind.SEND_F, Kind.SEND_B):
            self.deliver(r, self.pending.pop((k, s, i), []), where)
        if len(self.raw) == before:
            self.emit("mark", None, [], [], where)
        return True

    def forward(self, r: int, s: int, i: int, exe: ExecKind, where: Where) -> None:
        """Emit the forward of stage ``s``, microbatch ``i``, as executable ``exe`` (INFER, F
        or FB)."""
        ex = self.execs[s]
        O = len(ex.stage.outputs)
        ins = self.take_inputs(s, i)
        if exe is ExecKind.INFER:
            outs = self.slots(O)
            self.emit(
                "compute", (s, ExecKind.INFER), [*self.args_of(s, i, where), *ins], outs, where
            )
        elif exe is ExecKind.FB:
            cts = self.take_cts(s, i, where)
            GI = len(ex.autodiff.diff_inputs)
            acc = self.pr.acc_slots[s]
            outs = self.slots(O + GI)
            args = [*self.args_of(s, i, where), *ins, *cts, *acc]
            self.emit("compute", (s, ExecKind.FB), args, [*outs, *acc], where)
            self.peak[r] = max(self.peak[r], self.live[r] + 1)
            self.emit_outputs(r, s, i, outs[:O], where)
            self.emit_input_cts(r, s, i, outs[O:], where)
            return
        else:
            outs = self.slots(O)
            res = self.res[(s, i)] = self.slots(ex.autodiff.num_residuals)
            args = [*self.args_of(s, i, where), *ins]
            self.emit("compute", (s, ExecKind.F), args, [*outs, *res], where)
            self.pr.activation_slots.setdefault(r, {})[(s, i)] = list(res)
            self.live[r] += 1
            self.peak[r] = max(self.peak[r], self.live[r])
        self.emit_outputs(r, s, i, outs, where)

    def backward(self, r: int, s: int, i: int, where: Where) -> None:
        cts = self.take_cts(s, i, where)
        acc = self.pr.acc_slots[s]
        outs = self.slots(len(self.execs[s].autodiff.diff_inputs))
        ins = [*self.args_of(s, i, where), *self.res.pop((s, i)), *cts, *acc]
        self.emit("compute", (s, ExecKind.B), ins, [*outs, *acc], where)
        self.live[r] -= 1
        self.emit_input_cts(r, s, i, outs, where)

    def input_grad(self, r: int, s: int, i: int, where: Where) -> None:
        ex = self.execs[s]
        cts = self.take_cts(s, i, where)
        outs = self.slots(len(ex.autodiff.diff_inputs))
        wres = self.wres[(s, i)] = self.slots(len(ex.autodiff.w_residual_avals))
        self.pr.activation_slots[r][(s, i)] += wres
        ins = [*self.args_of(s, i, where), *self.res.pop((s, i)), *cts]
        self.emit("compute", (s, ExecKind.I), ins, [*outs, *wres], where)
        self.emit_input_cts(r, s, i, outs, where)
