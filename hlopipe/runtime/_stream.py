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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from hlopipe.runtime._executor import PipelineExecutionError, StepPlan, StepResult
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
        plan = self.plan
        execs = plan.execs
        sched = plan.schedule
        train = plan.train
        trash = self._slot()
        self._trash = trash
        # values in flight: mailbox key -> [(src stage, slot)]; pending sends per send point
        box: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
        pending: dict[tuple[str, int, int], list[tuple[tuple[Any, ...], int, int, int, Any]]] = {}
        res: dict[tuple[int, int], list[int]] = {}
        wres: dict[tuple[int, int], list[int]] = {}
        taken_in: dict[tuple[int, int], list[int]] = {}
        taken_ct: dict[tuple[int, int], list[int]] = {}
        zeros: dict[tuple[int, int], int] = {}
        live: Counter[int] = Counter()
        peak: Counter[int] = Counter()
        raw: list[tuple[Callable[..., Any], list[int], list[int], tuple[int, int, Action]]] = []

        if train:
            for ex in execs:
                self.acc_slots[ex.stage.index] = [self._slot() for _ in ex.acc_avals]
        loss_slot = -1
        if train and plan.loss is not None:
            loss_slot = self._slot()
            self.const[loss_slot] = self._loss_ct

        # A parameter's value on a rank has the sharding its first stage there uses
        # (PipelinePlan.param_sharding); a stage of that rank for which propagation chose
        # another layout reads a copy, resharded once per step before its first use.
        home: dict[tuple[int, int], Any] = {}
        for ex in execs:
            for p, sh in zip(ex.stage.params_needed, ex.param_shardings):
                if p < self.num_params:
                    home.setdefault((ex.rank, p), sh)
        resharded: dict[tuple[int, int], int] = {}

        def args_of(s: int, i: int, where: tuple[int, int, Action]) -> list[int]:
            ex = execs[s]
            r = ex.rank
            out = []
            for p, want, aval in zip(ex.stage.params_needed, ex.param_shardings,
                                     ex.stage.param_avals):  # fmt: skip
                if p < self.num_params:
                    key = (r, p)
                    if key not in self.param_slots:
                        self.param_slots[key] = self._slot()
                    slot = self.param_slots[key]
                    if not want.is_equivalent_to(home[key], len(aval.shape)):
                        if (s, p) not in resharded:
                            resharded[(s, p)] = self._slot()
                            put = functools.partial(_put, shardings=(want,))
                            emit(put, [slot], [resharded[(s, p)]], where)
                        slot = resharded[(s, p)]
                    out.append(slot)
                else:
                    bkey = (p - self.num_params, r, i)
                    if bkey not in self.batch_slots:
                        self.batch_slots[bkey] = self._slot()
                    out.append(self.batch_slots[bkey])
            return out

        def emit(fn: Any, ins: list[int], outs: list[int], where: tuple[int, int, Action]) -> None:
            """``fn``: a callable, or (stage, kind) of a stage executable (resolved, compiled
            ahead of the first step, by :meth:`prepare`)."""
            if isinstance(fn, tuple):
                self.kinds.add(fn)
            raw.append((fn, ins, outs, where))

        def deliver(r: int, items: list[Any], where: tuple[int, int, Action]) -> None:
            """Items (key, src stage, slot, dst rank, sharding): same rank -> the slot itself;
            other ranks -> one batched device_put into new slots."""
            copies = [it for it in items if it[3] != r]
            for key, src, slot, dst, _sh in items:
                if dst == r:
                    box.setdefault(key, []).append((src, slot))
            if copies:
                shardings = tuple(it[4] for it in copies)
                outs = [self._slot() for _ in copies]
                for (key, src, _slot, _dst, _sh), o in zip(copies, outs):
                    box.setdefault(key, []).append((src, o))
                emit(
                    functools.partial(_put, shardings=shardings),
                    [it[2] for it in copies],
                    outs,
                    where,
                )

        def post(r: int, kind: str, s: int, i: int, items: list[Any], where: Any) -> None:
            if (kind, s, i) in plan.send_points[r]:
                pending[(kind, s, i)] = items
            else:
                deliver(r, items, where)

        def inputs_ready(s: int, i: int) -> bool:
            if (s, i) in taken_in:
                return True
            n = len(execs[s].stage.receives)
            return all(("F", s, j, i) in box for j in range(n))

        def take_inputs(s: int, i: int) -> list[int]:
            got = taken_in.pop((s, i), None)
            if got is not None:
                return got
            n = len(execs[s].stage.receives)
            return [box.pop(("F", s, j, i))[0][1] for j in range(n)]

        def cts_ready(s: int, i: int) -> bool:
            if (s, i) in taken_ct:
                return True
            exp = plan.expected_cts[s]
            return all(
                len(box.get(("B", s, k, i), ())) >= exp.get(k, 0)
                for k in execs[s].autodiff.diff_outputs
            )

        def take_cts(r: int, s: int, i: int, where: Any) -> list[int]:
            got = taken_ct.pop((s, i), None)
            if got is not None:
                return got
            ex = execs[s]
            exp = plan.expected_cts[s]
            out = []
            for k in ex.autodiff.diff_outputs:
                n = exp.get(k, 0)
                vals = [v for _, v in sorted(box.pop(("B", s, k, i), []))] if n else []
                if plan.loss == (s, k):
                    vals.insert(0, loss_slot)
                if not vals:
                    if (s, k) not in zeros:
                        z = zeros[(s, k)] = self._slot()
                        aval = ex.stage.outputs[k]
                        self.const[z] = (aval, ex.output_shardings[k])
                    vals = [zeros[(s, k)]]
                if len(vals) == 1:
                    out.append(vals[0])
                else:
                    o = self._slot()
                    emit(_sum, vals, [o], where)
                    out.append(o)
            return out

        def emit_outputs(r: int, s: int, i: int, outs: list[int], where: Any) -> None:
            ex = execs[s]
            for k, flat_k in ex.stage.program_outputs:
                self.output_slots[(flat_k, i)] = outs[k]
            items = []
            for send in ex.stage.sends:
                dst = execs[send.dst]
                key = ("F", send.dst, send.input, i)
                items.append((key, s, outs[send.output], dst.rank, dst.input_shardings[send.input]))
            post(r, "F", s, i, items, where)

        def emit_input_cts(r: int, s: int, i: int, cts: list[int], where: Any) -> None:
            ex = execs[s]
            items = []
            for j, g in zip(ex.autodiff.diff_inputs, cts):
                rc = ex.stage.receives[j]
                src = execs[rc.src]
                key = ("B", rc.src, rc.output, i)
                items.append((key, s, g, src.rank, src.output_shardings[rc.output]))
            post(r, "B", s, i, items, where)

        rows = {
            r: [(t, a) for t, a in enumerate(row) if a is not None]
            for r, row in sched.actions.items()
        }
        # I(s, i) directly followed (next compute action on its rank) by W(s, i): one B.
        fuse_iw: set[tuple[int, int]] = set()
        if train:
            for row in rows.values():
                comp = [a for _, a in row if a.kind in _COMPUTE]
                for a, b in itertools.pairwise(comp):
                    if (
                        a.kind is Kind.I
                        and b.kind is Kind.W
                        and (a.stage, a.microbatch) == (b.stage, b.microbatch)
                    ):
                        fuse_iw.add((a.stage, a.microbatch))

        pos = dict.fromkeys(rows, 0)
        while True:
            progressed = False
            for r, row in rows.items():
                while pos[r] < len(row):
                    t, a = row[pos[r]]
                    s, k, i = a
                    where = (r, t, a)
                    needs_in = k is Kind.RECV_F or (k is Kind.F and (s, i) not in taken_in)
                    if needs_in and not inputs_ready(s, i):
                        break
                    needs_ct = k is Kind.RECV_B or (
                        k in (Kind.B, Kind.I) and (s, i) not in plan.fused
                    )
                    fused_f = k is Kind.F and (s, i) in plan.fused
                    if (needs_ct or fused_f) and train and not cts_ready(s, i):
                        break
                    ex = execs[s]
                    O = len(ex.stage.outputs)
                    if k is Kind.RECV_F:
                        taken_in[(s, i)] = take_inputs(s, i)
                    elif k is Kind.RECV_B:
                        taken_ct[(s, i)] = take_cts(r, s, i, where)
                    elif k is Kind.F and not train:
                        ins = take_inputs(s, i)
                        outs = [self._slot() for _ in range(O)]
                        emit((s, "infer"), [*args_of(s, i, where), *ins], outs, where)
                        emit_outputs(r, s, i, outs, where)
                    elif fused_f:
                        ins = take_inputs(s, i)
                        cts = take_cts(r, s, i, where)
                        GI = len(ex.autodiff.diff_inputs)
                        acc = self.acc_slots[s]
                        outs = [self._slot() for _ in range(O + GI)]
                        emit((s, "FB"), [*args_of(s, i, where), *ins, *cts, *acc], [*outs, *acc],
                             where)  # fmt: skip
                        peak[r] = max(peak[r], live[r] + 1)
                        emit_outputs(r, s, i, outs[:O], where)
                        emit_input_cts(r, s, i, outs[O:], where)
                    elif k is Kind.F:
                        ins = take_inputs(s, i)
                        R = ex.autodiff.num_residuals
                        outs = [self._slot() for _ in range(O)]
                        res[(s, i)] = [self._slot() for _ in range(R)]
                        emit((s, "F"), [*args_of(s, i, where), *ins], [*outs, *res[(s, i)]], where)
                        self.activation_slots.setdefault(r, {})[(s, i)] = list(res[(s, i)])
                        live[r] += 1
                        peak[r] = max(peak[r], live[r])
                        emit_outputs(r, s, i, outs, where)
                    elif k is Kind.B and (s, i) in plan.fused:
                        pass  # ran inside the fused forward
                    elif k is Kind.B or (k is Kind.I and (s, i) in fuse_iw):
                        cts = take_cts(r, s, i, where)
                        GI = len(ex.autodiff.diff_inputs)
                        acc = self.acc_slots[s]
                        outs = [self._slot() for _ in range(GI)]
                        emit((s, "B"), [*args_of(s, i, where), *res.pop((s, i)), *cts, *acc],
                             [*outs, *acc], where)  # fmt: skip
                        live[r] -= 1
                        emit_input_cts(r, s, i, outs, where)
                    elif k is Kind.I:
                        cts = take_cts(r, s, i, where)
                        GI = len(ex.autodiff.diff_inputs)
                        outs = [self._slot() for _ in range(GI)]
                        wres[(s, i)] = [self._slot() for _ in ex.autodiff.w_residual_avals]
                        self.activation_slots[r][(s, i)] += wres[(s, i)]
                        emit((s, "I"), [*args_of(s, i, where), *res.pop((s, i)), *cts],
                             [*outs, *wres[(s, i)]], where)  # fmt: skip
                        emit_input_cts(r, s, i, outs, where)
                    elif k is Kind.W and (s, i) in fuse_iw:
                        pass  # ran as a B at the I
                    elif k is Kind.W:
                        acc = self.acc_slots[s]
                        emit((s, "W"), [*args_of(s, i, where), *wres.pop((s, i)), *acc], acc, where)
                        live[r] -= 1
                    elif k is Kind.SEND_F:
                        deliver(r, pending.pop(("F", s, i), []), where)
                    elif k is Kind.SEND_B:
                        deliver(r, pending.pop(("B", s, i), []), where)
                    pos[r] += 1
                    progressed = True
            if all(pos[r] == len(row) for r, row in rows.items()):
                break
            if not progressed:
                raise Unorderable
        self.peak_live = {r: peak[r] for r in rows}
        self.instrs = self._with_frees(raw)

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
        for (fn, ins, outs, where), fr in zip(raw, frees):
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
                for k, v in zip(outs, got):
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
        for ins, (fn, ins_, outs, frees) in zip(self.instrs, self._prepared):
            got = fn(*[regs[k] for k in ins_])
            for k, v in zip(outs, got):
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


def _put(*xs: Any, shardings: Sequence[Any]) -> Any:
    return jax.device_put(xs, tuple(shardings))
