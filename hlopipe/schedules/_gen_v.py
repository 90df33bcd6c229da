"""V-shaped placements (two stages per rank, the second on the way back): ZB-V and DualPipeV."""

from __future__ import annotations

from hlopipe.errors import ScheduleError
from hlopipe.schedules._gen_common import _SEARCH_LIMIT, B, F, I, W, _check, _choose
from hlopipe.schedules._gen_zero_bubble import FORWARD_FIRST, INPUT_GRAD_FIRST, _zero_bubble
from hlopipe.schedules._ir import Action, Kind, Overlap, Schedule


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
        for order in (FORWARD_FIRST, INPUT_GRAD_FIRST):
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
