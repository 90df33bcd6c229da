"""The conformance pass table per op family (the file-name prefix: ``scatter_add``, ``abs``...).

Runs ``hlopipe conformance``'s runner over StableHLO test files (by default the shared
generated testdata) and prints, per family, how many files pass, fail, error, are unsupported
or skipped. Prints a table, never passes or fails.

Usage:
    python benchmarks/conformance.py [PATH...] [--jobs N] [--strict] [--no-jit]
        [--reference xla] [--from-json FILE] [--json FILE] [--write-failures FILE]

``--from-json`` tabulates a ``hlopipe conformance --json`` result instead of running;
``--write-failures`` writes the failing files with their reasons in the format of
``tests/conformance/conformance_failures.txt``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / ".." / "shared" / "conformance" / "stablehlo-testdata"
FAILURES_HEADER = """\
# Files of ../shared/conformance/stablehlo-testdata that still fail under
# tests/conformance/test_conformance.py (jitted and eager, default tolerances), one per line:
# FILE STATUS: REASON
# Regenerate with: python benchmarks/conformance.py --write-failures FILE
"""


def failures_text(files: list[dict]) -> str:
    lines = [FAILURES_HEADER.rstrip("\n")]
    for f in sorted(files, key=lambda f: Path(f["path"]).name):
        if f["status"] in ("pass", "skipped"):
            continue
        first = f["message"].splitlines()[0] if f["message"] else ""
        # the test label repeats the file name; keep the reason
        reason = " ".join(first.split())[:300]
        lines.append(f"{Path(f['path']).name} {f['status']}: {reason}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", help=f"files or folders (default {SUITE})")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--no-jit", action="store_true")
    p.add_argument("--reference", choices=("xla",))
    p.add_argument("-k", default=None, help="only files whose path contains this")
    p.add_argument("--from-json", metavar="FILE", help="tabulate a saved --json result")
    p.add_argument("--json", metavar="FILE", help="save the results as JSON")
    p.add_argument("--write-failures", metavar="FILE")
    args = p.parse_args(argv)

    import jax

    # run_parallel tests need a mesh of CPU devices; settable only before JAX starts
    jax.config.update("jax_num_cpu_devices", 8)
    from rich.console import Console
    from rich.table import Table

    from hlopipe import conformance as conf

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    start = time.perf_counter()
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        files = doc["files"] if isinstance(doc, dict) else doc
    else:
        paths = args.paths or [str(SUITE)]
        found = conf.collect_files(paths, k=args.k)
        results = conf.run_files(
            found,
            jobs=args.jobs,
            jit=not args.no_jit,
            eager=True,
            strict=args.strict,
            reference=args.reference,
        )
        files = [r.to_json() for r in results]
    seconds = time.perf_counter() - start

    table: dict[str, dict[str, int]] = {}
    for f in files:
        fam = f.get("family") or conf.family(f["path"])
        row = table.setdefault(fam, {s: 0 for s in (*conf.STATUSES, "total", "worse")})
        row[f["status"]] += 1
        row["total"] += 1
        row["worse"] += f["status"] not in ("pass", "skipped") and f.get("reference") == "pass"
    show_ref = any(f.get("reference") for f in files)

    t = Table(title="conformance per op family", show_lines=False)
    t.add_column("family", no_wrap=True)
    for col in ("files", "pass", "fail", "error", "unsupported", "skipped", "pass %"):
        t.add_column(col, justify="right")
    if show_ref:
        t.add_column("worse than XLA", justify="right")
    totals = {s: 0 for s in (*conf.STATUSES, "total", "worse")}
    for fam, row in sorted(table.items()):
        for k in totals:
            totals[k] += row[k]
        counted = row["total"] - row["skipped"]
        pct = f"{100 * row['pass'] / counted:.0f}" if counted else "-"
        style = "green" if row["pass"] == counted else ("red" if row["pass"] == 0 else "yellow")
        cells = [fam, str(row["total"]), str(row["pass"]), str(row["fail"]), str(row["error"])]
        cells += [str(row["unsupported"]), str(row["skipped"]), pct]
        if show_ref:
            cells.append(str(row["worse"]))
        t.add_row(*cells, style=style)
    counted = totals["total"] - totals["skipped"]
    cells = ["total", str(totals["total"]), str(totals["pass"]), str(totals["fail"])]
    cells += [str(totals["error"]), str(totals["unsupported"]), str(totals["skipped"])]
    cells.append(f"{100 * totals['pass'] / counted:.1f}" if counted else "-")
    if show_ref:
        cells.append(str(totals["worse"]))
    t.add_section()
    t.add_row(*cells, style="bold")
    console.print(t)
    passed, skipped = totals["pass"], totals["skipped"]
    line = f"{passed} passed, {totals['total'] - passed - skipped} failed"
    console.print(line + (f", {skipped} skipped" if skipped else "") + f" ({seconds:.0f}s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"files": files}, indent=1))
    if args.write_failures:
        Path(args.write_failures).write_text(failures_text(files))
        console.print(f"failures written to {args.write_failures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
