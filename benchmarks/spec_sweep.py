"""Every op of the StableHLO specification, every element type it allows, edge values:
rehydration against XLA and StableHLO's reference interpreter (``tests/rehydrate/spec_cases.py``).

Prints, per op, how many cases pass (equal XLA), equal only the specification (``spec``), fail,
are unsupported or raise, then each case that is not a pass with its reason. A table, never a
pass/fail test (``tests/rehydrate/test_spec_sweep.py`` is the fast gate).

Usage:
    python benchmarks/spec_sweep.py [--family NAME ...] [--match TEXT] [--every K] [--eager]
        [--jobs N]
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "rehydrate"))


def _init() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)


def _one(args: tuple[str, str, bool]) -> tuple[str, str, str, str]:
    import spec_cases

    family, name, eager = args
    case = next(c for c in spec_cases.FAMILIES[family]() if c.name == name)
    modes = (True, False) if eager else (True,)
    out = spec_cases.verdict(case, modes)
    return case.op, case.name, out.status, out.note


def main() -> None:
    import spec_cases

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", nargs="*", default=list(spec_cases.FAMILIES))
    p.add_argument("--match", default="")
    p.add_argument("--every", type=int, default=1)
    p.add_argument("--eager", action="store_true", help="also run every case eagerly")
    p.add_argument("--jobs", type=int, default=1)
    a = p.parse_args()
    work = [
        (fam, c.name, a.eager)
        for fam in a.family
        for c in spec_cases.FAMILIES[fam]()
        if a.match in c.name
    ][:: a.every]
    t0 = time.time()
    results = []

    def progress(r: tuple[str, str, str, str]) -> None:
        results.append(r)
        if r[2] not in ("pass", "spec"):
            print(f"  {r[2]:11} {r[1]}: {r[3]}", file=sys.stderr, flush=True)

    if a.jobs > 1:
        with mp.get_context("spawn").Pool(a.jobs, initializer=_init, maxtasksperchild=400) as pool:
            for r in pool.imap_unordered(_one, work, chunksize=4):
                progress(r)
    else:
        _init()
        for w in work:
            progress(_one(w))
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    notes = []
    for op, name, status, note in results:
        table[op][status] += 1
        if "xla!=spec" in note:
            table[op]["xla!=spec"] += 1
        if status != "pass" or note:
            notes.append(f"{status:11} {name}: {note}")
    cols = ["pass", "spec", "fail", "unsupported", "error", "xla!=spec"]
    print(f"| op | {' | '.join(cols)} |")
    print("| --- " * (len(cols) + 1) + "|")
    total: collections.Counter[str] = collections.Counter()
    for op in sorted(table):
        total.update(table[op])
        print(f"| {op} | " + " | ".join(str(table[op][c]) for c in cols) + " |")
    print("| **total** | " + " | ".join(str(total[c]) for c in cols) + " |")
    print(f"\n{len(results)} cases in {time.time() - t0:.0f}s\n")
    print("\n".join(sorted(notes)))


if __name__ == "__main__":
    main()
