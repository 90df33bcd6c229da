"""The specification sweep's gate (``tests/rehydrate/spec_cases.py``): for every (op, element
type) pair of the sweep, one non-empty hand-built program with edge values runs through
rehydration (jitted, and eagerly for every 16th), XLA and StableHLO's reference interpreter.
``benchmarks/spec_sweep.py`` runs every case and prints the pass table."""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import spec_cases

pytestmark = pytest.mark.x64

# Quantized types: neither XLA nor jaxlib's reference interpreter runs them (no oracle); the
# conformance data (tests/conformance/data/interpret/quantized.mlir) checks them instead.
SKIP_OPS = {"uniform_quantize"}
OPS_DOC = Path(__file__).parents[2] / "docs" / "ops.md"
CHUNKS = 8


def element_type(case: spec_cases.Case) -> str:
    """The pair's element type: the first argument's (an op without arguments, as iota: the
    type its name gives)."""
    if case.args:
        return str(case.args[0].dtype)
    return case.name.split("/")[1]


def _nonempty(case: spec_cases.Case) -> bool:
    return not case.args or any(a.size > 0 for a in case.args)


def selection() -> list[spec_cases.Case]:
    """Per (op, element type) pair, its non-empty case with the most elements (the most edge
    values; the first such case on ties)."""
    by_pair: dict[tuple[str, str], list[spec_cases.Case]] = collections.defaultdict(list)
    for c in spec_cases.all_cases():
        if c.op not in SKIP_OPS:
            by_pair[(c.op, element_type(c))].append(c)
    picked = []
    for pair in sorted(by_pair):
        cases = [c for c in by_pair[pair] if _nonempty(c)]
        if cases:
            picked.append(max(cases, key=lambda c: sum(a.size for a in c.args)))
    return picked


def spec_over_xla_ops() -> set[str]:
    """The ops where rehydration gives the specification's answer and XLA on CPU differs: the
    op column of the first table under "Differences between XLA and the specification" in
    docs/ops.md (``cosine, sine`` -> cosine, sine; a row that
    names no op, as "every float op", adds none)."""
    text = OPS_DOC.read_text()
    section = text.split("## Differences between XLA and the specification", 1)[1]
    table = re.search(
        r"^\| op \| case \| specification \(and rehydration\).*?\n\n", section, re.S | re.M
    )
    assert table, f"{OPS_DOC}: no table of differences where rehydration follows the specification"
    known = {c.op for c in spec_cases.all_cases()}
    ops = set()
    for row in table.group(0).strip().splitlines()[2:]:
        cell = row.split("|")[1]
        ops |= {name.split()[0] for name in cell.split(",") if name.split()[0] in known}
    return ops


def _documented(case: spec_cases.Case, answers: spec_cases.Answers) -> bool:
    """Each element of rehydration's jitted answer equals XLA's, the specification's, or (as
    docs/ops.md says for denormal parts) the specification's on the inputs with their
    denormals flushed to zero, as XLA on CPU reads them."""
    import numpy as np

    flushed = case._replace(args=tuple(spec_cases._flush(a) for a in case.args))
    ours = answers.ours[True]
    if isinstance(ours, Exception) or answers.xla is None or answers.ref is None:
        return False
    oracles = [answers.xla, answers.ref, spec_cases.run_reference(flushed)]
    for i, o in enumerate(ours):
        for k in range(o.size):
            oi = o.reshape(-1)[k : k + 1]
            if not any(
                spec_cases.same(oi, np.asarray(a[i]).reshape(-1)[k : k + 1], case.ulps, case.rtol)
                for a in oracles
            ):
                return False
    return True


def _known_failures() -> dict[str, str]:
    out = {}
    for line in FAILURES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition(" ")
            out[name] = why.strip()
    return out


FAILURES = Path(__file__).parent / "spec_sweep_failures.txt"
KNOWN_FAILURES = _known_failures()
CASES = selection()
SPEC_OVER_XLA = spec_over_xla_ops()


def test_every_op_and_type_has_a_nonempty_case() -> None:
    pairs = {(c.op, element_type(c)) for c in spec_cases.all_cases() if c.op not in SKIP_OPS}
    assert {(c.op, element_type(c)) for c in CASES} == pairs
    assert all(_nonempty(c) for c in CASES)
    sines = {c.name for c in CASES if c.op == "sine"}
    assert "sine/f32/12" in sines and len(sines) == 8, sines


def test_the_documented_differences_are_read_from_docs() -> None:
    assert {"sort", "power", "logistic", "cosine", "sine"} <= SPEC_OVER_XLA
    # complex maximum/minimum give XLA's answer (docs/ops.md, the second table)
    assert not {"every", "maximum", "minimum"} & SPEC_OVER_XLA


@pytest.mark.xla_default  # the list is of cases that fail against XLA at its defaults
def test_known_failures_still_fail() -> None:
    """A listed case that passes now is to be taken off the list (spec_sweep_failures.txt)."""
    by_name = {c.name: c for c in spec_cases.all_cases()}
    assert set(KNOWN_FAILURES) <= set(by_name)
    fixed = [n for n in KNOWN_FAILURES if spec_cases.verdict(by_name[n], (True,)).status == "pass"]
    assert not fixed, f"now pass, take them off {FAILURES.name}: {fixed}"


# Each op against XLA within the case's ULP bound: a claim about XLA's default emitters (the
# suite's fast-compiling ones lack complex ordering and a boolean clamp; tests/conftest.py).
@pytest.mark.xla_default
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_sweep(chunk: int) -> None:
    bad = []
    cases = CASES[chunk::CHUNKS]
    eager = [k % 16 == 0 for k in range(len(cases))]
    for case, answers in zip(cases, spec_cases.answer_all(cases, eager), strict=True):
        out = spec_cases.judge(case, answers)
        ok = out.status == "pass" or (
            out.status in ("spec", "fail")
            and case.op in SPEC_OVER_XLA
            and _documented(case, answers)
        )
        if not ok and case.name in KNOWN_FAILURES:
            continue  # listed with its reason; test_known_failures_still_fail watches them
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
    for got, want in zip(jax.jit(g)(k0, k1, p), f(k0, k1, p), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    two_keys = next(c for c in spec_cases.sort_cases() if c.name.endswith("two-keys"))
    assert spec_cases.verdict(two_keys, modes=(True,)).status == "pass"
