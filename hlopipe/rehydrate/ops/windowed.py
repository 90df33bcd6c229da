"""Windowed reductions: ``stablehlo.reduce_window`` and ``stablehlo.select_and_scatter``.

``reduce_window`` computes what XLA computes: the init value enters every window once and
padded positions and base-dilation holes not at all (the specification pads, and fills
holes, with the init value; the two differ when it is not neutral). A region that only adds
(takes the max, the min) of its arguments, per operand (a variadic region whose results do
not mix), becomes JAX's differentiable monoid primitives (``reduce_window_sum/max/min``) on
the operand padded with the identity, the init value combined once; any init value is exact,
a traced one too. Every other region runs through the generic ``lax.reduce_window`` with the
region as the computation (XLA's values), given a derivative, for windows of up to
``_FOLD_MAX`` positions, by the same reduction written as a fold over the window's positions
(JAX has none for the generic form); so is max/min pooling with window dilation, whose VJP
JAX lacks.

``select_and_scatter`` (the gradient of max/min pooling): the common case, a ``GE``/``LE``
select, an ``add`` scatter, no padding and a float type, is the VJP of JAX's
``reduce_window_max/min``, which XLA lowers back to ``select_and_scatter``. Anything else —
any select and scatter region, padding (padded positions are never selected), any dtype —
goes through a general form: for each of the K positions of the window, in row-major order,
one strided slice of the operand, the select region (vmapped over the windows) deciding
whether it replaces the current choice; then, position by position again, the scatter
region combines the source values into the chosen elements. K select calls and K scatter
calls over |source| elements each: O(K·|source|) work, unrolled for small windows and a
``fori_loop`` (a scan, so still reverse-mode differentiable) for large ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.rehydrate.ops.reduce import (
    is_identity,
    is_inexact,
    selecting_results,
    separable_ops,
)
from hlopipe.rehydrate.registry import Region, RuleContext, rule

_WINDOW_MONOIDS: dict[str, Callable[[Any, Any], Any]] = {
    "stablehlo.add": lax.add,
    "stablehlo.maximum": lax.max,
    "stablehlo.minimum": lax.min,
}

# on i1, add/or are max and multiply/and are min
_BOOL_WINDOW = {
    "stablehlo.add": "stablehlo.maximum",
    "stablehlo.or": "stablehlo.maximum",
    "stablehlo.multiply": "stablehlo.minimum",
    "stablehlo.and": "stablehlo.minimum",
}

# a reduce_window with any region gets a derivative (a fold over the window's positions) for
# windows of up to this many positions
_FOLD_MAX = 64

# unroll the K window positions of select_and_scatter's general form up to this many
_UNROLL = 16


def _pairs(padding: Any, n: int) -> list[tuple[int, int]]:
    if padding is None:
        return [(0, 0)] * n
    arr = np.asarray(padding, dtype=np.int64).reshape(n, 2)
    return [(int(lo), int(hi)) for lo, hi in arr]


class Window(NamedTuple):
    """A window's geometry, one entry per dimension, in the order ``lax.reduce_window`` takes
    it: size, strides, padding ``(lo, hi)``, base dilation and window dilation."""

    dims: tuple[int, ...]
    strides: tuple[int, ...]
    pads: list[tuple[int, int]]
    base: tuple[int, ...]
    wdil: tuple[int, ...]

    @classmethod
    def of(
        cls,
        dims: tuple[int, ...],
        strides: tuple[int, ...] | None = None,
        padding: Any = None,
        base: tuple[int, ...] | None = None,
        wdil: tuple[int, ...] | None = None,
    ) -> Window:
        """The geometry from an op's attributes (absent ones: strides and dilations of 1, no
        padding)."""
        ones = (1,) * len(dims)
        return cls(
            dims,
            tuple(strides) if strides else ones,
            _pairs(padding, len(dims)),
            tuple(base) if base else ones,
            tuple(wdil) if wdil else ones,
        )

    @property
    def pad_config(self) -> list[tuple[int, int, int]]:
        """Padding and base dilation as ``lax.pad`` takes them."""
        return [(lo, hi, b - 1) for (lo, hi), b in zip(self.pads, self.base, strict=True)]


def _identity(op: str, dtype: np.dtype) -> Any:
    if op == "stablehlo.add":
        return np.zeros((), dtype)
    big = op == "stablehlo.minimum"
    if dtype == np.dtype(bool):
        return np.array(big, dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.array(info.max if big else info.min, dtype)
    value = np.array(np.inf if big else -np.inf).astype(dtype)
    if not np.isinf(value.astype(np.float64)):  # float8 types without infinities
        import ml_dtypes

        fi = ml_dtypes.finfo(dtype)
        value = np.array(fi.max if big else fi.min, dtype)
    return value


def monoid_reduce_window(op: str | None, x: Any, init: Any, win: Window) -> Any | None:
    """``reduce_window`` of one operand through JAX's differentiable monoid primitives; None
    when ``op`` is not add/max/min (or their boolean equivalents) on a supported type."""
    if op is None:
        return None
    dtype = np.dtype(x.dtype)
    if dtype == np.dtype(bool):
        op = _BOOL_WINDOW.get(op, op)
    if op not in _WINDOW_MONOIDS or (dtype.kind == "c" and op != "stablehlo.add"):
        return None
    if op != "stablehlo.add" and any(d != 1 for d in win.wdil) and math.prod(win.dims) <= _FOLD_MAX:
        return None  # JAX cannot differentiate max/min pooling with window dilation: the fold
    combine = _WINDOW_MONOIDS[op]
    ident = _identity(op, dtype)
    if is_identity(op, init):
        return lax.reduce_window(x, ident, combine, *win)
    # XLA: the init value enters every window once, padding and base-dilation holes not at all
    # (the specification pads with the init value): pad with the identity, combine the init
    if any(p != (0, 0) for p in win.pads) or any(b != 1 for b in win.base):
        x = lax.pad(x, jnp.asarray(ident), win.pad_config)
    y = lax.reduce_window(
        x, ident, combine, win.dims, win.strides, [(0, 0)] * x.ndim, None, win.wdil
    )
    return combine(y, lax.convert_element_type(init, dtype))


@rule("stablehlo.reduce_window")
def reduce_window(
    ctx: RuleContext,
    *operands: Any,
    window_dimensions: tuple[int, ...],
    window_strides: tuple[int, ...] | None = None,
    base_dilations: tuple[int, ...] | None = None,
    window_dilations: tuple[int, ...] | None = None,
    padding: Any = None,
) -> Any:
    n = len(operands) // 2
    xs, inits = operands[:n], operands[n:]
    dims = tuple(int(w) for w in window_dimensions)
    win = Window.of(dims, window_strides, padding, base_dilations, window_dilations)
    region = ctx.regions[0]
    out = _differentiable_form(region, xs, inits, win)
    if out is None:
        out = _region_reduce_window(region, xs, inits, win)
    return out


def _differentiable_form(region: Region, xs: tuple, inits: tuple, win: Window) -> Any | None:
    """The reduction through one of JAX's differentiable primitives, when the region is one
    they compute: add/max/min per operand (a variadic region whose results do not mix), or a
    floating cumulative product; None otherwise."""
    n = len(xs)
    per_operand = [region.binary_op()] if n == 1 else separable_ops(region.block, n)
    if per_operand is not None:
        outs = [
            monoid_reduce_window(op, x, v, win)
            for op, x, v in zip(per_operand, xs, inits, strict=True)
        ]
        if all(o is not None for o in outs):
            return outs[0] if n == 1 else tuple(outs)
    if n == 1 and region.binary_op() == "stablehlo.multiply" and is_inexact(xs[0]):
        return _cumulative_product(xs[0], inits[0], win)
    return None


def _region_reduce_window(region: Region, xs: tuple, inits: tuple, win: Window) -> Any:
    """The reduction with the region as its computation: a selecting region (a value and its
    position) through :func:`_selection_reduce_window`; any other through XLA's own
    ``lax.reduce_window``, given a folded derivative for small floating windows."""
    n = len(xs)

    def computation(acc: tuple, x: tuple) -> tuple:
        return tuple(region(*acc, *x))

    inexact = [is_inexact(x) for x in xs]
    if n > 1 and any(inexact):
        picked = selecting_results(region.block, n, inexact)
        if picked is not None and any(picked):
            # a value and its position (torch's cummax): any window size, differentiable
            padded = tuple(
                lax.pad(x, lax.convert_element_type(v, x.dtype), win.pad_config)
                for x, v in zip(xs, inits, strict=True)
            )
            return _selection_reduce_window(
                padded, inits, computation, win.dims, win.strides, win.wdil
            )

    # lax.reduce_window takes padding and base dilation as XLA does: padded positions and
    # holes are skipped (the specification reduces the init value there too)
    def generic(*args: Any) -> tuple:
        return tuple(lax.reduce_window(args[:n], args[n:], computation, *win))

    if math.prod(win.dims) <= _FOLD_MAX and any(inexact):
        out = _with_folded_derivative(generic, region, n, win)(*xs, *inits)
    else:
        out = generic(*xs, *inits)
    return tuple(out) if n > 1 else out[0]


def _with_folded_derivative(
    generic: Callable[..., tuple], region: Region, n: int, win: Window
) -> Callable[..., tuple]:
    """``generic`` (XLA's own reduce_window: its values) with a derivative: that of the same
    reduction written as a fold of the region over the window's positions in row-major order,
    one strided slice of each operand per position, padded positions and base-dilation holes
    masked out. JAX has no derivative for a reduce_window with an arbitrary region."""
    window, strides, wdil, cfg = win.dims, win.strides, win.wdil, win.pad_config

    def folded(*args: Any) -> tuple:
        inits = args[n:]
        xs = [
            lax.pad(x, lax.convert_element_type(v, x.dtype), cfg)
            for x, v in zip(args[:n], inits, strict=True)
        ]
        inside = lax.pad(jnp.ones(args[0].shape, bool), np.array(False), cfg)
        acc = args[n:]
        shape = xs[0].shape
        out_shape = [
            (p - (w - 1) * d - 1) // s + 1
            for p, w, d, s in zip(shape, window, wdil, strides, strict=True)
        ]
        if min(out_shape, default=1) <= 0:
            return generic(*args)
        step = vmapped_region(region)
        acc = tuple(
            lax.broadcast(lax.convert_element_type(v, x.dtype), out_shape)
            for v, x in zip(acc, xs, strict=True)
        )
        for offset in itertools.product(*(range(w) for w in window)):
            start = [o * d for o, d in zip(offset, wdil, strict=True)]
            limit = [
                st + (m - 1) * s + 1 for st, m, s in zip(start, out_shape, strides, strict=True)
            ]
            new = step(*acc, *(lax.slice(x, start, limit, strides) for x in xs))
            keep = lax.slice(inside, start, limit, strides)
            acc = tuple(lax.select(keep, a, b) for a, b in zip(new, acc, strict=True))
        return tuple(acc)

    @jax.custom_jvp
    def f(*args: Any) -> tuple:
        return generic(*args)

    @f.defjvp
    def f_jvp(primals: tuple, tangents: tuple) -> tuple:
        _, out_tangents = jax.jvp(folded, primals, tangents)
        return f(*primals), out_tangents

    return f


def _cumulative_product(x: Any, init: Any, win: Window) -> Any | None:
    """A floating ``reduce_window`` with a multiply region that is a cumulative product
    (torch's ``cumprod``: one axis, the whole of it, padded before or after by its length less
    one, init 1) as ``lax.cumprod``, differentiable at any length; None otherwise (other
    product windows take the generic path)."""
    shape = np.shape(x)
    window, pads = win.dims, win.pads
    if not is_identity("stablehlo.multiply", init):
        return None
    wide = [a for a in range(len(shape)) if window[a] != 1 or pads[a] != (0, 0)]
    if len(wide) == 1 and all(v == 1 for v in (*win.strides, *win.base, *win.wdil)):
        a = wide[0]
        size = shape[a]
        if window[a] == size and pads[a] in ((size - 1, 0), (0, size - 1)):
            return lax.cumprod(x, axis=a, reverse=pads[a] == (0, size - 1))
    return None


def _selection_reduce_window(
    xs: tuple, inits: tuple, computation: Callable, window: tuple, strides: tuple, wdil: tuple
) -> tuple:
    """A variadic reduce_window whose region picks one of its two candidates (torch's
    ``cummax``/``cummin``: a value and its index). JAX has no derivative for a variadic
    ``lax.reduce_window``; here the window runs on the stopped operands with one more operand,
    each element's flat position in the padded operand (-1 for the init value), carried along the
    candidate the region picked, and every floating result takes the derivative of the
    element at that position. ``xs`` are padded already."""
    stopped = tuple(lax.stop_gradient(x) for x in xs)
    shape = np.shape(xs[0])
    size = int(np.prod(shape, dtype=np.int64))
    pos = lax.broadcasted_iota(np.int32, (size,), 0).reshape(shape)

    def with_pos(acc: tuple, x: tuple) -> tuple:
        res = tuple(computation(acc[:-1], x[:-1]))
        took_acc = None
        for r, a in zip(res, acc[:-1], strict=True):
            eq = lax.eq(r, a)
            took_acc = eq if took_acc is None else lax.bitwise_and(took_acc, eq)
        assert took_acc is not None
        return (*res, lax.select(took_acc, acc[-1], x[-1]))

    no_pos = lax.full((), -1, np.int32)
    zeros = [(0, 0)] * len(shape)
    *outs, picked = lax.reduce_window(
        (*stopped, pos), (*inits, no_pos), with_pos, window, strides, zeros, None, wdil
    )
    return tuple(
        _with_derivative_at(o, lax.reshape(x, (size,)), picked) if is_inexact(x) else o
        for x, o in zip(xs, outs, strict=True)
    )


@jax.custom_jvp
def _with_derivative_at(out: Any, flat_x: Any, picked: Any) -> Any:
    """``out``, whose derivative is that of ``flat_x[picked]`` (zero where ``picked`` < 0)."""
    return out


@_with_derivative_at.defjvp
def _with_derivative_at_jvp(primals: Any, tangents: Any) -> Any:
    out, _, picked = primals
    t = tangents[1]
    got = jnp.take(t, jnp.maximum(picked, 0), axis=0)
    return out, jnp.where(picked >= 0, got, jnp.zeros((), t.dtype))


# ---- select_and_scatter ----------------------------------------------------------------------


def _simple_select(region: Region) -> str | None:
    """'GE'/'LE' when the select region is ``compare(a, b, GE|LE)`` of a FLOAT type."""
    block = region.block
    op = block.only_compare()
    if op is None or len(block.args) != 2 or op.operands != block.args:
        return None
    direction = op.attrs.get("comparison_direction")
    ctype = op.attrs.get("compare_type", "FLOAT")
    if direction in ("GE", "LE") and ctype == "FLOAT":
        return str(direction)
    return None


def vmapped_region(region: Region) -> Callable[..., tuple]:
    """The region (on scalars) applied element-wise to same-shaped arrays."""

    def flat(*args: Any) -> tuple:
        shape = args[0].shape
        if not shape:
            return tuple(region(*args))
        size = int(np.prod(shape, dtype=np.int64))
        flat_args = [lax.reshape(a, (size,)) for a in args]
        outs = jax.vmap(lambda *s: tuple(region(*s)))(*flat_args)
        return tuple(lax.reshape(o, shape) for o in outs)

    return flat


@rule("stablehlo.select_and_scatter")
def select_and_scatter(
    ctx: RuleContext,
    operand: Any,
    source: Any,
    init: Any,
    *,
    window_dimensions: tuple[int, ...] | None = None,
    window_strides: tuple[int, ...] | None = None,
    padding: Any = None,
) -> Any:
    dims = tuple(window_dimensions) if window_dimensions else (1,) * operand.ndim
    win = Window.of(dims, window_strides, padding)
    select_region, scatter_region = ctx.regions
    dtype = np.dtype(operand.dtype)
    scatter_op = scatter_region.binary_op()
    direction = _simple_select(select_region)
    if (
        direction is not None
        and scatter_op == "stablehlo.add"
        and all(p == (0, 0) for p in win.pads)
        and jnp.issubdtype(dtype, jnp.floating)
        and source.size > 0
    ):
        return _select_and_scatter_add(operand, source, init, direction, win.dims, win.strides)
    return _general_select_and_scatter(operand, source, init, win, select_region, scatter_region)


def _select_and_scatter_add(
    operand: Any,
    source: Any,
    init: Any,
    direction: str,
    window: tuple[int, ...],
    strides: tuple[int, ...],
) -> Any:
    """GE (LE) select with add scatter = the VJP of max (min) pooling, applied to source."""
    op = "stablehlo.maximum" if direction == "GE" else "stablehlo.minimum"
    ident = _identity(op, np.dtype(operand.dtype))
    combine = _WINDOW_MONOIDS[op]

    def pool(x: Any) -> Any:
        return lax.reduce_window(x, ident, combine, window, strides, [(0, 0)] * x.ndim)

    _, vjp = jax.vjp(pool, operand)
    (out,) = vjp(source)
    if is_identity("stablehlo.add", init):
        return out
    return lax.add(out, lax.convert_element_type(init, out.dtype))


def _general_select_and_scatter(
    operand: Any, source: Any, init: Any, win: Window, select_region: Region, scatter_region: Region
) -> Any:
    """Any select and scatter region, padding and dtype (the module docstring): the window's
    positions folded once to choose an element per window, once to scatter into the chosen."""
    dtype = np.dtype(operand.dtype)
    init = lax.convert_element_type(init, dtype)
    pad_cfg = [(lo, hi, 0) for lo, hi in win.pads]
    unpad_cfg = [(-lo, -hi, 0) for lo, hi in win.pads]
    xp = lax.pad(operand, np.zeros((), dtype), pad_cfg)
    valid = lax.pad(lax.full(operand.shape, True, bool), np.array(False), pad_cfg)
    if source.size == 0 or operand.size == 0:
        acc = lax.full(xp.shape, init, dtype)
        return lax.pad(acc, np.zeros((), dtype), unpad_cfg)
    pos = _Positions.of(win.dims, win.strides, tuple(source.shape))
    chosen, chosen_valid = _choose(pos, vmapped_region(select_region), xp, valid)
    acc = _scatter_chosen(
        pos,
        vmapped_region(scatter_region),
        source,
        chosen,
        chosen_valid,
        lax.full(xp.shape, init, dtype),
    )
    return lax.pad(acc, np.zeros((), dtype), unpad_cfg)


class _Positions(NamedTuple):
    """The positions of a window, over an operand padded already: position ``k`` (row-major)
    of every window is the strided slice starting at ``offset(k)`` with this ``extent``, of
    the windows' (the source's) shape."""

    window: tuple[int, ...]
    strides: tuple[int, ...]
    out_shape: tuple[int, ...]
    extent: tuple[int, ...]

    @classmethod
    def of(
        cls, window: tuple[int, ...], strides: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> _Positions:
        extent = tuple(s * (n - 1) + 1 for s, n in zip(strides, out_shape, strict=True))
        return cls(window, strides, out_shape, extent)

    @property
    def num_positions(self) -> int:
        return int(np.prod(self.window, dtype=np.int64))

    def offset(self, k: Any) -> list[Any]:
        """Where position ``k`` (a Python int, or a traced one in a loop) starts."""
        idx = []
        for w in reversed(self.window):
            idx.append(k % w)
            k = k // w
        return idx[::-1]

    def strided(self, a: Any, k: Any) -> Any:
        """Position ``k`` of every window of ``a``: a strided slice of the windows' shape."""
        start = self.offset(k)
        if isinstance(k, int):
            limit = [o + e for o, e in zip(start, self.extent, strict=True)]
            return lax.slice(a, start, limit, self.strides)
        block = lax.dynamic_slice(a, start, self.extent)
        return lax.slice(block, (0,) * len(self.window), self.extent, self.strides)


