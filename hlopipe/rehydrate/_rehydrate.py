"""`rehydrate`: a Program (or file) -> a JAX-traceable function."""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.io import Program, TokenType, load, mlir_name
from hlopipe.rehydrate import ops as _ops  # noqa: F401  (registers every rule)
from hlopipe.rehydrate._interpreter import Interpreter, raise_if_unsupported
from hlopipe.rehydrate._ir import Func, ModuleIR
from hlopipe.rehydrate._on_mesh import Signature, on_mesh
from hlopipe.rehydrate._outline import outline_manual_parts
from hlopipe.rehydrate._spmd import SpmdPlan, spmd_plan

# Each program read into records once, kept while the program lives (a ModuleIR holds the
# module, not the program, so an entry goes when its program does).
_MODULE_IRS: weakref.WeakKeyDictionary[Program, ModuleIR] = weakref.WeakKeyDictionary()


def module_ir(program: Program) -> ModuleIR:
    """The program read into Python records (made once per program, then cached)."""
    mir = _MODULE_IRS.get(program)
    if mir is None:
        program.drop_unreachable()  # dead computations are no part of the program
        mir = _MODULE_IRS[program] = ModuleIR(
            program.module, program.context, source=program.source
        )
    return mir


def rehydrate(
    program: Program | str | bytes | os.PathLike[str],
    *,
    mesh: Any = None,
    axis: str | tuple[str, ...] | None = None,
    loops: str = "auto",
    check_args: bool = True,
    partitioned: bool | None = None,
    in_specs: Sequence[Any] | None = None,
    out_specs: Sequence[Any] | None = None,
    derivatives: str = "framework",
) -> Any:
    """Turn an XLA program back into a JAX function by interpreting each op with ``jax.lax``.

    Args:
      program: a :class:`~hlopipe.io.Program`, or anything :func:`hlopipe.load` takes.
      mesh: a ``jax.sharding.Mesh`` for programs with collectives or sharding annotations: a
        global program's ``mhlo.sharding``/``sdy.sharding`` (arguments, results), ``@Sharding``
        calls and ``sdy.sharding_constraint`` become ``with_sharding_constraint``, and
        ``sdy.manual_computation`` a ``jax.shard_map``. Without a mesh, annotations are dropped
        and collectives refused, but an HLO program of one replica and one partition (declared,
        or XLA's defaults as in an HloModuleProto) runs on one device, as XLA runs it.
      axis: the mesh axis (or axes) the program's partitions run along.
      loops: ``"auto"`` turns while loops with a static trip count into ``lax.scan`` (so
        reverse-mode works); ``"while"`` keeps every loop a ``lax.while_loop``.
      check_args: check argument count, shapes and dtypes at call time.
      derivatives: ``"framework"`` (the default) differentiates as the program's framework
        does where differentiating the ops literally would not (an untaken ``select`` branch
        never poisons the gradient; ``max``/``min`` with a constant give the constant's side a
        tie: docs/ops.md, "Derivatives"); ``"literal"`` rehydrates every op as its plain
        ``jax.lax`` call (the decompiler's source reads so).
      partitioned: whether the program is per-device (SPMD-partitioned), as
        ``jax.jit(f).lower(...).compile().as_text()`` gives; ``None`` decides from the program
        (collectives, ``replica_id`` or ``partition_id`` outside any ``shard_map`` part). A
        per-device program runs under ``jax.shard_map`` over ``mesh`` on *global* arrays.
      in_specs, out_specs: for a per-device program, a ``PartitionSpec`` (or ``NamedSharding``)
        per argument / result, overriding the program's ``mhlo.sharding``. An argument with
        neither is replicated; a result with neither comes back with every device's value
        stacked on a new leading axis (``compiled.output_shardings`` gives the global ones).

    Returns:
      ``f(*args)`` over the entry function's arguments (tokens left out), returning the single
      result or a tuple of results. ``jax.jit``, ``grad``, ``vjp``, ``jvp`` and ``vmap`` work.

    Raises:
      UnsupportedOpError: before anything runs, listing every op without a rule.

    Example:
      >>> f = hlopipe.rehydrate("model.hlo")
      >>> jax.grad(lambda *a: f(*a).sum())(*args)
    """
    program, mir = _read(program)
    _check_options(loops, derivatives)
    plan = spmd_plan(program, mir, mesh, partitioned)
    mesh = plan.mesh if mesh is None else mesh
    interp = Interpreter(
        mir, mesh=mesh, axis=axis, loops=loops, sdy_meshes=plan.sdy_meshes, derivatives=derivatives
    )
    run, user_avals = _run_entry(program, interp, plan, mesh, axis, in_specs, out_specs)
    return _as_function(program, run, user_avals, check_args=check_args, x64=uses_64bit(mir))


