"""Tests that cannot pass without checking: no test skips when one of the project's own
modules fails to import, and every expected failure is strict and names the exception it
expects, so that an xfail whose reason no longer holds (the test passes, or fails some other
way) fails the suite.

The lists of known failures (``tests/rehydrate/spec_sweep_failures.txt``,
``tests/conformance/conformance_failures.txt``) are checked by their own tests: a listed case
that passes fails them."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SOURCES = sorted(TESTS.rglob("*.py"))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else "?"


def _where(path: Path, node: ast.AST) -> str:
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{name}:{getattr(node, 'lineno', 0)}"


def importorskips_of_ours(paths: list[Path]) -> list[str]:
    """``pytest.importorskip`` of an ``hlopipe`` module (or of a name not written out)."""
    bad = []
    for path in paths:
        for n in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(n, ast.Call) and _dotted(n.func).endswith("importorskip")):
                continue
            arg = n.args[0] if n.args else None
            mod = arg.value if isinstance(arg, ast.Constant) else None
            if not isinstance(mod, str) or mod.split(".")[0] == "hlopipe":
                bad.append(f"{_where(path, n)}: importorskip({mod!r})")
    return bad


def loose_xfails(paths: list[Path]) -> list[str]:
    """``pytest.xfail()`` calls (a run-time xfail cannot be strict), ``pytest.mark.xfail``
    without ``raises=`` and ``reason=`` or with ``strict=False``, and bare ``@...xfail``."""
    bad = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and _dotted(n.func) in ("pytest.xfail", "xfail"):
                bad.append(f"{_where(path, n)}: pytest.xfail() (use a strict mark, or fix it)")
            elif isinstance(n, ast.Call) and _dotted(n.func).endswith("mark.xfail"):
                kw = {k.arg: k.value for k in n.keywords}
                if not {"raises", "reason"} <= kw.keys():
                    bad.append(f"{_where(path, n)}: xfail without raises= and reason=")
                if isinstance(kw.get("strict"), ast.Constant) and not kw["strict"].value:
                    bad.append(f"{_where(path, n)}: xfail(strict=False)")
            for d in getattr(n, "decorator_list", []):
                if isinstance(d, ast.Attribute) and d.attr == "xfail":
                    bad.append(f"{_where(path, d)}: bare @pytest.mark.xfail")
    return bad


def test_no_importorskip_of_our_own_package():
    """A test that skips when ``hlopipe.x`` fails to import would pass with the package broken."""
    bad = importorskips_of_ours(SOURCES)
    assert not bad, "import the project's own modules directly:\n" + "\n".join(bad)


def test_every_xfail_is_strict_and_names_its_exception():
    """With ``xfail_strict`` on and ``raises=`` given, an xfail whose reason no longer holds
    (the test passes, or fails with another exception) fails the suite."""
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini.get("xfail_strict") is True, "pyproject.toml: xfail_strict = true"
    bad = loose_xfails(SOURCES)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("snippet", "check"),
    [
        ('pytest.importorskip("hlopipe.io")', importorskips_of_ours),
        ("pytest.importorskip(name)", importorskips_of_ours),
        ('pytest.xfail("no rule yet")', loose_xfails),
        ('pytest.mark.xfail(reason="r")', loose_xfails),
        ('pytest.mark.xfail(raises=E, reason="r", strict=False)', loose_xfails),
    ],
)
def test_the_scans_find_what_they_forbid(snippet, check, tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(f"import pytest\n\n\ndef test_x():\n    {snippet}\n")
    assert len(check([path])) == 1


def test_the_scans_pass_what_they_allow(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text(
        "import pytest\n\n\n@pytest.mark.xfail(raises=KeyError, reason='r')\ndef test_x():\n"
        "    pytest.importorskip('matplotlib')\n"
    )
    assert importorskips_of_ours([path]) == [] and loose_xfails([path]) == []


def _literal_set(path: Path, name: str) -> set[str]:
    assigns = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.Assign)]
    (node,) = [n for n in assigns if _dotted(n.targets[0]) == name]
    value = node.value.args[0] if isinstance(node.value, ast.Call) else node.value
    return set(ast.literal_eval(value))  # frozenset({...}) or (...)


def test_the_slow_modules_and_tests_exist():
    """``make test-fast`` leaves out the modules and tests tests/conftest.py lists: a renamed
    one would quietly join the fast tier (or, of LONGEST_FIRST, quietly run last again)."""
    modules = _literal_set(TESTS / "conftest.py", "SLOW_MODULES")
    modules |= _literal_set(TESTS / "conftest.py", "NUMERIC_MODULES")
    tests = _literal_set(TESTS / "conftest.py", "SLOW_TESTS")
    longest = _literal_set(TESTS / "conftest.py", "LONGEST_FIRST")
    assert len(modules) > 10 and tests and longest
    tests |= longest
    missing = sorted(m for m in modules if not (TESTS / m).is_file())
    for entry in tests:
        module, name = entry.split("::")
        path = TESTS / module
        defined = path.is_file() and any(
            isinstance(n, ast.FunctionDef) and n.name == name
            for n in ast.walk(ast.parse(path.read_text()))
        )
        missing += [] if defined else [entry]
    assert not missing, f"tests/conftest.py's test lists name nothing: {missing}"
