"""`rehydrate`: a Program (or file) -> a JAX-traceable function."""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hlopipe.errors import HlopipeError, LoadError, RehydrateError, UnsupportedOpError
from hlopipe.io import Program, TokenType, load
from hlopipe.io._types import mlir_name
from hlopipe.rehydrate import ops as _ops  # noqa: F401  (registers every rule)
from hlopipe.rehydrate._interpreter import Interpreter, raise_if_unsupported
from hlopipe.rehydrate._ir import Block, Func, ModuleIR, Op, OpaqueAttr, _free_values, _liveness


def module_ir(program: Program) -> ModuleIR:
    """The program read into Python records (made once per program, then cached)."""
    mir = program.extra.get("ir")
    if mir is None:
        program.drop_unreachable()  # dead computations are no part of the program
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
    partitioned: bool | None = None,
    in_specs: Sequence[Any] | None = None,
    out_specs: Sequence[Any] | None = None,
) -> Any:
    """Turn an XLA program back into a JAX function by interpreting each op with ``jax.lax``.

    Args:
      program: a :class:`~hlopipe.io.Program`, or anything :func:`hlopipe.load` takes.
      mesh: a ``jax.sharding.Mesh`` for programs with collectives or sharding annotations.
      axis: the mesh axis (or axes) the program's partitions run along.
      loops: ``"auto"`` turns while loops with a static trip count into ``lax.scan`` (so
        reverse-mode works); ``"while"`` keeps every loop a ``lax.while_loop``.
      check_args: check argument count, shapes and dtypes at call time.
      partitioned: whether the program is a per-device (SPMD-partitioned) program, as
        ``jax.jit(f).lower(...).compile().as_text()`` gives. ``None`` decides from the
        program: collectives, ``replica_id`` or ``partition_id`` outside any
        ``shard_map`` part make it per-device. A per-device program runs under
        ``jax.shard_map`` over ``mesh`` and takes and returns *global* arrays.
      in_specs: for a per-device program, a ``PartitionSpec`` (or ``NamedSharding``) per
        argument, overriding the program's ``mhlo.sharding`` (arguments without either are
        replicated).
      out_specs: likewise per result. A result with neither an ``mhlo.sharding`` nor an
        out_spec comes back with every device's value stacked on a new leading axis (pass
        ``compiled.output_shardings`` to get the original's global results).

    With a mesh, sharding annotations of a global program (``mhlo.sharding`` /
    ``sdy.sharding`` on arguments and results, ``@Sharding`` custom calls,
    ``sdy.sharding_constraint``) become ``with_sharding_constraint`` and
    ``sdy.manual_computation`` becomes ``jax.shard_map``; without one the annotations are
    dropped and a program with collectives is refused.

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
    spmd = _spmd_plan(program, mir, mesh, axis, partitioned)
    if mesh is not None and spmd.boundary:
        func = outline_manual_parts(func)
    interp = Interpreter(
        mir, mesh=mesh, axis=axis, loops=loops, spmd=None, sdy_meshes=spmd.sdy_meshes
    )
    in_avals = list(func.block.arg_avals)
    token_in = [isinstance(a, TokenType) for a in in_avals]
    user_avals = [a for a, t in zip(in_avals, token_in) if not t]
    result_avals = _func_result_avals(func)
    out_token = [isinstance(a, TokenType) for a in result_avals]
    needs_x64 = _uses_64bit(mir)
    name = program.source.rsplit("/", 1)[-1]

    def run(*args: Any) -> tuple[Any, ...]:
        it = iter(args)
        full = [_token() if t else next(it) for t in token_in]
        outs = interp.run(func, *full)
        return tuple(o for o, t in zip(outs, out_token) if not t)

    if mesh is not None and spmd.per_device:
        run, user_avals = _per_device(
            run, func, mesh, axis, spmd, token_in, out_token, in_specs, out_specs, interp
        )
    elif mesh is not None:
        run = _constrained(run, func, mesh, axis, token_in, out_token, interp)

    run_x64 = _in_x64_scope(run, user_avals, name) if needs_x64 else None

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
    for vid, aval in zip(func.block.args, func.block.arg_avals):
        avals[vid] = aval
    for op in func.block.ops:
        for vid, aval in zip(op.results, op.result_avals):
            avals[vid] = aval
    return [avals[v] for v in func.block.returns]


def _token() -> Any:
    return np.zeros((0,), dtype=bool)


def _uses_64bit(mir: ModuleIR) -> bool:
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
            fixed = tuple(_widen_arg(x, a, i, name) for i, (x, a) in enumerate(zip(args, avals)))
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
    if tuple(shape) != tuple(aval.shape):
        raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(aval)}")
    if got == want:
        return x
    if want in _WIDE and got == _NARROW[want]:
        # exact: every value of the 32-bit counterpart is a value of the 64-bit type
        return jax.lax.convert_element_type(x, want)
    raise RehydrateError(f"{name}: argument {i} is {_fmt(x)}, expected {_fmt(aval)}")


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


# ---- meshes: per-device programs and sharding annotations -------------------------------------


@dataclass
class _SpmdPlan:
    per_device: bool = False
    boundary: bool = False
    num_partitions: int | None = None
    num_replicas: int | None = None
    sdy_meshes: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)


def _spmd_plan(program: Program, mir: ModuleIR, mesh: Any, axis: Any, partitioned: Any) -> Any:
    """What the program needs of a mesh: whether it runs per device, its replica and
    partition counts, its Shardy meshes. Refuses collectives without a mesh, before running."""
    from hlopipe.rehydrate.ops import collectives as coll

    plan = _SpmdPlan()
    found = _collective_uses(mir, program.entry)
    plan.boundary = found["boundary"]
    if mesh is None:
        if found["any"] or found["boundary"]:
            what, loc = found["any"] or found["boundary"]
            raise UnsupportedOpError(
                f"{program.source} is a multi-device program ({what} at {loc}): rehydrate "
                "with mesh=... axis=... (a jax.sharding.Mesh and the axis its devices run "
                "along) to run it"
            )
        return plan
    with program.context:
        attrs = program.module.operation.attributes
        for key, dest in (
            ("mhlo.num_partitions", "num_partitions"),
            ("mhlo.num_replicas", "num_replicas"),
        ):
            if key in attrs:
                setattr(plan, dest, int(str(attrs[key]).split(":")[0]))
        if "mhlo.frontend_attributes" in attrs:
            text = str(attrs["mhlo.frontend_attributes"])
            for m in re.finditer(r"(\w+)\s*=\s*#sdy.mesh<\[([^\]]*)\]>", text.replace("\\22", '"')):
                plan.sdy_meshes[m.group(1)] = coll.parse_sdy_mesh(m.group(2))
        for top in program.module.body.operations:
            mop = top.operation
            if mop.name == "sdy.mesh":
                sym = str(mop.attributes["sym_name"]).strip('"')
                plan.sdy_meshes[sym] = coll.parse_sdy_mesh(str(mop.attributes["mesh"]))
    if plan.num_partitions is None and program.hlo_module is not None:
        header = program.hlo_module.to_string().split("\n", 1)[0]
        parts = re.search(r"num_partitions=(\d+)", header)
        plan.num_partitions = int(parts.group(1)) if parts else None
        reps = re.search(r"replica_count=(\d+)", header)
        plan.num_replicas = int(reps.group(1)) if reps else (1 if plan.num_partitions else None)
    if partitioned is None:
        plan.per_device = bool(found["top"]) and not found["boundary"]
    else:
        plan.per_device = bool(partitioned)
    return plan


def _collective_uses(mir: ModuleIR, entry: str) -> dict[str, Any]:
    """The first collective anywhere ("any"), the first outside shard_map parts ("top"), and
    whether the program has manual-part boundaries (custom calls) ("boundary")."""
    from hlopipe.rehydrate.ops import collectives as coll

    found: dict[str, Any] = {"any": None, "top": None, "boundary": None}
    seen: set[str] = set()
    spmd_ops = coll.COLLECTIVE_OPS | coll.DEVICE_ID_OPS

    def visit(block: Any, manual: bool) -> None:
        for op in block.ops:
            if op.name in spmd_ops or op.name == "sdy.manual_computation":
                found["any"] = found["any"] or (op.name, op.loc)
                if op.name != "sdy.manual_computation" and not manual:
                    found["top"] = found["top"] or (op.name, op.loc)
            target = op.attrs.get("call_target_name")
            if op.name == "stablehlo.custom_call" and target in coll.MANUAL_BOUNDARIES:
                found["boundary"] = found["boundary"] or (f"custom call @{target}", op.loc)
            if op.name == "func.call":
                callee = op.attrs.get("callee")
                if callee in mir.funcs and callee not in seen:
                    seen.add(callee)
                    visit(mir.funcs[callee].block, manual)
            inner = manual or op.name == "sdy.manual_computation"
            for region in op.regions:
                visit(region, inner)

    seen.add(entry)
    visit(mir.funcs[entry].block, False)
    return found


def _spec_list(specs: Any, n: int) -> list[Any]:
    from jax.sharding import PartitionSpec, Sharding

    if specs is None:
        return [None] * n
    if isinstance(specs, PartitionSpec | Sharding):  # one spec (a PartitionSpec is a tuple)
        return [specs]
    return list(specs)


def _as_spec(s: Any) -> Any:
    from jax.sharding import NamedSharding, PartitionSpec

    if s is None or isinstance(s, PartitionSpec):
        return s
    if isinstance(s, NamedSharding):
        return s.spec
    raise TypeError(f"expected a PartitionSpec or NamedSharding, got {type(s).__name__}")


def _attr_spec(attrs: dict[str, Any], ndim: int, hlo_axes: Any, amap: Any) -> Any:
    """The PartitionSpec of an argument's / result's sharding attributes, or None."""
    from hlopipe.rehydrate.ops import collectives as coll

    if "mhlo.sharding" in attrs:
        return coll.hlo_sharding_spec(str(attrs["mhlo.sharding"]), ndim, hlo_axes)
    sdy = attrs.get("sdy.sharding")
    if sdy is not None:
        parsed = coll.parse_sdy_shardings(coll._attr_text(sdy))
        if parsed:
            return amap.spec(*parsed[0])
    return None


def _per_device(
    run: Any,
    func: Any,
    mesh: Any,
    axis: Any,
    plan: Any,
    token_in: list[bool],
    out_token: list[bool],
    in_specs: Any,
    out_specs: Any,
    interp: Any,
) -> tuple[Any, list[Any]]:
    """Wrap a per-device program in ``jax.shard_map``: global arrays in and out."""
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec

    from hlopipe.rehydrate.ops import collectives as coll

    axes = coll.mesh_axes(mesh, axis)
    spmd = coll.make_spmd(mesh, axes, plan.num_partitions, plan.num_replicas)
    hlo_axes = [(a, int(mesh.shape[a])) for a in axes]
    amap = coll.AxisMap(plan.sdy_meshes, mesh, axis)
    arg_attrs = [a for a, t in zip(func.arg_attrs, token_in) if not t]
    arg_avals = [a for a, t in zip(func.block.arg_avals, token_in) if not t]
    res_attrs = [a for a, t in zip(func.result_attrs, out_token) if not t]
    res_avals = [a for a, t in zip(_func_result_avals(func), out_token) if not t]
    user_in = _spec_list(in_specs, len(arg_avals))
    user_out = _spec_list(out_specs, len(res_avals))
    if len(user_in) != len(arg_avals) or len(user_out) != len(res_avals):
        raise RehydrateError(
            f"in_specs/out_specs need {len(arg_avals)}/{len(res_avals)} entries, got "
            f"{len(user_in)}/{len(user_out)}"
        )
    ispecs = []
    for u, attrs, aval in zip(user_in, arg_attrs, arg_avals):
        spec = _as_spec(u)
        if spec is None:
            spec = _attr_spec(attrs, len(aval.shape), hlo_axes, amap)
        ispecs.append(spec if spec is not None else PartitionSpec())
    stacked = []
    ospecs = []
    for u, attrs, aval in zip(user_out, res_attrs, res_avals):
        spec = _as_spec(u)
        if spec is None:
            spec = _attr_spec(attrs, len(aval.shape), hlo_axes, amap)
        stacked.append(spec is None)
        ospecs.append(spec if spec is not None else PartitionSpec(spmd.axis_name))
    global_avals = [_global_aval(a, s, mesh) for a, s in zip(arg_avals, ispecs)]

    def per_device(*args: Any) -> tuple[Any, ...]:
        saved = interp.options.get("spmd")
        interp.options["spmd"] = spmd
        try:
            outs = run(*args)
        finally:
            interp.options["spmd"] = saved
        return tuple(jnp.expand_dims(o, 0) if s else o for o, s in zip(outs, stacked))

    mapped = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=tuple(ispecs),
        out_specs=tuple(ospecs),
        check_vma=False,
    )

    def run_global(*args: Any) -> tuple[Any, ...]:
        return tuple(mapped(*args))

    return run_global, global_avals


def _global_aval(aval: Any, spec: Any, mesh: Any) -> Any:
    shape = list(aval.shape)
    for i, entry in enumerate(tuple(spec)):
        if entry is None:
            continue
        names = (entry,) if isinstance(entry, str) else tuple(entry)
        shape[i] *= math.prod(int(mesh.shape[n]) for n in names)
    return jax.ShapeDtypeStruct(tuple(shape), aval.dtype)


def _constrained(
    run: Any,
    func: Any,
    mesh: Any,
    axis: Any,
    token_in: list[bool],
    out_token: list[bool],
    interp: Any,
) -> Any:
    """A global program under a mesh: its argument and result shardings become constraints."""
    from hlopipe.rehydrate.ops import collectives as coll

    axes = coll.mesh_axes(mesh, axis)
    hlo_axes = [(a, int(mesh.shape[a])) for a in axes]
    amap = coll.AxisMap(interp.options.get("sdy_meshes") or {}, mesh, axis)
    arg_attrs = [a for a, t in zip(func.arg_attrs, token_in) if not t]
    arg_avals = [a for a, t in zip(func.block.arg_avals, token_in) if not t]
    res_attrs = [a for a, t in zip(func.result_attrs, out_token) if not t]
    res_avals = [a for a, t in zip(_func_result_avals(func), out_token) if not t]
    ispecs = [_attr_spec(a, len(v.shape), hlo_axes, amap) for a, v in zip(arg_attrs, arg_avals)]
    ospecs = [_attr_spec(a, len(v.shape), hlo_axes, amap) for a, v in zip(res_attrs, res_avals)]
    if all(s is None for s in ispecs + ospecs):
        return run

    def run_constrained(*args: Any) -> tuple[Any, ...]:
        args = tuple(a if s is None else coll.constrain(a, mesh, s) for a, s in zip(args, ispecs))
        outs = run(*args)
        return tuple(o if s is None else coll.constrain(o, mesh, s) for o, s in zip(outs, ospecs))

    return run_constrained


# ---- manual parts of a global program (shard_map lowered without Shardy) -------------------------

_ENTER = ("SPMDFullToShardShape", "xla.sdy.GlobalToLocalShape")
_EXIT = ("SPMDShardToFullShape", "xla.sdy.LocalToGlobalShape")


def _target(op: Any) -> str | None:
    if op.name != "stablehlo.custom_call":
        return None
    return op.attrs.get("call_target_name")


def outline_manual_parts(func: Func) -> Func:
    """The function with the ops between ``SPMDFullToShardShape`` (or Shardy's
    ``xla.sdy.GlobalToLocalShape``) and ``SPMDShardToFullShape`` (``LocalToGlobalShape``)
    moved into one ``hlopipe.manual_computation`` op, which runs them under ``shard_map``.
    Shardy's boundaries carry tuples; the ``get_tuple_element`` ops on them become the
    region's arguments and the outlined op's results. The cached function is left as it is."""
    block = func.block
    if not any(_target(op) in _ENTER for op in block.ops):
        return func
    avals: dict[int, Any] = dict(zip(block.args, block.arg_avals))
    producer: dict[int, Op] = {}
    for op in block.ops:
        for vid, aval in zip(op.results, op.result_avals):
            avals[vid] = aval
            producer[vid] = op
    enter_tuple: dict[int, tuple[Op, list[Any]]] = {}  # tuple value -> (its op, specs)
    exit_tuple: dict[int, tuple[Op, list[Any]]] = {}
    manual: set[int] = set()
    inner: list[Op] = []
    moved: set[int] = set()  # ids of the ops that leave the outer block
    args: list[int] = []
    operands: list[int] = []
    in_specs: list[Any] = []
    returns: list[int] = []
    results: list[int] = []
    out_specs: list[Any] = []
    for op in block.ops:
        t = _target(op)
        first = op.operands[0] if op.operands else None
        if t in _ENTER:
            moved.add(id(op))
            specs = _boundary_specs(op, producer, "in")
            if isinstance(op.result_avals[0], OpaqueAttr):
                enter_tuple[op.results[0]] = (op, specs)
            else:
                args.append(op.results[0])
                operands.append(op.operands[0])
                in_specs.append(specs[0])
                manual.add(op.results[0])
        elif op.name == "stablehlo.get_tuple_element" and first in enter_tuple:
            src, specs = enter_tuple[first]
            i = int(op.attrs["index"])
            moved.add(id(op))
            args.append(op.results[0])
            operands.append(src.operands[i])
            in_specs.append(specs[i])
            manual.add(op.results[0])
        elif t in _EXIT:
            moved.add(id(op))
            specs = _boundary_specs(op, producer, "out")
            if isinstance(op.result_avals[0], OpaqueAttr):
                exit_tuple[op.results[0]] = (op, specs)
            else:
                returns.append(op.operands[0])
                results.append(op.results[0])
                out_specs.append(specs[0])
        elif op.name == "stablehlo.get_tuple_element" and first in exit_tuple:
            src, specs = exit_tuple[first]
            i = int(op.attrs["index"])
            moved.add(id(op))
            returns.append(src.operands[i])
            results.append(op.results[0])
            out_specs.append(specs[i])
        elif any(v in manual or v in enter_tuple for v in (*op.operands, *op.captures)):
            moved.add(id(op))
            inner.append(op)
            manual.update(op.results)
    rest = [op for op in block.ops if id(op) not in moved]
    for op in rest:
        if any(v in manual or v in enter_tuple or v in exit_tuple for v in op.operands):
            raise UnsupportedOpError(
                f"{op.name} at {op.loc} uses a per-device value outside its manual part"
            )
    if (manual | set(enter_tuple) | set(exit_tuple)) & set(block.returns):
        raise UnsupportedOpError(f"@{func.name} returns a per-device value of a manual part")
    # values of the global program the manual part reads are passed in whole (replicated)
    tmp = Block(tuple(args), tuple(avals[a] for a in args), inner, tuple(returns), "")
    for vid in sorted(_free_values([tmp])):
        args.append(vid)
        operands.append(vid)
        in_specs.append("{replicated}")
    region = Block(
        tuple(args), tuple(avals[a] for a in args), inner, tuple(returns), "stablehlo.return"
    )
    _liveness(region)
    outlined = Op(
        "hlopipe.manual_computation",
        tuple(operands),
        tuple(results),
        {"in_specs": in_specs, "out_specs": out_specs},
        (region,),
        region.ops[0].loc if region.ops else func.loc,
        tuple(avals[r] for r in results),
        tuple(avals[o] for o in operands),
    )
    ops = _toposort([*rest, outlined], set(block.args))
    new = Block(block.args, block.arg_avals, ops, block.returns, block.terminator)
    _liveness(new)
    return Func(func.name, new, func.loc, func.arg_attrs, func.result_attrs)


def _boundary_specs(op: Op, producer: dict[int, Op], side: str) -> list[Any]:
    """Per value, the sharding of a manual-part boundary: an HLO sharding string or a
    ``("sdy", text)`` pair."""
    t = _target(op)
    if t in ("xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"):
        fa = op.attrs.get("mhlo.frontend_attributes") or {}
        text = fa.get(f"xla.sdy.{side}_shardings")
        if text is None:
            raise UnsupportedOpError(f"{t} at {op.loc} without xla.sdy.{side}_shardings")
        from hlopipe.rehydrate.ops import collectives as coll

        return [("sdy", ref, dims) for ref, dims in coll.parse_sdy_shardings(str(text))]
    if side == "in":
        src = producer.get(op.operands[0])
        if src is not None and _target(src) == "Sharding" and "mhlo.sharding" in src.attrs:
            return [str(src.attrs["mhlo.sharding"])]
        return ["{replicated}"]
    return [str(op.attrs.get("mhlo.sharding", "{replicated}"))]


def _toposort(ops: list[Op], ready: set[int]) -> list[Op]:
    ready = set(ready)
    defined_by = {r for op in ops for r in op.results}
    pending = list(ops)
    out: list[Op] = []
    while pending:
        for i, op in enumerate(pending):
            needs = (*op.operands, *op.captures)
            if all(v in ready or v not in defined_by for v in needs):
                out.append(op)
                ready.update(op.results)
                del pending[i]
                break
        else:
            raise UnsupportedOpError("cannot order the program around its manual parts (a cycle)")
    return out
