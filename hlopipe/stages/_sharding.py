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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax.extend.core import jaxpr_as_fun

from hlopipe.errors import StageError, UnsupportedOpError
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
    c = compile_merged(
        fb.forward_jaxpr,
        fb.backward_jaxpr,
        num_params=P,
        num_outputs=O,
        param_shardings=param_shardings,
        input_shardings=in_sh,
    ).consistent()
    n_res, n_gi = fb.num_residuals, len(fb.diff_inputs)
    out_sh, res_sh = c.merged_out[:O], c.merged_out[O : O + n_res]
    gi_sh = c.merged_out[O + n_res : O + n_res + n_gi]
    gp_sh = c.merged_out[O + n_res + n_gi :]
    return ShardedStage(
        autodiff=fb,
        mesh=mesh,
        merged=c.merged,
        forward=c.forward,
        backward=c.backward,
        param_shardings=list(param_shardings),
        input_shardings=c.merged_in[P : P + X],
        output_shardings=out_sh,
        residual_shardings=res_sh,
        out_ct_shardings=c.merged_in[P + X :],
        input_ct_shardings=gi_sh,
        grad_shardings=gp_sh,
    )


@dataclass(eq=False)
class Consistent:
    """What :meth:`MergedCompile.consistent` gives: the merged, forward and backward programs,
    lowered (``*_lowered``, whose ``as_text()`` carries the pinned shardings) and compiled,
    and the merged executable's flat input / output shardings."""

    merged_lowered: Any
    merged: Any
    forward_lowered: Any
    forward: Any
    backward_lowered: Any
    backward: Any
    merged_in: list[Any]
    merged_out: list[Any]


@dataclass(eq=False)
class MergedCompile:
    """What :func:`compile_merged` gives: the merged program ``lowered`` and ``compiled``, and
    its flat input shardings ``in_shardings`` (``params, inputs, cts``) and output shardings
    ``out_shardings`` (``outputs, residuals, results``) as propagation completed them.
    :meth:`consistent` is the second half of "merge, then split"."""

    forward: Any
    backward: Any
    num_params: int
    num_outputs: int
    lowered: Any
    compiled: Any
    in_shardings: list[Any]
    out_shardings: list[Any]

    def consistent(self) -> Consistent:
        """The forward and backward compiled apart, with everything they exchange with the
        outside (and the residuals between them) pinned to what the merged compile chose.

        Example:
          >>> c = compile_merged(fwd, bwd, num_params=2, num_outputs=1,
          ...                    param_shardings=shardings).consistent()  # doctest: +SKIP
          >>> c.forward.output_shardings                                  # doctest: +SKIP
        """
        fwd, bwd, P, O = self.forward, self.backward, self.num_params, self.num_outputs
        m_in, m_out = self.in_shardings, self.out_shardings
        X, n_res = len(fwd.in_avals) - P, len(fwd.out_avals) - O
        p_sh, x_sh, ct_sh = m_in[:P], m_in[P : P + X], m_in[P + X :]
        fl = jax.jit(
            lambda *a: tuple(jaxpr_as_fun(fwd)(*a)),
            in_shardings=(*p_sh, *x_sh),
            out_shardings=tuple(m_out[: O + n_res]),
            keep_unused=True,
        ).lower(*[J.sds(a) for a in fwd.in_avals])
        bl = jax.jit(
            lambda *a: tuple(jaxpr_as_fun(bwd)(*a)),
            in_shardings=(*p_sh, *m_out[O : O + n_res], *ct_sh),
            out_shardings=tuple(m_out[O + n_res :]),
            keep_unused=True,
        ).lower(*[J.sds(a) for a in bwd.in_avals])
        ml, mc = self.lowered, self.compiled
        return Consistent(ml, mc, fl, fl.compile(), bl, bl.compile(), m_in, m_out)


