"""Per-stage executables, compiled once per (stage, kind, mesh, shardings) and cached.

Shardings are pinned, never left to chance between a producer and its consumer. What crosses
a stage's boundary follows :meth:`Placement.data` (per-microbatch values: received inputs,
outputs, their cotangents, batch slices: split on the mesh's ``"data"`` axis), so a transfer
is a copy, or one reshard when the two ranks' meshes differ. Parameters follow the sharding
the pipeline asks for (the user's ``param_specs``, the program's annotations, replicated by
default); ``None`` leaves one to propagation.

Merge, then split (``stages.compile_merged``, the machinery of ``stages.shard_stage``): the
stage's forward and backward are compiled once as **one** program with those shardings pinned,
and the shardings propagation chose there for the residuals, the propagated parameters and the
gradients are read out; F, B and FB are then compiled apart with all of them pinned. I and W
are merged and split the same way (I's residuals for W decided on the merged I+W). So a
forward and its backward never disagree on a residual's layout, and neither holds a collective
the merged program did not (``collective_counts`` counts them in the compiled HLO).
"""

from __future__ import annotations

import enum
import re
import threading
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

import jax
import numpy as np
from jax.extend.core import jaxpr_as_fun

from hlopipe.errors import ScheduleError
from hlopipe.planfile import Recompute
from hlopipe.runtime._placement import Placement
from hlopipe.schedules import Kind
from hlopipe.stages import Stage, StageAutodiff, compile_merged

# Stage -> {key: compiled}; shared by every Pipeline built on the same StagedProgram, so that
# rebuilding a pipeline (another schedule on the same placement) does not recompile.
_CACHE: weakref.WeakKeyDictionary[Stage, dict[Any, Any]] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


class ExecKind(enum.StrEnum):
    """What :meth:`StageExecutables.get` compiles and caches for a stage (see that class):
    the executables a step runs, and the merged programs their shardings are read from.

    Not :class:`schedules.Kind`: a ``Kind`` is what a schedule's action does, an ``ExecKind``
    what is compiled. Four share a name (F, B, I, W); INFER, FB and the merged programs are
    no action's, and a schedule's sends and receives are no executable.
    :func:`executable_of` is the one mapping from the first to the second.
    """

    INFER = "infer"  # forward only, no residuals
    F = "F"  # forward, keeping residuals (schedules.Kind.F)
    B = "B"  # full backward (schedules.Kind.B)
    I = "I"  # backward for inputs (schedules.Kind.I)
    W = "W"  # backward for weights (schedules.Kind.W)
    FB = "FB"  # a forward and its backward fused into one executable
    MERGED = "merged"  # F + B merged, compiled once to read shardings from, never run
    MERGED_LAYOUT = "merged_layout"  # the shardings read from MERGED
    MERGED_IW = "merged_IW"  # I + W merged, likewise
    MERGED_IW_LAYOUT = "merged_IW_layout"  # the shardings read from MERGED_IW


def executable_of(
    kind: Kind, *, train: bool, fused_fb: bool = False, fused_iw: bool = False
) -> ExecKind | None:
    """The executable a step runs for a schedule action of ``kind``, for every ``Kind``.

    Args:
      kind: the action's kind.
      train: a training step (else inference: a forward keeps no residuals).
      fused_fb: the action's stage and microbatch run F and B as one ``FB`` (the B then runs
        nothing of its own).
      fused_iw: its I and W run as one ``B`` (the W then runs nothing of its own).

    Returns:
      the :class:`ExecKind`; ``None`` for an action that moves data (a send or receive) or
      whose work ran in another action's executable.

    Raises:
      ScheduleError: an ``OVERLAP_F_B`` (a step runs its two parts: ``split_overlaps``).
    """
    match kind:
        case Kind.F:
            return ExecKind.INFER if not train else ExecKind.FB if fused_fb else ExecKind.F
        case Kind.B:
            return None if fused_fb else ExecKind.B
        case Kind.I:
            return ExecKind.B if fused_iw else ExecKind.I
        case Kind.W:
            return None if fused_iw else ExecKind.W
        case Kind.SEND_F | Kind.RECV_F | Kind.SEND_B | Kind.RECV_B:
            return None
        case Kind.OVERLAP_F_B:
            raise ScheduleError(
                "an OVERLAP_F_B action runs no executable of its own: split the schedule's "
                "overlaps (schedules.split_overlaps) into their forward and backward first"
            )
        case _:  # pragma: no cover - mypy checks every Kind is above
            assert_never(kind)


_COLLECTIVE = re.compile(
    r"=\s*(\([^)]*\)|\S+)\s+(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
    r"collective-broadcast|ragged-all-to-all)(?:-start)?\("
)
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
          "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}  # fmt: skip


