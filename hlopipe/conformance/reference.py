"""The XLA reference: each test compiled by XLA itself, its checks evaluated on what XLA
computes (``hlopipe conformance --reference xla``).

XLA's compiler can kill the process on some inputs (SIGFPE folding an integer division by
zero), so the runner calls :func:`reference_xla` in a worker process (``workers.py``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hlopipe.conformance.files import referenced, split_modules, to_generic
from hlopipe.conformance.rules import CHECK_KINDS, CHECK_TARGETS, Recording, make_check
from hlopipe.errors import UnsupportedOpError

# a check of a test: (kind, its attributes, its number of operands, whether it is generated)
CheckSpec = tuple[str, dict, int, bool]


def reference_xla(text: str, evaluate: Any) -> tuple[str, str]:
    """Compile each test of the file ``text`` with XLA (its checks turned into the test
    function's results) and evaluate the checks on what XLA computes with ``evaluate``
    (``Recording -> str | None``). Returns (status, message)."""
    status, message = "pass", ""
    try:
        chunks = split_modules(text)
        if not chunks:
            return "skipped", "no test"
        for _, chunk in chunks:
            for name, kinds, module_text in reference_modules(to_generic(chunk)):
                rec = _checks_on(execute_xla(module_text), kinds, name)
                why = evaluate(rec)
                if why:
                    status, message = "fail", why
    except UnsupportedOpError as e:
        return "unsupported", str(e)
    except Exception as e:  # isolation: one file's crash is its result, the suite goes on
        return "error", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    return status, message


def _checks_on(outs: list[np.ndarray], kinds: list[CheckSpec], name: str) -> Recording:
    rec = Recording()
    k = 0
    for kind, attrs, nops, generated in kinds:
        actual = outs[k]
        expected = outs[k + 1] if nops > 1 else attrs.get("value")
        k += nops
        expected = None if expected is None else np.asarray(expected)
        rec.checks.append(make_check(kind, actual, expected, attrs, f"@{name}", generated))
    return rec


def reference_modules(text: str) -> list[tuple[str, list[CheckSpec], str]]:
    """For each test function of the module text: (name, its checks, a module in which
    ``@main`` is that function returning its checks' operands instead of checking them)."""
    from jaxlib.mlir import ir

    from hlopipe.io._xla import make_context

    out = []
    with make_context(), ir.Location.unknown():
        names = [
            name
            for name, ftype in _funcs(ir.Module.parse(text))
            if not ftype.inputs and not referenced(name, text)
        ]
        for name in names:
            module = ir.Module.parse(text)
            target = _keep_only(module, name, names)
            kinds = _checks_to_results(target)
            if re.search(r'"?(check|interpreter)\.', str(module).replace("@check.", "")):
                raise UnsupportedOpError("checks outside the test function")
            out.append((name, kinds, str(module)))
    return out


def _funcs(module: Any) -> list[tuple[str, Any]]:
    """(name, FunctionType) of each ``func.func`` of the module."""
    from jaxlib.mlir import ir

    out = []
    for op in module.body.operations:
        if op.operation.name == "func.func":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            out.append((name, ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)))
    return out


def _keep_only(module: Any, name: str, tests: list[str]) -> Any:
    """Erase the other tests from ``module`` and make ``name`` its public ``@main``; returns
    that function's op."""
    from jaxlib.mlir import ir

    target = None
    for op in list(module.body.operations):
        if op.operation.name != "func.func":
            continue
        fname = ir.StringAttr(op.attributes["sym_name"]).value
        if fname in tests and fname != name:
            op.operation.erase()
        elif fname == name:
            target = op.operation
        elif fname == "main":
            op.attributes["sym_name"] = ir.StringAttr.get("main_")
    assert target is not None
    target.attributes["sym_name"] = ir.StringAttr.get("main")
    target.attributes["sym_visibility"] = ir.StringAttr.get("public")
    if "res_attrs" in target.attributes:
        del target.attributes["res_attrs"]
    return target


def _checks_to_results(target: Any) -> list[CheckSpec]:
    """Turn the checks of the function ``target`` into its results (and drop probes)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func as func_d

    from hlopipe.rehydrate import attrs_from_text

    kinds: list[CheckSpec] = []
    values: list[Any] = []
    doomed = []
    ret = None
    for op in target.regions[0].blocks[0].operations:
        op = op.operation
        target_name = ""
        if op.name == "stablehlo.custom_call":
            target_name = ir.StringAttr(op.attributes["call_target_name"]).value
        if op.name in CHECK_KINDS or target_name in CHECK_TARGETS:
            kind = CHECK_KINDS.get(op.name) or target_name.removeprefix("check.")
            if kind == "expect_serialized_eq":
                raise UnsupportedOpError("expect_serialized_eq needs the interpreter's probes")
            attrs = attrs_from_text(op, op.name, None)  # type: ignore[arg-type]
            kinds.append((kind, attrs, len(op.operands), bool(target_name)))
            values.extend(op.operands)
            doomed.append(op)
        elif op.name in ("interpreter.probe", "interpreter.print"):
            op.results[0].replace_all_uses_with(op.operands[0])
            doomed.append(op)
        elif op.name.startswith("interpreter."):
            raise UnsupportedOpError(f"the XLA reference cannot run {op.name}")
        elif op.name == "func.return":
            ret = op
    assert ret is not None
    for op in doomed:
        # the older check custom calls return their verdict: XLA cannot compute it here
        if any(use.owner != ret for r in op.results for use in r.uses):
            raise UnsupportedOpError("the XLA reference cannot compute a check's verdict result")
    with ir.InsertionPoint(ret):
        func_d.ReturnOp(values)
    for op in [ret, *doomed]:
        op.erase()
    target.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([], [v.type for v in values])
    )
    return kinds


def execute_xla(module_text: str) -> list[np.ndarray]:
    """Compile the module with XLA on one CPU device, run it, return its results."""
    from hlopipe.io._xla import compile_stablehlo

    exe = compile_stablehlo(module_text)
    return [np.asarray(o) for o in exe.execute([])]
