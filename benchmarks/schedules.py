"""hlopipe's schedules against torch.distributed.pipelining's, and greedy against exact.

1. For every schedule name torch also has and a grid of sizes (p up to 16, m from p/2 to 8p,
   the virtual stage counts torch accepts), the makespan and each rank's peak of live
   activations of ours and of torch's, both simulated by hlopipe's simulator, at unit costs
   (F = I = W = 1, B = 2) and at B = 2F, W = F/2 (F = 1, I = 1.5, W = 0.5). A row where ours is
   worse in any of these is listed; the count is printed.
2. The greedy zero-bubble generators (zb-h1, zb-v) against the exact optimum under the same
   memory limit, found with an ILP (scipy.optimize.milp) at unit costs on small sizes.

torch 2.13 (CPU) lives in a throw-away venv (HLOPIPE_TORCH_VENV, default /work/venvs/torch),
created here with ``pip install torch==2.13.0`` when missing; it is never a dependency of
hlopipe. Its schedules are generated there and handed over in torch's own CSV form, which
hlopipe reads (``Schedule.from_torch_csv``): the comparison exercises the interchange too.

    .venv/bin/python benchmarks/schedules.py [--quick] [--no-exact]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from hlopipe import schedules
from hlopipe.errors import ScheduleError

VENV = os.environ.get("HLOPIPE_TORCH_VENV", "/work/venvs/torch")
COST_MODELS = {
    "unit": {"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0},
    "B=2F,W=F/2": {"F": 1.0, "B": 2.0, "I": 1.5, "W": 0.5},
}
# hlopipe name -> torch class name (get_schedule_class), and the virtual stage counts tried.
TORCH_NAMES = {
    "gpipe": ("GPipe", (1,)),
    "1f1b": ("1F1B", (1,)),
    "interleaved-1f1b": ("Interleaved1F1B", (2, 3, 4)),
    "looped-bfs": ("LoopedBFS", (2, 3, 4)),
    "interleaved-zb": ("InterleavedZeroBubble", (2, 3, 4)),
    "zb-v": ("ZBVZeroBubble", (2,)),
    "dualpipev": ("DualPipeV", (2,)),
}

# Runs inside the torch venv: every requested (class, p, m, v) as torch's CSV, or its refusal.
TORCH_SIDE = r"""
import csv, io, json, sys, warnings, logging
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
out = {}
for key in json.load(sys.stdin):
    cls, p, m, v = key.split("/")
    try:
        ops = get_schedule_ops(cls, int(p), int(m), int(v))
    except Exception as e:  # torch refuses this size
        out[key] = "refused: " + type(e).__name__ + ": " + str(e).splitlines()[0][:120]
        continue
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in ops:
        w.writerow(["" if a is None else str(a) for a in row])
    out[key] = buf.getvalue()
json.dump(out, sys.stdout)
"""


def torch_python() -> str:
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {VENV} with torch==2.13.0 (CPU) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
    return python


def grid(quick: bool) -> list[tuple[str, int, int, int]]:
    ps = (2, 4, 8) if quick else (2, 3, 4, 6, 8, 12, 16)
    points = []
    for name, (_, vs) in TORCH_NAMES.items():
        for p in ps:
            ms = sorted({max(1, p // 2), p, p + p // 2, 2 * p, 3 * p, 4 * p, 8 * p})
            for m in ms:
                for v in vs:
                    points.append((name, p, m, v))
    return points


def renumber(text: str) -> str:
    """torch 2.13's Schedule1F1B order with its microbatch numbers repaired: on ranks with no
    warm-up forward (the last) it numbers forwards from 1, naming microbatch m and never 0.
    Each (stage, kind) is renumbered 0, 1, ... in list order (the order torch's runtime runs,
    which does not read this list for single-stage schedules)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in csv.reader(io.StringIO(text)):
        seen: dict[tuple[int, str], int] = {}
        cells = []
        for cell in row:
            if not cell or "REDUCE_GRAD" in cell:
                cells.append(cell)
                continue
            a = schedules.Action.parse(cell)
            k = (a.stage, a.kind.value)
            cells.append(str(schedules.Action(a.stage, a.kind, seen.setdefault(k, 0))))
            seen[k] += 1
        writer.writerow(cells)
    return out.getvalue()


def measure(s: schedules.Schedule) -> dict[str, tuple[float, list[int]]]:
    out = {}
    for label, costs in COST_MODELS.items():
        t = schedules.simulate(s, costs)
        out[label] = (t.makespan, [t.peak_activations[r] for r in range(s.num_ranks)])
    return out


