"""Running one test file: its tests found, each rehydrated and run jitted and eagerly with the
test dialects' rules in scope, every check it declares evaluated (:mod:`.compare`).

File statuses: ``pass``; ``fail`` (a check does not hold, or a check the test declares did
not run); ``error`` (rehydration or a rule crashed); ``unsupported`` (an op or feature
without a rule); ``skipped`` (the file holds no test: no argument-less function to run).
``error`` and ``unsupported`` count as failed: a conformance suite passes only what it runs
and gets right.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from hlopipe.conformance.compare import compare
from hlopipe.conformance.files import (
    any_func,
    detect_format,
    read_test_file,
    referenced,
    split_modules,
    to_generic,
)
from hlopipe.conformance.results import FileResult, crash_text, merge
from hlopipe.conformance.rules import CHECK_KINDS, Recording, dialect_scope, recording
from hlopipe.errors import HlopipeError, UnsupportedOpError


@dataclass
class Test:
    """One test: an argument-less function of a module, and the checks it declares."""

    label: str  # "file.mlir:LINE @name"
    program: Any
    # the locations of the checks in the function's own block (they run whenever it does),
    # with how many checks each holds
    declared: collections.Counter[str]


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
      strict: StableHLO's own tolerances (see :mod:`hlopipe.conformance.compare`).
      reference: ``"xla"`` also compiles each test with XLA (in a worker process) and
        evaluates the checks on its results (``FileResult.reference``).

    Returns:
      a :class:`FileResult`; nothing raises (a crash becomes status ``error``).

    Example:
      >>> run_file("abs_float32_20_20.mlir").status
      'pass'
    """
    start, cpu = time.perf_counter(), time.process_time()
    path = str(path)
    try:
        text = read_test_file(path)
        result = FileResult(path, "pass", format=detect_format(text))
    except (OSError, UnicodeDecodeError, HlopipeError) as e:
        return FileResult(path, "error", f"cannot read: {e}", time.perf_counter() - start)
    modes = [m for m, on in (("jit", jit), ("eager", eager)) if on]
    with jax.enable_x64(True), dialect_scope():
        for test in _tests_or_why(result, path, text):
            if isinstance(test, tuple):
                merge(result, test[0], "", *test[1:])
            else:
                _run_test(result, test, modes, strict)
    if result.tests and set(result.tests.values()) == {"skipped"}:
        result.status = "skipped"
        result.message = result.skipped[0]
    if reference == "xla":
        from hlopipe.conformance.workers import reference_in_worker

        result.reference, result.reference_message = reference_in_worker(path, strict)
    result.seconds = time.perf_counter() - start
    result.cpu_seconds = time.process_time() - cpu
    return result


def _tests_or_why(result: FileResult, path: str, text: str) -> list[Test | tuple[str, str, str]]:
    """The file's tests, or ``(label, status, why)`` for what cannot run."""
    try:
        tests = find_tests(path, text)
    except UnsupportedOpError as e:
        tests = []
        merge(result, "(load)", "", "unsupported", str(e))
    except HlopipeError as e:
        tests = []
        merge(result, "(load)", "", "error", str(e))
    except Exception as e:  # a crash of one file must not stop the suite
        tests = []
        merge(result, "(load)", "", "error", crash_text(e))
    if re.search(r"^//\s*RUN:\s*not\b", text, re.M):
        return [("(file)", "skipped", "the file expects the interpreter to fail (RUN: not)")]
    if not tests and result.status == "pass":
        return [("(file)", "skipped", "no test: the file has no argument-less function")]
    return tests


def find_tests(path: str, text: str) -> list[Test | tuple[str, str, str]]:
    """The tests of a file; a module that cannot be read, or that expects a diagnostic,
    gives ``(label, status, why)`` in its place so the file's other modules still run."""
    from hlopipe.io import load
    from hlopipe.rehydrate import module_ir

    tests: list[Test | tuple[str, str, str]] = []
    for line, chunk in split_modules(text):
        label = f"{Path(path).name}:{line} (module)"
        if "expected-error" in chunk:
            tests.append((label, "skipped", "the module tests a diagnostic (expected-error)"))
            continue
        try:
            generic = to_generic(chunk)
            entry = any_func(generic)
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
            tests.append((label, "error", crash_text(e)))
            continue
        for name, func in mir.funcs.items():
            if func.block.args or referenced(name, generic):
                continue
            where = f"{Path(path).name}:{func.loc.rsplit(':', 1)[-1]} @{name}"
            p = dataclasses.replace(prog, entry=name)
            tests.append(Test(where, p, declared_checks(func.block)))
    return tests


def is_check(op: Any) -> bool:
    """Whether an op (of the module's records) is a check: a ``check.*`` op or custom call."""
    return op.name in CHECK_KINDS or (
        op.name == "stablehlo.custom_call"
        and str(op.attrs.get("call_target_name", "")).startswith("check.")
    )


def declared_checks(block: Any) -> collections.Counter[str]:
    """The locations of the checks of ``block`` itself, with their counts. (A check inside a
    region -- a branch of a ``case``, a loop body -- need not run, so is not required.)"""
    return collections.Counter(op.loc for op in block.ops if is_check(op))


def _run_test(result: FileResult, test: Test, modes: list[str], strict: bool) -> None:
    from hlopipe.rehydrate import rehydrate

    try:
        f = rehydrate(test.program)
    except UnsupportedOpError as e:
        merge(result, test.label, "", "unsupported", str(e))
        return
    except HlopipeError as e:
        merge(result, test.label, "", "error", str(e))
        return
    except Exception as e:  # isolation: a crash of one test is its result, the suite goes on
        merge(result, test.label, "", "error", crash_text(e))
        return
    for mode in modes:
        try:
            rec = run_mode(f, mode)
            why = missing_checks(rec, test.declared) or evaluate(rec, strict)
            status = "pass" if why is None else "fail"
        except UnsupportedOpError as e:
            status, why = "unsupported", str(e)
        except HlopipeError as e:
            status, why = "error", str(e)
        except Exception as e:  # isolation: a crash of one mode is its result, as above
            status, why = "error", crash_text(e)
        merge(result, test.label, mode, status, why or "")
        if status == "unsupported":
            break  # the other mode cannot do better


def missing_checks(rec: Recording, declared: collections.Counter[str]) -> str | None:
    """Why not every check the test declares ran, or None when each did."""
    seen = collections.Counter(c.loc for c in rec.checks)
    missing = sorted(loc for loc, n in declared.items() if seen[loc] < n)
    if not missing:
        return None
    total = sum(declared.values())
    return f"{len(missing)} of its {total} checks did not run (first at {missing[0]})"


def run_mode(f: Any, mode: str) -> Recording:
    """Run the test function ``f`` once in ``mode`` and return what its checks saw (each
    check records its values on the host as it runs, as numpy)."""
    with recording() as rec:
        # the test function's own results are computed too (testdata's @main returns its)
        out = jax.jit(f)() if mode == "jit" else f()
        jax.block_until_ready(out)
        jax.effects_barrier()
    rec.checks.sort(key=lambda c: _line(c.loc))  # stable: a loop's runs stay in order
    return rec


def _line(loc: str) -> int:
    tail = loc.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def evaluate(rec: Recording, strict: bool) -> str | None:
    """Why the first failing check of ``rec`` fails, or None when all hold."""
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
            generated=c.generated,
        )
        if why:
            return f"{c.kind} at {c.loc}: {why}"
    return None