def _choose(pos: _Positions, select: Callable[..., tuple], xp: Any, valid: Any) -> tuple[Any, Any]:
    """1. choose: the select region folded over the window positions in row-major order.
    Returns, per window, the position chosen and whether it is an element (not padding)."""

    def choose(k: Any, carry: tuple) -> tuple:
        cur, cur_k, cur_valid = carry
        new, new_valid = pos.strided(xp, k), pos.strided(valid, k)
        (keep,) = select(cur, new)
        take = new_valid & (~cur_valid | ~keep)
        k_arr = lax.full(pos.out_shape, k, np.int32)
        return lax.select(take, new, cur), lax.select(take, k_arr, cur_k), cur_valid | take

    carry = (pos.strided(xp, 0), lax.full(pos.out_shape, 0, np.int32), pos.strided(valid, 0))
    _, chosen, chosen_valid = _fold(choose, 1, pos.num_positions, carry)
    return chosen, chosen_valid


def _scatter_chosen(
    pos: _Positions,
    scatter: Callable[..., tuple],
    source: Any,
    chosen: Any,
    chosen_valid: Any,
    acc: Any,
) -> Any:
    """2. scatter: position by position, the sources whose window chose it are combined into
    ``acc`` (the padded operand's shape, filled with the init value) by the scatter region."""
    dtype = np.dtype(acc.dtype)
    strides, extent = pos.strides, pos.extent

    def place(k: Any, acc: Any) -> Any:
        start = pos.offset(k)
        cur = pos.strided(acc, k)
        hit = chosen_valid & (chosen == k)
        (combined,) = scatter(cur, source)
        if isinstance(k, int):
            # straight into the full array: pads and one select
            cfg = [
                (o, n - o - e, s - 1)
                for o, n, e, s in zip(start, acc.shape, extent, strides, strict=True)
            ]
            placed = lax.pad(combined, np.zeros((), dtype), cfg)
            return lax.select(lax.pad(hit, np.array(False), cfg), placed, acc)
        block = lax.dynamic_slice(acc, start, extent)
        new = lax.select(hit, combined, cur)
        interior = [(0, 0, s - 1) for s in strides]
        placed = lax.pad(new, np.zeros((), dtype), interior)
        mask = lax.pad(hit, np.array(False), interior)
        return lax.dynamic_update_slice(acc, lax.select(mask, placed, block), start)

    return _fold(place, 0, pos.num_positions, acc)


def _fold(body: Callable[[Any, Any], Any], start: int, stop: int, carry: Any) -> Any:
    """``body`` over k in [start, stop): unrolled for short ranges, a fori_loop otherwise."""
    if stop - start <= _UNROLL:
        for k in range(start, stop):
            carry = body(k, carry)
        return carry
    return lax.fori_loop(start, stop, lambda k, c: body(k.astype(np.int32), c), carry)


__all__ = ["Window", "monoid_reduce_window", "vmapped_region"]
