"""`Program`: an MLIR StableHLO module plus its entry signature."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import jax
from jaxlib.mlir import ir

from hlopipe.errors import LoadError
from hlopipe.io import _xla
from hlopipe.io._types import TokenType, aval_of_type


@dataclass
class Program:
    """A loaded XLA program, normalised to a StableHLO module.

    Attributes:
      format: what was read: ``"hlo-text"``, ``"hlo-proto"``, ``"stablehlo-text"``,
        ``"mlir-bytecode"``, ``"vhlo-artifact"``, ``"jax-export"``; a dump folder gives
        ``"xla-dump/<format of the chosen file>"``.
      module: the StableHLO ``jaxlib.mlir.ir.Module`` (in its own context).
      entry: the entry function's name (``main`` for everything JAX and XLA emit).
      source: where it came from (a path or ``"<bytes>"``), used in error messages.

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
    hlo_proto: bytes | None = None  # the serialized HloModuleProto when the input was HLO
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hlo_module(self) -> Any:
        """The XLA HloModule when the input was HLO (parsed from ``hlo_proto`` when asked)."""
        module = self.extra.get("hlo_module")
        if module is None and self.hlo_proto is not None:
            module = self.extra["hlo_module"] = _xla.hlo_module_from_proto(self.hlo_proto)
        return module

    @hlo_module.setter
    def hlo_module(self, module: Any) -> None:
        self.extra["hlo_module"] = module

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

    @property
    def optimized(self) -> bool:
        """Whether this is HLO after XLA's optimisation passes (``compile().as_text()``, an
        ``after_optimizations`` dump): XLA removes optimisation barriers when it compiles, so
        such a program has no stage markers left."""
        return bool(self.extra.get("optimized"))

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
                            if inner.name == "stablehlo.optimization_barrier" and _has_marker(
                                inner
                            ):
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
        if self.extra.get("dropped_unreachable"):
            return
        from hlopipe.io._load import drop_unreachable

        with self.context:
            drop_unreachable(self.module, self.entry)
        self.extra["dropped_unreachable"] = True

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
    def as_function(self, **kwargs: Any):
        """The program as a JAX-traceable function of its flat positional arguments.

        One result gives the array, several give a tuple. Keyword arguments go to
        :func:`hlopipe.rehydrate.rehydrate` (``mesh=``, ``axis=``, ``loops=``...).
        """
        from hlopipe.rehydrate import rehydrate

        return rehydrate(self, **kwargs)

    def __repr__(self) -> str:
        ins = ", ".join(_fmt_aval(a) for a in self.in_avals)
        outs = ", ".join(_fmt_aval(a) for a in self.out_avals)
        return f"Program({self.format}, {self.source}, @{self.entry}({ins}) -> ({outs}))"


def _has_marker(op: Any) -> bool:
    from hlopipe.marker import is_stage_boundary_attrs

    return is_stage_boundary_attrs(op)


def _fmt_aval(a: Any) -> str:
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
