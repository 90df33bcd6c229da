"""The manual (per-device) parts of a global program, outlined: the ops between
``SPMDFullToShardShape`` and ``SPMDShardToFullShape`` (or Shardy's ``xla.sdy`` boundaries)
become one ``hlopipe.manual_computation`` op that runs its region under ``shard_map``
(a ``shard_map`` lowered without Shardy looks like this).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import Block, Func, Op, OpaqueAttr, _free_values, _liveness
from hlopipe.rehydrate._sharding_text import parse_sdy_shardings

# ---- manual parts of a global program (shard_map lowered without Shardy) -----------------------

_ENTER = ("SPMDFullToShardShape", "xla.sdy.GlobalToLocalShape")
_EXIT = ("SPMDShardToFullShape", "xla.sdy.LocalToGlobalShape")


def _target(op: Any) -> str | None:
    if op.name != "stablehlo.custom_call":
        return None
    return op.attrs.get("call_target_name")


class _Side:
    """One side of a manual part: the values that cross it, paired inside / outside, with
    their shardings. Shardy's boundaries carry tuples; their elements cross one by one."""

    def __init__(self, name: str):
        self.name = name  # "in" or "out"
        self.inside: list[int] = []
        self.outside: list[int] = []
        self.specs: list[Any] = []
        self.tuples: dict[int, tuple[Op, list[Any]]] = {}  # tuple value -> (its op, specs)

    def cross(self, op: Op, producer: dict[int, Op]) -> int | None:
        """A boundary custom call; returns the value it makes inside (None for a tuple)."""
        specs = _boundary_specs(op, producer, self.name)
        if isinstance(op.result_avals[0], OpaqueAttr):
            self.tuples[op.results[0]] = (op, specs)
            return None
        return self._add(op.operands[0], op.results[0], specs[0])

    def cross_element(self, gte: Op) -> int:
        """A ``get_tuple_element`` of a boundary's tuple; returns the value made inside."""
        src, specs = self.tuples[gte.operands[0]]
        i = int(gte.attrs["index"])
        return self._add(src.operands[i], gte.results[0], specs[i])

    def _add(self, before: int, after: int, spec: Any) -> int:
        # before/after the boundary op: entering, "after" is inside; leaving, "before" is
        inside, outside = (after, before) if self.name == "in" else (before, after)
        self.inside.append(inside)
        self.outside.append(outside)
        self.specs.append(spec)
        return inside


@dataclass
class _ManualPart:
    enter: _Side = field(default_factory=lambda: _Side("in"))
    exit: _Side = field(default_factory=lambda: _Side("out"))
    ops: list[Op] = field(default_factory=list)  # the ops inside, in order
    moved: set[int] = field(default_factory=set)  # ids of the ops that leave the outer block
    manual: set[int] = field(default_factory=set)  # values inside

    def per_device(self, vids: Sequence[int]) -> bool:
        return any(
            v in self.manual or v in self.enter.tuples or v in self.exit.tuples for v in vids
        )


def _find_manual_part(block: Block, producer: dict[int, Op]) -> _ManualPart:
    """The boundary ops of ``block``'s manual part and the ops between them."""
    part = _ManualPart()
    for op in block.ops:
        t = _target(op)
        first = op.operands[0] if op.operands else None
        is_gte = op.name == "stablehlo.get_tuple_element"
        if t in _ENTER:
            inside = part.enter.cross(op, producer)
            part.manual.update(() if inside is None else (inside,))
        elif is_gte and first in part.enter.tuples:
            part.manual.add(part.enter.cross_element(op))
        elif t in _EXIT:
            part.exit.cross(op, producer)
        elif is_gte and first in part.exit.tuples:
            part.exit.cross_element(op)
        elif any(v in part.manual or v in part.enter.tuples for v in (*op.operands, *op.captures)):
            part.ops.append(op)
            part.manual.update(op.results)
        else:
            continue
        part.moved.add(id(op))
    return part