def collective_counts(compiled: Any) -> dict[str, tuple[int, int]]:
    """Collectives in a compiled executable's HLO: ``{op: (count, bytes of results)}``
    (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
    ``collective-permute``; an async ``-start``/``-done`` pair counts once)."""
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    out: dict[str, tuple[int, int]] = {}
    for m in _COLLECTIVE.finditer(text):
        shape, op = m.group(1), m.group(2)
        nbytes = 0
        for dt, dims in re.findall(r"([a-z]+\d*)\[([\d,]*)\]", shape):
            n = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
            nbytes += n * _BYTES.get(dt, 4)
        c, b = out.get(op, (0, 0))
        out[op] = (c + 1, b + nbytes)
    return out


def _sds(avals: Sequence[Any]) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]


@dataclass(eq=False)
class StageExecutables:
    """The compiled functions of one stage on its rank (flat positional arrays in and out).

    * ``infer(*params, *inputs) -> outputs``
    * ``F(*params, *inputs) -> (*outputs, *residuals)``
    * ``B(*params, *residuals, *out_cts, *acc) -> (*input_cts, *acc)`` — accumulates the
      parameter gradients into ``acc`` (donated).
    * ``I(*params, *residuals, *out_cts) -> (*input_cts, *w_residuals)``
    * ``W(*params, *w_residuals, *acc) -> acc`` (``acc`` donated)
    * ``FB(*params, *inputs, *out_cts, *acc) -> (*outputs, *input_cts, *acc)``: forward and
      backward fused, for a stage whose output cotangents are known when its forward runs (the
      loss stage) and whose B directly follows its F; XLA then keeps no residuals at all.
    * ``merged`` / ``merged_IW``: the merged programs the shardings were read from (compiled
      once, never run).

    ``params`` are the stage's flat arguments (``stage.params_needed``: parameters and batch
    slices); ``acc`` holds the gradients of ``autodiff.diff_params``. ``requested_shardings``
    is what the pipeline asked for each parameter (``None``: propagation decides);
    :attr:`param_shardings` what the stage actually uses (read from the merged program).
    ``grad_shardings``, where given, is asked of each parameter's gradient (accumulator)
    instead of its parameter's (ZeRO-2: split over the data axis, the parameter not).
    """

    stage: Stage
    rank: int
    mesh: Any
    requested_shardings: list[Any]
    input_shardings: list[Any]
    output_shardings: list[Any]
    argnums: tuple[int, ...]
    remat: bool | Recompute  # what the backward recomputes (True: everything)
    device_ids: tuple[int, ...]
    train: bool = True
    grad_shardings: list[Any] | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _layout: dict[str, list[Any]] | None = field(default=None, repr=False)

    @property
    def autodiff(self) -> StageAutodiff:
        # Traced on first use (the Stage caches it), so inference never differentiates.
        return self.stage.forward_backward(self.argnums, remat=self.remat)

    @property
    def out_ct_shardings(self) -> list[Any]:
        return [self.output_shardings[k] for k in self.autodiff.diff_outputs]

    @property
    def input_ct_shardings(self) -> list[Any]:
        return [self.input_shardings[k] for k in self.autodiff.diff_inputs]

    @property
    def param_shardings(self) -> list[Any]:
        """The shardings of the stage's flat arguments (resolved: nothing left ``None``)."""
        if all(s is not None for s in self.requested_shardings):
            return list(self.requested_shardings)
        return self.layout()["params"]

    @property
    def acc_shardings(self) -> list[Any]:
        return self.layout()["grads"]

    @property
    def acc_avals(self) -> list[jax.ShapeDtypeStruct]:
        avals = self.stage.param_avals
        return [avals[k] for k in self.autodiff.diff_params]

    def _key(self, kind: ExecKind) -> Any:
        specs = tuple(
            "-" if s is None else str(s.spec)
            for s in (
                *self.requested_shardings,
                *self.input_shardings,
                *self.output_shardings,
                *(self.grad_shardings or ()),
            )
        )
        mesh = (tuple(self.mesh.axis_names), tuple(self.mesh.devices.shape))
        return (kind, self.argnums, self.remat, self.device_ids, mesh, specs)

    def get(self, kind: ExecKind) -> Any:
        """The compiled executable of ``kind`` (compiled on first use)."""
        with _CACHE_LOCK:
            cache = _CACHE.setdefault(self.stage, {})
        key = self._key(kind)
        hit = cache.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = cache.get(key)
            if hit is None:
                hit = cache[key] = getattr(self, f"_compile_{kind.value}")()
            return hit

    def layout(self) -> dict[str, list[Any]]:
        """The shardings read from the merged program(s): ``params``, ``residuals``,
        ``grads`` (and ``w_residuals`` once :meth:`w_layout` ran)."""
        if self._layout is None:
            self._layout = self.get(ExecKind.MERGED_LAYOUT)
        return self._layout

    def residual_shardings(self) -> list[Any]:
        return self.layout()["residuals"]

    def w_residual_shardings(self) -> list[Any]:
        return self.get(ExecKind.MERGED_IW_LAYOUT)["w_residuals"]

    # -- merged programs -----------------------------------------------------------------------

    def _grad_pins(self) -> list[Any]:
        asked = self.requested_shardings if self.grad_shardings is None else self.grad_shardings
        return [asked[k] for k in self.autodiff.diff_params]

    def _compile_merged_layout(self) -> dict[str, list[Any]]:
        if not self.train:
            # Forward only: the inference program decides the propagated parameters.
            c = self.get(ExecKind.INFER)
            ins = _flat(c.input_shardings[0])
            return {"params": ins[: len(self.requested_shardings)], "residuals": [], "grads": []}
        fb = self.autodiff
        P, O, R = fb.num_params, fb.num_outputs, fb.num_residuals
        GI = len(fb.diff_inputs)
        m_in, m_out = self._merge(
            ExecKind.MERGED,
            fb.forward_jaxpr,
            fb.backward_jaxpr,
            O,
            param_shardings=self.requested_shardings,
            input_shardings=self.input_shardings,
            output_shardings=self.output_shardings,
            ct_shardings=self.out_ct_shardings,
            result_shardings=[*self.input_ct_shardings, *self._grad_pins()],
        )
        return {
            "params": m_in[:P],
            "residuals": m_out[O : O + R],
            "grads": m_out[O + R + GI :],
        }

    def _merge(
        self, kind: ExecKind, forward: Any, backward: Any, num_outputs: int, **pins: Any
    ) -> tuple[list[Any], list[Any]]:
        """``compile_merged`` of ``forward`` + ``backward``: the compiled program is cached
        as ``kind``; returns its flat input and output shardings."""
        m = compile_merged(
            forward, backward, num_params=self.autodiff.num_params, num_outputs=num_outputs,
            **pins,
        )  # fmt: skip
        with _CACHE_LOCK:
            _CACHE.setdefault(self.stage, {})[self._key(kind)] = m.compiled
        return m.in_shardings, m.out_shardings

    def _compile_merged(self) -> Any:
        self.layout()
        return _CACHE[self.stage][self._key(ExecKind.MERGED)]

    def _compile_merged_IW_layout(self) -> dict[str, list[Any]]:
        fb = self.autodiff
        GI, WR = len(fb.diff_inputs), len(fb.w_residual_avals)
        _, m_out = self._merge(
            ExecKind.MERGED_IW,
            fb.input_jaxpr,
            fb.weight_jaxpr,
            GI,
            param_shardings=self.param_shardings,
            input_shardings=[*self.residual_shardings(), *self.out_ct_shardings],
            output_shardings=self.input_ct_shardings,
            ct_shardings=[],
            result_shardings=self.acc_shardings,
        )
        return {"w_residuals": m_out[GI : GI + WR]}

    def _compile_merged_IW(self) -> Any:
        self.get(ExecKind.MERGED_IW_LAYOUT)
        return _CACHE[self.stage][self._key(ExecKind.MERGED_IW)]

    # -- compilers -----------------------------------------------------------------------------
    # Residuals die in the executable that consumes them (B, I; W its own): they are donated
    # with the gradient accumulators, so XLA may write results into their buffers.

    def _compile_infer(self) -> Any:
        params = self.param_shardings if self.train else self.requested_shardings
        return _compile(
            _plain(self.stage.jaxpr),
            _sds(self.stage.jaxpr.in_avals),
            (*params, *self.input_shardings),
            self.output_shardings,
        )

    def _compile_F(self) -> Any:
        fb = self.autodiff
        return _compile(
            _plain(fb.forward_jaxpr),
            _sds(fb.forward_jaxpr.in_avals),
            (*self.param_shardings, *self.input_shardings),
            (*self.output_shardings, *self.residual_shardings()),
        )

    def _compile_B(self) -> Any:
        fb = self.autodiff
        P, R, C = fb.num_params, fb.num_residuals, len(fb.diff_outputs)
        n = P + R + C
        return _compile(
            _accumulating(fb.backward_jaxpr, n, len(fb.diff_inputs)),
            [*_sds(fb.backward_jaxpr.in_avals), *self.acc_avals],
            (
                *self.param_shardings,
                *self.residual_shardings(),
                *self.out_ct_shardings,
                *self.acc_shardings,
            ),
            (*self.input_ct_shardings, *self.acc_shardings),
            donate=(*range(P, P + R), *range(n, n + len(self.acc_avals))),
        )

    def _compile_I(self) -> Any:
        fb = self.autodiff
        P, R = fb.num_params, fb.num_residuals
        return _compile(
            _plain(fb.input_jaxpr),
            _sds(fb.input_jaxpr.in_avals),
            (*self.param_shardings, *self.residual_shardings(), *self.out_ct_shardings),
            (*self.input_ct_shardings, *self.w_residual_shardings()),
            donate=range(P, P + R),
        )

    def _compile_W(self) -> Any:
        fb = self.autodiff
        P, WR = fb.num_params, len(fb.w_residual_avals)
        n = P + WR
        return _compile(
            _accumulating(fb.weight_jaxpr, n, 0),
            [*_sds(fb.weight_jaxpr.in_avals), *self.acc_avals],
            (*self.param_shardings, *self.w_residual_shardings(), *self.acc_shardings),
            self.acc_shardings,
            donate=(*range(P, n), *range(n, n + len(self.acc_avals))),
        )

    def _compile_FB(self) -> Any:
        fb = self.autodiff
        n = len(fb.merged_jaxpr.in_avals)
        return _compile(
            _accumulating(fb.merged_jaxpr, n, fb.num_outputs + len(fb.diff_inputs)),
            [*_sds(fb.merged_jaxpr.in_avals), *self.acc_avals],
            (
                *self.param_shardings,
                *self.input_shardings,
                *self.out_ct_shardings,
                *self.acc_shardings,
            ),
            (*self.output_shardings, *self.input_ct_shardings, *self.acc_shardings),
            donate=range(n, n + len(self.acc_avals)),
        )

    def zeros(self) -> list[Any]:
        """Zero gradients on this rank: the accumulator at the start of a step (copied from
        the host, so no executable is compiled for it)."""
        return [
            jax.device_put(np.zeros(a.shape, a.dtype), sh)
            for a, sh in zip(self.acc_avals, self.acc_shardings, strict=True)
        ]


