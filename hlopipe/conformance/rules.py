"""The rules of the test dialects: ``check.*`` ops and ``@check.*`` custom calls record what
they see, ``interpreter.probe`` records values, ``interpreter.run_parallel`` runs a grid of
processes on a CPU mesh.

They live in tables of their own (:data:`RULES`, :data:`CUSTOM_CALLS`), never in
rehydration's global ones: :func:`dialect_scope` makes them visible to the interpreters that
run inside it (:func:`hlopipe.rehydrate.registry.scoped_rules`), so ``scan_unsupported`` and
rehydration elsewhere answer the same whether this package was imported or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from hlopipe.conformance.results import Check
from hlopipe.errors import HlopipeError, UnsupportedOpError
from hlopipe.rehydrate import is_float
from hlopipe.rehydrate.custom_calls import scoped_custom_calls
from hlopipe.rehydrate.registry import Rule, RuleContext, scoped_rules

RULES: dict[str, Rule] = {}
CUSTOM_CALLS: dict[str, Rule] = {}

CHECK_KINDS = {
    "check.expect_eq": "expect_eq",
    "check.expect_eq_const": "expect_eq",
    "check.eq": "expect_eq",
    "check.expect_almost_eq": "expect_almost_eq",
    "check.expect_almost_eq_const": "expect_almost_eq",
    "check.almost_eq": "expect_almost_eq",
    "check.expect_close": "expect_close",
    "check.expect_serialized_eq": "expect_serialized_eq",
}
CHECK_TARGETS = (
    "check.expect_eq",
    "check.expect_close",
    "check.expect_almost_eq",
    # the older testdata's form: ``%ok = stablehlo.custom_call @check.eq(%a, %b) : (...) ->
    # tensor<i1>``, the verdict returned
    "check.eq",
    "check.almost_eq",
)


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return deco


@contextlib.contextmanager
def dialect_scope() -> Iterator[None]:
    """Within: interpreters resolve the ``check`` / ``interpreter`` ops and ``@check.*``."""
    with scoped_rules(RULES), scoped_custom_calls(CUSTOM_CALLS):
        yield


# ---- recording ------------------------------------------------------------------------------


@dataclass
class Recording:
    """What the checks and probes of one test run saw."""

    checks: list[Check] = field(default_factory=list)
    probes: dict[str, list[np.ndarray]] = field(default_factory=dict)


# the recordings of the runs in progress (innermost last); rules append to the last
_RECORDER: list[Recording] = []


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Within: the check rules record into the recording this yields."""
    rec = Recording()
    _RECORDER.append(rec)
    try:
        yield rec
    finally:
        _RECORDER.pop()


def _current(what: str, loc: str) -> Recording:
    if not _RECORDER:
        raise UnsupportedOpError(
            f"{what} at {loc} is a test assertion: run the file with 'hlopipe conformance'"
        )
    return _RECORDER[-1]


def num(value: Any, kind: Callable[[Any], Any]) -> Any:
    """An attribute's value as ``kind`` (int, float), or None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def make_check(
    kind: str, actual: Any, expected: Any, attrs: dict, loc: str, generated: bool = False
) -> Check:
    """A :class:`Check` of ``kind`` with the op's attributes read as its parameters."""
    probe = None
    if kind == "expect_serialized_eq":
        probe = (str(attrs.get("probe_id", "")), int(attrs.get("iteration", 0)))
    return Check(
        kind,
        actual,
        expected,
        tolerance=num(attrs.get("tolerance"), float),
        max_ulp=num(attrs.get("max_ulp_difference"), int),
        min_ulp=num(attrs.get("min_ulp_difference"), int),
        probe=probe,
        loc=loc,
        generated=generated,
    )