def _read(program: Program | str | bytes | os.PathLike[str]) -> tuple[Program, ModuleIR]:
    """The program (loaded if need be) and its IR; every op without a rule refused."""
    if not isinstance(program, Program):
        program = load(program)
    mir = module_ir(program)
    raise_if_unsupported(mir, program.entry)
    return program, mir


def _check_options(loops: str, derivatives: str) -> None:
    if loops not in ("auto", "while"):
        raise ValueError("loops must be 'auto' or 'while'")
    if derivatives not in ("framework", "literal"):
        raise ValueError("derivatives must be 'framework' or 'literal'")


def _run_entry(
    program: Program,
    interp: Interpreter,
    plan: SpmdPlan,
    mesh: Any,
    axis: Any,
    in_specs: Sequence[Any] | None,
    out_specs: Sequence[Any] | None,
) -> tuple[Any, list[Any]]:
    """``run(*args)`` of the entry function on ``interp`` under the SPMD ``plan`` (tuple-typed
    arguments refused, ``sdy.manual_computation`` parts outlined on a mesh, tokens made and
    dropped), and the avals of the arguments a caller passes."""
    func = interp.module.funcs[program.entry]
    for i, aval in enumerate(func.block.arg_avals):
        if str(getattr(aval, "text", "")).startswith("tuple<"):
            raise UnsupportedOpError(
                f"{program.source}: argument {i} of @{program.entry} has the tuple type "
                f"{aval.text}: flatten it first (one argument per element)"
            )
    if mesh is not None and plan.boundary:
        func = outline_manual_parts(func)
    entry = _Entry.of(func)
    return on_mesh(interp, entry.runner, entry.signature, plan, mesh, axis, in_specs, out_specs)


@dataclass(frozen=True)
class _Entry:
    """The entry function and which of its arguments and results are tokens (a caller
    neither passes nor gets those)."""

    func: Func
    token_in: tuple[bool, ...]
    token_out: tuple[bool, ...]

    @classmethod
    def of(cls, func: Func) -> _Entry:
        token_in = tuple(isinstance(a, TokenType) for a in func.block.arg_avals)
        token_out = tuple(isinstance(a, TokenType) for a in _func_result_avals(func))
        return cls(func, token_in, token_out)

    @property
    def signature(self) -> Signature:
        def user(xs: Any, tokens: tuple[bool, ...]) -> tuple[Any, ...]:
            return tuple(x for x, t in zip(xs, tokens, strict=True) if not t)

        f = self.func
        return Signature(
            user(f.block.arg_avals, self.token_in),
            user(f.arg_attrs, self.token_in),
            user(_func_result_avals(f), self.token_out),
            user(f.result_attrs, self.token_out),
        )

    def runner(self, interp: Interpreter) -> Any:
        """``run(*args)``: the function on ``interp``, tokens made and dropped."""

        def run(*args: Any) -> tuple[Any, ...]:
            it = iter(args)
            full = [_token() if t else next(it) for t in self.token_in]
            outs = interp.run(self.func, *full)
            return tuple(o for o, t in zip(outs, self.token_out, strict=True) if not t)

        return run


def _as_function(
    program: Program, run: Any, user_avals: list[Any], *, check_args: bool, x64: bool
) -> Any:
    """The function :func:`rehydrate` returns: named after the entry, its arguments checked,
    in a 64-bit scope when the program has 64-bit types, one result or a tuple."""
    name = program.source.rsplit("/", 1)[-1]
    run_x64 = _in_x64_scope(run, user_avals, name) if x64 else None

    def rehydrated(*args: Any) -> Any:
        if run_x64 is not None and not jax.config.read("jax_enable_x64"):
            outs = run_x64(*args)
            return outs[0] if len(outs) == 1 else outs
        if check_args:
            _check_args(args, user_avals, name)
        outs = run(*args)
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
    for vid, aval in zip(func.block.args, func.block.arg_avals, strict=True):
        avals[vid] = aval
    for op in func.block.ops:
        for vid, aval in zip(op.results, op.result_avals, strict=True):
            avals[vid] = aval
    return [avals[v] for v in func.block.returns]


