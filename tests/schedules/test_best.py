"""schedules.best: every name x virtual stages (x microbatch count), simulated; the fastest
that fits the memory limit."""

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import Search, best, get, rank_candidates, simulate
from hlopipe.schedules._auto import VIRTUAL_CHOICES, _scaled_costs


def test_it_is_the_fastest_that_fits_by_brute_force():
    costs = {"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0}
    for limit in (None, 4.0, 5.0):
        chosen = best(4, 8, costs, memory_limit=limit)
        # Brute force, independently of rank_candidates' bookkeeping.
        found = []
        for name, vs in VIRTUAL_CHOICES.items():
            for v in vs:
                try:
                    s = get(name, 4, 8, v)
                except ScheduleError:
                    continue
                t = simulate(s, {k: c / v for k, c in costs.items()})
                memory = max(t.peak_activations.values()) / v
                if limit is None or memory <= limit:
                    found.append((t.makespan, s))
        fastest = min(m for m, _ in found)
        t = simulate(chosen, {k: c * 4 / chosen.num_stages for k, c in costs.items()})
        assert t.makespan == pytest.approx(fastest)


def test_memory_limit_changes_the_answer():
    two = ["zb-h2", "1f1b"]
    assert best(4, 8, {"F": 1, "B": 2}, names=two).name == "zb-h2"  # faster, 7 activations
    assert best(4, 8, {"F": 1, "B": 2}, names=two, memory_limit=4).name == "1f1b"
    tight = rank_candidates(4, 8, {"F": 1, "B": 2}, memory_limit=4, names=two)
    assert [(c.name, c.fits) for c in tight] == [("1f1b", True), ("zb-h2", False)]


def test_microbatch_counts_are_searched_and_scaled():
    ranked = rank_candidates(4, 8, {"F": 1, "B": 2}, microbatch_counts=[4, 8, 16])
    assert {c.num_microbatches for c in ranked} == {4, 8, 16}
    # More, smaller microbatches shrink the bubble: 1F1B's step at m = 16 is shorter.
    f1b = {c.num_microbatches: c for c in ranked if c.name == "1f1b"}
    assert f1b[16].makespan < f1b[8].makespan < f1b[4].makespan
    # The same total work: m microbatches of 8/m the size.
    assert f1b[16].makespan == pytest.approx(
        simulate(get("1f1b", 4, 16), {"F": 0.5, "B": 1}).makespan
    )


def test_costs_are_scaled_per_stage_and_microbatch():
    scaled = _scaled_costs({"F": 2, "B": 4, "F@1": 6, "send": 1}, v=2, m=16, base_m=8)
    c = {str(k): v for k, v in scaled.items()}
    assert c["F"] == 0.5 and c["B"] == 1.0 and c["send"] == 0.5
    assert c["F@2"] == c["F@3"] == 1.5  # rank 1's share split in two stages


def test_nothing_fits_is_an_error():
    with pytest.raises(ScheduleError, match=r"no schedule fits memory_limit=0\.5: the least any"):
        best(4, 8, memory_limit=0.5)
    with pytest.raises(ScheduleError, match="memory_limit must be a positive number"):
        best(4, 8, memory_limit=0)
    with pytest.raises(ScheduleError, match="unknown training schedule 'inference'"):
        best(4, 8, names=["inference"])


def test_fixed_stages_use_measured_per_stage_costs():
    """A runtime's case: 8 stages already split, costs measured per stage (stage 7 slow)."""
    costs = {"F": 1.0, "B": 2.0, "F@7": 3.0, "B@7": 6.0}
    ranked = rank_candidates(4, 8, costs, num_stages=8)
    assert ranked and all(c.schedule.num_stages == 8 for c in ranked)
    assert {c.virtual_stages for c in ranked} == {2}
    top = ranked[0]
    assert top.makespan == pytest.approx(simulate(top.schedule, costs).makespan)
    assert best(4, 8, costs, num_stages=8) == top.schedule
    assert rank_candidates(4, 8, costs, num_stages=6) == []


def test_an_unknown_search_keyword_is_refused_by_name():
    """The keywords are Search's, checked at run time too (mypy checks them statically)."""
    for search in (best, rank_candidates):
        with pytest.raises(ScheduleError, match="unknown keyword 'memry_limit'; the keywords"):
            search(4, 8, memry_limit=4)  # type: ignore[call-arg]
    assert list(Search.__annotations__) == [
        "memory_limit", "microbatch_counts", "names", "num_stages"
    ]  # fmt: skip
