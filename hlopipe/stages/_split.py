"""Splitting a program into pipeline stages: at its markers, or at cost-balanced cut points."""

from __future__ import annotations

import contextlib
import heapq
import re
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import jax

from hlopipe.errors import Keyword, StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import CostModel, eqn_cost
from hlopipe.stages._cuts import equation_cuts, layer_counts_check, layer_cuts
from hlopipe.stages._devices import Device, device
from hlopipe.stages._partition import state_spans
from hlopipe.stages._staged import FlatSignature, StagedProgram, build_staged

if TYPE_CHECKING:
    from hlopipe.stages._loops import LoopReport


class Cuts(TypedDict, total=False):
    """The keywords that choose where :func:`split` and :func:`split_jaxpr` cut, each optional
    (documented in :func:`split`); mypy checks a call's keywords against these."""

    num_stages: int | None
    cost_model: CostModel | None
    memory_cap: float | None
    max_candidates: int
    slice_args: Sequence[int] | None
    local_state: Sequence[tuple[int, int]]
    device: str | Device | None
    stage_layers: Sequence[int] | None


def split(fn_or_program: Any, *example_args: Any, **cuts: Unpack[Cuts]) -> StagedProgram:
    """Cut a function (or a loaded :class:`hlopipe.Program`) into pipeline stages.

    With ``stage_boundary`` markers in the program, the cuts are at the markers (a marker ends
    the stage before it); ``num_stages``, if given, must equal the number of markers + 1.
    Without markers, ``num_stages`` cost-balanced cut points are chosen by an exact dynamic
    programme minimising the slowest stage (compute + bytes received / link bandwidth), cutting
    between repeated layers when there are some, under an optional per-stage ``memory_cap``.

    Args:
      fn_or_program: a JAX-traceable function, or a ``Program`` from ``hlopipe.load`` (its
        ``as_function()`` and ``in_avals`` are used; no example arguments needed).
      *example_args: arguments (arrays or ``jax.ShapeDtypeStruct``) to trace ``fn`` with.

    Keyword Args (those of :class:`Cuts`, each optional):
      num_stages: number of stages; required when there are no markers.
      cost_model: the :class:`CostModel` for predicted costs and automatic cuts.
      memory_cap: largest per-stage memory (bytes, see :class:`StageCost`) allowed
        (``stages.memory_cap("h100")``: a named device's memory).
      device: a named device (``"h100"``, ``"a100-40gb"``, ``"cpu"``...; ``stages.DEVICES``)
        whose roofline is the cost model when ``cost_model`` is not given (its bf16 rate when
        the program's largest floating-point argument is 16-bit, else fp32).
      max_candidates: most candidate cut points considered outside repeated layers (512).
      slice_args: the flat arguments that may be handed to stages as rows of a layer loop
        (default: any); a pipeline passes its parameters' (the batch is never sliced so).
      local_state: ``(flat argument, flat output)`` pairs of state to keep on one stage: cut
        points chosen automatically never fall between a read of the argument (or of a version
        of it) and the equation making its output; :class:`NoLocalCut` names the state when
        no such cut exists.
      stage_layers: how many repeated layers each stage holds (``[8, 8, 8, 8]``): the program
        is cut between its repeated layers (a layer loop's iterations, or a block of equations
        found repeated) at those counts, the first stage also holding what comes before the
        first layer and the last what follows the last; ``num_stages`` defaults to its length.
        A :class:`StageError` when the program has markers or no repeated layers, or the
        counts do not sum to its layers.

    A top-level ``scan`` over parameters stacked ``[L, ...]`` (``lax.scan``, ``fori_loop``,
    a rehydrated while loop) counts as ``L`` pieces of work and may be cut between
    iterations: each stage runs the body over its range with its own rows of every stacked
    parameter (see ``StagedProgram.loops`` and ``arg_pieces``).

    Returns:
      a :class:`StagedProgram`.

    Example:
      >>> staged = hlopipe.split(model, params, x, num_stages=4)   # doctest: +SKIP
      >>> [st.cost.time for st in staged.stages]                   # doctest: +SKIP
    """
    StageError.refuse_unknown(cuts, Cuts, "split")
    closed, sig = _trace(fn_or_program, example_args)
    with _in_program_terms(_program_source(fn_or_program)):
        return split_jaxpr(
            closed,
            in_tree=sig.in_tree,
            out_tree=sig.out_tree,
            in_paths=sig.paths,
            argnums_of=sig.argnum_of,
            **cuts,
        )


