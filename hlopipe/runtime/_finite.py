"""Non-finite losses and gradients: never a match, and found where they start.

:func:`check_step` is ``Pipeline(check_finite=True)``'s test after each step's backward, before
the optimizer touches the parameters: every microbatch loss and every stage's accumulated
gradient finite, or :class:`NonFiniteError`. Its message names the step and, found by
:func:`locate` replaying that step one stage at a time on the host's default device (in one
process), the first microbatch, stage and action (``1F0``: forward of stage 1 on microbatch
0; ``1B0`` its backward) whose outputs or gradients are not finite, in data-flow order
(microbatch by microbatch, the forward through the stages, then the backward back through
them). :func:`compare_losses` is ``hlopipe train --check``'s verdict: two runs whose losses
are not all finite never match.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.errors import NonFiniteError
from hlopipe.runtime._comm import host_value
from hlopipe.runtime._plan import LossReduction

_HINT = (
    "the program computes it from these parameters and data (not the learning rate: nothing "
    "was updated yet in this step)"
)


def compare_losses(
    losses: Sequence[float], reference: Sequence[float], rtol: float = 1e-4
) -> tuple[bool, str]:
    """Whether two runs' losses agree (within ``rtol`` of the largest), and a verdict line's
    ending: ``max |loss difference| ... (match)``; a non-finite loss in either run is never a
    match (NaN - NaN is no difference to compare)."""
    bad = [
        f"{who} step {k + 1}: {v}"
        for who, run in (("pipeline", losses), ("one device", reference))
        for k, v in enumerate(run)
        if not math.isfinite(v)
    ]
    if bad:
        return False, f"loss not finite ({bad[0]}) (DIFFERENT: non-finite never matches)"
    diff = max((abs(a - b) for a, b in zip(losses, reference, strict=True)), default=0.0)
    ok = diff <= rtol * max(1.0, max((abs(x) for x in reference), default=0.0))
    return ok, f"max |loss difference| {diff:.2e} " + ("(match)" if ok else "(DIFFERENT)")


def _finite(x: Any) -> bool:
    if x is None or not jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact):
        return True
    return bool(jnp.isfinite(x).all())


def _what(x: Any) -> str:
    a = np.asarray(x)
    nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    parts = [f"{nan} NaN" if nan else "", f"{inf} inf" if inf else ""]
    return " and ".join(p for p in parts if p) + f" (of {a.size} values)"


def check_step(
    pipe: Any, state: Any, batch: Any, result: Any, step: int, losses: Any = None
) -> None:
    """Raise :class:`NonFiniteError` when step ``step``'s losses or gradients (``result``, from
    ``state`` and ``batch``) are not all finite, naming where they start.

    Across processes ``losses`` are the step's microbatch losses, shared with every process
    (float64): every process reaches the same verdict and raises the same error, so none goes
    on into the update's collectives alone."""
    ls, _ = pipe.plan.loss
    if pipe.layout.multi:
        bad, stages = _shared_verdict(pipe, result, losses)
    else:  # flat output 0 is the loss
        losses = [result.outputs[(0, i)] for i in range(pipe.num_microbatches)]
        bad = [i for i, x in enumerate(losses) if not _finite(x)]
        stages = [
            ex.stage.index
            for ex, acc in zip(pipe.execs, result.acc, strict=True)
            if not all(_finite(g) for g in acc)
        ]
    if not bad and not stages:
        return
    where = None if pipe.layout.multi else locate(pipe, state, batch)
    if where is None:  # another process holds a part, or the replay found it all finite
        where = (
            f"the loss of microbatch {bad[0]} ({ls}F{bad[0]}): {_what(losses[bad[0]])}"
            if bad
            else f"the gradients of stage {stages[0]} (its backward actions)"
        )
    raise NonFiniteError(f"step {step}: not finite first in {where}; {_HINT}")


