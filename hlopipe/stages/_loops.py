"""Layer loops: a ``scan`` over parameters stacked ``[L, ...]``, recognised and cut by ranges.

A *layer loop* is a top-level ``scan`` equation with a static length ``L`` (``lax.scan``,
``nn.scan``, ``fori_loop`` with static bounds, and the ``lax.scan`` that rehydration makes of
an HLO while loop with a static trip count) at least one of whose operands is *stacked*: read
one row per iteration, either as a scanned ``xs`` or as a loop-invariant operand (a constant or
a carry the body returns unchanged) read only by ``dynamic_slice`` of one row at an index that
is ``base + k`` at iteration ``k``. That index is found by running the part of the body it
depends on (the loop counter and what it reads, all known when the program is traced) for
every iteration, so ``W[i]``, ``W[clamp(0, i, L-1)]`` and the negative-index normalisation
JAX writes all qualify without matching their shapes.

Such a loop is ``L`` atoms for the partitioner (each costs one iteration; the atom view and
where it is cut are ``_cuts.py``'s). Cutting it at iterations ``a < b < ...`` re-traces the
program with one ``scan`` per range: each runs the same body over its own rows of every
stacked operand (a stacked program argument used by nothing else becomes one argument per
range, so a stage holds only its rows), the carry is what crosses the cut, and carries the body
returns unchanged become constants (never carried across a cut). A ``stage_boundary`` marker
is placed at every cut, so the marker path of :func:`~hlopipe.stages.split_jaxpr` builds the
stages.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.extend import source_info_util

from hlopipe.marker import stage_boundary
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import jaxpr_cost
from hlopipe.stages._cuts import choose_cuts
from hlopipe.stages._staged import FlatSignature, StagedProgram, build_staged

_FOLD_LIMIT = 1 << 16  # largest value (elements) folded when looking for known loop inputs


class OperandKind(enum.StrEnum):
    """How a loop reads a stacked operand's row per iteration."""

    XS = "xs"  # scanned: one of the scan's ``xs``
    INDEXED = "indexed"  # a loop-invariant operand read at ``base + k``


@dataclass(frozen=True)
class Stacked:
    """Operand ``operand`` of the loop equation, read one row per iteration, as ``kind``
    says (an :class:`OperandKind`)."""

    operand: int
    kind: OperandKind
    base: int
    reads: tuple[int, ...] = ()  # body equations reading the row (indexed)


@dataclass(frozen=True)
class LoopReport:
    """What :func:`find_loops` found at top-level equation ``eqn``: a layer loop
    (``stacked`` non-empty, ``reason`` empty) or a loop left whole, with the reason."""

    eqn: int
    length: int | None
    stacked: tuple[Stacked, ...] = ()
    invariant: tuple[int, ...] = ()  # carry positions the body returns unchanged
    reason: str = ""
    num_params: int = 0  # stacked operands that are program arguments

    @property
    def splittable(self) -> bool:
        return not self.reason

    def describe(self) -> str:
        if self.splittable:
            return (
                f"while loop of {self.length} iterations over {self.num_params} stacked "
                f"parameters: splittable into ranges"
                + (
                    f" ({len(self.stacked)} stacked operands)"
                    if len(self.stacked) != self.num_params
                    else ""
                )
            )
        n = f"of {self.length} iterations " if self.length is not None else ""
        return f"loop {n}left whole: {self.reason}"


def known_values(closed: J.ClosedJaxpr) -> dict[Any, Any]:
    """Values of the top-level jaxpr known when it is traced: its constants, and what small
    equations compute from literals and constants alone (a loop counter's start)."""
    jaxpr = closed.jaxpr
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
    with jax.ensure_compile_time_eval():
        for e in jaxpr.eqns:
            if J.sub_jaxprs(e) or e.effects:
                continue
            if any(not isinstance(v, J.Literal) and v not in env for v in e.invars):
                continue
            if sum(int(np.prod(v.aval.shape)) for v in e.outvars) > _FOLD_LIMIT:
                continue
            vals = [v.val if isinstance(v, J.Literal) else env[v] for v in e.invars]
            out = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
            outs = out if e.primitive.multiple_results else [out]
            env.update({v: np.asarray(x) for v, x in zip(e.outvars, outs, strict=True)})
    return env


