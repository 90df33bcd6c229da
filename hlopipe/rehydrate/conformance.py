"""Conformance: run StableHLO test programs through the rehydrating interpreter.

Two formats, detected per file (both go through one runner):

(a) StableHLO's generated testdata (``stablehlo/testdata``): ``@main`` calls ``@inputs`` and
    ``@expected``, applies one op and checks the result with ``stablehlo.custom_call
    @check.expect_eq`` / ``@check.expect_close`` / ``@check.expect_almost_eq``.
(b) The hand-written interpreter suite (``stablehlo/tests/interpret``): modules separated by
    ``// -----``; every argument-less ``func.func`` that nothing calls is a test; assertions
    are ops of the ``check`` dialect (``check.expect_eq_const %x, dense<...> : tensor<...>``,
    ``expect_almost_eq[_const]``, ``expect_eq``, ``expect_close``, ``expect_serialized_eq``).
    jaxlib registers neither the ``check`` nor the ``interpreter`` dialect, so their custom
    syntax would not parse: :func:`to_generic` rewrites those lines into MLIR's generic op
    form first, which an MLIR context that allows unregistered dialects accepts.
    ``interpreter.run_parallel`` runs its programs on a mesh of CPU devices (with the
    collective rules of ``ops/collectives.py``); ``interpreter.probe`` records values that
    ``check.expect_serialized_eq`` then compares with.

Each check runs jitted and eagerly (both must pass). Tolerances (see :func:`compare`):

* ``expect_eq*``: exact; NaN equals NaN (with ``strict``, the signs of zeros must match too).
* ``strict=True`` -- StableHLO's own definitions: ``expect_almost_eq*`` passes when
  ``|a - b| <= tolerance`` (default 1e-4); ``expect_close`` when
  ``min_ulp_difference <= ulp(a, b) <= max_ulp_difference`` (default 0 and 1); non-finite
  values must be bitwise equal or both NaN.
* default: 4 ULPs or 1e-4 absolute-or-relative (or the file's own, wider, tolerance), since
  XLA's own transcendental functions differ from the stored expectations by a few ULPs.

File statuses: ``pass``; ``fail`` (a check does not hold); ``error`` (rehydration or a rule
crashed); ``unsupported`` (an op or feature without a rule); ``skipped`` (the file holds no
test: no argument-less function to run). ``error`` and ``unsupported`` count as failed:
a conformance suite passes only what it runs and gets right.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hlopipe.errors import HlopipeError, LoadError, UnsupportedOpError
from hlopipe.rehydrate.custom_calls import CUSTOM_CALLS
from hlopipe.rehydrate.registry import RuleContext, rule

# ---- results ------------------------------------------------------------------------------

STATUSES = ("pass", "fail", "error", "unsupported", "skipped")
# when tests of one file end differently, the file reports the worst: a wrong answer first
_SEVERITY = {"pass": 0, "skipped": 1, "unsupported": 2, "error": 3, "fail": 4}


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
    words = stem.split("_")
    out: list[str] = []
    for w in words:
        if not w or w in _DTYPE_WORDS or w.startswith("float8") or w[0].isdigit():
            break
        if w.startswith(("f8", "float8", "float4", "float6")):
            break
        out.append(w)
    return "_".join(out) or stem


# ---- tolerance ----------------------------------------------------------------------------


def _is_float(dtype: np.dtype) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.floating))


@functools.cache
def _rank_table(dtype_name: str) -> tuple[np.ndarray, np.ndarray]:
    """For a float type of at most 16 bits: bit pattern -> its rank among the type's finite
    values in increasing order (``-0`` and ``+0`` share one rank), and which patterns are
    finite."""
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
    if dtype.itemsize <= 2:
        rank, _ = _rank_table(dtype.name)
        bits = np.dtype(f"u{dtype.itemsize}")
        ra = rank[a.view(bits).astype(np.int64)]
        rb = rank[b.view(bits).astype(np.int64)]
        return np.abs(ra - rb).astype(np.uint64)
    # IEEE sign-magnitude: the magnitude bits order non-negative values; a negative value sits
    # as far below zero as its magnitude is above it. Kept unsigned so f64 cannot overflow.
    bits = np.dtype(f"u{dtype.itemsize}")
    sign = np.uint64(1) << np.uint64(8 * dtype.itemsize - 1)
    ia = a.view(bits).astype(np.uint64)
    ib = b.view(bits).astype(np.uint64)
    ma, mb = ia & ~sign, ib & ~sign
    na, nb = (ia & sign) != 0, (ib & sign) != 0
    same = na == nb
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
) -> str | None:
    """None when ``actual`` passes the check ``kind`` against ``expected``, else why not.

    Args:
      kind: ``expect_eq``, ``expect_almost_eq``, ``expect_close`` or ``expect_serialized_eq``
        (a ``check.`` prefix and a ``_const`` suffix are ignored).
      strict: StableHLO's own tolerances instead of the default, wider ones (module doc).
      tolerance, max_ulp, min_ulp: the check's own parameters, when it has them.

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
    if actual.dtype.kind == "c":
        for part, name in ((np.real, "real"), (np.imag, "imag")):
            why = compare(
                kind,
                part(actual),
                part(expected),
                strict=strict,
                tolerance=tolerance,
                max_ulp=max_ulp,
                min_ulp=min_ulp,
            )
            if why:
                return f"{name} part: {why}"
        return None
    if not _is_float(actual.dtype):
        bad = np.asarray(actual != expected)
        return _describe(actual, expected, bad) if bad.any() else None
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    if kind in ("expect_eq", "eq", "expect_serialized_eq"):
        bad = ~((a == e) | both_nan)
        if strict:
            bad |= (a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e))
        return _describe(actual, expected, bad) if bad.any() else None
    finite = np.isfinite(a) & np.isfinite(e)
    # non-finite: bitwise equal (same infinity) or both NaN
    bad = ~finite & ~(both_nan | (a == e))
    lo = 0 if min_ulp is None else int(min_ulp)
    if strict:
        if kind in ("expect_almost_eq", "almost_eq"):
            tol = 1e-4 if tolerance is None else tolerance
            with np.errstate(over="ignore", invalid="ignore"):
                bad |= finite & ~(np.abs(a - e) <= tol)
        else:
            hi = 1 if max_ulp is None else int(max_ulp)
            ulp = ulp_distance(actual, expected)
            bad |= finite & ((ulp > np.uint64(hi)) | (ulp < np.uint64(lo)))
    else:
        tol = 1e-4 if tolerance is None else max(tolerance, 1e-4)
        hi = 4 if max_ulp is None else max(int(max_ulp), 4)
        ulp = ulp_distance(actual, expected)
        with np.errstate(over="ignore", invalid="ignore"):
            close = np.abs(a - e) <= tol * np.maximum(1.0, np.abs(e))
        close |= ulp <= np.uint64(hi)
        if kind == "expect_close" and lo:
            close &= ulp >= np.uint64(lo)
        bad |= finite & ~close
    return _describe(actual, expected, bad) if bad.any() else None


