"""Comparing a result with its expectation: exact, within ULPs, or within a tolerance.

Tolerances (``strict=False`` is the default):

* ``expect_eq*``: exact; NaN equals NaN (with ``strict``, the signs of zeros must match too).
* ``strict=True`` -- StableHLO's own definitions: ``expect_almost_eq*`` passes when
  ``|a - e| <= tolerance`` (default 1e-4); ``expect_close`` when
  ``min_ulp_difference <= ulp(a, e) <= max_ulp_difference`` (default 0 and 1).
* default -- the check's own definition, widened by at most :func:`ulp_bound` ULPs of the
  type (4 for 32- and 64-bit floats, 2 for 16-bit, 1 for narrower), since XLA's
  transcendental functions differ from stored expectations by a few ULPs. ``expect_close``
  has no absolute floor: a value of 1e-6 is checked as closely as a value of 1, and an f64
  result computed in f32 fails. A hand-written ``expect_almost_eq`` keeps its tolerance (1e-4
  by default, as StableHLO defines it; its expected values are rounded by hand). A
  *generated* check (``generated=True``: the ``@check.*`` custom calls of StableHLO's
  testdata, whose expected values are JAX's own results) is held to the ULP bound instead,
  an ``expect_almost_eq`` one (used for sums: convolutions, cumulative sums) also to
  ``SUM_EPS`` machine epsilons of the tensor's largest expected magnitude (rounding of a sum
  scales with its terms, not its result) -- never to an absolute 1e-4.

Non-finite values must be bitwise equal or both NaN, in every mode.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hlopipe.rehydrate import is_float

# How many machine epsilons of the tensor's largest expected magnitude an element of an
# expect_almost_eq check may be off by default (accumulation order of sums).
SUM_EPS = 64


def ulp_bound(dtype: np.dtype) -> int:
    """The default number of ULPs a float result of ``dtype`` may differ from its expectation."""
    bits = 8 * np.dtype(dtype).itemsize
    return 4 if bits >= 32 else 2 if bits == 16 else 1


@functools.cache
def _rank_table(dtype_name: str) -> tuple[np.ndarray, np.ndarray]:
    """For a float type of at most 16 bits: bit pattern -> its rank among the type's finite
    values in increasing order (``-0`` and ``+0`` share one rank), and which are finite."""
    dtype = np.dtype(dtype_name)
    bits = np.dtype(f"u{dtype.itemsize}")
    patterns = np.arange(2 ** (8 * dtype.itemsize), dtype=np.uint64).astype(bits)
    with np.errstate(invalid="ignore"):
        values = patterns.view(dtype).astype(np.float64)
    finite = np.isfinite(values)
    distinct = np.unique(values[finite])  # sorted; -0.0 and 0.0 are one value
    rank = np.zeros(patterns.shape, dtype=np.int64)
    rank[finite] = np.searchsorted(distinct, values[finite])
    return rank, finite


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The number of values of the float type that are ``>= min(a, b)`` and ``< max(a, b)``
    (StableHLO's definition for ``check.expect_close``), elementwise, as ``uint64``.

    ``+0`` and ``-0`` are 0 apart; subnormals count like any other value. Only meaningful where
    both are finite (elsewhere the result is unspecified).
    """
    a = np.asarray(a)
    b = np.asarray(b)
    dtype = a.dtype
    bits = np.dtype(f"u{dtype.itemsize}")
    if dtype.itemsize <= 2:
        rank, _ = _rank_table(dtype.name)
        ra = rank[a.view(bits).astype(np.int64)]
        rb = rank[b.view(bits).astype(np.int64)]
        return np.abs(ra - rb).astype(np.uint64)
    # IEEE sign-magnitude: the magnitude bits order non-negative values; a negative value sits
    # as far below zero as its magnitude is above it. Kept unsigned so f64 cannot overflow.
    sign = np.uint64(1) << np.uint64(8 * dtype.itemsize - 1)
    ia = a.view(bits).astype(np.uint64)
    ib = b.view(bits).astype(np.uint64)
    ma, mb = ia & ~sign, ib & ~sign
    same = ((ia & sign) != 0) == ((ib & sign) != 0)
    with np.errstate(over="ignore"):
        apart = np.where(ma > mb, ma - mb, mb - ma)
        across = ma + mb
    return np.where(same, apart, across)


