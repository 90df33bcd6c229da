"""The serving scheduler on its own (no generator, no thread): requests arrive and leave, and
each plan it returns and what it tells the requests are checked against expectations worked
by hand from the policies' definitions (``hlopipe/serve/_scheduler.py``'s docstring): a row
admits the next waiting sequence (a position per sequence), a group whose rows are all free
admits up to ``batch`` sequences of the first waiting one's prompt length (one position a
group), a prompt of a prefill's length goes through it, a sequence whose client left is freed
at the next update without a token."""

from __future__ import annotations

import numpy as np

from hlopipe.serve._output import FinishReason
from hlopipe.serve._scheduler import (
    PREFILLED,
    Counts,
    Emit,
    Feed,
    Move,
    Policy,
    Prefill,
    Request,
    SamplingParams,
    Scheduler,
    Sequence,
    Start,
    StepPlan,
    StepResult,
)

LENGTH, CANCELLED = FinishReason.LENGTH, FinishReason.CANCELLED


def _request(prompt, max_tokens, **kw) -> Request:
    return Request([Sequence(prompt, max_tokens, **kw)], lambda *a: None)


def _end(r: Request) -> Emit:
    return Emit(r, -1, None, None)


def test_rows_each_row_admits_the_next_sequence_and_frees_on_its_end():
    """One group of 2 rows, a prefill of 4 tokens, no padding (a step returning tokens)."""
    s = Scheduler(Policy.ROWS, groups=1, batch=2, prefill_lens=(4,))
    a, b = _request([1, 2, 3, 4], 2), _request([5, 6], 1)
    s.add(a)
    s.add(b)
    # a's prompt has the prefill's length: prefilled into row 0 alone, and in the same turn
    # row 0 reads the prefill's token at the prompt's end, row 1 b's first token
    plan = s.schedule()
    want = Feed(0, (PREFILLED, 5), (4, 0))
    assert plan == StepPlan(prefills=(Prefill(0, (0,), ((1, 2, 3, 4),)),), feeds=(want,),
                            steps=(0,))  # fmt: skip
    told = s.update(plan, StepResult(prefilled=((10,),), tokens={0: (11, 99)}))  # b's 99: on
    assert told == [Emit(a, 0, 10, None), Emit(a, 0, 11, LENGTH), _end(a)]  # its prompt
    assert (a.seqs[0].tokens, b.seqs[0].tokens) == ([10, 11], [])
    # row 0 is free: c takes it at once, while b (row 1) reads its second prompt token
    c, d = _request([7], 3), _request([8, 9], 2)
    s.add(c)
    s.add(d)
    plan = s.schedule()
    assert plan == StepPlan(feeds=(Feed(0, (7, 6), (0, 1)),), steps=(0,))
    told = s.update(plan, StepResult(tokens={0: (20, 21)}))
    assert told == [Emit(c, 0, 20, None), Emit(b, 0, 21, LENGTH), _end(b)]
    # d's client left while it waited: it is dropped, so row 1 idles (token 0 at position 0)
    d.cancelled = True
    plan = s.schedule()
    assert plan == StepPlan(feeds=(Feed(0, (20, 0), (1, 0)),), steps=(0,))
    assert s.waiting == [] and s.running() == 1
    # c's client leaves during the step: no token given, its row freed
    c.cancelled = True
    assert s.update(plan, StepResult(tokens={0: (30, 31)})) == [_end(c)]
    assert c.seqs[0].tokens == [20] and c.seqs[0].finish is CANCELLED
    assert s.schedule().empty and s.live() == [] and s.prefilled == 1
    # a sequence ended by its prefill's token: stepped in its turn, that step's token dropped
    e = _request([1, 2, 3, 4], 1)
    s.add(e)
    plan = s.schedule()
    assert plan.feeds == (Feed(0, (PREFILLED, 0), (4, 0)),) and plan.steps == (0,)
    told = s.update(plan, StepResult(prefilled=((40,),), tokens={0: (41, 42)}))
    assert told == [Emit(e, 0, 40, LENGTH), _end(e)] and e.seqs[0].tokens == [40]
    assert s.live() == [] and s.schedule().empty


