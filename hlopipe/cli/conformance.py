"""`hlopipe conformance`: StableHLO's test files through rehydration (over `conformance`)."""

from __future__ import annotations

import argparse
from typing import Any

from hlopipe.cli._common import Command, ask_cpu_devices
from hlopipe.errors import HlopipeError


def _add_conformance(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="StableHLO test files or folders (searched for *.mlir); format detected per file",
    )
    p.add_argument("--json", metavar="FILE", help="write every file's result as JSON")
    p.add_argument("--no-jit", action="store_true", help="run eagerly only (default: jit+eager)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="StableHLO's own tolerances (1e-4 absolute, 1 ULP) instead of the default per-type "
        "ULP bounds (4 ULPs for 32/64-bit floats, no absolute floor)",
    )
    p.add_argument(
        "--reference",
        choices=("xla",),
        help="also compile each test with XLA and report files where rehydration does worse",
    )
    p.add_argument("-k", metavar="SUBSTRING", help="only files whose path contains SUBSTRING")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="processes (default 1)")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="stop a file that runs longer and report it as an error (default: no limit)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list every file's status")


def _cmd_conformance(args: argparse.Namespace) -> int:
    """run StableHLO conformance tests through rehydration"""
    import json

    # run_parallel tests need a mesh of CPU devices; settable only before JAX starts
    ask_cpu_devices(8)
    from rich.console import Console

    from hlopipe import conformance as conf

    files = conf.collect_files(args.paths, k=args.k)
    if not files:
        raise HlopipeError(f"no .mlir file matches -k {args.k!r}")
    if args.jobs < 1:
        raise HlopipeError("--jobs must be at least 1")
    console = Console(highlight=False, stderr=False)
    results = _run_with_progress(args, files, console)
    style = {"pass": "green", "fail": "red", "error": "red", "unsupported": "yellow"}
    for r in results:
        if r.failed or args.verbose:
            first = r.message.splitlines()[0] if r.message else ""
            console.print(
                f"[{style.get(r.status, 'dim')}]{r.status:<11}[/] {r.path}"
                + (f"  {first}" if first else ""),
                soft_wrap=True,
            )
    if args.reference:
        worse = [r for r in results if r.worse_than_reference]
        console.print(f"worse than XLA: {len(worse)} file(s)")
        for r in worse:
            console.print(f"  {r.path}", soft_wrap=True)
    if args.json:
        doc = {
            "summary": conf.summary_line(results),
            "strict": args.strict,
            "modes": ["eager"] if args.no_jit else ["jit", "eager"],
            "families": conf.family_table(results),
            "files": [r.to_json() for r in results],
        }
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    print(conf.summary_line(results))
    return 1 if any(r.failed for r in results) else 0


def _run_with_progress(args: argparse.Namespace, files: list[Any], console: Any) -> list[Any]:
    """Every file's result, with a progress bar that goes when done."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from hlopipe import conformance as conf

    progress = Progress(
        TextColumn("[bold]conformance"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed [red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    counts = {"passed": 0, "failed": 0}
    with progress:
        task = progress.add_task("run", total=len(files), passed=0, failed=0)

        def on_result(r: conf.FileResult) -> None:
            counts["failed" if r.failed else "passed"] += r.status != "skipped"
            progress.update(task, advance=1, passed=counts["passed"], failed=counts["failed"])

        return conf.run_files(
            files,
            jobs=args.jobs,
            on_result=on_result,
            timeout=args.timeout,
            jit=not args.no_jit,
            eager=True,
            strict=args.strict,
            reference=args.reference,
        )


COMMAND = Command("conformance", _add_conformance, _cmd_conformance)