def _token() -> Any:
    return np.zeros((0,), dtype=bool)


def uses_64bit(mir: ModuleIR) -> bool:
    """Whether any value of the module has a 64-bit type (it then runs in a 64-bit scope)."""
    wide = _WIDE

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


_WIDE = {np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)}
# the dtype JAX's default (32-bit) mode gives a 64-bit one, e.g. at a jit boundary
_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _in_x64_scope(run: Any, avals: list[Any], name: str) -> Any:
    """``run`` for a program with 64-bit types, callable in JAX's default (32-bit) mode.

    The program runs under a ``jax.enable_x64(True)`` scope, jitted inside it so that every
    array it makes is traced there (an eager op would mix 32- and 64-bit buffers); jit, grad,
    vjp and vmap of the caller trace through the scope, and 64-bit results leave it as 64-bit
    arrays (the program's declared dtypes).

    A 64-bit argument is taken as it is when it comes as a 64-bit array (numpy, or a JAX array
    made in 64-bit mode): its values reach the program unchanged. Under the caller's own
    ``jit``/``grad`` in 32-bit mode, JAX has already made a 64-bit argument its 32-bit
    counterpart (int64 -> int32, float64 -> float32) before hlopipe sees it; that counterpart
    is widened, which is exact for every value it holds. Any other dtype is refused by name.
    (JAX itself truncates a numpy int64 argument at the boundary of a ``jax.jit`` in 32-bit
    mode, before any code inside can see it: to pass 64-bit values, call the rehydrated
    function directly -- it jits itself -- rather than through a ``jax.jit`` of your own.)
    """

    @jax.jit
    def inner(*args: Any) -> tuple[Any, ...]:
        return run(*args)

    def wrapped(*args: Any) -> tuple[Any, ...]:
        if len(args) != len(avals):
            _check_args(args, avals, name)  # raises: the count is wrong
        with jax.enable_x64(True):
            fixed = tuple(
                _widen_arg(x, a, i, name) for i, (x, a) in enumerate(zip(args, avals, strict=True))
            )
            return tuple(inner(*fixed))

    return wrapped


def _widen_arg(x: Any, aval: Any, i: int, name: str) -> Any:
    """Argument ``i`` as the program's 64-bit ``aval`` wants it (see :func:`_in_x64_scope`)."""
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or dtype is None:
        raise RehydrateError(
            f"{name}: argument {i} is a {type(x).__name__}, expected an array {_fmt(aval)}"
        )
    want = np.dtype(aval.dtype)
    got = np.dtype(dtype)
    if not _shape_fits(shape, aval.shape):
        raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(aval)}")
    if got == want:
        return x
    if want in _WIDE and got == _NARROW[want]:
        # exact: every value of the 32-bit counterpart is a value of the 64-bit type
        return jax.lax.convert_element_type(x, want)
    raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(aval)}")


def _shape_fits(shape: Any, want: Any) -> bool:
    """Whether an argument's shape is the type's (a dynamic ``?`` dimension, None, takes any
    size: the function is traced again for each)."""
    return len(shape) == len(want) and all(
        w is None or int(n) == w for n, w in zip(shape, want, strict=True)
    )


def _fmt(a: Any) -> str:
    """An argument or aval as ``f32[2,?]``; what is not an array as its type's name."""
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        return type(a).__name__
    dims = ",".join("?" if d is None else str(d) for d in a.shape)
    try:
        name = mlir_name(np.dtype(a.dtype))
    except (KeyError, TypeError):  # a dtype no XLA type has (strings, objects)
        name = str(a.dtype)
    return f"{name}[{dims}]"


def _check_args(args: tuple, avals: list[Any], name: str) -> None:
    if len(args) != len(avals):
        raise RehydrateError(
            f"{name} takes {len(avals)} arguments ({', '.join(_fmt(a) for a in avals)}), "
            f"{len(args)} were given"
        )
    for i, (x, a) in enumerate(zip(args, avals, strict=True)):
        shape = getattr(x, "shape", None)
        dtype = getattr(x, "dtype", None)
        if shape is None or dtype is None:
            raise RehydrateError(
                f"{name}: argument {i} is a {type(x).__name__}, expected an array {_fmt(a)}"
            )
        if not _shape_fits(shape, a.shape) or np.dtype(dtype) != np.dtype(a.dtype):
            raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(a)}")
