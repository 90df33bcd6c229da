"""Finding the layer axis of a state array stacked over the layers (one array for every layer,
its layer axis anywhere: ``[L, b, ...]``, keras_hub's ``[b, L, 2, T, ...]``) by data flow
(:func:`layering`, :func:`find_layer_axes`): every read and update of the array (and of its
updated versions) touches a constant range of the axis (``slice``, ``dynamic_slice``, a
``gather`` of one index, ``dynamic_update_slice``, a one-row ``scatter``: what a loop over
layers unrolled by ``jax.jit`` produces), its new value is updated from it, joined from the
layers' values along the axis (``concatenate``/``stack``) or made from a broadcast scalar, and
the pieces chain: what is written into each is computed from what was read of the one before
(layers, not the K/V pair of one layer's cache). ``_stacked.py`` slices a program along the
axis found here.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from hlopipe.stages import _jaxpr as J

Range = tuple[int, int]


class NotSliceable(Exception):
    """Why a stacked state argument cannot be sliced (a message for a StageError);
    ``seen``: how many distinct constant ranges of the axis were read before the reason."""

    def __init__(self, message: str, seen: int = 0) -> None:
        super().__init__(message)
        self.seen = seen


@dataclass(frozen=True)
class Layering:
    """How a state array is used along its axis ``axis``: in the disjoint ``pieces`` (the ranges
    read and written, and the gaps); ``layered`` when the pieces form a chain of layers in
    the order of the axis: what is written into each is computed from what was read of the
    one before (a layer axis, not the K/V pair of one layer's cache); ``root``: the value its
    new value is assembled from (a ``concatenate``/``stack`` of the layers' caches, or a
    broadcast scalar: an empty cache), ``None`` when it is updated from the argument itself."""

    axis: int
    pieces: tuple[Range, ...]
    layered: bool
    root: Any = None


def constants(closed: J.ClosedJaxpr) -> dict[Any, Any]:
    """The small integer values computed from literals and the program's constants only (the
    layer indices)."""
    jaxpr = closed.jaxpr
    known: dict[Any, Any] = {
        v: np.asarray(c)
        for v, c in zip(jaxpr.constvars, closed.consts, strict=True)
        if np.size(c) <= 16 and np.asarray(c).dtype.kind in "iub"
    }

    def value(v: Any) -> Any:
        return v.val if isinstance(v, J.Literal) else known.get(v)

    for e in jaxpr.eqns:
        if J.sub_jaxprs(e) or not e.invars:
            continue
        vals = [value(v) for v in e.invars]
        if any(x is None for x in vals) or any(np.size(o.aval) > 16 for o in e.outvars):
            continue
        if any(not jax.numpy.issubdtype(o.aval.dtype, jax.numpy.integer)
               and not jax.numpy.issubdtype(o.aval.dtype, jax.numpy.bool_)
               for o in e.outvars):  # fmt: skip
            continue
        with jax.ensure_compile_time_eval():
            outs = e.primitive.bind(*vals, **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        for o, x in zip(e.outvars, outs, strict=True):
            known[o] = np.asarray(x)
    return known


def const_int(var: Any, consts: dict[Any, Any], where: str) -> int:
    x = var.val if isinstance(var, J.Literal) else consts.get(var)
    if x is None or np.size(x) != 1:
        raise NotSliceable(f"{where} indexes the layer axis with a value known only at run time")
    return int(np.reshape(x, -1)[0])


UPDATES = ("dynamic_update_slice", "scatter")
JOINS = ("concatenate", "stack")


def _scatter_row(e: Any, axis: int, consts: dict[Any, Any], where: str) -> int:
    """The one index along ``axis`` a scatter writes (``cache.at[i].set(layer)``)."""
    dn = e.params["dimension_numbers"]
    one_row = (
        tuple(dn.scatter_dims_to_operand_dims) == (axis,)
        and tuple(dn.inserted_window_dims) == (axis,)
        and not tuple(getattr(dn, "operand_batching_dims", ()))
    )
    if not one_row:
        raise NotSliceable(f"scatter at {where} writes more than one index of axis {axis}")
    return const_int(e.invars[1], consts, f"scatter at {where}")


def _gather_row(e: Any, axis: int, consts: dict[Any, Any], where: str) -> int:
    """The one index along ``axis`` a gather starts at (``jnp.take(cache, [i], axis)``)."""
    dn = e.params["dimension_numbers"]
    if tuple(dn.start_index_map) != (axis,) or tuple(getattr(dn, "operand_batching_dims", ())):
        raise NotSliceable(f"gather at {where} indexes other axes than {axis}")
    return const_int(e.invars[1], consts, f"gather at {where}")


def touched_range(e: Any, axis: int, consts: dict[Any, Any]) -> Range:
    """The range of ``axis`` that equation ``e`` reads or writes of its first operand."""
    where, name = J.where(e), e.primitive.name
    if name == "dynamic_update_slice":
        i = const_int(e.invars[2 + axis], consts, f"{name} at {where}")
        return (i, i + e.invars[1].aval.shape[axis])
    if name == "scatter":
        i = _scatter_row(e, axis, consts, where)
        return (i, i + 1)
    if name == "gather":
        i = _gather_row(e, axis, consts, where)
        return (i, i + e.params["slice_sizes"][axis])
    if name == "slice" and (e.params["strides"] or (1,) * (axis + 1))[axis] == 1:
        return (e.params["start_indices"][axis], e.params["limit_indices"][axis])
    if name == "dynamic_slice":
        i = const_int(e.invars[1 + axis], consts, f"{name} at {where}")
        return (i, i + e.params["slice_sizes"][axis])
    raise NotSliceable(f"{name} at {where} uses it whole")


def join_parts(e: Any, axis: int, made: dict[Any, tuple[int, Any]]) -> list[tuple[Range, Any]]:
    """The operands of a ``concatenate``/``stack`` along ``axis`` with the range of the axis
    each fills (operands that are themselves concatenations along the axis opened up)."""
    name = e.primitive.name
    along = e.params.get("dimension") if name == "concatenate" else e.params.get("axis")
    if along != axis:
        raise NotSliceable(f"{name} at {J.where(e)} joins along axis {along}, not {axis}")
    parts: list[tuple[Range, Any]] = []
    at = 0
    for v in e.invars:
        n = 1 if name == "stack" else int(v.aval.shape[axis])
        inner = made.get(v)
        if name == "concatenate" and inner is not None and inner[1].primitive.name == name:
            try:
                sub = join_parts(inner[1], axis, made)
            except NotSliceable:
                sub = [((0, n), v)]
        else:
            sub = [((0, n), v)]
        parts += [((at + a, at + b), x) for (a, b), x in sub]
        at += n
    return parts


@dataclass(frozen=True)
class Index:
    """A jaxpr's equations by the values they make (``made``: value -> (index, equation)) and
    by the values they read (``users``: value -> the indices of its readers, in order)."""

    made: dict[Any, tuple[int, Any]]
    users: dict[Any, list[int]]

    @staticmethod
    def of(jaxpr: J.Jaxpr) -> Index:
        made: dict[Any, tuple[int, Any]] = {}
        users: dict[Any, list[int]] = {}
        for i, e in enumerate(jaxpr.eqns):
            for v in e.invars:
                if not isinstance(v, J.Literal):
                    users.setdefault(v, []).append(i)
            made.update((o, (i, e)) for o in e.outvars)
        return Index(made, users)


def layering(
    jaxpr: J.Jaxpr,
    start: Any,
    output: int,
    axis: int,
    consts: dict[Any, Any],
    index: Index | None = None,
) -> Layering:
    """How state argument ``start`` (a variable; ``None`` in a prefill, which makes the state)
    and its new value, output ``output``, use axis ``axis``: every read and update of it (and
    of its versions) must touch a constant range of the axis (``slice``, ``dynamic_slice``,
    ``dynamic_update_slice``, a one-row ``scatter``), and the new value must be updated from
    the argument, joined from the layers' values along the axis (``concatenate``, ``stack``)
    or made from a broadcast scalar. Raises :class:`NotSliceable` saying which equation does
    not. ``index``: the jaxpr's :class:`Index`, when the caller has it."""
    index = index or Index.of(jaxpr)
    made = index.made
    out = jaxpr.outvars[output]
    if isinstance(out, J.Literal):
        raise NotSliceable(f"output {output} is a constant")
    size = int(J.sds(out.aval).shape[axis])
    root = out
    while root in made and made[root][1].primitive.name in UPDATES:
        root = made[root][1].invars[0]
    touches: list[Range] = []
    reads: list[tuple[Range, Any]] = []  # (range, the value read)
    writes: list[tuple[Range, Any]] = []  # (range, the value written into it)
    chain = {start} if start is not None else set()
    bad_root = ""  # told after the reads: how many the axis has says if it looks stacked
    if root is not start:
        e = made[root][1] if root in made else None
        if e is not None and e.primitive.name in JOINS:
            for r, v in join_parts(e, axis, made):
                touches.append(r)
                writes.append((r, v))
        elif e is None or e.primitive.name != "broadcast_in_dim" or e.invars[0].aval.shape:
            bad_root = (
                f"output {output} is not updated from the argument, joined from the layers' "
                f"values along axis {axis}, nor made from a broadcast scalar"
            )
        chain.add(root)
    readers = [i for v in chain for i in index.users.get(v, ())]
    heapq.heapify(readers)
    seen: set[int] = set()
    try:
        while readers:  # the equations reading the state or a version of it, in order
            i = heapq.heappop(readers)
            if i in seen:
                continue
            seen.add(i)
            e = jaxpr.eqns[i]
            hit = [k for k, v in enumerate(e.invars) if not isinstance(v, J.Literal) and v in chain]
            if hit != [0]:
                raise NotSliceable(f"{e.primitive.name} at {J.where(e)} uses it whole")
            r = touched_range(e, axis, consts)
            if not 0 <= r[0] < r[1] <= size:
                raise NotSliceable(
                    f"{e.primitive.name} at {J.where(e)} touches {r} outside 0..{size}"
                )
            if e.primitive.name in UPDATES:
                chain.add(e.outvars[0])
                for u in index.users.get(e.outvars[0], ()):
                    heapq.heappush(readers, u)
                writes.append((r, e.invars[1 if e.primitive.name == "dynamic_update_slice" else 2]))
            else:
                reads.append((r, e.outvars[0]))
            touches.append(r)
        if bad_root:
            raise NotSliceable(bad_root)
    except NotSliceable as e:
        partial = {r for r in touches if r != (0, size)}
        raise NotSliceable(str(e), len(partial)) from None
    outs = [i for i, v in enumerate(jaxpr.outvars) if not isinstance(v, J.Literal) and v in chain]
    if outs != [output]:
        raise NotSliceable(f"its versions are outputs {outs}, not only its aliased output {output}")
    pieces = pieces_of(touches, size)
    layered = _chained(jaxpr, reads, writes, pieces)
    return Layering(axis, tuple(pieces), layered, None if root is start else root)