def _describe(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray) -> str:
    bad = np.asarray(bad)
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (
        f"{int(bad.sum())} of {bad.size} elements differ; first at {list(idx)}: "
        f"got {actual[idx]!r}, expected {expected[idx]!r}"
    )


# ---- the check ops and custom calls: record what they see ------------------------------------


@dataclass
class _Recording:
    checks: list[Check] = field(default_factory=list)
    probes: dict[str, list[np.ndarray]] = field(default_factory=dict)


# the recordings of the runs in progress (innermost last); rules append to the last
_RECORDER: list[_Recording] = []

_CHECK_KINDS = {
    "check.expect_eq": "expect_eq",
    "check.expect_eq_const": "expect_eq",
    "check.eq": "expect_eq",
    "check.expect_almost_eq": "expect_almost_eq",
    "check.expect_almost_eq_const": "expect_almost_eq",
    "check.almost_eq": "expect_almost_eq",
    "check.expect_close": "expect_close",
    "check.expect_serialized_eq": "expect_serialized_eq",
}
CHECK_TARGETS = ("check.expect_eq", "check.expect_close", "check.expect_almost_eq")


def _current(what: str, loc: str) -> _Recording:
    if not _RECORDER:
        raise UnsupportedOpError(
            f"{what} at {loc} is a test assertion: run the file with 'hlopipe conformance'"
        )
    return _RECORDER[-1]


def _record(ctx: RuleContext, kind: str, actual: Any, expected: Any, attrs: dict) -> None:
    rec = _current(ctx.name if ctx.name != "stablehlo.custom_call" else kind, ctx.loc)
    probe = None
    if kind == "expect_serialized_eq":
        probe = (str(attrs.get("probe_id", "")), int(attrs.get("iteration", 0)))
    rec.checks.append(
        Check(
            kind,
            actual,
            expected,
            tolerance=_num(attrs.get("tolerance"), float),
            max_ulp=_num(attrs.get("max_ulp_difference"), int),
            min_ulp=_num(attrs.get("min_ulp_difference"), int),
            probe=probe,
            loc=ctx.loc,
        )
    )


def _num(value: Any, kind: Callable[[Any], Any]) -> Any:
    if value is None or isinstance(value, bool):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


@rule(*_CHECK_KINDS)
def check_op(ctx: RuleContext, *operands: Any, **attrs: Any) -> tuple:
    """The ``check`` dialect: records the assertion for the runner to evaluate."""
    kind = _CHECK_KINDS[ctx.name]
    if kind == "expect_serialized_eq":
        _record(ctx, kind, operands[0], None, attrs)
    elif "value" in attrs:  # the *_const forms and check.eq / check.almost_eq
        _record(ctx, kind, operands[0], np.asarray(attrs["value"]), attrs)
    else:
        _record(ctx, kind, operands[0], operands[1], attrs)
    return ()


def _make_custom_check(target: str) -> Callable[..., Any]:
    kind = target.removeprefix("check.")

    def impl(ctx: RuleContext, actual: Any, expected: Any = None, **attrs: Any) -> tuple:
        _record(ctx, kind, actual, expected, attrs)
        return ()

    return impl


