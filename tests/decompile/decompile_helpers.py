"""Shared by the decompiler's tests: import generated source, count equations, compare."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import jax
import numpy as np

import hlopipe
from hlopipe.decompile import Decompiled, decompile

RUFF = Path(sys.executable).with_name("ruff")
PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def equations(closed: Any) -> int:
    """Equations JAX runs: those of every loop and branch body, a call (jit, custom_jvp) as
    one."""
    n = 0
    for e in closed.jaxpr.eqns if hasattr(closed, "jaxpr") else closed.eqns:
        n += 1
        if e.primitive.name in ("scan", "while", "cond"):
            for v in e.params.values():
                for x in v if isinstance(v, tuple) else (v,):
                    if hasattr(x, "jaxpr") and hasattr(x, "consts"):
                        n += equations(x.jaxpr)
    return n


def load_module(d: Decompiled, tmp: Path) -> Any:
    """Save the generated module (and its .npz) under ``tmp`` and import it."""
    name = f"decompiled_{uuid.uuid4().hex[:8]}"
    path = tmp / f"{name}.py"
    d.save(path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def from_source(d: Decompiled) -> Any:
    """``main`` of a module with no constants file, run from its text."""
    ns: dict[str, Any] = {}
    exec(compile(d.source, "<decompiled>", "exec"), ns)
    return ns["main"]


def as_tuple(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def program_of(f: Any, *args: Any) -> hlopipe.Program:
    return hlopipe.load(jax.jit(f).lower(*args).as_text())


def ruff_errors(source: str, tmp: Path) -> str:
    """What ``ruff check`` says about ``source`` (empty when it passes), with ruff's defaults
    and with this project's own settings (``pyproject.toml``: its rules, 100 columns)."""
    path = tmp / "check_me.py"
    path.write_text(source)
    out = []
    for settings in (["--isolated"], ["--config", str(PYPROJECT)]):
        r = subprocess.run(
            [str(RUFF), "check", "-q", *settings, str(path)],
            capture_output=True,
            text=True,
        )
        if r.returncode:
            out.append(r.stdout + r.stderr)
    return "\n".join(out)


def assert_close(got: Any, want: Any, rtol: float = 1e-6) -> None:
    got, want = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


__all__ = ["decompile"]