def compare(
    kind: str,
    actual: Any,
    expected: Any,
    *,
    strict: bool = False,
    tolerance: float | None = None,
    max_ulp: int | None = None,
    min_ulp: int | None = None,
    generated: bool = False,
) -> str | None:
    """None when ``actual`` passes the check ``kind`` against ``expected``, else why not.

    Args:
      kind: ``expect_eq``, ``expect_almost_eq``, ``expect_close`` or ``expect_serialized_eq``
        (a ``check.`` prefix and a ``_const`` suffix are ignored).
      strict: StableHLO's own tolerances instead of the default ones (module doc).
      tolerance, max_ulp, min_ulp: the check's own parameters, when it has them.
      generated: the expected values were computed by a machine, not written by hand.

    Example:
      >>> compare("expect_close", np.float32(1.0), np.nextafter(np.float32(1), 2))  # 1 ULP
    """
    kind = kind.removeprefix("check.").removesuffix("_const")
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} != expected {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    params = {
        "strict": strict,
        "tolerance": tolerance,
        "max_ulp": max_ulp,
        "min_ulp": min_ulp,
        "generated": generated,
    }
    if actual.dtype.kind == "c":
        for part, name in ((np.real, "real"), (np.imag, "imag")):
            why = compare(kind, part(actual), part(expected), **params)  # type: ignore[arg-type]
            if why:
                return f"{name} part: {why}"
        return None
    if not is_float(actual.dtype):
        bad = np.asarray(actual != expected)
    elif kind in ("expect_eq", "eq", "expect_serialized_eq"):
        bad = _float_unequal(actual, expected, strict)
    else:
        bad = _float_far(kind, actual, expected, **params)  # type: ignore[arg-type]
    return describe(actual, expected, bad) if bad.any() else None


def _float_unequal(actual: np.ndarray, expected: np.ndarray, strict: bool) -> np.ndarray:
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    bad = ~((a == e) | (np.isnan(a) & np.isnan(e)))
    if strict:
        bad |= (a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e))
    return bad


def _float_far(
    kind: str,
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    strict: bool,
    tolerance: float | None,
    max_ulp: int | None,
    min_ulp: int | None,
    generated: bool,
) -> np.ndarray:
    """Where an ``expect_close`` / ``expect_almost_eq`` check fails, elementwise."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    finite = np.isfinite(a) & np.isfinite(e)
    bad = ~finite & ~((np.isnan(a) & np.isnan(e)) | (a == e))
    lo = 0 if min_ulp is None else int(min_ulp)
    almost = kind in ("expect_almost_eq", "almost_eq")
    ulp = ulp_distance(actual, expected)
    if strict and almost:
        tol = 1e-4 if tolerance is None else tolerance
        with np.errstate(over="ignore", invalid="ignore"):
            return bad | (finite & ~(np.abs(a - e) <= tol))
    if strict:
        hi = 1 if max_ulp is None else int(max_ulp)
        return bad | (finite & ((ulp > np.uint64(hi)) | (ulp < np.uint64(lo))))
    hi = max(ulp_bound(actual.dtype), 1 if max_ulp is None else int(max_ulp))
    close = ulp <= np.uint64(hi)
    with np.errstate(over="ignore", invalid="ignore"):
        if almost and generated:
            scale = float(np.max(np.abs(e), where=finite, initial=0.0))
            slack = SUM_EPS * _eps(actual.dtype) * scale
            close |= np.abs(a - e) <= max(slack, tolerance or 0.0)
        elif almost:
            close |= np.abs(a - e) <= (1e-4 if tolerance is None else tolerance)
        elif lo:
            close &= ulp >= np.uint64(lo)
    return bad | (finite & ~close)


def _eps(dtype: np.dtype) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype).eps)


def describe(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray) -> str:
    """How many elements are ``bad``, and the first of them."""
    bad = np.asarray(bad)
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (
        f"{int(bad.sum())} of {bad.size} elements differ; first at {list(idx)}: "
        f"got {actual[idx]!r}, expected {expected[idx]!r}"
    )
