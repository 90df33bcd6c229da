"""Sorting: ``stablehlo.sort`` with any comparator.

Two paths:

* **A single compare** — the comparator is ``compare(lhs_i, rhs_i, LT|GT)`` of one operand
  ``i`` — becomes ``lax.sort`` with that operand's key first and ``num_keys=1``. Descending
  order and StableHLO's ``TOTALORDER`` on floats are expressed through the key, never by
  negating integers (which overflows at the minimum): the key of a ``GT`` sort of integers is
  their bitwise complement, and a float under ``TOTALORDER`` is keyed by its bits as a signed
  integer with the magnitude bits flipped for negative values (so -NaN < -inf < ... < -0 <
  +0 < ... < inf < NaN). A ``FLOAT`` ``LT`` compare is keyed by the value itself (``lax.sort``
  puts NaNs last, where that comparator, which is no strict weak order on NaNs, leaves their
  place undefined).
* **Any other comparator** — JAX's own canonicalising comparators, several keys,
  lexicographic complex orders, anything a strict weak order can say. Ties under the
  comparator are broken by the original position, which makes the order total, so the result
  is the stable sort (a valid answer for ``is_stable = false`` too). Two algorithms, both made
  of ``lax`` ops (JAX differentiates and batches them), the comparator region vmapped:

  - up to 2**22 element pairs (batch · n²): one comparator call on all pairs; the rank of an
    element is how many come before it, and the ranks (a permutation) are inverted with an
    exact integer ``lax.sort``, then gathered. O(n²) work, O(1) comparator calls.
  - longer rows: a bitonic sorting network over the row padded to a power of two N with
    elements that compare greater than everything: log2(N)·(log2(N)+1)/2 vectorised stages of
    N/2 pairs, two comparator calls per stage — O(n log² n) work. Compiled as one ``jax.jit``
    so that it does not run as thousands of eager ops outside a trace.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.rehydrate._ir import Block, _liveness
from hlopipe.rehydrate.ops.windowed import vmapped_region
from hlopipe.rehydrate.registry import Region, RuleContext, rule


@rule("stablehlo.sort")
def sort(ctx: RuleContext, *operands: Any, dimension: int = -1, is_stable: bool = False) -> Any:
    ndim = operands[0].ndim
    dim = int(dimension) % ndim if ndim else 0
    region = ctx.regions[0]
    n = operands[0].shape[dim] if ndim else 1
    if n <= 1:
        out: tuple = tuple(operands)
    else:
        simple = _simple_comparator(region, operands)
        keyed = None if simple is not None else _keyed_comparator(region, operands)
        chain = None if simple or keyed else _lexicographic_comparator(region, operands)
        if simple is not None:
            out = _lax_sort(operands, dim, bool(is_stable), *simple)
        elif keyed is not None:
            i, direction, ctype, key_fn = keyed
            x = operands[i]
            key = lax.reshape(jax.vmap(key_fn)(lax.reshape(x, (x.size,))), x.shape)
            out = _lax_sort(operands, dim, bool(is_stable), i, direction, ctype, key)
        elif chain is not None:
            out = _multi_key_sort(operands, dim, bool(is_stable), chain)
        else:
            out = _general_sort(operands, dim, region)
    return out if len(out) > 1 else out[0]


# ---- the single-compare path ---------------------------------------------------------------


def _simple_comparator(region: Region, operands: tuple) -> tuple[int, str, str] | None:
    """(operand index, 'LT'|'GT', compare type) when the comparator is one compare of the
    two elements of one operand; None otherwise."""
    block = region.block
    op = block.only_compare()
    if op is None:
        return None
    direction = op.attrs.get("comparison_direction")
    if direction not in ("LT", "GT"):
        return None
    args = block.args
    for i in range(len(operands)):
        pair = (args[2 * i], args[2 * i + 1])
        if op.operands == pair:
            break
        if op.operands == pair[::-1]:
            direction = "GT" if direction == "LT" else "LT"
            break
    else:
        return None
    dtype = np.dtype(operands[i].dtype)
    ctype = op.attrs.get("compare_type")
    if dtype.kind == "c":
        return None
    if not isinstance(ctype, str):
        ctype = "FLOAT" if _is_float(dtype) else "SIGNED"
    if _is_float(dtype) and ctype not in ("FLOAT", "TOTALORDER"):
        return None
    if not _is_float(dtype) and ctype not in ("SIGNED", "UNSIGNED"):
        return None
    if dtype.kind in "iu" and (ctype == "UNSIGNED") != (dtype.kind == "u"):
        return None  # a signed compare of unsigned values (or the reverse): keep it exact
    return i, str(direction), ctype


def _is_float(dtype: np.dtype) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.floating))


def _total_order_key(x: Any) -> Any:
    """A signed integer with the same order as ``x`` under StableHLO's TOTALORDER."""
    bits = np.dtype(f"int{8 * np.dtype(x.dtype).itemsize}")
    i = lax.bitcast_convert_type(x, bits)
    nbits = bits.itemsize * 8
    sign = lax.shift_right_arithmetic(i, lax.full_like(i, nbits - 1))
    magnitude = lax.full_like(i, np.iinfo(bits).max)
    return lax.bitwise_xor(i, lax.bitwise_and(sign, magnitude))


