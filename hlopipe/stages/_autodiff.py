"""Per-stage autodiff: forward with residuals, backward, and backward split into I and W.

One jaxpr is traced per stage, the *merged* step ``(params, inputs, out_cts) -> (outputs,
input_cts, param_grads)`` (``jax.vjp`` of the stage), and then cut by dataflow:

* equations that do not depend on the cotangents and that the outputs need, or that
  depend on the inputs and the backward needs, form the **forward**; the values the backward
  needs from it are the **residuals** (saved, never recomputed);
* equations that depend on the cotangents, plus those that depend only on differentiated
  parameters (cheap to redo, e.g. a weight's transpose) form the **backward** — so residuals
  never duplicate parameters, which backward takes directly (all of ``params``, differentiated
  or not, are arguments of the backward);
* the backward equations the input cotangents need form **I** (``backward_input``); the rest,
  needed for the parameter gradients, form **W** (``backward_weight``); the values W reads from
  I's world (intermediate cotangents, forward residuals, output cotangents) are W's residuals.

The stage's ``jit`` calls are opened into its top level before tracing
(:func:`_inline_calls`), so that the cut sees their equations one by one: a call is one
equation to it, and a value a call's derivative makes from constants alone (a causal mask
broadcast by ``jnp.where``) was kept as a residual instead of being made again.

What the backward recomputes is a :class:`~hlopipe.planfile.Recompute` policy: ``NONE`` keeps
every residual; ``FULL`` (``remat=True``) keeps the stage's inputs only and recomputes the
forward; ``SELECTIVE`` keeps the outputs of the weight matmuls (the ``dot_general`` equations
with no batch dimensions) and recomputes everything else, as JAX's
``jax.checkpoint_policies.dots_with_no_batch_dims_saveable`` and MaxText's
``minimal`` policy do: attention's batched products (the scores, ``b h s^2`` a layer, and
the weighted sum), the softmax, the norms and the activations are recomputed (Korthikanti et
al. 2022, "Reducing Activation Recomputation in Large Transformer Models"); ``ATTENTION``
keeps the inputs and outputs of the weight matmuls (the products without batch dimensions:
attention's two batch over heads) and recomputes the rest, attention's scores, softmax and
weighted sum, the norms and the activations: the activations Korthikanti et al.'s section 5
"selective activation recomputation" keeps (34 sbh a layer with dropout, 32 without), the
residual stream (the norms' inputs) among them. Nothing is ever recomputed across stages.

A layer loop (a ``scan``: ``lax.scan``, a cut loop's ranges, a rehydrated ``while``) is one
equation at the top level, so the cut cannot reach into it. Under ``SELECTIVE`` and
``ATTENTION`` each top-level ``scan``'s body is traced under ``jax.checkpoint`` instead, with
the values the policy keeps at the top level tagged by :func:`jax.ad_checkpoint.checkpoint_name`
and the policy ``save_only_these_names`` (:func:`_loops_under_policy`): JAX's own partial
evaluation of the scan then stacks, per iteration, exactly those values (and the body's inputs
the backward needs: the carry, as a stage keeps its inputs), and the cut keeps the scan in the
forward. A tag, not a policy over primitives, because the policies keep only values that
depend on per-microbatch data (never a product of parameters: the backward recomputes those), and
``ATTENTION`` keeps the matmuls' operands too, which a policy over primitives cannot tell.
``NONE`` leaves the scan to JAX (every residual its partial evaluation stacks); ``FULL``
recomputes the whole scan in the backward, as the rest of the forward.

The carry a loop stacks includes its first iteration's, which in stage 0 is a value the
stage made itself (the embedding, gathered from the tokens): the unrolled form redoes it in
the backward, as it redoes every value the policy does not keep. So the split gives a cut
loop's first iteration a range of its own, with its own rows (``_cuts._first_apart``), and
under these two policies a one-iteration loop whose carry the data reaches starts from a
value the stage computed (not an argument or a received activation) runs at the top level
(:func:`_scan_under_policy`; its rows reshaped, not copied), where the cut treats it as the
unrolled form's layer. The stage then keeps what its unrolled form keeps (one carry a
microbatch less: 256 MiB a microbatch at Llama 3 405B's width and 8,192 tokens, before tensor
parallelism). The backward is what its results read back to the values the forward keeps
(:func:`cut_forward_backward`): a value only a forward equation reads (the start of a loop
the forward runs) is not redone for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name
from jax.extend.core import jaxpr_as_fun

from hlopipe.errors import StageError
from hlopipe.planfile import Recompute
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._staged import SourceKind

if TYPE_CHECKING:
    from hlopipe.stages._staged import Stage, StagedProgram


@dataclass(eq=False)
class StageAutodiff:
    """Forward and backward functions of one stage, for a pipeline runtime to jit.

    Every function takes and returns flat lists of arrays. With ``P`` the stage's parameters
    (``stage.params_needed`` order), ``X`` its received inputs (``stage.receives`` order) and
    ``Y`` its outputs (``stage.outputs`` order):

    * ``forward(params, inputs) -> (outputs, residuals)``: ``params`` has ``len(P)`` arrays,
      ``inputs`` ``len(X)``; ``residuals`` has the avals in ``residual_avals``.
    * ``backward(params, residuals, out_cts) -> (input_cts, param_grads)``: ``out_cts`` are the
      cotangents of the differentiable outputs ``diff_outputs`` (indices into ``Y``);
      ``input_cts`` are those of ``diff_inputs`` (indices into ``X``); ``param_grads`` those of
      ``diff_params`` (indices into ``P``).
    * ``backward_input(params, residuals, out_cts) -> (input_cts, w_residuals)``: the I part.
    * ``backward_weight(params, w_residuals) -> param_grads``: the W part; ``w_residuals``
      (avals ``w_residual_avals``) hold the intermediate cotangents (and any forward
      residuals) W needs, so ``residuals`` can be freed after I.

    The underlying jaxprs are ``forward_jaxpr``, ``backward_jaxpr``, ``input_jaxpr``,
    ``weight_jaxpr`` and ``merged_jaxpr`` (inputs ``P + X + cts``, outputs
    ``Y + input_cts + param_grads``).

    Example:
      >>> fb = staged.stage(0).forward_backward()                  # doctest: +SKIP
      >>> ys, res = jax.jit(fb.forward)(params, xs)                # doctest: +SKIP
      >>> xcts, wres = jax.jit(fb.backward_input)(params, res, ycts)  # doctest: +SKIP
      >>> grads = jax.jit(fb.backward_weight)(params, wres)        # doctest: +SKIP
    """

    stage_index: int
    remat: bool  # whether the policy is FULL
    recompute: Recompute
    diff_params: tuple[int, ...]
    diff_inputs: tuple[int, ...]
    diff_outputs: tuple[int, ...]
    merged_jaxpr: Any
    forward_jaxpr: Any
    backward_jaxpr: Any
    input_jaxpr: Any
    weight_jaxpr: Any
    num_params: int
    num_inputs: int
    num_outputs: int

    @property
    def residual_avals(self) -> list[jax.ShapeDtypeStruct]:
        return [J.sds(a) for a in self.forward_jaxpr.out_avals[self.num_outputs :]]

    @property
    def w_residual_avals(self) -> list[jax.ShapeDtypeStruct]:
        return [J.sds(a) for a in self.weight_jaxpr.in_avals[self.num_params :]]

    @property
    def num_residuals(self) -> int:
        return len(self.forward_jaxpr.out_avals) - self.num_outputs

    def forward(self, params: Sequence[Any], inputs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """``(params, inputs) -> (outputs, residuals)``."""
        out = jaxpr_as_fun(self.forward_jaxpr)(*params, *inputs)
        return list(out[: self.num_outputs]), list(out[self.num_outputs :])

    def backward(
        self, params: Sequence[Any], residuals: Sequence[Any], out_cts: Sequence[Any]
    ) -> tuple[list[Any], list[Any]]:
        """``(params, residuals, out_cts) -> (input_cts, param_grads)``."""
        return self._input_cts_and_rest(self.backward_jaxpr, params, residuals, out_cts)

    def backward_input(
        self, params: Sequence[Any], residuals: Sequence[Any], out_cts: Sequence[Any]
    ) -> tuple[list[Any], list[Any]]:
        """``(params, residuals, out_cts) -> (input_cts, w_residuals)`` (the I step)."""
        return self._input_cts_and_rest(self.input_jaxpr, params, residuals, out_cts)

    def _input_cts_and_rest(
        self, jaxpr: Any, params: Sequence[Any], residuals: Sequence[Any], out_cts: Sequence[Any]
    ) -> tuple[list[Any], list[Any]]:
        out = jaxpr_as_fun(jaxpr)(*params, *residuals, *out_cts)
        k = len(self.diff_inputs)
        return list(out[:k]), list(out[k:])

    def backward_weight(self, params: Sequence[Any], w_residuals: Sequence[Any]) -> list[Any]:
        """``(params, w_residuals) -> param_grads`` (the W step)."""
        return list(jaxpr_as_fun(self.weight_jaxpr)(*params, *w_residuals))

    def merged(
        self, params: Sequence[Any], inputs: Sequence[Any], out_cts: Sequence[Any]
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """Forward and backward in one function: ``-> (outputs, input_cts, param_grads)``."""
        out = jaxpr_as_fun(self.merged_jaxpr)(*params, *inputs, *out_cts)
        a, b = self.num_outputs, self.num_outputs + len(self.diff_inputs)
        return list(out[:a]), list(out[a:b]), list(out[b:])


def recompute_policy(remat: bool | str) -> Recompute:
    """The policy ``remat`` names: a :class:`Recompute` (or its value), or a bool (``True``:
    full, ``False``: none).

    Raises:
      StageError: an unknown name, naming the valid ones.
    """
    if isinstance(remat, bool):
        return Recompute.FULL if remat else Recompute.NONE
    try:
        return Recompute(remat)
    except ValueError:
        valid = ", ".join(repr(r.value) for r in Recompute)
        raise StageError(f"recompute {remat!r} is not a policy; use one of {valid}") from None


def _weight_matmul(e: Any) -> bool:
    """A ``dot_general`` with no batch dimensions (a weight matmul; attention's two batch over
    the heads), as ``jax.checkpoint_policies.dots_with_no_batch_dims_saveable`` tells them."""
    if e.primitive.name != "dot_general":
        return False
    (_, _), (lb, rb) = e.params["dimension_numbers"]
    return not lb and not rb


def _attention_policy_keeps(eqns: Sequence[Any]) -> set[int]:
    """The equations ``ATTENTION`` keeps in the forward (by ``id``): the weight matmuls and
    the equations making their operands."""
    operands = {x for e in eqns if _weight_matmul(e) for x in e.invars}
    return {id(e) for e in eqns if _weight_matmul(e) or any(o in operands for o in e.outvars)}


def _policy_keeps(eqns: Sequence[Any], policy: Recompute) -> set[int]:
    """The equations (by ``id``) whose outputs ``policy`` keeps when they depend on
    per-microbatch data: SELECTIVE's weight matmuls, ATTENTION's weight matmuls and their
    operands' makers; nothing for the other two."""
    if policy is Recompute.SELECTIVE:
        return {id(e) for e in eqns if _weight_matmul(e)}
    if policy is Recompute.ATTENTION:
        return _attention_policy_keeps(eqns)
    return set()


