"""The simulator: when each action of a schedule runs, given what each action costs."""

from __future__ import annotations

from dataclasses import dataclass, field

from hlopipe.errors import ScheduleError
from hlopipe.schedules import _costs as _c
from hlopipe.schedules import _engine
from hlopipe.schedules._costs import CostKey, GivenCosts, cost_key
from hlopipe.schedules._decode import is_prefill
from hlopipe.schedules._ir import COMPUTE_KINDS, Action, Kind, Schedule

DEFAULT_COSTS: dict[CostKey, float] = {_c.F: 1.0, _c.B: 2.0, _c.I: 1.0, _c.W: 1.0, _c.SEND: 0.0}


def resolve_costs(costs: GivenCosts | None) -> dict[CostKey, float]:
    """Fill in the costs not given, keeping B = I + W when two of the three are given.

    Keys (:class:`CostKey`, or the text it prints, which is parsed here): ``F``, ``B``, ``I``,
    ``W``, ``send``, ``F&B`` (an OVERLAP_F_B; by default the sum of its two parts),
    ``prefill`` (a decode schedule's prefill step; by default F's), and ``<kind>@<stage>``
    (say ``F@3``) for one stage's cost. Given only B, I = W = B / 2; given I and W,
    B = I + W; given B and one of I, W, the other is the rest of B. Defaults: F=1, B=2, I=1,
    W=1, send=0.

    >>> resolve_costs({"B": 3, "W": 1})[CostKey.parse("I")]
    2.0

    Raises:
      ScheduleError: a key that names no cost, or a value that is not a finite number >= 0.
    """
    given: dict[CostKey, float] = {}
    for key, value in (costs or {}).items():
        typed = cost_key(key)
        try:
            number = float(value)
        except (TypeError, ValueError) as e:
            raise ScheduleError(f"cost {typed}={value!r} is not a number") from e
        if not number >= 0 or number == float("inf"):
            raise ScheduleError(f"cost {typed}={value!r} must be a finite number >= 0")
        given[typed] = number
    out = dict(DEFAULT_COSTS)
    out.update(given)
    b, i, w = given.get(_c.B), given.get(_c.I), given.get(_c.W)
    if b is not None and i is None and w is None:
        out[_c.I] = out[_c.W] = b / 2
    elif b is not None and (i is None) != (w is None):
        rest = b - (i if i is not None else w)  # type: ignore[operator]
        if rest < 0:
            raise ScheduleError(f"costs: B={b} is smaller than I or W")
        out[_c.W if w is None else _c.I] = rest
    elif b is None and (i is not None or w is not None):
        out[_c.B] = out[_c.I] + out[_c.W]
    return out


