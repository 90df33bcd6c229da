"""A state argument stacked over the layers (``[L, ...]``, one array for every layer) sliced
per stage along its leading axis, so that each stage keeps only the ``[L_s, ...]`` it uses.

It is sliceable when every read and update of the array (and of its updated versions) touches
a static range of the leading axis: ``slice``, ``dynamic_slice`` and ``dynamic_update_slice``
with a constant index there (what a loop over layers unrolled by ``jax.jit`` produces). The
program is then re-traced with the array replaced by pieces, one per range, each indexed
relative to its start; split once to learn which stage uses which piece, the pieces of a
stage are merged into one ``[L_s, ...]`` argument and the program split again.
:func:`split_stacked` does that and gives the new argument roles and how to reassemble.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J

Range = tuple[int, int]


class NotSliceable(Exception):
    """Why a stacked state argument cannot be sliced (a message for a StageError)."""


@dataclass(frozen=True)
class Stacked:
    """Original state argument ``arg`` (aliased to output ``output``) cut into ``ranges`` of its
    leading axis; the pieces are new arguments ``args`` and new outputs ``outputs``."""

    arg: int
    output: int
    path: str
    ranges: tuple[Range, ...]
    args: tuple[int, ...]
    outputs: tuple[int, ...]


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
        (the pieces of a stacked one concatenated along its leading axis)."""
        stacked = {s.arg: s for s in self.stacks}
        new_of = _new_index(self.original_roles, self.stacks)
        out = []
        for r in self.original_roles.state:
            if r.index in stacked:
                parts = [np.asarray(by_arg[a]) for a in stacked[r.index].args]
                out.append(np.concatenate(parts, axis=0))
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
            arr = np.asarray(value)
            for (a, b), new in zip(stacked[r.index].ranges, stacked[r.index].args, strict=True):
                got[new] = arr[a:b]
        return got


def _new_index(roles: Any, stacks: Sequence[Stacked]) -> dict[int, int]:
    """Original argument -> new argument (for those not stacked)."""
    extra = {s.arg: len(s.ranges) - 1 for s in stacks}
    shift, out = 0, {}
    for r in roles:
        out[r.index] = r.index + shift
        shift += extra.get(r.index, 0)
    return out


