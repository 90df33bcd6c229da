"""A state argument stacked over the layers (one array for every layer, its layer axis anywhere:
``[L, b, ...]``, keras_hub's ``[b, L, 2, T, ...]``) sliced per stage along that axis, so that
each stage keeps only the rows of the layers it runs.

The layer axis is told by data flow (``_layer_axis.py``: :func:`~hlopipe.stages._layer_axis.
layering`, :func:`~hlopipe.stages._layer_axis.find_layer_axes`). The program is then re-traced
with the array replaced by pieces, one per range, each indexed relative to its start, and a join
of the layers made piece by piece as soon as its layers' values are; split once to learn which
stage uses which piece, the pieces of a stage are merged into one argument and the program split
again. :func:`split_stacked` does that when the whole array would cross stages;
:func:`prefer_stacked` whenever the array has a layer axis (else the whole array would stay on
one stage with every layer), with warnings for arrays that look stacked but cannot be sliced.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._layer_axis import (
    JOINS,
    UPDATES,
    Index,
    Layering,
    NotSliceable,
    Range,
    axis_reasons,
    const_int,
    constants,
    find_layer_axes,
    join_parts,
    layering,
    touched_range,
)


@dataclass(frozen=True)
class Stacked:
    """Original state argument ``arg`` (aliased to output ``output``) cut into ``ranges`` of its
    layer axis ``axis``; the pieces are new arguments ``args`` and new outputs ``outputs``."""

    arg: int
    output: int
    path: str
    ranges: tuple[Range, ...]
    args: tuple[int, ...]
    outputs: tuple[int, ...]
    axis: int = 0


@dataclass(eq=False)
class StackedSplit:
    """The result of :func:`split_stacked`: ``split`` (a ``StatefulSplit`` of the re-traced
    program), its ``roles``, and the ``stacks`` sliced."""

    split: Any
    roles: Any
    stacks: list[Stacked]
    original_roles: Any

    def assemble(self, by_arg: dict[int, Any]) -> list[np.ndarray]:
        """The original program's state arguments, in order, from ``{new argument: value}``
        (the pieces of a stacked one joined along its layer axis)."""
        stacked = {s.arg: s for s in self.stacks}
        new_of = _new_index(self.original_roles, self.stacks)
        out = []
        for r in self.original_roles.state:
            if r.index in stacked:
                s = stacked[r.index]
                out.append(np.concatenate([np.asarray(by_arg[a]) for a in s.args], axis=s.axis))
            else:
                out.append(np.asarray(by_arg[new_of[r.index]]))
        return out

    def disassemble(self, flat: Sequence[Any]) -> dict[int, Any]:
        """``{new argument: value}`` from the original state arguments in order."""
        stacked = {s.arg: s for s in self.stacks}
        new_of = _new_index(self.original_roles, self.stacks)
        got: dict[int, Any] = {}
        for r, value in zip(self.original_roles.state, flat, strict=True):
            if r.index not in stacked:
                got[new_of[r.index]] = value
                continue
            s = stacked[r.index]
            arr = np.asarray(value)
            for (a, b), new in zip(s.ranges, s.args, strict=True):
                got[new] = np.take(arr, np.arange(a, b), axis=s.axis)
        return got


def _new_index(roles: Any, stacks: Sequence[Stacked]) -> dict[int, int]:
    """Original argument -> new argument (for those not stacked)."""
    extra = {s.arg: len(s.ranges) - 1 for s in stacks}
    shift, out = 0, {}
    for r in roles:
        out[r.index] = r.index + shift
        shift += extra.get(r.index, 0)
    return out


class _Pieces:
    """A stacked array held as pieces of its layer axis (while re-tracing)."""

    def __init__(self, axis: int, ranges: Sequence[Range], arrays: Sequence[Any]) -> None:
        self.axis, self.ranges, self.arrays = axis, list(ranges), list(arrays)

    def get(self, k: int) -> Any:
        """Piece ``k`` (one made inside the program is made at its first use, on the stage
        that uses it)."""
        if callable(self.arrays[k]):
            self.arrays[k] = self.arrays[k]()
        return self.arrays[k]

    def find(self, r: Range) -> int:
        for k, (a, b) in enumerate(self.ranges):
            if a <= r[0] and r[1] <= b:
                return k
        raise NotSliceable(f"layers {r[0]}..{r[1] - 1} span two pieces {self.ranges}")


def _apply(e: Any, vals: list[Any], consts: dict[Any, Any]) -> Any:
    """Equation ``e`` on the pieces ``vals[0]``, indexed relative to the piece's start."""
    pcs: _Pieces = vals[0]
    ax, name, lax = pcs.axis, e.primitive.name, jax.lax
    k = pcs.find(touched_range(e, ax, consts))
    a = pcs.ranges[k][0]
    if name in UPDATES:
        if name == "dynamic_update_slice":
            at = list(vals[2:])
            at[ax] = const_int(e.invars[2 + ax], consts, name) - a
            new = lax.dynamic_update_slice(pcs.get(k), vals[1], at)
        else:
            row = const_int(e.invars[1], consts, name) - a
            idx = np.full(e.invars[1].aval.shape, row, e.invars[1].aval.dtype)
            new = e.primitive.bind(
                pcs.get(k), idx, vals[2], **e.primitive.get_bind_params(e.params)
            )
        return _Pieces(ax, pcs.ranges, [*pcs.arrays[:k], new, *pcs.arrays[k + 1 :]])
    if name == "gather":
        row = const_int(e.invars[1], consts, name) - a
        idx = np.full(e.invars[1].aval.shape, row, e.invars[1].aval.dtype)
        return e.primitive.bind(pcs.get(k), idx, **e.primitive.get_bind_params(e.params))
    if name == "slice":
        start, limit = list(e.params["start_indices"]), list(e.params["limit_indices"])
        start[ax], limit[ax] = start[ax] - a, limit[ax] - a
        return lax.slice(pcs.get(k), start, limit, e.params["strides"])
    at = list(vals[1:])  # dynamic_slice
    at[ax] = const_int(e.invars[1 + ax], consts, name) - a
    return lax.dynamic_slice(pcs.get(k), at, e.params["slice_sizes"])


