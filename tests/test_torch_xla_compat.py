"""Private torch_xla names (``torch_xla._XLAC``, a ``_``-name of a torch_xla module) live in
hlopipe/_torch_xla_compat.py only, within hlopipe (the fixture generators under scripts/ run
in a torch venv of their own and are outside it); the module imports no JAX."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "hlopipe" / "_torch_xla_compat.py"
PRIVATE = re.compile(r"\btorch_xla(?:\.\w+)*\._(?!_)\w+|\bfrom\s+torch_xla[\w.]*\s+import\s+_\w+")


def test_pattern_catches_the_private_forms() -> None:
    t = "torch_xla"  # split: this file holds no private name
    for bad in (f"{t}._XLAC._xla_get_tensor_id(x)", f"from {t} import _XLAC",
                f"{t}.core._foo"):  # fmt: skip
        assert PRIVATE.search(bad), bad
    assert not PRIVATE.search(f"import {t}.core.xla_model as xm; {t}.device(); {t}.__version__")


def test_private_torch_xla_names_only_in_the_compat_module() -> None:
    found = {
        str(p.relative_to(REPO)): PRIVATE.findall(p.read_text())
        for p in (REPO / "hlopipe").rglob("*.py")
        if p != COMPAT and PRIVATE.search(p.read_text())
    }
    assert not found, f"private torch_xla names outside {COMPAT.name}: {found}"
    assert PRIVATE.search(COMPAT.read_text())  # they are there
    assert not re.search(r"^\s*(import|from)\s+jax", COMPAT.read_text(), re.M)
