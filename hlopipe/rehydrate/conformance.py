"""Conformance: run StableHLO test programs through the rehydrating interpreter.

Format (a), StableHLO's generated testdata: ``@main`` calls ``@inputs``/``@expected``, applies
one op and checks the result with ``stablehlo.custom_call @check.expect_eq`` (exact; NaN equals
NaN), ``@check.expect_close`` or ``@check.expect_almost_eq`` (with tolerance).

Tolerances: by default 4 ULPs or 1e-4 absolute-or-relative, since XLA's own transcendental
functions differ from the stored expectations by a few ULPs; ``strict=True`` uses StableHLO's
own definitions (``expect_almost_eq``: |a - b| <= 1e-4; ``expect_close``: 1 ULP).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hlopipe.errors import HlopipeError, UnsupportedOpError
from hlopipe.rehydrate.custom_calls import CUSTOM_CALLS

CHECK_TARGETS = ("check.expect_eq", "check.expect_close", "check.expect_almost_eq")


@dataclass
class Check:
    kind: str
    actual: Any
    expected: Any


@dataclass
class FileResult:
    path: str
    status: str  # "pass" | "fail" | "error" | "unsupported"
    message: str = ""
    seconds: float = 0.0
    modes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "seconds": round(self.seconds, 4),
            "modes": self.modes,
        }


# The checks a running program records (set per run; the custom-call implementations append).
_RECORDER: list[list[Check]] = []


def _make_check(kind: str) -> Any:
    def impl(ctx: Any, actual: Any, expected: Any = None, **attrs: Any) -> Any:
        if not _RECORDER:
            raise UnsupportedOpError(
                f"{kind} at {ctx.loc} is a test assertion: run the file with 'hlopipe conformance'"
            )
        _RECORDER[-1].append(Check(kind, actual, expected))
        return ()

    return impl


for _t in CHECK_TARGETS:
    CUSTOM_CALLS.setdefault(_t, _make_check(_t))


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dtype = a.dtype
    bits = {2: np.int16, 4: np.int32, 8: np.int64, 1: np.int8}[dtype.itemsize]
    ia = a.view(bits).astype(np.int64)
    ib = b.view(bits).astype(np.int64)
    sign = np.int64(1) << (dtype.itemsize * 8 - 1)
    ia = np.where(ia < 0, sign - ia if dtype.itemsize < 8 else -(ia & (sign - 1)), ia)
    ib = np.where(ib < 0, sign - ib if dtype.itemsize < 8 else -(ib & (sign - 1)), ib)
    return np.abs(ia - ib)


def compare(
    kind: str,
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    strict: bool = False,
    tolerance: float | None = None,
    max_ulp: int | None = None,
) -> str | None:
    """None when ``actual`` passes the check ``kind`` against ``expected``, else why not."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != expected {expected.dtype}"
    if actual.dtype.kind == "c":
        for part in (np.real, np.imag):
            why = compare(
                kind,
                part(actual),
                part(expected),
                strict=strict,
                tolerance=tolerance,
                max_ulp=max_ulp,
            )
            if why:
                return why
        return None
    if actual.dtype.kind not in "fV" or (kind == "check.expect_eq" and actual.dtype.kind != "f"):
        if actual.dtype.kind in "fV":
            pass
        else:
            bad = actual != expected
            if bad.any():
                return _describe(actual, expected, bad)
            return None
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    if kind == "check.expect_eq":
        bad = ~((a == e) | both_nan)
        if strict:
            bad |= (np.signbit(a) != np.signbit(e)) & (a == 0) & (e == 0)
        return _describe(actual, expected, bad) if bad.any() else None
    nonfinite = ~np.isfinite(a) | ~np.isfinite(e)
    bad_nonfinite = nonfinite & ~(both_nan | (a == e))
    finite = ~nonfinite
    if strict:
        if kind == "check.expect_almost_eq":
            tol = 1e-4 if tolerance is None else tolerance
            bad = finite & (np.abs(a - e) > tol)
        else:
            ulp = 1 if max_ulp is None else max_ulp
            bad = finite & (_ulp_distance(actual, expected) > ulp)
    else:
        tol = 1e-4 if tolerance is None else max(tolerance, 1e-4)
        ulp = 4 if max_ulp is None else max(max_ulp, 4)
        close = np.abs(a - e) <= tol * np.maximum(1.0, np.abs(e))
        if actual.dtype.itemsize in (1, 2, 4, 8) and actual.dtype.kind == "f":
            close |= _ulp_distance(actual, expected) <= ulp
        bad = finite & ~close
    bad = bad | bad_nonfinite
    return _describe(actual, expected, bad) if bad.any() else None


def _describe(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (
        f"{int(bad.sum())} of {bad.size} elements differ; first at {list(idx)}: "
        f"got {actual[idx]!r}, expected {expected[idx]!r}"
    )


def run_testdata_file(
    path: str | Path, *, jit: bool = True, eager: bool = True, strict: bool = False
) -> FileResult:
    """Run one file of StableHLO's generated testdata; pass when every check holds in every
    mode asked for (jitted and eager)."""
    from hlopipe.io import load
    from hlopipe.rehydrate import rehydrate

    start = time.perf_counter()
    path = str(path)
    try:
        prog = load(path)
        f = rehydrate(prog)
    except UnsupportedOpError as e:
        return FileResult(path, "unsupported", str(e), time.perf_counter() - start)
    except HlopipeError as e:
        return FileResult(path, "error", str(e), time.perf_counter() - start)
    modes = []
    if jit:
        modes.append("jit")
    if eager:
        modes.append("eager")
    result = FileResult(path, "pass")
    with jax.enable_x64(True) if hasattr(jax, "enable_x64") else _x64():
        for mode in modes:
            try:
                checks = _run_checks(f, mode)
                if not checks:
                    why = "the program has no checks"
                else:
                    why = None
                    for c in checks:
                        why = compare(c.kind, c.actual, c.expected, strict=strict)
                        if why:
                            why = f"{c.kind}: {why}"
                            break
                result.modes[mode] = "pass" if why is None else "fail"
                if why and result.status == "pass":
                    result.status, result.message = "fail", f"[{mode}] {why}"
            except UnsupportedOpError as e:
                result.modes[mode] = "unsupported"
                result.status, result.message = "unsupported", str(e)
                break
            except Exception as e:  # a crash of one file must not stop the suite
                result.modes[mode] = "error"
                if result.status in ("pass", "fail"):
                    result.status = "error"
                    result.message = f"[{mode}] {type(e).__name__}: {e}"
                    result.message += "\n" + "".join(traceback.format_exception(e)[-3:])
    result.seconds = time.perf_counter() - start
    return result


class _x64:
    def __enter__(self) -> None:
        self.old = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)

    def __exit__(self, *exc: Any) -> None:
        jax.config.update("jax_enable_x64", self.old)


def _run_checks(f: Any, mode: str) -> list[Check]:
    def run() -> list[tuple[str, Any, Any]]:
        _RECORDER.append([])
        try:
            f()
            checks = _RECORDER[-1]
        finally:
            _RECORDER.pop()
        return [(c.kind, c.actual, c.expected) for c in checks]

    if mode == "jit":
        kinds: list[str] = []

        def traced() -> list[tuple[Any, Any]]:
            out = run()
            kinds[:] = [k for k, _, _ in out]
            return [(a, e) for _, a, e in out]

        values = jax.jit(traced)()
        return [Check(k, np.asarray(a), np.asarray(e)) for k, (a, e) in zip(kinds, values)]
    return [Check(k, np.asarray(a), np.asarray(e)) for k, a, e in run()]