def _ascending_key(x: Any, direction: str, ctype: str) -> Any:
    """A key whose ascending ``lax.sort`` order is ``x``'s order under the compare."""
    dtype = np.dtype(x.dtype)
    if _is_float(dtype) and ctype == "TOTALORDER":
        key = _total_order_key(x)
        return lax.bitwise_not(key) if direction == "GT" else key
    if _is_float(dtype):
        return x if direction == "LT" else lax.neg(x)
    return x if direction == "LT" else lax.bitwise_not(x)


def _lax_sort(
    operands: tuple,
    dim: int,
    is_stable: bool,
    key_index: int,
    direction: str,
    ctype: str,
    base: Any = None,
) -> tuple:
    """Sort by operand ``key_index`` (or by ``base``, a per-element key derived from it)."""
    x = operands[key_index] if base is None else base
    dtype = np.dtype(x.dtype)
    if _is_float(dtype) and ctype == "TOTALORDER":
        key = _total_order_key(x)
        if direction == "GT":
            key = lax.bitwise_not(key)
    elif _is_float(dtype):
        key = x if direction == "LT" else lax.neg(x)
    else:
        key = x if direction == "LT" else lax.bitwise_not(x)
    if key is x and base is None and key_index == 0:
        return tuple(lax.sort(tuple(operands), dimension=dim, is_stable=is_stable, num_keys=1))
    out = lax.sort((key, *operands), dimension=dim, is_stable=is_stable, num_keys=1)
    return tuple(out[1:])


# ---- a compare of one key function of each element ------------------------------------------


def _keyed_comparator(region: Region, operands: tuple) -> tuple[int, str, str, Any] | None:
    """(operand index, direction, compare type, key function) when the comparator is
    ``compare(g(lhs_i), g(rhs_i))`` with the same element-wise chain ``g`` applied to both
    elements of one operand — JAX's float comparators are this: they map -0 to +0 and every
    NaN to one NaN, then compare in TOTALORDER. Sorting by ``g(x)`` under the compare is then
    exactly the comparator's order."""
    block = region.block
    if len(block.returns) != 1 or not block.ops:
        return None
    last = block.ops[-1]
    if last.name != "stablehlo.compare" or last.results != block.returns:
        return None
    direction = last.attrs.get("comparison_direction")
    ctype = last.attrs.get("compare_type")
    if direction not in ("LT", "GT") or not isinstance(ctype, str):
        return None
    lhs, rhs = last.operands
    producers = {r: op for op in block.ops for r in op.results}
    found = _compared_operand(lhs, rhs, block, producers, len(operands))
    if found is None:
        return None
    i, mapping, swapped = found
    if swapped:
        direction, lhs, rhs = _FLIPPED[direction], rhs, lhs
    chain = [op for op in block.ops if op is not last and set(op.results) & mapping]
    a = block.args[2 * i]
    dtype = np.dtype(operands[i].dtype)
    if dtype.kind == "c" or (not _is_float(dtype) and ctype in ("FLOAT", "TOTALORDER")):
        return None
    key_block = Block((a,), (block.arg_avals[2 * i],), chain, (lhs,), block.terminator)
    _liveness(key_block)
    interpreter, env = region.interpreter, region.env

    def key_fn(x: Any) -> Any:
        return interpreter.run_block(key_block, (x,), env)[0]

    return i, str(direction), ctype, key_fn


