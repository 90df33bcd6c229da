"""The XLA-style HLO corpus: every case a ``.hlo`` file of this folder, listed in
``manifest.json`` with its arguments (``args.npz``) and, for the few modules XLA's CPU backend
does not compile, the expected values (``expected.npz``, computed by the numpy oracle the
manifest quotes). Every program is hand-written for hlopipe in the style of XLA's own test
HLO (none is taken from XLA's repository).

Two tools read it: ``scripts/xla_style_probe.py`` (``make probe``) runs every case through
hlopipe against XLA running the same text, and ``scripts/fixtures/xla_style.py`` (``make
fixtures``) writes the cases marked ``"fixture"`` to ``tests/data/frameworks/xla/`` with XLA's
values, which ``tests/rehydrate/test_frameworks.py`` checks on every test run.

Manifest, per case: ``hlo`` (file name), ``args`` (``dtype``, ``shape``; ``name`` for fixture
cases; ``bits`` when stored as unsigned bits of an ml_dtypes type; ``scalar`` for a numpy
scalar), ``outputs`` (fixture cases: the output names), ``expect`` (``"pass"`` or ``{"error":
class name, "match": [...]}``), ``note``, ``grad`` (argument indices whose gradient is
checked), ``rtol``/``atol``, ``oracle`` (``"xla"``, the default; ``"stored"``: the values of
``expected.npz``, with ``oracle_source``; ``"none"``: nothing to compare with).

Needs numpy and ml_dtypes only (the generators run in venvs of their own).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    args: list[Any]
    arg_names: list[str]
    fixture: bool = False
    outputs: list[str] = field(default_factory=list)
    expect: Any = "pass"
    note: str = ""
    grad: list[int] | None = None
    rtol: float = 2e-4
    atol: float = 2e-5
    oracle: str = "xla"
    expected: list[Any] | None = None


def _dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def _decode(entry: dict[str, Any], raw: np.ndarray) -> Any:
    a = raw.view(_dtype(entry["dtype"])) if entry.get("bits") else raw
    assert a.dtype == _dtype(entry["dtype"]) and list(a.shape) == entry["shape"], entry
    return a[()] if entry.get("scalar") else a


def load_cases(folder: Path = HERE) -> dict[str, Case]:
    """Every case of the corpus, in the manifest's order."""
    manifest = json.loads((folder / "manifest.json").read_text())["cases"]
    with np.load(folder / "args.npz") as args, np.load(folder / "expected.npz") as expected:
        cases = {}
        for name, e in manifest.items():
            values = [_decode(a, args[f"{name}/{i}"]) for i, a in enumerate(e["args"])]
            want = None
            if e.get("oracle") == "stored":
                want = [_decode(w, expected[f"{name}/{i}"]) for i, w in enumerate(e["expected"])]
            cases[name] = Case(
                name=name,
                text=(folder / e["hlo"]).read_bytes().decode(),  # CRLF kept (a case)
                args=values,
                arg_names=[a.get("name", f"arg{i}") for i, a in enumerate(e["args"])],
                fixture=e.get("fixture", False),
                outputs=e.get("outputs", []),
                expect=e.get("expect", "pass"),
                note=e.get("note", ""),
                grad=e.get("grad"),
                rtol=e.get("rtol", 2e-4),
                atol=e.get("atol", 2e-5),
                oracle=e.get("oracle", "xla"),
                expected=want,
            )
    return cases