def _shared_verdict(pipe: Any, result: Any, losses: Any) -> tuple[list[int], list[int]]:
    """The microbatches whose shared loss is not finite and the stages whose gradients are
    not, alike in every process: each stage's flag is computed by every process holding its
    rank (one executable on the rank's mesh, in stage order: a collective when the mesh spans
    processes), told by the rank's lead, and summed over the processes."""
    flags = np.zeros(len(pipe.execs), np.float64)
    for ex, acc in zip(pipe.execs, result.acc, strict=True):
        if not pipe.layout.local(ex.rank):
            continue
        grads = [g for g in acc if jnp.issubdtype(g.dtype, jnp.inexact)]
        ok = not grads or bool(host_value(_all_finite(grads)))
        if not ok and pipe.layout.lead(ex.rank):
            flags[ex.stage.index] = 1.0
    shared = pipe.comm.sum_f64_over_processes(flags)
    bad = [i for i, x in enumerate(losses) if not math.isfinite(float(x))]
    return bad, [s for s, f in enumerate(shared) if f != 0]


@jax.jit
def _all_finite(xs: list[Any]) -> Any:
    return jnp.all(jnp.stack([jnp.isfinite(x).all() for x in xs]))


def locate(pipe: Any, state: Any, batch: Any) -> str | None:
    """The first action, in data-flow order, whose outputs or parameter gradients are not
    finite, replaying the step's stages one at a time; None when every one is."""
    staged = pipe.staged
    args = pipe.param_store.stage_args(state, batch)
    ls, lk = pipe.plan.loss
    m = pipe.num_microbatches
    scale = 1.0 if pipe.plan.loss_reduction is LossReduction.SUM else 1.0 / m
    for i in range(m):
        outs: dict[int, list[Any]] = {}
        for st in staged.stages:
            own = [np.asarray(x) for x in args[(st.index, i)]]
            ins = [outs[r.src][r.output] for r in st.receives]
            outs[st.index] = [np.asarray(y) for y in st(own, ins)]
            for j, y in enumerate(outs[st.index]):
                if not _finite(y):
                    return (
                        f"the forward of stage {st.index} on microbatch {i} ({st.index}F{i}): "
                        f"its output {j} has {_what(y)}"
                    )
        cts: dict[tuple[int, int], Any] = {(ls, lk): np.asarray(scale, outs[ls][lk].dtype)}
        for st in reversed(staged.stages):
            own = [np.asarray(x) for x in args[(st.index, i)]]
            ins = [outs[r.src][r.output] for r in st.receives]
            _, vjp = jax.vjp(lambda *xs, st=st: list(st.fn(*xs)), *own, *ins)
            ct = [_cotangent(cts.get((st.index, j)), y) for j, y in enumerate(outs[st.index])]
            grads = vjp(ct)
            for k, g in enumerate(grads[: len(own)]):
                if not _finite(g):
                    path = st.param_paths[k] if k < len(st.param_paths) else f"argument {k}"
                    return (
                        f"the backward of stage {st.index} on microbatch {i} ({st.index}B{i}): "
                        f"the gradient of {path} has {_what(g)}"
                    )
            for k, (r, g) in enumerate(zip(st.receives, grads[len(own) :], strict=True)):
                if not _finite(g):
                    return (
                        f"the backward of stage {st.index} on microbatch {i} ({st.index}B{i}): "
                        f"the cotangent of its input {k} (stage {r.src}'s output {r.output}) "
                        f"has {_what(g)}"
                    )
                key = (r.src, r.output)
                if jnp.issubdtype(np.asarray(g).dtype, jnp.inexact):
                    cts[key] = g if key not in cts else cts[key] + g
    return None


def _cotangent(ct: Any, y: Any) -> Any:
    y = np.asarray(y)
    if not jnp.issubdtype(y.dtype, jnp.inexact):
        return np.zeros(y.shape, jax.dtypes.float0)
    return np.zeros_like(y) if ct is None else jnp.broadcast_to(jnp.asarray(ct, y.dtype), y.shape)