class _Term(NamedTuple):
    operand: int  # the operand whose elements the term compares
    direction: str  # LT or GT
    ctype: str
    key_fn: Any  # element -> the value compared (the identity when it compares the elements)
    lhs: int  # the compared values
    rhs: int


def _compare_term(value: int, region: Region, producers: dict[int, Any], operands: tuple) -> Any:
    """The :class:`_Term` when ``value`` is ``compare(g(lhs_i), g(rhs_i))`` (any direction);
    None otherwise."""
    block = region.block
    op = producers.get(value)
    if op is None or op.name != "stablehlo.compare":
        return None
    direction = op.attrs.get("comparison_direction")
    ctype = op.attrs.get("compare_type")
    lhs, rhs = op.operands
    found = _compared_operand(lhs, rhs, block, producers, len(operands))
    if found is None:
        return None
    i, mapping, swapped = found
    if swapped:
        direction, lhs, rhs = _FLIPPED.get(direction, direction), rhs, lhs
    a = block.args[2 * i]
    dtype = np.dtype(operands[i].dtype)
    if not isinstance(ctype, str):
        ctype = "FLOAT" if _is_float(dtype) else ("UNSIGNED" if dtype.kind in "ub" else "SIGNED")
    if dtype.kind == "c" or (_is_float(dtype) != (ctype in ("FLOAT", "TOTALORDER"))):
        return None
    if dtype.kind in "iu" and (ctype == "UNSIGNED") != (dtype.kind == "u"):
        return None
    chain = [o for o in block.ops if set(o.results) & mapping]
    if not chain:
        key_fn = None
    else:
        key_block = Block((a,), (block.arg_avals[2 * i],), chain, (lhs,), block.terminator)
        _liveness(key_block)
        interpreter, env = region.interpreter, region.env

        def key_fn(x: Any) -> Any:
            return interpreter.run_block(key_block, (x,), env)[0]

    return _Term(i, str(direction), ctype, key_fn, lhs, rhs)


def _lexicographic_comparator(region: Region, operands: tuple) -> list[_Term] | None:
    """The keys, most significant first, when the comparator is a lexicographic chain of
    strict compares: ``or(lt_0, and(eq_0, rest))`` (JAX's ``lax.sort(num_keys=k)``) or
    ``select(eq_0, rest, lt_0)``, where ``eq_0`` compares for equality what ``lt_0`` compares
    (same values, same compare type) and ``rest`` is such a chain or one strict compare."""
    block = region.block
    if len(block.returns) != 1 or not block.ops:
        return None
    producers = {r: op for op in block.ops for r in op.results}
    terms = _chain(block.returns[0], region, producers, operands)
    if terms is None or len(terms) < 2:
        return None
    return terms


def _chain(value: int, region: Region, producers: dict, operands: tuple) -> list[_Term] | None:
    op = producers.get(value)
    if op is None:
        return None
    if op.name == "stablehlo.compare":
        term = _compare_term(value, region, producers, operands)
        return [term] if term is not None and term.direction in ("LT", "GT") else None
    if op.name == "stablehlo.or":
        for first, other in (op.operands, op.operands[::-1]):
            inner = producers.get(other)
            if inner is None or inner.name != "stablehlo.and":
                continue
            for eq, rest in (inner.operands, inner.operands[::-1]):
                found = _head(first, eq, rest, region, producers, operands)
                if found is not None:
                    return found
        return None
    if op.name == "stablehlo.select":
        eq, rest, first = op.operands
        return _head(first, eq, rest, region, producers, operands)
    return None


def _head(first: int, eq: int, rest: int, region: Region, producers: dict, operands: tuple) -> Any:
    """[strict compare ``first``, *chain of ``rest``] when ``eq`` is the matching equality."""
    t0 = _compare_term(first, region, producers, operands)
    if t0 is None or t0.direction not in ("LT", "GT"):
        return None
    eq_op = producers.get(eq)
    if eq_op is None or eq_op.name != "stablehlo.compare":
        return None
    if eq_op.attrs.get("comparison_direction") != "EQ":
        return None
    if set(eq_op.operands) != {t0.lhs, t0.rhs}:
        return None
    first_op = producers[first]
    if eq_op.attrs.get("compare_type") != first_op.attrs.get("compare_type"):
        return None
    tail = _chain(rest, region, producers, operands)
    return None if tail is None else [t0, *tail]


