"""Which outputs of a program update which entry argument in place, by data flow.

An output updates argument ``a`` in place when it is a chain of ``dynamic_update_slice`` /
``scatter`` ops whose updated operand leads back to ``a`` through ops that only move a value
along: copies, reshapes, converts, bitcasts, identity transposes, ``optimization_barrier``, and
the bodies of ``mhlo.fusion`` ops and of ``func.call``-ed private functions (followed through
their block arguments). Anything else on the path (a select of two caches, an add) ends the
chain: data flow then says nothing about that output.

A **counter** is the other kind of in-place state: an integer output of shape ``[]`` or ``[1]``
computed from one entry argument of its own type and scalars only (``counter + 1``, with the
``1`` a constant or a scalar the framework lifted into an argument), where that argument also
indexes an in-place update of another argument. ``transformers``' ``StaticCache`` keeps one per
layer (``cumulative_length.add_(n)``): the position then lives in the state.
"""

from __future__ import annotations

import collections
import re
from typing import Any

# ops that hand result 0 on from operand 0 unchanged in content
_MOVE = {
    "stablehlo.reshape",
    "stablehlo.convert",
    "mhlo.copy",
    "mhlo.bitcast",
    "stablehlo.bitcast",
}
_UPDATE = {"stablehlo.dynamic_update_slice", "mhlo.dynamic_update_slice"}
_SCATTER = {"stablehlo.scatter", "mhlo.scatter"}
_BODY = {"mhlo.fusion"}
_MAX_STEPS = 100_000


def in_place_updates(program: Any) -> dict[int, int]:
    """``{output: argument}`` for each output of ``program``'s entry function that updates an
    entry argument of its own type in place (at least one update op on the way). An argument
    reached from two outputs is left out: data flow does not pair it."""
    return {o: a for o, (a, _) in update_chains(program).items()}


def index_reads(program: Any) -> dict[int, list[dict[int, dict[int, int]]]]:
    """What indexes each in-place update: ``{state argument: [per update op on its chain:
    {axis: {entry argument: distance}}]}``, the entry arguments each non-constant index of the
    update is computed from (``distance``: the fewest ops between the argument and the index;
    copies into and out of fusions and calls are free). A decode step's position is the
    argument every update reads (the axis it indexes is the cache's length axis)."""
    return {a: reads for a, reads in update_chains(program).values()}


def counter_updates(program: Any) -> dict[int, int]:
    """``{output: argument}`` for each counter of ``program`` (see the module docstring): an
    output left out when several arguments could be its counter (see :func:`counter_candidates`)."""
    return {o: c[0] for o, c in counter_candidates(program).items() if len(c) == 1}


def counter_candidates(program: Any) -> dict[int, list[int]]:
    """``{output: [arguments]}``: each integer ``[]`` / ``[1]`` output computed from arguments
    of its own type and scalars only, with the arguments of its type that index an in-place
    update (its counter when there is one; several: data flow does not tell which)."""
    from jaxlib.mlir import ir

    chains = update_chains(program)
    indexing = {a for _, reads in chains.values() for u in reads for s in u.values() for a in s}
    found: dict[int, list[int]] = {}
    with program.context:
        funcs = _functions(program.module, ir)
        block = program.entry_func.regions[0].blocks[0]
        args = block.arguments
        for out, value in enumerate(_terminator(block).operands):
            if not _is_counter_type(value.type) or isinstance(value.owner, ir.Block):
                continue
            srcs = _sources(value, ((block, None),), funcs, ir)
            mine = [a for a in srcs if str(args[a].type) == str(value.type)]
            other = [a for a in srcs if a not in mine]
            if not all(_is_scalar_type(args[a].type) for a in other):
                continue
            cands = sorted(a for a in mine if a in indexing)
            if cands:
                found[out] = cands
    return found


def output_sources(program: Any) -> list[set[int]]:
    """Per output of ``program``'s entry function, the entry arguments it is computed from."""
    from jaxlib.mlir import ir

    with program.context:
        funcs = _functions(program.module, ir)
        block = program.entry_func.regions[0].blocks[0]
        return [set(_sources(v, ((block, None),), funcs, ir))
                for v in _terminator(block).operands]  # fmt: skip


def _is_counter_type(t: Any) -> bool:
    """An integer tensor of shape ``[]`` or ``[1]`` (``tensor<i64>``, ``tensor<1xui32>``)."""
    return re.fullmatch(r"tensor<(1x)?[su]?i\d+>", str(t)) is not None


def _is_scalar_type(t: Any) -> bool:
    return re.fullmatch(r"tensor<[a-z]\w*>", str(t)) is not None


