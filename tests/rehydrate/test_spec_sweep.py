"""A fast slice of the specification sweep (``tests/rehydrate/spec_cases.py``): for every op
in it, a few hand-built programs with edge values run through rehydration (jitted, and
eagerly for some), XLA and StableHLO's reference interpreter. ``benchmarks/spec_sweep.py``
runs every case and prints the pass table."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import spec_cases

pytestmark = pytest.mark.x64

# Quantized types do not parse in jaxlib's MLIR context (no quant dialect): not run here.
SKIP_OPS = {"uniform_quantize"}
PER_OP = 1


def _selection() -> list[spec_cases.Case]:
    by_op: dict[str, list[spec_cases.Case]] = collections.defaultdict(list)
    for c in spec_cases.all_cases():
        if c.op not in SKIP_OPS:
            by_op[c.op].append(c)
    picked = []
    for op in sorted(by_op):
        cases = by_op[op]
        step = max(1, len(cases) // PER_OP)
        picked += cases[step // 2 :: step][:PER_OP]
    return picked


CASES = _selection()
# the ops where rehydration follows the specification and XLA on CPU does not (docs/ops.md,
# "Differences from XLA"): signed zeros of min/max, denormals (scatter regions included),
# NaN in reductions, denormals in sort keys. (Scatter windows partly out of bounds follow XLA.)
SPEC_OVER_XLA = ("reduce/", "sort/", "minimum/", "maximum/")


@pytest.mark.parametrize("chunk", range(4))
def test_sweep_slice(chunk: int) -> None:
    bad = []
    for k, case in enumerate(CASES[chunk::4]):
        out = spec_cases.verdict(case, modes=(True, False) if k % 16 == 0 else (True,))
        ok = out.status == "pass" or (out.status == "spec" and case.name.startswith(SPEC_OVER_XLA))
        if not ok:
            bad.append(f"{case.name}: {out.status} {out.note}")
    assert not bad, "\n".join(bad)


def test_two_key_sort_takes_the_lax_sort_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """JAX's ``lax.sort(num_keys=2)`` comparator and the specification's select form both
    become one ``lax.sort`` with two keys, not the O(n²) general sort."""
    import jax
    import numpy as np
    from jax import lax

    import hlopipe
    from hlopipe.rehydrate.ops import sort as sort_rules

    def general(*a: object, **k: object) -> None:
        raise AssertionError("the general sort ran")

    monkeypatch.setattr(sort_rules, "_general_sort", general)
    rng = np.random.default_rng(0)
    k0 = rng.integers(0, 3, 40).astype(np.int32)
    k1 = rng.standard_normal(40).astype(np.float32)
    k1[::5] = np.nan
    k1[1::7] = -0.0
    p = np.arange(40, dtype=np.int32)

    def f(a, b, c):
        return lax.sort((a, b, c), num_keys=2)

    g = hlopipe.load(jax.jit(f).lower(k0, k1, p).as_text()).as_function()
    for got, want in zip(jax.jit(g)(k0, k1, p), f(k0, k1, p)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    two_keys = next(c for c in spec_cases.sort_cases() if c.name.endswith("two-keys"))
    assert spec_cases.verdict(two_keys, modes=(True,)).status == "pass"
