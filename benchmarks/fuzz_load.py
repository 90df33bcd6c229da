"""A large fuzzing budget for the loaders (the suite runs a small one: tests/test_fuzz.py).

Each format is fuzzed in a child process with hypothesis mutations (byte flips, truncation,
insertions, deletions); a child that dies or hangs is reported with its exit status and the
end of its output. Prints, per format: examples, loaded, refused (HlopipeError), ran, outcome.

    .venv/bin/python benchmarks/fuzz_load.py [--examples 2000] [--seeds 0,1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_fuzz import CHILD

KINDS = ("hlo-text", "hlo-opt", "stablehlo-text", "hlo-proto", "mlir-bytecode")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--bytecode-examples", type=int, default=100, help="each costs a child")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    table = Table(title="fuzzing hlopipe.load (+ as_function and a run when it loads)")
    for col in ("format", "seed", "examples", "loaded", "refused", "ran", "time", "outcome"):
        table.add_column(col, justify="left" if col in ("format", "outcome") else "right")
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    for kind in args.kinds.split(","):
        n = args.bytecode_examples if kind == "mlir-bytecode" else args.examples
        for seed in args.seeds.split(","):
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, kind, str(n), seed],
                    env=env,
                    capture_output=True,
                    timeout=args.timeout,
                )
                out = proc.stdout.decode(errors="replace")
                line = [x for x in out.splitlines() if x.startswith("STATS ")]
                if proc.returncode == 0 and line:
                    s = json.loads(line[0][6:])
                    outcome = "ok"
                else:
                    s = {"loaded": "?", "refused": "?", "ran": "?"}
                    tail = proc.stderr.decode(errors="replace")[-600:]
                    outcome = f"CRASH exit {proc.returncode}: {tail}"
            except subprocess.TimeoutExpired:
                s = {"loaded": "?", "refused": "?", "ran": "?"}
                outcome = f"HANG (> {args.timeout:.0f} s)"
            dt = time.perf_counter() - t0
            table.add_row(
                kind,
                seed,
                str(n),
                *(str(s[k]) for k in ("loaded", "refused", "ran")),
                f"{dt:.0f} s",
                outcome,
            )
    Console().print(table)


if __name__ == "__main__":
    main()