def _join(e: Any, operands: list[Any], axis: int) -> Any:
    """``e`` (a ``concatenate``/``stack`` along ``axis``) of some of its operands: one piece."""
    if e.primitive.name == "stack":
        return e.primitive.bind(*operands, **e.params)
    return operands[0] if len(operands) == 1 else jax.lax.concatenate(operands, axis)


Spec = dict[int, tuple[int, list[Range]]]  # state argument -> (layer axis, ranges)


def _retraced(
    closed: J.ClosedJaxpr, spec: Spec, consts: dict[Any, Any], roots: Mapping[Any, Any]
) -> Any:
    """The program over the new flat arguments (each stacked one as its pieces, in place);
    ``roots``: ``{value: (axis, ranges)}`` of the stacked values made in the program (joined
    from the layers' values, or an empty cache broadcast from a scalar) made as pieces."""
    jaxpr = closed.jaxpr
    made = {o: (i, e) for i, e in enumerate(jaxpr.eqns) for o in e.outvars}
    asap = _asap(jaxpr, roots, Index.of(jaxpr))
    joins = {  # each piece of a join in roots: the join and the operands falling in it
        (root, k): (made[root][1], [v for (lo, hi), v in parts if a <= lo and hi <= b])
        for root, (axis, ranges) in roots.items()
        if root in made and made[root][1].primitive.name in JOINS
        for parts in [join_parts(made[root][1], axis, made)]
        for k, (a, b) in enumerate(ranges)
    }

    def fn(*new_args: Any) -> list[Any]:
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
        it = iter(new_args)
        for i, v in enumerate(jaxpr.invars):
            if i in spec:
                axis, ranges = spec[i]
                env[v] = _Pieces(axis, ranges, [next(it) for _ in ranges])
            else:
                env[v] = next(it)

        def read(v: Any) -> Any:
            return v.val if isinstance(v, J.Literal) else env[v]

        pieces: dict[tuple[Any, int], Any] = {}  # (join, piece) -> made as soon as it can be

        def bind(e: Any) -> None:
            vals = [read(v) for v in e.invars]
            with e.ctx.manager:
                outs = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
            for o, x in zip(e.outvars, outs if e.primitive.multiple_results else [outs],
                            strict=True):  # fmt: skip
                env[o] = x
            settle()
            for key, (join, ops) in joins.items():
                if key not in pieces and all(v in env for v in ops):
                    pieces[key] = _join(join, [read(v) for v in ops], roots[join.outvars[0]][0])

        pending = list(asap)

        def settle() -> None:  # each layer's value for a join made as soon as it can be
            ready = [e for e in pending if all(isinstance(v, J.Literal) or v in env
                                               for v in e.invars)]  # fmt: skip
            for e in ready:
                pending.remove(e)
            for e in ready:
                bind(e)

        settle()
        done = {id(e) for e in asap}
        for e in jaxpr.eqns:
            if id(e) in done:
                continue
            vals = [read(v) for v in e.invars]
            if vals and isinstance(vals[0], _Pieces):
                env[e.outvars[0]] = _apply(e, vals, consts)
                continue
            if e.outvars and e.outvars[0] in roots:
                axis, ranges = roots[e.outvars[0]]
                if e.primitive.name in JOINS:
                    arrays = [pieces[(e.outvars[0], k)] for k in range(len(ranges))]
                    env[e.outvars[0]] = _Pieces(axis, ranges, arrays)
                    continue
                shape = list(e.outvars[0].aval.shape)
                made_as = []
                for a, b in ranges:
                    shape[axis] = b - a
                    made_as.append(functools.partial(jax.lax.broadcast_in_dim, vals[0],
                                                     tuple(shape), ()))  # fmt: skip
                env[e.outvars[0]] = _Pieces(axis, ranges, made_as)
                continue
            bind(e)
        flat: list[Any] = []
        for v in jaxpr.outvars:
            x = read(v)
            flat.extend([x.get(k) for k in range(len(x.arrays))] if isinstance(x, _Pieces) else [x])
        return flat

    return fn


