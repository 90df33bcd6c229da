"""Several stages per rank, looped: interleaved 1F1B (Megatron), interleaved zero bubble and
looped BFS; the interleaved ones pick among candidate orders by simulating them."""

from __future__ import annotations

from hlopipe.errors import ScheduleError
from hlopipe.schedules._gen_common import (
    _COST_MODELS,
    _SEARCH_LIMIT,
    B,
    F,
    I,
    W,
    _check,
    _choose,
    _looped,
    _measure,
)
from hlopipe.schedules._gen_zero_bubble import FORWARD_FIRST, INPUT_GRAD_FIRST, _zero_bubble
from hlopipe.schedules._ir import Action, Schedule


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
        for order in (FORWARD_FIRST, INPUT_GRAD_FIRST):
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