def find_loops(closed: J.ClosedJaxpr, args: Sequence[Any] = ()) -> list[LoopReport]:
    """Every top-level loop of ``closed``: layer loops and, with a reason, the others.
    ``args`` are the program's arguments (variables) for counting stacked parameters."""
    has_scan = any(e.primitive.name == "scan" for e in closed.jaxpr.eqns)
    known = known_values(closed) if has_scan else {}
    argset = set(args) or set(closed.jaxpr.invars)
    out = []
    for i, e in enumerate(closed.jaxpr.eqns):
        if e.primitive.name == "while":
            out.append(
                LoopReport(
                    i,
                    None,
                    reason="a while loop whose trip count is not known when the "
                    "program is traced (data-dependent): it runs as one piece",
                )
            )
        elif e.primitive.name == "scan":
            rep = recognise(e, known)
            if rep.splittable:
                n = sum(1 for s in rep.stacked if e.invars[s.operand] in argset)
                rep = LoopReport(i, rep.length, rep.stacked, rep.invariant, "", n)
            else:
                rep = LoopReport(i, rep.length, reason=rep.reason)
            out.append(rep)
    return out


def recognise(eqn: Any, known: dict[Any, Any]) -> LoopReport:
    """Whether the ``scan`` equation ``eqn`` is a layer loop (see the module docstring)."""
    p = eqn.params
    L, C, K = int(p["length"]), int(p["num_consts"]), int(p["num_carry"])
    body = p["jaxpr"]
    bj = body.jaxpr
    if L < 2:
        return LoopReport(-1, L, reason=f"a loop of {L} iteration(s) has nothing to cut")
    if bj.effects:
        return LoopReport(-1, L, reason="its body has side effects")
    invariant = tuple(j for j in range(K) if bj.outvars[j] is bj.invars[C + j])
    stacked = [Stacked(C + K + x, OperandKind.XS, 0) for x in range(len(bj.invars) - C - K)]
    whole: list[str] = []
    candidates = [*range(C), *(C + j for j in invariant)]
    uses = _uses(bj)
    rows_read: dict[int, list[int]] = {}
    for pos in candidates:
        v = bj.invars[pos]
        aval = v.aval
        if not getattr(aval, "shape", ()) or aval.shape[0] < L:
            continue
        sites = uses.get(v, [])
        reads = [k for k, slot in sites if _is_row_read(bj.eqns[k], slot, aval)]
        if len(reads) != len(sites) or not reads or v in bj.outvars[K:]:
            if aval.shape[0] == L:
                whole.append(f"operand {pos} ({_desc(aval)})")
            continue
        rows_read[pos] = reads
    bases = _row_bases(eqn, body, rows_read, L, known)
    for pos, reads in rows_read.items():
        aval = bj.invars[pos].aval
        base = bases.get(pos)
        if base is None or base + L > aval.shape[0]:
            whole.append(f"operand {pos} ({_desc(aval)}, not read at the loop index)")
            continue
        stacked.append(Stacked(pos, OperandKind.INDEXED, base, tuple(reads)))
    if p.get("reverse") and any(s.kind is OperandKind.INDEXED for s in stacked):
        return LoopReport(-1, L, reason="a reversed loop that reads its operands by index")
    if not stacked:
        why = (
            f"its body reads the whole of {', '.join(whole)} rather than one row per iteration"
            if whole
            else "no operand is stacked on its iterations (nothing per layer to split)"
        )
        return LoopReport(-1, L, reason=why)
    return LoopReport(-1, L, tuple(sorted(stacked, key=lambda s: s.operand)), invariant)