def _asap(jaxpr: J.Jaxpr, roots: Mapping[Any, Any], index: Index) -> list[Any]:
    """The equations that only make the layers' values for a join in ``roots`` (their results
    read by nothing else: ``jnp.stack`` reshapes every layer's cache after the last layer, and
    XLA may join a layer's K and V there too), in program order. Re-traced as soon as their
    inputs are made, each layer's piece is made in its layer, on its stage."""
    targets = {index.made[r][0] for r in roots if r in index.made}
    targets = {i for i in targets if jaxpr.eqns[i].primitive.name in JOINS}
    if not targets:
        return []
    outs = {v for v in jaxpr.outvars if not isinstance(v, J.Literal)}
    chosen: set[int] = set()
    for i in range(max(targets) - 1, -1, -1):
        e = jaxpr.eqns[i]
        if e.effects or not e.outvars or any(o in outs for o in e.outvars):
            continue
        readers = [u for o in e.outvars for u in index.users.get(o, ())]
        if readers and all(u in chosen or u in targets for u in readers):
            chosen.add(i)
    return [jaxpr.eqns[i] for i in sorted(chosen)]


def _piece_path(path: str, axis: int, a: int, b: int) -> str:
    """``[1][0:2]`` for rows 0..1 of a cache stacked on its first axis, ``[1][:, 0:2]`` on its
    second."""
    return f"{path}[{':, ' * axis}{a}:{b}]"