def _record(ctx: RuleContext, kind: str, actual: Any, expected: Any, attrs: dict) -> None:
    """Record the check each time it runs, with the values it ran on: through a host
    callback, so a check inside a loop body, a branch or a called function records what it
    saw on each run (and nothing when it does not run), never a traced value."""
    custom = ctx.name == "stablehlo.custom_call"  # the generated testdata's form
    rec = _current(kind if custom else ctx.name, ctx.loc)
    loc = ctx.loc

    # 1-byte floats travel as f32 (exact) and are cast back: XLA cannot hand every one of
    # them (f6, f4) to the host
    narrow = [_narrow_float(x) for x in (actual, expected)]
    actual, expected = (
        x if d is None else jax.lax.convert_element_type(x, np.float32)
        for x, d in zip((actual, expected), narrow, strict=True)
    )

    def on_host(a: Any, e: Any = None) -> None:
        a = np.asarray(a) if narrow[0] is None else np.asarray(a).astype(narrow[0])
        if e is not None:
            e = np.asarray(e) if narrow[1] is None else np.asarray(e).astype(narrow[1])
        rec.checks.append(make_check(kind, a, e, attrs, loc, generated=custom))

    # unordered: a jitted test may also run a multi-device program (run_parallel), where JAX
    # allows no ordered effects; the runner puts the records back in source order
    if expected is None:
        jax.debug.callback(on_host, actual)
    else:
        jax.debug.callback(on_host, actual, expected)


def _narrow_float(x: Any) -> np.dtype | None:
    """The dtype of ``x`` when it is a float type of one byte or less, else None."""
    if x is None:
        return None
    dtype = np.dtype(x.dtype)
    return dtype if dtype.itemsize == 1 and is_float(dtype) else None


# ---- the rules ------------------------------------------------------------------------------


@_rule(*CHECK_KINDS)
def check_op(ctx: RuleContext, *operands: Any, **attrs: Any) -> tuple:
    """The ``check`` dialect: records the assertion for the runner to evaluate."""
    kind = CHECK_KINDS[ctx.name]
    if kind == "expect_serialized_eq":
        _record(ctx, kind, operands[0], None, attrs)
    elif "value" in attrs:  # the *_const forms and check.eq / check.almost_eq
        _record(ctx, kind, operands[0], np.asarray(attrs["value"]), attrs)
    else:
        _record(ctx, kind, operands[0], operands[1], attrs)
    return ()


def _custom_check(target: str) -> Rule:
    kind = target.removeprefix("check.")

    def impl(ctx: RuleContext, actual: Any, expected: Any = None, **attrs: Any) -> Any:
        _record(ctx, kind, actual, expected, attrs)
        if not ctx.result_avals:
            return ()
        return tuple(_verdict(kind, actual, expected, aval) for aval in ctx.result_avals)

    return impl


def _verdict(kind: str, actual: Any, expected: Any, aval: Any) -> Any:
    """A check custom call's result (``tensor<i1>``): whether the check holds, by
    :func:`compare` with the default tolerances, computed on the host."""
    from hlopipe.conformance.compare import compare

    def host(a: Any, e: Any) -> np.ndarray:
        ok = compare(kind, np.asarray(a), np.asarray(e), generated=True) is None
        return np.full(aval.shape, ok, dtype=aval.dtype)

    if expected is None:
        raise UnsupportedOpError(f"@check.{kind} has one operand; it compares two")
    return jax.pure_callback(host, jax.ShapeDtypeStruct(aval.shape, aval.dtype), actual, expected)


CUSTOM_CALLS.update({t: _custom_check(t) for t in CHECK_TARGETS})


@_rule("interpreter.print")
def interpreter_print(ctx: RuleContext, x: Any, **attrs: Any) -> Any:
    """Debug printing of the reference interpreter: the value passes through unprinted."""
    return x


@_rule("interpreter.probe")
def interpreter_probe(ctx: RuleContext, x: Any, *, probe_id: str = "", **attrs: Any) -> Any:
    """Records the value each time it runs (loops included) for ``expect_serialized_eq``."""
    rec = _current("interpreter.probe", ctx.loc)
    store = rec.probes.setdefault(str(probe_id), [])
    jax.debug.callback(lambda v: store.append(np.asarray(v)), x, ordered=True)
    return x