def _desc(aval: Any) -> str:
    return f"{np.dtype(aval.dtype).name}{list(aval.shape)}"


def _uses(jaxpr: J.Jaxpr) -> dict[Any, list[tuple[int, int]]]:
    out: dict[Any, list[tuple[int, int]]] = {}
    for k, e in enumerate(jaxpr.eqns):
        for slot, v in enumerate(e.invars):
            if not isinstance(v, J.Literal):
                out.setdefault(v, []).append((k, slot))
    return out


def _is_row_read(e: Any, slot: int, aval: Any) -> bool:
    return (
        e.primitive.name == "dynamic_slice"
        and slot == 0
        and tuple(e.params["slice_sizes"]) == (1, *aval.shape[1:])
    )


def _row_bases(
    eqn: Any, body: J.ClosedJaxpr, rows_read: dict[int, list[int]], L: int, known: dict[Any, Any]
) -> dict[int, int | None]:
    """Per operand, :func:`_row_base` of its reads: all operands in one evaluation when
    their indices allow it, else one by one."""
    if not rows_read:
        return {}
    together = _row_base(eqn, body, [k for r in rows_read.values() for k in r], L, known, True)
    if isinstance(together, list):
        out, n = {}, 0
        for pos, reads in rows_read.items():
            mine = together[n : n + len(reads)]
            n += len(reads)
            out[pos] = mine[0] if len(set(mine)) == 1 else None
        return out
    return {pos: _row_base(eqn, body, reads, L, known) for pos, reads in rows_read.items()}


def _row_base(
    eqn: Any,
    body: J.ClosedJaxpr,
    reads: list[int],
    L: int,
    known: dict[Any, Any],
    each: bool = False,
) -> Any:
    """The first row the ``dynamic_slice`` equations ``reads`` take, when at iteration ``k``
    each takes row ``base + k`` (and offset 0 on the other axes); else None. With ``each``,
    the list of each read's base (None if any read is not of that form)."""
    bj = body.jaxpr
    p = eqn.params
    C, K = int(p["num_consts"]), int(p["num_carry"])
    idx_vars = [v for k in reads for v in bj.eqns[k].invars[1:]]
    need, state = _control_part(bj, idx_vars, C, K)
    if need is None:
        return None
    outer = eqn.invars
    init = []
    for j in state:
        v = outer[C + j]
        if isinstance(v, J.Literal):
            init.append(np.asarray(v.val))
        elif v in known:
            init.append(np.asarray(known[v]))
        else:
            return None
    consts = {}
    for pos in range(C):
        if bj.invars[pos] in need[1]:
            v = outer[pos]
            if isinstance(v, J.Literal) or v not in known:
                return None
            consts[bj.invars[pos]] = known[v] if not isinstance(v, J.Literal) else v.val

    def step(carry: tuple, _: Any) -> tuple:
        env = dict(zip(bj.constvars, body.consts, strict=True))
        env.update(consts)
        env.update({bj.invars[C + j]: c for j, c in zip(state, carry, strict=True)})
        _eval(need[0], env)
        read = lambda v: v.val if isinstance(v, J.Literal) else env[v]  # noqa: E731
        return tuple(read(bj.outvars[j]) for j in state), [read(v) for v in idx_vars]

    # A PyTorch/XLA counter is s64: run it in 64-bit mode (in this thread only), or JAX
    # narrows the start to 32 bits, the body's s64 add fails and the loop is left whole.
    wide = J.first_64bit(SimpleNamespace(eqns=need[0])) is not None
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        _, idx = jax.jit(lambda c: lax.scan(step, c, None, length=L))(tuple(init))
    bases = []
    n = 0
    for k in reads:
        m = len(bj.eqns[k].invars) - 1
        rows = np.stack([np.asarray(x).reshape(L) for x in idx[n : n + m]])
        n += m
        base = int(rows[0, 0])
        if not (rows[0] == base + np.arange(L)).all() or (rows[1:] != 0).any():
            return None
        bases.append(base)
    if each:
        return bases
    return bases[0] if len(set(bases)) == 1 else None


