"""The result of a split: :class:`StagedProgram` and its :class:`Stage` records.

A stage's inputs (:class:`Receive`), where its outputs go (:class:`Send`), where each program
output comes from (:class:`OutputSource`) and the predicted cost (:class:`StageCost`); a
staged program runs its stages in order, and converts between the caller's flat arguments and
the stages' (``arg_pieces``: the rows of a stacked parameter that a cut layer loop hands to
each stage). :func:`build_staged` makes one from a program and its cut points, wherever they
came from (markers, the partitioner, a re-traced layer loop; see :mod:`hlopipe.stages._split`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._cost import CostModel, eqn_costs, roofline_times
from hlopipe.stages._local import find_remade, stage_eqns, trim_markers
from hlopipe.stages._partition import Partition, RepeatedRun

if TYPE_CHECKING:
    from hlopipe.schedules import Schedule
    from hlopipe.stages._autodiff import StageAutodiff
    from hlopipe.stages._devices import Device
    from hlopipe.stages._loops import ArgPiece, LoopReport
    from hlopipe.stages._memory import MemoryReport


@dataclass(frozen=True)
class Receive:
    """One input of a stage: output ``output`` of the earlier stage ``src``."""

    src: int
    output: int
    aval: jax.ShapeDtypeStruct


@dataclass(frozen=True)
class Send:
    """Output ``output`` of this stage goes to input ``input`` of the later stage ``dst``."""

    dst: int
    output: int
    input: int
    aval: jax.ShapeDtypeStruct


@dataclass(frozen=True)
class StageCost:
    """Predicted cost of a stage under a :class:`CostModel`.

    ``compute_time`` sums the roofline time of its equations; ``transfer_time`` is the time
    to receive ``recv_bytes`` of activations; ``memory_bytes`` is the bytes of its parameters
    plus every value its equations produce (an upper bound on one microbatch's activations).
    """

    flops: float
    bytes: float
    compute_time: float
    recv_bytes: int
    transfer_time: float
    param_bytes: int
    memory_bytes: int

    @property
    def time(self) -> float:
        return self.compute_time + self.transfer_time


class SourceKind(enum.StrEnum):
    """Where a flat program output comes from (:class:`OutputSource`)."""

    STAGE = "stage"  # output ``index`` of stage ``stage``
    ARG = "arg"  # flat argument ``index``, returned as given
    CONST = "const"  # ``value``, a constant of the program


@dataclass(frozen=True)
class FlatSignature:
    """How a traced program's flat arguments and outputs map to the caller's pytrees.

    Attributes:
      in_tree: the tree of the positional arguments (a tuple of them).
      out_tree: the tree of the outputs.
      paths: per flat argument, its path in the arguments (``[0]['w']``, or a loaded
        Program's own argument name).
      argnum_of: per flat argument, the positional argument it belongs to.
    """

    in_tree: jax.tree_util.PyTreeDef
    out_tree: jax.tree_util.PyTreeDef
    paths: tuple[str, ...]
    argnum_of: tuple[int, ...]


@dataclass(frozen=True)
class OutputSource:
    """Where a flat program output comes from: a stage's output, an argument or a constant
    (``kind``, a :class:`SourceKind`)."""

    kind: SourceKind
    stage: int = -1
    index: int = -1
    value: Any = None

    def read(self, flat: Sequence[Any], outs: Sequence[Sequence[Any]]) -> Any:
        """This output's value, given the stages' flat arguments ``flat`` and each stage's
        outputs ``outs``."""
        if self.kind is SourceKind.STAGE:
            return outs[self.stage][self.index]
        if self.kind is SourceKind.ARG:
            return flat[self.index]
        return self.value


@dataclass(frozen=True, eq=False)
class Stage:
    """One pipeline stage (built whole by :func:`build_staged`, never patched).

    ``jaxpr`` computes the stage: its inputs are the flat original arguments in
    ``params_needed`` (fed directly, never through earlier stages) followed by the values in
    ``receives``; its outputs are ``outputs`` (values sent to later stages and/or program
    outputs, see ``sends`` and ``program_outputs``).

    Example:
      >>> st = staged.stage(1)                                      # doctest: +SKIP
      >>> outs = st([flat_args[i] for i in st.params_needed], received)  # doctest: +SKIP
    """

    index: int
    jaxpr: J.ClosedJaxpr
    params_needed: tuple[int, ...]
    param_paths: tuple[str, ...]
    param_argnums: tuple[int, ...]
    receives: tuple[Receive, ...]
    outputs: tuple[jax.ShapeDtypeStruct, ...]
    sends: tuple[Send, ...] = ()
    program_outputs: tuple[tuple[int, int], ...] = ()
    cost: StageCost | None = None
    num_eqns: int = 0
    layers: int | None = None
    _fb_cache: dict[tuple[tuple[int, ...], str], StageAutodiff] = field(
        default_factory=dict, repr=False
    )

    def __repr__(self) -> str:
        srcs = sorted({r.src for r in self.receives})
        cost = f", ~{self.cost.time * 1e3:.3g} ms predicted" if self.cost is not None else ""
        return (
            f"Stage({self.index}: {self.num_eqns} eqns, {len(self.params_needed)} program "
            f"arguments, receives {len(self.receives)} value(s)"
            + (f" from stage {', '.join(map(str, srcs))}" if srcs else "")
            + f", {len(self.outputs)} output(s){cost}; the jaxpr: .jaxpr)"
        )

    @property
    def param_avals(self) -> list[jax.ShapeDtypeStruct]:
        return [J.sds(a) for a in self.jaxpr.in_avals[: len(self.params_needed)]]

    def fn(self, *flat: Any) -> list[Any]:
        """The stage as a plain function ``(*params, *inputs) -> list of outputs``."""
        return jax.extend.core.jaxpr_as_fun(self.jaxpr)(*flat)

    def __call__(self, params: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
        """Run the stage (jitted) on its parameters and received inputs."""
        return list(self._jitted(*params, *inputs))

    @cached_property
    def _jitted(self) -> Any:
        # a cache: cached_property writes the instance's __dict__, not a field
        return jax.jit(self.fn)

    def forward_backward(
        self, argnums: int | Sequence[int] = 0, *, remat: bool | str = False
    ) -> StageAutodiff:
        """Forward, backward and the input/weight split of backward for this stage.

        Args:
          argnums: which positional arguments of the original function are differentiated
            (as in ``jax.grad``); only this stage's inexact parameters among them get gradients.
          remat: what the backward recomputes: ``True`` (or ``"full"``) saves only the stage's
            inputs and recomputes its forward inside backward; ``"selective"`` keeps the
            weight matmuls' outputs and recomputes the rest; ``False`` (``"none"``)
            recomputes nothing (a :class:`~hlopipe.planfile.Recompute`).

        Returns:
          a :class:`~hlopipe.stages.StageAutodiff` (see there for the function signatures).

        Example:
          >>> fb = staged.stage(0).forward_backward(argnums=0)       # doctest: +SKIP
          >>> outs, res = fb.forward(params, inputs)                 # doctest: +SKIP
          >>> in_cts, grads = fb.backward(params, res, out_cts)      # doctest: +SKIP
        """
        from hlopipe.stages._autodiff import build_autodiff, recompute_policy

        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        remat = recompute_policy(remat)
        key = (nums, remat)
        if key not in self._fb_cache:
            diff = [a in nums for a in self.param_argnums]
            self._fb_cache[key] = build_autodiff(self, diff, remat=remat)
        return self._fb_cache[key]


@dataclass(frozen=True, eq=False)
class StagedProgram:
    """A program cut into pipeline stages; calling it runs the stages in order. Built whole
    by :func:`build_staged` and never patched (a variant is ``dataclasses.replace``).

    Attributes:
      stages: the :class:`Stage` list, in pipeline order.
      jaxpr: the whole program as one flat ClosedJaxpr (markers included).
      in_avals / out_avals: flat argument / output avals of the original function.
      out_sources: for each flat output, an :class:`OutputSource`.
      partition: the :class:`Partition` when cut points were chosen automatically.
      repeated: the repeated-layer structure found, if any.
      loops: what was found of the program's top-level loops (layer loops cut by ranges of
        iterations, and loops left whole with the reason), as ``LoopReport``s.
      arg_pieces: when a layer loop was cut, the stages' flat arguments as pieces of the
        caller's (``ArgPiece(source, start, stop)``: rows ``[start, stop)`` of the caller's
        flat argument ``source``; ``start is None``: all of it); ``None`` when they are the
        caller's. ``in_avals``/``in_paths`` describe the stages' arguments, ``caller_avals``
        the caller's; :meth:`expand_flat` and :meth:`gather_flat` convert.

    Example:
      >>> staged = hlopipe.split(model, params, x)                 # doctest: +SKIP
      >>> staged(params, x)          # == model(params, x)          # doctest: +SKIP
    """

    stages: tuple[Stage, ...]
    jaxpr: J.ClosedJaxpr
    in_tree: Any
    out_tree: Any
    in_avals: list[jax.ShapeDtypeStruct]
    in_paths: list[str]
    out_avals: list[jax.ShapeDtypeStruct]
    out_sources: list[OutputSource]
    cost_model: CostModel
    partition: Partition | None = None
    repeated: RepeatedRun | None = None
    loops: tuple[LoopReport, ...] = ()
    arg_pieces: tuple[ArgPiece, ...] | None = None
    caller_avals: list[jax.ShapeDtypeStruct] | None = None

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    def __repr__(self) -> str:
        """One screen: the signature and a table of the stages with their sizes and costs
        (:meth:`full_text` gives every stage's jaxpr)."""
        from hlopipe.stages._export import manifest_dict, render_manifest

        head = (
            f"StagedProgram({self.num_stages} stages, {len(self.in_avals)} arguments -> "
            f"{len(self.out_avals)} outputs"
            + (", cut by the cost model" if self.partition is not None else ", cut at markers")
            + ")"
        )
        loops = "".join(f"\nloop: {r.describe()}" for r in self.loops)
        return head + loops + "\n" + render_manifest(manifest_dict(self, {})).rstrip()

    def full_text(self) -> str:
        """Every stage's jaxpr, in order (long: the full form behind ``repr``)."""
        return "\n".join(f"# stage {st.index}\n{st.jaxpr}" for st in self.stages)

    def stage(self, i: int) -> Stage:
        """Stage ``i`` (negative indices count from the end)."""
        return self.stages[i]

    def flatten(self, args: Sequence[Any]) -> list[Any]:
        """The stages' flat arguments from the caller's (pytree) ``args``.

        Raises:
          StageError when ``args`` has another structure than the program was split for."""
        flat, tree = jax.tree_util.tree_flatten(tuple(args))
        if tree != self.in_tree:
            raise StageError(
                f"arguments have structure {tree}, the program was split for {self.in_tree}"
            )
        return self.expand_flat(flat)

    def expand_flat(self, flat: Sequence[Any]) -> list[Any]:
        """The stages' flat arguments from the caller's (each stacked parameter of a cut layer
        loop as its rows per range)."""
        if self.arg_pieces is None:
            return list(flat)
        return [
            flat[p.source] if p.start is None else flat[p.source][p.start : p.stop]
            for p in self.arg_pieces
        ]

    def gather_flat(self, flat: Sequence[Any]) -> list[Any]:
        """The caller's flat arguments (or their gradients) from the stages' (the ranges of a
        stacked parameter joined in row order): the inverse of :meth:`expand_flat`."""
        if self.arg_pieces is None:
            return list(flat)
        parts: dict[int, list[tuple[int, Any]]] = {}
        for p, x in zip(self.arg_pieces, flat, strict=True):
            parts.setdefault(p.source, []).append((p.start or 0, x))
        out = []
        for i in range(len(parts)):
            xs = [x for _, x in sorted(parts[i], key=lambda t: t[0])]
            out.append(xs[0] if len(xs) == 1 else jax.numpy.concatenate(xs, axis=0))
        return out

    @property
    def caller_in_avals(self) -> list[jax.ShapeDtypeStruct]:
        """The caller's flat argument avals (``in_avals`` unless a layer loop was cut)."""
        return list(self.caller_avals) if self.caller_avals is not None else list(self.in_avals)

    def run_forward(self, flat: Sequence[Any]) -> tuple[list[list[Any]], list[Any]]:
        """Run every stage on flat arguments: ``(per-stage outputs, flat program outputs)``."""
        outs: list[list[Any]] = []
        for st in self.stages:
            params = [flat[i] for i in st.params_needed]
            inputs = [outs[r.src][r.output] for r in st.receives]
            outs.append(st(params, inputs))
        return outs, [src.read(flat, outs) for src in self.out_sources]

    def __call__(self, *args: Any) -> Any:
        """Run the stages one after the other; equals the original function."""
        _, flat_out = self.run_forward(self.flatten(args))
        return jax.tree_util.tree_unflatten(self.out_tree, flat_out)

    def value_and_grad(
        self,
        *args: Any,
        argnums: int | Sequence[int] = 0,
        remat: bool | str = False,
        split_backward: bool = False,
    ) -> tuple[Any, Any]:
        """Reference pipeline step: all stage forwards, then all backwards, on one device.

        The program's first flat output must be a scalar loss (others get zero cotangents).
        With ``split_backward`` each backward runs as I (``backward_input``) then W
        (``backward_weight``). Equals ``jax.value_and_grad(fn, argnums)(*args)``.

        Example:
          >>> loss, grads = staged.value_and_grad(params, x, y)      # doctest: +SKIP
        """
        from hlopipe.stages._autodiff import chain_value_and_grad

        return chain_value_and_grad(self, args, argnums, remat=remat, split_backward=split_backward)

    def export(
        self, directory: str, format: str = "hlo", *, argnums: int | Sequence[int] | None = 0
    ) -> str:
        """Write each stage (and its forward/backward parts) plus ``manifest.json``.

        Args:
          directory: output folder (created).
          format: ``"hlo"`` (HLO text) or ``"stablehlo"`` (StableHLO MLIR text).
          argnums: arguments differentiated for the forward/backward files; ``None`` skips them.

        Returns:
          the path of ``manifest.json``.

        Example:
          >>> staged.export("out", format="stablehlo")               # doctest: +SKIP
          'out/manifest.json'
        """
        from hlopipe.stages._export import export

        return export(self, directory, format=format, argnums=argnums)

    def memory_report(
        self,
        device: str | Device,
        *,
        schedule: str | Schedule = "1f1b",
        num_microbatches: int | None = None,
        param_args: Sequence[int] | None = None,
        optimizer: str = "adam",
    ) -> MemoryReport:
        """Each stage's training memory on a named device under a schedule (parameters,
        gradients, the optimizer's state, the in-flight activations): :func:`memory_report`."""
        from hlopipe.stages._memory import memory_report

        return memory_report(self, device, schedule=schedule, num_microbatches=num_microbatches,
                             param_args=param_args, optimizer=optimizer)  # fmt: skip

    def table(self) -> str:
        """The stage table as text (what ``hlopipe inspect manifest.json`` shows)."""
        from hlopipe.stages._export import manifest_dict, render_manifest

        return render_manifest(manifest_dict(self, files={}))


# --- building from cut points ---------------------------------------------------------------


def build_staged(
    closed: J.ClosedJaxpr,
    starts: list[int],
    sig: FlatSignature,
    cm: CostModel,
    part: Partition | None,
    run: RepeatedRun | None,
    costs: tuple[np.ndarray, np.ndarray] | None = None,
    layers: Sequence[int] | None = None,
    *,
    loops: tuple[LoopReport, ...] = (),
    arg_pieces: tuple[ArgPiece, ...] | None = None,
    caller_avals: list[jax.ShapeDtypeStruct] | None = None,
) -> StagedProgram:
    """The :class:`StagedProgram` of ``closed`` cut before the top-level equations ``starts``
    (the first is 0), its flat arguments and outputs mapped to the caller's by ``sig``;
    ``costs``: the equations' FLOPs and bytes, when the caller has them;
    ``layers``: how many layers each stage holds, when the caller knows (else counted from
    the repeated run ``run``); ``loops``, ``arg_pieces``, ``caller_avals``: as the
    :class:`StagedProgram` fields of those names."""
    jaxpr = closed.jaxpr
    eqns = jaxpr.eqns
    bounds = [*starts, len(eqns)]
    arg_index = {v: i for i, v in enumerate(jaxpr.invars)}
    owner, def_order = _owners(eqns, bounds)
    per_stage = stage_eqns(eqns, bounds, owner, find_remade(jaxpr))
    params_of, recv_of, out_vars_of = _stage_vars(jaxpr, per_stage, owner, arg_index)
    flops, nbytes = costs if costs is not None else eqn_costs(eqns)
    S = len(starts)
    pvars = [sorted(params_of[s], key=lambda v: arg_index[v]) for s in range(S)]
    rvars = [sorted(recv_of[s], key=lambda v: def_order[v]) for s in range(S)]
    ovars = [sorted(out_vars_of[s], key=lambda v: def_order[v]) for s in range(S)]
    out_pos = [{v: k for k, v in enumerate(ovars[s])} for s in range(S)]
    receives = [
        tuple(Receive(owner[v], out_pos[owner[v]][v], J.sds(v.aval)) for v in rvars[s])
        for s in range(S)
    ]
    sends = _sends(receives)
    out_sources, program_outputs = _output_sources(closed, owner, out_pos, arg_index)
    stages: list[Stage] = []
    for s in range(S):
        lo, hi = bounds[s], bounds[s + 1]
        mine = per_stage[s]
        f, b = flops[lo:hi], nbytes[lo:hi]
        if len(mine) != hi - lo or any(x is not y for x, y in zip(mine, eqns[lo:hi], strict=True)):
            f, b = eqn_costs(mine)  # it makes values itself, or dead equations went
        stages.append(
            Stage(
                index=s,
                jaxpr=J.make_closed(closed, [*pvars[s], *rvars[s]], mine, ovars[s]),
                params_needed=tuple(arg_index[v] for v in pvars[s]),
                param_paths=tuple(sig.paths[arg_index[v]] for v in pvars[s]),
                param_argnums=tuple(sig.argnum_of[arg_index[v]] for v in pvars[s]),
                receives=receives[s],
                outputs=tuple(J.sds(v.aval) for v in ovars[s]),
                sends=sends[s],
                program_outputs=program_outputs[s],
                cost=_stage_cost(cm, mine, f, b, pvars[s], rvars[s]),
                num_eqns=len(mine),
                layers=layers[s]
                if layers is not None
                else None
                if run is None
                else _layers_in(run, lo, hi),
            )
        )
    return StagedProgram(
        stages=tuple(stages),
        jaxpr=closed,
        in_tree=sig.in_tree,
        out_tree=sig.out_tree,
        in_avals=[J.sds(a) for a in closed.in_avals],
        in_paths=list(sig.paths),
        out_avals=[J.sds(a) for a in closed.out_avals],
        out_sources=out_sources,
        cost_model=cm,
        partition=part,
        repeated=run,
        loops=loops,
        arg_pieces=arg_pieces,
        caller_avals=caller_avals,
    )


def _layers_in(run: RepeatedRun, lo: int, hi: int) -> int:
    """How many of the repeated layers start in equations ``[lo, hi)``."""
    return sum(1 for b in run.boundaries[:-1] if lo <= b < hi)


def _sends(receives: Sequence[tuple[Receive, ...]]) -> list[tuple[Send, ...]]:
    """Per stage, the :class:`Send` of every value a later stage receives from it (in the
    order of the receiving stages and their inputs): ``receives`` read from the other end."""
    sends: list[list[Send]] = [[] for _ in receives]
    for dst, recv in enumerate(receives):
        for k, r in enumerate(recv):
            sends[r.src].append(Send(dst, r.output, k, r.aval))
    return [tuple(x) for x in sends]


def _owners(eqns: Sequence[Any], bounds: list[int]) -> tuple[dict[Any, int], dict[Any, int]]:
    """Which stage defines each variable, and the order variables are defined in."""
    owner: dict[Any, int] = {}
    def_order: dict[Any, int] = {}
    for s in range(len(bounds) - 1):
        for e in eqns[bounds[s] : bounds[s + 1]]:
            for v in e.outvars:
                owner[v] = s
                def_order[v] = len(def_order)
    return owner, def_order


def _stage_vars(
    jaxpr: Any,
    per_stage: list[list[Any]],
    owner: dict[Any, int],
    arg_index: dict[Any, int],
) -> tuple[list[dict[Any, None]], list[dict[Any, None]], list[dict[Any, None]]]:
    """Per stage (``per_stage``: its equations, pruned here to those its outputs need): the
    program arguments it reads, the values it receives from other stages (not those it makes
    itself), and the values it sends on or returns as program outputs (ordered sets).

    Stages are walked from the last: a value a later stage makes itself instead of receiving
    it is then no output of the stage that made it, and the equations making it there go
    (with the arguments only they read).
    """
    S = len(per_stage)
    params_of: list[dict[Any, None]] = [{} for _ in range(S)]
    recv_of: list[dict[Any, None]] = [{} for _ in range(S)]
    out_vars_of: list[dict[Any, None]] = [{} for _ in range(S)]
    for v in jaxpr.outvars:
        if not isinstance(v, J.Literal) and v in owner:
            out_vars_of[owner[v]][v] = None
    for s in reversed(range(S)):
        keep = J.needed_eqns(per_stage[s], out_vars_of[s])
        live = [e for e, k in zip(per_stage[s], keep, strict=True) if k]
        per_stage[s] = trim_markers(live, out_vars_of[s])
        made: set[Any] = set()
        for e in per_stage[s]:
            for v in e.invars:
                if isinstance(v, J.Literal) or v in made:
                    continue
                if v in arg_index:
                    params_of[s][v] = None
                elif v in owner and owner[v] != s:
                    recv_of[s][v] = None
                    out_vars_of[owner[v]][v] = None
            made.update(e.outvars)
    return params_of, recv_of, out_vars_of


def _stage_cost(
    cm: CostModel,
    eqns: Sequence[Any],
    flops: np.ndarray,
    nbytes: np.ndarray,
    pvars: Sequence[Any],
    rvars: Sequence[Any],
) -> StageCost:
    """A stage's predicted cost from its equations' FLOPs and bytes (roofline per equation)."""
    ct = float(roofline_times(cm, flops, nbytes).sum())
    recv_bytes = sum(J.aval_bytes(v.aval) for v in rvars)
    param_bytes = sum(J.aval_bytes(v.aval) for v in pvars)
    act = sum(J.aval_bytes(v.aval) for e in eqns for v in e.outvars)
    return StageCost(float(flops.sum()), float(nbytes.sum()), ct, recv_bytes,
                     cm.transfer_time(recv_bytes), param_bytes, param_bytes + act)  # fmt: skip


def _output_sources(
    closed: J.ClosedJaxpr,
    owner: dict[Any, int],
    out_pos: list[dict[Any, int]],
    arg_index: dict[Any, int],
) -> tuple[list[OutputSource], list[tuple[tuple[int, int], ...]]]:
    """Where each program output comes from, and per stage the program outputs it returns
    (``(its output, the program's output)`` pairs)."""
    const_index = {v: i for i, v in enumerate(closed.jaxpr.constvars)}
    out_sources: list[OutputSource] = []
    returns: list[list[tuple[int, int]]] = [[] for _ in out_pos]
    for k, v in enumerate(closed.jaxpr.outvars):
        if isinstance(v, J.Literal):
            out_sources.append(OutputSource(SourceKind.CONST, value=v.val))
        elif v in owner:
            s = owner[v]
            out_sources.append(OutputSource(SourceKind.STAGE, s, out_pos[s][v]))
            returns[s].append((out_pos[s][v], k))
        elif v in arg_index:
            out_sources.append(OutputSource(SourceKind.ARG, index=arg_index[v]))
        else:
            out_sources.append(OutputSource(SourceKind.CONST, value=closed.consts[const_index[v]]))
    return out_sources, [tuple(r) for r in returns]