# the name a scan body's kept values are tagged with (see the module docstring)
_KEPT = "hlopipe_recompute_kept"


def _x_dependent(eqns: Sequence[Any], x_vars: set[Any]) -> set[Any]:
    """``x_vars`` and every variable ``eqns`` compute from them."""
    dep = set(x_vars)
    for e in eqns:
        if any(not isinstance(v, J.Literal) and v in dep for v in e.invars):
            dep.update(e.outvars)
    return dep


def _body_tags(body: Any, in_dep: Sequence[bool], policy: Recompute) -> tuple[set[Any], list[bool]]:
    """A scan body's values ``policy`` keeps, given which of its inputs depend on
    per-microbatch data (``in_dep``), and which of its outputs do."""
    bj = body.jaxpr
    dep = _x_dependent(bj.eqns, {v for v, d in zip(bj.invars, in_dep, strict=True) if d})
    keeps = _policy_keeps(bj.eqns, policy)
    tags = {
        o
        for e in bj.eqns
        if id(e) in keeps and any(not isinstance(v, J.Literal) and v in dep for v in e.invars)
        for o in e.outvars
    }
    return tags, [not isinstance(v, J.Literal) and v in dep for v in bj.outvars]


def _scan_under_policy(
    e: Any, vals: Sequence[Any], dep: Sequence[bool], policy: Recompute, args: set[Any]
) -> list[Any]:
    """The ``scan`` equation ``e`` on ``vals``, its body under ``jax.checkpoint`` keeping what
    ``policy`` keeps (``dep``: which operands depend on per-microbatch data; ``args``: the
    stage's arguments, its parameters and received inputs).

    The loop keeps each iteration's carry for its backward, the first one included. A loop
    of one iteration (the split gives a cut loop's first iteration a range of its own:
    ``_cuts._first_apart``) whose carry the data reaches starts from a value the stage
    computed (stage 0's embedding, not a received activation) is run at the top level
    instead, where the cut treats it as the unrolled form's layer (its input redone from the
    stage's own arguments where the policy keeps nothing it is made from: a gather from the
    tokens). A longer loop is left whole: running its first iteration apart would copy the
    rest of its rows."""
    p = e.params
    body, C, K = p["jaxpr"], int(p["num_consts"]), int(p["num_carry"])
    length, reverse = int(p["length"]), bool(p["reverse"])
    dep = list(dep)
    while True:  # a carry depends on the data if its start or any iteration's update does
        tags, out_dep = _body_tags(body, dep, policy)
        carry = [dep[C + j] or out_dep[j] for j in range(K)]
        if carry == dep[C : C + K]:
            break
        dep[C : C + K] = carry
    bj = body.jaxpr
    consts = list(vals[:C])
    starts = e.invars[C : C + K]
    peel = any(
        dep[C + j] and (isinstance(v, J.Literal) or v not in args) for j, v in enumerate(starts)
    )

    def step(c: list[Any], x: list[Any], tag: bool = True) -> tuple[list[Any], list[Any]]:
        env = dict(zip(bj.constvars, body.consts, strict=True))
        env.update(zip(bj.invars, [*consts, *c, *x], strict=True))
        read = lambda v: v.val if isinstance(v, J.Literal) else env[v]  # noqa: E731
        for q in bj.eqns:
            out = q.primitive.bind(*map(read, q.invars), **q.primitive.get_bind_params(q.params))
            outs = out if q.primitive.multiple_results else [out]
            env.update(
                (v, checkpoint_name(y, _KEPT) if tag and v in tags else y)
                for v, y in zip(q.outvars, outs, strict=True)
            )
        res = [read(v) for v in bj.outvars]
        return res[:K], res[K:]

    kept = jax.checkpoint(
        step, policy=jax.checkpoint_policies.save_only_these_names(_KEPT), prevent_cse=False
    )
    c0, xs = list(vals[C : C + K]), list(vals[C + K :])
    if not peel or length != 1:
        c, ys = lax.scan(kept, c0, xs, length=length, reverse=reverse, unroll=p["unroll"])
        return [*c, *ys]
    # the one iteration, at the top level: its rows and outputs reshaped, never copied
    c1, y1 = step(c0, [x.reshape(x.shape[1:]) for x in xs], tag=False)
    return [*c1, *(lax.expand_dims(y, (0,)) for y in y1)]