def compare(quick: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    points = grid(quick)
    keys = [f"{TORCH_NAMES[n][0]}/{p}/{m}/{v}" for n, p, m, v in points]
    start = time.perf_counter()
    proc = subprocess.run(
        [torch_python(), "-c", TORCH_SIDE],
        input=json.dumps(keys),
        capture_output=True,
        text=True,
        check=True,
    )
    torch_csv = json.loads(proc.stdout)
    torch_secs = time.perf_counter() - start
    per_name: dict[str, dict] = {}
    worse_rows = []
    invalid_rows = []
    ours_secs = 0.0
    for (name, p, m, v), key in zip(points, keys, strict=True):
        stats = per_name.setdefault(
            name,
            {
                "points": 0,
                "refused": 0,
                "invalid": 0,
                "worse": 0,
                "better": 0,
                "ratio": [],
                "mem": [],
            },
        )
        text = torch_csv[key]
        if text.startswith("refused:"):
            stats["refused"] += 1
            continue
        if name == "1f1b":
            text = renumber(text)
        try:
            theirs = schedules.Schedule.from_torch_csv(text, name="torch-" + name)
            if theirs.num_microbatches != m:
                raise ScheduleError(f"names microbatches up to {theirs.num_microbatches - 1}")
            schedules.validate(theirs)
        except ScheduleError as e:
            stats["invalid"] += 1
            invalid_rows.append((name, p, m, v, str(e).splitlines()[0]))
            continue
        t0 = time.perf_counter()
        try:
            ours = schedules.get(name, p, m, v)
        except ScheduleError as e:
            worse_rows.append((name, p, m, v, f"we refuse what torch takes: {e}"))
            stats["worse"] += 1
            continue
        ours_secs += time.perf_counter() - t0
        stats["points"] += 1
        mo, mt = measure(ours), measure(theirs)
        bad = []
        for label in COST_MODELS:
            (ms_o, pk_o), (ms_t, pk_t) = mo[label], mt[label]
            if ms_o > ms_t + 1e-9:
                bad.append(f"{label}: makespan {ms_o:g} > {ms_t:g}")
            if any(a > b for a, b in zip(pk_o, pk_t, strict=True)):
                bad.append(f"{label}: peak {pk_o} > {pk_t}")
            stats["ratio"].append(ms_o / ms_t)
        stats["mem"].append(sum(mo["unit"][1]) / max(1, sum(mt["unit"][1])))
        if any(mo[k][0] < mt[k][0] - 1e-9 for k in COST_MODELS):
            stats["better"] += 1
        if bad:
            stats["worse"] += 1
            worse_rows.append((name, p, m, v, "; ".join(bad)))

    table = Table(
        title="ours vs torch 2.13 (same simulator; makespan ratio ours/torch over both cost "
        "models, memory = summed per-rank peaks ours/torch at unit costs)"
    )
    for col in (
        "schedule",
        "sizes",
        "torch refused",
        "torch invalid",
        "ours worse",
        "ours faster",
        "makespan ratio min/mean",
        "memory ratio mean",
    ):
        table.add_column(col, justify="left" if col == "schedule" else "right")
    for name, st in per_name.items():
        r = st["ratio"] or [1.0]
        mem = st["mem"] or [1.0]
        table.add_row(
            name,
            str(st["points"]),
            str(st["refused"]),
            str(st["invalid"]),
            str(st["worse"]),
            str(st["better"]),
            f"{min(r):.3f} / {sum(r) / len(r):.3f}",
            f"{sum(mem) / len(mem):.3f}",
        )
    console = Console(width=160)
    console.print(table)
    console.print(
        "1f1b: torch's Schedule1F1B order numbered afresh per stage and kind (its own list names "
        "microbatch m and skips 0 on the last rank)"
    )
    console.print(f"rows where ours is worse than torch's: {len(worse_rows)}")
    for row in worse_rows[:40]:
        console.print("  ", *row)
    console.print(
        f"sizes torch accepts but whose schedule does not run or covers the wrong microbatches "
        f"(hlopipe's validator): {len(invalid_rows)}"
    )
    for row in invalid_rows[:10]:
        console.print("  ", *row)
    console.print(
        f"torch generated its {len(keys)} schedules in {torch_secs:.1f} s; ours in "
        f"{ours_secs:.1f} s (load: {os.getloadavg()[0]:.1f})"
    )


# -- greedy vs exact --------------------------------------------------------------------------


def exact_makespan(s: schedules.Schedule, memory: list[int], horizon: int) -> float | None:
    """The least makespan of any order of ``s``'s actions (unit costs: every F, I, W takes 1),
    each rank holding at most ``memory[r]`` live (stage, microbatch) pairs, found with a
    time-indexed ILP (HiGHS via scipy.optimize.milp). None if the solver gives up."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    F, I, W = schedules.Kind.F, schedules.Kind.I, schedules.Kind.W
    S, M, T = s.num_stages, s.num_microbatches, horizon
    acts = [(st, k, i) for st in range(S) for i in range(M) for k in (F, I, W)]
    index = {a: j for j, a in enumerate(acts)}
    n = len(acts) * T + 1  # x[a, t] and the makespan C

    def x(a: tuple, t: int) -> int:
        return index[a] * T + t

    rows: list[tuple[dict[int, float], float, float]] = []
    for a in acts:  # each action once
        rows.append(({x(a, t): 1.0 for t in range(T)}, 1, 1))

    def start(a: tuple) -> dict[int, float]:
        return {x(a, t): float(t) for t in range(T)}

    def before(a: tuple, b: tuple) -> None:  # start(b) >= start(a) + 1
        coeffs = start(b)
        for j, c in start(a).items():
            coeffs[j] = coeffs.get(j, 0.0) - c
        rows.append((coeffs, 1, np.inf))

    for st in range(S):
        for i in range(M):
            if st > 0:
                before((st - 1, F, i), (st, F, i))
            before((st, F, i), (st, I, i))
            if st < S - 1:
                before((st + 1, I, i), (st, I, i))
            before((st, I, i), (st, W, i))
    for a in acts:  # C >= start(a) + 1
        coeffs = {j: -c for j, c in start(a).items()}
        coeffs[n - 1] = 1.0
        rows.append((coeffs, 1, np.inf))
    for r in range(s.num_ranks):
        mine = [a for a in acts if s.stage_to_rank[a[0]] == r]
        for t in range(T):
            rows.append(({x(a, t): 1.0 for a in mine}, 0, 1))  # one action at a time
            live: dict[int, float] = {}
            for a in mine:
                if a[1] is F:
                    for tau in range(t + 1):
                        live[x(a, tau)] = 1.0
                elif a[1] is W:
                    for tau in range(t):
                        live[x(a, tau)] = -1.0
            rows.append((live, -np.inf, memory[r]))
    A = lil_matrix((len(rows), n))
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for k, (coeffs, a_lo, a_hi) in enumerate(rows):
        for j, c in coeffs.items():
            A[k, j] = c
        lo[k], hi[k] = a_lo, a_hi
    cost = np.zeros(n)
    cost[-1] = 1.0
    integrality = np.ones(n)
    integrality[-1] = 0
    upper = np.ones(n)
    upper[-1] = T
    res = milp(
        cost,
        constraints=LinearConstraint(A.tocsr(), lo, hi),
        integrality=integrality,
        bounds=Bounds(np.zeros(n), upper),
        options={"time_limit": 60},
    )
    return None if res.x is None or res.status not in (0,) else round(res.fun)


def greedy_vs_exact() -> None:
    from rich.console import Console
    from rich.table import Table

    unit = COST_MODELS["unit"]
    table = Table(
        title="zero-bubble generators (greedy, or for zb-v the better of the paper's order and "
        "the greedy one) vs the exact optimum under the same memory limit (ILP), unit costs"
    )
    for col in ("schedule", "p", "m", "memory limit / rank", "ours", "exact", "distance"):
        table.add_column(col, justify="left" if col == "schedule" else "right")
    sizes = [(2, 2), (2, 3), (2, 4), (3, 3), (3, 4), (4, 4)]
    limits = {
        "zb-h1": lambda p: [p] * p,
        "zb-h2": lambda p: [2 * p - 1] * p,
        "zb-v": lambda p: [2 * p] * p,
    }
    for name, limit in limits.items():
        for p, m in sizes:
            s = schedules.get(name, p, m)
            greedy = schedules.simulate(s, unit).makespan
            exact = exact_makespan(s, limit(p), horizon=int(greedy))
            dist = "?" if exact is None else f"{greedy - exact:g} ({(greedy - exact) / exact:.1%})"
            table.add_row(
                name,
                str(p),
                str(m),
                str(limit(p)[0]),
                f"{greedy:g}",
                "?" if exact is None else f"{exact:g}",
                dist,
            )
    Console(width=160).print(table)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="p in 2, 4, 8 only")
    ap.add_argument("--no-exact", action="store_true", help="skip the ILP comparison")
    args = ap.parse_args()
    compare(args.quick)
    if not args.no_exact:
        greedy_vs_exact()


if __name__ == "__main__":
    main()
