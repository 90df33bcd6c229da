"""Per-stage executables, compiled once per (stage, kind, devices, shardings) and cached.

Shardings are pinned, never left to chance between a producer and its consumer: parameters
are replicated on their rank's mesh; per-microbatch values (received inputs, outputs, their
cotangents, batch slices) follow :meth:`Placement.data`, the same rule on every rank, so a
transfer between ranks is a plain copy. The residuals are laid out by sharding propagation in
the forward, and the backward (or I, and I's W residuals for W) is compiled with exactly the
layouts the forward produced, so nothing is resharded between them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.extend.core import jaxpr_as_fun

from hlopipe.runtime._placement import Placement
from hlopipe.stages import Stage, StageAutodiff

# Stage -> {key: compiled}; shared by every Pipeline built on the same StagedProgram, so that
# rebuilding a pipeline (another schedule on the same placement) does not recompile.
_CACHE: weakref.WeakKeyDictionary[Stage, dict[Any, Any]] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()

KINDS = ("infer", "F", "B", "I", "W", "FB")


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

    ``params`` are the stage's flat arguments (``stage.params_needed``: parameters and batch
    slices); ``acc`` holds the gradients of ``autodiff.diff_params``.
    """

    stage: Stage
    rank: int
    param_shardings: list[Any]
    input_shardings: list[Any]
    output_shardings: list[Any]
    argnums: tuple[int, ...]
    remat: bool
    device_ids: tuple[int, ...]
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

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
    def acc_shardings(self) -> list[Any]:
        return [self.param_shardings[k] for k in self.autodiff.diff_params]

    @property
    def acc_avals(self) -> list[jax.ShapeDtypeStruct]:
        avals = self.stage.param_avals
        return [avals[k] for k in self.autodiff.diff_params]

    def _key(self, kind: str) -> Any:
        specs = tuple(
            str(s.spec)
            for s in (*self.param_shardings, *self.input_shardings, *self.output_shardings)
        )
        return (kind, self.argnums, self.remat, self.device_ids, specs)

    def get(self, kind: str) -> Any:
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
                hit = cache[key] = getattr(self, f"_compile_{kind}")()
            return hit

    def residual_shardings(self) -> list[Any]:
        out = list(self.get("F").output_shardings)
        return out[len(self.stage.outputs) :]

    def w_residual_shardings(self) -> list[Any]:
        out = list(self.get("I").output_shardings)
        return out[len(self.autodiff.diff_inputs) :]

    # -- compilers -----------------------------------------------------------------------------

    def _compile_infer(self) -> Any:
        fn = jaxpr_as_fun(self.stage.jaxpr)
        return (
            jax.jit(
                lambda *a: tuple(fn(*a)),
                in_shardings=(*self.param_shardings, *self.input_shardings),
                out_shardings=tuple(self.output_shardings),
                keep_unused=True,
            )
            .lower(*_sds(self.stage.jaxpr.in_avals))
            .compile()
        )

    def _compile_F(self) -> Any:
        fb = self.autodiff
        fn = jaxpr_as_fun(fb.forward_jaxpr)
        return (
            jax.jit(
                lambda *a: tuple(fn(*a)),
                in_shardings=(*self.param_shardings, *self.input_shardings),
                out_shardings=(*self.output_shardings, *[None] * fb.num_residuals),
                keep_unused=True,
            )
            .lower(*_sds(fb.forward_jaxpr.in_avals))
            .compile()
        )

    def _compile_B(self) -> Any:
        fb = self.autodiff
        bwd = jaxpr_as_fun(fb.backward_jaxpr)
        P, R, C = fb.num_params, fb.num_residuals, len(fb.diff_outputs)
        G = len(fb.diff_params)
        GI = len(fb.diff_inputs)

        def step(*a: Any) -> tuple[Any, ...]:
            out = bwd(*a[: P + R + C])
            acc = a[P + R + C :]
            return (*out[:GI], *(x + g for x, g in zip(acc, out[GI:])))

        avals = [*_sds(fb.backward_jaxpr.in_avals), *self.acc_avals]
        return (
            jax.jit(
                step,
                in_shardings=(
                    *self.param_shardings,
                    *self.residual_shardings(),
                    *self.out_ct_shardings,
                    *self.acc_shardings,
                ),
                out_shardings=(*self.input_ct_shardings, *self.acc_shardings),
                donate_argnums=tuple(range(P + R + C, P + R + C + G)),
                keep_unused=True,
            )
            .lower(*avals)
            .compile()
        )

    def _compile_I(self) -> Any:
        fb = self.autodiff
        fn = jaxpr_as_fun(fb.input_jaxpr)
        return (
            jax.jit(
                lambda *a: tuple(fn(*a)),
                in_shardings=(
                    *self.param_shardings,
                    *self.residual_shardings(),
                    *self.out_ct_shardings,
                ),
                out_shardings=(*self.input_ct_shardings, *[None] * len(fb.w_residual_avals)),
                keep_unused=True,
            )
            .lower(*_sds(fb.input_jaxpr.in_avals))
            .compile()
        )

    def _compile_W(self) -> Any:
        fb = self.autodiff
        fn = jaxpr_as_fun(fb.weight_jaxpr)
        P, WR, G = fb.num_params, len(fb.w_residual_avals), len(fb.diff_params)

        def step(*a: Any) -> tuple[Any, ...]:
            gp = fn(*a[: P + WR])
            return tuple(x + g for x, g in zip(a[P + WR :], gp))

        avals = [*_sds(fb.weight_jaxpr.in_avals), *self.acc_avals]
        return (
            jax.jit(
                step,
                in_shardings=(
                    *self.param_shardings,
                    *self.w_residual_shardings(),
                    *self.acc_shardings,
                ),
                out_shardings=tuple(self.acc_shardings),
                donate_argnums=tuple(range(P + WR, P + WR + G)),
                keep_unused=True,
            )
            .lower(*avals)
            .compile()
        )

    def _compile_FB(self) -> Any:
        fb = self.autodiff
        merged = jaxpr_as_fun(fb.merged_jaxpr)
        n_in = len(fb.merged_jaxpr.in_avals)
        O, GI, G = fb.num_outputs, len(fb.diff_inputs), len(fb.diff_params)

        def step(*a: Any) -> tuple[Any, ...]:
            out = merged(*a[:n_in])
            acc = a[n_in:]
            grads = out[O + GI :]
            return (*out[: O + GI], *(x + g for x, g in zip(acc, grads)))

        avals = [*_sds(fb.merged_jaxpr.in_avals), *self.acc_avals]
        return (
            jax.jit(
                step,
                in_shardings=(
                    *self.param_shardings,
                    *self.input_shardings,
                    *self.out_ct_shardings,
                    *self.acc_shardings,
                ),
                out_shardings=(
                    *self.output_shardings,
                    *self.input_ct_shardings,
                    *self.acc_shardings,
                ),
                donate_argnums=tuple(range(n_in, n_in + G)),
                keep_unused=True,
            )
            .lower(*avals)
            .compile()
        )

    def zeros(self) -> list[Any]:
        """Zero gradients on this rank: the accumulator at the start of a step (copied from
        the host, so no executable is compiled for it)."""
        return [
            jax.device_put(np.zeros(a.shape, a.dtype), sh)
            for a, sh in zip(self.acc_avals, self.acc_shardings)
        ]


def build_executables(
    stage: Stage,
    placement: Placement,
    *,
    num_param_leaves: int,
    argnums: tuple[int, ...],
    remat: bool,
) -> StageExecutables:
    """The executables of ``stage`` on its rank under ``placement`` (nothing compiled yet)."""
    rank = placement.rank_of(stage.index)
    rep = placement.replicated(rank)
    param_sh = [
        rep if i < num_param_leaves else placement.data(rank, a)
        for i, a in zip(stage.params_needed, stage.param_avals)
    ]
    return StageExecutables(
        stage=stage,
        rank=rank,
        param_shardings=param_sh,
        input_shardings=[placement.data(rank, r.aval) for r in stage.receives],
        output_shardings=[placement.data(rank, a) for a in stage.outputs],
        argnums=argnums,
        remat=remat,
        device_ids=placement.device_ids(rank),
    )