def _constants(jaxpr: Any) -> dict[Any, Any]:
    """The small integer values computed from literals only (the layer indices)."""
    known: dict[Any, Any] = {}

    def value(v: Any) -> Any:
        return v.val if isinstance(v, J.Literal) else known.get(v)

    for e in jaxpr.eqns:
        if J.sub_jaxprs(e) or not e.invars:
            continue
        vals = [value(v) for v in e.invars]
        if any(x is None for x in vals) or any(np.size(o.aval) > 16 for o in e.outvars):
            continue
        if any("int" not in str(o.aval.dtype) and "bool" not in str(o.aval.dtype)
               for o in e.outvars):  # fmt: skip
            continue
        with jax.ensure_compile_time_eval():
            outs = e.primitive.bind(*vals, **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        for o, x in zip(e.outvars, outs, strict=True):
            known[o] = np.asarray(x)
    return known


def _const_int(var: Any, consts: dict[Any, Any], where: str) -> int:
    x = var.val if isinstance(var, J.Literal) else consts.get(var)
    if x is None:
        raise NotSliceable(f"{where} indexes the layer axis with a value known only at run time")
    return int(x)


def uses(jaxpr: Any, start: Any, output: int, consts: dict[Any, Any]) -> list[Range]:
    """The leading-axis ranges every read and update of ``start`` (an argument, or a stacked
    array made in the program, and its versions) touches, in program order; raises
    :class:`NotSliceable` saying which equation does not."""
    chain = {start}
    size = start.aval.shape[0] if start.aval.shape else 0
    found: list[Range] = []
    for e in jaxpr.eqns:
        hit = [i for i, v in enumerate(e.invars) if not isinstance(v, J.Literal) and v in chain]
        if not hit:
            continue
        where, name = J.where(e), e.primitive.name
        if hit != [0]:
            raise NotSliceable(f"{name} at {where} uses it whole")
        if name == "dynamic_update_slice":
            i = _const_int(e.invars[2], consts, f"{name} at {where}")
            r = (i, i + e.invars[1].aval.shape[0])
            chain.add(e.outvars[0])
        elif name == "slice" and (e.params["strides"] or (1,))[0] == 1:
            r = (e.params["start_indices"][0], e.params["limit_indices"][0])
        elif name == "dynamic_slice":
            i = _const_int(e.invars[1], consts, f"{name} at {where}")
            r = (i, i + e.params["slice_sizes"][0])
        else:
            raise NotSliceable(f"{name} at {where} uses it whole")
        if not 0 <= r[0] < r[1] <= size:
            raise NotSliceable(f"{name} at {where} touches layers {r} outside 0..{size}")
        found.append(r)
    outs = [i for i, v in enumerate(jaxpr.outvars) if not isinstance(v, J.Literal) and v in chain]
    if outs != [output]:
        raise NotSliceable(f"its versions are outputs {outs}, not only its aliased output {output}")
    return found


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


class _Pieces:
    """A stacked array held as pieces of its leading axis (while re-tracing)."""

    def __init__(self, ranges: Sequence[Range], arrays: Sequence[Any]) -> None:
        self.ranges, self.arrays = list(ranges), list(arrays)

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
    name, lax = e.primitive.name, jax.lax
    if name == "dynamic_update_slice":
        i = _const_int(e.invars[2], consts, name)
        k = pcs.find((i, i + e.invars[1].aval.shape[0]))
        new = lax.dynamic_update_slice(pcs.get(k), vals[1], [i - pcs.ranges[k][0], *vals[3:]])
        return _Pieces(pcs.ranges, [*pcs.arrays[:k], new, *pcs.arrays[k + 1 :]])
    if name == "slice":
        start, limit = e.params["start_indices"], e.params["limit_indices"]
        k = pcs.find((start[0], limit[0]))
        a = pcs.ranges[k][0]
        return lax.slice(pcs.get(k), (start[0] - a, *start[1:]), (limit[0] - a, *limit[1:]),
                         e.params["strides"])  # fmt: skip
    i = _const_int(e.invars[1], consts, name)  # dynamic_slice
    k = pcs.find((i, i + e.params["slice_sizes"][0]))
    return lax.dynamic_slice(pcs.get(k), [i - pcs.ranges[k][0], *vals[2:]], e.params["slice_sizes"])


def _retraced(
    closed: Any,
    spec: dict[int, list[Range]],
    consts: dict[Any, Any],
    roots: dict[Any, Sequence[Range]] | None = None,
) -> Any:
    """The program over the new flat arguments (each stacked one as its pieces, in place);
    ``roots``: stacked arrays made in the program (a broadcast scalar) made as pieces."""
    jaxpr = closed.jaxpr
    roots = roots or {}

    def fn(*new_args: Any) -> list[Any]:
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, closed.consts, strict=True))
        it = iter(new_args)
        for i, v in enumerate(jaxpr.invars):
            env[v] = _Pieces(spec[i], [next(it) for _ in spec[i]]) if i in spec else next(it)

        def read(v: Any) -> Any:
            return v.val if isinstance(v, J.Literal) else env[v]

        for e in jaxpr.eqns:
            vals = [read(v) for v in e.invars]
            if vals and isinstance(vals[0], _Pieces):
                env[e.outvars[0]] = _apply(e, vals, consts)
                continue
            if e.outvars and e.outvars[0] in roots:
                shape = e.outvars[0].aval.shape
                make = functools.partial(jax.lax.broadcast_in_dim, vals[0])
                made = [functools.partial(make, (b - a, *shape[1:]), ())
                        for a, b in roots[e.outvars[0]]]  # fmt: skip
                env[e.outvars[0]] = _Pieces(roots[e.outvars[0]], made)
                continue
            with e.ctx.manager:
                outs = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
            for o, x in zip(e.outvars, outs if e.primitive.multiple_results else [outs],
                            strict=True):  # fmt: skip
                env[o] = x
        flat: list[Any] = []
        for v in jaxpr.outvars:
            x = read(v)
            flat.extend([x.get(k) for k in range(len(x.arrays))] if isinstance(x, _Pieces) else [x])
        return flat

    return fn


def _roles_for(roles: Any, spec: dict[int, list[Range]], n_out: int) -> tuple[Any, list[Stacked]]:
    from hlopipe.io import ArgRoles

    out_of = {r.output: r.index for r in roles if r.index in spec}
    out_map: dict[int, list[int]] = {}
    at = 0
    for o in range(n_out):
        k = len(spec[out_of[o]]) if o in out_of else 1
        out_map[o], at = list(range(at, at + k)), at + k
    new: list[Any] = []
    stacks: list[Stacked] = []
    for r in roles:
        if r.index not in spec:
            out = None if r.output is None else out_map[r.output][0]
            new.append(replace(r, index=len(new), output=out))
            continue
        args = []
        for k, (a, b) in enumerate(spec[r.index]):
            why = f"layers {a}..{b - 1} of the stacked {r.path} ({r.reason})"
            piece = replace(r, index=len(new), path=f"{r.path}[{a}:{b}]", reason=why,
                            output=out_map[r.output][k], shape=(b - a, *r.shape[1:]))  # fmt: skip
            args.append(piece.index)
            new.append(piece)
        stacks.append(Stacked(r.index, r.output, r.path, tuple(spec[r.index]), tuple(args),
                              tuple(out_map[r.output])))  # fmt: skip
    return ArgRoles(new), stacks