def _multi_key_sort(operands: tuple, dim: int, is_stable: bool, terms: list[_Term]) -> tuple:
    keys = []
    for t in terms:
        x = operands[t.operand]
        if t.key_fn is not None:
            x = lax.reshape(jax.vmap(t.key_fn)(lax.reshape(x, (x.size,))), x.shape)
        keys.append(_ascending_key(x, t.direction, t.ctype))
    out = lax.sort((*keys, *operands), dimension=dim, is_stable=is_stable, num_keys=len(keys))
    return tuple(out[len(keys) :])


# a comparison direction with its operands swapped
_FLIPPED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}


def _compared_operand(
    lhs: int, rhs: int, block: Block, producers: dict[int, Any], n: int
) -> tuple[int, set[int], bool] | None:
    """The operand ``i`` whose two elements (block arguments ``2i``, ``2i+1``) ``lhs`` and
    ``rhs`` are computed from alike (:func:`_mirror`): ``(i, the values of the chain from
    the first element, whether that chain ends in rhs)``; None when no operand is."""
    args = block.args
    for i in range(n):
        a, b = args[2 * i], args[2 * i + 1]
        mapping = _mirror(lhs, rhs, a, b, producers, args)
        if mapping is not None:
            return i, mapping, False
        mapping = _mirror(rhs, lhs, a, b, producers, args)
        if mapping is not None:
            return i, mapping, True
    return None


def _mirror(
    x: int, y: int, a: int, b: int, producers: dict[int, Any], args: tuple[int, ...]
) -> set[int] | None:
    """The values of ``x``'s chain when ``x`` is computed from block argument ``a`` exactly as
    ``y`` is from ``b`` (same ops, same attributes; other operands constants); else None."""
    seen: set[int] = set()
    stack = [(x, y)]
    while stack:
        u, v = stack.pop()
        if u == a and v == b:
            continue
        if u in args or v in args:
            return None
        pu, pv = producers.get(u), producers.get(v)
        if pu is None or pv is None or pu.name != pv.name or len(pu.operands) != len(pv.operands):
            return None
        if pu.regions or pv.regions or not _same_attrs(pu.attrs, pv.attrs):
            return None
        if pu is pv and pu.name != "stablehlo.constant":
            return None  # a value shared by both sides: not a per-element key
        seen.add(u)
        if pu.name == "stablehlo.constant":
            continue
        stack.extend(zip(pu.operands, pv.operands, strict=True))
    return seen


def _same_attrs(x: dict, y: dict) -> bool:
    if x.keys() != y.keys():
        return False
    for k in x:
        u, v = x[k], y[k]
        if isinstance(u, np.ndarray) or isinstance(v, np.ndarray):
            if not (np.shape(u) == np.shape(v) and np.array_equal(u, v, equal_nan=True)):
                return False
        elif u != v:
            return False
    return True


# ---- the general path -----------------------------------------------------------------------

# up to this many element pairs (batch x n x n), rank by comparing all pairs at once
_PAIRS_LIMIT = 1 << 22


def _general_sort(operands: tuple, dim: int, region: Region) -> tuple:
    n = operands[0].shape[dim]
    batch = int(np.prod(operands[0].shape, dtype=np.int64)) // n
    if batch * n * n <= _PAIRS_LIMIT:
        return _rank_sort(operands, dim, region)
    # one compiled program rather than thousands of eager ops when run outside jit
    return tuple(jax.jit(lambda ops: _network_sort(ops, dim, region))(tuple(operands)))


def _to_rows(operands: tuple, dim: int) -> tuple[list, tuple, Any]:
    """Each operand as (batch, n) with ``dim`` last; and how to undo it."""
    ndim = operands[0].ndim
    n = operands[0].shape[dim]
    perm = (*(i for i in range(ndim) if i != dim), dim)
    inv = tuple(int(p) for p in np.argsort(perm))
    moved = [lax.transpose(x, perm) for x in operands]
    b = int(np.prod(moved[0].shape[:-1], dtype=np.int64))
    rows = [lax.reshape(x, (b, n)) for x in moved]

    def back(xs: list) -> tuple:
        return tuple(
            lax.transpose(lax.reshape(x, orig.shape), inv)
            for x, orig in zip(xs, moved, strict=True)
        )

    return rows, (b, n), back


