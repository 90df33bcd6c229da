"""What a training program costs, read from the program: per part (the first stage's extra
work, one repeated layer, the last stage's extra work), its forward and backward matmuls with
their shapes, the bytes its fused elementwise regions move, the residuals its backward reads,
its parameters, and the tensor-parallel pairs found by data flow.

The program is cut with ``stages.split(stage_layers=[1, 1, L - 3, 1])``: stage 1 is one
repeated layer alone, stage 0 the embedding with a layer, stage 3 a layer with the head and the
loss. Only those three stages are differentiated (``Stage.forward_backward``, the per-stage
autodiff the runtime runs), so a 126-layer program costs as much to profile as a 4-layer one.

Tensor parallelism follows Megatron-LM (Shoeybi et al. 2019, section 3): a weight matmul whose
activation input comes (through any non-weight-matmul equations) from another weight matmul's
output is the *row* half of a pair and its output is all-reduced; the others are *column*
matmuls, sharded on their output features. A matmul of two activations (attention's scores and
its weighted sum) splits by heads. Attention's *core* is found by data flow, not by shape
(:func:`_flow`): what the scores (a matmul of two activations whose output reaches another
one through non-matmul equations) reach until the next matmul, as large as the scores: the
masked scores and the probabilities. A fused attention kernel (FlashAttention, Dao et al. 2022)
keeps them on chip, and selective recompute (Korthikanti et al. 2022, section 5) recomputes
them instead of keeping them. The forward finds them and the backward starts from the
residuals the forward found so (and finds its own ``dO V^T`` the same way). A GPU dump's cuDNN
fused attention (``__cudnn$fmha*``) reaches the planner as the einsums ``rehydrate`` writes
for it, ``jax.nn.dot_product_attention`` as its einsums, and attention in a layer loop's body
through the loop; the sequence length and the heads are read off the scores' matmul.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from hlopipe import stages
from hlopipe.errors import StageError
from hlopipe.planfile import Recompute

_CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


class MatmulRole(enum.StrEnum):
    """How tensor parallelism splits a matmul."""

    COLUMN = "column"  # weight matmul sharded on its output features
    ROW = "row"  # weight matmul sharded on its contracted features; output all-reduced
    HEADS = "heads"  # two activations (attention): split by heads


@dataclass(frozen=True)
class Matmul:
    """One ``dot_general`` (times ``count``): its batch ``b``, free ``m`` and ``n`` and
    contracted ``k`` sizes, and the role tensor parallelism gives it."""

    b: int
    m: int
    n: int
    k: int
    role: MatmulRole
    count: int = 1
    attention: bool = False  # makes or reads an attention-internal value

    @functools.cached_property
    def flops(self) -> float:
        return 2.0 * self.b * self.m * self.n * self.k * self.count


@dataclass(frozen=True)
class PassCost:
    """One pass (forward or backward) of one part: its matmuls, the bytes its fused
    elementwise regions move (those touching attention-internal values apart), and its
    largest single value."""

    matmuls: tuple[Matmul, ...]
    fused_bytes: float
    attention_bytes: float
    largest_value: int
    kv_bytes: int = 0  # attention's keys and values (context parallelism passes them around)
    weight_output_bytes: int = 0  # outputs of the weight matmuls (selective recompute keeps)
    seq: int = 0  # the keys' length of the attention found (0: none)
    weight_grad_flops: float = 0.0  # of the matmuls making the weights' gradients (W)

    @functools.cached_property  # read for every layout a search prices
    def flops(self) -> float:
        return sum(m.flops for m in self.matmuls)

    @functools.cached_property
    def attention_flops(self) -> float:
        return sum(m.flops for m in self.matmuls if m.attention)


@dataclass(frozen=True)
class PartCost:
    """A part's forward and backward, its residuals (bytes the backward reads: all, and the
    attention-internal ones among them), its input's bytes (what full recompute keeps), its
    parameters, and the bytes its row matmuls all-reduce under tensor parallelism.

    Selective recompute keeps the outputs of the weight matmuls and the part's input and
    recomputes the rest (JAX's ``dots_with_no_batch_dims_saveable`` policy: attention's
    batched matmuls, norms and activations are recomputed; Korthikanti et al. 2022 recompute
    the attention core the same way)."""

    forward: PassCost
    backward: PassCost
    residual_bytes: int
    attention_residual_bytes: int
    input_bytes: int
    output_bytes: int
    param_elements: int
    param_bytes: int
    row_output_bytes: int
    # the residual bytes of the runtime's cut under SELECTIVE / ATTENTION; -1: not read
    selective_kept_bytes: int = -1
    attention_kept_bytes: int = -1

    @property
    def selective_bytes(self) -> int:
        """What selective recompute keeps: the runtime's residuals under that policy (the
        weight matmuls' outputs and the values its backward reads that it cannot redo from
        them); not read, every weight output and the input (never more than every
        residual)."""
        if self.selective_kept_bytes >= 0:
            return self.selective_kept_bytes
        return min(self.residual_bytes, self.forward.weight_output_bytes + self.input_bytes)


@dataclass(frozen=True)
class Profile:
    """A program's costs by part: ``first`` (stage 0: what precedes the layers, and one layer),
    ``layer`` (one repeated layer), ``last`` (one layer and what follows), ``layers`` repeated
    layers in all; ``whole`` instead when the program has too few layers to cut (then only one
    pipeline stage). ``seq``: the sequence length found in attention (0: none);
    ``param_specs``: ``PATTERN=SPEC`` rules for the weights tensor parallelism shards."""

    layers: int
    first: PartCost | None
    layer: PartCost | None
    last: PartCost | None
    whole: PartCost | None
    seq: int
    batch: int
    param_itemsize: int
    param_specs: tuple[str, ...]
    column_pairs: int
    marked: tuple[PartCost, ...] = ()  # a program cut at its markers: each stage's costs

    @property
    def heads(self) -> int:
        """Attention heads (the batch axes of attention's matmuls over the batch's
        sequences; 0 without attention): tensor parallelism splits them."""
        parts = [p for p in (self.layer, self.whole) if p is not None]
        for part in parts:
            for m in part.forward.matmuls:
                if m.attention and self.batch and m.b % self.batch == 0:
                    return m.b // self.batch
        return 0

    @property
    def fixed_stages(self) -> int | None:
        """The stage count a program with markers must be cut into (``None``: any)."""
        return len(self.marked) if len(self.marked) > 1 else None

    @property
    def total_param_elements(self) -> int:
        if self.whole is not None:
            return sum(p.param_elements for p in self.marked) or self.whole.param_elements
        assert self.first and self.layer and self.last
        return (
            self.first.param_elements
            + self.last.param_elements
            + (self.layers - 2) * self.layer.param_elements
        )


def profile_program(
    fn_or_program: Any,
    *example_args: Any,
    param_argnums: Sequence[int] | None = None,
    attention_fused: bool = True,
) -> Profile:
    """Read a training loss's costs (see the module docstring).

    Args:
      fn_or_program: a loss ``f(params, *batch)`` (or a loaded ``Program``).
      *example_args: its arguments (``jax.ShapeDtypeStruct`` are enough).
      param_argnums: the positional arguments that are trained (default ``(0,)`` for a
        function; every floating-point argument of a Program).
      attention_fused: cost attention as a fused kernel (scores never in memory); ``False``
        costs it as written.

    Returns:
      the :class:`Profile`.

    Raises:
      StageError: the program cannot be split or differentiated.
    """
    n = stages.count_layers(fn_or_program, *example_args)
    is_program = hasattr(fn_or_program, "as_function") and hasattr(fn_or_program, "in_avals")
    if param_argnums is None:
        if is_program:
            avals = fn_or_program.in_avals
            param_argnums = tuple(
                i for i, a in enumerate(avals) if jax.numpy.issubdtype(a.dtype, jax.numpy.inexact)
            )
        else:
            param_argnums = (0,)
    if n is None or n < 3:
        staged = _split_whole(fn_or_program, example_args)
        parts = list(staged.stages)
        layer_index = None
    else:
        counts = [1, 1, n - 3, 1] if n > 3 else [1, 1, 1]
        staged = stages.split(fn_or_program, *example_args, stage_layers=counts)
        parts = [staged.stage(0), staged.stage(1), staged.stage(staged.num_stages - 1)]
        layer_index = 1
    costs = [_part_cost(st, param_argnums, attention_fused) for st in parts]
    seq = max(c.forward.seq for c in costs)
    layer = staged.stage(layer_index) if layer_index is not None else parts[0]
    specs, pairs = _param_specs(layer, staged)
    floats = [a for a in staged.in_avals if jax.numpy.issubdtype(a.dtype, jax.numpy.inexact)]
    itemsize = max((jax.numpy.dtype(a.dtype).itemsize for a in floats), default=4)
    batch = _batch_size(staged, param_argnums)
    if layer_index is None or n is None:
        return Profile(
            1, None, None, None, costs[0], seq, batch, itemsize, specs, pairs, tuple(costs)
        )
    return Profile(n, costs[0], costs[1], costs[2], None, seq, batch, itemsize, specs, pairs)


def profile_staged(
    staged: Any, param_argnums: Sequence[int] | None = None, *, attention_fused: bool = True
) -> Profile:
    """The :class:`Profile` of a program already cut into stages (``stages.split``): every
    stage costed by its own autodiff, the stage count fixed (as a program cut at markers).

    Args:
      staged: a ``StagedProgram``.
      param_argnums: the positional arguments trained (default: those of the first argument
        of a function's tree, or every floating-point argument of a flat program).
      attention_fused: as :func:`profile_program`.
    """
    if param_argnums is None:
        nums = {a for st in staged.stages for a in st.param_argnums}
        flat = len(nums) == len(staged.in_avals)
        param_argnums = (
            tuple(
                i
                for i, a in enumerate(staged.in_avals)
                if jax.numpy.issubdtype(a.dtype, jax.numpy.inexact)
            )
            if flat
            else (0,)
        )
    costs = tuple(_part_cost(st, param_argnums, attention_fused) for st in staged.stages)
    seq = max(c.forward.seq for c in costs)
    floats = [a for a in staged.in_avals if jax.numpy.issubdtype(a.dtype, jax.numpy.inexact)]
    itemsize = max((jax.numpy.dtype(a.dtype).itemsize for a in floats), default=4)
    return Profile(
        1, None, None, None, costs[0], seq, _batch_size(staged, param_argnums), itemsize,
        (), 0, costs,
    )  # fmt: skip


def _split_whole(fn_or_program: Any, example_args: tuple[Any, ...]) -> Any:
    """A program without repeated layers to cut: at its markers (then the pipeline has that
    many stages), else as one stage."""
    try:
        return stages.split(fn_or_program, *example_args)
    except StageError:  # no markers: ``num_stages`` needed, and one stage is all we can cut
        return stages.split(fn_or_program, *example_args, num_stages=1)


# --- one stage ---------------------------------------------------------------------------------


def _part_cost(stage: Any, param_argnums: Sequence[int], fused: bool) -> PartCost:
    fb = stage.forward_backward(tuple(param_argnums))
    fwd = fb.forward_jaxpr
    bwd = fb.backward_jaxpr
    params = set(fb.diff_params)
    fwd_pass = _pass_cost(fwd.jaxpr, params, fused)
    # the backward reads the parameters, the residuals and the outputs' cotangents: a residual
    # is a weight, a constant or attention-internal in the backward as the forward made it
    first = fb.num_params  # the backward's argument holding the first residual
    out_kinds = fwd_pass.out_kinds
    bwd_pass = _pass_cost(
        bwd.jaxpr,
        params,
        fused,
        weights_in={first + i - fb.num_outputs for i in out_kinds.weights},
        core_in={first + i - fb.num_outputs for i in out_kinds.core},
        const_in={first + i - fb.num_outputs for i in out_kinds.const},
        grads_out=set(range(len(fb.diff_inputs), len(bwd.jaxpr.outvars))),
    )
    # a residual made from constants alone (a causal mask broadcast over the heads) is made
    # again by the backward for free, as a stage makes such values instead of receiving them
    res_at = [i for i in range(fb.num_outputs, len(fwd.jaxpr.outvars)) if i not in out_kinds.const]
    res = [fwd.jaxpr.outvars[i] for i in res_at]
    res_bytes = sum(_nbytes(v.aval) for v in res)
    att_bytes = sum(_nbytes(fwd.jaxpr.outvars[i].aval) for i in res_at if i in out_kinds.core)
    pavals = stage.param_avals
    diff = [i for i, a in enumerate(stage.param_argnums) if a in set(param_argnums)]
    elements = sum(int(math.prod(pavals[i].shape)) for i in diff)
    pbytes = sum(_nbytes(pavals[i]) for i in diff)
    return PartCost(
        forward=fwd_pass.cost,
        backward=bwd_pass.cost,
        residual_bytes=res_bytes,
        attention_residual_bytes=att_bytes,
        input_bytes=sum(_nbytes(r.aval) for r in stage.receives),
        output_bytes=sum(_nbytes(o) for o in stage.outputs),
        param_elements=elements,
        param_bytes=pbytes,
        row_output_bytes=fwd_pass.row_bytes,
        selective_kept_bytes=_kept_under(stage, param_argnums, Recompute.SELECTIVE),
        attention_kept_bytes=_kept_under(stage, param_argnums, Recompute.ATTENTION),
    )


def _kept_under(stage: Any, param_argnums: Sequence[int], policy: Recompute) -> int:
    """Bytes the stage's forward keeps for its backward under ``policy``: the residuals of
    the runtime's own cut (``Stage.forward_backward(remat=policy)``, traced, not compiled),
    so that the plan prices what ``Pipeline(recompute=policy)`` runs: one meaning of each
    policy, in one place (a walk back of its own here disagreed: it missed each scanned
    layer's input the loop keeps, and counted token arrays the backward takes as arguments)."""
    fb = stage.forward_backward(tuple(param_argnums), remat=policy.value)
    return sum(_nbytes(a) for a in fb.residual_avals)


def _varying(jaxpr: Any) -> set[Any]:
    """The values of ``jaxpr`` that depend on one of its arguments (through calls and loops:
    a value a call makes from constants alone is not), as canonical values of a :class:`_Same`
    returned with it."""
    lit = jax.extend.core.Literal
    same = _Same()
    eqns = list(_flatten(jaxpr, 1, same))
    out = {same.find(v) for v in jaxpr.invars}
    for e, _ in eqns:
        if any(not isinstance(v, lit) and same.find(v) in out for v in e.invars):
            out.update(same.find(v) for v in e.outvars)
    return {v for v in jaxpr.outvars if not isinstance(v, lit) and same.find(v) in out}


def _flatten(
    jaxpr: Any,
    mult: int,
    same: _Same | None,
    seen: set[int] | None = None,
    names: dict[Any, Any] | None = None,
) -> Iterator[tuple[Any, int]]:
    """Every equation that is no call or loop (those are opened: a scan's body times its
    length), with its multiplicity; with ``same``, each body's arguments and results are made
    the same values as the equation's operands and results they stand for (so data flow
    crosses calls and loops). A body opened a second time (JAX traces a function called twice
    with the same shapes once, and both calls hold that one body) is opened under fresh names
    (``names``: its variables' :class:`_Alias` at this call site), so that its two calls stay
    two values each."""
    seen = set() if seen is None else seen
    for e in jaxpr.eqns:
        if names is not None:
            e = _Eqn(e.primitive, e.params, _named(e.invars, names), _named(e.outvars, names))
        body, ins, outs = _body(e)
        if body is None:
            yield e, mult
            continue
        inner: dict[Any, Any] | None = {} if id(body) in seen else None
        seen.add(id(body))
        if same is not None:
            body_ins, body_outs = list(body.invars), list(body.outvars)
            if inner is not None:
                body_ins, body_outs = _named(body_ins, inner), _named(body_outs, inner)
            for b_in, outer in zip(body_ins, ins, strict=False):
                same.join(b_in, outer)
            for b_out, outer in zip(body_outs, outs, strict=False):
                same.join(b_out, outer)
        times = int(e.params["length"]) if e.primitive.name == "scan" else 1
        yield from _flatten(body, mult * times, same, seen, inner)


class _Alias:
    """A body's variable at one call site of a body that has several (see :func:`_flatten`)."""

    __slots__ = ("var",)

    def __init__(self, var: Any) -> None:
        self.var = var

    @property
    def aval(self) -> Any:
        return self.var.aval


@dataclass(frozen=True)
class _Eqn:
    """An equation of a body opened under fresh names."""

    primitive: Any
    params: Any
    invars: list[Any]
    outvars: list[Any]


def _named(values: Sequence[Any], names: dict[Any, Any]) -> list[Any]:
    lit = jax.extend.core.Literal
    return [v if isinstance(v, lit) else names.setdefault(v, _Alias(v)) for v in values]


def _body(e: Any) -> tuple[Any, list[Any], list[Any]]:
    """The body an equation runs (open jaxpr) and the operands and results its arguments and
    results stand for; ``None`` for an equation with no body."""
    name, params = e.primitive.name, e.params
    if name == "scan":
        return params["jaxpr"].jaxpr, list(e.invars), list(e.outvars)
    if name == "while":
        skip = params["cond_nconsts"]
        return params["body_jaxpr"].jaxpr, list(e.invars[skip:]), list(e.outvars)
    if name == "cond":
        return params["branches"][-1].jaxpr, list(e.invars[1:]), list(e.outvars)
    body = next((params[k] for k in _CALLS if k in params), None)
    if body is None:
        return None, [], []
    body = getattr(body, "jaxpr", body)
    if not hasattr(body, "eqns"):
        return None, [], []
    n = len(body.invars)
    return body, list(e.invars[-n:]) if n else [], list(e.outvars)


class _Same:
    """Values that are one value seen from inside and outside a call or loop (union-find)."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, v: Any) -> Any:
        if isinstance(v, jax.extend.core.Literal):
            return v
        root = v
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while v is not root:
            self.parent[v], v = root, self.parent.get(v, root)
        return root

    def join(self, a: Any, b: Any) -> None:
        if isinstance(a, jax.extend.core.Literal) or isinstance(b, jax.extend.core.Literal):
            return
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


class _OutKinds(NamedTuple):
    """Which results of a pass (positions) are weights (made from parameters alone),
    constants (made from no argument) and attention-internal values."""

    weights: frozenset[int]
    const: frozenset[int]
    core: frozenset[int]


class _Pass(NamedTuple):
    cost: PassCost
    roles: dict[int, MatmulRole]
    row_bytes: int
    out_kinds: _OutKinds


def _pass_cost(
    jaxpr: Any,
    param_positions: set[int],
    fused: bool,
    *,
    weights_in: set[int] | frozenset[int] = frozenset(),
    core_in: set[int] | frozenset[int] = frozenset(),
    const_in: set[int] | frozenset[int] = frozenset(),
    grads_out: set[int] | frozenset[int] = frozenset(),
) -> _Pass:
    """The matmuls and fused-region bytes of one pass. Data flow gives the roles: values made
    from parameters alone (a weight, its transpose or cast) are *weights*; a weight matmul
    reading a value derived from a column matmul's output is a row matmul; the attention core
    is :func:`_flow`'s. Data flow crosses calls and loops (a layer loop's body reads its
    layer's weights). ``weights_in``, ``core_in`` and ``const_in`` name arguments (beyond
    ``param_positions``) that are weights, attention-internal or constants: the backward's
    residuals, as the forward made them; ``grads_out`` the results that are the weights'
    gradients."""
    same = _Same()
    eqns = [(e, m, jaxpr) for e, m in _flatten(jaxpr, 1, same)]
    flow = _flow(
        jaxpr, [(e, m) for e, m, _ in eqns], same, {*param_positions, *weights_in}, core_in,
        const_in, grads_out,
    )  # fmt: skip
    weights, core = flow.weights, flow.core
    open_: set[Any] = set()  # derived from a column matmul's output, no row matmul since
    matmuls: list[Matmul] = []
    roles: dict[int, MatmulRole] = {}
    row_bytes = 0
    kv_bytes = 0
    weight_out = 0
    wgrad = 0.0
    for idx, (e, mult, _) in enumerate(eqns):
        ins = [same.find(v) for v in e.invars if not isinstance(v, jax.extend.core.Literal)]
        outs = [same.find(v) for v in e.outvars]
        if e.primitive.name == "dot_general":
            mm, role, row = _matmul(e, weights, open_, core, mult, same)
            internal = [same.find(v) in core for v in e.invars[:2]]
            if mm.attention and any(internal) and not all(internal):
                # the probabilities times V, in either operand order: V, and K its size
                kept = e.invars[internal.index(False)]
                kv_bytes += 2 * _nbytes(kept.aval) * mult
            matmuls.append(mm)
            roles[idx] = role
            if outs[0] in flow.grads:
                wgrad += mm.flops
            row_bytes += row
            if role is MatmulRole.COLUMN or role is MatmulRole.ROW:
                weight_out += _nbytes(e.outvars[0].aval) * mult
            if role is MatmulRole.COLUMN or (
                role is MatmulRole.HEADS and any(v in open_ for v in ins)
            ):
                open_.update(outs)
            continue
        if any(v in open_ for v in ins):
            open_.update(outs)
    fused_bytes, att_bytes, largest = _region_bytes(eqns, jaxpr, core, fused, same)
    cost = PassCost(
        tuple(matmuls), fused_bytes, att_bytes, largest, kv_bytes, weight_out, flow.seq, wgrad
    )
    lit = jax.extend.core.Literal

    def at(group: set[Any]) -> frozenset[int]:
        return frozenset(
            i
            for i, v in enumerate(jaxpr.outvars)
            if not isinstance(v, lit) and same.find(v) in group
        )

    consts = {same.find(v) for v in jaxpr.outvars if not isinstance(v, lit)} - flow.varying
    kinds = _OutKinds(at(weights), at(consts), at(core))
    return _Pass(cost, roles, row_bytes, kinds)


class _Flows(NamedTuple):
    weights: set[Any]  # made from parameters alone
    varying: set[Any]  # made from an argument (a value made from none is a constant)
    core: set[Any]  # attention-internal
    grads: set[Any]  # outputs of the matmuls making the weights' gradients (x^T dY)
    seq: int  # the keys' length of the attention found (0: none)


def _flow(
    jaxpr: Any,
    eqns: list[tuple[Any, int]],
    same: _Same,
    weights_in: set[int],
    core_in: set[int] | frozenset[int],
    const_in: set[int] | frozenset[int],
    grads_out: set[int] | frozenset[int],
) -> _Flows:
    """The attention core of a pass, found by data flow, not by shape.

    An *activation* matmul multiplies two activations (values made from an argument that is no
    weight or constant; neither operand a weight) and makes no weight's gradient (the
    backward's ``x^T dY``, found as what reaches the ``grads_out`` results). Its output is
    attention's *scores* when it reaches an activation matmul's operand through non-matmul
    equations (the masked, scaled softmax feeding the probabilities-times-values matmul); the
    backward's ``dO V^T`` is found the same way (its softmax gradient feeds ``dS K`` and
    ``dS^T Q``), and a fused attention custom call reaches the planner as the same two
    einsums. The *core* is what the scores (and the ``core_in`` arguments: the backward's
    attention-internal residuals) reach through non-matmul equations, as large as the scores:
    the probabilities, the masked scores, a mask of where the maximum is; not the row
    statistics (a fused kernel keeps its log-sum-exp in memory too) and nothing past the next
    matmul. A fused attention kernel keeps the core on chip (FlashAttention, Dao et al. 2022)
    and selective recompute recomputes it (Korthikanti et al. 2022, section 5).
    """
    lit = jax.extend.core.Literal
    weights = {same.find(v) for i, v in enumerate(jaxpr.invars) if i in weights_in}
    acts = {
        same.find(v)
        for i, v in enumerate(jaxpr.invars)
        if i not in weights_in and i not in const_in
    }
    varying = {same.find(v) for i, v in enumerate(jaxpr.invars) if i not in const_in}
    producer: dict[Any, Any] = {}
    activation_mms = []
    for e, _ in eqns:
        ins = [same.find(v) for v in e.invars if not isinstance(v, lit)]
        outs = [same.find(v) for v in e.outvars]
        for o in outs:
            producer[o] = e
        dot = e.primitive.name == "dot_general"
        if dot and len(ins) == 2 and all(v in acts and v not in weights for v in ins):
            activation_mms.append(e)
        if not dot and ins and all(v in weights for v in ins):
            weights.update(outs)
        if any(v in acts for v in ins):
            acts.update(outs)
        if any(v in varying for v in ins):
            varying.update(outs)
    grads = set()
    if grads_out:  # a weight's gradient: a matmul whose output reaches those results alone
        to_grads = _reaching([jaxpr.outvars[i] for i in grads_out], producer, same)
        others = [v for i, v in enumerate(jaxpr.outvars) if i not in grads_out]
        dots = [e for e, _ in eqns if e.primitive.name == "dot_general"]
        elsewhere = _reaching([*others, *(v for e in dots for v in e.invars)], producer, same)
        grads = {same.find(e.outvars[0]) for e in dots} & to_grads - elsewhere
    activation_mms = [e for e in activation_mms if same.find(e.outvars[0]) not in grads]
    feeds = _reaching([v for e in activation_mms for v in e.invars], producer, same)
    scores = [e for e in activation_mms if same.find(e.outvars[0]) in feeds]
    seeds = [v for i, v in enumerate(jaxpr.invars) if i in core_in]
    sizes = [_numel(e.outvars[0].aval) for e in scores] + [_numel(v.aval) for v in seeds]
    if not sizes:
        return _Flows(weights, varying, set(), grads, 0)
    least = min(sizes)
    reach = {same.find(e.outvars[0]) for e in scores} | {same.find(v) for v in seeds}
    core = set(reach)
    for e, _ in eqns:
        if e.primitive.name == "dot_general":
            continue
        if any(not isinstance(v, lit) and same.find(v) in reach for v in e.invars):
            for o in e.outvars:
                reach.add(same.find(o))
                if _numel(o.aval) >= least:  # the eqn's own value (a loop stacks its results)
                    core.add(same.find(o))
    seq = max((_free(e, 1) for e in scores), default=0)
    return _Flows(weights, varying, core, grads, seq)


def _reaching(values: list[Any], producer: dict[Any, Any], same: _Same) -> set[Any]:
    """``values`` and what reaches them through non-matmul equations (canonical)."""
    lit = jax.extend.core.Literal
    found: set[Any] = set()
    stack = [same.find(v) for v in values if not isinstance(v, lit)]
    while stack:
        v = stack.pop()
        if v in found:
            continue
        found.add(v)
        e = producer.get(v)
        if e is not None and e.primitive.name != "dot_general":
            stack.extend(same.find(x) for x in e.invars if not isinstance(x, lit))
    return found


def _free(e: Any, operand: int) -> int:
    """The product of a ``dot_general`` operand's free axes (neither batch nor contracted)."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    contracted, batch = (lc, lb) if operand == 0 else (rc, rb)
    shape = e.invars[operand].aval.shape
    return int(math.prod(shape[d] for d in range(len(shape)) if d not in contracted + batch))