def _chained(
    jaxpr: J.Jaxpr,
    reads: Sequence[tuple[Range, Any]],
    writes: Sequence[tuple[Range, Any]],
    pieces: Sequence[Range],
) -> bool:
    """Whether the pieces touched form a chain of layers: what is written into each (after
    the first) is computed from what was read of the one before it (a layer's output is the
    next layer's input), not side by side (the K and V halves of one layer's cache)."""

    def piece(r: Range) -> int:
        return next(k for k, (a, b) in enumerate(pieces) if a <= r[0] and r[1] <= b)

    read: dict[int, set[Any]] = {}
    written: dict[int, set[Any]] = {}
    for r, v in reads:
        read.setdefault(piece(r), set()).add(v)
    for r, v in writes:
        if not isinstance(v, J.Literal):
            written.setdefault(piece(r), set()).add(v)
    touched = sorted(set(read) | set(written))
    if len(touched) < 2:
        return False
    for k, nxt in itertools.pairwise(touched):
        if k not in read or not written.get(nxt, set()) & _descendants(jaxpr, read[k]):
            return False
    return True


def _descendants(jaxpr: J.Jaxpr, start: set[Any]) -> set[Any]:
    seen = set(start)
    for e in jaxpr.eqns:
        if any(not isinstance(v, J.Literal) and v in seen for v in e.invars):
            seen.update(e.outvars)
    return seen


