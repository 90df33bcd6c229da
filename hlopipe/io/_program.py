"""`Program`: an MLIR StableHLO module plus its entry signature."""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import Any

import jax
from jaxlib.mlir import ir

from hlopipe.errors import LoadError
from hlopipe.io import _xla
from hlopipe.io._types import TokenType, aval_of_type


@dataclass(eq=False)
class Program:
    """A loaded XLA program, normalised to a StableHLO module.

    Attributes:
      format: what was read: ``"hlo-text"``, ``"hlo-proto"``, ``"stablehlo-text"``,
        ``"mlir-bytecode"``, ``"vhlo-artifact"``, ``"jax-export"``; a dump folder gives
        ``"xla-dump/<format of the chosen file>"``.
      module: the StableHLO ``jaxlib.mlir.ir.Module`` (in its own context).
      entry: the entry function's name (``main`` for everything JAX and XLA emit).
      source: where it came from (a path or ``"<bytes>"``), used in error messages.
      hlo_proto: the serialized HloModuleProto when the input was HLO.
      exported: the ``jax.export.Exported`` of a ``"jax-export"`` artifact (its input and
        output trees, platforms), else ``None``.
      optimized: whether this is HLO after XLA's optimisation passes (``compile().as_text()``,
        an ``after_optimizations`` dump): XLA removes optimisation barriers when it compiles,
        so such a program has no stage markers left.
      device_counts: ``(replica_count, num_partitions)`` as HLO text's ``HloModule`` header
        declares them (``None`` for a count it leaves out); ``None`` for other formats.
      dump_file: the file of an XLA dump folder that was read, else ``None``.

    A program compares equal only to itself (it is hashed by identity), so other packages
    can key their own caches by it (``weakref.WeakKeyDictionary``) rather than store them
    on it.

    Example:
      >>> prog = hlopipe.load("model.hlo")
      >>> prog.in_avals, prog.out_avals
      >>> f = prog.as_function(); jax.jit(f)(*args)
    """

    format: str
    module: ir.Module
    context: ir.Context
    entry: str = "main"
    source: str = "<bytes>"
    hlo_proto: bytes | None = None
    exported: jax.export.Exported | None = None
    optimized: bool = False
    device_counts: tuple[int | None, int | None] | None = None
    dump_file: str | None = None
    # io's own state: the parsed HloModule (made when asked) and whether the functions the
    # entry never reaches were removed from ``module``
    _hlo_module: Any = field(default=None, init=False, repr=False)
    _unreachable_dropped: bool = field(default=False, init=False, repr=False)

    @property
    def hlo_module(self) -> Any:
        """The XLA HloModule when the input was HLO (parsed from ``hlo_proto`` when asked)."""
        if self._hlo_module is None and self.hlo_proto is not None:
            self._hlo_module = _xla.hlo_module_from_proto(self.hlo_proto)
        return self._hlo_module

    @hlo_module.setter
    def hlo_module(self, module: Any) -> None:
        self._hlo_module = module

    # ---- signature ----------------------------------------------------------------------------
    @property
    def entry_func(self) -> Any:
        return find_func(self.module, self.entry, self.context)

    @property
    def in_avals(self) -> list[jax.ShapeDtypeStruct | TokenType]:
        with self.context:
            ftype = ir.FunctionType(ir.TypeAttr(self.entry_func.attributes["function_type"]).value)
            return [aval_of_type(t) for t in ftype.inputs]

    @property
    def out_avals(self) -> list[jax.ShapeDtypeStruct | TokenType]:
        with self.context:
            ftype = ir.FunctionType(ir.TypeAttr(self.entry_func.attributes["function_type"]).value)
            return [aval_of_type(t) for t in ftype.results]

    @property
    def arg_names(self) -> list[str | None]:
        """A name per argument where the program carries one, else ``None``.

        A ``jax.export`` artifact names them by their path in its input tree
        (``"[0]['layers'][0]['w']"``); JAX's lowering puts the Python names on the entry's
        arguments as locations (``params['w']`` in StableHLO, ``params__w__`` in HLO text),
        which every format keeps. XLA's generic names (``Arg_0.1``, ``p0``) count as none.
        """
        in_tree: Any = self.exported.in_tree if self.exported is not None else None
        if in_tree is not None:
            tree = jax.tree_util.tree_unflatten(in_tree, range(in_tree.num_leaves))
            if isinstance(tree, tuple) and len(tree) == 2 and tree[1] == {}:
                tree = tree[0]  # (args, kwargs) without keywords: paths from the args
            paths = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_leaves_with_path(tree)]
            if len(paths) == len(self.in_avals):
                return list(paths)
        names: list[str | None] = []
        with self.context:
            for arg in self.entry_func.regions[0].blocks[0].arguments:
                m = _NAME_LOC.match(str(arg.location))
                name = m.group(1).replace('\\"', '"') if m else None
                if name is not None:
                    name = re.sub(r"\.\d+$", "", name)  # HLO's instruction suffix
                names.append(None if name is None or _GENERIC.match(name) else name)
        return names

    def top_level_args(self) -> list[int] | None:
        """For each flat argument, the top-level argument of the function it belongs to, when
        the program carries its input tree (a ``jax.export`` artifact of ``f(params, x, y)``
        gives ``[0, 0, ..., 1, 2]``; keyword arguments count after the positional ones);
        ``None`` for a program without a tree (or whose tree does not cover its arguments).

        Example:
          >>> hlopipe.load("loss.jax_export").top_level_args()     # doctest: +SKIP
          [0, 0, 0, 0, 1, 2]
        """
        tree: Any = self.exported.in_tree if self.exported is not None else None
        n = len(self.in_avals)
        if tree is None or tree.num_leaves != n:
            return None
        value = jax.tree_util.tree_unflatten(tree, range(n))
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
            args, kwargs = value  # the (args, kwargs) that jax.export flattens
            tops = [*args, *(kwargs[k] for k in sorted(kwargs))]
        else:
            tops = list(value) if isinstance(value, (tuple, list)) else [value]
        out = [0] * n
        for top, sub in enumerate(tops):
            for leaf in jax.tree_util.tree_leaves(sub):
                out[leaf] = top
        return out

    def arg_roles(self, *, state: Any = None, feedback: Any = None) -> Any:
        """Per argument: parameter, state (aliased to an output), feedback (fed from an
        output) or input, with the reason; ``state=`` / ``feedback=`` override what the
        program says. See :func:`hlopipe.io._roles.find_roles`.

        Example:
          >>> print(hlopipe.load("decode.bin").arg_roles())        # doctest: +SKIP
        """
        from hlopipe.io._roles import find_roles

        return find_roles(self, state=state, feedback=feedback)

    # ---- contents ---------------------------------------------------------------------------
    def op_counts(self, *, entry_only: bool = False) -> collections.Counter[str]:
        """How many times each op name occurs (in every function, or only those reachable)."""
        self.drop_unreachable()
        counts: collections.Counter[str] = collections.Counter()
        with self.context:
            roots = [self.entry_func] if entry_only else [self.module.operation]
            for root in roots:
                _count_ops(root, counts)
        return counts

    def stage_markers(self) -> int:
        """How many `hlopipe.stage_boundary` markers the program carries."""
        self.drop_unreachable()

        n = 0
        with self.context:

            def visit(op: Any) -> None:
                nonlocal n
                for region in op.regions:
                    for block in region.blocks:
                        for inner in block.operations:
                            inner = inner.operation
                            if inner.name in _MARKER_OPS and _has_marker(inner):
                                n += 1
                            visit(inner)

            for top in self.module.body.operations:
                visit(top)
        return n

    def drop_unreachable(self) -> None:
        """Remove the functions the entry never reaches, so that only the program is read.

        XLA keeps computations nobody calls (HLO text may hold dead helpers with bounded
        dynamic shapes, 64-bit types or custom calls hlopipe cannot run); they are no part of
        the program and must not make it refused. Every view of the program (``to_text``,
        ``op_counts``, ``stage_markers``, rehydration) calls this first; loading does not, to
        stay as fast as the bare parse, so ``module`` holds them until then.
        """
        if self._unreachable_dropped:
            return
        from hlopipe.io._load import drop_unreachable

        with self.context:
            drop_unreachable(self.module, self.entry)
        self._unreachable_dropped = True

    def to_text(self, dialect: str = "stablehlo") -> str:
        """The program as StableHLO text (``"stablehlo"``) or HLO text (``"hlo"``)."""
        if dialect == "stablehlo":
            self.drop_unreachable()
            with self.context:
                return str(self.module)
        if dialect == "hlo":
            return _xla.stablehlo_to_hlo_text(self.to_text("stablehlo"))
        raise ValueError(f"dialect must be 'stablehlo' or 'hlo', not {dialect!r}")

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost analysis of the (unoptimised) program: flops, bytes accessed, ..."""
        module = self.hlo_module
        if module is None:
            module = _xla.stablehlo_to_hlo_module(self.to_text("stablehlo"))
        return _xla.cost_analysis(module)

    # ---- rehydration ------------------------------------------------------------------------
    def as_function(self, *, flat: bool = False, **kwargs: Any):
        """The program as a JAX-traceable function.

        A ``jax.export`` artifact carries its input and output trees: the function then takes
        and returns those pytrees, as the exported function did (``f(params, batch)`` with
        the same dicts and tuples). Every other format, and ``flat=True``, gives a function
        of the flat positional arguments (the leaves, in order): one result gives the array,
        several give a tuple. Other keyword arguments go to
        :func:`hlopipe.rehydrate.rehydrate` (``mesh=``, ``axis=``, ``loops=``...).

        Example:
          >>> f = hlopipe.load("model.jax_export").as_function()   # doctest: +SKIP
          >>> loss = f(params, batch)                              # doctest: +SKIP
          >>> g = prog.as_function(flat=True)                      # doctest: +SKIP
          >>> loss = g(*jax.tree.leaves((params, batch)))          # doctest: +SKIP
        """
        from hlopipe.rehydrate import rehydrate

        fn = rehydrate(self, **kwargs)
        exp = self.exported
        in_tree: Any = exp.in_tree if exp is not None else None
        out_tree: Any = exp.out_tree if exp is not None else None
        if flat or in_tree is None or out_tree is None:
            return fn
        n_out = len(self.out_avals)
        if in_tree.num_leaves != len(self.in_avals) or out_tree.num_leaves != n_out:
            return fn  # extra arguments (tokens, platform index): only the flat form fits
        return _with_trees(fn, in_tree, out_tree, n_out, self.source)

    def to_python(self, *, style: str = "jnp", constants_file: str | None = None) -> str:
        """The program as readable JAX source: a module defining ``main(...)``.

        See :func:`hlopipe.decompile.decompile` (``style`` is ``"jnp"`` or ``"lax"``; with
        ``constants_file``, large constants are read from that ``.npz`` next to the module,
        which ``decompile(...).save(path)`` writes; without it they are written inline).

        Example:
          >>> src = hlopipe.load("model.pb").to_python()
        """
        from hlopipe.decompile import decompile

        return decompile(self, style=style, constants_file=constants_file).source

    def __repr__(self) -> str:
        ins = ", ".join(format_aval(a) for a in self.in_avals)
        outs = ", ".join(format_aval(a) for a in self.out_avals)
        return f"Program({self.format}, {self.source}, @{self.entry}({ins}) -> ({outs}))"


# loc("name") or loc("name"(callsite...)), not a file location loc("file.py":3:1)
_NAME_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"(?!:)')
_GENERIC = re.compile(r"^(Arg_\d+|arg\d+|p\d+|param(eter)?[._]?\d+|Arg_\d+\.\d+)$")


def _with_trees(fn: Any, in_tree: Any, out_tree: Any, n_out: int, source: str) -> Any:
    """``fn`` of flat leaves as a function of the pytrees ``(args, kwargs)`` -> ``out_tree``."""
    import functools

    from hlopipe.errors import RehydrateError

    @functools.wraps(fn)
    def tree_fn(*args: Any, **kw: Any) -> Any:
        leaves, tree = jax.tree_util.tree_flatten((args, kw))
        if tree != in_tree:
            raise RehydrateError(
                f"{source}: the arguments have the structure {tree}, the exported function "
                f"takes {in_tree}; or call as_function(flat=True) with the "
                f"{in_tree.num_leaves} leaves in order"
            )
        out = fn(*leaves)
        return jax.tree_util.tree_unflatten(out_tree, list(out) if n_out != 1 else [out])

    return tree_fn


#: The ops a stage marker is: JAX's attributed barrier; the attributed custom call of a marker
#: placed from PyTorch (``hlopipe.torch``).
_MARKER_OPS = ("stablehlo.optimization_barrier", "stablehlo.custom_call", "mhlo.custom_call")


def _has_marker(op: Any) -> bool:
    from hlopipe.marker import is_stage_boundary_attrs

    return is_stage_boundary_attrs(op)


def format_aval(a: Any) -> str:
    """An aval as MLIR writes its type's shape: ``f32[2,3]``, ``token``."""
    if isinstance(a, TokenType):
        return "token"
    from hlopipe.io._types import mlir_name

    return f"{mlir_name(a.dtype)}[{','.join(map(str, a.shape))}]"


def _count_ops(op: Any, counts: collections.Counter[str]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                counts[inner.name] += 1
                if len(inner.regions):
                    _count_ops(inner, counts)


def find_func(module: ir.Module, name: str, context: ir.Context) -> Any:
    with context:
        for top in module.body.operations:
            op = top.operation
            if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
                return op
    raise LoadError(f"the module has no function @{name}")


def pick_entry(module: ir.Module, context: ir.Context) -> str:
    """`main` when present, else the only public function."""
    publics, names = [], []
    with context:
        table = ir.SymbolTable(module.operation)  # a lookup in C++: the common case, fast
        if "main" in table and table["main"].operation.name == "func.func":
            return "main"
        for top in module.body.operations:
            op = top.operation
            if op.name != "func.func":
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            names.append(name)
            vis = op.attributes.get("sym_visibility", None)
            if vis is None or ir.StringAttr(vis).value == "public":
                publics.append(name)
    if "main" in names:
        return "main"
    if len(publics) == 1:
        return publics[0]
    if not names:
        raise LoadError("the module has no func.func: nothing to run")
    raise LoadError(
        f"cannot tell the entry function: no @main and {len(publics)} public functions "
        f"({', '.join(publics) or 'none'}); pass entry=NAME"
    )
