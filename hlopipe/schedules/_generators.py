"""Schedule generators: pure functions of (ranks, microbatches, virtual stages).

Each returns a compute-only :class:`Schedule` (F, B, I, W; no sends, no idle slots); the order
of a rank's list is the schedule. :func:`~hlopipe.schedules.lower` adds the transfers and
:func:`~hlopipe.schedules.align` lays the lists out in time steps for display.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import Action, Kind, Schedule

F, B, I, W = Kind.F, Kind.B, Kind.I, Kind.W


def _check(name: str, p: int, m: int, v: int, allowed_v: tuple[int, ...] | None = None) -> None:
    for label, value in (("num_ranks", p), ("num_microbatches", m), ("virtual_stages", v)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ScheduleError(f"{name}: {label} must be a positive integer, got {value!r}")
    if allowed_v is not None and v not in allowed_v:
        if allowed_v == (1,):
            hint = "; for several stages per rank use interleaved-1f1b or looped-bfs"
        else:
            hint = ""
        raise ScheduleError(
            f"{name} supports virtual_stages={' or '.join(map(str, allowed_v))}, got {v}{hint}"
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


def interleaved_1f1b(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """Interleaved 1F1B (Megatron-LM): v looped stages per rank, 1F1B over (stage, microbatch).

    Rank r holds stages r, r + p, ..., and runs microbatches in groups of p through each of its
    stages in turn. The bubble shrinks by v: (p - 1) / (v m + p - 1) with F = B. When p does
    not divide m, the schedule is built for the next multiple of p and the missing microbatches
    are dropped: removing actions from a schedule that runs leaves one that runs (each rank
    keeps its order, and a microbatch only waits on itself), at the cost of some bubble.

    >>> interleaved_1f1b(2, 2, 2).stage_to_rank
    (0, 1, 0, 1)
    """
    p, m, v = num_ranks, num_microbatches, virtual_stages
    _check("interleaved-1f1b", p, m, v)
    padded = -(-m // p) * p
    groups = [range(g, g + p) for g in range(0, padded, p)]
    actions: dict[int, list[Action | None]] = {}
    for r in range(p):
        fwd = [Action(c * p + r, F, i) for g in groups for c in range(v) for i in g]
        bwd = [Action(c * p + r, B, i) for g in groups for c in reversed(range(v)) for i in g]
        total = len(fwd)
        # Rank r runs forwards until the first backward of its last stage can arrive: its
        # other stages' first group, (v - 1) p, and the round trip below it, 2 (p - r - 1).
        # With one stage per rank this is plain 1F1B's warm-up.
        if v == 1:
            warmup = min(total, p - r - 1)
        else:
            warmup = min(total, 2 * (p - r - 1) + (v - 1) * p)
        # 1. warm-up.
        row: list[Action | None] = list(fwd[:warmup])
        # 2. steady state: one forward, one backward.
        for i in range(total - warmup):
            row += [fwd[warmup + i], bwd[i]]
        # 3. cool-down.
        row += bwd[total - warmup :]
        actions[r] = [a for a in row if a is not None and a.microbatch < m]
    return Schedule("interleaved-1f1b", p, p * v, m, _looped(p, v), actions)


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
            raise ScheduleError(f"{name}: stuck with memory limits {alive_limit} (a bug)")
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


def zb_v(num_ranks: int, num_microbatches: int, virtual_stages: int = 2) -> Schedule:
    """ZB-V: two stages per rank in a V (rank r holds stages r and 2p - 1 - r), I/W split.

    The last stage sits on rank 0 next to the first, so the backward starts where the forward
    began. Memory budget: 2p live (stage, microbatch) pairs per rank, each half of a 1F1B
    stage's, so the same memory as 1F1B's rank 0.

    >>> zb_v(3, 3).stage_to_rank
    (0, 1, 2, 2, 1, 0)
    """
    p, m = num_ranks, num_microbatches
    _check("zb-v", p, m, virtual_stages, (2,))
    placement = tuple(s if s < p else 2 * p - 1 - s for s in range(2 * p))
    return _zero_bubble("zb-v", p, m, placement, [2 * p] * p, [2 * p] * p, "FIW")


Generator = Callable[..., Schedule]

GENERATORS: dict[str, Generator] = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved-1f1b": interleaved_1f1b,
    "looped-bfs": looped_bfs,
    "zb-h1": zb_h1,
    "zb-h2": zb_h2,
    "zb-v": zb_v,
    "inference": inference,
}

_ALIASES = {
    "filldrain": "gpipe",
    "pipedreamflush": "1f1b",
    "interleaved": "interleaved-1f1b",
    "megatron": "interleaved-1f1b",
    "bfs": "looped-bfs",
    "zerobubble": "zb-h1",
    "dualpipev": "zb-v",
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


def get(
    name: str,
    num_ranks: int,
    num_microbatches: int,
    virtual_stages: int | None = None,
) -> Schedule:
    """The schedule called ``name`` (case, ``-``, ``_`` and spaces ignored; aliases accepted).

    ``virtual_stages=None`` takes the generator's default (2 for interleaved-1f1b, looped-bfs
    and zb-v, else 1). An unknown name raises ScheduleError listing the valid ones.

    >>> get("Interleaved_1F1B", 4, 8, virtual_stages=2).num_stages
    8
    """
    canonical = _LOOKUP.get(_key(name)) if isinstance(name, str) else None
    if canonical is None:
        raise ScheduleError(
            f"unknown schedule {name!r}; valid names: {', '.join(GENERATORS)} "
            f"(also: {', '.join(sorted(_ALIASES))})"
        )
    generator = GENERATORS[canonical]
    if virtual_stages is None:
        return generator(num_ranks, num_microbatches)
    return generator(num_ranks, num_microbatches, virtual_stages)
