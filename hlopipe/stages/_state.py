"""Splitting a program that carries state (a decode step and its KV cache) so that each piece
of state stays on one stage.

A state argument (aliased to an output: see ``hlopipe.io._roles``) must be read only by the
stage that makes its new value; then that stage keeps it on its devices from call to call and
updates it in place, and no byte of it ever crosses a stage boundary. :func:`split_stateful`
splits as :func:`~hlopipe.stages.split` does and checks exactly that, and that no value sent
between stages is a version of a state argument (a value between the argument and its aliased
output with its shape and dtype: what a cache chained through every layer would send).
Whatever cannot be kept local is refused with a :class:`~hlopipe.errors.StageError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._partition import NoLocalCut, state_versions
from hlopipe.stages._split import StagedProgram, split
from hlopipe.stages._staged import SourceKind


class StateCrossesStages(StageError):
    """A state argument (or a version of it) would cross stages: what a stacked cache may
    avoid by slicing (``hlopipe.stages._stacked``)."""


@dataclass(frozen=True)
class StateSlot:
    """State argument ``arg`` (path ``path``) lives on ``stage``; its new value is output
    ``stage_output`` of that stage (``None`` when the program returns it unchanged)."""

    arg: int
    output: int
    path: str
    stage: int
    stage_output: int | None
    nbytes: int


@dataclass(frozen=True)
class StateSend:
    """A piece of state argument ``path`` (an updated K or V, not the whole cache) that output
    ``output`` of stage ``src`` sends to stage ``dst`` on every call, because stage markers cut
    between its update and a read of it: state sent, counted as such."""

    src: int
    output: int
    dst: int
    path: str
    nbytes: int


@dataclass(frozen=True, eq=False)
class StatefulSplit:
    """A :class:`StagedProgram` whose state stays on its stages.

    Attributes:
      staged: the split program.
      roles: the argument roles (an ``ArgRoles``).
      slots: per state argument, where it lives (:class:`StateSlot`), in argument order.
      feedback: ``(argument, output)`` pairs fed from one call to the next.
      state_sent: the pieces of state sent between stages (:class:`StateSend`): none unless
        stage markers cut between a cache's update and a read of it (the cost model never
        does); a whole cache sent is refused instead.
    """

    staged: StagedProgram
    roles: Any
    slots: list[StateSlot]
    feedback: list[tuple[int, int]]
    state_sent: tuple[StateSend, ...] = ()
    _by_stage: dict[int, list[StateSlot]] = field(default_factory=dict, repr=False)
    _layer_keys: dict[int, frozenset[int]] = field(default_factory=dict, repr=False)

    @property
    def num_stages(self) -> int:
        return self.staged.num_stages

    def state_of(self, stage: int) -> list[StateSlot]:
        """The state slots stage ``stage`` keeps."""
        if not self._by_stage:
            for s in range(self.num_stages):
                self._by_stage[s] = [x for x in self.slots if x.stage == s]
        return self._by_stage[stage]

    def layers_of(self, stage: int) -> list[str]:
        """The paths of the state a stage keeps (a layer's cache names its layer)."""
        return [x.path for x in self.state_of(stage)]

    def layer_keys(self) -> dict[int, frozenset[int]]:
        """Per state argument, its layer told by data flow: the other state arguments its
        new value is computed from. A layer's K and V caches are written from the same
        residual stream, which the caches of every layer before it feed and no later one
        does, so they share a key and two layers never do, whatever the caches are named."""
        if self.slots and not self._layer_keys:
            jaxpr = J.inline(self.staged.jaxpr, lambda e: True).jaxpr
            args = [x.arg for x in self.slots]
            bit = {jaxpr.invars[a]: 1 << n for n, a in enumerate(args)}
            fed: dict[Any, int] = dict(bit)  # var -> the state arguments it is computed from
            for e in jaxpr.eqns:
                m = 0
                for v in e.invars:
                    if not isinstance(v, J.Literal):
                        m |= fed.get(v, 0)
                for v in e.outvars:
                    fed[v] = m
            for n, x in enumerate(self.slots):
                out = jaxpr.outvars[x.output]
                m = 0 if isinstance(out, J.Literal) else fed.get(out, 0) & ~(1 << n)
                self._layer_keys[x.arg] = frozenset(a for k, a in enumerate(args) if m >> k & 1)
        return self._layer_keys


def split_stateful(
    program: Any,
    roles: Any,
    *,
    num_stages: int | None = None,
    example_args: Sequence[Any] = (),
    what: str = "the program",
) -> StatefulSplit:
    """Split ``program`` (a loaded Program or a function of flat arguments) keeping state local.

    Cut points chosen by the cost model are only those that keep each state argument's
    reads (of it and of its versions) and the making of its new value on one stage.

    Raises:
      StageError naming the state argument that more than one stage reads, or that a stage
      other than its reader makes, or the stage pair a version of it would cross, or that no
      cut into ``num_stages`` keeps on one stage.
    """
    pairs = [(r.index, int(r.output)) for r in roles.state if r.output is not None]
    try:
        staged = split(program, *example_args, num_stages=num_stages, local_state=pairs)
    except NoLocalCut as e:
        raise StateCrossesStages(f"{what}: {e}") from e
    paths = [r.path for r in roles]
    slots: list[StateSlot] = []
    for r in roles.state:
        readers = [st.index for st in staged.stages if r.index in st.params_needed]
        src = staged.out_sources[r.output]
        if src.kind is SourceKind.STAGE:
            owner, out = src.stage, src.index
        elif src.kind is SourceKind.ARG and src.index == r.index:
            owner, out = (readers[0] if readers else 0), None
        else:
            raise StageError(
                f"{what}: state argument {r.index} ({paths[r.index]}) is aliased to output "
                f"{r.output}, which is not made by any stage (a constant or another argument); "
                "it cannot be carried"
            )
        wrong = [s for s in readers if s != owner]
        if wrong:
            raise StateCrossesStages(
                f"{what}: state argument {r.index} ({paths[r.index]}) is read by stage(s) "
                f"{', '.join(map(str, wrong))} but its new value (output {r.output}) is made by "
                f"stage {owner}: it would cross stages. Keep one cache per layer (or index one "
                "stacked over the layers with constant layer indices) or cut so that whatever "
                "reads it is on one stage"
            )
        slots.append(
            StateSlot(r.index, r.output, paths[r.index], owner, out, J.aval_bytes(_aval(r)))
        )
    items = [(r.index, r.output, r.path, r.shape, r.dtype) for r in roles.state]
    found = state_versions_sent(staged, items)
    versions = [(s, d, path) for s, _, d, path, whole in found if whole]
    if versions:
        s, d, path = versions[0]
        raise StateCrossesStages(
            f"{what}: a version of state argument {path} would be sent from stage {s} to stage "
            f"{d} ({len(versions)} value(s) of state cross stages); the state must stay on its "
            "stage"
        )
    feedback = [(r.index, int(r.output)) for r in roles.feedback if r.output is not None]
    sent = tuple(
        StateSend(s, o, d, path, J.aval_bytes(staged.stages[s].outputs[o]))
        for s, o, d, path, _ in found
    )
    return StatefulSplit(staged, roles, slots, feedback, sent)


def _aval(role: Any) -> Any:
    import jax
    import numpy as np

    return jax.ShapeDtypeStruct(role.shape, np.dtype(role.dtype))


def state_sends(
    staged: StagedProgram, items: Sequence[tuple[int | None, int, str, Any, Any]]
) -> list[tuple[int, int, str]]:
    """``(src, dst, path)`` of each value sent between stages that is the state the ``items``
    name as ``(argument or None, output, path, shape, dtype)``: a value with its shape and
    dtype that reaches the output (and comes from the argument, when there is one)."""
    return [(s, d, path) for s, _, d, path, whole in state_versions_sent(staged, items) if whole]


def state_versions_sent(
    staged: StagedProgram, items: Sequence[tuple[int | None, int, str, Any, Any]]
) -> list[tuple[int, int, int, str, bool]]:
    """``(src stage, src output, dst stage, path, whole)`` of each value sent between stages
    that is a version of the state ``items`` name (see :func:`state_sends`): ``whole`` when it
    has the state's shape and dtype on the way to its output (the cache itself would travel),
    else a piece of it (an updated K or V read by attention on a later stage)."""
    jaxpr = staged.jaxpr.jaxpr
    sent: dict[Any, list[tuple[int, int, int]]] = {}
    for st in staged.stages:
        for snd in st.sends:
            var = st.jaxpr.jaxpr.outvars[snd.output]
            sent.setdefault(var, []).append((st.index, snd.output, snd.dst))
    found: list[tuple[int, int, int, str, bool]] = []
    for arg, output, path, shape, dtype in items if sent else ():
        up = _ancestors(jaxpr, jaxpr.outvars[output])
        down = _descendants(jaxpr, jaxpr.invars[arg]) if arg is not None else up
        pieces = state_versions(jaxpr, arg, output) if arg is not None else set()
        key = (tuple(shape), str(dtype))
        for var, where in sent.items():
            whole = var in down and var in up
            whole = whole and (tuple(var.aval.shape), str(var.aval.dtype)) == key
            if whole or var in pieces:
                found += [(s, o, d, path, whole) for s, o, d in where]
    return found


def _descendants(jaxpr: Any, var: Any) -> set[Any]:
    seen = {var}
    for e in jaxpr.eqns:
        if any(not isinstance(v, J.Literal) and v in seen for v in e.invars):
            seen.update(e.outvars)
    return seen


def _ancestors(jaxpr: Any, var: Any) -> set[Any]:
    seen = {var} if not isinstance(var, J.Literal) else set()
    for e in reversed(jaxpr.eqns):
        if any(v in seen for v in e.outvars):
            seen.update(v for v in e.invars if not isinstance(v, J.Literal))
    return seen


def length_axes(closed: Any, state_args: Sequence[int], position_arg: int) -> dict[int, set[int]]:
    """Per state argument, the axes of it that the position indexes, read from the update
    chain: every ``dynamic_update_slice`` whose operand comes from the argument and one of
    whose start indices comes from ``position_arg``. The operand may be a piece of the state
    (one layer of a cache stacked ``[b, L, 2, T, ...]``, its K or V): its axes are matched to
    the state's as a subsequence of equal sizes, and the indexed axis counts only where every
    such match agrees. An empty set: the chain does not tell (no such update, or a reshape
    that merges axes on the way)."""
    closed = J.inline(closed, lambda e: True)
    jaxpr = closed.jaxpr
    pos = _descendants(jaxpr, jaxpr.invars[position_arg])
    found: dict[int, set[int]] = {}
    for arg in state_args:
        var = jaxpr.invars[arg]
        full = tuple(var.aval.shape)
        down = _descendants(jaxpr, var)
        axes: set[int] = set()
        for e in jaxpr.eqns:
            if e.primitive.name != "dynamic_update_slice" or e.invars[0] not in down:
                continue
            sub = tuple(e.invars[0].aval.shape)
            for j, idx in enumerate(e.invars[2:]):
                if isinstance(idx, J.Literal) or idx not in pos:
                    continue
                at = {m[j] for m in _embeddings(sub, full)}
                if len(at) == 1:
                    axes |= at
        found[arg] = axes
    return found


def _embeddings(sub: tuple[int, ...], full: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every increasing map of ``sub``'s axes onto ``full``'s with equal sizes."""
    if not sub:
        return [()]
    out: list[tuple[int, ...]] = []
    for i in range(len(full) - len(sub) + 1):
        if full[i] == sub[0]:
            out += [(i, *(i + 1 + k for k in rest))
                    for rest in _embeddings(sub[1:], full[i + 1 :])]  # fmt: skip
    return out
