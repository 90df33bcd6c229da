"""The instruction stream: a step compiled, once, into a flat list of dispatches.

In one process a step needs no threads: every action is an asynchronous dispatch (a compiled
executable, or a ``device_put`` onto another rank's devices), and the devices order the work
by its data dependencies. So one controller thread issues all ranks' actions in one global
order that respects the schedule's order on every rank and every data dependency (a dry run
of the lowered schedule: ranks advance round-robin as far as their data allows). Nothing
waits on a device inside the step.

Everything the step loop would otherwise decide per action is decided here, when the stream
is built: which executable runs, which values it reads (slots of a register file), where its
results go, which values are then dead (their slot is cleared, so the buffer is released as
soon as its last consumer is issued; a send buffer dies as soon as its copy is issued), which
sends are plain reuses (same rank) and which are copies (batched per send point), and which
cotangents must be summed. An ``I`` directly followed on its rank by the ``W`` of the same
stage and microbatch runs as one ``B`` (one dispatch, no weight residuals kept). The step
loop is then ``regs[outs] = fn(*regs[ins]); regs[frees] = None`` per instruction.

A schedule that cannot be ordered (a deadlock in it) has no stream; the threaded executor
runs it and reports the receive that times out.
"""

from __future__ import annotations

import functools
import itertools
import operator
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from hlopipe.runtime._executor import PipelineExecutionError, StepPlan, StepResult, dry_run
from hlopipe.schedules import Action, Kind

_COMPUTE = (Kind.F, Kind.B, Kind.I, Kind.W)


class Unorderable(Exception):
    """The schedule cannot finish (a receive whose data never comes)."""


@dataclass(frozen=True)
class Instr:
    fn: Any  # a callable, or (stage, kind) of a stage executable
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    frees: tuple[int, ...]
    where: tuple[int, int, Action]  # rank, position in its lowered row, action (for errors)


def _sum(*xs: Any) -> tuple[Any]:
    return (functools.reduce(operator.add, xs),)


