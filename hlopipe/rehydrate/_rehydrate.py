"""`rehydrate`: a Program (or file) -> a JAX-traceable function."""

from __future__ import annotations

import functools
import os
from typing import Any

import jax
import numpy as np

from hlopipe.errors import HlopipeError, LoadError, RehydrateError
from hlopipe.io import Program, TokenType, load
from hlopipe.io._types import mlir_name
from hlopipe.rehydrate import ops as _ops  # noqa: F401  (registers every rule)
from hlopipe.rehydrate._interpreter import Interpreter, raise_if_unsupported
from hlopipe.rehydrate._ir import ModuleIR


def module_ir(program: Program) -> ModuleIR:
    """The program read into Python records (made once per program, then cached)."""
    mir = program.extra.get("ir")
    if mir is None:
        try:
            mir = ModuleIR(program.module, program.context, source=program.source)
        except HlopipeError:
            raise
        except Exception as e:
            raise LoadError(f"{program.source}: cannot read the module: {e}") from e
        program.extra["ir"] = mir
    return mir


def rehydrate(
    program: Program | str | bytes | os.PathLike[str],
    *,
    mesh: Any = None,
    axis: str | tuple[str, ...] | None = None,
    loops: str = "auto",
    check_args: bool = True,
) -> Any:
    """Turn an XLA program back into a JAX function by interpreting each op with ``jax.lax``.

    Args:
      program: a :class:`~hlopipe.io.Program`, or anything :func:`hlopipe.load` takes.
      mesh: a ``jax.sharding.Mesh`` for programs with collectives or sharding annotations.
      axis: the mesh axis (or axes) the program's partitions run along.
      loops: ``"auto"`` turns while loops with a static trip count into ``lax.scan`` (so
        reverse-mode works); ``"while"`` keeps every loop a ``lax.while_loop``.
      check_args: check argument count, shapes and dtypes at call time.

    Returns:
      ``f(*args)`` over the entry function's arguments (tokens left out), returning the single
      result or a tuple of results. ``jax.jit``, ``grad``, ``vjp``, ``jvp`` and ``vmap`` work.

    Raises:
      UnsupportedOpError: before anything runs, listing every op without a rule.

    Example:
      >>> f = hlopipe.rehydrate("model.hlo")
      >>> jax.grad(lambda *a: f(*a).sum())(*args)
    """
    if not isinstance(program, Program):
        program = load(program)
    mir = module_ir(program)
    raise_if_unsupported(mir, program.entry)
    if loops not in ("auto", "while"):
        raise ValueError("loops must be 'auto' or 'while'")
    func = mir.funcs[program.entry]
    interp = Interpreter(mir, mesh=mesh, axis=axis, loops=loops)
    in_avals = list(func.block.arg_avals)
    token_in = [isinstance(a, TokenType) for a in in_avals]
    user_avals = [a for a, t in zip(in_avals, token_in) if not t]
    out_token = [isinstance(a, TokenType) for a in _func_result_avals(func)]
    needs_x64 = _uses_64bit(mir)
    name = program.source.rsplit("/", 1)[-1]

    def rehydrated(*args: Any) -> Any:
        if needs_x64 and not jax.config.jax_enable_x64:
            raise RehydrateError(
                f"{name} uses 64-bit types but JAX's 64-bit mode is off: call "
                'jax.config.update("jax_enable_x64", True) before running it'
            )
        if check_args:
            _check_args(args, user_avals, name)
        it = iter(args)
        full = [_token() if t else next(it) for t in token_in]
        outs = interp.run(func, *full)
        outs = tuple(o for o, t in zip(outs, out_token) if not t)
        return outs[0] if len(outs) == 1 else outs

    functools.update_wrapper(rehydrated, _named(program.entry))
    rehydrated.program = program  # type: ignore[attr-defined]
    rehydrated.in_avals = user_avals  # type: ignore[attr-defined]
    return rehydrated


def _named(name: str) -> Any:
    def f() -> None: ...

    f.__name__ = f.__qualname__ = name
    return f


def _func_result_avals(func: Any) -> list[Any]:
    # The block's return values' types are the function's result types.
    avals: dict[int, Any] = {}
    for vid, aval in zip(func.block.args, func.block.arg_avals):
        avals[vid] = aval
    for op in func.block.ops:
        for vid, aval in zip(op.results, op.result_avals):
            avals[vid] = aval
    return [avals[v] for v in func.block.returns]


def _token() -> Any:
    return np.zeros((0,), dtype=bool)


def _uses_64bit(mir: ModuleIR) -> bool:
    wide = {np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)}

    def block_uses(block: Any) -> bool:
        for a in block.arg_avals:
            if getattr(a, "dtype", None) in wide:
                return True
        for op in block.ops:
            for a in op.result_avals:
                if getattr(a, "dtype", None) in wide:
                    return True
            for r in op.regions:
                if block_uses(r):
                    return True
        return False

    return any(block_uses(f.block) for f in mir.funcs.values())


def _fmt(a: Any) -> str:
    try:
        return f"{mlir_name(np.dtype(a.dtype))}[{','.join(map(str, a.shape))}]"
    except Exception:
        return f"{getattr(a, 'dtype', '?')}{list(getattr(a, 'shape', ()))}"


def _check_args(args: tuple, avals: list[Any], name: str) -> None:
    if len(args) != len(avals):
        raise RehydrateError(
            f"{name} takes {len(avals)} arguments ({', '.join(_fmt(a) for a in avals)}), "
            f"{len(args)} were given"
        )
    for i, (x, a) in enumerate(zip(args, avals)):
        shape = getattr(x, "shape", None)
        dtype = getattr(x, "dtype", None)
        if shape is None or dtype is None:
            raise RehydrateError(
                f"{name}: argument {i} is a {type(x).__name__}, expected an array {_fmt(a)}"
            )
        if tuple(shape) != tuple(a.shape) or np.dtype(dtype) != np.dtype(a.dtype):
            raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(a)}")