def _outlined_op(func: Func, part: _ManualPart, avals: dict[int, Any]) -> Op:
    """The ``hlopipe.manual_computation`` op that runs ``part`` under ``shard_map``."""
    args, operands = list(part.enter.inside), list(part.enter.outside)
    in_specs = list(part.enter.specs)
    returns, results = tuple(part.exit.inside), tuple(part.exit.outside)
    # values of the global program the manual part reads are passed in whole (replicated)
    tmp = Block(tuple(args), tuple(avals[a] for a in args), part.ops, returns, "")
    for vid in sorted(_free_values([tmp])):
        args.append(vid)
        operands.append(vid)
        in_specs.append("{replicated}")
    region = Block(
        tuple(args), tuple(avals[a] for a in args), part.ops, returns, "stablehlo.return"
    )
    _liveness(region)
    return Op(
        "hlopipe.manual_computation",
        tuple(operands),
        results,
        {"in_specs": in_specs, "out_specs": list(part.exit.specs)},
        (region,),
        region.ops[0].loc if region.ops else func.loc,
        tuple(avals[r] for r in results),
        tuple(avals[o] for o in operands),
    )


def outline_manual_parts(func: Func) -> Func:
    """The function with the ops between ``SPMDFullToShardShape`` (or Shardy's
    ``xla.sdy.GlobalToLocalShape``) and ``SPMDShardToFullShape`` (``LocalToGlobalShape``)
    moved into one ``hlopipe.manual_computation`` op, which runs them under ``shard_map``.
    Shardy's boundaries carry tuples; the ``get_tuple_element`` ops on them become the
    region's arguments and the outlined op's results. The cached function is left as it is."""
    block = func.block
    if not any(_target(op) in _ENTER for op in block.ops):
        return func
    avals: dict[int, Any] = dict(zip(block.args, block.arg_avals, strict=True))
    producer: dict[int, Op] = {}
    for op in block.ops:
        for vid, aval in zip(op.results, op.result_avals, strict=True):
            avals[vid] = aval
            producer[vid] = op
    part = _find_manual_part(block, producer)
    rest = [op for op in block.ops if id(op) not in part.moved]
    for op in rest:
        if part.per_device(op.operands):
            raise UnsupportedOpError(
                f"{op.name} at {op.loc} uses a per-device value outside its manual part"
            )
    if part.per_device(block.returns):
        raise UnsupportedOpError(f"@{func.name} returns a per-device value of a manual part")
    ops = toposort([*rest, _outlined_op(func, part, avals)])
    new = Block(block.args, block.arg_avals, ops, block.returns, block.terminator)
    _liveness(new)
    return Func(func.name, new, func.loc, func.arg_attrs, func.result_attrs)


def _boundary_specs(op: Op, producer: dict[int, Op], side: str) -> list[Any]:
    """Per value, the sharding of a manual-part boundary: an HLO sharding string or a
    ``("sdy", ref, dims)`` triple."""
    t = _target(op)
    if t in ("xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"):
        fa = op.attrs.get("mhlo.frontend_attributes") or {}
        text = fa.get(f"xla.sdy.{side}_shardings")
        if text is None:
            raise UnsupportedOpError(f"{t} at {op.loc} without xla.sdy.{side}_shardings")
        return [("sdy", ref, dims) for ref, dims in parse_sdy_shardings(str(text))]
    if side == "in":
        src = producer.get(op.operands[0])
        if src is not None and _target(src) == "Sharding" and "mhlo.sharding" in src.attrs:
            return [str(src.attrs["mhlo.sharding"])]
        return ["{replicated}"]
    return [str(op.attrs.get("mhlo.sharding", "{replicated}"))]


def toposort(ops: list[Op]) -> list[Op]:
    """``ops`` ordered so each comes after the ops whose results it uses (operands and values
    its regions capture); among the ops that may come next, the earliest in ``ops`` does.
    Kahn's algorithm with a heap: O(n log n) in the ops, plus their operands."""
    index_of = {r: i for i, op in enumerate(ops) for r in op.results}
    users: list[list[int]] = [[] for _ in ops]
    waiting = [0] * len(ops)
    for i, op in enumerate(ops):
        deps = {index_of[v] for v in (*op.operands, *op.captures) if v in index_of}
        deps.discard(i)
        waiting[i] = len(deps)
        for d in deps:
            users[d].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    out: list[Op] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(ops[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(ops):
        raise UnsupportedOpError("cannot order the program around its manual parts (a cycle)")
    return out
