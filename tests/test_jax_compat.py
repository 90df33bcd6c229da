"""Private jax/jaxlib names live in hlopipe/_jax_compat.py only; its version check and names."""

from __future__ import annotations

import re
import tomllib
import warnings
from pathlib import Path

import pytest

from hlopipe import _jax_compat
from hlopipe.errors import HlopipeError

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("hlopipe", "tests", "scripts", "benchmarks")
COMPAT = "hlopipe/_jax_compat.py"

# Any private module of jax or jaxlib (jax's `_src`, jaxlib's `_jax`, `_hlo`, ...), by dotted
# path or imported by name from the package; jax.core's `Tracer` and `ShapedArray` (no stable
# public home); and the legacy `interpreters` namespace of jax (ad, batching, mlir, ...).
PRIVATE = re.compile(
    r"\bjax\._src\b|\bjaxlib\._(?!_)\w+|\bfrom\s+jax(?:lib)?\s+import\s+\(?\s*_\w+"
    r"|\b(?:jax\.)?core\.(?:Tracer|ShapedArray)\b"
    r"|\bfrom\s+jax\.core\s+import\s+[^\n]*\b(?:Tracer|ShapedArray)\b"
    r"|\bjax\.interpreters\b|\bfrom\s+jax\s+import\s+[^\n]*\binterpreters\b"
)

# Files that may still hold private names (path -> how many): none.
ALLOWED: dict[str, int] = {}


def private_uses(text: str) -> list[str]:
    return [m.group(0) for m in PRIVATE.finditer(text)]


def test_pattern_catches_every_private_form() -> None:
    j, jl, t, s = "jax", "jaxlib", "Tracer", "ShapedArray"  # split: this file holds no private name
    bad = [
        f"from {j}._src import compiler",
        f"import {j}._src.interpreters.mlir as m",
        f"from {jl} import _hlo",
        f"from {jl} import (\n    _hlo,\n)",
        f"from {jl}._jax import DeviceList",
        f"isinstance(x, {j}.core.{t})",
        f"from {j}.core import {t}",
        f"{jl}._mlir_libs",
        f"from {j}.interpreters import ad, batching, mlir",
        f"from {j}.interpreters import mlir as jax_mlir",
        f"{j}.interpreters.mlir.register_lowering(p, rule)",
        f"from {j} import core, interpreters",
        f"{j}.core.{s}((2,), dtype)",
        f"from {j}.core import {s}",
    ]
    assert not private_uses(f"{jl}.__version__")
    for line in bad:
        assert private_uses(line), line
    good = [
        "from jax.extend import backend",
        "import jaxlib.mlir.ir",
        "from jax import lax",
        "from jax.extend import mlir",
        "from hlopipe._jax_compat import ShapedArray, mlir",
    ]
    for line in good:
        assert not private_uses(line), line


def test_no_private_jax_name_outside_jax_compat() -> None:
    found: dict[str, list[str]] = {}
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel == COMPAT or "/.venv/" in rel:
                continue
            uses = private_uses(path.read_text())
            if len(uses) > ALLOWED.get(rel, 0):
                found[rel] = uses
    assert not found, (
        "private jax/jaxlib names outside hlopipe/_jax_compat.py (add them there and import "
        f"them from it): {found}"
    )


def test_allowlist_is_not_stale() -> None:
    # An entry whose file no longer holds its private names must go (keeps the list short).
    for rel, n in ALLOWED.items():
        if n:
            assert len(private_uses((REPO / rel).read_text())) == n, rel


def test_compat_module_itself_holds_the_private_names() -> None:
    text = (REPO / COMPAT).read_text()
    j, jl = "jax", "jaxlib"
    assert f"{j}._src" in text and f"{jl}._hlo" in text and f"{jl}._jax" in text
    assert private_uses(text)


def test_every_exported_name_resolves_on_this_jax() -> None:
    for name in _jax_compat.__all__:
        assert getattr(_jax_compat, name) is not None, name
    for module, path, purpose in _jax_compat.PRIVATE_NAMES.values():
        assert _jax_compat.resolve(module, path, purpose) is not None
    # and they do what hlopipe uses them for
    text = "HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"
    module = _jax_compat.hlo_module_from_text(text)
    proto = module.as_serialized_hlo_module_proto()
    again = _jax_compat.hlo_module_from_proto(proto)
    assert again.to_string() == module.to_string()
    import jax
    import jax.numpy as jnp

    assert not _jax_compat.is_tracer(jnp.ones(2))
    seen: list[bool] = []
    jax.jit(lambda x: seen.append(_jax_compat.is_tracer(x)) or x)(jnp.ones(2))
    assert seen == [True]
    q, taus = _jax_compat.geqrf(jnp.eye(3))
    assert q.shape == (3, 3) and taus.shape == (3,)
    assert _jax_compat.distributed_client() is None  # no jax.distributed job in this process
    with _jax_compat.no_coordination_service():
        pass


def test_written_for_the_pinned_version() -> None:
    """The lock file `make` installs from pins the jax the private names were checked on, and
    pyproject.toml's range admits it."""
    locked = (REPO / "constraints.txt").read_text().splitlines()
    assert f"jax=={_jax_compat.JAX_VERSION}" in locked
    assert f"jaxlib=={_jax_compat.JAX_VERSION}" in locked
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for name in ("jax", "jaxlib"):
        (spec,) = [s for s in pyproject if re.split(r"[<>=!~ ]", s, maxsplit=1)[0] == name]
        low, high = re.fullmatch(rf"{name}>=([\d.]+),<([\d.]+)", spec).groups()
        version = tuple(map(int, _jax_compat.JAX_VERSION.split(".")))
        assert tuple(map(int, low.split("."))) <= version < tuple(map(int, high.split(".")))


def test_same_version_does_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jax_compat, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _jax_compat.check_jax_version(_jax_compat.JAX_VERSION)


def test_other_version_warns_once_saying_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    monkeypatch.setattr(_jax_compat, "_warned", False)
    monkeypatch.setattr(jax, "__version__", "0.11.0")
    with pytest.warns(_jax_compat.JaxVersionWarning) as record:
        assert not _jax_compat.check_jax_version()
    msg = str(record[0].message)
    assert "0.11.0" in msg and _jax_compat.JAX_VERSION in msg
    assert "hlopipe/_jax_compat.py" in msg and "jaxlib" + "._hlo" in msg
    assert _jax_compat.BARRIER_EXPANDER_PASS in msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _jax_compat.check_jax_version()  # once per process


def test_missing_name_raises_naming_it_and_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    monkeypatch.setattr(jax, "__version__", "0.11.0")
    with pytest.raises(HlopipeError, match=r"jax 0\.11\.0 .*no jaxlib\._hlo\.gone.*hlo parsing"):
        _jax_compat.resolve("jaxlib" + "._hlo", "gone", "hlo parsing")
    with pytest.raises(HlopipeError, match=r"no jax\.nonexistent_module"):
        _jax_compat.resolve("jax.nonexistent_module", "")


def test_marker_pass_name_comes_from_compat() -> None:
    import hlopipe.marker

    assert hlopipe.marker.KEEP_MARKERS["xla_disable_hlo_passes"] == (
        _jax_compat.BARRIER_EXPANDER_PASS
    )
