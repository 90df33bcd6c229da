"""Looped BFS and ZB-V against makespans derived on paper, not by the simulator.

Costs are per action of one stage (``F``, ``B`` = ``I`` + ``W``), transfers free.

Looped BFS (breadth-first, Lamy-Poirier 2022), p ranks, v stages per rank (stage c*p + r on
rank r), m >= p microbatches. Every rank runs all forwards of its chunk 0, then of chunk 1, ...
then the backwards in reverse. Rank r's first forward waits r*F for its input; after that the
forwards stream without a gap: rank 0 would start chunk c+1 at (c+1)*m*F, after its m
forwards of each earlier chunk, and its input, stage c*p + p - 1's microbatch 0, is there at
(c*m + p)*F <= (c+1)*m*F because m >= p; each later microbatch follows F behind. So the last
stage's last forward ends at (v*m + p - 1) * F; the backwards mirror that, (v*m + p - 1) * B.
Makespan (v*m + p - 1) * (F + B): a bubble of (p - 1)(F + B) per rank, v times smaller than
GPipe's relative to the work.

ZB-V (Qi et al. 2024), p ranks, 2p stages placed in a V (rank r holds stages r and 2p-1-r),
backward split into I and W. Lower bound for any schedule with this placement: rank p-1 holds
stages p-1 and p, so its first action (stage p-1's first forward) waits for p-1 forwards, and it
must do 2m(F + I + W) of work: makespan >= (p-1)F + 2m(F+I+W). With F = I = W the paper's
schedule reaches it (no bubble but the unavoidable warm-up). Upper bound: never slower than
1F1B on the same ranks with each rank's two stages as one, (m + p - 1) * 2(F + I + W).
"""

from __future__ import annotations

import itertools

import pytest

from hlopipe.schedules import get, simulate

BFS_CASES = [
    (p, v, m, f, b)
    for p, v in itertools.product((2, 3, 4), (1, 2, 3))
    for m in (p, p + 1, 2 * p + 1)
    for f, b in ((1.0, 2.0), (1.0, 1.0), (2.0, 3.0))
]


@pytest.mark.parametrize(("p", "v", "m", "f", "b"), BFS_CASES)
def test_looped_bfs_makespan_is_the_closed_form(p, v, m, f, b):
    t = simulate(get("looped-bfs", p, m, v), {"F": f, "B": b})
    assert t.makespan == pytest.approx((v * m + p - 1) * (f + b))


ZBV_CASES = [
    (p, m, f, i, w)
    for p in (2, 3, 4, 6)
    for m in (2 * p, 2 * p + 1, 4 * p)
    for f, i, w in ((1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (2.0, 3.0, 1.0), (1.0, 1.0, 2.0))
]


@pytest.mark.parametrize(("p", "m", "f", "i", "w"), ZBV_CASES)
def test_zb_v_between_its_lower_bound_and_1f1b(p, m, f, i, w):
    t = simulate(get("zb-v", p, m), {"F": f, "I": i, "W": w})
    lower = (p - 1) * f + 2 * m * (f + i + w)
    upper = (m + p - 1) * 2 * (f + i + w)
    assert lower - 1e-9 <= t.makespan <= upper + 1e-9
    if f == i == w:
        assert t.makespan == pytest.approx(lower)  # the warm-up is the only bubble