def count_layers(fn_or_program: Any, *example_args: Any) -> int | None:
    """How many repeated layers ``split(..., stage_layers=...)`` cuts between: a program's one
    layer loop's length, else the count of its repeated block of equations; ``None`` when it
    has neither (or several layer loops, or markers).

    Example:
      >>> stages.count_layers(loss, params, batch)    # doctest: +SKIP
      12
    """
    from hlopipe.stages._local import find_remade
    from hlopipe.stages._partition import crossing_bytes, find_repeated_run

    closed, _ = _trace(fn_or_program, example_args)
    closed = J.inline(closed, lambda e: any(J.contains_marker(j) for j in J.sub_jaxprs(e)))
    if any(J.is_marker(e) for e in closed.jaxpr.eqns):
        return None
    closed = _inline_heavy(closed, 2)
    loops = [r for r in _find_loops(closed) if r.splittable]
    if len(loops) == 1:
        return int(loops[0].length or 0) or None
    if loops:
        return None
    jaxpr = closed.jaxpr
    cross = crossing_bytes(jaxpr.eqns, jaxpr.outvars, remade=find_remade(jaxpr).remade)
    run = find_repeated_run(jaxpr.eqns, cross, jaxpr.invars)
    return None if run is None else run.count


def _trace(
    fn_or_program: Any, example_args: tuple[Any, ...]
) -> tuple[J.ClosedJaxpr, FlatSignature]:
    """Trace a function (on ``example_args``) or a loaded Program (on its own argument avals,
    unless given): the ClosedJaxpr and its :class:`FlatSignature` (a flat argument's path is
    a Program's own argument name where it has one)."""
    fn: Callable[..., Any]
    if hasattr(fn_or_program, "as_function") and hasattr(fn_or_program, "in_avals"):
        fn = fn_or_program.as_function(flat=True)
        if not example_args:
            example_args = tuple(
                jax.ShapeDtypeStruct(a.shape, a.dtype) for a in fn_or_program.in_avals
            )
    elif callable(fn_or_program):
        fn = fn_or_program
    else:
        raise StageError(
            f"split expects a function or a hlopipe Program, got {type(fn_or_program).__name__}"
        )
    closed, in_tree, out_tree = J.trace(fn, example_args)
    leaves = jax.tree_util.tree_flatten_with_path(tuple(example_args))[0]
    in_paths = [jax.tree_util.keystr(p) for p, _ in leaves]
    names = getattr(fn_or_program, "arg_names", None)  # a Program's own argument names
    if isinstance(names, list) and len(names) == len(in_paths):
        in_paths = [n or p for n, p in zip(names, in_paths, strict=True)]
    argnum_of = tuple(_argnum(p) for p, _ in leaves)
    return closed, FlatSignature(in_tree, out_tree, tuple(in_paths), argnum_of)


def _program_source(fn_or_program: Any) -> str | None:
    """The file a loaded Program came from (one with argument names); ``None`` for a function."""
    if getattr(fn_or_program, "arg_names", None) is None:
        return None
    return getattr(fn_or_program, "source", None)


@contextlib.contextmanager
def _in_program_terms(source: str | None) -> Iterator[None]:
    """Errors of a split of the program in file ``source`` located in that file.

    A rehydrated program's equations are traced in hlopipe's interpreter: a location there
    means nothing to the user, the program file does.
    """
    try:
        yield
    except StageError as e:
        parts = tuple(
            re.sub(r" at \S*hlopipe/\S+ \([^)]*\)", f" in {source}", p) if isinstance(p, str) else p
            for p in e.parts
        )
        if source is None or parts == e.parts:
            raise
        raise StageError(*parts) from e


