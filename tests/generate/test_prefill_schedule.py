"""The prefill as each group's first step of the decode schedule: pipelined like the decode
steps (a later group's prefill on one stage while an earlier group's prefill or decode runs on
another), what the validator, simulator, lowering, text form and trace read; and the driver
issues exactly that order, with the tokens of the unsplit programs."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _host_waits import trap_host_waits

import hlopipe
from hlopipe import schedules
from hlopipe.generate import Generator, generate_unsplit
from hlopipe.marker import stage_boundary
from hlopipe.models import gpt_decode as gd
from hlopipe.schedules import Kind

CFG = gd.DecodeConfig(n_layers=3, max_len=16)
B, P, N = 2, 6, 6
CUTS = {2: (2,), 3: (1, 2)}


def _spans(timeline, stage, microbatch):
    """When the compute F of (stage, microbatch) runs in the simulated timeline."""
    for evs in timeline.events.values():
        for a, start, end in evs:
            if (a.kind, a.stage, a.microbatch) == (Kind.F, stage, microbatch):
                return start, end
    raise AssertionError(f"no F of stage {stage}, microbatch {microbatch}")


def _overlap(x, y):
    return max(x[0], y[0]) < min(x[1], y[1])


@pytest.mark.parametrize("S, G", [(2, 1), (2, 2), (2, 4), (3, 2), (3, 4)])
def test_prefill_is_each_groups_first_step_and_pipelined(S, G):
    sched = schedules.decode(S, G, 3, prefill=True)
    assert sched.prefill and sched.feedback_groups == G and sched.name == "decode+prefill"
    schedules.validate(sched)
    lowered = schedules.lower(sched)
    schedules.validate(lowered)
    assert schedules.Schedule.from_text(lowered.to_text()) == lowered  # prefill kept
    t = schedules.simulate(lowered, {"F": 1, "prefill": 3, "send": 0.25})
    # a prefill step costs its own cost, a decode step F's
    assert _spans(t, 0, 0)[1] - _spans(t, 0, 0)[0] == 3
    assert _spans(t, 0, G)[1] - _spans(t, 0, G)[0] == 1
    for g in range(G - 1):  # group g+1's prefill on stage s while group g's is on stage s+1
        for s in range(S - 1):
            assert _overlap(_spans(t, s, g + 1), _spans(t, s + 1, g)), (s, g)
    if G >= 2:  # group 0 decodes on the first stage while the last stage still prefills
        assert _spans(t, 0, G)[0] < _spans(t, S - 1, G - 1)[1]
    # the feedback of a group's prefill (its first token) feeds its first decode step
    recv = [a for a in lowered.actions[0] if a is not None and a.kind is Kind.RECV_F]
    assert [a.microbatch for a in recv][:G] == list(range(G, 2 * G))
    trace = schedules.to_chrome_trace(t)
    phases = {(e["args"]["group"], e["args"]["step"], e["args"]["phase"])
              for e in trace["traceEvents"] if e.get("ph") == "X" and e["cat"] == "F"}  # fmt: skip
    assert {(g, 0, "prefill") for g in range(G)} <= phases
    assert all(p == ("prefill" if s == 0 else "decode") for _, s, p in phases)


def test_without_prefill_nothing_changes():
    plain = schedules.decode(2, 2, 3)
    assert not plain.prefill and "prefill" not in plain.to_text()
    t = schedules.simulate(plain, {"F": 1, "prefill": 3})
    assert t.makespan == schedules.simulate(plain, {"F": 1}).makespan


@functools.cache
def _programs(S):
    params = gd.init(jax.random.key(3), CFG)
    dec = jax.jit(gd.decode_fn(CFG, stage_boundary, cuts=CUTS[S]), donate_argnums=1)
    ex = (params, gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))
    pre = jax.jit(gd.prefill_fn(CFG, stage_boundary, cuts=CUTS[S]))
    return (
        params,
        hlopipe.load(jax.export.export(dec)(*ex).serialize()),
        hlopipe.load(jax.export.export(pre)(params, jnp.zeros((B, P), jnp.int32)).serialize()),
    )


@functools.cache
def _reference():
    """The unsplit programs' tokens (the markers are identities: one oracle for every cut)."""
    params, dec, pre = _programs(2)
    prompts = np.asarray(gd.prompts(jax.random.key(5), 4, B, P, CFG))
    return prompts, generate_unsplit(dec, params, N, prefill=pre, prompts=prompts)[0]


@pytest.mark.parametrize("S", [2, 3])
def test_driver_issues_the_schedule_and_equals_the_unsplit_programs(S, monkeypatch):
    params, dec, pre = _programs(S)
    gen = Generator(dec, params, prefill=pre, groups=1)
    assert len(gen.plans) == S
    prompts, ref = _reference()
    assert len(np.unique(ref)) >= 8
    for G in (1, 2, 4):
        other = gen.with_groups(G)
        with monkeypatch.context() as m:  # start issues the prefills and waits for nothing
            waited = trap_host_waits(m)
            session = other.start(prompts[:G])
        assert waited == []
        np.testing.assert_array_equal(session.generate(N), ref[:G])
        assert session.metrics.time_to_first_token_s > 0
        # issued round robin (written out, not read from the schedule the driver follows):
        # step t of every group in turn, step 0 the prefill at the prompt's end, step t the
        # decode at position P + t - 1
        want = [
            ("prefill" if t == 0 else "decode", g, P + max(0, t - 1))
            for t in range(N)
            for g in range(G)
        ]
        assert session.issued == want
