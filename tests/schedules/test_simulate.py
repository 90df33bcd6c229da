"""The simulator against closed forms, and its deadlock report."""

import pytest

from hlopipe.errors import ScheduleError
from hlopipe.schedules import Action, CostKey, CostKind, Kind, align, get, resolve_costs, simulate

UNIT = {"F": 1, "B": 1, "send": 0}
SPLIT = {"F": 1, "I": 1, "W": 1, "send": 0}  # a full B is I + W = 2


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 7, 8, 16, 32])
def test_gpipe_and_1f1b_bubble_closed_form(name, p, m):
    t = simulate(get(name, p, m), UNIT)
    assert t.makespan == 2 * (m + p - 1)
    assert t.bubble_fraction == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("v", [1, 2, 3])
def test_interleaved_bubble_closed_form(p, k, v):
    m = k * p
    t = simulate(get("interleaved-1f1b", p, m, v), UNIT)
    assert t.bubble_fraction == pytest.approx((p - 1) / (v * m + p - 1), abs=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("m", [2, 4, 8, 13, 32])
def test_peak_activations(p, m):
    assert simulate(get("gpipe", p, m)).peak_activations == dict.fromkeys(range(p), m)
    want = {r: min(p - r, m) for r in range(p)}
    assert simulate(get("1f1b", p, m)).peak_activations == want


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize("m", [1, 3, 4, 8, 13, 32])
def test_zb_h1_idles_a_third_of_1f1b_with_the_same_peak(p, m):
    one = simulate(get("1f1b", p, m), SPLIT)
    zb = simulate(get("zb-h1", p, m), SPLIT)
    if m >= p:
        assert sum(zb.idle.values()) <= sum(one.idle.values()) / 3 + 1e-9
        # (p - 1) F per rank, the least any schedule can idle: rank r starts r forwards late.
        assert sum(zb.idle.values()) == pytest.approx(p * (p - 1))
    assert zb.bubble_fraction < one.bubble_fraction or p == 1
    assert max(zb.peak_activations.values()) <= max(one.peak_activations.values())


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("extra", [0, 1, 5, 16])
def test_zb_h2_is_bubble_free_within_each_rank_once_m_is_2p(p, extra):
    m = 2 * p + extra
    t = simulate(get("zb-h2", p, m), SPLIT)
    assert t.span_bubble_fraction == pytest.approx(0.0, abs=1e-12)
    # What is left is start-up skew: exactly (p - 1) F per rank, the least possible.
    assert t.bubble_fraction == pytest.approx((p - 1) / (3 * m + p - 1))
    assert max(t.peak_activations.values()) <= 2 * p - 1


def test_zb_v_beats_zb_h1():
    for p, m in [(4, 8), (8, 16), (8, 32)]:
        v = simulate(get("zb-v", p, m), SPLIT)
        h1 = simulate(get("zb-h1", p, m), SPLIT)
        assert v.bubble_fraction < h1.bubble_fraction
        assert max(v.peak_activations.values()) <= 2 * p  # half-size activations, 1F1B memory


def test_costs_are_resolved_consistently():
    def text(costs):
        return {str(k): v for k, v in costs.items()}

    assert text(resolve_costs(None)) == {"F": 1, "B": 2, "I": 1, "W": 1, "send": 0}
    assert text(resolve_costs({"B": 3})) == {"F": 1, "B": 3, "I": 1.5, "W": 1.5, "send": 0}
    assert text(resolve_costs({"I": 2, "W": 0.5}))["B"] == 2.5
    assert text(resolve_costs({"B": 2, "W": 0.5}))["I"] == 1.5
    with pytest.raises(ScheduleError, match="unknown cost 'X'"):
        resolve_costs({"X": 1})
    with pytest.raises(ScheduleError, match="must be a finite number >= 0"):
        resolve_costs({"F": -1})


def test_per_stage_costs_slow_down_one_stage():
    s = get("1f1b", 4, 8)
    base = simulate(s, UNIT)
    slow = simulate(s, UNIT | {"F@2": 3, "B@2": 3})
    assert slow.busy[2] == base.busy[2] + 8 * 4
    assert slow.busy[1] == base.busy[1]
    assert slow.makespan > base.makespan
    with pytest.raises(ScheduleError, match="cost for stage 9"):
        simulate(s, {"F@9": 1})


def test_send_cost_delays_each_hop():
    t0 = simulate(get("gpipe", 4, 1), UNIT)
    t1 = simulate(get("gpipe", 4, 1), UNIT | {"send": 0.5})
    assert t1.makespan == t0.makespan + 6 * 0.5  # three hops forward, three back


def test_timeline_events_follow_the_lists():
    s = get("1f1b", 3, 4)
    t = simulate(s, UNIT)
    for r in range(3):
        assert [a for a, _, _ in t.events[r]] == s.actions[r]
        ends = [e for _, _, e in t.events[r]]
        starts = [st for _, st, _ in t.events[r]]
        assert all(e <= s2 for e, s2 in zip(ends[:-1], starts[1:], strict=True))
    assert t.idle[0] == t.makespan - t.busy[0]


def test_forward_only_peak_is_one():
    t = simulate(get("inference", 4, 8))
    assert t.peak_activations == dict.fromkeys(range(4), 1)
    assert t.makespan == 8 + 3


def test_deadlock_raises_with_the_partial_grid():
    s = get("gpipe", 2, 2)
    rows = {0: "0F0 0B0 0F1 0B1", 1: "1F1 1B1 1F0 1B0"}
    s = s.replace_actions({r: list(map(Action.parse, row.split(" "))) for r, row in rows.items()})
    with pytest.raises(ScheduleError) as e:
        simulate(s)
    text = str(e.value)
    assert "deadlock" in text.splitlines()[0]
    grid_rows = [ln for ln in text.splitlines() if ln.startswith("rank ") and "<-- here" in ln]
    # Each blocked rank is marked; everything after its blocked cell is cut.
    assert grid_rows[0].split() == ["rank", "0", "0F0", ">0B0<", "...", "<--", "here"]
    assert grid_rows[1].split() == ["rank", "1", ">1F1<", "...", "<--", "here"]


def test_align_shows_bubbles():
    rows = align(get("1f1b", 3, 3)).actions
    text = {r: " ".join(str(a) if a else "." for a in row) for r, row in rows.items()}
    assert text[0] == "0F0 0F1 0F2 . . 0B0 . 0B1 . 0B2"
    assert text[2] == ". . 2F0 2B0 2F1 2B1 2F2 2B2"


def test_cost_keys_print_as_typed_and_parse_back():
    texts = ["F", "B", "I", "W", "send", "F&B", "prefill", "F@0", "W@12", "prefill@3"]
    for text in texts:
        assert str(CostKey.parse(text)) == text
    assert CostKey.parse("B@2") == CostKey(Kind.B, 2)
    assert CostKey.parse("send") == CostKey(CostKind.SEND)
    for bad in ["send@1", "F&B@0", "F@", "F@-1", "SEND_F", "f", "X@1"]:
        with pytest.raises(ScheduleError, match=f"unknown cost {bad!r}"):
            CostKey.parse(bad)
    with pytest.raises(ScheduleError, match="no cost for kind RECV_F"):
        CostKey(Kind.RECV_F)
    with pytest.raises(ScheduleError, match="a stage is a number >= 0"):
        CostKey(CostKind.SEND, 1)
    # text and typed keys name the same cost
    s = get("1f1b", 2, 2)
    assert simulate(s, {"F@1": 5}).costs == simulate(s, {CostKey(Kind.F, 1): 5}).costs