def _rank_sort(operands: tuple, dim: int, region: Region) -> tuple:
    """O(n²) comparisons in one vectorised comparator call: the rank of element j is the
    number of elements before it (comparator, then original position), and the ranks, a
    permutation, are inverted with an exact integer ``lax.sort``."""
    rows, (b, n), back = _to_rows(operands, dim)
    args = []
    for x in rows:
        args.append(lax.broadcast_in_dim(x, (b, n, n), (0, 1)))  # [.., i, j] = x_i
        args.append(lax.broadcast_in_dim(x, (b, n, n), (0, 2)))  # [.., i, j] = x_j
    (c,) = vmapped_region(region)(*args)  # c[i, j]: x_i before x_j
    ct = lax.transpose(c, (0, 2, 1))
    earlier = lax.broadcasted_iota(np.int32, (b, n, n), 1) < lax.broadcasted_iota(
        np.int32, (b, n, n), 2
    )
    before = c | (~ct & earlier)
    rank = lax.reduce_sum(lax.convert_element_type(before, np.int32), (1,))
    iota = lax.broadcasted_iota(np.int32, (b, n), 1)
    _, order = lax.sort((rank, iota), dimension=1, num_keys=1)
    return back([jnp.take_along_axis(x, order, axis=1) for x in rows])


# a bitonic sorting network, for long sort dimensions


def _network_sort(operands: tuple, dim: int, region: Region) -> tuple:
    flat, (b, n), back = _to_rows(operands, dim)
    size = 1 << (n - 1).bit_length()
    if size != n:
        flat = [lax.pad(x, np.zeros((), x.dtype), [(0, 0, 0), (0, size - n, 0)]) for x in flat]
    pos = lax.broadcasted_iota(np.int32, (b, size), 1)
    valid = pos < n
    cmp = vmapped_region(region)
    k_ops = len(operands)

    def less(a: list, bb: list) -> Any:
        """a before b: valid first, then the comparator, then the original position."""
        args = [v for pair in zip(a[:k_ops], bb[:k_ops], strict=True) for v in pair]
        (lt,) = cmp(*args)
        swapped = [v for pair in zip(bb[:k_ops], a[:k_ops], strict=True) for v in pair]
        (gt,) = cmp(*swapped)
        tie = ~lt & ~gt & (a[-1] < bb[-1])
        return a[-2] & (~bb[-2] | lt | tie)

    def compare_swap(lo: list, hi: list) -> tuple[list, list]:
        swap = less(hi, lo)
        new_lo = [lax.select(swap, h, low) for low, h in zip(lo, hi, strict=True)]
        new_hi = [lax.select(swap, low, h) for low, h in zip(lo, hi, strict=True)]
        return new_lo, new_hi

    state = [*flat, valid, pos]
    k = 2
    while k <= size:
        # 1. the flip: element t of each block of k against element k-1-t
        blocks = [lax.reshape(x, (b, size // k, k)) for x in state]
        lo = [lax.slice_in_dim(x, 0, k // 2, axis=2) for x in blocks]
        hi = [lax.rev(lax.slice_in_dim(x, k // 2, k, axis=2), (2,)) for x in blocks]
        lo, hi = compare_swap(lo, hi)
        state = [
            lax.reshape(lax.concatenate([low, lax.rev(h, (2,))], 2), (b, size))
            for low, h in zip(lo, hi, strict=True)
        ]
        # 2. half-cleaners: element t against t + j, j = k/4 ... 1
        j = k // 4
        while j >= 1:
            halves = [lax.reshape(x, (b, size // (2 * j), 2, j)) for x in state]
            lo = [lax.index_in_dim(x, 0, axis=2, keepdims=False) for x in halves]
            hi = [lax.index_in_dim(x, 1, axis=2, keepdims=False) for x in halves]
            lo, hi = compare_swap(lo, hi)
            state = [lax.reshape(_stack2(low, h), (b, size)) for low, h in zip(lo, hi, strict=True)]
            j //= 2
        k *= 2
    return back([lax.slice_in_dim(x, 0, n, axis=1) for x in state[:k_ops]])


def _stack2(a: Any, b: Any) -> Any:
    """[a, b] stacked on a new axis 2 (shape (B, P, 2, j))."""
    a2 = lax.expand_dims(a, (2,))
    b2 = lax.expand_dims(b, (2,))
    return lax.concatenate([a2, b2], 2)
