"""Following one axis of an argument through a program by data flow: which axis of each
output holds the argument's rows (:func:`row_axes`).

A prefill's prompt is ``[b, L]``: row ``i`` is sequence ``i``. Writing one sequence's cache
row into a decode state needs the axis of each state output that row ``i`` of the prompt
lands on. It is read from the program, equation by equation: each value carries the set of
its axes that hold the rows (none: the value does not depend on them; an axis of ``n * b``
elements for ``b`` rows holds row ``i`` at ``i * n .. i * n + n - 1``). An equation that only
moves or combines values position by position (elementwise ops, broadcasts, reshapes that keep
the axis whole or merge it with the axes after it or split those again, transposes, slices
and updates that leave the axis whole, products and reductions over other axes, a gather
indexed by the rows, a scatter whose indices do not carry the rows writing whole along them:
a vmapped cache write) maps the axes; one that mixes rows (a reduction or a product over the
axis, a reshape that merges it with an axis before it or splits it across two, an update at a
position computed from the rows) or an equation this module has no rule for loses them, and
the outputs that depend on it say where (:class:`RowAxes`): never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from hlopipe.stages import _jaxpr as J


class RowAxes(NamedTuple):
    """An output's axes holding the rows (empty: it does not depend on them), or, when an
    equation on the way mixed them or has no rule here, ``lost``: that equation's primitive
    and source location."""

    axes: frozenset[int]
    lost: str | None = None


_NONE = RowAxes(frozenset())

# position by position: an output element reads the same element of each operand (an operand
# of rank 0, or of size 1 along an axis, broadcast)
_ELEMENTWISE = frozenset({
    "abs", "acos", "acosh", "add", "and", "asin", "asinh", "atan", "atan2", "atanh", "cbrt",
    "ceil", "clamp", "convert_element_type", "copy", "copy_p", "cos", "cosh", "div", "eq",
    "erf", "erf_inv", "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "imag",
    "integer_pow", "is_finite", "le", "log", "log1p", "logistic", "lt", "max", "min", "mul",
    "ne", "neg", "nextafter", "not", "or", "pow", "real", "reduce_precision", "rem", "round",
    "rsqrt", "select_n", "shift_left", "shift_right_arithmetic", "shift_right_logical",
    "sign", "sin", "sinh", "sqrt", "square", "stop_gradient", "sub", "tan", "tanh", "xor",
})  # fmt: skip
# each output is its operand of the same index (a barrier, a stage marker)
_PASS = frozenset({"optimization_barrier", "stage_boundary"})
_REDUCE = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin",
})  # fmt: skip
_CUMULATIVE = frozenset({"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"})


class _Lost(Exception):
    pass


def row_axes(closed: Any, arg: int, axis: int, outputs: Sequence[int]) -> list[RowAxes]:
    """Per output of ``outputs``, the axes holding the rows of argument ``arg`` along its
    axis ``axis`` (see the module's docstring). Calls are inlined first.

    Args:
      closed: the program, a ClosedJaxpr of its flat function.
      arg: the flat argument whose rows are followed (a prefill's prompt).
      axis: the argument's axis of the rows (0 for ``[b, L]``).
      outputs: the flat outputs asked about.

    Returns:
      A :class:`RowAxes` per output of ``outputs``, in order."""
    closed = J.inline(closed, lambda e: True)
    jaxpr = closed.jaxpr
    rows = int(jaxpr.invars[arg].aval.shape[axis])
    env: dict[Any, RowAxes] = {jaxpr.invars[arg]: RowAxes(frozenset({axis}))}

    def get(v: Any) -> RowAxes:
        return _NONE if isinstance(v, J.Literal) else env.get(v, _NONE)

    for e in jaxpr.eqns:
        ins = [get(v) for v in e.invars]
        lost = next((x.lost for x in ins if x.lost is not None), None)
        if lost is None and not any(x.axes for x in ins):
            continue  # nothing of the rows reaches this equation
        if lost is None:
            try:
                outs = _rule(e, [x.axes for x in ins], rows)
            except _Lost:
                lost = f"{e.primitive.name} at {J.where(e)}"
        for k, o in enumerate(e.outvars):
            env[o] = RowAxes(frozenset(), lost) if lost is not None else RowAxes(outs[k])
    return [get(jaxpr.outvars[o]) for o in outputs]


def _shape(v: Any) -> tuple[int, ...]:
    return tuple(v.aval.shape)


def _rule(e: Any, ins: list[frozenset[int]], rows: int) -> list[frozenset[int]]:
    """The rows' axes of ``e``'s outputs from its operands' (raises ``_Lost``); ``rows``: how
    many rows there are (an axis holding them is a multiple of it long)."""
    name, p = e.primitive.name, e.params
    if name in _PASS:
        return ins
    out = _shape(e.outvars[0])
    if name in _ELEMENTWISE:
        axes: set[int] = set()
        for v, a in zip(e.invars, ins, strict=True):
            if not a:
                continue
            shape = _shape(v)
            if len(shape) != len(out) or any(shape[i] != out[i] for i in a):
                raise _Lost
            axes |= a
        return [frozenset(axes)] * len(e.outvars)
    (a, *rest) = ins
    if name == "broadcast_in_dim":
        dims, shape = p["broadcast_dimensions"], _shape(e.invars[0])
        if any(out[dims[i]] != shape[i] for i in a) or any(rest):
            raise _Lost
        return [frozenset(dims[i] for i in a)]
    if name == "reshape":
        if p.get("dimensions") is not None:
            raise _Lost  # a transpose first
        return [frozenset(_reshaped(_shape(e.invars[0]), out, i, rows) for i in a)]
    if name == "transpose":
        perm = list(p["permutation"])
        return [frozenset(perm.index(i) for i in a)]
    if name == "squeeze":
        dims = set(p["dimensions"])
        if a & dims:
            raise _Lost
        return [frozenset(i - sum(d < i for d in dims) for i in a)]
    if name in _REDUCE:
        dims = set(p["axes"])
        if a & dims:
            raise _Lost
        return [frozenset(i - sum(d < i for d in dims) for i in a)] * len(e.outvars)
    if name == "reduce":  # a reduce with a region (operands, then as many inits)
        n = len(e.outvars)
        a, dims = frozenset().union(*ins[:n]), set(p["dimensions"])
        if a & dims or any(ins[n:]):
            raise _Lost
        return [frozenset(i - sum(d < i for d in dims) for i in a)] * n
    if name in _CUMULATIVE:
        if p["axis"] in a:
            raise _Lost
        return [a]
    if name == "dot_general":
        return [_dot(e, ins)]
    if name == "slice":
        shape, strides = _shape(e.invars[0]), p["strides"]
        if any(out[i] != shape[i] or (strides and strides[i] != 1) for i in a):
            raise _Lost
        return [a]
    if name == "pad":
        config = p["padding_config"]
        if any(config[i] != (0, 0, 0) for i in a) or any(rest):
            raise _Lost
        return [a]
    if name == "split":  # pieces along one axis
        if p["axis"] in a:
            raise _Lost
        return [a] * len(e.outvars)
    if name == "rev":
        if a & set(p["dimensions"]):
            raise _Lost  # the rows reversed: row i is no longer sequence i
        return [a]
    if name == "concatenate":
        if p["dimension"] in set().union(*ins):
            raise _Lost
        return [frozenset().union(*ins)]
    if name == "dynamic_slice":
        if any(rest) or any(out[i] != _shape(e.invars[0])[i] for i in a):
            raise _Lost  # a position computed from the rows, or a part of the rows
        return [a]
    if name == "dynamic_update_slice":
        update, *index = rest
        if any(index) or any(_shape(e.invars[1])[i] != out[i] for i in update):
            raise _Lost
        return [a | update]
    if name == "gather":
        return [_gather(e, ins)]
    if name == "scatter":
        return [_scatter(e, ins)]
    raise _Lost  # no rule: a loop, a scatter, a call kept whole...


def _reshaped(shape: tuple[int, ...], out: tuple[int, ...], i: int, rows: int) -> int:
    """The axis of ``out`` that holds the ``rows`` of axis ``i`` of ``shape``: the one after
    the same number of elements' worth of axes before it, its size a multiple of ``rows``
    (the axis kept whole, or merged with the axes after it, as a ``[b, L, d] -> [b * L, d]``
    before a matrix product, or split from them again: a row-major reshape keeps each row's
    elements one block of ``size / rows`` along it)."""
    before = math.prod(shape[:i])
    for k in range(len(out)):
        if math.prod(out[:k]) == before and out[k] % rows == 0 and out[k] >= rows:
            return k
    raise _Lost


def _dot(e: Any, ins: list[frozenset[int]]) -> frozenset[int]:
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    nl, nr = len(_shape(e.invars[0])), len(_shape(e.invars[1]))
    lfree = [i for i in range(nl) if i not in lc and i not in lb]
    rfree = [i for i in range(nr) if i not in rc and i not in rb]
    out: set[int] = set()
    for i in ins[0]:
        if i in lc:
            raise _Lost
        out.add(list(lb).index(i) if i in lb else len(lb) + lfree.index(i))
    for i in ins[1]:
        if i in rc:
            raise _Lost
        out.add(list(rb).index(i) if i in rb else len(lb) + len(lfree) + rfree.index(i))
    return frozenset(out)


def _scatter(e: Any, ins: list[frozenset[int]]) -> frozenset[int]:
    """A scatter whose indices do not carry the rows, writing whole along the rows' axes (a
    batch-1 program's cache update, vmapped over sequences): the operand's row axes, and
    each update window axis holding rows as the operand axis it writes."""
    operand, indices, updates = ins[0], ins[1], ins[2]
    dn = e.params["dimension_numbers"]
    if indices or len(ins) != 3:
        raise _Lost
    shape, upd = _shape(e.invars[0]), _shape(e.invars[2])
    skipped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    window = [d for d in range(len(shape)) if d not in skipped]
    scattered = set(dn.scatter_dims_to_operand_dims)
    out = set(operand)
    for j in updates:
        if j not in dn.update_window_dims:
            raise _Lost
        out.add(window[list(dn.update_window_dims).index(j)])
    if any(d in scattered or d in skipped for d in out):
        raise _Lost  # a position along the rows: a row written at a computed place
    for j in updates:
        if upd[j] != shape[window[list(dn.update_window_dims).index(j)]]:
            raise _Lost  # a part of the rows
    return frozenset(out)


def _gather(e: Any, ins: list[frozenset[int]]) -> frozenset[int]:
    """A gather whose indices carry the rows (an embedding lookup): the indices' batch axes
    are the output's axes that are not offset axes, in order (the index vector last, as
    ``lax.gather`` puts it)."""
    operand, indices = ins[0], ins[1]
    dn = e.params["dimension_numbers"]
    if operand or dn.operand_batching_dims:
        raise _Lost
    n_idx = len(_shape(e.invars[1]))
    if n_idx - 1 in indices:
        raise _Lost
    out_rank = len(_shape(e.outvars[0]))
    batch = [d for d in range(out_rank) if d not in dn.offset_dims]
    return frozenset(batch[i] for i in indices)
