"""Probe hlopipe with XLA-style HLO, each module against XLA running the same text directly.

The cases (the corpus ``scripts/probe_corpus/``: one ``.hlo`` file each, listed in its
``manifest.json``; the fixture generator ``scripts/fixtures/xla_style.py`` reads the same
corpus) cover the HLO syntax forms and opcodes XLA's own tests use. For each, XLA's answer
(jaxlib's HLO parser, XLA's HLO -> StableHLO converter, the CPU compiler, 64-bit types on; or
the values the corpus stores where XLA's CPU backend does not compile the module) is compared
with :func:`hlopipe.load` + ``as_function()`` called
directly in JAX's default mode, and, where the case lists ``grad``, the gradient of a random
cotangent-weighted sum with central finite differences. Each case runs in a child process
(XLA's parser and compiler can abort the process). Prints one line per case and a count per
status: ``pass`` (a case the corpus expects refused passes when hlopipe refuses it with the
error it names), ``refused`` (an HlopipeError, with its message), ``fail`` (a wrong value or
gradient), ``crash`` (any other exception), ``abort`` (the child died), ``grad-*`` (the
gradient check), ``ran-no-oracle`` (hlopipe ran what XLA refused).

Usage: ``make probe``, or ``.venv/bin/python scripts/xla_style_probe.py [-k SUBSTRING]
[--jobs N]`` (minutes).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _cases() -> dict[str, Any]:
    sys.path.insert(0, str(HERE / "probe_corpus"))
    from corpus import load_cases

    return load_cases()


def _close(got: Any, want: Any, c: Any) -> bool:
    import numpy as np

    if want.dtype.kind in "fc" or "float" in str(want.dtype):
        kind = np.complex128 if want.dtype.kind == "c" else np.float64
        return bool(
            np.allclose(
                got.astype(kind),
                want.astype(kind),
                rtol=c.rtol,
                atol=c.atol,
                equal_nan=True,
            )
        )
    return bool(np.array_equal(got, want))


def run_one(name: str) -> dict[str, Any]:
    """One case in this process: XLA's answer, hlopipe's, their comparison."""
    import jax
    import numpy as np

    sys.path.insert(0, str(HERE / "fixtures"))
    from check_with_xla import run_xla  # turns 64-bit types on, for XLA's run

    c = _cases()[name]
    text, args = c.text, c.args
    res: dict[str, Any] = {"name": name}
    want = None
    if c.oracle == "stored":
        want = [np.asarray(w) for w in c.expected]
        res["oracle"] = "stored"
    elif c.oracle == "none":
        res["oracle"] = "none"
    else:
        try:
            want = run_xla(text, args)
            res["oracle"] = "xla"
        except Exception as e:
            res["oracle"] = f"xla refused: {type(e).__name__}: {str(e)[:200]}"
    jax.config.update("jax_enable_x64", False)
    import hlopipe
    from hlopipe.errors import HlopipeError

    try:
        f = hlopipe.load(text).as_function()
        out = f(*args)
        got = [np.asarray(g) for g in (out if isinstance(out, tuple | list) else [out])]
    except HlopipeError as e:
        msg = f"{type(e).__name__}: {str(e)[:400]}"
        expected = c.expect != "pass" and type(e).__name__ == c.expect["error"]
        if expected and all(m in str(e) for m in c.expect["match"]):
            return {**res, "status": "pass", "msg": f"refused as expected: {msg}"}
        return {**res, "status": "refused", "msg": msg}
    except Exception as e:
        return {**res, "status": "crash", "msg": f"{type(e).__name__}: {str(e)[:400]}"}
    if c.expect != "pass":
        return {**res, "status": "fail", "msg": f"ran, but the corpus expects {c.expect}"}
    if want is None:
        return {**res, "status": "ran-no-oracle"}
    bad = []
    if len(got) != len(want):
        bad.append(f"{len(got)} results, {len(want)} expected")
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g.shape != w.shape or g.dtype != w.dtype:
            bad.append(f"result {i}: {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        elif not _close(g, w, c):
            bad.append(f"result {i}: {g.ravel()[:6].tolist()}, expected {w.ravel()[:6].tolist()}")
    if bad:
        return {**res, "status": "fail", "msg": "; ".join(bad)[:600]}
    if c.grad:
        try:
            msg = _grad_check(f, args, want, c.grad)
        except HlopipeError as e:
            return {**res, "status": "grad-refused", "msg": f"{type(e).__name__}: {str(e)[:300]}"}
        except Exception as e:
            return {**res, "status": "grad-crash", "msg": f"{type(e).__name__}: {str(e)[:300]}"}
        if msg:
            return {**res, "status": "grad-fail", "msg": msg}
    return {**res, "status": "pass"}


def _grad_check(f: Any, args: list[Any], want: list[Any], wrt: list[int]) -> str | None:
    """The gradient of a random cotangent-weighted sum of the float results, against central
    differences along a random direction; None when they agree."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    cts = [
        rng.standard_normal(w.shape).astype(w.dtype) if w.dtype.kind == "f" else None for w in want
    ]

    def loss(*d: Any) -> Any:
        full = list(args)
        for i, v in zip(wrt, d, strict=True):
            full[i] = v
        out = f(*full)
        out = list(out) if isinstance(out, tuple | list) else [out]
        return sum((o * ct).sum() for o, ct in zip(out, cts, strict=True) if ct is not None)

    d = [args[i] for i in wrt]
    grads = jax.grad(loss, argnums=tuple(range(len(wrt))))(*d)
    for k, i in enumerate(wrt):
        v = rng.standard_normal(np.shape(args[i])).astype(np.asarray(args[i]).dtype)
        eps = 1e-3
        plus, minus = list(d), list(d)
        plus[k], minus[k] = d[k] + eps * v, d[k] - eps * v
        fd = (float(loss(*plus)) - float(loss(*minus))) / (2 * eps)
        an = float((np.asarray(grads[k]) * v).sum())
        if not np.isclose(an, fd, rtol=2e-2, atol=2e-2):
            return f"gradient wrt argument {i}: {an}, finite differences {fd}"
    return None


def _child(name: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    p = subprocess.run(
        [sys.executable, __file__, "--one", name], capture_output=True, text=True, env=env
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    return {"name": name, "status": "abort", "msg": f"rc={p.returncode} {p.stderr[-300:]}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if a.one:
        try:
            print(json.dumps(run_one(a.one)))
        except Exception:
            traceback.print_exc()
            return 1
        return 0
    names = [n for n in _cases() if a.k in n]
    counts: collections.Counter[str] = collections.Counter()
    with ThreadPoolExecutor(a.jobs) as ex:
        for r in ex.map(_child, names):
            counts[r["status"]] += 1
            oracle = r.get("oracle", "")[:40]
            print(
                f"{r['status']:13} {r['name']:44} [{oracle}] {r.get('msg', '')[:300]}", flush=True
            )
    print("\n| status | cases |\n| --- | --- |")
    for status, n in counts.most_common():
        print(f"| {status} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