def compile_merged(
    forward: Any,
    backward: Any,
    *,
    num_params: int,
    num_outputs: int,
    param_shardings: Sequence[jax.sharding.Sharding | None],
    input_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    output_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    ct_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    result_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    merged: Any = None,
) -> MergedCompile:
    """Compile the merged ``forward`` + ``backward`` once (a :class:`MergedCompile`).

    ``forward``: ``(params, inputs) -> (outputs, residuals)``; ``backward``: ``(params,
    residuals, cts) -> results``. Every ``*_shardings`` argument pins what it names
    (``None`` entries, or ``None``, leave it to propagation): the runtime pins what crosses a
    stage's boundary (inputs, outputs, their cotangents) and lets the residuals be chosen
    here. ``merged`` is the merged ClosedJaxpr when the caller has it already (default:
    :func:`merge`). ``.consistent()`` of the result compiles forward and backward apart with
    everything pinned to the merged program's choice.
    """
    P, O = num_params, num_outputs
    X = len(forward.in_avals) - P
    n_res = len(forward.out_avals) - O
    n_ct = len(backward.in_avals) - P - n_res
    n_rs = len(backward.out_avals)
    in_sh = list(input_shardings) if input_shardings is not None else [None] * X
    ct_sh = list(ct_shardings) if ct_shardings is not None else [None] * n_ct
    out_sh = list(output_shardings) if output_shardings is not None else [None] * O
    rs_sh = list(result_shardings) if result_shardings is not None else [None] * n_rs
    if merged is None:
        merged = merge(forward, backward, num_params=P, num_outputs=O)

    def with_sh(avals: Sequence[Any], shs: Sequence[Any]) -> list[jax.ShapeDtypeStruct]:
        return [
            jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) if s is not None else J.sds(a)
            for a, s in zip(avals, shs, strict=True)
        ]

    m_avals = with_sh(merged.in_avals, [*param_shardings, *in_sh, *ct_sh])
    pinned_out = (*out_sh, *([None] * n_res), *rs_sh)
    ml = jax.jit(
        lambda *a: tuple(jaxpr_as_fun(merged)(*a)),
        out_shardings=pinned_out if any(s is not None for s in pinned_out) else None,
        keep_unused=True,
    ).lower(*m_avals)
    mc = ml.compile()
    m_in, m_out = _leaves(mc.input_shardings[0]), _leaves(mc.output_shardings)
    return MergedCompile(forward, backward, P, O, ml, mc, m_in, m_out)


def arg_partition_specs(program: Any, axes: Sequence[tuple[str, int]]) -> list[Any] | None:
    """The sharding annotations on a loaded program's arguments as ``PartitionSpec``s over a
    mesh with ``axes`` (``(name, size)`` pairs), one per argument; ``None`` for an argument
    without one or whose annotation this mesh cannot express (propagation then decides, and a
    warning names the annotation). An annotation that cannot be read is a ``StageError``.
    Returns ``None`` when no argument is annotated.

    ``sdy.sharding`` (Shardy) names its axes: they are kept when the mesh has an axis of that
    name. ``mhlo.sharding`` (GSPMD) numbers devices: it is read over the mesh's axes other than
    ``"data"`` (a program compiled for tensor parallelism alone), else over all of them.

    Example:
      >>> arg_partition_specs(hlopipe.load("step.mlir"), [("data", 2), ("model", 2)])
      ... # doctest: +SKIP
      [PartitionSpec(None, 'model'), ...]
    """
    from jax.sharding import PartitionSpec

    from hlopipe.rehydrate import hlo_sharding_spec

    func = program.entry_func
    if "arg_attrs" not in func.attributes:
        return None
    names = {n for n, _ in axes}
    model_axes = [(n, s) for n, s in axes if n != "data"]
    out: list[Any] = []
    found = False
    for k, attrs in enumerate(func.attributes["arg_attrs"]):
        spec = None
        text = None
        if "sdy.sharding" in attrs:
            found = True
            text = str(attrs["sdy.sharding"])
            per_value = _read_sdy(k, text)
            if per_value is not None and all(n in names for d in per_value for n in d):
                spec = PartitionSpec(
                    *[None if not d else d[0] if len(d) == 1 else tuple(d) for d in per_value]
                )
            else:
                _dropped(k, text, axes)
        elif "mhlo.sharding" in attrs:
            found = True
            text = str(attrs["mhlo.sharding"]).strip('"')
            ndim = len(program.in_avals[k].shape)
            for candidate in (model_axes, list(axes)):
                try:
                    spec = hlo_sharding_spec(text, ndim, candidate)
                    break
                except UnsupportedOpError:  # this tiling is not a spec over these axes
                    continue
            else:
                _dropped(k, text, axes)
        out.append(spec)
    return out if found else None


def _read_sdy(k: int, text: str) -> list[list[str]] | None:
    """Argument ``k``'s ``sdy.sharding`` as per-dimension axis names; None for a sharding no
    PartitionSpec can hold (sub-axes). A text that is not one value's sharding is an error."""
    from hlopipe.rehydrate import parse_sdy_shardings

    try:
        per_value = parse_sdy_shardings(text)
    except UnsupportedOpError:
        return None
    if len(per_value) != 1:
        raise StageError(
            f"argument {k}: cannot read its sharding {text} (expected one "
            "#sdy.sharding<@mesh, [{...}, ...]>); remove or fix the annotation"
        )
    return per_value[0][1]


def _dropped(k: int, text: str, axes: Sequence[tuple[str, int]]) -> None:
    warnings.warn(
        f"argument {k}'s sharding {text} cannot be expressed on a mesh with axes "
        f"{dict(axes)}: it is left to sharding propagation (possibly replicated); give the "
        "mesh the program's axes to keep it",
        stacklevel=3,
    )
