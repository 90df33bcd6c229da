"""The conformance comparisons: ULP distance, the tolerances of each check kind (StableHLO's
own with ``strict``, the generated testdata's), and what a failing comparison reports. (The
runner, the file formats and the shared suite: test_conformance.py.)"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlopipe import conformance as conf

# ---- ULP distance and tolerances ----------------------------------------------------------


def _steps(x: np.ndarray, n: int, toward: float) -> np.ndarray:
    for _ in range(n):
        x = np.nextafter(x, np.asarray(toward, x.dtype))
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "start", [0.0, -0.0, 1.0, -1.0, 1e-40, -3.5e-310, 1e30, -2.0, np.finfo(np.float32).tiny]
)
@pytest.mark.parametrize("n", [0, 1, 3, 1000])
def test_ulp_distance_counts_nextafter_steps(dtype, start, n):
    a = np.asarray(start, dtype)
    for toward in (np.inf, -np.inf):
        b = _steps(a, n, toward)
        assert int(conf.ulp_distance(a, b)) == n
        assert int(conf.ulp_distance(b, a)) == n


@pytest.mark.parametrize(
    "dtype",
    [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2],
)
def test_ulp_distance_narrow_types_is_rank_difference(dtype):
    info = ml_dtypes.finfo(dtype)
    values = np.array([-float(info.max), -1.0, -0.0, 0.0, float(info.smallest_subnormal), 1.0])
    x = values.astype(dtype)
    # every finite value between them, counted by brute force
    allv = np.arange(2 ** (8 * np.dtype(dtype).itemsize), dtype=np.uint64)
    with np.errstate(invalid="ignore"):
        allv = allv.astype(f"u{np.dtype(dtype).itemsize}").view(dtype).astype(np.float64)
    finite = np.unique(allv[np.isfinite(allv)])
    for i in range(len(x)):
        for j in range(len(x)):
            lo, hi = sorted((float(x[i]), float(x[j])))
            want = int(((finite >= lo) & (finite < hi)).sum())
            assert int(conf.ulp_distance(x[i : i + 1], x[j : j + 1])[0]) == want


def test_ulp_distance_across_zero_and_extremes_f64():
    big = np.array([np.finfo(np.float64).max])
    d = int(conf.ulp_distance(big, -big)[0])
    assert d == 2 * int(big.view(np.uint64)[0])  # no overflow
    assert int(conf.ulp_distance(np.array([0.0]), np.array([-0.0]))[0]) == 0
    tiny = np.array([5e-324])
    assert int(conf.ulp_distance(tiny, -tiny)[0]) == 2


ONE = np.float32(1.0)
TWO_ULP = _steps(np.asarray(ONE), 2, 2.0)
FOUR_ULP = _steps(np.asarray(ONE), 4, 2.0)
SIX_ULP = _steps(np.asarray(ONE), 6, 2.0)
GEN = {"generated": True}  # a check of the generated testdata (expected values computed)

F32, F64, I32 = np.float32, np.float64, np.int32
COMPARE_CASES = [
    # (kind, dtype, actual, expected, params, passes with strict, passes by default)
    ("expect_eq", I32, [1, 2], [1, 2], {}, True, True),
    ("expect_eq", I32, [1, 2], [1, 3], {}, False, False),
    ("expect_eq", F32, [np.nan, 1.0], [np.nan, 1.0], {}, True, True),
    ("expect_eq", F64, [1.0], [np.nextafter(1.0, 2)], {}, False, False),
    ("expect_eq", F32, [0.0], [-0.0], {}, False, True),
    ("expect_close", F32, [ONE], [TWO_ULP], {}, False, True),
    ("expect_close", F32, [ONE], [TWO_ULP], {"max_ulp": 2}, True, True),
    ("expect_close", F32, [ONE], [FOUR_ULP], {}, False, True),  # 4 ULPs by default
    ("expect_close", F32, [ONE], [SIX_ULP], {}, False, False),  # no relative floor
    ("expect_close", F32, [1.0], [1.0002], {}, False, False),
    ("expect_close", F32, [1e-30], [SIX_ULP * 1e-30], {}, False, False),  # no absolute floor
    ("expect_close", F32, [ONE], [SIX_ULP], {"max_ulp": 6}, True, True),
    ("expect_close", F32, [ONE], [ONE], {"min_ulp": 1, "max_ulp": 3}, False, False),
    ("expect_close", F32, [np.inf], [np.inf], {}, True, True),
    ("expect_close", F32, [np.inf], [-np.inf], {}, False, False),
    ("expect_close", F32, [np.nan], [1.0], {}, False, False),
    ("expect_close", F64, [1e-9], [2e-9], {}, False, False),
    ("expect_close", F64, [1e-6], [1.1e-6], {}, False, False),  # 1e-6 off by 10%
    ("expect_almost_eq", F64, [1.0], [1.00005], {}, True, True),  # StableHLO's 1e-4
    ("expect_almost_eq", F64, [1000.0], [1000.05], {}, False, False),  # absolute, not relative
    # generated expectations are JAX's results: the ULP bound or SUM_EPS of the tensor's
    # largest magnitude, never 1e-4 absolute
    ("expect_almost_eq", F64, [1.0], [1.00005], GEN, True, False),
    ("expect_almost_eq", F64, [1e-6], [1.1e-6], GEN, True, False),
    ("expect_almost_eq", F32, [1.0, 1e-3], [1.0, 1e-3 + 2e-6], GEN, True, True),
    ("expect_almost_eq", F32, [1e-3], [1e-3 + 2e-6], GEN, True, False),
    ("expect_almost_eq", F64, [1.0], [1.05], {"tolerance": 0.1}, True, True),
    ("expect_almost_eq", F64, [1.0], [1.05], {}, False, False),
    ("expect_almost_eq", F32, [np.nan], [np.nan], {}, True, True),
    ("expect_almost_eq", F32, [np.inf], [1.0], {}, False, False),
]


@pytest.mark.parametrize("case", COMPARE_CASES, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}-{c[4]}")
def test_compare_tolerances(case):
    kind, dtype, actual, expected, params, strict_ok, default_ok = case
    a, e = np.asarray(actual, dtype), np.asarray(expected, dtype)
    assert (conf.compare(kind, a, e, strict=True, **params) is None) == strict_ok
    assert (conf.compare(kind, a, e, strict=False, **params) is None) == default_ok
    # the same values as complex parts
    if dtype != I32:
        ca, ce = np.empty(a.shape, np.complex128), np.empty(e.shape, np.complex128)
        ca.real, ca.imag, ce.real, ce.imag = a, a, e, e
        if dtype == F64:
            assert (conf.compare(kind, ca, ce, strict=True, **params) is None) == strict_ok


def test_compare_reports_where_and_what():
    why = conf.compare("expect_eq", np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]]))
    assert why is not None and "1 of 4" in why and "[1, 1]" in why
    assert "shape" in conf.compare("expect_eq", np.zeros(2), np.zeros(3))
    assert "dtype" in conf.compare("expect_eq", np.zeros(2, np.float32), np.zeros(2))
    c = np.array([1 + 1j], np.complex64)
    assert "imag" in conf.compare("expect_eq", c, np.array([1 + 2j], np.complex64))


def test_an_f64_result_computed_in_f32_fails():
    x = np.linspace(-3.0, 3.0, 101)
    in_f32 = np.sin(x.astype(np.float32)).astype(np.float64)
    assert conf.compare("expect_close", np.sin(x), np.sin(x)) is None
    assert conf.compare("expect_close", in_f32, np.sin(x)) is not None
    assert conf.compare("expect_almost_eq", in_f32, np.sin(x), generated=True) is not None
