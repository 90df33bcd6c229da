"""What a conformance run gives: one :class:`Check` per assertion, one :class:`FileResult` per
file, and the summaries the command prints."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("pass", "fail", "error", "unsupported", "skipped")
# when tests of one file end differently, the file reports the worst: a wrong answer first
SEVERITY = {"pass": 0, "skipped": 1, "unsupported": 2, "error": 3, "fail": 4}


@dataclass
class Check:
    """One assertion as it ran: the value, what it must equal, and the check's parameters."""

    kind: str  # expect_eq | expect_almost_eq | expect_close | expect_serialized_eq
    actual: Any
    expected: Any
    tolerance: float | None = None
    max_ulp: int | None = None
    min_ulp: int | None = None
    probe: tuple[str, int] | None = None
    loc: str = ""
    # from a generated test (a ``@check.*`` custom call of StableHLO's testdata): its expected
    # values are JAX's own results, not rounded by hand (see compare.py)
    generated: bool = False


@dataclass
class FileResult:
    """What running one file gave.

    Attributes:
      status: ``pass``, ``fail``, ``error``, ``unsupported`` or ``skipped``.
      message: why, when not ``pass`` (first line: the test and mode, then the reason).
      modes: per mode (``jit``, ``eager``) the worst status over the file's tests.
      tests: per test (``file:line @function``) its status.
      skipped: the modules or files not run, each with why.
      reference: with ``reference="xla"``: the status of the checks on XLA's own results.
    """

    path: str
    status: str
    message: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    format: str = ""
    modes: dict[str, str] = field(default_factory=dict)
    tests: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    reference_message: str = ""
    skipped: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status not in ("pass", "skipped")

    @property
    def worse_than_reference(self) -> bool:
        """Rehydration fails a file that XLA itself passes."""
        return self.failed and self.reference == "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "family": family(self.path),
            "format": self.format,
            "status": self.status,
            "message": self.message,
            "seconds": round(self.seconds, 4),
            "cpu_seconds": round(self.cpu_seconds, 4),
            "modes": self.modes,
            "tests": self.tests,
            "skipped": self.skipped,
            "reference": self.reference,
            "reference_message": self.reference_message,
        }


def merge(result: FileResult, label: str, mode: str, status: str, why: str) -> None:
    """Fold the outcome of one test (in one mode, or ``""`` for all) into ``result``."""
    if mode:
        old = result.modes.get(mode, status)
        result.modes[mode] = max(old, status, key=SEVERITY.__getitem__)
    old = result.tests.get(label, status)
    result.tests[label] = max(old, status, key=SEVERITY.__getitem__)
    if status == "skipped":  # a skipped module does not make the others' result
        result.skipped.append(f"{label}: {why}")
        return
    if SEVERITY[status] > SEVERITY[result.status]:
        result.status = status
        where = f"{label} [{mode}]" if mode else label
        result.message = f"{where}: {why}"


def crash_text(e: BaseException) -> str:
    """An unexpected exception as a status message: its type, text and last frames."""
    tb = "".join(traceback.format_exception(e)[-3:])
    return f"{type(e).__name__}: {e}\n{tb}"


def summary_line(results: Iterable[FileResult]) -> str:
    """``N passed, M failed`` (and ``, K skipped`` when any file was skipped)."""
    results = list(results)
    passed = sum(r.status == "pass" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    failed = len(results) - passed - skipped
    line = f"{passed} passed, {failed} failed"
    return line + (f", {skipped} skipped" if skipped else "")


def family_table(results: Iterable[FileResult]) -> dict[str, dict[str, int]]:
    """Per op family (:func:`family`), how many files ended in each status, and the total."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        row = table.setdefault(family(r.path), {s: 0 for s in (*STATUSES, "total")})
        row[r.status] += 1
        row["total"] += 1
    return dict(sorted(table.items()))


_DTYPE_WORDS = {
    "bool",
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    *(f"{u}int{n}" for u in ("", "u") for n in (2, 4, 8, 16, 32, 64)),
}


def family(path: str | Path) -> str:
    """The op family of a test file, from its name: ``scatter_add_int16_1_1.mlir`` ->
    ``scatter_add``; a file of the interpreter suite is its own family (``all_reduce.mlir``)."""
    stem = Path(path).name.removesuffix(".mlir")
    out: list[str] = []
    for w in stem.split("_"):
        if not w or w in _DTYPE_WORDS or w[0].isdigit():
            break
        if w.startswith(("f8", "float8", "float4", "float6")):
            break
        out.append(w)
    return "_".join(out) or stem