def split_jaxpr(
    closed: J.ClosedJaxpr,
    *,
    in_tree: jax.tree_util.PyTreeDef | None = None,
    out_tree: jax.tree_util.PyTreeDef | None = None,
    in_paths: Sequence[str] | None = None,
    argnums_of: Sequence[int] | None = None,
    **cuts: Unpack[Cuts],
) -> StagedProgram:
    """:func:`split` for an already traced ClosedJaxpr over flat arguments.

    ``in_tree``/``out_tree`` default to flat tuples; ``argnums_of`` maps each flat argument to
    the positional argument it belongs to (default: its own index). The keywords that choose
    the cuts (:class:`Cuts`) are :func:`split`'s.

    Example:
      >>> staged = split_jaxpr(jax.make_jaxpr(f)(x), num_stages=2)  # doctest: +SKIP
    """
    StageError.refuse_unknown(cuts, Cuts, "split_jaxpr")
    cm = cuts.get("cost_model") or _device_cost_model(closed, cuts.get("device"))
    num_stages = cuts.get("num_stages")
    sig = _flat_signature(closed, in_tree, out_tree, in_paths, argnums_of)
    J.check_markers_placeable(closed.jaxpr)
    J.check_64bit_mode(closed.jaxpr)
    closed = J.inline(closed, lambda e: any(J.contains_marker(j) for j in J.sub_jaxprs(e)))
    eqns = closed.jaxpr.eqns
    markers = [i for i, e in enumerate(eqns) if J.is_marker(e)]
    if not markers:
        return _split_auto(closed, cm, sig, cuts)
    if cuts.get("stage_layers") is not None:
        raise StageError(
            Keyword("stage_layers", tuple(cuts["stage_layers"] or ())),
            f" was given, but the program has {len(markers)} stage_boundary markers (first at "
            f"{J.where(eqns[markers[0]])}); cut at the markers or between layers, not both",
        )
    if num_stages is not None and num_stages != len(markers) + 1:
        raise StageError(
            Keyword("num_stages", num_stages),
            f" was asked for, but the program has {len(markers)} "
            f"stage_boundary markers ({len(markers) + 1} stages; first marker at "
            f"{J.where(eqns[markers[0]])}); remove ",
            Keyword("num_stages"),
            " or the markers",
        )
    if cuts.get("local_state"):
        closed = move_state_updates(
            closed, [o for _, o in cuts["local_state"]], Landing.BEFORE_MARKERS
        )
        markers = [i for i, e in enumerate(closed.jaxpr.eqns) if J.is_marker(e)]
    return build_staged(closed, [0] + [m + 1 for m in markers], sig, cm, None, None)


class Landing(StrEnum):
    """Where :func:`move_state_updates` may put an equation computing a state output."""

    #: right after its operands exist (the cost model's cuts, which follow program order); an
    #: equation reading only arguments right before its first reader
    ANYWHERE = "anywhere"
    #: before the first marker (a cut at a marker follows program order) at which the whole
    #: chain making a state output can be made, else where it was: a part of a chain moved
    #: alone would only be sent to the next stage
    BEFORE_MARKERS = "before markers"