def _control_part(
    bj: J.Jaxpr, wanted: list[Any], C: int, K: int
) -> tuple[tuple[list[Any], set[Any]], list[int]] | tuple[None, list[int]]:
    """The body equations ``wanted`` depend on, closed over the carries they read (a loop
    counter and what updates it), and those carries; None if they read an ``xs``."""
    state: set[int] = set()
    while True:
        outs = [*wanted, *(bj.outvars[j] for j in sorted(state))]
        mask = J.needed_eqns(bj.eqns, outs)
        eqns = [e for e, m in zip(bj.eqns, mask, strict=True) if m]
        defined = {v for e in eqns for v in e.outvars}
        reads = {
            v for e in eqns for v in e.invars if not isinstance(v, J.Literal) and v not in defined
        }
        reads |= {v for v in outs if not isinstance(v, J.Literal) and v not in defined}
        carries = {j for j in range(K) if bj.invars[C + j] in reads}
        if any(bj.invars[x] in reads for x in range(C + K, len(bj.invars))):
            return None, []
        if carries <= state:
            return (eqns, reads), sorted(state)
        state |= carries


def _eval(eqns: Sequence[Any], env: dict[Any, Any], replace: dict[int, Any] | None = None) -> None:
    """Evaluate ``eqns`` into ``env`` (binding each primitive); ``replace`` gives, by
    ``id`` of an equation, the values to use as its outputs instead."""
    for e in eqns:
        if replace is not None and id(e) in replace:
            env[e.outvars[0]] = replace[id(e)]
            continue
        vals = [v.val if isinstance(v, J.Literal) else env[v] for v in e.invars]
        with source_info_util.user_context(e.source_info.traceback):
            out = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
        outs = out if e.primitive.multiple_results else [out]
        env.update(zip(e.outvars, outs, strict=True))


# --- the atom view ---------------------------------------------------------------------------


def rows_of(loop: LoopReport, s: Stacked, a: int, b: int, reverse: bool) -> tuple[int, int]:
    """The rows of stacked operand ``s`` that iterations ``[a, b)`` read."""
    L = int(loop.length or 0)
    if s.kind is OperandKind.XS:
        return (L - b, L - a) if reverse else (a, b)
    return s.base + a, s.base + b


def iteration_cost(eqn: Any) -> tuple[float, float]:
    """FLOPs and bytes of one iteration of a ``scan`` equation."""
    return jaxpr_cost(eqn.params["jaxpr"])


# --- re-tracing with ranges and markers ----------------------------------------------------------


@dataclass(frozen=True)
class ArgPiece:
    """Flat argument of the re-traced program: rows ``[start, stop)`` of the caller's flat
    argument ``source`` (``start is None``: the whole argument)."""

    source: int
    start: int | None = None
    stop: int | None = None


def sliced_args(
    closed: J.ClosedJaxpr, loops: dict[int, LoopReport], ranges: dict[int, list[tuple[int, int]]],
    sliceable: set[int],
) -> dict[int, tuple[int, Stacked]]:  # fmt: skip
    """Caller arguments that become one argument per range: stacked operands of a cut loop
    that are program arguments covering exactly the loop's rows and used by nothing else."""
    jaxpr = closed.jaxpr
    arg_index = {v: i for i, v in enumerate(jaxpr.invars)}
    uses: dict[Any, int] = {}
    for e in jaxpr.eqns:
        for v in e.invars:
            if not isinstance(v, J.Literal):
                uses[v] = uses.get(v, 0) + 1
    outs = {v for v in jaxpr.outvars if not isinstance(v, J.Literal)}
    found: dict[int, tuple[int, Stacked]] = {}
    for k, loop in loops.items():
        if len(ranges.get(k, ())) < 2:
            continue
        e = jaxpr.eqns[k]
        for s in loop.stacked:
            v = e.invars[s.operand]
            i = arg_index.get(v) if not isinstance(v, J.Literal) else None
            if i is None or i not in sliceable or uses.get(v) != 1 or v in outs:
                continue
            if s.base != 0 or v.aval.shape[0] != loop.length:
                continue
            C = int(e.params["num_consts"])
            if s.operand >= C and s.operand < C + int(e.params["num_carry"]):
                out = e.outvars[s.operand - C]  # an invariant carry: its result must be unused
                if uses.get(out) or out in outs:
                    continue
            found[i] = (k, s)
    return found


