"""The partitioner is exact (brute force oracle) and honours the memory cap."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlopipe.errors import StageError
from hlopipe.stages import partition
from hlopipe.stages._partition import memory_slack


def _brute(compute, comm, k, memory=None, cap=None):
    n = len(compute)
    best = np.inf
    for cuts in itertools.combinations(range(1, n), k - 1):
        b = (0, *cuts, n)
        worst = 0.0
        for i, j in itertools.pairwise(b):
            if memory is not None and sum(memory[i:j]) > cap + memory_slack(memory):
                worst = np.inf
            worst = max(worst, sum(compute[i:j]) + (comm[i] if i > 0 else 0.0))
        best = min(best, worst)
    return best


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 13),
)
def test_matches_brute_force(data, n):
    k = data.draw(st.integers(1, n))
    floats = st.floats(0, 100, allow_nan=False, allow_infinity=False)
    compute = data.draw(st.lists(floats, min_size=n, max_size=n))
    comm = data.draw(st.lists(floats, min_size=n + 1, max_size=n + 1))
    use_mem = data.draw(st.booleans())
    memory = data.draw(st.lists(floats, min_size=n, max_size=n)) if use_mem else None
    cap = data.draw(st.floats(50, 400)) if use_mem else None
    expected = _brute(compute, comm, k, memory, cap)
    if not np.isfinite(expected):
        with pytest.raises(StageError, match="memory cap"):
            partition(compute, comm, k, memory=memory, memory_cap=cap)
        return
    got = partition(compute, comm, k, memory=memory, memory_cap=cap)
    assert np.isclose(got.bottleneck, expected, rtol=1e-9, atol=1e-9)
    assert len(got.bounds) == k + 1 and got.bounds[0] == 0 and got.bounds[-1] == n
    assert all(i < j for i, j in itertools.pairwise(got.bounds))
    assert np.isclose(max(got.stage_costs), got.bottleneck)


def test_a_stage_exactly_at_the_memory_cap_fits():
    # found by hypothesis: the last atom alone is exactly the cap, but the difference of prefix
    # sums that measures it rounds one unit in the last place above it
    memory = [0.0, 0.0, 0.0, 0.0, 1.3791203964647991, 55.55, 71.71894374920257]
    got = partition([0.0] * 7, [0.0] * 8, 2, memory=memory, memory_cap=71.71894374920257)
    assert got.bounds[-2] == 6
    with pytest.raises(StageError, match="memory cap"):
        partition([0.0] * 7, None, 2, memory=memory, memory_cap=71.7)


def test_small_cases():
    assert partition([1, 1, 1, 1], None, 2).bounds == (0, 2, 4)
    # an expensive cut moves the boundary
    assert partition([1, 1, 1, 1], [0, 0, 10, 0, 0], 2).bounds in {(0, 1, 4), (0, 3, 4)}
    with pytest.raises(StageError, match="at most 2 stages"):
        partition([1, 1], None, 3)