def test_rows_prompts_of_other_lengths_through_the_buckets_padded():
    """Padding on, prefills of 4 and 8 tokens, one group of 4 rows: a prompt of 3 tokens
    has its first 2 through the prefill of 4 (padded with its second); one of 4 asking for
    log-probabilities its first 3 (the decode step reads the last, giving them); one of 11
    its first 8 through the longest; one of 1 token none. Each then reads its next prompt
    token at its position, and the step's log-probabilities are read once a row asking for
    them makes a token."""
    s = Scheduler(Policy.ROWS, groups=1, batch=4, prefill_lens=(8, 4), pads=True)
    long = list(range(10, 21))
    reqs = [_request([1, 2, 3], 2), _request([4, 5, 6, 7], 2, logprobs=1),
            _request(long, 2), _request([9], 2)]  # fmt: skip
    for r in reqs:
        s.add(r)
    plan = s.schedule()
    want = (Prefill(0, (0, 1), ((1, 2, 2, 2), (4, 5, 6, 6))), Prefill(0, (2,), (tuple(long[:8]),)))
    # in the same turn each reads its next prompt token (the prefills' tokens not the next)
    assert plan == StepPlan(prefills=want, feeds=(Feed(0, (3, 7, 18, 9), (2, 3, 8, 0)),),
                            steps=(0,), logprobs=(0,))  # fmt: skip
    lps = np.zeros((4, 5), np.float32)
    lps[1] = [-0.5, -0.25, -1.0, 42, 43]  # its own, the 2 largest, their ids
    made = StepResult(prefilled=((90, 91), (92,)), tokens={0: (30, 31, 32, 33)}, logprobs={0: lps})
    told = s.update(plan, made)
    assert told == [Emit(reqs[0], 0, 30, None), Emit(reqs[1], 0, 31, None),
                    Emit(reqs[3], 0, 33, None)]  # fmt: skip
    assert reqs[1].seqs[0].token_logprobs[0] == (-0.5, ((42, -0.25),))
    assert s.prefilled == 3


def test_groups_a_group_admits_whole_with_prompts_of_one_length():
    """Two groups of 2 rows, one position a group, a prefill of 3 tokens, a step returning
    logits (sampling set): e and g (prompts of 2) begin group 0 from their first tokens;
    f (a prompt of 3, with a penalty) begins group 1 through the prefill; h waits for a
    group whose rows are all free, not for a row."""
    s = Scheduler(Policy.GROUPS, groups=2, batch=2, prefill_lens=(3,), samples=True)
    e, f = _request([1, 2], 2), _request([3, 4, 5], 2, sampling=SamplingParams(presence=0.5))
    g, h = _request([6, 7], 1), _request([8], 1)
    for r in (e, f, g, h):
        s.add(r)
    plan = s.schedule()
    starts = (Start(0, ((1, 2), (6, 7)), False, (e.seqs[0], g.seqs[0])),
              Start(1, ((3, 4, 5), (3, 4, 5)), True, (f.seqs[0], None)))  # fmt: skip
    # sampling comes with the starts (f's counts too); the token group 1 reads at its first
    # step (its prefill's) is f's, counted (Counts.drawn: what the session hands back)
    assert plan == StepPlan(starts=starts, steps=(0, 1), counts=(Counts(1, drawn=(0,)),))
    assert s.waiting == [(h, 0)] and s.prefilled == 1
    # group 0 made tokens on its first prompt tokens (dropped); group 1's is the prefill's
    told = s.update(plan, StepResult(tokens={0: (50, 51), 1: (60, 61)}))
    assert told == [Emit(f, 0, 60, None)]
    # group 0 is fed its prompts' second tokens; group 1 feeds back its own, its penalty's
    # counts (set by its start) counting the token its step draws; h still waits (group 1's
    # row 1 is free, the group is not)
    plan = s.schedule()
    assert plan == StepPlan(feeds=(Feed(0, (2, 7)),), steps=(0, 1),
                            counts=(Counts(1, drawn=(0,)),))  # fmt: skip
    told = s.update(plan, StepResult(tokens={0: (70, 71), 1: (62, 63)}))
    assert told == [Emit(e, 0, 70, None), Emit(g, 0, 71, LENGTH), _end(g),
                    Emit(f, 0, 62, LENGTH), _end(f)]  # fmt: skip
    # group 1 is free: h begins it, while e goes on alone in group 0 (g's row not reused)
    plan = s.schedule()
    assert plan == StepPlan(starts=(Start(1, ((8,), (8,)), False, (h.seqs[0], None)),),
                            steps=(0, 1))  # fmt: skip
    told = s.update(plan, StepResult(tokens={0: (80, 81), 1: (90, 91)}))
    assert told == [Emit(e, 0, 80, LENGTH), _end(e), Emit(h, 0, 90, LENGTH), _end(h)]
    assert s.schedule().empty and s.running() == 0


