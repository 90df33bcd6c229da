"""`decompile`: a program back to a Python module of JAX source."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from hlopipe.decompile._emit import ATOM, Expr, Module, function_lines
from hlopipe.decompile._prims import _pack
from hlopipe.decompile._source import DecompileError, identifier
from hlopipe.errors import HlopipeError, UnsupportedOpError
from hlopipe.io import Program, TokenType, load

STYLES = ("jnp", "lax")


@dataclass
class Decompiled:
    """The generated module.

    Attributes:
      source: the Python source (formatted when ``ruff`` is available).
      constants: the arrays too large to write into the source, by name; the source loads
        them from ``constants_file`` (a ``.npz`` next to the ``.py``). Empty when every
        constant fits in the source.
      constants_file: the file name the source reads them from.
      function: the name of the entry function in the source.
    """

    source: str
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    constants_file: str | None = None
    function: str = "main"

    def save(self, path: str | os.PathLike[str]) -> list[Path]:
        """Write the ``.py`` (and its ``.npz`` when there are large constants) to ``path``."""
        path = Path(path)
        path.write_text(self.source)
        written = [path]
        if self.constants:
            npz = path.with_name(self.constants_file or path.stem + ".npz")
            np.savez(npz, **self.constants)  # type: ignore[arg-type]
            written.append(npz)
        return written


def decompile(
    program: Program | str | bytes | os.PathLike[str],
    *,
    style: str = "jnp",
    constants_file: str | None = None,
    source_constant_limit: int | None = None,
    formatted: bool = True,
) -> Decompiled:
    """Turn an XLA program into a readable Python module that defines ``main(...)``.

    The program is rehydrated (one ``jax.lax`` rule per op) and traced to a jaxpr; each
    equation is then written as the ``jax.lax`` call that makes it, loop and branch bodies as
    nested functions (``lax.scan``, ``lax.while_loop``, ``lax.cond``, ``lax.switch``), stage
    markers as ``hlopipe.stage_boundary``. With ``style="jnp"`` common patterns are folded into
    their idiomatic form where that is exact (``x @ w``, ``jnp.einsum``, broadcasting,
    ``.sum()``/``.mean()``/``.max()``, ``jnp.where``, ``jax.nn.relu``, softmax, layer norm).

    Args:
      program: a :class:`~hlopipe.io.Program`, or anything :func:`hlopipe.load` takes.
      style: ``"jnp"`` (folded, the default) or ``"lax"`` (one ``lax`` call per equation).
      constants_file: the ``.npz`` name the source loads large constants from (a file next to
        the module). ``None`` writes every constant into the source.
      source_constant_limit: arrays with more elements than this go to ``constants_file``
        (default 16; ignored without ``constants_file``).
      formatted: run ``ruff format`` over the source when ruff is installed.

    Returns:
      a :class:`Decompiled`; ``.source`` is the module, ``.save(path)`` writes it.

    Raises:
      DecompileError: the program uses something that has no JAX source (the message names
        it); UnsupportedOpError / LoadError as rehydration does.

    Example:
      >>> src = hlopipe.decompile("model.hlo").source
      >>> ns = {}; exec(src, ns); ns["main"](*args)
    """
    if style not in STYLES:
        raise DecompileError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    if not isinstance(program, Program):
        program = load(program)
    closed, n_args = _traced(program)
    limit = source_constant_limit if source_constant_limit is not None else 16
    mod = Module(style, limit if constants_file is not None else 1 << 62)
    mod.x64 = uses_64bit(closed.jaxpr)
    lines = _main_lines(mod, closed, argument_names(program, n_args))
    source = _module_text(program, mod, lines, constants_file)
    if formatted:
        source = format_source(source)
    return Decompiled(source, dict(mod.npz), constants_file if mod.npz else None)


def _traced(program: Program) -> tuple[Any, int]:
    """The program rehydrated and traced to a closed jaxpr; its number of arguments."""
    from hlopipe.rehydrate import rehydrate

    # the ops as they are: the derivative decisions of rehydration (custom_jvp wrappers) would
    # read as opaque nested functions; the source writes each op's plain call
    f = rehydrate(program, derivatives="literal")
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in f.in_avals]
    try:
        return jax.make_jaxpr(f)(*avals), len(avals)
    except HlopipeError:
        raise  # rehydration's own error says what and where
    except jax.errors.JAXTypeError as e:  # a value needed concretely while tracing abstractly
        raise DecompileError(f"{program.source}: cannot trace the program: {e}") from e


def _main_lines(mod: Module, closed: Any, arg_names: list[str]) -> list[str]:
    """The lines of ``main``, the entry function."""
    names = [mod.reserve(n) for n in arg_names]
    jaxpr = closed.jaxpr
    env = {v: Expr(n, ATOM, frozenset({v})) for v, n in zip(jaxpr.invars, names, strict=True)}
    mod.reserve("main")
    single = len(jaxpr.outvars) == 1
    lines, _ = function_lines(
        mod, "main", closed, names, [], env, (lambda r: r[0].text) if single else _pack
    )
    if mod.x64:
        # without 64-bit mode JAX would quietly compute in 32 bits: the function runs in a
        # 64-bit scope of its own, as the rehydrated one does, whatever the caller's mode
        lines[1:] = [_X64_SCOPE, *_indented(lines[1:])]
    return lines


_WIDE = {np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)}


def uses_64bit(jaxpr: Any) -> bool:
    """Whether any value of ``jaxpr`` (or of a jaxpr inside it) has a 64-bit type."""
    for v in [*jaxpr.invars, *jaxpr.outvars, *(o for e in jaxpr.eqns for o in e.outvars)]:
        if np.dtype(getattr(v.aval, "dtype", np.float32)) in _WIDE:
            return True
    for e in jaxpr.eqns:
        for p in e.params.values():
            for x in p if isinstance(p, (tuple, list)) else (p,):
                inner = getattr(x, "jaxpr", x)
                if hasattr(inner, "eqns") and uses_64bit(inner):
                    return True
    return False


def argument_names(program: Program, n: int) -> list[str]:
    """Names for the entry function's (non-token) arguments: the program's own where it has
    them (``jax.arg_info``, ``mhlo.name``, a named location), else ``arg0, arg1, ...``."""
    from jaxlib.mlir import ir

    found: list[str | None] = []
    with program.context:
        func = program.entry_func
        block = func.regions[0].blocks[0]
        try:
            arg_attrs = func.attributes["arg_attrs"]
        except KeyError:
            arg_attrs = None
        for i, arg in enumerate(block.arguments):
            if isinstance(_aval(arg.type), TokenType):
                continue
            name = None
            if arg_attrs is not None:
                d = ir.DictAttr(arg_attrs[i])
                for key in ("jax.arg_info", "mhlo.name", "tf.name"):
                    if key in d:
                        name = ir.StringAttr(d[key]).value
                        break
            if name is None:
                loc = str(arg.location)
                if loc.startswith('loc("') and loc.endswith('")'):
                    name = loc[5:-2]
            found.append(name)
    out = []
    for i in range(n):
        name = found[i] if i < len(found) else None
        if name:
            name = re.sub(r"\.\d+$", "", name)  # HLO's instruction-number suffix
        out.append(identifier(name) if name else f"arg{i}")
    if len(set(out)) != len(out):  # names that collapse to the same identifier
        out = [f"{o}_{i}" if out.count(o) > 1 else o for i, o in enumerate(out)]
    return out


def _aval(t: Any) -> Any:
    from hlopipe.io import aval_of_type

    try:
        return aval_of_type(t)
    except UnsupportedOpError:  # a tuple, an unranked tensor: no array to name
        return None


def _module_text(
    program: Program, mod: Module, main_lines: list[str], constants_file: str | None
) -> str:
    code = "\n".join(
        ["\n".join(fn) + "\n\n" for fn in mod.functions] + ["\n".join(main_lines)]
    ).strip()
    consts = "\n".join(f"{n} = {t}" for n, t in mod.constants)
    used = code + "\n" + consts
    imports = []
    if "jax." in used:
        imports.append("import jax")
    if "jnp." in used:
        imports.append("import jax.numpy as jnp")
    if "np." in used.replace("jnp.", ""):
        imports.append("import numpy as np")
    if "lax." in used:
        imports.append("from jax import lax")
    extra = ""
    if "hlopipe." in code:
        extra = "\nimport hlopipe  # stage_boundary: the pipeline stage marker (an identity)\n"
    header = f'"""Decompiled by hlopipe from {_doc_escape(program.source)} ({program.format}).'
    if len(header) > 97:  # a long path on its own line (ruff lets a line of one word be long)
        source = _doc_escape(program.source)
        header = f'"""Decompiled by hlopipe ({program.format}) from\n{source}\n'
    header += '"""\n'
    if mod.npz:
        imports = ["import pathlib", "", *imports]
        if "import numpy as np" not in imports:
            imports.insert(
                imports.index("from jax import lax")
                if "from jax import lax" in imports
                else len(imports),
                "import numpy as np",
            )
    parts = [header, "\n".join(imports) + "\n" + extra]
    if mod.npz:
        parts.append(
            f'_CONSTANTS = np.load(pathlib.Path(__file__).with_name("{constants_file}"))\n'
        )
    if consts and mod.x64:  # made in 64-bit mode, or 64-bit constants would be 32-bit ones
        parts.append(_X64_SCOPE.strip() + "\n" + "\n".join(_indented(consts.split("\n"))) + "\n")
    elif consts:
        parts.append(consts + "\n")
    parts.append("\n" + code + "\n")
    return "\n".join(parts)


_X64_SCOPE = "    with jax.enable_x64(True):"


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line if line.strip() else line for line in lines]


def _doc_escape(s: str) -> str:
    return s.replace("\\", "/").replace('"""', "'''")


def _ruff() -> str | None:
    exe = Path(sys.executable).with_name("ruff")
    if exe.exists():
        return str(exe)
    return shutil.which("ruff")


def format_source(source: str) -> str:
    """``ruff format`` (and ruff's import sorting) over ``source`` when ruff is installed."""
    ruff = _ruff()
    if ruff is None:
        return source
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "decompiled.py"
        path.write_text(source)
        base = [ruff, "--isolated"]
        try:
            subprocess.run(
                [*base, "check", "--fix", "--select", "I", "-q", str(path)],
                capture_output=True,
                timeout=60,
            )
            subprocess.run([*base, "format", "-q", str(path)], capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return source
        return path.read_text()


__all__ = ["STYLES", "DecompileError", "Decompiled", "decompile", "format_source"]