def _roles_for(roles: Any, spec: Spec, n_out: int) -> tuple[Any, list[Stacked]]:
    from hlopipe.io import ArgRoles

    out_of = {r.output: r.index for r in roles if r.index in spec}
    out_map: dict[int, list[int]] = {}
    at = 0
    for o in range(n_out):
        k = len(spec[out_of[o]][1]) if o in out_of else 1
        out_map[o], at = list(range(at, at + k)), at + k
    new: list[Any] = []
    stacks: list[Stacked] = []
    for r in roles:
        if r.index not in spec:
            out = None if r.output is None else out_map[r.output][0]
            new.append(replace(r, index=len(new), output=out))
            continue
        axis, ranges = spec[r.index]
        args = []
        for k, (a, b) in enumerate(ranges):
            why = f"layers {a}..{b - 1} of the stacked {r.path} ({r.reason})"
            shape = list(r.shape)
            shape[axis] = b - a
            piece = replace(r, index=len(new), path=_piece_path(r.path, axis, a, b), reason=why,
                            output=out_map[r.output][k], shape=tuple(shape))  # fmt: skip
            args.append(piece.index)
            new.append(piece)
        stacks.append(Stacked(r.index, r.output, r.path, tuple(ranges), tuple(args),
                              tuple(out_map[r.output]), axis))  # fmt: skip
    return ArgRoles(new), stacks


def _traced(program: Any) -> tuple[J.ClosedJaxpr, dict[Any, Any]]:
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals]
    closed = jax.make_jaxpr(program.as_function(flat=True))(*avals)
    return closed, constants(closed)


def split_stacked(
    program: Any, roles: Any, *, num_stages: int | None, what: str, refused: StageError
) -> StackedSplit:
    """Split ``program`` with each stacked state argument sliced per stage (see the module).

    Raises:
      StageError: ``refused`` with the reason when no state argument can be sliced, or the
        error of the sliced program (a stage reading another stage's layers).
    """
    closed, consts = _traced(program)
    found, why, _ = find_layer_axes(closed, roles, consts)
    if not found:
        source = getattr(program, "source", None)
        reasons = "; ".join(f"{roles[a].path}: {axis_reasons(w, source)}" for a, w in why.items())
        reasons = reasons or "no state argument is indexed along a layer axis"
        raise StageError(f"{refused} (not sliceable along the layer axis: {reasons})") from refused
    return _split_sliced(program, closed, consts, roles, found, num_stages, what)


def prefer_stacked(
    program: Any,
    roles: Any,
    *,
    num_stages: int | None,
    what: str,
    closed: J.ClosedJaxpr | None = None,
) -> tuple[StackedSplit | None, list[str]]:
    """For a program whose state can stay whole on one stage: the split with each state
    argument stacked over the layers (its layer axis told by data flow: each layer reads its
    own index) sliced per stage, so that the layers spread over the stages with their cache;
    ``None`` when no state argument has a layer axis (or the sliced program does not split).
    Also the warnings of the state kept whole that looks stacked: read at several indices of
    an axis that cannot be told to be its layer axis (naming the array and the axes).
    ``closed``: the program already traced (a split's ``StagedProgram.jaxpr``), if at hand."""
    if closed is None:
        closed, consts = _traced(program)
    else:
        consts = constants(closed)
    found, why, candidates = find_layer_axes(closed, roles, consts)
    layered = {a: lay for a, lay in found.items() if lay.layered}
    source = getattr(program, "source", None)
    notes = [
        f"warning: state {roles[a].path} {roles[a].dtype}{list(roles[a].shape)} is read at "
        f"several indices of axis {' or '.join(map(str, axes))}, but that cannot be told to be "
        f"its layer axis ({axis_reasons(why[a], source, axes)}); it is kept whole on one stage: "
        "keep one cache per layer, or write each layer's rows back with dynamic_update_slice, "
        "a scatter of one row, or a stack/concatenate of the layers' caches"
        for a, axes in candidates.items()
        if a in why
    ]
    if not layered:
        return None, notes
    try:
        sliced = _split_sliced(program, closed, consts, roles, layered, num_stages, what)
    except StageError as e:
        names = ", ".join(roles[a].path for a in layered)
        return None, [*notes, f"warning: {names} kept whole on one stage: sliced along the "
                      f"layer axis, the program does not split ({e})"]  # fmt: skip
    return sliced, notes


