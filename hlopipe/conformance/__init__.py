"""Conformance: run StableHLO test programs through the rehydrating interpreter.

A tool on top of rehydration (``hlopipe conformance``): :mod:`.files` reads test files of
StableHLO's generated testdata and of its interpreter suite, :mod:`.rules` holds the test
dialects' rules (in tables of their own, in scope only while a test runs), :mod:`.runner` runs
a file jitted and eagerly, :mod:`.compare` says whether a value is close enough,
:mod:`.reference` runs the same checks on XLA's own results, :mod:`.workers` runs many files
in worker processes.
"""

from hlopipe.conformance.compare import compare, ulp_bound, ulp_distance
from hlopipe.conformance.files import collect_files, detect_format, split_modules, to_generic
from hlopipe.conformance.results import (
    STATUSES,
    Check,
    FileResult,
    family,
    family_table,
    summary_line,
)
from hlopipe.conformance.rules import CHECK_TARGETS
from hlopipe.conformance.runner import run_file
from hlopipe.conformance.workers import run_files

__all__ = [
    "CHECK_TARGETS",
    "STATUSES",
    "Check",
    "FileResult",
    "collect_files",
    "compare",
    "detect_format",
    "family",
    "family_table",
    "run_file",
    "run_files",
    "split_modules",
    "summary_line",
    "to_generic",
    "ulp_bound",
    "ulp_distance",
]