def _matmul(
    e: Any, weights: set[Any], open_: set[Any], core: set[Any], mult: int, same: _Same
) -> tuple[Matmul, MatmulRole, int]:
    (lc, _), (lb, _) = e.params["dimension_numbers"]
    lhs, rhs = e.invars[0], e.invars[1]
    ls = lhs.aval.shape
    b = int(math.prod(ls[d] for d in lb))
    k = int(math.prod(ls[d] for d in lc))
    m, n = _free(e, 0), _free(e, 1)
    lw = not isinstance(lhs, jax.extend.core.Literal) and same.find(lhs) in weights
    rw = not isinstance(rhs, jax.extend.core.Literal) and same.find(rhs) in weights
    attention = any(
        same.find(v) in core
        for v in [*e.invars, *e.outvars]
        if not isinstance(v, jax.extend.core.Literal)
    )
    row = 0
    if lw == rw:
        role = MatmulRole.HEADS
    else:
        act = rhs if lw else lhs
        if same.find(act) in open_:
            role = MatmulRole.ROW
            row = _nbytes(e.outvars[0].aval) * mult
        else:
            role = MatmulRole.COLUMN
    return Matmul(b, m, n, k, role, mult, attention), role, row


def _region_bytes(
    eqns: list[tuple[Any, int, Any]], jaxpr: Any, core: set[Any], fused: bool, same: _Same
) -> tuple[float, float, int]:
    """Bytes the pass's elementwise equations move when every connected run of them is one
    fused kernel (as XLA fuses): each region reads each of its inputs and writes each of its
    outputs once. Returns the bytes of regions touching no attention-internal value, those of
    the ones that do (0 with ``fused``: the attention kernel keeps them on chip), and the
    largest value."""
    lit = jax.extend.core.Literal
    ins_of = [[same.find(v) for v in e.invars if not isinstance(v, lit)] for e, _, _ in eqns]
    outs_of = [[same.find(v) for v in e.outvars] for e, _, _ in eqns]
    producer = {v: i for i, outs in enumerate(outs_of) for v in outs}
    elementwise = [e.primitive.name != "dot_general" for e, _, _ in eqns]
    parent = list(range(len(eqns)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, ins in enumerate(ins_of):
        if elementwise[i]:
            for v in ins:
                j = producer.get(v)
                if j is not None and elementwise[j]:
                    parent[find(i)] = find(j)
    readers: dict[Any, set[int]] = {}
    for i, ins in enumerate(ins_of):
        for v in ins:
            readers.setdefault(v, set()).add(i)
    outs = {same.find(v) for v in _varying(jaxpr)}  # those made from constants are made again
    moved: dict[int, dict[Any, float]] = {}  # region -> value -> bytes (each value once)
    touches: dict[int, bool] = {}
    largest = 0
    for i, (e, mult, _) in enumerate(eqns):
        for v in e.outvars:
            largest = max(largest, _nbytes(v.aval))
        if not elementwise[i]:
            continue
        r = find(i)
        seen = moved.setdefault(r, {})
        for v, var in zip(ins_of[i], [x for x in e.invars if not isinstance(x, lit)], strict=True):
            j = producer.get(v)
            if j is None or not elementwise[j] or find(j) != r:
                seen[v] = max(seen.get(v, 0.0), _nbytes(var.aval) * mult)
        for v, var in zip(outs_of[i], e.outvars, strict=True):
            rs = readers.get(v, set())
            if v in outs or any(not elementwise[j] or find(j) != r for j in rs):
                seen[v] = max(seen.get(v, 0.0), _nbytes(var.aval) * mult)
        touches[r] = touches.get(r, False) or any(
            same.find(x) in core for x in [*e.invars, *e.outvars] if not isinstance(x, lit)
        )
    plain = sum(sum(m.values()) for r, m in moved.items() if not touches[r])
    attn = sum(sum(m.values()) for r, m in moved.items() if touches[r])
    return plain, 0.0 if fused else attn, largest


def _nbytes(aval: Any) -> int:
    return _numel(aval) * int(np.dtype(aval.dtype).itemsize)


def _numel(aval: Any) -> int:
    return int(math.prod(aval.shape))


def _batch_size(staged: Any, param_argnums: Sequence[int]) -> int:
    """The leading size of the first batch argument (an argument not trained): the sequences
    of one microbatch."""
    trained = set(param_argnums)
    for st in staged.stages:
        for i, num in zip(st.params_needed, st.param_argnums, strict=True):
            shape = staged.in_avals[i].shape
            if num not in trained and shape:
                return int(shape[0])
    return 1


def _param_specs(layer: Any, staged: Any) -> tuple[tuple[str, ...], int]:
    """``PATTERN=SPEC`` rules sharding the layer's column weights on their output features
    and its row weights on their input features (the ``model`` axis), by path with layer
    indices written as ``*``; and the number of row matmuls (column/row pairs) in a layer."""
    fb = layer.forward_backward(tuple(sorted(set(layer.param_argnums))))
    jaxpr = fb.forward_jaxpr.jaxpr
    roles = _pass_cost(jaxpr, set(fb.diff_params), True).roles
    same = _Same()
    eqns = [e for e, _ in _flatten(jaxpr, 1, same)]
    position = {same.find(v): i for i, v in enumerate(jaxpr.invars)}
    made = {same.find(o): e for e in eqns for o in e.outvars}
    specs: dict[str, str] = {}
    pairs = 0
    for idx, role in roles.items():
        if role is MatmulRole.ROW:
            pairs += 1
        if role is not MatmulRole.COLUMN and role is not MatmulRole.ROW:
            continue
        for v in eqns[idx].invars[:2]:
            src = _source_param(v, made, position, same)
            if src is None or src >= len(layer.param_paths):
                continue
            rank = len(layer.param_avals[src].shape)
            if rank < 2:
                continue
            axes = ["None"] * rank
            axes[-1 if role is MatmulRole.COLUMN else -2] = "model"
            pattern = _generic_path(layer.param_paths[src])
            if pattern is not None:
                specs[pattern] = ",".join(axes)
    return tuple(f"{p}={s}" for p, s in sorted(specs.items())), pairs


def _source_param(
    v: Any, made: dict[Any, Any], position: dict[Any, int], same: _Same
) -> int | None:
    """The parameter a weight operand is made from (through casts, transposes and a layer
    loop's slicing of its row)."""
    if isinstance(v, jax.extend.core.Literal):
        return None
    v = same.find(v)
    for _ in range(16):
        if v in position or v not in made:
            break
        e = made[v]
        ins = [x for x in e.invars if not isinstance(x, jax.extend.core.Literal)]
        if e.primitive.name in ("dynamic_slice", "gather", "slice", "squeeze"):
            ins = ins[:1]
        if len(ins) != 1:
            return None
        v = same.find(ins[0])
    return position.get(v)


def _generic_path(path: str) -> str | None:
    """A regular expression matching a layer parameter's path in every layer (the syntax of
    ``--param-spec``): its list indices made ``\\d+``, a layer loop's row range and the
    positional argument dropped; ``None`` for a path that names no layer (an HLO program's
    argument: a rule would match that one argument only)."""
    stacked = re.search(r"\[\d+:\d+\]$", path) is not None  # a layer loop's rows
    path = re.sub(r"\[\d+:\d+\]$", "", path)
    path = re.sub(r"^\[\d+\]", "", path)  # the positional argument: rules match inside paths
    escaped = re.escape(path)
    pattern = re.sub(r"\\\[\d+\\\]", lambda _: r"\[\d+\]", escaped)
    return pattern if stacked or pattern != escaped else None