for _t in CHECK_TARGETS:
    CUSTOM_CALLS.setdefault(_t, _make_custom_check(_t))


@rule("interpreter.print")
def interpreter_print(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """Debug printing of the reference interpreter: the value passes through unprinted."""
    return x


@rule("interpreter.probe")
def interpreter_probe(ctx: RuleContext, x: Any, *, probe_id: str = "", **attrs: Any) -> Any:
    """Records the value each time it runs (loops included) for ``expect_serialized_eq``."""
    rec = _current("interpreter.probe", ctx.loc)
    store = rec.probes.setdefault(str(probe_id), [])
    jax.debug.callback(lambda v: store.append(np.asarray(v)), x, ordered=True)
    return x


@rule("interpreter.run_parallel")
def run_parallel(ctx: RuleContext, *inputs: Any, programs: Any = None, **attrs: Any) -> tuple:
    """A grid of ``num_replicas x num_partitions`` processes, each running a function of the
    module: run as one SPMD program under ``jax.shard_map`` over as many CPU devices, with the
    collective rules of ``ops/collectives.py``. Inputs and results are flat, process by
    process (``(0, 0)``, ``(0, 1)``, ...)."""
    from hlopipe.rehydrate._interpreter import Interpreter, raise_if_unsupported

    if attrs.get("infeed"):
        raise UnsupportedOpError(
            "interpreter.run_parallel with infeed is not supported: hlopipe has no infeed queue"
        )
    if not isinstance(programs, list) or not programs or not isinstance(programs[0], list):
        raise UnsupportedOpError(f"interpreter.run_parallel at {ctx.loc}: cannot read programs")
    names = {name for row in programs for name in row}
    if len(names) != 1:
        raise UnsupportedOpError(
            f"interpreter.run_parallel with different programs per process ({sorted(names)}) is "
            "not supported: a mesh runs one SPMD program"
        )
    name = names.pop()
    replicas, partitions = len(programs), len(programs[0])
    n = replicas * partitions
    module = ctx.interpreter.module
    raise_if_unsupported(module, name)
    func = module.funcs[name]
    nargs = len(func.block.args)
    nres = len(ctx.result_avals) // n
    if len(inputs) != nargs * n:
        raise UnsupportedOpError(
            f"interpreter.run_parallel at {ctx.loc}: {len(inputs)} inputs for {n} processes "
            f"of @{name} taking {nargs} arguments each"
        )
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise UnsupportedOpError(
            f"interpreter.run_parallel with {n} processes needs {n} CPU devices, JAX has "
            f"{len(devices)}: set jax.config.update('jax_num_cpu_devices', {n}) at start-up"
        )
    from jax.sharding import Mesh, PartitionSpec

    # one mesh axis over every process; device id = replica * num_partitions + partition
    axes = ("processes",)
    mesh = Mesh(np.array(devices[:n]), axes)
    options: dict[str, Any] = {}
    try:
        from hlopipe.rehydrate.ops.collectives import make_spmd
    except ImportError:  # pragma: no cover - the collective rules are not there
        pass
    else:
        options["spmd"] = make_spmd(mesh, axes, partitions, replicas)
    inner = Interpreter(
        module,
        mesh=mesh,
        axis=axes[0],
        loops=ctx.interpreter.options.get("loops", "auto"),
        **options,
    )
    import jax.numpy as jnp

    stacked = [jnp.stack([inputs[p * nargs + j] for p in range(n)]) for j in range(nargs)]
    spec = PartitionSpec(axes)

    def body(*xs: Any) -> tuple:
        outs = inner.run(func, *(x[0] for x in xs))
        return tuple(o[None] for o in outs)

    outs = jax.shard_map(
        body,
        mesh=mesh,
        in_specs=tuple(spec for _ in stacked),
        out_specs=tuple(spec for _ in range(nres)),
        check_vma=False,
    )(*stacked)
    return tuple(outs[j][p] for p in range(n) for j in range(nres))


# ---- reading files --------------------------------------------------------------------------

_SPLIT = re.compile(r"^[ \t]*//[ \t]*-----[ \t]*$", re.M)
_PRETTY = re.compile(
    r"^(\s*)(?:(%[\w$.#:-]+(?:\s*,\s*%[\w$.-]+)*)\s*=\s*)?(check|interpreter)\.(\w+)\b(.*)$"
)


def detect_format(text: str) -> str:
    """``testdata`` (StableHLO's generated files), ``interpret`` (the hand-written suite) or
    ``mlir`` (any other module: its argument-less functions run as tests)."""
    if _SPLIT.search(text) or re.search(
        r"^\s*(?:%\S+\s*=\s*)?(?:check|interpreter)\.\w+\s", text, re.M
    ):
        return "interpret"
    if '"interpreter.' in text:
        return "interpret"
    if "custom_call @check." in text:
        return "testdata"
    return "mlir"


def split_modules(text: str) -> list[tuple[int, str]]:
    """The modules of a file split at ``// -----``: (the line its text starts on, text) each;
    lines before a chunk are kept blank so MLIR's line numbers stay those of the file."""
    out: list[tuple[int, str]] = []
    line = 1
    for chunk in _SPLIT.split(text):
        if chunk.strip() and re.search(r"\bfunc\.func\b|\bmodule\b", chunk):
            first = line + chunk[: len(chunk) - len(chunk.lstrip())].count("\n")
            out.append((first, "\n" * (line - 1) + chunk))
        line += chunk.count("\n")
    return out


def to_generic(text: str) -> str:
    """Rewrite the custom syntax of ``check.*`` and ``interpreter.print/probe`` ops into
    MLIR's generic form (jaxlib registers neither dialect), keeping line numbers.

    ``check.expect_eq_const %x, dense<1> : tensor<2xi32>`` becomes
    ``"check.expect_eq_const"(%x) {value = dense<1> : tensor<2xi32>} : (tensor<2xi32>) -> ()``.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _PRETTY.match(_strip_comment(line))
        if not m:
            out.append(line)
            i += 1
            continue
        # an op may span lines while its brackets are open
        stmt, j = _strip_comment(line), i
        while _depth(stmt) > 0 and j + 1 < len(lines):
            j += 1
            stmt += " " + _strip_comment(lines[j]).strip()
        m = _PRETTY.match(stmt)
        assert m is not None
        indent, results, dialect, name, rest = m.groups()
        try:
            generic = _generic(results, f"{dialect}.{name}", rest.strip())
        except ValueError as e:
            raise LoadError(f"line {i + 1}: cannot read {dialect}.{name}: {e}") from None
        out.append(indent + generic)
        out.extend("" for _ in range(j - i))
        i = j + 1
    return "\n".join(out)


def _strip_comment(line: str) -> str:
    in_str = False
    for k, ch in enumerate(line):
        if ch == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", k):
            return line[:k].rstrip()
    return line.rstrip()


def _depth(s: str) -> int:
    depth, in_str = 0, False
    for ch in s:
        if ch == '"':
            in_str = not in_str
        elif not in_str:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
    return depth


def _take_balanced(s: str, k: int) -> int:
    """Index just past the bracketed group that opens at or after ``s[k]``'s word."""
    depth, in_str = 0, False
    while k < len(s):
        ch = s[k]
        if ch == '"':
            in_str = not in_str
        elif not in_str:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
                if depth == 0:
                    return k + 1
        k += 1
    raise ValueError(f"unbalanced brackets in {s!r}")


def _take_type(s: str) -> tuple[str, str]:
    """A type at the start of ``s`` (``tensor<...>``, ``!stablehlo.token``, ``f32``); returns
    (type, rest)."""
    s = s.lstrip()
    m = re.match(r"[!\w.]+", s)
    if not m:
        raise ValueError(f"expected a type at {s[:40]!r}")
    k = m.end()
    if k < len(s) and s[k] == "<":
        k = _take_balanced(s, k)
    return s[:k], s[k:]


_INT_ATTRS = {"max_ulp_difference", "min_ulp_difference", "iter", "iteration"}


def _generic(results: str | None, name: str, rest: str) -> str:
    operands: list[str] = []
    attrs: list[str] = []
    s = rest
    while True:  # operands
        m = re.match(r"\s*(%[\w$.-]+(?:#\d+)?)\s*,?", s)
        if not m:
            break
        operands.append(m.group(1))
        s = s[m.end() :]
    s = s.strip()
    if s.startswith(("dense<", "dense_resource<", "array<", "sparse<")):
        k = _take_balanced(s, 0)
        value = s[:k]
        s = s[k:].lstrip()
        if not s.startswith(":"):
            raise ValueError("a constant without its type")
        vtype, s = _take_type(s[1:])
        attrs.append(f"value = {value} : {vtype}")
        s = s.lstrip().removeprefix(",").lstrip()
    else:
        vtype = ""
    while True:  # key = value pairs of the custom syntax
        m = re.match(
            r"\s*,?\s*([A-Za-z_]\w*)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[-+\w.]+)(\s*:\s*[if]\d+)?", s
        )
        if not m:
            break
        key, val, typ = m.group(1), m.group(2), m.group(3)
        key = "iteration" if key == "iter" else key
        if typ:
            attrs.append(f"{key} = {val}{typ}")
        elif val.startswith('"'):
            attrs.append(f"{key} = {val}")
        elif key in _INT_ATTRS:
            attrs.append(f"{key} = {val} : i64")
        else:
            attrs.append(f"{key} = {float(val)!r} : f64")
        s = s[m.end() :]
    s = s.strip().removeprefix(",").strip()
    # attr-dict, possibly after the colon (expect_close puts it there)
    types: list[str] = []
    while s:
        if s.startswith("{"):
            k = _take_balanced(s, 0)
            inner = s[1 : k - 1].strip()
            if inner:
                attrs.append(inner)
            s = s[k:].strip()
        elif s.startswith((":", ",")):
            s = s[1:].strip()
        else:
            t, s = _take_type(s)
            types.append(t)
            s = s.strip()
    if not types:
        types = [vtype] if vtype else []
    if len(types) == 1 and len(operands) > 1:
        types = types * len(operands)
    if len(types) != len(operands):
        raise ValueError(f"{len(operands)} operands but types {types}")
    results_types = ""
    if name in ("interpreter.probe", "interpreter.print"):
        results_types = types[0]
        if not results:
            raise ValueError("the op's result is not named")
    attr_text = " {" + ", ".join(attrs) + "}" if attrs else ""
    lhs = f"{results} = " if results else ""
    return (
        f'{lhs}"{name}"({", ".join(operands)}){attr_text} : '
        f"({', '.join(types)}) -> ({results_types})"
    )


# ---- running --------------------------------------------------------------------------------


@dataclass
class _Test:
    label: str  # "file.mlir:LINE @name"
    program: Any
    static_checks: int


def _tests(path: str, text: str) -> list[_Test | tuple[str, str, str]]:
    """The tests of a file; a module that cannot be read, or that expects a diagnostic,
    gives ``(label, status, why)`` in its place so the file's other modules still run."""
    from hlopipe.io import load
    from hlopipe.rehydrate._rehydrate import module_ir

    tests: list[_Test | tuple[str, str, str]] = []
    for line, chunk in split_modules(text):
        label = f"{Path(path).name}:{line} (module)"
        if "expected-error" in chunk:
            tests.append((label, "skipped", "the module tests a diagnostic (expected-error)"))
            continue
        try:
            generic = to_generic(chunk)
            entry = _any_func(generic)
            if entry is None:
                continue
            prog = load(generic, format="stablehlo-text", entry=entry)
            prog.source = path
            mir = module_ir(prog)
        except UnsupportedOpError as e:
            tests.append((label, "unsupported", str(e)))
            continue
        except HlopipeError as e:
            tests.append((label, "error", str(e).removeprefix("<bytes>: ")))
            continue
        except Exception as e:  # a crash of one module must not stop the others
            tests.append((label, "error", _crash(e)))
            continue
        for name, func in mir.funcs.items():
            if func.block.args or _referenced(name, generic):
                continue
            p = dataclasses.replace(prog, entry=name)
            tests.append(
                _Test(
                    f"{Path(path).name}:{func.loc.rsplit(':', 1)[-1]} @{name}",
                    p,
                    _count_checks(func.block),
                )
            )
    return tests


def _any_func(text: str) -> str | None:
    m = re.search(r"func\.func\s+(?:public\s+|private\s+)?@([\w$.-]+)\s*\(\s*\)", text)
    return m.group(1) if m else None


def _referenced(name: str, text: str) -> bool:
    return len(re.findall(rf"@{re.escape(name)}(?![\w$.-])", text)) > 1


def _count_checks(block: Any) -> int:
    n = 0
    for op in block.ops:
        if op.name in _CHECK_KINDS or (
            op.name == "stablehlo.custom_call"
            and str(op.attrs.get("call_target_name", "")).startswith("check.")
        ):
            n += 1
        for r in op.regions:
            n += _count_checks(r)
    return n


class _x64:
    def __enter__(self) -> None:
        self.old = bool(jax.config.read("jax_enable_x64"))
        jax.config.update("jax_enable_x64", True)

    def __exit__(self, *exc: Any) -> None:
        jax.config.update("jax_enable_x64", self.old)


def _run(f: Any, mode: str) -> _Recording:
    """Run the test function ``f`` once in ``mode`` and return what its checks saw, as numpy."""

    def record() -> tuple[_Recording, list[Any]]:
        rec = _Recording()
        _RECORDER.append(rec)
        try:
            f()
        finally:
            _RECORDER.pop()
        values = []
        for c in rec.checks:
            values.append(c.actual)
            values.append(c.expected if c.expected is not None else np.zeros((), np.int8))
        return rec, values

    if mode == "jit":
        holder: list[_Recording] = []

        def traced() -> list[Any]:
            rec, values = record()
            holder.append(rec)
            return values

        values = jax.jit(traced)()
        rec = holder[-1]
    else:
        rec, values = record()
    jax.effects_barrier()
    for i, c in enumerate(rec.checks):
        c.actual = np.asarray(values[2 * i])
        if c.expected is not None:
            c.expected = np.asarray(values[2 * i + 1])
    return rec


def _evaluate(rec: _Recording, strict: bool) -> str | None:
    for c in rec.checks:
        expected = c.expected
        if c.kind == "expect_serialized_eq":
            assert c.probe is not None
            seen = rec.probes.get(c.probe[0], [])
            if c.probe[1] >= len(seen):
                return (
                    f"expect_serialized_eq at {c.loc}: probe {c.probe[0]!r} recorded "
                    f"{len(seen)} values, iteration {c.probe[1]} was asked for"
                )
            expected = seen[c.probe[1]]
        why = compare(
            c.kind,
            c.actual,
            expected,
            strict=strict,
            tolerance=c.tolerance,
            max_ulp=c.max_ulp,
            min_ulp=c.min_ulp,
        )
        if why:
            return f"{c.kind} at {c.loc}: {why}"
    return None


def run_file(
    path: str | Path,
    *,
    jit: bool = True,
    eager: bool = True,
    strict: bool = False,
    reference: str | None = None,
) -> FileResult:
    """Run every test of one file (format detected from its content).

    Args:
      path: a ``.mlir`` file of StableHLO's testdata or interpreter suite (or any module whose
        argument-less functions hold ``check`` assertions).
      jit, eager: the modes to run each test in; a file passes when it passes in every one.
      strict: StableHLO's own tolerances (see the module docstring).
      reference: ``"xla"`` also compiles each test with XLA and evaluates the checks on its
        results (``FileResult.reference``).

    Returns:
      a :class:`FileResult`; nothing raises (a crash becomes status ``error``).

    Example:
      >>> run_file("abs_float32_20_20.mlir").status
      'pass'
    """
    start = time.perf_counter()
    cpu = time.process_time()
    path = str(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        return FileResult(path, "error", f"cannot read: {e}", time.perf_counter() - start)
    result = FileResult(path, "pass", format=detect_format(text))
    modes = [m for m, on in (("jit", jit), ("eager", eager)) if on]
    with _x64():
        try:
            tests = _tests(path, text)
        except UnsupportedOpError as e:
            tests = []
            _merge(result, "(load)", "", "unsupported", str(e))
        except HlopipeError as e:
            tests = []
            _merge(result, "(load)", "", "error", str(e))
        except Exception as e:  # a crash of one file must not stop the suite
            tests = []
            _merge(result, "(load)", "", "error", _crash(e))
        if re.search(r"^//\s*RUN:\s*not\b", text, re.M):
            tests = [("(file)", "skipped", "the file expects the interpreter to fail (RUN: not)")]
        if not tests and result.status == "pass":
            tests = [("(file)", "skipped", "no test: the file has no argument-less function")]
        for test in tests:
            if isinstance(test, tuple):
                _merge(result, *test[:1], "", *test[1:])
            else:
                _run_test(result, test, modes, strict)
        if result.tests and set(result.tests.values()) == {"skipped"}:
            result.status = "skipped"
            result.message = result.skipped[0]
        if reference == "xla":
            result.reference, result.reference_message = _reference_xla(text, strict)
    result.seconds = time.perf_counter() - start
    result.cpu_seconds = time.process_time() - cpu
    return result


def run_testdata_file(
    path: str | Path, *, jit: bool = True, eager: bool = True, strict: bool = False
) -> FileResult:
    """:func:`run_file` (kept for callers of the first version of this module)."""
    return run_file(path, jit=jit, eager=eager, strict=strict)


def _run_test(result: FileResult, test: _Test, modes: list[str], strict: bool) -> None:
    from hlopipe.rehydrate import rehydrate

    try:
        f = rehydrate(test.program)
    except UnsupportedOpError as e:
        _merge(result, test.label, "", "unsupported", str(e))
        return
    except HlopipeError as e:
        _merge(result, test.label, "", "error", str(e))
        return
    except Exception as e:
        _merge(result, test.label, "", "error", _crash(e))
        return
    for mode in modes:
        try:
            rec = _run(f, mode)
            why: str | None
            if not rec.checks and test.static_checks:
                status, why = "fail", "its checks did not run"
            else:
                why = _evaluate(rec, strict)
                status = "pass" if why is None else "fail"
        except UnsupportedOpError as e:
            status, why = "unsupported", str(e)
        except HlopipeError as e:
            status, why = "error", str(e)
        except Exception as e:
            status, why = "error", _crash(e)
        _merge(result, test.label, mode, status, why or "")
        if status == "unsupported":
            break  # the other mode cannot do better


def _merge(result: FileResult, label: str, mode: str, status: str, why: str) -> None:
    if mode:
        old = result.modes.get(mode, status)
        result.modes[mode] = max(old, status, key=_SEVERITY.__getitem__)
    old = result.tests.get(label, status)
    result.tests[label] = max(old, status, key=_SEVERITY.__getitem__)
    if status == "skipped":  # a skipped module does not make the others' result
        result.skipped.append(f"{label}: {why}")
        return
    if _SEVERITY[status] > _SEVERITY[result.status]:
        result.status = status
        where = f"{label} [{mode}]" if mode else label
        result.message = f"{where}: {why}"


def _crash(e: BaseException) -> str:
    tb = "".join(traceback.format_exception(e)[-3:])
    return f"{type(e).__name__}: {e}\n{tb}"


# ---- the XLA reference ----------------------------------------------------------------------


def _reference_xla(text: str, strict: bool) -> tuple[str, str]:
    """Compile each test with XLA itself (checks turned into the test function's results) and
    evaluate the checks on what XLA computes. Returns (status, message)."""
    status, message = "pass", ""
    try:
        chunks = split_modules(text)
        if not chunks:
            return "skipped", "no test"
        for _, chunk in chunks:
            for name, kinds, module_text in _reference_modules(to_generic(chunk)):
                rec = _Recording()
                outs = _execute_xla(module_text)
                k = 0
                for kind, attrs, nops in kinds:
                    actual = outs[k]
                    expected = outs[k + 1] if nops > 1 else attrs.get("value")
                    k += nops
                    rec.checks.append(
                        Check(
                            kind,
                            actual,
                            None if expected is None else np.asarray(expected),
                            tolerance=_num(attrs.get("tolerance"), float),
                            max_ulp=_num(attrs.get("max_ulp_difference"), int),
                            min_ulp=_num(attrs.get("min_ulp_difference"), int),
                            loc=f"@{name}",
                        )
                    )
                why = _evaluate(rec, strict)
                if why:
                    status, message = "fail", why
    except UnsupportedOpError as e:
        return "unsupported", str(e)
    except Exception as e:
        return "error", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    return status, message


def _reference_modules(text: str) -> list[tuple[str, list[tuple[str, dict, int]], str]]:
    """For each test function of the module text: (name, its checks as (kind, attrs, number
    of operands), a module in which ``@main`` is that function returning its checks'
    operands instead of checking them)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func as func_d

    from hlopipe.io._xla import make_context
    from hlopipe.rehydrate._ir import _attrs_from_text

    out = []
    ctx = make_context()
    with ctx, ir.Location.unknown():
        probe_module = ir.Module.parse(text)
        names = []
        for op in probe_module.body.operations:
            if op.operation.name != "func.func":
                continue
            fname = ir.StringAttr(op.attributes["sym_name"]).value
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if not ftype.inputs and not _referenced(fname, text):
                names.append(fname)
        for name in names:
            module = ir.Module.parse(text)
            kinds: list[tuple[str, dict, int]] = []
            for op in list(module.body.operations):
                if op.operation.name != "func.func":
                    continue
                fname = ir.StringAttr(op.attributes["sym_name"]).value
                if fname in names and fname != name:
                    op.operation.erase()
                    continue
                if fname == "main" and name != "main":
                    op.attributes["sym_name"] = ir.StringAttr.get("main_")
            for op in module.body.operations:
                if op.operation.name == "func.func" and (
                    ir.StringAttr(op.attributes["sym_name"]).value == name
                ):
                    target = op.operation
                    break
            block = target.regions[0].blocks[0]
            values: list[Any] = []
            doomed = []
            for op in block.operations:
                op = op.operation
                opname = op.name
                target_name = ""
                if opname == "stablehlo.custom_call":
                    target_name = ir.StringAttr(op.attributes["call_target_name"]).value
                if opname in _CHECK_KINDS or target_name in CHECK_TARGETS:
                    kind = _CHECK_KINDS.get(opname) or target_name.removeprefix("check.")
                    if kind == "expect_serialized_eq":
                        raise UnsupportedOpError(
                            "expect_serialized_eq needs the interpreter's probes"
                        )
                    attrs = _attrs_from_text(op, opname, None)  # type: ignore[arg-type]
                    kinds.append((kind, attrs, len(op.operands)))
                    values.extend(op.operands)
                    doomed.append(op)
                elif opname in ("interpreter.probe", "interpreter.print"):
                    op.results[0].replace_all_uses_with(op.operands[0])
                    doomed.append(op)
                elif opname.startswith("interpreter."):
                    raise UnsupportedOpError(f"the XLA reference cannot run {opname}")
                elif opname == "func.return":
                    ret = op
            with ir.InsertionPoint(ret):
                func_d.ReturnOp(values)
            doomed.append(ret)
            for op in doomed:
                op.erase()
            target.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([], [v.type for v in values])
            )
            if "res_attrs" in target.attributes:
                del target.attributes["res_attrs"]
            target.attributes["sym_name"] = ir.StringAttr.get("main")
            target.attributes["sym_visibility"] = ir.StringAttr.get("public")
            if re.search(r'"?(check|interpreter)\.', str(module).replace("@check.", "")):
                raise UnsupportedOpError("checks outside the test function")
            out.append((name, kinds, str(module)))
    return out


def _execute_xla(module_text: str) -> list[np.ndarray]:
    from hlopipe.io._xla import compile_stablehlo

    exe = compile_stablehlo(module_text)
    outs = exe.execute([])
    return [np.asarray(o) for o in outs]


# ---- files and folders ----------------------------------------------------------------------


def collect_files(paths: Sequence[str | os.PathLike[str]], k: str | None = None) -> list[Path]:
    """The ``.mlir`` files of ``paths`` (files as given, folders searched recursively), sorted
    within each folder, filtered to names containing ``k``.

    Raises:
      HlopipeError: a path that does not exist, or a folder without ``.mlir`` files.
    """
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(path.rglob("*.mlir"))
            if not found:
                raise HlopipeError(f"{path}: no .mlir files in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise HlopipeError(f"{path}: no such file or folder")
    if k:
        out = [p for p in out if k in str(p)]
    return out


def run_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    jobs: int = 1,
    on_result: Callable[[FileResult], None] | None = None,
    isolate: bool = True,
    timeout: float | None = None,
    **options: Any,
) -> list[FileResult]:
    """Run :func:`run_file` over ``files`` and return the results in the order of ``files``
    (``on_result`` sees them as they finish).

    Args:
      jobs: worker processes running files side by side.
      isolate: run the files in worker processes (``jobs`` of them, at least one), so that a
        file that makes XLA abort the process (a ``Check failed`` in its C++ code, e.g. on a
        constant its converter cannot represent) is reported as an ``error`` naming the crash,
        and a fresh worker goes on with the other files. ``False`` runs in this process (with
        ``jobs=1``), where such a file ends the run.
      timeout: seconds one file may take in a worker before the worker is stopped and the file
        reported as an ``error`` (``None``: no limit).
      **options: for :func:`run_file` (``jit``, ``eager``, ``strict``, ``reference``).
    """
    names = [str(f) for f in files]
    results: dict[str, FileResult] = {}
    if not isolate:
        for f in names:
            r = _run_file_bounded(f, **options)
            results[f] = r
            if on_result:
                on_result(r)
        return [results[f] for f in names]
    import queue
    import threading

    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for f in names:
        todo.put(f)
    lock = threading.Lock()
    failures: list[BaseException] = []

    def serve() -> None:
        worker: _Worker | None = None
        try:
            while True:
                try:
                    f = todo.get_nowait()
                except queue.Empty:
                    return
                if worker is None:
                    worker = _Worker()
                r = worker.run(f, options, timeout)
                if not worker.alive:
                    worker = None
                with lock:
                    results[f] = r
                    if on_result:
                        on_result(r)
        except BaseException as e:  # reported in the caller's thread
            failures.append(e)
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return [results[f] for f in names]


class _Worker:
    """A child process running files one at a time (``_worker_main``), JSON lines in and out.

    Its stderr goes to a temporary file, from which the line that explains a crash (XLA's
    ``Check failed``) is read when it dies.
    """

    def __init__(self) -> None:
        import subprocess
        import sys
        import tempfile

        env = dict(os.environ, JAX_PLATFORMS="cpu")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        code = "from hlopipe.rehydrate.conformance import _worker_main; _worker_main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )
        self.alive = True
        self.ready = False  # the worker says so once JAX is imported (not timed per file)

    def run(self, path: str, options: dict[str, Any], timeout: float | None) -> FileResult:
        import json
        import select

        assert self.proc.stdin is not None and self.proc.stdout is not None
        start = time.perf_counter()
        log_start = self.log.seek(0, os.SEEK_END)
        try:
            if not self.ready:
                self.ready = self.proc.stdout.readline() == b"ready\n"
            self.proc.stdin.write((json.dumps({"path": path, "options": options}) + "\n").encode())
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else None
        except (BrokenPipeError, OSError):
            line = b""
        if line:
            doc = json.loads(line)
            return FileResult(**doc)
        seconds = time.perf_counter() - start
        if line is None:  # timed out: stop this worker, the next file gets a fresh one
            self.close()
            return FileResult(
                path, "error", f"(file): did not finish in {timeout:g} s; stopped", seconds
            )
        rc = self.proc.wait()
        self.alive = False
        self.log.seek(log_start)
        why = _crash_reason(self.log.read().decode(errors="replace"))
        how = f"signal {_signal_name(-rc)}" if rc < 0 else f"exit status {rc}"
        self.log.close()
        return FileResult(
            path,
            "error",
            f"(file): the process running this file crashed ({how}): XLA or jaxlib aborted on "
            f"it (the run went on in a fresh process). {why}".rstrip(),
            seconds,
        )

    def close(self) -> None:
        if self.alive:
            self.alive = False
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.log.close()


def _signal_name(n: int) -> str:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return str(n)


def _crash_reason(log: str) -> str:
    """The line of a dying process's stderr that says why (XLA's ``F... Check failed: ...``)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "Check failed" in ln or "terminate called" in ln or "Fatal Python error" in ln:
            return f"It said: {ln[:500]}"
    tail = [ln for ln in lines if not ln.startswith("@")][-3:]
    return f"Its last words: {' | '.join(tail)[:500]}" if tail else ""


def _worker_main() -> None:
    """In a worker: run the files named on stdin, one JSON result per line on stdout."""
    import json
    import sys

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints must not mix with the results
    _worker_init()
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        r = _run_file_bounded(job["path"], **job["options"])
        out.write(json.dumps(dataclasses.asdict(r)) + "\n")
        out.flush()


_RUN_COUNT = [0]


def _run_file_bounded(path: str, **options: Any) -> FileResult:
    """:func:`run_file`, clearing JAX's caches every 200 files: eager mode compiles one
    executable per primitive and shape, and a suite of a thousand files of different shapes
    would otherwise hold gigabytes of them."""
    _RUN_COUNT[0] += 1
    if _RUN_COUNT[0] % 200 == 0:
        jax.clear_caches()
    return run_file(path, **options)


def _worker_init() -> None:
    # collectives run on meshes of CPU devices; the count must be set before JAX starts
    jax.config.update("jax_num_cpu_devices", 8)


__all__ = [
    "CHECK_TARGETS",
    "Check",
    "FileResult",
    "collect_files",
    "compare",
    "detect_format",
    "family",
    "family_table",
    "run_file",
    "run_files",
    "run_testdata_file",
    "split_modules",
    "summary_line",
    "to_generic",
    "ulp_distance",
]
