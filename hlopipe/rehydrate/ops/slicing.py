"""Slices, padding, gather and scatter.

Out-of-bounds indices follow the StableHLO specification, not any one backend:

- ``dynamic_slice`` / ``dynamic_update_slice`` clamp each start index into
  ``[0, dim - size]``.
- ``gather`` clamps each start index so that the whole slice is in bounds (XLA's own gather
  does exactly this: ``mode=CLIP``).
- ``scatter`` skips a whole update *window* as soon as any part of it is out of bounds, as
  XLA does (and JAX's ``mode="drop"`` documents). The specification skips only the
  elements that are out of bounds; the two differ only for windows that straddle an edge,
  and a program compiled by XLA was written against XLA's answer (docs/ops.md, "Differences
  between XLA and the specification").

Scatter regions that are one of add, multiply, minimum, maximum (or just return the update)
become ``lax.scatter_add/mul/min/max`` or ``lax.scatter``, which JAX differentiates (a
multiply whose indices may repeat: its derivative is the element-wise form's). Any other
region (and variadic scatters whose results depend on each other) runs element by element:
the region is applied with ``jax.vmap`` to all updates whose result indices are distinct
(one round when ``unique_indices`` holds or constant indices show it), in several rounds when
constant indices repeat, and in a sequential ``lax.fori_loop`` over the updates when traced
indices may repeat: the spec's ``exec`` over one schedule of the update indices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.rehydrate._ir import Block, IndexDims
from hlopipe.rehydrate._known import attributes_as_operands, known_value, static_ints
from hlopipe.rehydrate.registry import Region, RuleContext, rule

_CLIP = lax.GatherScatterMode.CLIP
_DROP = lax.GatherScatterMode.FILL_OR_DROP


# ---- helpers ---------------------------------------------------------------------------------


def _wide_int() -> np.dtype:
    """The widest signed integer type arrays may have (int64 under x64, else int32)."""
    return np.dtype(np.int64 if jax.config.read("jax_enable_x64") else np.int32)


def _to_wide(idx: Any, cap: int) -> Any:
    """Integer indices as the wide signed type. Values above ``cap`` (>= every dimension) are
    first lowered to ``cap`` so that large unsigned values stay out of bounds instead of
    wrapping to negative ones; the caller only needs to know that they are out of bounds."""
    wide = _wide_int()
    dt = np.dtype(idx.dtype)
    if dt == wide:
        return idx
    if dt.kind == "u" or dt.itemsize > wide.itemsize:
        cap = min(cap, int(np.iinfo(dt).max))
        idx = lax.min(idx, lax.full_like(idx, cap))
    return lax.convert_element_type(idx, wide)


def _np_indices(idx: np.ndarray, cap: int) -> np.ndarray:
    """Constant integer indices as int64, with values above ``cap`` lowered to ``cap``."""
    if idx.dtype.kind == "u":
        idx = np.minimum(idx, np.asarray(cap).astype(idx.dtype))
    return idx.astype(np.int64)


def _canon_indices(indices: Any, index_vector_dim: int, batching_dims: Sequence[int]) -> Any:
    """Move the index vector to the last dimension (JAX's convention), adding a trailing
    dimension of size 1 when ``index_vector_dim == rank``. Returns the indices and the
    batching dimensions renumbered accordingly. Constant indices stay numpy arrays."""
    xp = np if isinstance(indices, np.ndarray | np.generic) else jnp
    rank = np.ndim(indices)
    bdims = tuple(d if d < index_vector_dim else d - 1 for d in batching_dims)
    if index_vector_dim == rank:
        return xp.reshape(indices, (*np.shape(indices), 1)), tuple(batching_dims)
    if index_vector_dim == rank - 1:
        return indices, bdims
    perm = [d for d in range(rank) if d != index_vector_dim] + [index_vector_dim]
    return xp.transpose(indices, perm), bdims


_LaxDims = TypeVar("_LaxDims", lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers)


def _in_lax_terms(indices: Any, d: IndexDims, kind: type[_LaxDims]) -> tuple[Any, _LaxDims]:
    """``indices`` in JAX's layout (:func:`_canon_indices`) and ``d`` as ``kind``, lax's
    gather or scatter dimension numbers (their fields stand in the same order)."""
    idx, bdims = _canon_indices(indices, d.index_vector_dim, d.indices_batching_dims)
    window, collapsed, index_map = tuple(d.window_dims), tuple(d.collapsed_dims), tuple(d.index_map)
    return idx, kind(window, collapsed, index_map, tuple(d.operand_batching_dims), bdims)


# ---- slice, pad ------------------------------------------------------------------------------


@rule("stablehlo.slice")
def slice_(
    ctx: RuleContext,
    x: Any,
    *,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
    **attrs: Any,
) -> Any:
    return lax.slice(x, tuple(start_indices), tuple(limit_indices), strides and tuple(strides))


@rule("stablehlo.real_dynamic_slice")
def real_dynamic_slice(
    ctx: RuleContext, x: Any, start: Any, limit: Any, strides: Any, **attrs: Any
) -> Any:
    st = static_ints(ctx, strides, "strides")
    s, lim = known_value(start), known_value(limit)
    if s is not None and lim is not None:
        return lax.slice(x, tuple(int(v) for v in s), tuple(int(v) for v in lim), st)
    # run-time starts with a static result shape: one dynamic slice, then the strides
    out = ctx.aval.shape
    sizes = tuple(max((n - 1) * k + 1, 0) for n, k in zip(out, st, strict=True))
    starts = [lax.index_in_dim(start, i, keepdims=False) for i in range(len(out))]
    window = lax.dynamic_slice(x, starts, sizes)
    return lax.slice(window, (0,) * len(out), sizes, st)


@rule("stablehlo.pad")
def pad(
    ctx: RuleContext,
    x: Any,
    padding_value: Any,
    *,
    edge_padding_low: Sequence[int],
    edge_padding_high: Sequence[int],
    interior_padding: Sequence[int],
    **attrs: Any,
) -> Any:
    config = list(zip(edge_padding_low, edge_padding_high, interior_padding, strict=True))
    return lax.pad(x, padding_value, config)


attributes_as_operands(
    "stablehlo.dynamic_pad", pad, "edge_padding_low", "edge_padding_high", "interior_padding"
)


# ---- dynamic_slice, dynamic_update_slice -----------------------------------------------------


def _clamped_starts(shape: Sequence[int], starts: Sequence[Any], sizes: Sequence[int]) -> list:
    """Start indices clamped into ``[0, dim - size]``, as the spec says."""
    out: list[Any] = []
    # lax wants every start of one integer type: constants take the type of the traced ones
    traced = [np.dtype(s.dtype) for s in starts if known_value(s) is None]
    for s, dim, size in zip(starts, shape, sizes, strict=True):
        hi = int(dim) - int(size)
        c = known_value(s)
        if c is not None:
            v = min(max(int(c), 0), hi)
            out.append(np.asarray(v, traced[0]) if traced else v)
            continue
        dt = np.dtype(s.dtype)
        hi = min(hi, int(np.iinfo(dt).max))
        s = jnp.reshape(s, ())
        out.append(lax.clamp(np.zeros((), dt), s, np.asarray(hi, dt)))
    return out


@rule("stablehlo.dynamic_slice")
def dynamic_slice(ctx: RuleContext, x: Any, *starts: Any, slice_sizes: Sequence[int]) -> Any:
    sizes = tuple(slice_sizes)
    starts_ = _clamped_starts(np.shape(x), starts, sizes)
    return lax.dynamic_slice(x, starts_, sizes, allow_negative_indices=False)


@rule("stablehlo.dynamic_update_slice")
def dynamic_update_slice(ctx: RuleContext, x: Any, update: Any, *starts: Any) -> Any:
    starts_ = _clamped_starts(np.shape(x), starts, np.shape(update))
    return lax.dynamic_update_slice(x, update, starts_, allow_negative_indices=False)


# ---- gather ----------------------------------------------------------------------------------


def _narrow_indices(indices: Any) -> Any:
    """64-bit indices as int32, saturated: gather clamps every start into the operand (whose
    dimensions are below 2^31), so the result is the same. JAX differentiates a gather
    outside the 64-bit scope a program with 64-bit types runs in, where its transpose cannot
    take int64 indices (TypeError in lax.clamp)."""
    if np.dtype(indices.dtype).itemsize <= 4:
        return indices
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    if np.dtype(indices.dtype).kind == "u":
        lo = 0
    bound = np.dtype(indices.dtype).type
    clamped = lax.clamp(bound(lo), indices, bound(hi))
    return lax.convert_element_type(clamped, np.int32)


def _gather(operand: Any, indices: Any, d: IndexDims, sizes: Sequence[int], sorted_: bool) -> Any:
    idx, dnums = _in_lax_terms(_narrow_indices(indices), d, lax.GatherDimensionNumbers)
    return lax.gather(
        operand, idx, dnums, tuple(sizes), indices_are_sorted=bool(sorted_), mode=_CLIP
    )


@rule("stablehlo.gather")
def gather(
    ctx: RuleContext,
    operand: Any,
    indices: Any,
    *,
    dimension_numbers: IndexDims,
    slice_sizes: Sequence[int],
    indices_are_sorted: bool = False,
    **attrs: Any,
) -> Any:
    return _gather(operand, indices, dimension_numbers, slice_sizes, indices_are_sorted)


attributes_as_operands("stablehlo.dynamic_gather", gather, "slice_sizes")


@rule("stablehlo.torch_index_select")
def torch_index_select(
    ctx: RuleContext, operand: Any, index: Any, *, dim: int, batch_dims: int, **attrs: Any
) -> Any:
    """``operand.shape[:dim] + index.shape[batch_dims:] + operand.shape[dim + 1:]``: the first
    ``batch_dims`` dimensions are shared by operand and index (torch.index_select / tf.gather
    with ``batch_dims``)."""
    rank, irank = np.ndim(operand), np.ndim(index)
    dim = dim % rank if rank else 0
    n_idx = irank - batch_dims
    offset = tuple(range(batch_dims, dim)) + tuple(range(dim + n_idx, dim + n_idx + rank - dim - 1))
    dnums = IndexDims(
        window_dims=offset,
        collapsed_dims=(dim,),
        operand_batching_dims=tuple(range(batch_dims)),
        indices_batching_dims=tuple(range(batch_dims)),
        index_map=(dim,),
        index_vector_dim=irank,
    )
    sizes = [1 if i < batch_dims or i == dim else n for i, n in enumerate(np.shape(operand))]
    return _gather(operand, index, dnums, sizes, False)


# ---- scatter ---------------------------------------------------------------------------------

_COMMUTATIVE = {"stablehlo.add", "stablehlo.multiply", "stablehlo.minimum", "stablehlo.maximum"}
_COMMUTATIVE |= {"stablehlo.and", "stablehlo.or"}

_SCATTER_FNS: dict[str, Callable[..., Any]] = {
    "replace": lax.scatter,
    "stablehlo.add": lax.scatter_add,
    "stablehlo.multiply": lax.scatter_mul,
    "stablehlo.minimum": lax.scatter_min,
    "stablehlo.maximum": lax.scatter_max,
}
# on booleans add is or, multiply is and (the spec's definitions), and or/and are max/min
_BOOL_KINDS = {
    "stablehlo.add": "stablehlo.maximum",
    "stablehlo.or": "stablehlo.maximum",
    "stablehlo.multiply": "stablehlo.minimum",
    "stablehlo.and": "stablehlo.minimum",
}


def _region_kinds(block: Block, n: int) -> list[str] | None:
    """Per result of a scatter region over ``n`` inputs: ``"replace"`` (returns the update),
    ``"keep"`` (returns the current value) or the name of the one op combining the current
    value with the update; ``None`` when the region is anything else."""
    if len(block.args) != 2 * n or len(block.returns) != n:
        return None
    cur, upd = block.args[:n], block.args[n:]
    producers = {r: op for op in block.ops for r in op.results}
    kinds = []
    for k, ret in enumerate(block.returns):
        if ret == upd[k]:
            kinds.append("replace")
        elif ret == cur[k]:
            kinds.append("keep")
        else:
            op = producers.get(ret)
            if op is None or op.regions or len(op.results) != 1:
                return None
            if op.operands == (cur[k], upd[k]) or (
                op.operands == (upd[k], cur[k]) and op.name in _COMMUTATIVE
            ):
                kinds.append(op.name)
            else:
                return None
    return kinds


def _fast_fn(kind: str, dtype: np.dtype) -> Callable[..., Any] | None:
    if dtype == np.dtype(bool):
        kind = _BOOL_KINDS.get(kind, kind)
        if kind not in ("replace", "stablehlo.minimum", "stablehlo.maximum"):
            return None
    return _SCATTER_FNS.get(kind)


def _window_sizes(d: IndexDims, in_shape: Sequence[int], upd_shape: Sequence[int]) -> list[int]:
    """The update window's extent along each operand dimension (1 where inserted/batching)."""
    sizes, pos = [], 0
    for i in range(len(in_shape)):
        if i in d.collapsed_dims or i in d.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(int(upd_shape[d.window_dims[pos]]))
            pos += 1
    return sizes


@rule("stablehlo.scatter")
def scatter(
    ctx: RuleContext,
    *args: Any,
    scatter_dimension_numbers: IndexDims,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    **attrs: Any,
) -> Any:
    n = (len(args) - 1) // 2
    inputs, indices, updates = list(args[:n]), args[n], list(args[n + 1 :])
    d = scatter_dimension_numbers
    region = ctx.regions[0]
    idx, dnums = _in_lax_terms(indices, d, lax.ScatterDimensionNumbers)
    bdims = dnums.scatter_indices_batching_dims
    in_dtypes = [np.dtype(x.dtype) for x in inputs]
    arg_dtypes = [np.dtype(a.dtype) for a in region.block.arg_avals]
    out_dtypes = [np.dtype(a.dtype) for a in ctx.result_avals]
    kinds = _region_kinds(region.block, n)
    fns = None
    if kinds is not None and arg_dtypes == in_dtypes * 2 and out_dtypes == in_dtypes:
        fns = [
            None if k == "keep" else _fast_fn(k, dt) for k, dt in zip(kinds, in_dtypes, strict=True)
        ]
        if any(f is None and k != "keep" for f, k in zip(fns, kinds, strict=True)):
            fns = None
    if fns is not None:

        def fast(inputs: Sequence[Any], idx: Any, updates: Sequence[Any]) -> tuple:
            return tuple(
                x
                if fn is None
                else _scatter_windows(fn, x, idx, u, d, dnums, indices_are_sorted, unique_indices)
                for fn, x, u in zip(fns, inputs, updates, strict=True)
            )

        if unique_indices or not any(
            k == "stablehlo.multiply" and jnp.issubdtype(dt, jnp.inexact)
            for k, dt in zip(kinds or [], in_dtypes, strict=False)
        ):
            return fast(inputs, idx, updates)

        # JAX differentiates scatter_mul only with unique indices (TF's unsorted_segment_prod
        # has repeated ones): the fast scatter's values, the element-wise form's derivative
        def slow(inputs: Sequence[Any], idx: Any, updates: Sequence[Any]) -> tuple:
            return tuple(
                _scatter_elements(ctx, region, list(inputs), idx, list(updates), d, bdims, False)
            )

        return _with_derivative_of(fast, slow, inputs, idx, updates)
    return tuple(_scatter_elements(ctx, region, inputs, idx, updates, d, bdims, unique_indices))


def _with_derivative_of(
    fast: Callable[..., tuple], slow: Callable[..., tuple], inputs: Any, idx: Any, updates: Any
) -> tuple:
    """``fast(inputs, idx, updates)``, differentiated as ``slow`` (the same function)."""

    @jax.custom_jvp
    def f(inputs: tuple, idx: Any, updates: tuple) -> tuple:
        return fast(inputs, idx, updates)

    @f.defjvp
    def f_jvp(primals: tuple, tangents: tuple) -> tuple:
        return jax.jvp(slow, primals, tangents)

    return f(tuple(inputs), idx, tuple(updates))


def _scatter_windows(
    fn: Callable[..., Any],
    operand: Any,
    idx: Any,
    updates: Any,
    d: IndexDims,
    dnums: lax.ScatterDimensionNumbers,
    sorted_: bool,
    unique: bool,
) -> Any:
    # FILL_OR_DROP lowers to XLA's own scatter, which drops a window that is partly out of
    # bounds as a whole
    del d
    return fn(
        operand,
        idx,
        updates,
        dnums,
        indices_are_sorted=bool(sorted_),
        unique_indices=bool(unique),
        mode=_DROP,
    )


def _element_indices(
    xp: Any,
    idx: Any,
    d: IndexDims,
    bdims: Sequence[int],
    upd_shape: Sequence[int],
    rank: int,
    window: bool = True,
) -> Any:
    """The result index of every update element (spec: ``full_start_index +
    full_batching_index + full_window_index``), shape ``upd_shape + (rank,)``; with
    ``window=False`` the start of the element's window instead (no ``full_window_index``).

    ``idx`` is the canonical index array (index vector last, wide integers)."""
    ru = len(upd_shape)
    wdims = tuple(d.window_dims)
    sdims = [i for i in range(ru) if i not in wdims]
    starts = xp.broadcast_to(xp.expand_dims(idx, wdims), (*upd_shape, np.shape(idx)[-1]))
    window_operand_dims = [
        i for i in range(rank) if i not in d.collapsed_dims and i not in d.operand_batching_dims
    ]
    dtype = idx.dtype

    def iota(axis: int) -> Any:
        shape = [1] * ru
        shape[axis] = upd_shape[axis]
        return xp.broadcast_to(
            xp.reshape(xp.arange(upd_shape[axis], dtype=dtype), shape), upd_shape
        )

    comps = []
    for od in range(rank):
        c = xp.zeros(tuple(upd_shape), dtype=dtype)
        if od in d.index_map:
            c = c + starts[..., list(d.index_map).index(od)]
        if od in d.operand_batching_dims:
            b = bdims[list(d.operand_batching_dims).index(od)]
            c = c + iota(sdims[b])
        if window and od in window_operand_dims:
            c = c + iota(wdims[window_operand_dims.index(od)])
        comps.append(c)
    return xp.stack(comps, axis=-1) if comps else xp.zeros((*upd_shape, 0), dtype=dtype)


def _scatter_elements(
    ctx: RuleContext,
    region: Region,
    inputs: list[Any],
    idx: Any,
    updates: list[Any],
    d: IndexDims,
    bdims: Sequence[int],
    unique: bool,
) -> list[Any]:
    """Any region, any number of inputs: the region applied element by element."""
    out_dtypes = [np.dtype(a.dtype) for a in ctx.result_avals]
    results = [lax.convert_element_type(x, dt) for x, dt in zip(inputs, out_dtypes, strict=True)]
    s = _ElementScatter(
        region,
        d,
        bdims,
        tuple(np.shape(inputs[0])),
        tuple(np.shape(updates[0])),
        [np.dtype(a.dtype) for a in region.block.arg_avals],
        len(inputs),
    )
    if s.total == 0:
        return results
    flat_upd = [jnp.reshape(u, (-1,)) for u in updates]
    static = known_value(idx)
    if static is not None:
        return s.static(results, static, flat_upd)
    return s.traced(results, idx, flat_upd, unique)


@dataclass(frozen=True)
class _ElementScatter:
    """The steps of :func:`_scatter_elements`: where each update element goes (XLA applies an
    element only when its whole window is in bounds), then the region on each element, in
    rounds of distinct result indices (indices known now) or one element at a time."""

    region: Region
    d: IndexDims
    bdims: Sequence[int]
    in_shape: tuple[int, ...]
    upd_shape: tuple[int, ...]
    arg_dtypes: list[np.dtype]  # the region's: the inputs', then the updates'
    n: int  # inputs

    @property
    def rank(self) -> int:
        return len(self.in_shape)

    @property
    def total(self) -> int:
        return int(np.prod(self.upd_shape, dtype=np.int64))

    @property
    def bound(self) -> np.ndarray:
        return np.asarray(self.in_shape, dtype=np.int64)

    def window_sizes(self) -> np.ndarray:
        return np.asarray(_window_sizes(self.d, self.in_shape, self.upd_shape), dtype=np.int64)

    def positions(self, xp: Any, idx: Any) -> tuple[Any, Any]:
        """Each element's result index and its window's start, one row per element."""
        shape = (self.total, self.rank)
        args = (idx, self.d, self.bdims, self.upd_shape, self.rank)
        full = xp.reshape(_element_indices(xp, *args), shape)
        return full, xp.reshape(_element_indices(xp, *args, window=False), shape)

    def apply(self, results: list[Any], where: Any, ups: list[Any]) -> list[Any]:
        """One vectorised round over updates whose result indices are distinct and in bounds."""
        rank, n = self.rank, self.n
        gd = lax.GatherDimensionNumbers((), tuple(range(rank)), tuple(range(rank)))
        cur = [
            lax.gather(r, where, gd, (1,) * rank, mode=_CLIP).astype(dt)
            for r, dt in zip(results, self.arg_dtypes[:n], strict=True)
        ]
        ups = [u.astype(dt) for u, dt in zip(ups, self.arg_dtypes[n:], strict=True)]
        new = jax.vmap(lambda *a: tuple(self.region(*a)))(*cur, *ups)
        sd = lax.ScatterDimensionNumbers((), tuple(range(rank)), tuple(range(rank)))
        return [
            lax.scatter(r, where, v.astype(r.dtype), sd, unique_indices=True, mode=_DROP)
            for r, v in zip(results, new, strict=True)
        ]

    def static(self, results: list[Any], idx: np.ndarray, flat_upd: list[Any]) -> list[Any]:
        """Indices known now: the r-th occurrence of a result index goes in round r (update
        order is the schedule)."""
        cap = max(self.in_shape, default=0) + 1
        full, wstart = self.positions(np, _np_indices(idx, cap))
        inb = np.all((wstart >= 0) & (wstart <= self.bound - self.window_sizes()), axis=-1)
        if not np.any(inb):
            return results
        live = np.nonzero(inb)[0]
        lin = (
            np.ravel_multi_index(tuple(full[live].T), self.in_shape)
            if self.rank
            else np.zeros_like(live)
        )
        order = np.argsort(lin, kind="stable")
        sorted_lin = lin[order]
        first = np.r_[0, np.nonzero(np.diff(sorted_lin))[0] + 1]
        rounds = np.empty(len(lin), dtype=np.int64)
        group_start = np.repeat(first, np.diff(np.r_[first, len(lin)]))
        rounds[order] = np.arange(len(lin)) - group_start
        wide = _wide_int()
        for r in range(int(rounds.max()) + 1):
            sel = live[rounds == r]
            results = self.apply(results, full[sel].astype(wide), [u[sel] for u in flat_upd])
        return results

    def traced(self, results: list[Any], idx: Any, flat_upd: list[Any], unique: bool) -> list[Any]:
        """Traced indices: one vectorised round when they are unique, else one element at a
        time in update order."""
        wide = _wide_int()
        full, wstart = self.positions(jnp, _to_wide(idx, max(self.in_shape, default=0) + 1))
        # start <= dim - size: no overflow near the type's maximum
        last = (self.bound - self.window_sizes()).astype(wide)
        inb = jnp.all((wstart >= 0) & (wstart <= last), axis=-1)
        if unique:
            # an out-of-bounds element gets an index past the end, which the scatter drops
            where = jnp.where(inb[:, None], full, self.bound.astype(wide))
            return self.apply(results, where, flat_upd)
        rank, n, region = self.rank, self.n, self.region

        def step(i: Any, results: tuple[Any, ...]) -> tuple[Any, ...]:
            pos = lax.dynamic_index_in_dim(full, i, keepdims=False)
            ok = lax.dynamic_index_in_dim(inb, i, keepdims=False)
            starts = [pos[j] for j in range(rank)]
            cur = [
                jnp.reshape(
                    lax.dynamic_slice(r, starts, (1,) * rank, allow_negative_indices=False), ()
                )
                for r in results
            ]
            ups = [lax.dynamic_index_in_dim(u, i, keepdims=False) for u in flat_upd]
            args = [c.astype(dt) for c, dt in zip(cur, self.arg_dtypes[:n], strict=True)]
            args += [u.astype(dt) for u, dt in zip(ups, self.arg_dtypes[n:], strict=True)]
            new = region(*args)
            out = []
            for r, c, v in zip(results, cur, new, strict=True):
                v = lax.select(ok, v.astype(r.dtype), c)
                v = jnp.reshape(v, (1,) * rank)
                out.append(lax.dynamic_update_slice(r, v, starts, allow_negative_indices=False))
            return tuple(out)

        return list(lax.fori_loop(0, self.total, step, tuple(results)))