def _split_sliced(
    program: Any,
    closed: J.ClosedJaxpr,
    consts: dict[Any, Any],
    roles: Any,
    found: Mapping[int, Layering],
    num_stages: int | None,
    what: str,
) -> StackedSplit:
    """The split of ``closed`` with the state arguments ``found`` sliced along their axes: by
    the ranges used, then the pieces one stage keeps merged."""
    from hlopipe.stages._state import split_stateful

    spec: Spec = {a: (lay.axis, list(lay.pieces)) for a, lay in found.items()}
    n_out = len(closed.jaxpr.outvars)
    for _ in range(2):  # by the ranges used, then merged per stage
        new_roles, stacks = _roles_for(roles, spec, n_out)
        example = [jax.ShapeDtypeStruct(r.shape, np.dtype(r.dtype)) for r in new_roles]
        roots = {lay.root: spec[a] for a, lay in found.items() if lay.root is not None}
        fn = _retraced(closed, spec, consts, roots)
        try:
            split = split_stateful(fn, new_roles, num_stages=num_stages, example_args=example,
                                   what=what)  # fmt: skip
        except StageError as e:
            sliced = ", ".join(f"{s.path} into {list(s.ranges)}" for s in stacks)
            raise StageError(f"{e} (after slicing {sliced} along the layer axis)") from e
        stage_of = {x.arg: x.stage for x in split.slots}
        spec = {s.arg: (s.axis, _merge(s, stage_of)) for s in stacks}
    return StackedSplit(split, new_roles, stacks, roles)


def _merge(s: Stacked, stage_of: dict[int, int]) -> list[Range]:
    """Consecutive pieces kept by one stage merged into one range."""
    out: list[Range] = []
    last = None
    for (a, b), arg in zip(s.ranges, s.args, strict=True):
        if out and stage_of[arg] == last:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
        last = stage_of[arg]
    return out


@dataclass(eq=False)
class RetracedProgram:
    """A program re-traced with stacked outputs made as pieces: what ``split`` and the
    generator read of a loaded Program (``as_function``, ``in_avals``, ``out_avals``)."""

    source: str
    in_avals: list[Any]
    out_avals: list[Any]
    fn: Any

    def as_function(self, flat: bool = True) -> Any:
        return self.fn


def retrace_outputs(
    program: Any, outputs: Mapping[int, tuple[int, Sequence[Range]]], what: str
) -> Any:
    """``program`` (a prefill) with each output in ``outputs`` (``{output: (layer axis,
    ranges)}``: a stacked array made inside it, an empty cache updated layer by layer or the
    layers' caches joined) made as pieces of its layer axis: the same slices as the decode
    step's. Raises StageError naming the output when it cannot be."""
    closed, consts = _traced(program)
    roots: dict[Any, tuple[int, list[Range]]] = {}
    for o, (axis, ranges) in outputs.items():
        try:
            lay = layering(closed.jaxpr, None, o, axis, consts)
            probe = _Pieces(axis, ranges, [])
            for r in lay.pieces:
                probe.find(r)
        except NotSliceable as e:
            raise StageError(
                f"{what}: its stacked output {o} cannot be made in the decode step's slices "
                f"{list(ranges)} of axis {axis}: {e}"
            ) from e
        roots[lay.root] = (axis, list(ranges))
    out_avals: list[Any] = []
    for o, a in enumerate(closed.out_avals):
        if o not in outputs:
            out_avals.append(jax.ShapeDtypeStruct(a.shape, a.dtype))
            continue
        axis, ranges = outputs[o]
        for s, b in ranges:
            shape = list(a.shape)
            shape[axis] = b - s
            out_avals.append(jax.ShapeDtypeStruct(tuple(shape), a.dtype))
    fn = _retraced(closed, {}, consts, roots)
    source = getattr(program, "source", "")
    return RetracedProgram(source, list(program.in_avals), out_avals, fn)
