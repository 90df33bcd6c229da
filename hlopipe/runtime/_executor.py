"""The executor: one thread per rank walks that rank's lowered action list in order.

Compute actions call the stage's compiled executables; a SEND puts the values with
``jax.device_put`` onto the receiving rank's sharding and posts them into a :class:`Mailbox`
(it never blocks); a RECV blocks on the mailbox, with a timeout, so that a deadlock or a dead
rank becomes an error naming the rank, the step of its list and the action, never a hang.

Transfers follow the stages' ``Send``/``Receive`` records, not only stage s -> s + 1, so skip
connections work: the outputs of stage s for microbatch i are all delivered at ``SEND_F`` of
(s, i) on s's rank (or right after the F when the lowered schedule holds no such send, as at
the tip of a V where the next stage is on the same rank); a stage's F waits for every input it
receives. Cotangents flow back the same way, and the cotangents of one output coming from
several consumers are summed in stage order (deterministic).

This is the structure the multi-host runtime keeps: a process runs the threads of the ranks it
owns, and a transfer to a rank of another process becomes a collective instead of a mailbox
post.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hlopipe.errors import HlopipeError
from hlopipe.runtime._compile import StageExecutables
from hlopipe.runtime._placement import Placement
from hlopipe.schedules import Action, Kind, Schedule


class PipelineExecutionError(HlopipeError):
    """A pipeline step failed while running: an action raised, or a receive timed out."""


class _Aborted(Exception):
    """Another rank failed; this one stops quietly (the first error is the one reported)."""


class Mailbox:
    """Values in flight between ranks, keyed by (kind, stage, index, microbatch).

    ``put`` never blocks; ``take`` blocks until ``count`` values are there, the timeout runs
    out (``TimeoutError``) or another rank failed (``_Aborted``).
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._box: dict[Any, list[Any]] = defaultdict(list)
        self.error: BaseException | None = None

    def put(self, key: Any, value: Any) -> None:
        with self._cv:
            self._box[key].append(value)
            self._cv.notify_all()

    def take(self, key: Any, count: int, timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                if self.error is not None:
                    raise _Aborted
                got = self._box.get(key)
                if got is not None and len(got) >= count:
                    del self._box[key]
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._cv.wait(left)

    def fail(self, error: BaseException) -> None:
        with self._cv:
            if self.error is None:
                self.error = error
            self._cv.notify_all()

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(eq=False)
class StepPlan:
    """What a step needs that does not change between steps."""

    schedule: Schedule  # lowered
    execs: list[StageExecutables]
    placement: Placement
    train: bool
    loss: tuple[int, int] | None  # (stage, output index) of the scalar loss
    expected_cts: list[dict[int, int]]  # per stage: output -> number of cotangent senders
    send_points: dict[int, set[tuple[str, int, int]]] = field(default_factory=dict)
    # (stage, microbatch) whose F and B run as one fused executable: the stage gets no
    # cotangents from other stages (it holds the loss) and its B is the next compute action
    # after its F on its rank, so fusing changes no order and XLA keeps no residuals.
    fused: set[tuple[int, int]] = field(default_factory=set)

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
        points: dict[int, set[tuple[str, int, int]]] = {}
        for r, row in schedule.actions.items():
            points[r] = {
                ("F" if a.kind is Kind.SEND_F else "B", a.stage, a.microbatch)
                for a in row
                if a is not None and a.kind in (Kind.SEND_F, Kind.SEND_B)
            }
        fused: set[tuple[int, int]] = set()
        if train:
            for row in schedule.actions.values():
                compute = [
                    a for a in row if a is not None and a.kind in (Kind.F, Kind.B, Kind.I, Kind.W)
                ]
                for a, b in itertools.pairwise(compute):
                    if (
                        a.kind is Kind.F
                        and b.kind is Kind.B
                        and (a.stage, a.microbatch) == (b.stage, b.microbatch)
                        and not any(expected[a.stage].values())
                    ):
                        fused.add((a.stage, a.microbatch))
        return cls(schedule, execs, placement, train, loss, expected, points, fused)


def dry_run(
    actions: dict[int, list[Action | None]], advance: Callable[[int, int, Action], bool]
) -> dict[int, tuple[int, Action]]:
    """Walk every rank's lowered row round-robin, each as far as ``advance(rank, position,
    action)`` allows (it returns ``False`` when the action's data is not there yet), until
    every row is done or none can move. Returns ``{}`` when all finished, else where each
    unfinished rank is stuck (a deadlock in the schedule). The instruction stream and the
    cross-process transfer order are both built by this walk."""
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


@dataclass
class StepResult:
    events: dict[int, list[tuple[Action, float, float]]]  # ms from the start of the step
    outputs: dict[tuple[int, int], Any]  # (flat output, microbatch) -> value
    acc: list[list[Any]]  # per stage: accumulated gradients of its diff_params
    peak_live: dict[int, int]  # per rank: most residual sets alive at once
    wall_ms: float
    dispatch_ms: float  # summed over actions: time to issue them (before waiting on devices)


class StepRun:
    """One step (or one inference pass) over the plan's schedule."""

    def __init__(
        self,
        plan: StepPlan,
        stage_args: dict[tuple[int, int], list[Any]],
        acc: list[list[Any]],
        loss_ct: Any,
        *,
        timeout: float,
        sync: bool,
    ) -> None:
        self.plan = plan
        self.args = stage_args
        self.acc = acc
        self.loss_ct = loss_ct
        self.timeout = timeout
        self.sync = sync
        self.mailbox = Mailbox()
        self.outputs: dict[tuple[int, int], Any] = {}
        self._res: dict[tuple[int, int], list[Any]] = {}
        self._wres: dict[tuple[int, int], list[Any]] = {}
        self._inputs: dict[tuple[int, int], list[Any]] = {}
        self._cts: dict[tuple[int, int], list[Any]] = {}
        self._pending: dict[tuple[str, int, int], list[Any]] = {}
        self._zeros: dict[tuple[int, int], Any] = {}
        ranks = range(plan.schedule.num_ranks)
        self.events: dict[int, list[tuple[Action, float, float]]] = {r: [] for r in ranks}
        self._where: dict[int, str] = {r: "not started" for r in ranks}
        self._live = dict.fromkeys(ranks, 0)
        self._peak = dict.fromkeys(ranks, 0)
        self._dispatch = dict.fromkeys(ranks, 0.0)
        self._t0 = 0.0

    # -- driving -------------------------------------------------------------------------------

    def run(self) -> StepResult:
        ranks = [r for r, row in self.plan.schedule.actions.items() if row]
        self._t0 = time.perf_counter()
        if len(ranks) == 1:
            self._guarded(ranks[0])
        else:
            threads = self._rank_threads(ranks)
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return self._result()

    def _rank_threads(self, ranks: Sequence[int], daemon: bool = False) -> list[threading.Thread]:
        """One thread per rank running its row (not started)."""
        return [
            threading.Thread(
                target=self._guarded, args=(r,), name=f"hlopipe-rank-{r}", daemon=daemon
            )
            for r in ranks
        ]

    def _result(self) -> StepResult:
        """The step's result once every rank is done (raises the first rank's error)."""
        wall = (time.perf_counter() - self._t0) * 1e3
        if self.mailbox.error is not None:
            raise self.mailbox.error
        return StepResult(
            self.events,
            self.outputs,
            self.acc,
            dict(self._peak),
            wall,
            sum(self._dispatch.values()) * 1e3,
        )

    def _guarded(self, r: int) -> None:
        try:
            self._rank_loop(r)
        except _Aborted:
            pass
        except BaseException as e:
            self.mailbox.fail(e)

    def _rank_loop(self, r: int) -> None:
        t0 = self._t0
        for t, a in enumerate(self.plan.schedule.actions[r]):
            if a is None:
                continue
            if self.mailbox.failed:
                raise _Aborted
            self._where[r] = f"step {t} ({a})"
            start = time.perf_counter()
            try:
                self._do(r, t, a)
            except (_Aborted, PipelineExecutionError):
                raise
            except TimeoutError:
                raise PipelineExecutionError(self._timeout_message(r, t, a)) from None
            except Exception as e:
                raise PipelineExecutionError(
                    f"rank {r}, step {t}: {a.describe()} failed: {type(e).__name__}: {e}"
                ) from e
            end = time.perf_counter()
            self.events[r].append((a, (start - t0) * 1e3, (end - t0) * 1e3))
        self._where[r] = "finished"

    def _timeout_message(self, r: int, t: int, a: Action) -> str:
        others = "; ".join(f"rank {q} at {w}" for q, w in sorted(self._where.items()) if q != r)
        return (
            f"rank {r}, step {t}: {a.describe()} waited {self.timeout:g} s for its data and "
            f"none came (a deadlock in the schedule, or a rank that stopped); {others}"
        )

    def _do(self, r: int, t: int, a: Action) -> None:
        s, k, i = a
        if k is Kind.F:
            self._forward(r, s, i)
        elif k is Kind.B:
            self._backward(r, s, i, split=False)
        elif k is Kind.I:
            self._backward(r, s, i, split=True)
        elif k is Kind.W:
            self._weight(r, s, i)
        elif k is Kind.SEND_F or k is Kind.SEND_B:
            self._deliver(r, self._pending.pop(("F" if k is Kind.SEND_F else "B", s, i), []))
        elif k is Kind.RECV_F:
            self._inputs[(s, i)] = self._take_inputs(s, i)
        elif k is Kind.RECV_B:
            self._cts[(s, i)] = self._take_cts(s, i)

    # -- actions -------------------------------------------------------------------------------

    def _block(self, r: int, start: float, values: Sequence[Any]) -> None:
        self._dispatch[r] += time.perf_counter() - start
        if self.sync:
            jax.block_until_ready(values)

    def _forward(self, r: int, s: int, i: int) -> None:
        ex = self.plan.execs[s]
        inputs = self._inputs.pop((s, i), None)
        if inputs is None:
            inputs = self._take_inputs(s, i)
        start = time.perf_counter()
        args = self.args[(s, i)]
        O = len(ex.stage.outputs)
        if (s, i) in self.plan.fused:
            self._fused_forward_backward(r, s, i, inputs, start)
            return
        if self.plan.train:
            out = ex.get("F")(*args, *inputs)
            outs = out[:O]
            self._res[(s, i)] = list(out[O:])
            self._live[r] += 1
            self._peak[r] = max(self._peak[r], self._live[r])
        else:
            out = outs = ex.get("infer")(*args, *inputs)
            del self.args[(s, i)]
        self._block(r, start, out)
        self._emit_outputs(r, s, i, outs)

    def _fused_forward_backward(
        self, r: int, s: int, i: int, inputs: list[Any], start: float
    ) -> None:
        ex = self.plan.execs[s]
        fb = ex.autodiff
        O, GI = len(ex.stage.outputs), len(fb.diff_inputs)
        cts = self._take_cts(s, i)  # no other stage sends any: the loss cotangent and zeros
        out = ex.get("FB")(*self.args.pop((s, i)), *inputs, *cts, *self.acc[s])
        outs = out[:O]
        self.acc[s] = list(out[O + GI :])
        # One microbatch's activations are alive inside the fused executable.
        self._peak[r] = max(self._peak[r], self._live[r] + 1)
        self._block(r, start, out)
        self._emit_outputs(r, s, i, outs)
        self._emit_input_cts(r, s, i, out[O : O + GI])

    def _backward(self, r: int, s: int, i: int, *, split: bool) -> None:
        if (s, i) in self.plan.fused:
            return  # ran inside the fused forward
        ex = self.plan.execs[s]
        fb = ex.autodiff
        cts = self._cts.pop((s, i), None)
        if cts is None:
            cts = self._take_cts(s, i)
        start = time.perf_counter()
        args = self.args[(s, i)]
        res = self._res.pop((s, i))
        GI = len(fb.diff_inputs)
        if split:
            out = ex.get("I")(*args, *res, *cts)
            self._wres[(s, i)] = list(out[GI:])
        else:
            out = ex.get("B")(*args, *res, *cts, *self.acc[s])
            self.acc[s] = list(out[GI:])
            del self.args[(s, i)]
            self._live[r] -= 1
        del res, cts
        self._block(r, start, out)
        self._emit_input_cts(r, s, i, out[:GI])

    def _emit_outputs(self, r: int, s: int, i: int, outs: Sequence[Any]) -> None:
        """Record stage ``s``'s program outputs of microbatch ``i`` and post its sends."""
        ex = self.plan.execs[s]
        for k, flat_k in ex.stage.program_outputs:
            self.outputs[(flat_k, i)] = outs[k]
        items = []
        for send in ex.stage.sends:
            dst = self.plan.execs[send.dst]
            key = ("F", send.dst, send.input, i)
            items.append((key, s, outs[send.output], dst.rank, dst.input_shardings[send.input]))
        self._post(r, "F", s, i, items)

    def _emit_input_cts(self, r: int, s: int, i: int, cts: Sequence[Any]) -> None:
        """Post the cotangents of stage ``s``'s differentiable inputs to their producers."""
        ex = self.plan.execs[s]
        items = []
        for j, g in zip(ex.autodiff.diff_inputs, cts, strict=True):
            rc = ex.stage.receives[j]
            src = self.plan.execs[rc.src]
            key = ("B", rc.src, rc.output, i)
            items.append((key, s, g, src.rank, src.output_shardings[rc.output]))
        self._post(r, "B", s, i, items)

    def _weight(self, r: int, s: int, i: int) -> None:
        ex = self.plan.execs[s]
        start = time.perf_counter()
        wres = self._wres.pop((s, i))
        out = ex.get("W")(*self.args.pop((s, i)), *wres, *self.acc[s])
        del wres
        self.acc[s] = list(out)
        self._live[r] -= 1
        self._block(r, start, out)

    # -- transfers -----------------------------------------------------------------------------

    def _post(self, r: int, kind: str, s: int, i: int, items: list[Any]) -> None:
        if (kind, s, i) in self.plan.send_points[r]:
            self._pending[(kind, s, i)] = items
        else:
            self._deliver(r, items)

    def _deliver(self, r: int, items: list[Any]) -> None:
        start = time.perf_counter()
        moved = []
        for key, src, value, dst_rank, sharding in items:
            if dst_rank != r:
                value = jax.device_put(value, sharding)
                moved.append(value)
            self.mailbox.put(key, (src, value))
        self._block(r, start, moved)

    def _take_inputs(self, s: int, i: int) -> list[Any]:
        recvs = self.plan.execs[s].stage.receives
        return [self.mailbox.take(("F", s, j, i), 1, self.timeout)[0][1] for j in range(len(recvs))]

    def _take_cts(self, s: int, i: int) -> list[Any]:
        ex = self.plan.execs[s]
        expected = self.plan.expected_cts[s]
        cts = []
        for k in ex.autodiff.diff_outputs:
            n = expected.get(k, 0)
            got = self.mailbox.take(("B", s, k, i), n, self.timeout) if n else []
            vals = [v for _, v in sorted(got, key=lambda sv: sv[0])]
            if self.plan.loss == (s, k):
                vals.insert(0, self.loss_ct)
            if not vals:
                if (s, k) not in self._zeros:
                    aval = ex.stage.outputs[k]
                    self._zeros[(s, k)] = jax.device_put(
                        np.zeros(aval.shape, aval.dtype), ex.output_shardings[k]
                    )
                vals = [self._zeros[(s, k)]]
            cts.append(functools.reduce(lambda a, b: a + b, vals))
        return cts