def test_rows_admitted_at_a_long_prefill_run_at_row_counts_it_has():
    """Prefills at 1, 2, 4 and 8 rows (``row_counts``), one group of 8: three prompts of a
    64-token prefill run as 2 + 1 rows (192 token rows, not the 256 of a run at 4); three of
    a 4-token one as one run (at 4 rows, 16 tokens: under a run's least cost, 32, either
    way); seven of 64 as 4 + 2 + 1. Without row counts below the batch, one run each."""
    long = [list(range(k, k + 64)) for k in range(7)]
    short = [[k, k + 1, k + 2, k + 3] for k in range(3)]
    s = Scheduler(Policy.ROWS, groups=1, batch=8, prefill_lens=(4, 64), row_counts=(1, 2, 4))
    for p in long[:3] + short:
        s.add(_request(p, 2))
    assert s.schedule().prefills == (
        Prefill(0, (0, 1), (tuple(long[0]), tuple(long[1]))),
        Prefill(0, (2,), (tuple(long[2]),)),
        Prefill(0, (3, 4, 5), tuple(tuple(p) for p in short)),
    )
    s = Scheduler(Policy.ROWS, groups=1, batch=8, prefill_lens=(64,), row_counts=(1, 2, 4))
    for p in long:
        s.add(_request(p, 2))
    assert [p.rows for p in s.schedule().prefills] == [(0, 1, 2, 3), (4, 5), (6,)]
    s = Scheduler(Policy.ROWS, groups=1, batch=8, prefill_lens=(64,))
    for p in long:
        s.add(_request(p, 2))
    assert [p.rows for p in s.schedule().prefills] == [tuple(range(7))]


def test_rows_continued_by_chunks_of_any_lengths_are_one_prefill():
    """A 16-token prefill and a chunk step (``chunk_row``: the prompt read whole), one group
    of 4 rows: prompts of 200, 16, 120 and 40 tokens admitted in one turn. The 16-token one
    is the prefill's alone; 200, 120 and 40, past it by chunks, are one prefill whatever
    their lengths (the session runs them together), each row fed the prefill's token."""
    prompts = [list(range(200)), list(range(16)), list(range(120)), list(range(40))]
    s = Scheduler(Policy.ROWS, groups=1, batch=4, prefill_lens=(16,),
                  chunk_row=lambda p, padded: (p, len(p)), row_counts=(1, 2))  # fmt: skip
    for p in prompts:
        s.add(_request(p, 2))
    plan = s.schedule()
    assert plan.prefills == (
        Prefill(0, (0, 2, 3), (tuple(prompts[0]), tuple(prompts[2]), tuple(prompts[3]))),
        Prefill(0, (1,), (tuple(prompts[1]),)),
    )
    assert plan.feeds == (Feed(0, (PREFILLED,) * 4, (200, 16, 120, 40)),)