def move_state_updates(
    closed: J.ClosedJaxpr, outputs: Sequence[int], landing: Landing
) -> J.ClosedJaxpr:
    """``closed`` with the equations computing state outputs (``outputs``: flat output indices)
    moved earlier, as ``landing`` allows, so that a cut keeps each cache on its layer's stage;
    every other equation keeps its order.

    XLA's scheduler may put a cache's in-place update after the next layer has started (or
    after the marker that ends its layer: torch_xla's optimised dump writes layer 0's V cache
    after layer 1's first equations, or after the barrier ending layer 0), which would give the
    cache to the next stage while its own stage reads it. The equations that may move are those
    that compute state outputs and nothing else (no other output, no effects, no marker). Each
    goes, in program order, to the first place ``landing`` allows at which its operands exist
    (with :attr:`Landing.BEFORE_MARKERS`, only with the whole chain making its state output),
    and stays where it was when there is none before it. With :attr:`Landing.ANYWHERE`, those
    reading only arguments (the old row of a cache) go right before their first reader
    instead: made as early as possible they would stretch their cache's span to the program's
    start. One pass over the equations: each becomes available once, when its operands are.

    Args:
      closed: the ClosedJaxpr, markers inlined.
      outputs: the flat indices of its state outputs.
      landing: where an equation may be moved to (:class:`Landing`).

    Returns:
      ``closed`` itself when nothing moves, else a ClosedJaxpr with the equations reordered.
    """
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    anywhere = landing is Landing.ANYWHERE
    if not anywhere and not any(J.is_marker(e) for e in eqns):
        return closed
    maker = {v: i for i, e in enumerate(eqns) for v in e.outvars}
    producers = [
        {maker[v] for v in e.invars if not isinstance(v, J.Literal) and v in maker} for e in eqns
    ]

    def cone(outs: Sequence[int]) -> set[int]:
        found: set[int] = set()
        stack = [maker[v] for o in outs
                 if not isinstance(v := jaxpr.outvars[o], J.Literal) and v in maker]  # fmt: skip
        while stack:
            i = stack.pop()
            if i not in found:
                found.add(i)
                stack += producers[i]
        return found

    state = set(outputs)
    others = cone([o for o in range(len(jaxpr.outvars)) if o not in state])
    movable = {
        i for i in cone(outputs) - others if not eqns[i].effects and not J.is_marker(eqns[i])
    }
    loose: set[int] = set()  # made from arguments and other loose equations only
    for i in sorted(movable) if anywhere else ():
        if producers[i] <= loose:
            loose.add(i)
    state_vars = [jaxpr.outvars[o] for o in outputs]
    finals = movable & {maker[v] for v in state_vars if not isinstance(v, J.Literal) and v in maker}
    waits = {i: producers[i] - loose for i in movable - loose}
    readers: dict[int, list[int]] = {}
    for i, ps in waits.items():
        for p in ps:
            readers.setdefault(p, []).append(i)
    available: list[int] = []  # a heap: moving equations whose operands exist or can be made
    order: list[int] = []
    done: set[int] = set()

    def make_available(i: int) -> None:  # i's value exists or can be made: so can its readers'
        stack = [i]
        while stack:
            p = stack.pop()
            for r in readers.get(p, ()):
                waits[r].discard(p)
                if not waits[r]:
                    heapq.heappush(available, r)
                    stack.append(r)

    def emit(i: int) -> None:
        for p in sorted(producers[i] & loose - done):
            emit(p)
        order.append(i)
        done.add(i)
        if i not in movable:  # a moving one told its readers when it became available
            make_available(i)

    def land() -> None:  # the equations that move to here, in program order
        picked = set(available)
        available.clear()
        if not anywhere:  # only whole chains that make a state output: a part would be sent
            stack, picked = [r for r in picked if r in finals], set()
            while stack:
                r = stack.pop()
                if r not in done and r not in picked:
                    picked.add(r)
                    stack += producers[r] & movable
        for r in sorted(picked):
            if r not in done:
                emit(r)

    for i in sorted(i for i, ps in waits.items() if not ps):
        heapq.heappush(available, i)
        make_available(i)
    for i, e in enumerate(eqns):
        if anywhere or J.is_marker(e):
            land()
        if i in done or i in loose or (anywhere and i in movable):
            continue
        emit(i)  # an equation that does not move, or a moving one where it was
    for i in sorted(movable - done):  # left: those whose operands were made last, or loose
        if i not in done:  # ones read by no other (an output itself)
            emit(i)
    if order == list(range(len(eqns))):
        return closed
    return closed.replace(jaxpr=jaxpr.replace(eqns=[eqns[i] for i in order]))


def _device_cost_model(closed: J.ClosedJaxpr, name: str | Device | None) -> CostModel:
    """The cost model of device ``name`` for ``closed`` (the default one without a device)."""
    if name is None:
        return CostModel()
    floats = [a for a in closed.in_avals if J.is_inexact(a)]
    widest = max(floats, key=J.aval_bytes, default=None)
    return device(name).cost_model("float32" if widest is None else widest.dtype)


def _flat_signature(
    closed: J.ClosedJaxpr,
    in_tree: jax.tree_util.PyTreeDef | None,
    out_tree: jax.tree_util.PyTreeDef | None,
    in_paths: Sequence[str] | None,
    argnums_of: Sequence[int] | None,
) -> FlatSignature:
    """The :class:`FlatSignature` given, with the defaults of a flat program for what is
    ``None``: flat tuples, paths ``[i]``, each argument its own positional argument."""
    n_in, n_out = len(closed.in_avals), len(closed.out_avals)
    if in_tree is None:
        in_tree = jax.tree_util.tree_structure(tuple(range(n_in)))
    if out_tree is None:
        out_tree = jax.tree_util.tree_structure(list(range(n_out)))
    paths = tuple(in_paths) if in_paths is not None else tuple(f"[{i}]" for i in range(n_in))
    argnum_of = tuple(argnums_of) if argnums_of is not None else tuple(range(n_in))
    return FlatSignature(in_tree, out_tree, paths, argnum_of)


