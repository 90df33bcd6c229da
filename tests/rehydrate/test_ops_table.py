"""docs/ops.md lists every StableHLO and chlo op with its status; check it against RULES."""

from __future__ import annotations

import re
from pathlib import Path

from hlopipe.rehydrate import RULES

# | op | status | module | ...
ROW = re.compile(r"^\|\s*([\w\-., ]+?)\s*\|\s*(supported|limited|unsupported)\s*\|\s*(\w*)\s*\|")

DOC = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def _table() -> dict[str, tuple[str, str]]:
    """'stablehlo.abs' -> (status, module), from the doc's tables."""
    out: dict[str, tuple[str, str]] = {}
    dialect = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            title = line[3:].strip().lower()
            dialect = {"stablehlo": "stablehlo", "chlo": "chlo", "mhlo": "mhlo"}.get(title)
            continue
        m = ROW.match(line)
        if m and dialect:
            for short in m.group(1).split(","):  # a row may name several ops
                name = f"{dialect}.{short.strip()}"
                assert name not in out, f"{name} is listed twice"
                out[name] = (m.group(2), m.group(3))
    return out


def test_table_covers_the_spec() -> None:
    table = _table()
    assert sum(n.startswith("stablehlo.") for n in table) >= 110
    assert {"stablehlo.abs", "stablehlo.xor", "chlo.top_k"} <= set(table)


def test_supported_ops_have_rules() -> None:
    missing = [
        name
        for name, (status, _) in _table().items()
        if status in ("supported", "limited") and name not in RULES
    ]
    assert not missing, f"docs/ops.md marks these supported, but they have no rule: {missing}"


def test_every_rule_is_in_the_table() -> None:
    table = _table()
    unlisted = [
        name
        for name in RULES
        if name.startswith(("stablehlo.", "chlo.", "mhlo.")) and name not in table
    ]
    assert not unlisted, f"rules missing from docs/ops.md: {unlisted}"


def test_modules_match() -> None:
    table = _table()
    wrong = []
    for name, (status, module) in table.items():
        if status != "unsupported" and name in RULES:
            actual = RULES[name].__module__.rsplit(".", 1)[-1]
            if module and actual != module:
                wrong.append(f"{name}: table says {module}, rule is in {actual}")
    assert not wrong, "\n".join(wrong)