def retrace(
    closed: J.ClosedJaxpr,
    loops: dict[int, LoopReport],
    ranges: dict[int, list[tuple[int, int]]],
    cuts_before: set[int],
    cuts_in: dict[int, set[int]],
    sliceable: set[int],
) -> tuple[J.ClosedJaxpr, list[ArgPiece]]:
    """``closed`` re-traced with each cut loop run as one ``scan`` per range, a marker at each
    cut (before top-level equation ``k`` in ``cuts_before``; after range ``r`` of loop ``k``
    for ``r`` in ``cuts_in[k]``); and the new flat arguments as pieces of the old."""
    jaxpr = closed.jaxpr
    pieces = _arg_pieces(jaxpr, loops, ranges, sliced_args(closed, loops, ranges, sliceable))
    last = _last_use(jaxpr)

    def run(*flat: Any) -> list[Any]:
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
        rows: dict[int, list[Any]] = {}
        for pc, x in zip(pieces, flat, strict=True):
            if pc.start is None:
                env[jaxpr.invars[pc.source]] = x
            else:
                rows.setdefault(pc.source, []).append(x)
        arg_pos = {v: i for i, v in enumerate(jaxpr.invars)}
        for k, e in enumerate(jaxpr.eqns):
            if k in cuts_before:
                _mark_live(env, jaxpr, k, last)
            if k in ranges:
                given = {
                    s.operand: rows[arg_pos[e.invars[s.operand]]]
                    for s in loops[k].stacked
                    if not isinstance(e.invars[s.operand], J.Literal)
                    and arg_pos.get(e.invars[s.operand]) in rows
                }
                vals = [v.val if isinstance(v, J.Literal) else env.get(v) for v in e.invars]
                with source_info_util.user_context(e.source_info.traceback):
                    outs = run_ranges(e, loops[k], ranges[k], vals, given, cuts_in.get(k, set()))
                env.update(zip(e.outvars, outs, strict=True))
            else:
                _eval([e], env)
        return [v.val if isinstance(v, J.Literal) else env[v] for v in jaxpr.outvars]

    return jax.make_jaxpr(run)(*_piece_avals(closed.in_avals, pieces)), pieces


def _arg_pieces(
    jaxpr: J.Jaxpr,
    loops: dict[int, LoopReport],
    ranges: dict[int, list[tuple[int, int]]],
    sliced: dict[int, tuple[int, Stacked]],
) -> list[ArgPiece]:
    """The re-traced program's flat arguments: each argument whole, or a ``sliced`` one (a
    stacked argument of loop ``k``) as its rows per range of ``k``."""
    pieces: list[ArgPiece] = []
    for i, _v in enumerate(jaxpr.invars):
        if i in sliced:
            k, s = sliced[i]
            rev = bool(jaxpr.eqns[k].params.get("reverse"))
            for a, b in ranges[k]:
                lo, hi = rows_of(loops[k], s, a, b, rev)
                pieces.append(ArgPiece(i, lo, hi))
        else:
            pieces.append(ArgPiece(i))
    return pieces