def _split_auto(
    closed: J.ClosedJaxpr, cm: CostModel, sig: FlatSignature, cuts: Cuts
) -> StagedProgram:
    """A program without markers cut at ``num_stages`` cost-balanced points: a layer loop in
    it by ranges of iterations (``_loops.split_loops``), else between equations."""
    num_stages, memory_cap = cuts.get("num_stages"), cuts.get("memory_cap")
    max_candidates, slice_args = cuts.get("max_candidates", 512), cuts.get("slice_args")
    stage_layers = cuts.get("stage_layers")
    if stage_layers is not None:
        stage_layers = list(stage_layers)
        if num_stages is not None and num_stages != len(stage_layers):
            raise StageError(
                Keyword("num_stages", num_stages),
                " disagrees with ",
                Keyword("stage_layers", tuple(stage_layers)),
                f" ({len(stage_layers)} stages); give one of them",
            )
        num_stages = len(stage_layers)
    if num_stages is None:
        raise StageError(
            "the program has no stage_boundary markers; pass ",
            Keyword("num_stages", "N"),
            " to choose cut points automatically",
        )
    closed = _inline_heavy(closed, num_stages)
    if cuts.get("local_state"):
        closed = move_state_updates(closed, [o for _, o in cuts["local_state"]], Landing.ANYWHERE)
    reports = _find_loops(closed)
    loops = {r.eqn: r for r in reports if r.splittable}
    spans = state_spans(closed.jaxpr, cuts.get("local_state", ()), sig.paths)
    if loops and num_stages > 1:
        n_in = len(closed.in_avals)
        sliceable = set(range(n_in) if slice_args is None else slice_args)
        from hlopipe.stages._loops import split_loops

        return split_loops(
            closed, loops, reports, num_stages, cm, memory_cap, max_candidates,
            sig, sliceable, spans, stage_layers,
        )  # fmt: skip
    if stage_layers is not None and len(stage_layers) == 1:  # one stage: the counts checked
        if len(loops) == 1:
            layer_counts_check(
                stage_layers, int(next(iter(loops.values())).length or 0), "a layer loop's length"
            )
        else:
            layer_cuts(closed, stage_layers, cm)
        return build_staged(closed, [0], sig, cm, None, None, loops=tuple(reports))
    if stage_layers is not None:
        starts, fixed, layers, costs = layer_cuts(closed, stage_layers, cm)
        return build_staged(closed, starts, sig, cm, fixed, layers, costs, loops=tuple(reports))
    starts, part, run, costs = equation_cuts(
        closed, num_stages, cm, memory_cap, max_candidates, spans
    )
    return build_staged(closed, starts, sig, cm, part, run, costs, loops=tuple(reports))


def _find_loops(closed: J.ClosedJaxpr) -> list[LoopReport]:
    from hlopipe.stages._loops import find_loops

    return find_loops(closed)


def _argnum(path: Any) -> int:
    first = path[0]
    return int(getattr(first, "idx", 0))


def _inline_heavy(closed: J.ClosedJaxpr, num_stages: int) -> J.ClosedJaxpr:
    """Open up call equations heavy enough to need cutting through (e.g. a jitted model)."""
    for _ in range(8):
        if not any(e.primitive.name in J.CALL_PRIMITIVES for e in closed.jaxpr.eqns):
            return closed
        costs = [eqn_cost(e)[0] for e in closed.jaxpr.eqns]
        total = sum(costs)
        if total == 0:
            return closed
        limit = total / (2 * num_stages)
        heavy = {id(e) for e, c in zip(closed.jaxpr.eqns, costs, strict=True) if c > limit}

        def is_heavy(e: Any, h: set[int] = heavy) -> bool:
            return id(e) in h and e.primitive.name in J.CALL_PRIMITIVES

        new = J.inline(closed, is_heavy)
        if new is closed:
            return closed
        closed = new
    return closed
