"""Consistent sharding of a stage's forward and backward: merge, propagate, then split.

Compiled separately, a forward and its backward would each let sharding propagation choose
the layout of the residuals they exchange, and could disagree (a reshard between them, or
collectives in the backward that one program would not need). So the stage's forward and
backward are first compiled as **one** program (``merged``: forward, then backward, with the
residuals also returned) under the stage's mesh and parameter shardings; the shardings that
propagation picked for the residuals, outputs, cotangents and gradients are read from that
executable, and forward and backward are then compiled on their own with those shardings
pinned (``in_shardings`` / ``out_shardings``).

Meshes should use ``AxisType.Auto`` axes (``jax.sharding.Mesh(devices, names)``), so that
propagation, not sharding-in-types, decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.extend.core import jaxpr_as_fun

from hlopipe.errors import StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._autodiff import StageAutodiff


@dataclass(eq=False)
class ShardedStage:
    """A stage's executables, compiled with consistent shardings.

    ``merged(*params, *inputs, *out_cts) -> (*outputs, *residuals, *input_cts, *param_grads)``,
    ``forward(*params, *inputs) -> (*outputs, *residuals)`` and
    ``backward(*params, *residuals, *out_cts) -> (*input_cts, *param_grads)`` are
    ``jax.stages.Compiled`` objects taking flat positional arrays. The sharding lists follow
    :class:`StageAutodiff`'s orders.
    """

    autodiff: StageAutodiff
    mesh: Any
    merged: Any
    forward: Any
    backward: Any
    param_shardings: list[Any]
    input_shardings: list[Any]
    output_shardings: list[Any]
    residual_shardings: list[Any]
    out_ct_shardings: list[Any]
    input_ct_shardings: list[Any]
    grad_shardings: list[Any]


def merge(forward: Any, backward: Any, *, num_params: int, num_outputs: int) -> Any:
    """One ClosedJaxpr running ``forward`` then ``backward`` (the inverse of the split).

    ``forward``: ``(params, inputs) -> (outputs, residuals)``; ``backward``:
    ``(params, residuals, out_cts) -> results``. The merged jaxpr takes
    ``(params, inputs, out_cts)`` and returns ``(outputs, residuals, results)``.

    Example:
      >>> m = merge(fb.forward_jaxpr, fb.backward_jaxpr, num_params=fb.num_params,
      ...           num_outputs=fb.num_outputs)                     # doctest: +SKIP
    """
    P = num_params
    n_res = len(forward.out_avals) - num_outputs
    n_in = len(forward.in_avals) - P

    def fn(*a):
        params, inputs, cts = a[:P], a[P : P + n_in], a[P + n_in :]
        out = jaxpr_as_fun(forward)(*params, *inputs)
        outs, res = out[:num_outputs], out[num_outputs:]
        if len(res) != n_res:  # pragma: no cover - guarded by construction
            raise StageError("forward/backward residual counts differ")
        return [*outs, *res, *jaxpr_as_fun(backward)(*params, *res, *cts)]

    ct_avals = backward.in_avals[P + n_res :]
    avals = [J.sds(a) for a in [*forward.in_avals, *ct_avals]]
    return jax.make_jaxpr(fn)(*avals)


def _leaves(x: Any) -> list[Any]:
    return list(
        jax.tree_util.tree_leaves(x, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding))
    )


def shard_stage(
    fb: StageAutodiff,
    mesh: jax.sharding.Mesh,
    param_shardings: Sequence[jax.sharding.Sharding],
    input_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
) -> ShardedStage:
    """Compile a stage's forward and backward with shardings decided once, on the merged program.

    Args:
      fb: the stage's :class:`StageAutodiff`.
      mesh: the stage's device mesh (``AxisType.Auto`` axes).
      param_shardings: one sharding per stage parameter (``stage.params_needed`` order).
      input_shardings: one per received input; ``None`` entries (or ``None``) let
        propagation choose.

    Returns:
      a :class:`ShardedStage`; its forward's residual output shardings equal its backward's
      residual input shardings, by construction.

    Example:
      >>> shardings = [NamedSharding(mesh, P(None, "m"))] * fb.num_params  # doctest: +SKIP
      >>> ss = shard_stage(fb, mesh, shardings)                     # doctest: +SKIP
      >>> ys_res = ss.forward(*params, *inputs)                     # doctest: +SKIP
    """
    P, X, O = fb.num_params, fb.num_inputs, fb.num_outputs
    if len(param_shardings) != P:
        raise StageError(
            f"stage {fb.stage_index} has {P} parameters, got {len(param_shardings)} shardings"
        )
    in_sh = list(input_shardings) if input_shardings is not None else [None] * X
    if len(in_sh) != X:
        raise StageError(f"stage {fb.stage_index} has {X} inputs, got {len(in_sh)} shardings")
    fwd, bwd = fb.forward_jaxpr, fb.backward_jaxpr
    merged = merge(fwd, bwd, num_params=P, num_outputs=O)

    def with_sh(avals: Sequence[Any], shs: Sequence[Any]) -> list[jax.ShapeDtypeStruct]:
        return [
            jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) if s is not None else J.sds(a)
            for a, s in zip(avals, shs)
        ]

    n_res = fb.num_residuals
    n_ct = len(fb.diff_outputs)
    m_avals = with_sh(merged.in_avals, [*param_shardings, *in_sh, *([None] * n_ct)])
    mc = (
        jax.jit(lambda *a: tuple(jaxpr_as_fun(merged)(*a)), keep_unused=True)
        .lower(*m_avals)
        .compile()
    )
    m_in = _leaves(mc.input_shardings[0])
    m_out = _leaves(mc.output_shardings)
    inputs_sh = m_in[P : P + X]
    ct_sh = m_in[P + X :]
    out_sh, res_sh = m_out[:O], m_out[O : O + n_res]
    gi_sh = m_out[O + n_res : O + n_res + len(fb.diff_inputs)]
    gp_sh = m_out[O + n_res + len(fb.diff_inputs) :]

    fc = (
        jax.jit(
            lambda *a: tuple(jaxpr_as_fun(fwd)(*a)),
            in_shardings=(*param_shardings, *inputs_sh),
            out_shardings=(*out_sh, *res_sh),
            keep_unused=True,
        )
        .lower(*[J.sds(a) for a in fwd.in_avals])
        .compile()
    )
    bc = (
        jax.jit(
            lambda *a: tuple(jaxpr_as_fun(bwd)(*a)),
            in_shardings=(*param_shardings, *res_sh, *ct_sh),
            out_shardings=(*gi_sh, *gp_sh),
            keep_unused=True,
        )
        .lower(*[J.sds(a) for a in bwd.in_avals])
        .compile()
    )
    return ShardedStage(
        autodiff=fb,
        mesh=mesh,
        merged=mc,
        forward=fc,
        backward=bc,
        param_shardings=list(param_shardings),
        input_shardings=inputs_sh,
        output_shardings=out_sh,
        residual_shardings=res_sh,
        out_ct_shardings=ct_sh,
        input_ct_shardings=gi_sh,
        grad_shardings=gp_sh,
    )
