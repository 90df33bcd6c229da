"""Zero bubble schedules (ZB-H1, ZB-H2): the backward split into I and W, the W's deferred to
fill the bubbles."""

from __future__ import annotations

from hlopipe.errors import ScheduleError
from hlopipe.schedules._gen_common import F, I, W, _check
from hlopipe.schedules._ir import Action, Kind, Schedule

# ---------------------------------------------------------------------------------------------
# Zero bubble (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"): the backward is split into
# I (gradient of the input, on the critical path) and W (gradient of the weights, which nothing
# downstream waits for). W's are deferred to fill the bubbles. The order is built by playing the
# pipeline forward in time with F = I = W = 1 and letting each free rank take the first of
#   F: the next forward of one of its stages whose input is there, if the rank holds fewer
#        than `alive` live microbatches (F done, W not) and fewer than `in_flight` waiting
#        for their I (F done, I not),
#   I: the next input-gradient backward whose inputs are there,
#   W: the oldest pending W,
# in the order `priority` gives; between stages of one rank, the later stage first (depth first
# for F, and the start of the backward chain for I). Because the order comes from a run that
# finished, it cannot deadlock under any costs.
# ---------------------------------------------------------------------------------------------

#: the orders in which a free rank looks for its next action: forwards first (ZB-H1's, the
#: least memory) or input gradients first (ZB-H2's, the shortest critical path)
Priority = tuple[Kind, Kind, Kind]
FORWARD_FIRST: Priority = (F, I, W)
INPUT_GRAD_FIRST: Priority = (I, F, W)


class _Play:
    """The pipeline played forward in time for :func:`_zero_bubble`: what ended when, each
    stage's next F and I, each rank's pending W's and live microbatches."""

    def __init__(
        self, p: int, m: int, placement: tuple[int, ...], alive: list[int], in_flight: list[int]
    ) -> None:
        n = len(placement)
        self.m, self.last, self.t = m, n - 1, 0
        self.local = {r: [s for s in reversed(range(n)) if placement[s] == r] for r in range(p)}
        self.end: dict[tuple[int, Kind, int], int] = {}
        self.next_f = dict.fromkeys(range(n), 0)
        self.next_i = dict.fromkeys(range(n), 0)
        self.pending_w: dict[int, list[Action]] = {r: [] for r in range(p)}
        self.alive = dict.fromkeys(range(p), 0)
        self.in_flight = dict.fromkeys(range(p), 0)
        self.alive_limit, self.in_flight_limit = alive, in_flight

    def done(self, key: tuple[int, Kind, int]) -> bool:
        e = self.end.get(key)
        return e is not None and e <= self.t

    def pick(self, r: int, kind: Kind) -> Action | None:
        """Rank ``r``'s next action of ``kind`` (F, I or W) that may start now."""
        if kind is F:
            if self.alive[r] >= self.alive_limit[r] or self.in_flight[r] >= self.in_flight_limit[r]:
                return None
            for s in self.local[r]:
                i = self.next_f[s]
                if i < self.m and (s == 0 or self.done((s - 1, F, i))):
                    return Action(s, F, i)
        elif kind is I:
            for s in self.local[r]:
                i = self.next_i[s]
                ready = s == self.last or self.done((s + 1, I, i))
                if i < self.m and self.done((s, F, i)) and ready:
                    return Action(s, I, i)
        elif kind is W:
            if self.pending_w[r]:
                return self.pending_w[r][0]  # its I ran on this rank in an earlier step
        else:  # pragma: no cover - the priorities name only F, I and W
            raise ValueError(f"zero bubble picks only F, I or W actions, not {kind}")
        return None

    def start(self, r: int, a: Action) -> None:
        """Rank ``r`` runs ``a`` from now for one step."""
        s, k, i = a.stage, a.kind, a.microbatch
        if k is F:
            self.next_f[s] += 1
            self.alive[r] += 1
            self.in_flight[r] += 1
        elif k is I:
            self.next_i[s] += 1
            self.in_flight[r] -= 1
            self.pending_w[r].append(Action(s, W, i))
        else:  # W
            self.pending_w[r].pop(0)
            self.alive[r] -= 1
        self.end[a] = self.t + 1


def _zero_bubble(
    name: str,
    p: int,
    m: int,
    placement: tuple[int, ...],
    alive_limit: list[int],
    in_flight_limit: list[int],
    priority: Priority,
) -> Schedule:
    play = _Play(p, m, placement, alive_limit, in_flight_limit)
    free = dict.fromkeys(range(p), 0)
    actions: dict[int, list[Action | None]] = {r: [] for r in range(p)}
    remaining = 3 * len(placement) * m
    while remaining:
        t = busy_until = play.t
        for r in range(p):
            if free[r] > t:
                busy_until = max(busy_until, free[r])
                continue
            choice = next((a for k in priority if (a := play.pick(r, k)) is not None), None)
            if choice is None:
                continue
            play.start(r, choice)
            free[r] = t + 1
            actions[r].append(choice)
            remaining -= 1
            busy_until = t + 1
        if busy_until == t and remaining:
            # Nothing started and nothing is running: the limits leave no way forward.
            raise ScheduleError(f"{name}: stuck with memory limits {alive_limit}")
        play.t += 1
    return Schedule(name, p, len(placement), m, placement, actions)


def zb_h1(num_ranks: int, num_microbatches: int, virtual_stages: int = 1) -> Schedule:
    """ZB-H1: zero bubble with 1F1B's memory (at most p live microbatches on a rank).

    1F1B's warm-up (rank r keeps at most p - r microbatches waiting for their I), with each
    rank's W's deferred, up to p live microbatches, to fill the cool-down. With F = I = W its
    idle time is a third of 1F1B's: (p - 1) F per rank.

    >>> sorted({str(a.kind) for a in zb_h1(2, 2).actions[0]})
    ['F', 'I', 'W']
    """
    p, m = num_ranks, num_microbatches
    _check("zb-h1", p, m, virtual_stages, (1,))
    return _zero_bubble(
        "zb-h1", p, m, tuple(range(p)), [p] * p, [p - r for r in range(p)], FORWARD_FIRST
    )


def zb_h2(num_ranks: int, num_microbatches: int, virtual_stages: int = 1) -> Schedule:
    """ZB-H2: zero bubble with up to 2p - 1 live microbatches on a rank.

    The larger budget lets each rank stay busy from its first action to its last once
    m >= 2p: the only idle time left is the start-up skew and its mirror at the end (see
    ``Timeline.span_bubble_fraction``), which a step that synchronises the optimizer keeps.

    >>> zb_h2(4, 8).num_stages
    4
    """
    p, m = num_ranks, num_microbatches
    _check("zb-h2", p, m, virtual_stages, (1,))
    return _zero_bubble(
        "zb-h2", p, m, tuple(range(p)), [2 * p - 1] * p, [2 * p] * p, INPUT_GRAD_FIRST
    )