class InstructionStream:
    """One step (or inference pass) of a :class:`StepPlan` as a flat instruction list.

    Inputs, filled by the caller per step: ``param_slots[(rank, p)]`` (parameter ``p`` on
    ``rank``), ``batch_slots[(leaf, rank, i)]`` (microbatch ``i`` of batch leaf ``leaf`` on
    ``rank``), ``acc_slots[s]`` (stage ``s``'s gradient accumulators, donated); constants
    (the loss cotangent, zero cotangents) live in slots the stream fills itself.
    Results: ``output_slots[(flat_k, i)]`` and, after the run, ``acc_slots``.
    """

    def __init__(self, plan: StepPlan, num_params: int, loss_ct: Any) -> None:
        self.plan = plan
        self.num_params = num_params
        self.n = 0
        self.param_slots: dict[tuple[int, int], int] = {}
        self.batch_slots: dict[tuple[int, int, int], int] = {}
        self.acc_slots: dict[int, list[int]] = {}
        self.output_slots: dict[tuple[int, int], int] = {}
        self.const: dict[int, Any] = {}
        self.kinds: set[tuple[int, str]] = set()  # (stage, executable kind) the stream calls
        self.peak_live: dict[int, int] = {}
        # per rank, per (stage, microbatch): the slots of its residuals (and W residuals)
        self.activation_slots: dict[int, dict[tuple[int, int], list[int]]] = {}
        self._loss_ct = loss_ct
        self.instrs: list[Instr] = []
        self._build()
        self._prepared: list[tuple[Any, tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = []

    # -- building ------------------------------------------------------------------------------

    def _slot(self) -> int:
        self.n += 1
        return self.n - 1

    def _build(self) -> None:
        builder = _Builder(self)
        builder.acc_and_loss_slots()
        stuck = dry_run(self.plan.schedule.actions, builder.advance)
        if stuck:
            raise Unorderable
        self.peak_live = {r: builder.peak[r] for r in self.plan.schedule.actions}
        self.instrs = self._with_frees(builder.raw)

    def _with_frees(self, raw: list[Any]) -> list[Instr]:
        """Each slot is cleared right after its last reader (or at once when nothing reads
        it); inputs, accumulators, outputs and constants stay."""
        keep = set(self.param_slots.values()) | set(self.const) | set(self.output_slots.values())
        for acc in self.acc_slots.values():
            keep.update(acc)
        keep.update(self.batch_slots.values())  # cleared by the caller after the run
        last: dict[int, int] = {}
        written: dict[int, int] = {}
        for n, (_fn, ins, outs, _w) in enumerate(raw):
            for k in ins:
                last[k] = n
            for k in outs:
                written.setdefault(k, n)
        frees: list[list[int]] = [[] for _ in raw]
        for k, n in last.items():
            if k not in keep:
                frees[n].append(k)
        for k, n in written.items():
            if k not in keep and k not in last:
                frees[n].append(k)  # a result nobody reads (e.g. an unused output)
        for k in self.batch_slots.values():
            if k in last:
                frees[last[k]].append(k)
        out = []
        for (fn, ins, outs, where), fr in zip(raw, frees, strict=True):
            # a slot both read and rewritten by one instruction (an accumulator) stays
            fr = [k for k in fr if k not in outs]
            out.append(Instr(fn, tuple(ins), tuple(outs), tuple(sorted(set(fr))), where))
        return out

    def prepare(self) -> None:
        """Resolve the executables (``StageExecutables.get``: compiled already when the
        caller compiled :attr:`kinds` ahead) and put the constants on their devices."""
        for k, v in list(self.const.items()):
            if isinstance(v, tuple):
                aval, sh = v
                self.const[k] = jax.device_put(np.zeros(aval.shape, aval.dtype), sh)
        execs = self.plan.execs
        self._prepared = [
            (
                execs[ins.fn[0]].get(ins.fn[1]) if isinstance(ins.fn, tuple) else ins.fn,
                ins.ins,
                ins.outs,
                ins.frees,
            )
            for ins in self.instrs
        ]

    # -- running -------------------------------------------------------------------------------

    def run(self, regs: list[Any]) -> float:
        """Issue every instruction (``regs`` holds the inputs); returns seconds spent."""
        for k, v in self.const.items():
            regs[k] = v
        t0 = time.perf_counter()
        n = 0
        try:
            for n, (fn, ins, outs, frees) in enumerate(self._prepared):  # noqa: B007
                got = fn(*[regs[k] for k in ins])
                for k, v in zip(outs, got, strict=True):
                    regs[k] = v
                for k in frees:
                    regs[k] = None
        except Exception as e:
            r, t, a = self.instrs[n].where
            raise PipelineExecutionError(
                f"rank {r}, step {t}: {a.describe()} failed: {type(e).__name__}: {e}"
            ) from e
        return time.perf_counter() - t0

    def run_counting(self, regs: list[Any]) -> dict[int, int]:
        """Run as :meth:`run`, counting after each instruction, per rank, the microbatches
        whose activations the register file still holds (a fused F+B counts as one while it
        runs); returns the most per rank. For tests: slower than :meth:`run`."""
        for k, v in self.const.items():
            regs[k] = v
        peak = dict.fromkeys(self.peak_live, 0)
        for ins, (fn, ins_, outs, frees) in zip(self.instrs, self._prepared, strict=True):
            got = fn(*[regs[k] for k in ins_])
            for k, v in zip(outs, got, strict=True):
                regs[k] = v
            for k in frees:
                regs[k] = None
            r = ins.where[0]
            held = sum(
                any(regs[k] is not None for k in slots)
                for slots in self.activation_slots.get(r, {}).values()
            )
            fused = isinstance(ins.fn, tuple) and ins.fn[1] == "FB"
            peak[r] = max(peak[r], held + fused)
        return peak

    def held_slots(self, regs: list[Any]) -> list[int]:
        """The slots still holding a value that is neither an input, an accumulator, an
        output nor a constant (after a run: none, or a buffer leaked)."""
        keep = set(self.param_slots.values()) | set(self.const) | set(self.output_slots.values())
        for acc in self.acc_slots.values():
            keep.update(acc)
        return [k for k, v in enumerate(regs) if v is not None and k not in keep]

    def result(self, regs: list[Any], seconds: float) -> StepResult:
        outputs = {key: regs[k] for key, k in self.output_slots.items()}
        acc = [[regs[k] for k in self.acc_slots.get(ex.stage.index, [])] for ex in self.plan.execs]
        return StepResult(
            events={r: [] for r in self.plan.schedule.actions},
            outputs=outputs,
            acc=acc,
            peak_live=dict(self.peak_live),
            wall_ms=seconds * 1e3,
            dispatch_ms=seconds * 1e3,
        )


_Item = tuple[tuple[Any, ...], int, int, int, Any]  # (mailbox key, src stage, slot, dst, sharding)


class _Builder:
    """Builds an :class:`InstructionStream`'s raw instructions by a dry run of the lowered
    schedule (:func:`dry_run`): :meth:`advance` turns one action into instructions, or says
    that its data is not there yet. Values in flight are slots in ``box``, by mailbox key."""

    def __init__(self, stream: InstructionStream) -> None:
        self.st = stream
        self.plan = stream.plan
        self.execs = stream.plan.execs
        self.train = stream.plan.train
        stream._slot()  # slot 0 stays unused, as before
        self.box: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
        self.pending: dict[tuple[str, int, int], list[_Item]] = {}
        self.res: dict[tuple[int, int], list[int]] = {}
        self.wres: dict[tuple[int, int], list[int]] = {}
        self.taken_in: dict[tuple[int, int], list[int]] = {}
        self.taken_ct: dict[tuple[int, int], list[int]] = {}
        self.zeros: dict[tuple[int, int], int] = {}
        self.live: Counter[int] = Counter()
        self.peak: Counter[int] = Counter()
        self.raw: list[tuple[Any, list[int], list[int], tuple[int, int, Action]]] = []
        self.loss_slot = -1
        self.fuse_iw = _fusable_iw(self.plan) if self.train else set()
        # A parameter's value on a rank has the sharding its first stage there uses
        # (PipelinePlan.param_sharding); a stage of that rank for which propagation chose
        # another layout reads a copy, resharded once per step before its first use.
        self.home: dict[tuple[int, int], Any] = {}
        for ex in self.execs:
            for p, sh in zip(ex.stage.params_needed, ex.param_shardings, strict=True):
                if p < stream.num_params:
                    self.home.setdefault((ex.rank, p), sh)
        self.resharded: dict[tuple[int, int], int] = {}

    def acc_and_loss_slots(self) -> None:
        st = self.st
        if not self.train:
            return
        for ex in self.execs:
            st.acc_slots[ex.stage.index] = [st._slot() for _ in ex.acc_avals]
        if self.plan.loss is not None:
            self.loss_slot = st._slot()
            st.const[self.loss_slot] = st._loss_ct

    # -- slots and instructions ----------------------------------------------------------------

    def args_of(self, s: int, i: int, where: tuple[int, int, Action]) -> list[int]:
        st = self.st
        ex = self.execs[s]
        r = ex.rank
        out = []
        for p, want, aval in zip(ex.stage.params_needed, ex.param_shardings,
                                 ex.stage.param_avals, strict=True):  # fmt: skip
            if p < st.num_params:
                out.append(self.param_slot(s, r, p, want, len(aval.shape), where))
            else:
                bkey = (p - st.num_params, r, i)
                if bkey not in st.batch_slots:
                    st.batch_slots[bkey] = st._slot()
                out.append(st.batch_slots[bkey])
        return out

    def param_slot(
        self, s: int, r: int, p: int, want: Any, ndim: int, where: tuple[int, int, Action]
    ) -> int:
        """Parameter ``p``'s slot on rank ``r`` as stage ``s`` wants it laid out: the rank's
        own, or a copy resharded (once per step, before the stage's first use of it)."""
        st = self.st
        if (r, p) not in st.param_slots:
            st.param_slots[(r, p)] = st._slot()
        slot = st.param_slots[(r, p)]
        if want.is_equivalent_to(self.home[(r, p)], ndim):
            return slot
        if (s, p) not in self.resharded:
            self.resharded[(s, p)] = st._slot()
            put = functools.partial(_put, shardings=(want,))
            self.emit(put, [slot], [self.resharded[(s, p)]], where)
        return self.resharded[(s, p)]

    def slots(self, n: int) -> list[int]:
        return [self.st._slot() for _ in range(n)]

    def emit(
        self, fn: Any, ins: list[int], outs: list[int], where: tuple[int, int, Action]
    ) -> None:
        """``fn``: a callable, or (stage, kind) of a stage executable (resolved, compiled
        ahead of the first step, by :meth:`InstructionStream.prepare`)."""
        if isinstance(fn, tuple):
            self.st.kinds.add(fn)
        self.raw.append((fn, ins, outs, where))

    # -- transfers -----------------------------------------------------------------------------

    def deliver(self, r: int, items: list[_Item], where: Any) -> None:
        """Same rank -> the slot itself; other ranks -> one batched device_put into new slots."""
        copies = [it for it in items if it[3] != r]
        for key, src, slot, dst, _sh in items:
            if dst == r:
                self.box.setdefault(key, []).append((src, slot))
        if copies:
            outs = self.slots(len(copies))
            for (key, src, _slot, _dst, _sh), o in zip(copies, outs, strict=True):
                self.box.setdefault(key, []).append((src, o))
            put = functools.partial(_put, shardings=tuple(it[4] for it in copies))
            self.emit(put, [it[2] for it in copies], outs, where)

    def post(self, r: int, kind: str, s: int, i: int, items: list[_Item], where: Any) -> None:
        if (kind, s, i) in self.plan.send_points[r]:
            self.pending[(kind, s, i)] = items
        else:
            self.deliver(r, items, where)

    def inputs_ready(self, s: int, i: int) -> bool:
        if (s, i) in self.taken_in:
            return True
        return all(("F", s, j, i) in self.box for j in range(len(self.execs[s].stage.receives)))

    def take_inputs(self, s: int, i: int) -> list[int]:
        got = self.taken_in.pop((s, i), None)
        if got is not None:
            return got
        n = len(self.execs[s].stage.receives)
        return [self.box.pop(("F", s, j, i))[0][1] for j in range(n)]

    def cts_ready(self, s: int, i: int) -> bool:
        if (s, i) in self.taken_ct:
            return True
        exp = self.plan.expected_cts[s]
        return all(
            len(self.box.get(("B", s, k, i), ())) >= exp.get(k, 0)
            for k in self.execs[s].autodiff.diff_outputs
        )

    def take_cts(self, s: int, i: int, where: Any) -> list[int]:
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
            vals = [v for _, v in sorted(self.box.pop(("B", s, k, i), []))] if n else []
            if self.plan.loss == (s, k):
                vals.insert(0, self.loss_slot)
            if not vals:
                if (s, k) not in self.zeros:
                    z = self.zeros[(s, k)] = self.st._slot()
                    self.st.const[z] = (ex.stage.outputs[k], ex.output_shardings[k])
                vals = [self.zeros[(s, k)]]
            if len(vals) == 1:
                out.append(vals[0])
            else:
                o = self.st._slot()
                self.emit(_sum, vals, [o], where)
                out.append(o)
        return out

    def emit_outputs(self, r: int, s: int, i: int, outs: list[int], where: Any) -> None:
        ex = self.execs[s]
        for k, flat_k in ex.stage.program_outputs:
            self.st.output_slots[(flat_k, i)] = outs[k]
        items = []
        for send in ex.stage.sends:
            dst = self.execs[send.dst]
            key = ("F", send.dst, send.input, i)
            items.append((key, s, outs[send.output], dst.rank, dst.input_shardings[send.input]))
        self.post(r, "F", s, i, items, where)

    def emit_input_cts(self, r: int, s: int, i: int, cts: list[int], where: Any) -> None:
        ex = self.execs[s]
        items = []
        for j, g in zip(ex.autodiff.diff_inputs, cts, strict=True):
            rc = ex.stage.receives[j]
            src = self.execs[rc.src]
            key = ("B", rc.src, rc.output, i)
            items.append((key, s, g, src.rank, src.output_shardings[rc.output]))
        self.post(r, "B", s, i, items, where)

    # -- actions -------------------------------------------------------------------------------

    def advance(self, r: int, t: int, a: Action) -> bool:
        """Emit action ``a`` (position ``t`` of rank ``r``'s row); ``False`` when its data
        is not there yet (the dry run tries again later)."""
        s, k, i = a
        fused = (s, i) in self.plan.fused
        needs_in = k is Kind.RECV_F or (k is Kind.F and (s, i) not in self.taken_in)
        if needs_in and not self.inputs_ready(s, i):
            return False
        needs_ct = k is Kind.RECV_B or (k in (Kind.B, Kind.I) and not fused)
        if (needs_ct or (k is Kind.F and fused)) and self.train and not self.cts_ready(s, i):
            return False
        where = (r, t, a)
        if k is Kind.RECV_F:
            self.taken_in[(s, i)] = self.take_inputs(s, i)
        elif k is Kind.RECV_B:
            self.taken_ct[(s, i)] = self.take_cts(s, i, where)
        elif k is Kind.F:
            self.forward(r, s, i, where)
        elif (k is Kind.B and not fused) or (k is Kind.I and (s, i) in self.fuse_iw):
            self.backward(r, s, i, where)
        elif k is Kind.I:
            self.input_grad(r, s, i, where)
        elif k is Kind.W and (s, i) not in self.fuse_iw:
            acc = self.st.acc_slots[s]
            self.emit(
                (s, "W"), [*self.args_of(s, i, where), *self.wres.pop((s, i)), *acc], acc, where
            )
            self.live[r] -= 1
        elif k in (Kind.SEND_F, Kind.SEND_B):
            kind = "F" if k is Kind.SEND_F else "B"
            self.deliver(r, self.pending.pop((kind, s, i), []), where)
        # else: a B that ran inside the fused F+B, or a W that ran as a B at its I
        return True

    def forward(self, r: int, s: int, i: int, where: Any) -> None:
        ex = self.execs[s]
        O = len(ex.stage.outputs)
        ins = self.take_inputs(s, i)
        if not self.train:
            outs = self.slots(O)
            self.emit((s, "infer"), [*self.args_of(s, i, where), *ins], outs, where)
        elif (s, i) in self.plan.fused:
            cts = self.take_cts(s, i, where)
            GI = len(ex.autodiff.diff_inputs)
            acc = self.st.acc_slots[s]
            outs = self.slots(O + GI)
            self.emit(
                (s, "FB"), [*self.args_of(s, i, where), *ins, *cts, *acc], [*outs, *acc], where
            )
            self.peak[r] = max(self.peak[r], self.live[r] + 1)
            self.emit_outputs(r, s, i, outs[:O], where)
            self.emit_input_cts(r, s, i, outs[O:], where)
            return
        else:
            outs = self.slots(O)
            res = self.res[(s, i)] = self.slots(ex.autodiff.num_residuals)
            self.emit((s, "F"), [*self.args_of(s, i, where), *ins], [*outs, *res], where)
            self.st.activation_slots.setdefault(r, {})[(s, i)] = list(res)
            self.live[r] += 1
            self.peak[r] = max(self.peak[r], self.live[r])
        self.emit_outputs(r, s, i, outs, where)

    def backward(self, r: int, s: int, i: int, where: Any) -> None:
        cts = self.take_cts(s, i, where)
        acc = self.st.acc_slots[s]
        outs = self.slots(len(self.execs[s].autodiff.diff_inputs))
        ins = [*self.args_of(s, i, where), *self.res.pop((s, i)), *cts, *acc]
        self.emit((s, "B"), ins, [*outs, *acc], where)
        self.live[r] -= 1
        self.emit_input_cts(r, s, i, outs, where)

    def input_grad(self, r: int, s: int, i: int, where: Any) -> None:
        ex = self.execs[s]
        cts = self.take_cts(s, i, where)
        outs = self.slots(len(ex.autodiff.diff_inputs))
        wres = self.wres[(s, i)] = self.slots(len(ex.autodiff.w_residual_avals))
        self.st.activation_slots[r][(s, i)] += wres
        ins = [*self.args_of(s, i, where), *self.res.pop((s, i)), *cts]
        self.emit((s, "I"), ins, [*outs, *wres], where)
        self.emit_input_cts(r, s, i, outs, where)


def _fusable_iw(plan: StepPlan) -> set[tuple[int, int]]:
    """(stage, microbatch) whose I is directly followed (next compute action on its rank) by
    its W: they run as one B."""
    out: set[tuple[int, int]] = set()
    for row in plan.schedule.actions.values():
        comp = [a for a in row if a is not None and a.kind in _COMPUTE]
        for a, b in itertools.pairwise(comp):
            same = (a.stage, a.microbatch) == (b.stage, b.microbatch)
            if a.kind is Kind.I and b.kind is Kind.W and same:
                out.add((a.stage, a.microbatch))
    return out


def _put(*xs: Any, shardings: Sequence[Any]) -> Any:
    return jax.device_put(xs, tuple(shardings))