def test_rows_a_decode_step_computes_the_fewest_rows_holding_the_last_running_one():
    """One group of 8 rows, decode steps at its first 1, 2 and 4 rows too (``step_counts``),
    prompts of 1 token (no prefill): a sequence takes the lowest free row, and each plan's
    step computes the fewest of 1, 2, 4, 8 rows holding its highest running row, not as many
    as are running. Without ``step_counts`` a plan names none (the whole batch)."""
    s = Scheduler(Policy.ROWS, groups=1, batch=8, step_counts=(1, 2, 4))
    s.add(_request([7], 1))
    plan = s.schedule()
    assert (plan.steps, plan.step_rows) == ((0,), (1,))
    s.update(plan, StepResult(tokens={0: (9,) * 8}))  # row 0's sequence ends
    for k, n in ((1, 1), (2, 2), (3, 3)):  # rows 0, 1, 2, ending one a turn
        s.add(_request([k], n))
    runs = []  # rows held, and the rows the step computed
    while s.running() or s.waiting:
        plan = s.schedule()
        runs.append((tuple(b for b, r in enumerate(s.rows[0]) if r is not None), plan.step_rows))
        s.update(plan, StepResult(tokens={0: (9,) * 8}))
    # rows 0-2 (4 rows), then row 0 free: rows 1-2 still need 4; then row 2 alone: still 4
    assert runs == [((0, 1, 2), (4,)), ((1, 2), (4,)), ((2,), (4,))]
    s = Scheduler(Policy.ROWS, groups=1, batch=8)
    s.add(_request([1], 1))
    assert s.schedule().step_rows == ()


def test_a_sequence_left_above_free_rows_moves_down_when_its_step_then_computes_fewer():
    """One group of 8 rows, decode steps at 1, 2 and 4 rows too, moves on: sequences of 1
    token's prompt in rows 0 to 4 asking for 1, 1, 1, 5 and 3 tokens. Once rows 0 to 2 end,
    rows 3 and 4 (the step at 8 rows) move into rows 0 and 1 (2 rows), first in the plan,
    their tokens and positions fed there; once row 1's (3 tokens) ends, row 0's runs at 1
    row, nothing to move. A sequence with one token left is not moved (the move would save
    one step); with requests waiting the free rows are filled instead."""
    s = Scheduler(Policy.ROWS, groups=1, batch=8, step_counts=(1, 2, 4), moves=True)
    for k, n in enumerate((1, 1, 1, 5, 3)):
        s.add(_request([k], n))
    runs = []  # moves, and the rows each step computed
    while s.running() or s.waiting:
        plan = s.schedule()
        runs.append((plan.moves, plan.step_rows))
        if plan.moves:  # rows 3 and 4's tokens (the step gave row b 10 + b) at 0 and 1
            assert plan.feeds == (Feed(0, (13, 14, 0, 0, 0, 0, 0, 0), (1, 1, 0, 0, 0, 0, 0, 0)),)
        s.update(plan, StepResult(tokens={0: tuple(range(10, 18))}))
    assert runs == [((), (8,)), ((Move(0, (3, 4), (0, 1)),), (2,)), ((), (2,)), ((), (1,)),
                    ((), (1,))]  # fmt: skip
    s = Scheduler(Policy.ROWS, groups=1, batch=8, step_counts=(1, 2, 4), moves=True)
    for k, n in enumerate((1, 2)):
        s.add(_request([k], n))
    s.update(s.schedule(), StepResult(tokens={0: (7,) * 8}))
    assert s.schedule().moves == ()  # row 1: one token left
    s = Scheduler(Policy.ROWS, groups=1, batch=8, step_counts=(1, 2, 4), moves=True)
    for k, n in enumerate((1, 5)):
        s.add(_request([k], n))
    s.update(s.schedule(), StepResult(tokens={0: (7,) * 8}))
    s.add(_request([3], 4))
    plan = s.schedule()
    assert plan.moves == () and plan.prefills == () and plan.feeds[0].tokens[:2] == (3, 7)
