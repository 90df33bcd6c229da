"""Splitting a prefill the way its decode step is split: each cache made on the stage that
keeps it.

A prefill makes the state its decode step carries (the KV cache), and each stage of the decode
step keeps some of it. :func:`split_prefill` cuts the prefill so that every cache output is made
on that stage, and nothing of a cache crosses a stage:

* **Values made from constants alone are made where they are read.** An empty cache made with
  ``jnp.zeros`` before the first layer (as users write a prefill), a mask or a position table
  depends on no argument: the program is re-traced with such a value made again right before
  each equation that reads it (:func:`sink_constants`), so it lands on the reader's stage.
* **Without stage markers**, the cuts are not balanced on the prefill's own costs. The
  equations are reordered stage by stage (:func:`_by_stage`: XLA may write a later layer's cache
  before an earlier layer's attention), then the span of each cache (from the equation making
  its empty value to the last read of a version of it) must lie on its decode stage, which
  leaves each boundary an interval of equations; the cut takes the point of the interval where
  the fewest bytes cross (the residual stream between layers), the compute balance breaking
  ties. Where several points cross as few bytes, the one placing fewest parameter bytes on a
  stage where the decode step does not read them (``held_on``) is taken: on CPU every
  stage's devices are host memory, and a layer's weights cut the other way would be put on
  both stages (36 MiB of a 125M Llama at ``--max-batch 8``). No consistent order: a
  :class:`StageError` naming the equations that tie a cache to the wrong stage.
* **With markers**, the cuts are the markers (after the same re-trace).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from jax.extend import source_info_util

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import CostModel, eqn_costs
from hlopipe.stages._partition import _CARRY, crossing_bytes
from hlopipe.stages._split import (
    Landing,
    _trace,
    move_state_updates,
    split_jaxpr,
)
from hlopipe.stages._staged import StagedProgram, build_staged


def sink_constants(closed: Any) -> Any:
    """``closed`` re-traced with every value computed from no argument (literals, constants,
    ``iota``, ``broadcast_in_dim`` of a scalar: an empty cache, a mask) made again right
    before each equation that reads it, instead of once where the program made it. Equations
    with effects are left where they are."""
    jaxpr = closed.jaxpr
    made: dict[Any, Any] = {}  # constant-only value -> its equation
    for e in jaxpr.eqns:
        if e.effects or J.is_marker(e):
            continue
        if all(isinstance(v, J.Literal) or v in made for v in e.invars):
            made.update((o, e) for o in e.outvars)
    if not made:
        return closed

    def bind(e: Any, vals: list[Any]) -> list[Any]:
        with e.ctx.manager, source_info_util.user_context(e.source_info.traceback):
            outs = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
        return list(outs) if e.primitive.multiple_results else [outs]

    def fn(*args: Any) -> list[Any]:
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))

        def read(v: Any, memo: dict[Any, Any]) -> Any:
            if isinstance(v, J.Literal):
                return v.val
            if v in made:
                if v not in memo:
                    e = made[v]
                    memo.update(
                        zip(e.outvars, bind(e, [read(u, memo) for u in e.invars]), strict=True)
                    )
                return memo[v]
            return env[v]

        for e in jaxpr.eqns:
            if e.outvars and e.outvars[0] in made:
                continue
            memo: dict[Any, Any] = {}
            env.update(zip(e.outvars, bind(e, [read(v, memo) for v in e.invars]), strict=True))
        memo = {}
        return [read(v, memo) for v in jaxpr.outvars]

    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in closed.in_avals]
    return jax.make_jaxpr(fn)(*avals)


def split_prefill(
    program: Any,
    stage_of: Mapping[int, int],
    num_stages: int,
    what: str = "the prefill",
    held_on: Mapping[int, frozenset[int]] | None = None,
) -> StagedProgram:
    """Split ``program`` (a loaded prefill, or a function of flat arguments traced on its
    avals) into ``num_stages`` stages, output ``o`` made on stage ``stage_of[o]`` for each
    cache output (the stage its decode step keeps that state on). ``held_on``: for a flat
    argument that is a parameter of the decode step, the stages reading it there; among cuts
    crossing as few bytes, the one reading fewest parameter bytes elsewhere is taken.

    Raises:
      StageError naming the cache and the equation that ties it to another stage, when no cut
      keeps every cache on its stage.
    """
    closed, sig = _trace(program, ())
    closed = sink_constants(J.inline(closed, lambda e: True))
    if any(J.is_marker(e) for e in closed.jaxpr.eqns):
        # as its decode step's
        closed = move_state_updates(closed, list(stage_of), Landing.BEFORE_MARKERS)
        return split_jaxpr(
            closed, in_tree=sig.in_tree, out_tree=sig.out_tree, in_paths=sig.paths,
            argnums_of=sig.argnum_of, num_stages=num_stages,
        )  # fmt: skip
    touches = {o: t for o in stage_of if (t := _touch(closed.jaxpr, o))}
    closed = _by_stage(closed, touches, stage_of, what)
    starts = _cuts(closed.jaxpr, stage_of, num_stages, what, held_on or {})
    return build_staged(closed, starts, sig, CostModel(), None, None)


def _touch(jaxpr: Any, out: int) -> list[int]:
    """The equations touching a version of output ``out``: values carried into it
    (``_CARRY``: its empty value, updates, slices, stacks) and those carried on from them (the
    updated K read by attention)."""
    o = jaxpr.outvars[out]
    if isinstance(o, J.Literal):
        return []
    # a constant of the program (StableHLO's one zeros tensor every layer's cache is scattered
    # into) is no version of any cache: each stage reading it captures its own copy
    consts = set(jaxpr.constvars)
    chain = {o}
    for e in reversed(jaxpr.eqns):
        if any(v in chain for v in e.outvars):
            chain.update(v for v in _carried(e) if not isinstance(v, J.Literal) and v not in consts)
    versions = set(chain)
    for e in jaxpr.eqns:
        if any(not isinstance(v, J.Literal) and v in versions for v in _carried(e)):
            versions.update(e.outvars)
    return [
        i
        for i, e in enumerate(jaxpr.eqns)
        if any(not isinstance(v, J.Literal) and v in versions for v in (*e.invars, *e.outvars))
    ]


def _carried(e: Any) -> list[Any]:
    which = _CARRY.get(e.primitive.name, ())
    if e.primitive.name == "select_n":
        return list(e.invars[1:])
    return list(e.invars) if which is None else [e.invars[k] for k in which if k < len(e.invars)]


def _constant_eqns(jaxpr: Any) -> set[int]:
    """The equations computing from no argument."""
    const: set[Any] = set()
    found = set()
    for i, e in enumerate(jaxpr.eqns):
        if all(isinstance(v, J.Literal) or v in const for v in e.invars):
            const.update(e.outvars)
            found.add(i)
    return found


def _span(jaxpr: Any, out: int) -> tuple[int, int, int] | None:
    """The first and last equations touching a version of output ``out`` (:func:`_touch`),
    and the first of them that computes from an argument (named in errors)."""
    touch = _touch(jaxpr, out)
    if not touch:
        return None
    const = _constant_eqns(jaxpr)
    named = [i for i in touch if i not in const]
    return min(touch), max(touch), (named or touch)[0]


def _by_stage(
    closed: Any, touches: Mapping[int, list[int]], stage_of: Mapping[int, int], what: str
) -> Any:
    """``closed`` with its equations reordered (a topological order still) stage by stage:
    each equation touching a cache on that cache's stage, every other one as late as its
    readers allow (the next layer's K and V projections with that layer, not sent to it). XLA
    orders a program for its own reasons (an optimised prefill may write a later layer's V cache
    before an earlier layer's attention); the decode step's placement of the caches is what
    orders the stages. A constant-only equation stays right before its reader.

    Raises:
      StageError naming an equation that touches a cache kept on one stage but reads a value
      that depends on a cache kept on a later one.
    """
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    const = _constant_eqns(jaxpr)
    fixed: dict[int, int] = {}
    for o, idxs in touches.items():
        for i in idxs:
            fixed.setdefault(i, stage_of[o])
    producer = {v: i for i, e in enumerate(eqns) for v in e.outvars}
    low = [0] * len(eqns)
    for i, e in enumerate(eqns):
        if i in const:
            continue
        ins = [producer[v] for v in e.invars if not isinstance(v, J.Literal) and v in producer]
        ins = [j for j in ins if j not in const]
        low[i] = max((low[j] for j in ins), default=0)
        if i in fixed and low[i] > fixed[i]:
            raise StageError(_late(eqns, i, fixed, low, producer, const, touches, what))
        low[i] = fixed.get(i, low[i])
    readers: dict[Any, list[int]] = {}
    for i, e in enumerate(eqns):
        for v in e.invars:
            if not isinstance(v, J.Literal):
                readers.setdefault(v, []).append(i)
    last = max(stage_of.values(), default=0) + len(eqns)  # after every stage: the outputs'
    high = [last] * len(eqns)  # the latest stage each equation may run on
    key: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * len(eqns)
    for i in reversed(range(len(eqns))):
        if i not in const:
            later = [high[r] for v in eqns[i].outvars for r in readers.get(v, ()) if r not in const]
            high[i] = fixed.get(i, min(later, default=last))
            key[i] = (high[i], i, 1, 0)
            continue
        mine = [min(readers[v]) for v in eqns[i].outvars if v in readers]
        key[i] = (*(key[min(mine)][:2] if mine else (last, len(eqns))), 0, i)
    order = sorted(range(len(eqns)), key=lambda i: key[i])
    if order == list(range(len(eqns))):
        return closed
    return J.make_closed(closed, jaxpr.invars, [eqns[i] for i in order], jaxpr.outvars)


def _late(
    eqns: Any,
    i: int,
    fixed: Mapping[int, int],
    low: list[int],
    producer: Mapping[Any, int],
    const: set[int],
    touches: Mapping[int, list[int]],
    what: str,
) -> str:
    """Why equation ``i`` cannot run on the stage of the cache it touches."""
    j = i
    while j == i or fixed.get(j) != low[j]:
        ins = [producer[v] for v in eqns[j].invars if not isinstance(v, J.Literal)
               and v in producer and producer[v] not in const]  # fmt: skip
        j = max(ins, key=lambda k: low[k])
    mine = next(o for o, t in touches.items() if i in t)
    theirs = next(o for o, t in touches.items() if j in t)
    e, d = eqns[i], eqns[j]
    return (
        f"{what}: {e.primitive.name} at {J.where(e)} (equation {i}) touches output {mine}, "
        f"kept on stage {fixed[i]} by the decode step, but reads what {d.primitive.name} at "
        f"{J.where(d)} (equation {j}) computes from output {theirs}, kept on stage {low[j]}: no "
        "cut puts both on their stages. Make each layer's cache inside the layer that reads "
        "it (an empty cache from constants alone is made where it is read), or place "
        "stage_boundary markers at the same layers in both programs"
    )


def _cuts(
    jaxpr: Any,
    stage_of: Mapping[int, int],
    S: int,
    what: str,
    held_on: Mapping[int, frozenset[int]],
) -> list[int]:
    """Each stage's first equation: every cache's span on its stage; within what that leaves
    of each boundary, the fewest bytes crossing, then the fewest parameter bytes read on a
    stage the decode step does not read them on (``held_on``, by flat argument), then the
    compute balance."""
    eqns = jaxpr.eqns
    n = len(eqns)
    spans = {o: sp for o in stage_of if (sp := _span(jaxpr, o)) is not None}
    cross = crossing_bytes(eqns, jaxpr.outvars)
    flops = np.cumsum(np.concatenate([[0.0], eqn_costs(eqns)[0]]))
    starts = [0]
    for k in range(S - 1):
        before = [(sp[1], o) for o, sp in spans.items() if stage_of[o] <= k]
        after = [(sp[0], o) for o, sp in spans.items() if stage_of[o] > k]  # fmt: skip
        lo = max([starts[-1] + 1, *(hi + 1 for hi, _ in before)])
        hi = min([n - (S - 1 - k), *(first for first, _ in after)])
        if lo > hi:
            raise StageError(_tie(jaxpr, what, k, before, after, spans, stage_of, starts[-1]))
        points = np.arange(lo, hi + 1)
        target = flops[-1] * (k + 1) / S
        balance = np.abs(flops[points] - target)
        elsewhere = _placed_elsewhere(jaxpr, held_on, k, lo, hi)
        if before and after:  # between two stages' caches: the residual stream
            best = min(points, key=lambda b: (cross[b], elsewhere(b), balance[b - lo]))
        else:  # a stage keeping no cache (the embedding, the head): by compute
            best = min(points, key=lambda b: (balance[b - lo], cross[b]))
        starts.append(int(best))
    return starts


def _placed_elsewhere(
    jaxpr: Any, held_on: Mapping[int, frozenset[int]], k: int, lo: int, hi: int
) -> Any:
    """For a cut at ``b`` in ``lo..hi`` between stages ``k`` and ``k + 1``: the bytes of the
    parameters read by the equations in ``lo..hi`` on a stage (``k`` before ``b``, ``k + 1``
    from it) the decode step does not read them on (``held_on``), each counted once a side."""
    readers: dict[int, list[int]] = {}  # flat argument -> its readers in lo..hi
    index = {v: i for i, v in enumerate(jaxpr.invars) if i in held_on}
    for i in range(lo, min(hi + 1, len(jaxpr.eqns))):
        for v in jaxpr.eqns[i].invars:
            if not isinstance(v, J.Literal) and v in index:
                readers.setdefault(index[v], []).append(i)
    if not readers:
        return lambda b: 0
    size = {a: math.prod(jaxpr.invars[a].aval.shape) * jaxpr.invars[a].aval.dtype.itemsize
            for a in readers}  # fmt: skip

    def bytes_at(b: int) -> int:
        total = 0
        for a, at in readers.items():
            if k not in held_on[a] and any(i < b for i in at):
                total += size[a]
            if k + 1 not in held_on[a] and any(i >= b for i in at):
                total += size[a]
        return total

    return bytes_at


def _tie(
    jaxpr: Any,
    what: str,
    k: int,
    before: list[tuple[int, int]],
    after: list[tuple[int, int]],
    spans: Mapping[int, tuple[int, int, int]],
    stage_of: Mapping[int, int],
    prev: int,
) -> str:
    """Why no cut between stages ``k`` and ``k + 1`` keeps every cache on its stage."""
    eqns = jaxpr.eqns
    if not after:
        return (f"{what}: no equation is left for stage {k + 1} once the caches of stages up to "
                f"{k} are made; ask for fewer stages")  # fmt: skip
    first, o = min(after)
    late = [(hi, p) for hi, p in before if hi >= first]
    if not late:
        return (f"{what}: output {o} (kept on stage {stage_of[o]}) is made from equation "
                f"{first} on, where stage {k} still runs (it starts at equation {prev}); ask "
                "for fewer stages")  # fmt: skip
    hi, p = max(late)
    named = spans[o][2]
    e, r = eqns[named], eqns[hi]
    return (
        f"{what}: output {o} is kept on stage {stage_of[o]} by the decode step, but "
        f"{e.primitive.name} at {J.where(e)} (equation {named}) makes it before "
        f"{r.primitive.name} at {J.where(r)} (equation {hi}) reads output {p}, kept on stage "
        f"{stage_of[p]}: no cut puts both on their stages. Make each layer's cache inside the "
        "layer that reads it (an empty cache from constants alone is made where it is read), "
        "or place stage_boundary markers at the same layers in both programs"
    )