def split_stacked(
    program: Any, roles: Any, *, num_stages: int | None, what: str, refused: StageError
) -> StackedSplit:
    """Split ``program`` with each stacked state argument sliced per stage (see the module).

    Raises:
      StageError: ``refused`` with the reason when no state argument can be sliced, or the
        error of the sliced program (a stage reading another stage's layers).
    """
    from hlopipe.stages._state import split_stateful

    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals]
    closed = jax.make_jaxpr(program.as_function(flat=True))(*avals)
    consts = _constants(closed.jaxpr)
    spec: dict[int, list[Range]] = {}
    why = []
    for r in roles.state:
        try:
            size = r.shape[0] if r.shape else 0
            used = uses(closed.jaxpr, closed.jaxpr.invars[r.index], r.output, consts)
            pieces = pieces_of(used, size)
        except NotSliceable as e:
            why.append(f"{r.path}: {e}")
            continue
        if len(pieces) > 1:
            spec[r.index] = pieces
    if not spec:
        reasons = "; ".join(why) or "no state argument is indexed along a layer axis"
        raise StageError(f"{refused} (not sliceable along the layer axis: {reasons})") from refused
    n_out = len(closed.jaxpr.outvars)
    for _ in range(2):  # by the ranges used, then merged per stage
        new_roles, stacks = _roles_for(roles, spec, n_out)
        example = [jax.ShapeDtypeStruct(r.shape, np.dtype(r.dtype)) for r in new_roles]
        fn = _retraced(closed, spec, consts)
        try:
            split = split_stateful(fn, new_roles, num_stages=num_stages, example_args=example,
                                   what=what)  # fmt: skip
        except StageError as e:
            sliced = ", ".join(f"{s.path} into {list(s.ranges)}" for s in stacks)
            raise StageError(f"{e} (after slicing {sliced} along the layer axis)") from e
        stage_of = {x.arg: x.stage for x in split.slots}
        spec = {s.arg: _merge(s, stage_of) for s in stacks}
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


def _root_of(jaxpr: Any, output: int) -> Any:
    """The stacked array an output is updated from: a scalar broadcast, through updates."""
    made = {o: e for e in jaxpr.eqns for o in e.outvars}
    v = jaxpr.outvars[output]
    while v in made and made[v].primitive.name == "dynamic_update_slice":
        v = made[v].invars[0]
    e = made.get(v)
    if e is None or e.primitive.name != "broadcast_in_dim" or e.invars[0].aval.shape:
        raise NotSliceable(f"output {output} is not updated from a broadcast scalar")
    return v


def retrace_outputs(program: Any, outputs: Mapping[int, Sequence[Range]], what: str) -> Any:
    """``program`` (a prefill) with each output in ``outputs`` (a stacked array made inside
    it) made as pieces of its leading axis, ``ranges`` each: the same slices as the decode
    step's. Raises StageError naming the output when it cannot be."""
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in program.in_avals]
    closed = jax.make_jaxpr(program.as_function(flat=True))(*avals)
    consts = _constants(closed.jaxpr)
    roots: dict[Any, Sequence[Range]] = {}
    for o, ranges in outputs.items():
        try:
            root = _root_of(closed.jaxpr, o)
            probe = _Pieces(ranges, [])
            for r in uses(closed.jaxpr, root, o, consts):
                probe.find(r)
        except NotSliceable as e:
            raise StageError(
                f"{what}: its stacked output {o} cannot be made in the decode step's slices "
                f"{list(ranges)}: {e}"
            ) from e
        roots[root] = ranges
    out_avals: list[Any] = []
    for o, a in enumerate(closed.out_avals):
        rs = outputs.get(o, [(0, a.shape[0] if a.shape else 0)])
        out_avals.extend(
            jax.ShapeDtypeStruct((b - s, *a.shape[1:]) if o in outputs else a.shape, a.dtype)
            for s, b in rs
        )
    fn = _retraced(closed, {}, consts, roots)
    source = getattr(program, "source", "")
    return RetracedProgram(source, list(program.in_avals), out_avals, fn)