def pieces_of(ranges: Sequence[Range], size: int) -> list[Range]:
    """Disjoint pieces covering ``0..size``: the distinct ranges used, and the gaps."""
    used = sorted(set(ranges))
    for (a0, b0), (a1, b1) in itertools.pairwise(used):
        if a1 < b0:
            raise NotSliceable(f"layer ranges {a0}..{b0 - 1} and {a1}..{b1 - 1} overlap")
    out: list[Range] = []
    at = 0
    for a, b in used:
        if a > at:
            out.append((at, a))
        out.append((a, b))
        at = b
    if at < size:
        out.append((at, size))
    return out


def find_layer_axes(
    closed: J.ClosedJaxpr, roles: Any, consts: dict[Any, Any]
) -> tuple[dict[int, Layering], dict[int, dict[int, str]], dict[int, list[int]]]:
    """Per state argument of ``closed``, its layer axis told by data flow (the
    :class:`Layering` of the axis read and written in most pieces, a chain of layers first);
    for those without one, why not, per axis; and their candidate axes (read at two or more
    constant ranges before the reason)."""
    found: dict[int, Layering] = {}
    why: dict[int, dict[int, str]] = {}
    candidates: dict[int, list[int]] = {}
    index = Index.of(closed.jaxpr)
    for r in roles.state:
        if r.output is None:
            continue
        best: Layering | None = None
        reasons: dict[int, str] = {}
        for axis in range(len(r.shape)):
            if r.shape[axis] < 2:
                continue
            try:
                start = closed.jaxpr.invars[r.index]
                lay = layering(closed.jaxpr, start, r.output, axis, consts, index)
            except NotSliceable as e:
                reasons[axis] = str(e)
                if e.seen > 1:
                    candidates.setdefault(r.index, []).append(axis)
                continue
            if len(lay.pieces) > 1 and (
                best is None or (lay.layered, len(lay.pieces)) > (best.layered, len(best.pieces))
            ):
                best = lay
        if best is not None:
            found[r.index] = best
        else:
            why[r.index] = reasons
    return found, why, candidates


def axis_reasons(
    why: Mapping[int, str], source: str | None, axes: Sequence[int] | None = None
) -> str:
    """``axis 0: ...; axis 2: ...`` (of ``axes``, default all), an equation located in the
    program's file ``source`` rather than in hlopipe's interpreter."""
    text = "; ".join(f"axis {a}: {w}" for a, w in why.items() if axes is None or a in axes)
    text = text or "no axis is read in parts"
    return re.sub(r" at \S*hlopipe/\S+ \([^)]*\)", f" in {source}" if source else "", text)
