"""The XLA-style corpus (scripts/probe_corpus/) reads, has no stray files, and the fixtures
made from it (tests/data/frameworks/xla/) hold its programs and arguments as they are now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "scripts" / "probe_corpus"
FIXTURES = ROOT / "tests" / "data" / "frameworks" / "xla"


def _cases():
    sys.path.insert(0, str(CORPUS))
    try:
        from corpus import load_cases
    finally:
        sys.path.remove(str(CORPUS))
    return load_cases()


def test_every_file_is_a_case_and_every_case_reads():
    cases = _cases()
    manifest = json.loads((CORPUS / "manifest.json").read_text())["cases"]
    listed = {e["hlo"] for e in manifest.values()}
    on_disk = {p.name for p in CORPUS.glob("*.hlo")}
    assert listed == on_disk, (sorted(listed - on_disk), sorted(on_disk - listed))
    assert len(cases) == len(manifest) > 200
    for c in cases.values():
        assert "ENTRY" in c.text or "HloModule" in c.text or "{" in c.text, c.name
        for g in c.grad or []:
            assert 0 <= g < len(c.args), (c.name, g)
        if c.oracle == "stored":
            assert c.expected is not None, c.name


def test_the_xla_fixtures_are_the_corpus_cases_marked_fixture():
    """Editing a fixture case of the corpus without `make fixtures` fails here."""
    fixtures = {c.name: c for c in _cases().values() if c.fixture}
    assert fixtures and {p.stem for p in FIXTURES.glob("*.json")} == set(fixtures)
    for name, c in fixtures.items():
        m = json.loads((FIXTURES / f"{name}.json").read_text())
        assert (FIXTURES / m["formats"]["hlo-text"]).read_text() == c.text.lstrip(), name
        assert [a["name"] for a in m["args"]] == c.arg_names, name
        assert m["outputs"] == c.outputs and m["expect"] == c.expect, name
        with np.load(FIXTURES / f"{name}.npz") as z:
            for i, v in enumerate(c.args):
                got = z[f"arg_{i}"]
                v = np.asarray(v)
                want = v.view(np.uint16) if f"arg_{i}" in m.get("bfloat16", []) else v
                assert got.dtype == want.dtype and got.shape == want.shape, (name, i)
                assert got.tobytes() == want.tobytes(), (name, i)  # bit for bit (NaN too)