def parse_costs(text: str) -> dict[CostKey, float]:
    """``"F=1,B=2,send=0.1"`` as a cost mapping (for the command line).

    >>> {str(k): v for k, v in parse_costs("F=1, B=2, F@3=1.5").items()}
    {'F': 1.0, 'B': 2.0, 'F@3': 1.5}

    Raises:
      ScheduleError: an item that is not ``KEY=NUMBER``, or a key that names no cost.
    """
    out: dict[CostKey, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise ScheduleError(f"costs: expected KEY=NUMBER, got {item.strip()!r}")
        try:
            out[CostKey.parse(key)] = float(value)
        except ValueError as e:
            raise ScheduleError(
                f"costs: {value.strip()!r} is not a number (in {item.strip()!r})"
            ) from e
    resolve_costs(out)  # reject bad values now
    return out


@dataclass
class Timeline:
    """What :func:`simulate` works out.

    Attributes:
      schedule: the schedule simulated.
      costs: the costs used, by :class:`CostKey` (see :func:`resolve_costs`).
      events: per rank, ``(action, start, end)`` in list order. Sends last no time; a receive
        spans from when its rank reaches it to when the data lands.
      makespan: the end of the last action (the schedule starts at 0).
      busy: per rank, the time spent in F, B, I and W.
      idle: per rank, ``makespan - busy``.
      peak_activations: per rank, the most (stage, microbatch) pairs alive at once: from the
        start of the F to the end of the B (or of the W when the backward is split). In a
        forward-only schedule an activation lives for its F only.
      unit: what a unit of time is: ``"cost units"`` when simulated, ``"ms"`` for a timeline
        a runtime measured (plots label their time axis with it).
      fused: the (stage, microbatch) pairs whose F and B ran as one executable (a measured
        timeline: the F's event spans both, the B's takes no time of its own); plots draw
        such an F as an FB. Empty when simulated.
    """

    schedule: Schedule
    costs: dict[CostKey, float]
    events: dict[int, list[tuple[Action, float, float]]]
    makespan: float
    busy: dict[int, float]
    idle: dict[int, float]
    peak_activations: dict[int, int] = field(default_factory=dict)
    unit: str = "cost units"
    fused: frozenset[tuple[int, int]] = frozenset()

    @property
    def bubble_fraction(self) -> float:
        """Idle share of the whole step: ``sum(idle) / (num_ranks * makespan)``.

        Every rank counts from 0 to the common makespan, as in a training step that ends with
        a synchronised optimizer step. With F = B = 1 and free transfers this is
        (p - 1) / (m + p - 1) for GPipe and 1F1B and (p - 1) / (v m + p - 1) for interleaved
        1F1B when p divides m.
        """
        if self.makespan == 0:
            return 0.0
        return sum(self.idle.values()) / (self.schedule.num_ranks * self.makespan)

    @property
    def span_bubble_fraction(self) -> float:
        """Idle share within each rank's own span (its first start to its last end).

        This leaves out the start-up skew (rank r cannot start before r forwards) and the
        tail, as when ranks do not wait for each other at the end of a step; it is the sense
        in which ZB-H2 is "zero bubble". ``sum(span idle) / sum(spans)``.
        """
        spans = idle = 0.0
        for r, evs in self.events.items():
            compute = [(s, e) for a, s, e in evs if a.kind in COMPUTE_KINDS]
            if not compute:
                continue
            span = compute[-1][1] - compute[0][0]
            spans += span
            idle += span - self.busy[r]
        return idle / spans if spans else 0.0


def simulate(
    schedule: Schedule,
    costs: GivenCosts | None = None,
) -> Timeline:
    """Simulate ``schedule`` and return its :class:`Timeline`.

    What it models: each rank runs its list in order, one action at a time (an OVERLAP_F_B is
    one action costing the ``F&B`` cost, by default the sum of its parts); an action starts
    when its rank is free and its inputs are there (F after the previous stage's F, B or I
    after the next stage's B or I and this stage's F, W after this stage's I); a transfer
    between ranks takes the ``send`` cost and overlaps with compute (sends do not block the
    sender; receives block the receiver). Costs are per kind, or per stage and kind
    (``"F@3"``) for unbalanced stages. Compute-only and lowered schedules give the same times.

    What it does not model: memory limits, transfers competing for links, launch overheads,
    variation between microbatches, the optimizer step. Idle slots (``None``) take no time.

    A schedule that cannot finish raises ScheduleError with the partial grid, each blocked
    rank marked ``<-- here``.

    >>> from hlopipe.schedules import get
    >>> t = simulate(get("1f1b", 4, 8), {"F": 1, "B": 1})
    >>> t.makespan, round(t.bubble_fraction, 4), t.peak_activations[0]
    (22.0, 0.2727, 4)
    """
    c = resolve_costs(costs)
    for key in c:
        if key.stage is not None and key.stage >= schedule.num_stages:
            raise ScheduleError(
                f"cost for stage {key.stage}, but the schedule has {schedule.num_stages}"
            )

    def duration(a: Action) -> float:
        if a.kind is Kind.OVERLAP_F_B:
            if _c.OVERLAP in c:
                return c[_c.OVERLAP]
            return sum(duration(part) for part in a.parts)
        if a.kind not in COMPUTE_KINDS:
            return 0.0
        own = c.get(CostKey(a.kind, a.stage), c[CostKey(a.kind)])
        if is_prefill(schedule, a.microbatch) and a.kind is Kind.F:  # a decode's prefill
            return c.get(CostKey(_c.CostKind.PREFILL, a.stage), c.get(_c.PREFILL, own))
        return own

    events = _engine.run(schedule, duration, c[_c.SEND])
    makespan = max((e for evs in events.values() for _, _, e in evs), default=0.0)
    busy = {
        r: sum(e - s for a, s, e in evs if a.kind in COMPUTE_KINDS) for r, evs in events.items()
    }
    idle = {r: makespan - b for r, b in busy.items()}
    return Timeline(schedule, c, events, makespan, busy, idle, _peaks(schedule, events))


def _peaks(
    schedule: Schedule, events: dict[int, list[tuple[Action, float, float]]]
) -> dict[int, int]:
    training = schedule.has_backward
    peaks: dict[int, int] = {}
    for r, evs in events.items():
        born: dict[tuple[int, int], float] = {}
        changes: list[tuple[float, int]] = []
        for action, s, e in evs:
            # An overlap's forward is born at its start, its backward frees at its end.
            for a in action.parts:
                key = (a.stage, a.microbatch)
                if a.kind is Kind.F:
                    born[key] = s
                    if not training:
                        changes += [(s, +1), (e, -1)]
                elif a.kind in (Kind.B, Kind.W):
                    changes += [(born[key], +1), (e, -1)]
        # At equal times a release comes before an allocation.
        changes.sort()
        live = peak = 0
        for _, delta in changes:
            live += delta
            peak = max(peak, live)
        peaks[r] = peak
    return peaks


def align(schedule: Schedule) -> Schedule:
    """The compute actions laid out in time: with every action one step, where each runs.

    Idle steps become ``None``, so the grid shows the bubbles as the papers draw them.

    >>> from hlopipe.schedules import get
    >>> [str(a) if a else "." for a in align(get("gpipe", 2, 1)).actions[0]]
    ['0F0', '.', '.', '0B0']
    """
    compute = schedule.compute_only()
    ones = {_c.F: 1.0, _c.B: 1.0, _c.I: 1.0, _c.W: 1.0, _c.SEND: 0.0, _c.OVERLAP: 1.0}
    events = simulate(compute, ones).events
    rows: dict[int, list[Action | None]] = {}
    for r, evs in events.items():
        row: list[Action | None] = []
        for a, s, _ in evs:
            row += [None] * (int(s) - len(row))
            row.append(a)
        rows[r] = row
    return compute.replace_actions(rows)
