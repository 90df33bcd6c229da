"""Which outputs of a program update which entry argument in place, by data flow.

An output updates argument ``a`` in place when it is a chain of ``dynamic_update_slice`` /
``scatter`` ops whose updated operand leads back to ``a`` through ops that only move a value
along: copies, reshapes, converts, bitcasts, identity transposes, ``optimization_barrier``, and
the bodies of ``mhlo.fusion`` ops and of ``func.call``-ed private functions (followed through
their block arguments). Anything else on the path (a select of two caches, an add) ends the
chain: data flow then says nothing about that output.
"""

from __future__ import annotations

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
    from jaxlib.mlir import ir

    with program.context:
        funcs = _functions(program.module, ir)
        func = program.entry_func
        block = func.regions[0].blocks[0]
        ret = _terminator(block)
        found: dict[int, int] = {}
        for out, value in enumerate(ret.operands):
            root = _root(value, block, funcs, ir, 0)
            if root is None or not root[1]:
                continue
            arg = root[0]
            if str(block.arguments[arg].type) == str(value.type):
                found[out] = arg
    counts: dict[int, int] = {}
    for arg in found.values():
        counts[arg] = counts.get(arg, 0) + 1
    return {o: a for o, a in found.items() if counts[a] == 1}


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


def _root(value: Any, block: Any, funcs: dict[str, Any], ir: Any, depth: int) -> Any:
    """``(argument number of block, updated on the way)`` where ``value`` comes from, or None."""
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
        elif name in _UPDATE:
            value, updated = op.operands[0], True
        elif name in _SCATTER:
            n_in = (len(op.operands) - 1) // 2
            if k >= n_in:
                return None
            value, updated = op.operands[k], True
        elif (name in _BODY or name == "func.call") and depth < 16:
            body = _body(op, funcs, ir)
            if body is None:
                return None
            inner = _root(_terminator(body).operands[k], body, funcs, ir, depth + 1)
            if inner is None or inner[0] >= len(op.operands):
                return None
            value, updated = op.operands[inner[0]], updated or inner[1]
        else:
            return None
    return None


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
