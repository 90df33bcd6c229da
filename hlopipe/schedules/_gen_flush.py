"""One stage per rank (or looped, for inference): GPipe (fill-drain), 1F1B and the forward-only
schedule."""

from __future__ import annotations

from hlopipe.schedules._gen_common import B, F, _check, _looped
from hlopipe.schedules._ir import Action, Schedule


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