def _plain(jaxpr: Any) -> Any:
    fn = jaxpr_as_fun(jaxpr)
    return lambda *a: tuple(fn(*a))


def _accumulating(jaxpr: Any, n: int, keep: int) -> Any:
    """``jaxpr`` on the first ``n`` arguments; its results after the first ``keep`` are
    added to the remaining arguments (the gradient accumulators) and returned in their place."""
    fn = jaxpr_as_fun(jaxpr)

    def step(*a: Any) -> tuple[Any, ...]:
        out = fn(*a[:n])
        return (*out[:keep], *(x + g for x, g in zip(a[n:], out[keep:], strict=True)))

    return step


def _compile(
    fn: Any, avals: Sequence[Any], ins: Sequence[Any], outs: Sequence[Any], donate: Any = ()
) -> Any:
    with warnings.catch_warnings():
        # a donated residual no result can reuse is freed when the executable ends, as it
        # would be without donation: nothing to warn about
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        return (
            jax.jit(
                fn,
                in_shardings=tuple(ins),
                out_shardings=tuple(outs),
                donate_argnums=tuple(donate),
                keep_unused=True,
            )
            .lower(*avals)
            .compile()
        )


def _flat(x: Any) -> list[Any]:
    return list(
        jax.tree_util.tree_leaves(x, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding))
    )