def _piece_avals(in_avals: Sequence[Any], pieces: Sequence[ArgPiece]) -> list[Any]:
    """The avals of the arguments ``pieces`` of arguments with avals ``in_avals``."""
    avals = []
    for pc in pieces:
        a = in_avals[pc.source]
        if pc.start is None or pc.stop is None:
            shape = a.shape
        else:
            shape = (pc.stop - pc.start, *a.shape[1:])
        avals.append(jax.ShapeDtypeStruct(shape, a.dtype, weak_type=a.weak_type))
    return avals


def _last_use(jaxpr: J.Jaxpr) -> dict[Any, int]:
    last: dict[Any, int] = {}
    for k, e in enumerate(jaxpr.eqns):
        for v in e.invars:
            if not isinstance(v, J.Literal):
                last[v] = k
    for v in jaxpr.outvars:
        if not isinstance(v, J.Literal):
            last[v] = len(jaxpr.eqns)
    return last


def _mark_live(env: dict[Any, Any], jaxpr: J.Jaxpr, k: int, last: dict[Any, int]) -> None:
    """Pass the values computed before equation ``k`` and used from it on through a marker."""
    made = {v for e in jaxpr.eqns[:k] for v in e.outvars}
    live = [v for v in made if last.get(v, -1) >= k]
    if not live:
        stage_boundary(np.float32(0))
        return
    outs = stage_boundary(*[env[v] for v in live])
    env.update(zip(live, outs if len(live) > 1 else [outs], strict=True))


def run_ranges(
    eqn: Any,
    loop: LoopReport,
    ranges: list[tuple[int, int]],
    vals: list[Any],
    given: dict[int, list[Any]],
    cuts: set[int],
) -> list[Any]:
    """The ``scan`` equation ``eqn`` on operand values ``vals``, run as one ``lax.scan`` per
    range; ``given[operand]`` holds a stacked operand's rows per range (else they are sliced
    from its value); a marker follows range ``r`` for ``r`` in ``cuts``."""
    p = eqn.params
    body = p["jaxpr"]
    bj = body.jaxpr
    C, K = int(p["num_consts"]), int(p["num_carry"])
    rev = bool(p.get("reverse"))
    inv = set(loop.invariant)
    varying = [j for j in range(K) if j not in inv]
    stacked = list(loop.stacked)
    reads = {k: n for n, s in enumerate(stacked) for k in s.reads}
    skip = {s.operand for s in loop.stacked}
    fixed = {
        bj.invars[i]: vals[i] for i in range(C + K) if (i < C or (i - C) in inv) and i not in skip
    }
    carry = tuple(vals[C + j] for j in varying)
    unroll = p.get("unroll", 1)
    ys_parts: list[list[Any]] = []
    for r, (a, b) in enumerate(ranges):
        xs = [
            given[s.operand][r]
            if s.operand in given
            else lax.slice_in_dim(vals[s.operand], *rows_of(loop, s, a, b, rev), axis=0)
            for s in stacked
        ]

        def step(c: tuple, x: tuple) -> tuple:
            env = dict(zip(bj.constvars, body.consts, strict=True))
            env.update(fixed)
            env.update({bj.invars[C + j]: y for j, y in zip(varying, c, strict=True)})
            for s, y in zip(stacked, x, strict=True):
                if s.kind is OperandKind.XS:
                    env[bj.invars[s.operand]] = y
            rep = {id(bj.eqns[k]): x[n][None] for k, n in reads.items()}
            _eval(bj.eqns, env, rep)
            read = lambda v: v.val if isinstance(v, J.Literal) else env[v]  # noqa: E731
            return tuple(read(bj.outvars[j]) for j in varying), [read(v) for v in bj.outvars[K:]]

        u = unroll if isinstance(unroll, bool) else max(1, min(int(unroll), b - a))
        ys: Any
        carry, ys = lax.scan(step, carry, tuple(xs), length=b - a, reverse=rev, unroll=u)
        ys_parts.append(list(ys))
        if r in cuts:
            out = stage_boundary(*carry) if carry else stage_boundary(np.float32(0))
            if carry:
                carry = tuple(out) if len(carry) > 1 else (out,)
    final = dict(zip(varying, carry, strict=True))
    carries = [final[j] if j in final else vals[C + j] for j in range(K)]
    return carries + _join_ranges(ys_parts, rev, len(bj.outvars) - K)