def update_chains(
    program: Any, indexers: set[int] | None = None
) -> dict[int, tuple[int, list[dict[int, dict[int, int]]]]]:
    """``{output: (argument, index reads of its update ops)}`` (see the two functions above);
    ``indexers``, when given, gets every argument an index of any update op on the way is
    computed from (a scatter's over several axes too, which the reads leave out)."""
    from jaxlib.mlir import ir

    found: dict[int, tuple[int, list[dict[int, dict[int, int]]]]] = {}
    with program.context:
        funcs = _functions(program.module, ir)
        block = program.entry_func.regions[0].blocks[0]
        for out, value in enumerate(_terminator(block).operands):
            seen: list[dict[int, dict[int, int]]] = []

            def on_update(op: Any, frames: tuple[Any, ...], seen: list[Any] = seen) -> None:
                seen.append({ax: _sources(v, frames, funcs, ir) for ax, v in _indices(op, ir)})
                if indexers is not None:
                    n_in = (len(op.operands) - 1) // 2
                    index = list(op.operands)[2:] if op.name in _UPDATE else [op.operands[n_in]]
                    indexers.update(a for v in index for a in _sources(v, frames, funcs, ir))

            root = _root(value, ((block, None),), funcs, ir, on_update)
            if root is None or not root[1]:
                continue
            if str(block.arguments[root[0]].type) == str(value.type):
                found[out] = (root[0], seen)
    counts: dict[int, int] = {}
    for arg, _ in found.values():
        counts[arg] = counts.get(arg, 0) + 1
    return {o: v for o, v in found.items() if counts[v[0]] == 1}


def _functions(module: Any, ir: Any) -> dict[str, Any]:
    out = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            out[ir.StringAttr(op.attributes["sym_name"]).value] = op
    return out


def _terminator(block: Any) -> Any:
    last = None
    for op in block.operations:
        last = op
    return last


def _root(
    value: Any, frames: tuple[Any, ...], funcs: dict[str, Any], ir: Any, on_update: Any
) -> Any:
    """``(argument number of the innermost frame's block, updated on the way)`` where ``value``
    comes from, or None. ``frames``: ``(block, op)`` from the entry (``op`` None) inward, the
    fusion or call whose body ``block`` is; ``on_update(op, frames)`` sees every update op."""
    block = frames[-1][0]
    updated = False
    for _ in range(_MAX_STEPS):
        if isinstance(value.owner, ir.Block):
            arg = ir.BlockArgument(value)
            return (arg.arg_number, updated) if arg.owner == block else None
        res = ir.OpResult(value)
        op = res.owner.operation
        name, k = op.name, res.result_number
        if name in _MOVE or (name == "stablehlo.transpose" and _identity(op, ir)):
            value = op.operands[0]
        elif name == "stablehlo.optimization_barrier":
            value = op.operands[k]
        elif name in _UPDATE or (name in _SCATTER and k < (len(op.operands) - 1) // 2):
            on_update(op, frames)
            value, updated = op.operands[k], True
        elif (name in _BODY or name == "func.call") and len(frames) < 16:
            body = _body(op, funcs, ir)
            if body is None:
                return None
            inner = _root(_terminator(body).operands[k], (*frames, (body, op)), funcs, ir,
                          on_update)  # fmt: skip
            if inner is None or inner[0] >= len(op.operands):
                return None
            value, updated = op.operands[inner[0]], updated or inner[1]
        else:
            return None
    return None


def _indices(op: Any, ir: Any) -> list[tuple[int, Any]]:
    """``(axis, index value)`` of an update op: a dynamic_update_slice's start indices, or a
    scatter's indices with the operand axes they index (one axis only)."""
    if op.name in _UPDATE:
        return list(enumerate(list(op.operands)[2:]))
    dims = re.search(r"scatter_dims_to_operand_dims = \[([\d, ]*)\]",
                     str(op.attributes["scatter_dimension_numbers"]))  # fmt: skip
    axes = [int(x) for x in dims.group(1).split(",") if x.strip()] if dims else []
    n_in = (len(op.operands) - 1) // 2
    return [(axes[0], op.operands[n_in])] if len(axes) == 1 else []


def _sources(value: Any, frames: tuple[Any, ...], funcs: dict[str, Any], ir: Any) -> dict[int, int]:
    """``{entry argument: distance}`` for every entry argument ``value`` is computed from; the
    distance counts the ops on the shortest path (moves into and out of bodies are free)."""
    found: dict[int, int] = {}
    todo: collections.deque[tuple[Any, tuple[Any, ...], int]] = collections.deque(
        [(value, frames, 0)]
    )
    seen: set[tuple[Any, Any]] = set()
    while todo and len(seen) < _MAX_STEPS:
        v, fr, d = todo.popleft()
        key = (v, fr[-1][1])
        if key in seen:
            continue
        seen.add(key)
        if isinstance(v.owner, ir.Block):
            arg = ir.BlockArgument(v)
            block, op = fr[-1]
            if arg.owner != block:
                continue  # a region's own argument (a reduction's, a loop's): no entry value
            if op is None:
                found[arg.arg_number] = min(d, found.get(arg.arg_number, d))
            elif arg.arg_number < len(op.operands):
                todo.appendleft((op.operands[arg.arg_number], fr[:-1], d))
            continue
        res = ir.OpResult(v)
        op = res.owner.operation
        body = _body(op, funcs, ir) if op.name in _BODY or op.name == "func.call" else None
        if body is not None and len(fr) < 16:
            todo.appendleft((_terminator(body).operands[res.result_number], (*fr, (body, op)), d))
            continue
        todo.extend((o, fr, d + 1) for o in op.operands)
    return found


def _identity(op: Any, ir: Any) -> bool:
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    return perm == list(range(len(perm)))


def _body(op: Any, funcs: dict[str, Any], ir: Any) -> Any:
    if op.name == "func.call":
        callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is None or not callee.regions[0].blocks:
            return None
        return callee.regions[0].blocks[0]
    if not op.regions or not op.regions[0].blocks:
        return None
    return op.regions[0].blocks[0]