def build_executables(
    stage: Stage,
    placement: Placement,
    *,
    num_param_leaves: int,
    argnums: tuple[int, ...],
    remat: bool | Recompute,
    param_sharding: Any = None,
    grad_sharding: Any = None,
    train: bool = True,
) -> StageExecutables:
    """The executables of ``stage`` on its rank under ``placement`` (nothing compiled yet).

    ``param_sharding(rank, p)``: the sharding asked for parameter leaf ``p`` on ``rank``
    (``None``: propagation decides); default replicated. ``grad_sharding(rank, p)``, where
    given: the one asked for its gradient accumulator (default: the parameter's)."""
    rank = placement.rank_of(stage.index)
    rep = placement.replicated(rank)
    param_sh = [
        (rep if param_sharding is None else param_sharding(rank, i))
        if i < num_param_leaves
        else placement.data(rank, a)
        for i, a in zip(stage.params_needed, stage.param_avals, strict=True)
    ]
    grad_sh = None
    if grad_sharding is not None:
        grad_sh = [
            grad_sharding(rank, i) if i < num_param_leaves else sh
            for i, sh in zip(stage.params_needed, param_sh, strict=True)
        ]
    return StageExecutables(
        stage=stage,
        rank=rank,
        mesh=placement.meshes[rank],
        requested_shardings=param_sh,
        input_shardings=[placement.data(rank, r.aval) for r in stage.receives],
        output_shardings=[placement.data(rank, a) for a in stage.outputs],
        argnums=argnums,
        remat=remat,
        device_ids=placement.device_ids(rank),
        train=train,
        grad_shardings=grad_sh,
    )