@_rule("interpreter.run_parallel")
def run_parallel(ctx: RuleContext, *inputs: Any, programs: Any = None, **attrs: Any) -> tuple:
    """A grid of ``num_replicas x num_partitions`` processes, each running a function of the
    module: run as one SPMD program under ``jax.shard_map`` over as many CPU devices, with the
    collective rules of ``ops/collectives.py``. Inputs and results are flat, process by
    process (``(0, 0)``, ``(0, 1)``, ...)."""
    from hlopipe.rehydrate import raise_if_unsupported

    if _is_mpmd(ctx, programs):
        return _run_mpmd(ctx, programs, inputs)
    name, replicas, partitions = _grid(ctx, programs, attrs)
    n = replicas * partitions
    module = ctx.interpreter.module
    raise_if_unsupported(module, name)
    func = module.funcs[name]
    nargs = len(func.block.args)
    if len(inputs) != nargs * n:
        raise UnsupportedOpError(
            f"interpreter.run_parallel at {ctx.loc}: {len(inputs)} inputs for {n} processes "
            f"of @{name} taking {nargs} arguments each"
        )
    per_process = [inputs[p * nargs : (p + 1) * nargs] for p in range(n)]
    outs = _run_on_grid(ctx, func, per_process, replicas, partitions, len(ctx.result_avals) // n)
    return tuple(o for row in outs for o in row)


def _grid(ctx: RuleContext, programs: Any, attrs: dict) -> tuple[str, int, int]:
    """The one program every process runs, and the grid's replica and partition counts."""
    if attrs.get("infeed"):
        raise UnsupportedOpError(
            "interpreter.run_parallel with infeed is not supported: hlopipe has no infeed queue"
        )
    if not isinstance(programs, list) or not programs or not isinstance(programs[0], list):
        raise UnsupportedOpError(f"interpreter.run_parallel at {ctx.loc}: cannot read programs")
    names = {name for row in programs for name in row}
    if len(names) != 1:
        raise UnsupportedOpError(
            f"interpreter.run_parallel with different programs per process ({sorted(names)}) is "
            "not supported: a mesh runs one SPMD program"
        )
    return names.pop(), len(programs), len(programs[0])


def _run_on_grid(
    ctx: RuleContext, func: Any, inputs: list[Any], replicas: int, partitions: int, nres: int
) -> list[tuple[Any, ...]]:
    """Per process (device id ``replica * partitions + partition``) the results of ``func``
    on its inputs, all run as one ``jax.shard_map`` over one mesh axis."""
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec

    from hlopipe.rehydrate import Interpreter
    from hlopipe.rehydrate._spmd import make_spmd

    n = replicas * partitions
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise UnsupportedOpError(
            f"interpreter.run_parallel with {n} processes needs {n} CPU devices, JAX has "
            f"{len(devices)}: set jax.config.update('jax_num_cpu_devices', {n}) at start-up"
        )
    axes = ("processes",)
    mesh = Mesh(np.array(devices[:n]), axes)
    inner = Interpreter(
        ctx.interpreter.module,
        mesh=mesh,
        axis=axes[0],
        loops=ctx.interpreter.options.get("loops", "auto"),
        spmd=make_spmd(mesh, axes, partitions, replicas),
    )
    stacked = [jnp.stack([row[j] for row in inputs]) for j in range(len(inputs[0]))]
    spec = PartitionSpec(axes)

    def body(*xs: Any) -> tuple:
        outs = inner.run(func, *(x[0] for x in xs))
        return tuple(o[None] for o in outs)

    outs = jax.shard_map(
        body,
        mesh=mesh,
        in_specs=tuple(spec for _ in stacked),
        out_specs=tuple(spec for _ in range(nres)),
        check_vma=False,
    )(*stacked)
    return [tuple(outs[j][p] for j in range(nres)) for p in range(n)]


# ---- processes running different programs ---------------------------------------------------
# They exchange data only through send/recv channels (collectives need one SPMD program):
# each process's function runs on its own, in one trace; a send stores its value under the
# channel, a recv takes the oldest one. A process whose recv finds nothing yet is run again
# after the others (what it sent in the failed attempt taken back).

_CHANNELS: list[dict[int, list[Any]]] = []  # the channels of the MPMD runs in progress


class _NotSentYet(HlopipeError):
    """A recv found its channel empty: its process runs again after the others."""


def _is_mpmd(ctx: RuleContext, programs: Any) -> bool:
    """Whether the processes run different programs, or programs that use send/recv."""
    if not isinstance(programs, list) or not all(isinstance(row, list) for row in programs):
        return False
    names = {str(n) for row in programs for n in row}
    module = ctx.interpreter.module
    if len(names) > 1:
        return True
    name = next(iter(names), None)
    if name not in module.funcs:
        return False
    used = _op_names(module.funcs[name].block, module, set())
    return bool(used & {"stablehlo.send", "stablehlo.recv"})


def _run_mpmd(ctx: RuleContext, programs: list, inputs: tuple) -> tuple:
    from hlopipe.rehydrate import raise_if_unsupported
    from hlopipe.rehydrate._spmd import COLLECTIVE_OPS, DEVICE_ID_OPS

    module = ctx.interpreter.module
    names = [str(n) for row in programs for n in row]
    funcs = []
    for name in names:
        raise_if_unsupported(module, name)
        func = module.funcs[name]
        used = _op_names(func.block, module, set())
        spmd = sorted(used & (COLLECTIVE_OPS | DEVICE_ID_OPS))
        if spmd:
            raise UnsupportedOpError(
                f"interpreter.run_parallel at {ctx.loc}: its processes run apart (different "
                f"programs, or send/recv) and @{name} uses {spmd[0]}: only send/recv connect "
                "such processes here (collectives need one SPMD program)"
            )
        funcs.append(func)
    arity = [len(f.block.args) for f in funcs]
    if len(inputs) != sum(arity):
        raise UnsupportedOpError(
            f"interpreter.run_parallel at {ctx.loc}: {len(inputs)} inputs for programs taking "
            f"{sum(arity)} arguments in all"
        )
    starts = [sum(arity[:p]) for p in range(len(funcs))]
    args = [inputs[starts[p] : starts[p] + arity[p]] for p in range(len(funcs))]
    outs: list[tuple | None] = [None] * len(funcs)
    channels: dict[int, list[Any]] = {}
    _CHANNELS.append(channels)
    try:
        pending = list(range(len(funcs)))
        while pending:
            waiting = []
            for p in pending:
                saved = {k: list(v) for k, v in channels.items()}
                try:
                    outs[p] = tuple(ctx.interpreter.run(funcs[p], *args[p]))
                except _NotSentYet:
                    channels.clear()
                    channels.update(saved)
                    waiting.append(p)
            if waiting == pending:
                raise UnsupportedOpError(
                    f"interpreter.run_parallel at {ctx.loc}: the recv of "
                    f"@{names[pending[0]]} waits for a send no other process makes first"
                )
            pending = waiting
    finally:
        _CHANNELS.pop()
    return tuple(o for row in outs for o in (row or ()))


def _op_names(block: Any, module: Any, seen: set[str]) -> set[str]:
    """The op names of ``block``, its regions and the functions it calls."""
    out: set[str] = set()
    for op in block.ops:
        out.add(op.name)
        for region in op.regions:
            out |= _op_names(region, module, seen)
        callee = op.attrs.get("callee") if op.name == "func.call" else None
        if isinstance(callee, str) and callee not in seen and callee in module.funcs:
            seen.add(callee)
            out |= _op_names(module.funcs[callee].block, module, seen)
    return out


def _channel_of(ctx: RuleContext, channel_handle: Any) -> int:
    from hlopipe.rehydrate.ops.collectives import _channel

    if not _CHANNELS:
        raise UnsupportedOpError(
            f"{ctx.name} at {ctx.loc} is not supported outside interpreter.run_parallel: "
            "host/device channels have no JAX equivalent inside a function"
        )
    return _channel(channel_handle)


@_rule("stablehlo.send")
def send(ctx: RuleContext, *operands: Any, channel_handle: Any = None, **attrs: Any) -> Any:
    """Within ``run_parallel`` of different programs: the values go to the channel."""
    channel = _channel_of(ctx, channel_handle)
    *values, _token = operands
    _CHANNELS[-1].setdefault(channel, []).append(tuple(values))
    return np.zeros((0,), dtype=bool)


@_rule("stablehlo.recv")
def recv(ctx: RuleContext, token: Any, *, channel_handle: Any = None, **attrs: Any) -> tuple:
    """Within ``run_parallel`` of different programs: the oldest values sent on the channel."""
    channel = _channel_of(ctx, channel_handle)
    queue = _CHANNELS[-1].get(channel)
    if not queue:
        raise _NotSentYet
    values = queue.pop(0)
    if len(values) != len(ctx.result_avals) - 1:
        raise UnsupportedOpError(
            f"stablehlo.recv at {ctx.loc} receives {len(ctx.result_avals) - 1} values, the send "
            f"on channel {channel} sent {len(values)}"
        )
    return (*values, np.zeros((0,), dtype=bool))
