"""Schedule generators: pure functions of (ranks, microbatches, virtual stages).

Each returns a compute-only :class:`Schedule` (F, B, I, W; no sends, no idle slots); the order
of a rank's list is the schedule. :func:`~hlopipe.schedules.lower` adds the transfers and
:func:`~hlopipe.schedules.align` lays the lists out in time steps for display.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hlopipe.errors import Keyword, ScheduleError
from hlopipe.schedules._ir import Action, Kind, Overlap, Schedule

F, B, I, W = Kind.F, Kind.B, Kind.I, Kind.W


def _check(name: str, p: int, m: int, v: int, allowed_v: tuple[int, ...] | None = None) -> None:
    for label, value in (("num_ranks", p), ("num_microbatches", m), ("virtual_stages", v)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ScheduleError(
                f"{name}: ", Keyword(label), f" must be a positive integer, got {value!r}"
            )
    if allowed_v is not None and v not in allowed_v:
        if allowed_v == (1,):
            hint = "; for several stages per rank use interleaved-1f1b or looped-bfs"
        else:
            hint = ""
        raise ScheduleError(
            f"{name} supports ",
            Keyword("virtual_stages", " or ".join(map(str, allowed_v))),
            f", got {v}{hint}",
        )


def _looped(p: int, v: int) -> tuple[int, ...]:
    """Stage s on rank s mod p: rank r holds stages r, r + p, r + 2p, ..."""
    return tuple(s % p for s in range(p * v))


def gpipe(num_ranks: int, num_microbatches: int, virtual_stages: int = 1) -> Schedule:
    """GPipe (fill-drain): every forward, then every backward; one stage per rank.

    Peak live activations are ``num_microbatches`` on every rank.

    >>> [str(a) for a in gpipe(2, 2).actions[0]]
    ['0F0', '0F1', '0B0', '0B1']
    """
    p, m = num_ranks, num_microbatches
    _check("gpipe", p, m, virtual_stages, (1,))
    actions: dict[int, list[Action | None]] = {}
    for r in range(p):
        # 1. fill: all forwards.  2. drain: all backwards, in the same microbatch order.
        row: list[Action | None] = [Action(r, F, i) for i in range(m)]
        actions[r] = row + [Action(r, B, i) for i in range(m)]
    return Schedule("gpipe", p, p, m, tuple(range(p)), actions)


def one_f_one_b(num_ranks: int, num_microbatches: int, virtual_stages: int = 1) -> Schedule:
    """1F1B (PipeDream-flush): after a warm-up, each rank alternates one forward, one backward.

    Rank r keeps at most ``min(p - r, m)`` microbatches alive (GPipe keeps m).

    >>> [str(a) for a in one_f_one_b(2, 3).actions[0]]
    ['0F0', '0F1', '0B0', '0F2', '0B1', '0B2']
    """
    p, m = num_ranks, num_microbatches
    _check("1f1b", p, m, virtual_stages, (1,))
    actions: dict[int, list[Action | None]] = {}
    for r in range(p):
        warmup = min(p - r - 1, m)
        # 1. warm-up: forwards that fill the pipeline below this rank.
        row: list[Action | None] = [Action(r, F, i) for i in range(warmup)]
        # 2. steady state: one forward, one backward.
        for i in range(m - warmup):
            row += [Action(r, F, warmup + i), Action(r, B, i)]
        # 3. cool-down: the backwards left.
        row += [Action(r, B, i) for i in range(m - warmup, m)]
        actions[r] = row
    return Schedule("1f1b", p, p, m, tuple(range(p)), actions)


def _rounds(m: int, size: int) -> list[list[int]]:
    """Microbatches 0..m-1 in rounds of ``size`` (the last one shorter when size does not
    divide m)."""
    return [list(range(g, min(g + size, m))) for g in range(0, m, size)]


def _even_rounds(m: int, count: int) -> list[list[int]]:
    """Microbatches 0..m-1 in ``count`` rounds whose sizes differ by at most one (larger first)."""
    base, extra = divmod(m, count)
    out, start = [], 0
    for k in range(count):
        size = base + (k < extra)
        out.append(list(range(start, start + size)))
        start += size
    return out


def _interleaved_row(
    p: int,
    v: int,
    r: int,
    rounds: list[list[int]],
    warmup_factor: int,
    zero_bubble: bool,
    w_lag: int,
) -> list[Action | None]:
    """One rank's list of a looped (interleaved) schedule with v stages per rank.

    Forwards go round by round, each round through the rank's stages in order; backwards
    round by round, stages in reverse. Rank r runs ``(v - 1) * len(first round) +
    warmup_factor * (p - r - 1)`` forwards first (with one stage per rank, 1F1B's p - r - 1),
    then alternates one forward and one backward, then runs the backwards left. With
    ``zero_bubble`` a backward is an I, and the W of the k-th I follows the (k + w_lag)-th I
    (the rest at the end).
    """
    fwd = [Action(c * p + r, F, i) for g in rounds for c in range(v) for i in g]
    bk = I if zero_bubble else B
    bwd = [Action(c * p + r, bk, i) for g in rounds for c in reversed(range(v)) for i in g]
    total = len(fwd)
    if v == 1:
        warmup = min(total, p - r - 1)
    else:
        warmup = min(total, (v - 1) * len(rounds[0]) + warmup_factor * (p - r - 1))
    row: list[Action | None] = []
    done_b = 0

    def backward(a: Action) -> None:
        nonlocal done_b
        row.append(a)
        done_b += 1
        if zero_bubble and done_b > w_lag:
            w = bwd[done_b - 1 - w_lag]
            row.append(Action(w.stage, W, w.microbatch))

    # 1. warm-up.
    row += fwd[:warmup]
    # 2. steady state: one forward, one backward.
    for i in range(total - warmup):
        row.append(fwd[warmup + i])
        backward(bwd[i])
    # 3. cool-down: the backwards left, then the W's still owed.
    for a in bwd[total - warmup :]:
        backward(a)
    if zero_bubble:
        row += [Action(a.stage, W, a.microbatch) for a in bwd[max(0, done_b - w_lag) :]]
    return row


# The two cost models candidates are compared at: unit costs (F = I = W = 1, B = 2) and a
# backward twice the forward with a cheap weight gradient (F = 1, B = 2, I = 1.5, W = 0.5).
_COST_MODELS = ({"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0}, {"F": 1.0, "B": 2.0, "I": 1.5, "W": 0.5})
# Above this many (stage, microbatch) pairs a generator keeps its textbook rule rather than
# simulating alternatives (each costs a few simulations of the whole schedule).
_SEARCH_LIMIT = 4096


def _measure(s: Schedule) -> tuple[float, ...] | None:
    """Makespan at each cost model, then each rank's most live activations at any of them;
    None when the schedule deadlocks."""
    from hlopipe.schedules._simulate import simulate

    makespans = []
    peaks = [0] * s.num_ranks
    try:
        for costs in _COST_MODELS:
            t = simulate(s, costs)
            makespans.append(t.makespan)
            peaks = [max(peaks[r], t.peak_activations[r]) for r in range(s.num_ranks)]
    except ScheduleError:
        return None
    return (*makespans, *map(float, peaks))


def _choose(reference: Schedule, candidates: list[Schedule]) -> Schedule:
    """The reference (the textbook rule), or the candidate with the shortest step (summed over
    the cost models) among those that run and are no worse than it at every cost model and
    in peak memory. A reference that deadlocks (none of the shipped rules does) is replaced by
    the best candidate that runs."""
    n = len(_COST_MODELS)
    ref = _measure(reference)
    best, best_key = reference, (float("inf"), float("inf"))
    if ref is not None:
        best_key = (sum(ref[:n]), sum(ref[n:]))
    seen = {_key_of(reference)}
    for c in candidates:
        if _key_of(c) in seen:
            continue
        seen.add(_key_of(c))
        got = _measure(c)
        if got is None or (ref is not None and any(g > r for g, r in zip(got, ref, strict=True))):
            continue
        key = (sum(got[:n]), sum(got[n:]))
        if key < best_key:
            best, best_key = c, key
    if ref is None and best is reference:
        raise ScheduleError(f"{reference.name}: no candidate order runs (a bug)")
    return best


def _key_of(s: Schedule) -> tuple:
    return tuple(tuple(row) for row in s.actions.values())


def _interleaved(
    name: str, p: int, m: int, v: int, zero_bubble: bool, warmup_factor: int
) -> Schedule:
    def build(rounds: list[list[int]], factor: int, lag: int | None = None) -> Schedule:
        rows: dict[int, list[Action | None]] = {
            r: _interleaved_row(p, v, r, rounds, factor, zero_bubble, r if lag is None else lag)
            for r in range(p)
        }
        return Schedule(name, p, p * v, m, _looped(p, v), rows)

    # The textbook rule: max(1, m // p) rounds of equal size (Megatron-LM's and torch's, which
    # take only microbatch counts it divides evenly) else rounds of p, the last one shorter.
    count = max(1, m // p)
    reference_rounds = _even_rounds(m, count) if m % count == 0 else _rounds(m, p)
    reference = build(reference_rounds, warmup_factor)
    if (v == 1 and not zero_bubble) or p * v * m > _SEARCH_LIMIT:
        return reference
    # Other warm-ups, kept only where no worse at any cost model or in memory.
    candidates = []
    for rounds in {
        tuple(map(tuple, x)) for x in (_rounds(m, p), _even_rounds(m, count), _rounds(m, m))
    }:
        for factor in (1, 2):
            for lag in (None, 0) if zero_bubble else (None,):
                candidates.append(build([list(g) for g in rounds], factor, lag))
    if zero_bubble:
        # The greedy zero-bubble builder on the same looped placement, at the memory of the
        # textbook rule's busiest rank (in (stage, microbatch) pairs).
        ref = _measure(reference)
        budget = int(max(ref[len(_COST_MODELS) :])) if ref else v * p
        for order in ("FIW", "IFW"):
            try:
                greedy = _zero_bubble(name, p, m, _looped(p, v), [budget] * p, [budget] * p, order)
            except ScheduleError:
                continue
            candidates.append(greedy)
    return _choose(reference, candidates)


def interleaved_1f1b(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """Interleaved 1F1B (Megatron-LM): v looped stages per rank, 1F1B over (stage, microbatch).

    Rank r holds stages r, r + p, ..., and runs microbatches in rounds through each of its
    stages in turn: max(1, m // p) rounds of equal size when they divide m (as Megatron-LM and
    torch do), else rounds of p with a shorter last one. The bubble shrinks by v:
    (p - 1) / (v m + p - 1) with F = B when p divides m. Other round sizes and warm-ups are
    tried too, and one is kept only where its simulated step is no longer, at unit costs and at
    F = 1, B = 2, W = 0.5, and its peak memory no larger.

    >>> interleaved_1f1b(2, 2, 2).stage_to_rank
    (0, 1, 0, 1)
    """
    p, m, v = num_ranks, num_microbatches, virtual_stages
    _check("interleaved-1f1b", p, m, v)
    return _interleaved("interleaved-1f1b", p, m, v, zero_bubble=False, warmup_factor=2)


def interleaved_zb(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """Interleaved zero bubble: interleaved 1F1B with the backward split into I and W.

    The warm-up is one forward per rank below instead of two (the I is shorter than a B), and
    rank r runs the W of each I r backwards later, filling the cool-down with W's. Candidates
    from other round sizes, warm-ups and W delays, and from the greedy zero-bubble builder with
    the same placement, are kept only where they are no worse at both cost models and in
    memory.

    >>> interleaved_zb(2, 4).stage_to_rank, sorted({a.kind.value for a in interleaved_zb(2, 4).actions[0]})
    ((0, 1, 0, 1), ['F', 'I', 'W'])
    """  # noqa: E501
    p, m, v = num_ranks, num_microbatches, virtual_stages
    _check("interleaved-zb", p, m, v)
    return _interleaved("interleaved-zb", p, m, v, zero_bubble=True, warmup_factor=1)


def looped_bfs(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """Looped BFS (breadth-first pipelining): v looped stages per rank, GPipe over them.

    Each rank runs every microbatch through its first stage, then its next, and so on; then
    the backwards, last stage first. Peak live activations are v m per rank.

    >>> [str(a) for a in looped_bfs(2, 1, 2).actions[0]]
    ['0F0', '2F0', '2B0', '0B0']
    """
    p, m, v = num_ranks, num_microbatches, virtual_stages
    _check("looped-bfs", p, m, v)
    actions: dict[int, list[Action | None]] = {}
    for r in range(p):
        # 1. forwards, stage by stage.  2. backwards, last stage first.
        row: list[Action | None] = [Action(c * p + r, F, i) for c in range(v) for i in range(m)]
        row += [Action(c * p + r, B, i) for c in reversed(range(v)) for i in range(m)]
        actions[r] = row
    return Schedule("looped-bfs", p, p * v, m, _looped(p, v), actions)


def inference(num_ranks: int, num_microbatches: int, virtual_stages: int = 1) -> Schedule:
    """Forward only (serving): each rank runs its stages' forwards, looped placement for v > 1.

    A rank orders its forwards by (stage + microbatch, stage), the step at which each can start
    when every forward takes one step, so no rank waits on a later item of its own list.

    >>> [str(a) for a in inference(2, 2).actions[1]]
    ['1F0', '1F1']
    """
    p, m, v = num_ranks, num_microbatches, virtual_stages
    _check("inference", p, m, v)
    actions: dict[int, list[Action | None]] = {}
    for r in range(p):
        items = [(c * p + r, i) for c in range(v) for i in range(m)]
        items.sort(key=lambda si: (si[0] + si[1], si[0]))
        actions[r] = [Action(s, F, i) for s, i in items]
    return Schedule("inference", p, p * v, m, _looped(p, v), actions)


# ---------------------------------------------------------------------------------------------
# Zero bubble (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"): the backward is split into
# I (gradient of the input, on the critical path) and W (gradient of the weights, which nothing
# downstream waits for). W's are deferred to fill the bubbles. The order is built by playing the
# pipeline forward in time with F = I = W = 1 and letting each free rank take the first of
#   "F": the next forward of one of its stages whose input is there, if the rank holds fewer
#        than `alive` live microbatches (F done, W not) and fewer than `in_flight` waiting
#        for their I (F done, I not),
#   "I": the next input-gradient backward whose inputs are there,
#   "W": the oldest pending W,
# in the order `priority` gives; between stages of one rank, the later stage first (depth first
# for F, and the start of the backward chain for I). Because the order comes from a run that
# finished, it cannot deadlock under any costs.
# ---------------------------------------------------------------------------------------------


def _zero_bubble(
    name: str,
    p: int,
    m: int,
    placement: tuple[int, ...],
    alive_limit: list[int],
    in_flight_limit: list[int],
    priority: str,
) -> Schedule:
    num_stages = len(placement)
    last = num_stages - 1
    local = {r: [s for s in reversed(range(num_stages)) if placement[s] == r] for r in range(p)}
    end: dict[tuple[int, Kind, int], int] = {}
    next_f = dict.fromkeys(range(num_stages), 0)
    next_i = dict.fromkeys(range(num_stages), 0)
    pending_w: dict[int, list[Action]] = {r: [] for r in range(p)}
    alive = dict.fromkeys(range(p), 0)
    in_flight = dict.fromkeys(range(p), 0)
    free = dict.fromkeys(range(p), 0)
    actions: dict[int, list[Action | None]] = {r: [] for r in range(p)}
    remaining = 3 * num_stages * m
    t = 0

    def done_by(key: tuple[int, Kind, int], now: int) -> bool:
        e = end.get(key)
        return e is not None and e <= now

    def pick(r: int, kind: str) -> Action | None:
        if kind == "F":
            if alive[r] >= alive_limit[r] or in_flight[r] >= in_flight_limit[r]:
                return None
            for s in local[r]:
                i = next_f[s]
                if i < m and (s == 0 or done_by((s - 1, F, i), t)):
                    return Action(s, F, i)
        elif kind == "I":
            for s in local[r]:
                i = next_i[s]
                if i < m and done_by((s, F, i), t) and (s == last or done_by((s + 1, I, i), t)):
                    return Action(s, I, i)
        elif pending_w[r]:
            return pending_w[r][0]  # its I ran on this rank in an earlier step
        return None

    while remaining:
        busy_until = t
        for r in range(p):
            if free[r] > t:
                busy_until = max(busy_until, free[r])
                continue
            choice = next((a for k in priority if (a := pick(r, k)) is not None), None)
            if choice is None:
                continue
            s, k, i = choice
            if k is F:
                next_f[s] += 1
                alive[r] += 1
                in_flight[r] += 1
            elif k is I:
                next_i[s] += 1
                in_flight[r] -= 1
                pending_w[r].append(Action(s, W, i))
            else:
                pending_w[r].pop(0)
                alive[r] -= 1
            end[choice] = t + 1
            free[r] = t + 1
            actions[r].append(choice)
            remaining -= 1
            busy_until = t + 1
        if busy_until == t and remaining:
            # Nothing started and nothing is running: the limits leave no way forward.
            raise ScheduleError(f"{name}: stuck with memory limits {alive_limit}")
        t += 1
    return Schedule(name, p, num_stages, m, placement, actions)


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
    return _zero_bubble("zb-h1", p, m, tuple(range(p)), [p] * p, [p - r for r in range(p)], "FIW")


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
    return _zero_bubble("zb-h2", p, m, tuple(range(p)), [2 * p - 1] * p, [2 * p] * p, "IFW")


def _zb_v_row(p: int, m: int, r: int) -> list[Action | None]:
    """Rank r's list of ZB-V as the zero-bubble paper hand-builds it (its Figure 8).

    Built for n = max(2p - 1, m) microbatches, the ones past m then dropped (removing a
    microbatch from a schedule that runs leaves one that runs: each rank keeps its order and a
    microbatch only waits on itself).
    """
    n = max(2 * p - 1, m)
    down, up = r, 2 * p - 1 - r
    count = {(down, F): 0, (up, F): 0, (down, I): 0, (up, I): 0, (down, W): 0, (up, W): 0}
    row: list[Action | None] = []

    def add(stage: int, kind: Kind) -> None:
        row.append(Action(stage, kind, count[stage, kind]))
        count[stage, kind] += 1

    def forward_then_whole_backward(stage: int) -> None:
        add(stage, F)
        add(stage, I)
        add(stage, W)

    # 1. warm-up: forwards of the down stage, enough to reach the tip of the V and back here.
    for _ in range(2 * (p - r) - 1):
        add(down, F)
    # 2. both stages' forwards, alternating.
    for _ in range(r):
        add(up, F)
        add(down, F)
    # 3. the up stage's first backwards, each whole (I then W) right after its forward.
    for _ in range(p - r):
        forward_then_whole_backward(up)
    # 4. steady state: F I W on the down stage (its F while microbatches remain), then on the
    # up stage.
    while count[down, F] < n or count[up, F] < count[down, F]:
        if count[down, F] < n:
            add(down, F)
        add(down, I)
        add(down, W)
        forward_then_whole_backward(up)
    # 5. cool-down: input gradients first (they are on the critical path), W's deferred...
    for _ in range(r):
        add(down, I)
        add(up, I)
    # 6. ...then the down stage's last I's, each followed by an owed W of that stage...
    for _ in range(p - r):
        add(down, I)
        add(down, W)
    # 7. ...and the W's still owed.
    for stage in (up, down):
        while count[stage, W] < count[stage, I]:
            add(stage, W)
    return [a for a in row if a is not None and a.microbatch < m]


def zb_v(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """ZB-V: two stages per rank in a V (rank r holds stages r and 2p - 1 - r), I/W split.

    The last stage sits on rank 0 next to the first, so the backward starts where the forward
    began. The order is the zero-bubble paper's hand-built one (as torch's ZBVZeroBubble);
    orders from the greedy zero-bubble builder (2p live (stage, microbatch) pairs per rank,
    each half of a 1F1B stage's, so 1F1B's rank-0 memory) replace it only where they are no
    worse at both cost models and in any rank's memory.

    >>> zb_v(3, 3).stage_to_rank
    (0, 1, 2, 2, 1, 0)
    """
    p, m = num_ranks, num_microbatches
    _check("zb-v", p, m, virtual_stages, (2,))
    placement = _v_placement(p)
    reference = Schedule("zb-v", p, 2 * p, m, placement, {r: _zb_v_row(p, m, r) for r in range(p)})
    if 2 * p * m > _SEARCH_LIMIT:
        return reference
    candidates = []
    for limit in (2 * p, 2 * p - 1):
        for order in ("FIW", "IFW"):
            try:
                candidates.append(
                    _zero_bubble("zb-v", p, m, placement, [limit] * p, [limit] * p, order)
                )
            except ScheduleError:
                continue  # the greedy builder finds no way forward under this budget
    return _choose(reference, candidates)


def _v_placement(p: int) -> tuple[int, ...]:
    """Two stages per rank in a V: rank r holds stages r and 2p - 1 - r."""
    return tuple(s if s < p else 2 * p - 1 - s for s in range(2 * p))


def _dualpipev_row(p: int, m: int, r: int) -> list[Action | None]:
    """Rank r's list of :func:`dualpipev`."""
    down, up = r, 2 * p - 1 - r  # the rank's stage on the way down the V, and back up
    n_f = {down: 0, up: 0}
    n_b = {down: 0, up: 0}
    owed_w: list[Action] = []
    row: list[Action | None] = []

    def fwd(stage: int) -> Action:
        n_f[stage] += 1
        return Action(stage, F, n_f[stage] - 1)

    def bwd(stage: int, split: bool) -> Action:
        n_b[stage] += 1
        a = Action(stage, I if split else B, n_b[stage] - 1)
        if split:
            owed_w.append(Action(stage, W, a.microbatch))
        return a

    def pay_w() -> None:
        if owed_w:
            row.append(owed_w.pop(0))

    # 1. warm-up, down stage only: fill the ranks below.
    row += [fwd(down) for _ in range(2 * (p - r - 1))]
    # 2. both stages, one forward each.
    for _ in range(r + 1):
        row += [fwd(down), fwd(up)]
    # 3. the first backwards of the up stage, split so that their W's fill the wait.
    for _ in range(p - r - 1):
        row.append(bwd(up, split=True))
        pay_w()
        row.append(fwd(up))
    # 4. steady state: down's F with up's B, then up's F with down's B, as overlaps (the
    #    last rank's first pair is left apart: its B is on the critical path).
    for k in range(m - 2 * p + r + 1):
        if k == 0 and r == p - 1:
            row += [fwd(down), bwd(up, split=False)]
        else:
            row.append(Overlap(fwd(down), bwd(up, split=False)))
        row.append(Overlap(fwd(up), bwd(down, split=False)))
    # 5. the down stage's forwards are done: up's B, then up's F with down's B.
    for _ in range(p - r - 1):
        row.append(bwd(up, split=False))
        row.append(Overlap(fwd(up), bwd(down, split=False)))
    # 6. backwards of both stages; from the middle on, split, so W's can fill the tail.
    n = r + 1
    first_split = 2 * (n // 2) + (0 if r % 2 else 1)
    for j in range(2 * n):
        row.append(bwd(up if j % 2 == 0 else down, split=j >= first_split))
    # 7. down's last backwards, split, each after an owed W.
    for _ in range(p - r - 1):
        pay_w()
        row.append(bwd(down, split=True))
    # 8. the W's left.
    while owed_w:
        pay_w()
    return row


def dualpipev(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """DualPipeV (DeepSeek-V3's DualPipe folded into a V): F&B overlap, half the devices' memory.

    Stages in a V as in ZB-V (rank r holds stages r and 2p - 1 - r). In the steady state each
    rank runs OVERLAP_F_B actions: the forward of one of its stages together with the backward
    of its other stage, so one's compute can hide the other's transfers (on a runtime that
    fuses them; :func:`~hlopipe.schedules.split_overlaps` runs them one after the other
    elsewhere). Zero-bubble I/W splitting fills the start and the end. Needs at least 2p
    microbatches. Bubble (p - 1)(F&B + B - 3W) at the steady state's costs, as DeepSeek gives.

    >>> s = dualpipev(2, 4)
    >>> s.stage_to_rank, str(s.actions[0][7])
    ((0, 1, 1, 0), '(0F3;3B1)OVERLAP_F_B')
    """
    p, m = num_ranks, num_microbatches
    _check("dualpipev", p, m, virtual_stages, (2,))
    if m < 2 * p:
        raise ScheduleError(
            f"dualpipev needs at least 2 * num_ranks = {2 * p} microbatches, got {m}; "
            "use zb-v for fewer"
        )
    actions = {r: _dualpipev_row(p, m, r) for r in range(p)}
    return Schedule("dualpipev", p, 2 * p, m, _v_placement(p), actions)


Generator = Callable[..., Schedule]

GENERATORS: dict[str, Generator] = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved-1f1b": interleaved_1f1b,
    "looped-bfs": looped_bfs,
    "zb-h1": zb_h1,
    "zb-h2": zb_h2,
    "zb-v": zb_v,
    "interleaved-zb": interleaved_zb,
    "dualpipev": dualpipev,
    "inference": inference,
}

_ALIASES = {
    "filldrain": "gpipe",
    "pipedreamflush": "1f1b",
    "interleaved": "interleaved-1f1b",
    "megatron": "interleaved-1f1b",
    "bfs": "looped-bfs",
    "zerobubble": "zb-h1",
    # torch.distributed.pipelining's class names, Schedule<Name>
    "zbvzerobubble": "zb-v",
    "interleavedzerobubble": "interleaved-zb",
    "forward": "inference",
    "forwardonly": "inference",
}


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


_LOOKUP = {_key(n): n for n in GENERATORS} | _ALIASES


def names() -> list[str]:
    """The canonical names :func:`get` knows.

    >>> "1f1b" in names()
    True
    """
    return list(GENERATORS)


def canonical_name(name: str) -> str:
    """The generator name ``name`` stands for (case, ``-``, ``_``, spaces and aliases as in
    :func:`get`); ScheduleError listing the valid names if none.

    >>> canonical_name("ZBVZeroBubble")
    'zb-v'
    """
    canonical = _LOOKUP.get(_key(name)) if isinstance(name, str) else None
    if canonical is None:
        raise ScheduleError(
            f"unknown schedule {name!r}; valid names: {', '.join(GENERATORS)} "
            f"(also: {', '.join(sorted(_ALIASES))})"
        )
    return canonical


def default_virtual_stages(name: str) -> int:
    """The stages per rank ``get(name, ...)`` makes when not told (no schedule built, so no
    size is refused: dualpipev needs 2p microbatches, but its default is still 2).

    >>> default_virtual_stages("dualpipev"), default_virtual_stages("1f1b")
    (2, 1)
    """
    import inspect

    default = inspect.signature(GENERATORS[canonical_name(name)]).parameters["virtual_stages"]
    return int(default.default)


def get(
    name: str,
    num_ranks: int,
    num_microbatches: int,
    virtual_stages: int | None = None,
) -> Schedule:
    """The schedule called ``name`` (case, ``-``, ``_`` and spaces ignored; aliases accepted).

    ``virtual_stages=None`` takes the generator's default (2 for interleaved-1f1b,
    interleaved-zb, looped-bfs, zb-v and dualpipev, else 1). A name gives the schedule it
    names, never another one. An unknown name raises ScheduleError listing the valid ones.

    >>> get("Interleaved_1F1B", 4, 8, virtual_stages=2).num_stages
    8
    """
    generator = GENERATORS[canonical_name(name)]
    if virtual_stages is None:
        return generator(num_ranks, num_microbatches)
    return generator(num_ranks, num_microbatches, virtual_stages)