def _inline_calls(closed: Any) -> Any:
    """``closed`` with its ``jit`` calls opened (recursively) into the top level: a call is
    one equation to the cut, so a value its derivative makes from constants alone (the mask
    a ``jnp.where`` broadcasts) was kept as a residual of the call instead of being made
    again by the backward, as a constant at the top level is. Loops stay as they are."""
    if not any(e.primitive.name == "jit" for e in closed.jaxpr.eqns):
        return closed

    def run(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        env = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        read = lambda v: v.val if isinstance(v, J.Literal) else env[v]  # noqa: E731
        for e in jaxpr.eqns:
            vals = [read(v) for v in e.invars]
            if e.primitive.name == "jit":
                inner = e.params["jaxpr"]
                outs = run(inner.jaxpr, inner.consts, vals)
            else:
                out = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
                outs = out if e.primitive.multiple_results else [out]
            env.update(zip(e.outvars, outs, strict=True))
        return [read(v) for v in jaxpr.outvars]

    avals = [J.sds(a) for a in closed.in_avals]
    return jax.make_jaxpr(lambda *a: run(closed.jaxpr, closed.consts, a))(*avals)


def _loops_under_policy(closed: Any, x_args: Sequence[int], policy: Recompute) -> Any:
    """``jaxpr_as_fun(closed)``, each top-level ``scan`` run with its body under the policy
    (:func:`_scan_under_policy`); ``x_args``: the arguments holding per-microbatch data."""
    jaxpr = closed.jaxpr
    if policy not in (Recompute.SELECTIVE, Recompute.ATTENTION) or not any(
        e.primitive.name == "scan" for e in jaxpr.eqns
    ):
        return jaxpr_as_fun(closed)
    dep = _x_dependent(jaxpr.eqns, {jaxpr.invars[i] for i in x_args})
    stage_args = set(jaxpr.invars)

    def run(*args: Any) -> list[Any]:
        env = dict(zip(jaxpr.constvars, closed.consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        read = lambda v: v.val if isinstance(v, J.Literal) else env[v]  # noqa: E731
        for e in jaxpr.eqns:
            vals = [read(v) for v in e.invars]
            if e.primitive.name == "scan":
                d = [not isinstance(v, J.Literal) and v in dep for v in e.invars]
                outs = _scan_under_policy(e, vals, d, policy, stage_args)
            else:
                out = e.primitive.bind(*vals, **e.primitive.get_bind_params(e.params))
                outs = out if e.primitive.multiple_results else [out]
            env.update(zip(e.outvars, outs, strict=True))
        return [read(v) for v in jaxpr.outvars]

    return run


def build_autodiff(
    stage: Stage, diff_mask: Sequence[bool], *, remat: bool | str = False
) -> StageAutodiff:
    """Trace the merged forward+backward of ``stage`` and cut it into its parts.

    Three dataflow passes over the merged jaxpr, each a function of its own: :func:`taint`
    (which equations read cotangents / per-microbatch data), :func:`cut_forward_backward`
    and :func:`cut_input_weight`.
    """
    policy = recompute_policy(remat)
    mj, diff_params, diff_inputs, diff_outputs = _trace_merged(stage, diff_mask, policy)
    P, X = len(stage.params_needed), len(stage.receives)
    O, GI = len(stage.jaxpr.out_avals), len(diff_inputs)
    v = MergedVars.of(mj.jaxpr, P, X, O, GI)
    undiff = [p for i, p in enumerate(v.params) if i not in diff_params]
    eqn_ct, eqn_x = taint(mj.jaxpr.eqns, v.cts, [*v.inputs, *undiff])
    fwd_eqns, bwd_eqns, residuals = cut_forward_backward(mj.jaxpr.eqns, v, eqn_ct, eqn_x, policy)
    i_eqns, w_eqns, w_res = cut_input_weight(bwd_eqns, v, residuals, set(mj.jaxpr.constvars))
    bwd_ins = [*v.params, *residuals, *v.cts]
    return StageAutodiff(
        stage_index=stage.index,
        remat=policy is Recompute.FULL,
        recompute=policy,
        diff_params=diff_params,
        diff_inputs=diff_inputs,
        diff_outputs=diff_outputs,
        merged_jaxpr=mj,
        forward_jaxpr=J.make_closed(mj, [*v.params, *v.inputs], fwd_eqns, [*v.outs, *residuals]),
        backward_jaxpr=J.make_closed(mj, bwd_ins, bwd_eqns, [*v.input_cts, *v.param_grads]),
        input_jaxpr=J.make_closed(mj, bwd_ins, i_eqns, [*v.input_cts, *w_res]),
        weight_jaxpr=J.make_closed(mj, [*v.params, *w_res], w_eqns, v.param_grads),
        num_params=P,
        num_inputs=X,
        num_outputs=O,
    )


def _trace_merged(
    stage: Stage, diff_mask: Sequence[bool], policy: Recompute = Recompute.NONE
) -> tuple[Any, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The merged step's jaxpr ``(params, inputs, cts) -> (outputs, input_cts, param_grads)``
    and which parameters, inputs and outputs are differentiated; the stage's scans run with
    ``policy`` inside their bodies (:func:`_loops_under_policy`)."""
    sj = stage.jaxpr
    P, X = len(stage.params_needed), len(stage.receives)
    in_avals = sj.in_avals
    out_avals = sj.out_avals
    diff_params = tuple(i for i in range(P) if diff_mask[i] and J.is_inexact(in_avals[i]))
    diff_inputs = tuple(i for i in range(X) if J.is_inexact(in_avals[P + i]))
    diff_outputs = tuple(i for i, a in enumerate(out_avals) if J.is_inexact(a))
    x_args = [i for i in range(P + X) if i >= P or i not in diff_params]
    fun = _loops_under_policy(_inline_calls(sj), x_args, policy)

    def merged(params, inputs, cts):
        def f(dp, di):
            p = list(params)
            x = list(inputs)
            for k, i in enumerate(diff_params):
                p[i] = dp[k]
            for k, i in enumerate(diff_inputs):
                x[i] = di[k]
            outs = fun(*p, *x)
            return [outs[i] for i in diff_outputs], outs

        dp = [params[i] for i in diff_params]
        di = [inputs[i] for i in diff_inputs]
        _, vjp, outs = jax.vjp(f, dp, di, has_aux=True)
        gp, gi = vjp(list(cts))
        return list(outs), list(gi), list(gp)

    p_avals = [J.sds(a) for a in in_avals[:P]]
    x_avals = [J.sds(a) for a in in_avals[P:]]
    ct_avals = [J.sds(out_avals[i]) for i in diff_outputs]
    try:
        mj = jax.make_jaxpr(merged)(p_avals, x_avals, ct_avals)
    except (ValueError, TypeError, NotImplementedError) as e:
        first = str(e).strip().split("\n")[0]
        if not any(w in first.lower() for w in ("differentiat", "transpose", "jvp")):
            raise
        raise StageError(
            f"stage {stage.index} cannot be differentiated{_first_while(sj.jaxpr)}: {first} "
            "A pipeline trains what jax.grad can differentiate: make the loop a lax.scan or a "
            "fori_loop with static bounds, or put lax.stop_gradient around what needs no "
            "gradient (an inference schedule runs forwards only)"
        ) from e
    return mj, diff_params, diff_inputs, diff_outputs


def _first_while(jaxpr: Any) -> str:
    """`` (a while loop at FILE:LINE)`` for the first ``while`` in ``jaxpr`` (nested too)."""
    for e in jaxpr.eqns:
        if e.primitive.name == "while":
            return f" (a while loop at {J.where(e)})"
        for sub in J.sub_jaxprs(e):
            found = _first_while(getattr(sub, "jaxpr", sub))
            if found:
                return found
    return ""


@dataclass(frozen=True)
class MergedVars:
    """The merged jaxpr's arguments and results, by role."""

    params: list[Any]
    inputs: list[Any]
    cts: list[Any]
    outs: list[Any]
    input_cts: list[Any]
    param_grads: list[Any]

    @classmethod
    def of(cls, jaxpr: Any, P: int, X: int, O: int, GI: int) -> MergedVars:
        ins, outs = list(jaxpr.invars), list(jaxpr.outvars)
        return cls(
            ins[:P], ins[P : P + X], ins[P + X :], outs[:O], outs[O : O + GI], outs[O + GI :]
        )


def taint(
    eqns: Sequence[Any], ct_vars: Sequence[Any], x_vars: Sequence[Any]
) -> tuple[list[bool], list[bool]]:
    """Pass 1: per equation, does it depend on the cotangents ``ct_vars`` / on per-microbatch
    data ``x_vars`` (the received inputs and the arguments not differentiated, e.g. the batch)?
    """
    ct_dep, x_dep = set(ct_vars), set(x_vars)
    eqn_ct = [False] * len(eqns)
    eqn_x = [False] * len(eqns)
    for i, e in enumerate(eqns):
        ins = [v for v in e.invars if not isinstance(v, J.Literal)]
        eqn_ct[i] = any(v in ct_dep for v in ins)
        eqn_x[i] = any(v in x_dep for v in ins)
        if eqn_ct[i]:
            ct_dep.update(e.outvars)
        if eqn_x[i]:
            x_dep.update(e.outvars)
    return eqn_ct, eqn_x


def cut_forward_backward(
    eqns: Sequence[Any],
    v: MergedVars,
    eqn_ct: list[bool],
    eqn_x: list[bool],
    remat: bool | Recompute,
) -> tuple[list[Any], list[Any], list[Any]]:
    """Pass 2: ``(forward equations, backward equations, residuals)``.

    The backward is the cotangent work plus recomputable forward work (parameter-only; with
    ``remat``'s policy FULL everything, SELECTIVE everything but weight matmuls, ATTENTION
    everything but the weight matmuls and their operands; under these two a ``scan`` is kept,
    its body traced under the policy: see the module docstring); the
    forward is what the outputs need and the rest of what the backward needs, never cotangent work;
    residuals are what the backward reads from it.
    """
    policy = recompute_policy(remat)
    full, selective = policy is Recompute.FULL, policy is Recompute.SELECTIVE
    need_out = J.needed_eqns(eqns, v.outs)
    need_bwd = J.needed_eqns(eqns, [*v.input_cts, *v.param_grads])
    keeps = _policy_keeps(eqns, policy)

    def redo(e: Any) -> bool:
        if full:
            return True
        partial = selective or policy is Recompute.ATTENTION
        return partial and id(e) not in keeps and e.primitive.name != "scan"

    # The backward is what its results read, back to the values the forward keeps: a value
    # only a forward equation reads (a peeled iteration's output, the start of a loop the
    # forward runs) is not redone in the backward, and what it is made from is not kept for it.
    in_bwd = [False] * len(eqns)
    live = {x for x in [*v.input_cts, *v.param_grads] if not isinstance(x, J.Literal)}
    for i in range(len(eqns) - 1, -1, -1):
        e = eqns[i]
        if not need_bwd[i] or not (e.effects or any(x in live for x in e.outvars)):
            continue
        if eqn_ct[i] or redo(e) or not eqn_x[i]:
            in_bwd[i] = True
            live.update(x for x in e.invars if not isinstance(x, J.Literal))
    in_fwd = [
        (need_out[i] or (need_bwd[i] and not in_bwd[i])) and not eqn_ct[i] for i in range(len(eqns))
    ]
    # The forward also computes what its own equations read: a value the backward recomputes
    # for itself (a broadcast constant, say) can feed a residual the forward makes.
    fwd_reads = [x for e, m in zip(eqns, in_fwd, strict=True) if m for x in e.invars]
    need_fwd = J.needed_eqns(eqns, [*v.outs, *fwd_reads])
    in_fwd = [m or (need_fwd[i] and not eqn_ct[i]) for i, m in enumerate(in_fwd)]
    fwd_eqns = [e for e, m in zip(eqns, in_fwd, strict=True) if m]
    bwd_eqns = [e for e, m in zip(eqns, in_bwd, strict=True) if m]
    fwd_defined = {x for e in fwd_eqns for x in e.outvars} | set(v.inputs)
    bwd_defined = {x for e in bwd_eqns for x in e.outvars}
    read = _used_by(bwd_eqns, [*v.input_cts, *v.param_grads])
    residuals = [x for x in read if x in fwd_defined and x not in bwd_defined]
    return fwd_eqns, bwd_eqns, residuals


def cut_input_weight(
    bwd_eqns: Sequence[Any], v: MergedVars, residuals: Sequence[Any], consts: set[Any]
) -> tuple[list[Any], list[Any], list[Any]]:
    """Pass 3: the backward's ``(I equations, W equations, W's residuals)``.

    I is what the input cotangents need; W what the parameter gradients need beyond I, and it
    recomputes the parameter-only values it needs rather than receiving them from I.
    """
    need_i = J.needed_eqns(bwd_eqns, v.input_cts)
    i_eqns = [e for e, m in zip(bwd_eqns, need_i, strict=True) if m]
    param_only: set[Any] = set(v.params) | consts
    for e in bwd_eqns:
        if all(isinstance(x, J.Literal) or x in param_only for x in e.invars):
            param_only.update(e.outvars)
    need_w = J.needed_eqns(bwd_eqns, v.param_grads)
    in_i = {id(e) for e in i_eqns}
    w_eqns = [
        e
        for e, m in zip(bwd_eqns, need_w, strict=True)
        if m and (id(e) not in in_i or all(x in param_only for x in e.outvars))
    ]
    w_defined = {x for e in w_eqns for x in e.outvars}
    pset = set(v.params)
    w_res = [
        x
        for x in _used_by(w_eqns, v.param_grads)
        if x not in w_defined and x not in pset and x not in consts
    ]
    provided = {x for e in i_eqns for x in e.outvars} | set(residuals) | set(v.cts)
    for x in w_res:
        if x not in provided:
            raise AssertionError(f"hlopipe internal: W needs {x}, which I does not provide")
    return i_eqns, w_eqns, w_res


def _used_by(eqns: Sequence[Any], outvars: Sequence[Any]) -> dict[Any, None]:
    """The variables ``eqns`` read and ``outvars`` name, in first-use order."""
    seen: dict[Any, None] = {}
    for e in eqns:
        for x in e.invars:
            if not isinstance(x, J.Literal):
                seen[x] = None
    for x in outvars:
        if not isinstance(x, J.Literal):
            seen[x] = None
    return seen


def chain_value_and_grad(
    staged: StagedProgram,
    args: Sequence[Any],
    argnums: int | Sequence[int],
    *,
    remat: bool | str = False,
    split_backward: bool = False,
) -> tuple[Any, Any]:
    """All forwards, then all backwards (see :meth:`StagedProgram.value_and_grad`)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    flat = staged.flatten(args)
    if not staged.out_avals or staged.out_avals[0].shape != ():
        raise StageError("value_and_grad needs the program's first output to be a scalar loss")
    loss_src = staged.out_sources[0]
    fbs = [st.forward_backward(nums, remat=remat) for st in staged.stages]
    outs: list[list[Any]] = []
    res: list[list[Any]] = []
    for st, fb in zip(staged.stages, fbs, strict=True):
        params = [flat[i] for i in st.params_needed]
        inputs = [outs[r.src][r.output] for r in st.receives]
        y, r = jax.jit(fb.forward)(params, inputs)
        outs.append(y)
        res.append(r)
    loss = loss_src.read(flat, outs)
    cts: dict[tuple[int, int], Any] = {}
    if loss_src.kind is SourceKind.STAGE:
        cts[(loss_src.stage, loss_src.index)] = jnp.ones((), staged.out_avals[0].dtype)
    grads: dict[int, Any] = {}
    for st, fb, r in reversed(list(zip(staged.stages, fbs, res, strict=True))):
        params = [flat[i] for i in st.params_needed]
        out_cts = [
            cts.get((st.index, k), jnp.zeros(st.outputs[k].shape, st.outputs[k].dtype))
            for k in fb.diff_outputs
        ]
        if split_backward:
            gi, wres = jax.jit(fb.backward_input)(params, r, out_cts)
            gp = jax.jit(fb.backward_weight)(params, wres)
        else:
            gi, gp = jax.jit(fb.backward)(params, r, out_cts)
        for k, g in zip(fb.diff_inputs, gi, strict=True):
            rc = st.receives[k]
            key = (rc.src, rc.output)
            cts[key] = g if key not in cts else cts[key] + g
        for k, g in zip(fb.diff_params, gp, strict=True):
            i = st.params_needed[k]
            grads[i] = g if i not in grads else grads[i] + g
    flat_grads = [grads.get(i, jnp.zeros(a.shape, a.dtype)) for i, a in enumerate(staged.in_avals)]
    tree = jax.tree_util.tree_unflatten(staged.in_tree, staged.gather_flat(flat_grads))
    g_out = tuple(tree[i] for i in nums)
    return loss, (g_out[0] if isinstance(argnums, int) else g_out)