def _join_ranges(ys_parts: list[list[Any]], reverse: bool, n: int) -> list[Any]:
    """The ``n`` stacked outputs of a loop from those of its ranges (in iteration order)."""
    order = ys_parts[::-1] if reverse else ys_parts
    return [
        order[0][k] if len(order) == 1 else lax.concatenate([part[k] for part in order], 0)
        for k in range(n)
    ]


def _holds_loop(eqn: Any) -> bool:
    return any(
        e.primitive.name in ("scan", "while") or _holds_loop(e)
        for sub in J.sub_jaxprs(eqn)
        for e in getattr(sub, "jaxpr", sub).eqns
    )


def describe_loops(program: Any, *args: Any) -> list[str]:
    """One line per top-level loop of a function (traced with ``args``) or a loaded
    ``Program``: a layer loop ("while loop of 8 iterations over 10 stacked parameters:
    splittable into ranges") or a loop left whole, with the reason. Calls holding a loop are
    looked into, as splitting does.

    Example:
      >>> describe_loops(hlopipe.load("llm_scanned.hlo"))           # doctest: +SKIP
      ['while loop of 32 iterations over 6 stacked parameters ...: splittable into ranges']
    """
    if hasattr(program, "as_function") and hasattr(program, "in_avals"):
        fn = program.as_function(flat=True)
        args = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals)
    else:
        fn = program
    closed, _, _ = J.trace(fn, args)
    closed = J.inline(closed, _holds_loop)
    return [r.describe() for r in find_loops(closed)]


def split_loops(
    closed: J.ClosedJaxpr,
    loops: dict[int, LoopReport],
    reports: list[LoopReport],
    num_stages: int,
    cm: Any,
    memory_cap: float | None,
    max_candidates: int,
    sig: FlatSignature,
    sliceable: set[int],
    spans: Sequence[Any] = (),
    stage_layers: Sequence[int] | None = None,
) -> StagedProgram:
    """The :class:`~hlopipe.stages.StagedProgram` of ``closed`` cut where the partitioner
    says over the atom view (a layer loop is one atom per iteration): the program re-traced
    with a marker at each cut, then built at the markers."""
    from hlopipe.errors import StageError

    cuts = choose_cuts(
        closed, loops, num_stages, cm, memory_cap, max_candidates, spans, stage_layers
    )
    new, pieces = retrace(closed, loops, cuts.ranges, cuts.cuts_before, cuts.cuts_in, sliceable)
    markers = [i for i, e in enumerate(new.jaxpr.eqns) if J.is_marker(e)]
    if len(markers) != num_stages - 1:  # pragma: no cover - an internal invariant
        raise StageError(f"hlopipe internal: {len(markers)} cuts for {num_stages} stages")
    pieces_sig = replace(  # the stages' flat arguments are the pieces
        sig,
        paths=tuple(
            sig.paths[p.source] if p.start is None else f"{sig.paths[p.source]}[{p.start}:{p.stop}]"
            for p in pieces
        ),
        argnum_of=tuple(sig.argnum_of[p.source] for p in pieces),
    )
    layers = None
    if len(loops) == 1:  # the layers are one loop's iterations
        ((k, report),) = loops.items()
        layers = cuts.iterations_per_stage(k, int(report.length or 0))
    cut_args = any(p.start is not None for p in pieces)  # else the stages take the caller's
    return build_staged(new, [0] + [m + 1 for m in markers], pieces_sig, cm, cuts.partition, None,
                        layers=layers, loops=tuple(reports),
                        arg_pieces=tuple(pieces) if cut_args else None,
                        caller_avals=[J.sds(a) for a in closed.in_avals] if cut_args else None,
                        )  # fmt: skip
