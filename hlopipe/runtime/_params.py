"""Parameters and optimizer: where each parameter lives, its gradient, its update.

A parameter lives on every rank that uses it; the copy on its owner's rank (its first stage's)
is the one the optimizer updates, and the others are refreshed from it after each update.
The optimizer runs per stage over the parameters that stage owns, as one jitted function per
stage, compiled once per pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from hlopipe.runtime import _optim
from hlopipe.runtime._comm import Comm, host_value
from hlopipe.runtime._placement import over_data
from hlopipe.runtime._plan import PipelinePlan, host_leaves


@dataclass(eq=False)
class PipelineState:
    """Parameters and optimizer state, living on their stages' devices.

    Attributes:
      values: per rank, flat parameter index -> the array on that rank (in the sharding the
        parameter has on that rank's mesh: its spec's or propagation's; replicated by
        default). A parameter used by stages on several ranks (a tied embedding) has a copy on
        each; the copy on its owner's rank (its first stage's) is the one the optimizer updates.
      opt_states: per stage, the optax state of the parameters it owns (``None`` without an
        optimizer).
      step: how many steps produced this state.

    A step *consumes* the state it is given (its buffers are donated to the update), as a
    jitted training step with donation does: always continue from the returned state.
    """

    values: list[dict[int, jax.Array]]
    opt_states: list[Any]
    step: int
    treedef: Any = field(repr=False)
    owner_rank: list[int] = field(repr=False)
    # leaves -> the caller's tree, when it differs from ``treedef``'s (a cut layer loop's
    # stacked parameters are held as their rows per range; see ``PipelinePlan.param_tree``)
    to_tree: Any = field(default=None, repr=False)

    @property
    def params(self) -> Any:
        """The parameters as the pytree given to :meth:`Pipeline.init` (owner copies, each
        on its stage's devices; ``jax.device_get`` brings them to the host). Across processes,
        the leaves another process owns are ``None``; :meth:`Pipeline.gather_params` gives
        every process all of them. A stacked parameter of a cut layer loop is returned whole
        (its rows joined on its first range's devices)."""
        leaves = [self.values[r].get(p) for p, r in enumerate(self.owner_rank)]
        if self.to_tree is not None:
            return self.to_tree(leaves)
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


def fresh_copy(x: Any, sharding: Any) -> jax.Array:
    """``x`` on ``sharding`` in buffers of its own (the state's buffers get donated).

    ``jax.device_put(..., may_alias=False)`` still aliases the source's buffer on a device it
    shares with a multi-device target (seen with jax 0.10.2), so such arrays go via the host.
    """
    if isinstance(x, jax.Array) and (
        set(x.devices()) & set(sharding.device_set) or not sharding.is_fully_addressable
    ):
        x = np.asarray(x)
    return jax.device_put(x, sharding, may_alias=False)


class Params:
    """Placement, gradients and optimizer updates of one pipeline's parameters."""

    def __init__(self, plan: PipelinePlan, comm: Comm, optimizer: Any) -> None:
        self.plan = plan
        self.comm = comm
        self.optimizer = optimizer
        self._opt_fns: dict[int, tuple[Any, list[Any]]] = {}
        # per rank, the float32 zero the first phase is given (made once, not every step)
        self._zero: dict[int, jax.Array] = {}
        self._sum = jax.jit(lambda xs: sum(xs[1:], xs[0]))
        self._direct: list[tuple[int, int]] | None = None  # see _direct_grads
        self.opt_plan: _optim.OptimizerPlan | None = None
        # The optimizer sees the caller's tree: a cut layer loop's stacked parameter is one
        # leaf, whole (its rows, owned by one stage, joined), so that statistics over the
        # parameter (norms, trust ratios, factored moments) are the one-device ones.
        if plan.param_pieces:
            self.view = _optim.TreeView.of(plan.caller_treedef, plan.caller_avals)
            self.leaf_of = tuple(pc.source for pc in plan.param_pieces)
            names = plan.caller_names
        else:
            self.view = _optim.TreeView.of(plan.param_treedef, plan.param_avals)
            self.leaf_of = tuple(range(plan.num_params))
            names = plan.param_names
        # per stage, the optimizer's leaves it updates
        self.opt_owned = tuple(
            tuple(sorted({self.leaf_of[p] for p in owned})) for owned in plan.owned
        )
        self.trained = tuple(sorted(q for owned in self.opt_owned for q in owned))
        if optimizer is not None:
            self.opt_plan = _optim.plan_optimizer(optimizer, self.view, self.trained, names)

    def state(self, values: list[dict[int, jax.Array]], opt_states: list[Any], step: int) -> Any:
        pl = self.plan
        to_tree = pl.param_tree if pl.param_pieces else None
        return PipelineState(
            values, opt_states, step, pl.param_treedef, list(pl.owner_rank), to_tree
        )

    def init(self, params: Any) -> PipelineState:
        pl = self.plan
        leaves = pl.check_params(params)
        values: list[dict[int, jax.Array]] = [{} for _ in range(pl.placement.num_ranks)]
        for p, x in enumerate(leaves):
            for r in pl.holders[p]:
                if pl.layout.local(r):
                    values[r][p] = fresh_copy(x, pl.param_sharding(r, p))
        return self.state(values, self.init_opt_states(values), 0)

    def init_opt_states(self, values: list[dict[int, jax.Array]]) -> list[Any]:
        """Per stage, ``optimizer.init`` of the parameters it owns (taken from ``values``, as
        :class:`PipelineState` holds them); ``None`` for a stage another process runs, and
        for every stage without an optimizer."""
        pl = self.plan
        opt_states: list[Any] = [None] * pl.staged.num_stages
        if self.optimizer is None:
            return opt_states
        for s, owned in enumerate(pl.owned):
            if pl.layout.local(pl.placement.rank_of(s)):
                own = [values[pl.owner_rank[p]][p] for p in owned]
                opt_states[s] = self.optimizer_fns(s)[0](own)
        return opt_states

    def optimizer_fns(self, s: int) -> tuple[Any, list[Any]]:
        """Stage ``s``'s jitted ``optimizer.init`` and its update phases (built once per
        pipeline): one phase per global sum of the optimizer and a last one, each
        ``(updates, state, params, totals) -> (...)`` (see :func:`_phase`)."""
        hit = self._opt_fns.get(s)
        if hit is not None:
            return hit
        pl = self.plan
        rank = pl.placement.rank_of(s)
        # The state is the optimizer's over the user's parameter tree (the other stages'
        # parameters' leaves as empty placeholders), so that its per-parameter leaves carry the
        # parameter's path (checkpoints store them by it, not by stage) and masks and labels
        # see the tree they were written for.
        rows = _Rows.of(pl, self.leaf_of, s, self.opt_owned[s])
        view = self.view
        rep = pl.placement.replicated(rank)
        p_sh = [pl.param_sharding(rank, p) for p in pl.owned[s]]
        avals = [pl.param_avals[p] for p in pl.owned[s]]
        opt = self.optimizer
        assert self.opt_plan is not None

        trained = self.trained

        def init_fn(p: list[Any]) -> Any:
            # init over the full-shape tree (the one the plan traced), keeping the stage's
            # own leaves: the zeros standing for the other stages' parameters are dead code
            # under jit, never materialised
            full = view.full_shaped(rows.leaves, rows.join(p), trained)
            return view.stage_state(opt.init(full), rows.leaves)

        # Optimizer state leaves of a parameter live like it; the rest (counts) replicated.
        # ZeRO-1 (and 2, 3): sharded over the data axis besides. The update's executable
        # then slices the gradient (ZeRO-1: replicated over data, the stage's backward summed
        # it over the microbatches' data shards; ZeRO-2: the accumulator already holds only
        # the device's shard), updates each device's shard of the state and all-gathers the
        # new parameters into their own (replicated) layout.
        leaf_sh = [p_sh[group[0]] for group in rows.groups]
        if pl.zero:
            mesh = pl.placement.meshes[rank]
            leaf_sh = [
                NamedSharding(mesh, over_data(sh.spec, view.avals[q].shape, mesh))
                for sh, q in zip(leaf_sh, rows.leaves, strict=True)
            ]
        st_sh = _optim.state_shardings(
            jax.eval_shape(init_fn, list(avals)), view, rows.leaves, leaf_sh,
            pl.placement.meshes[rank],
        )  # fmt: skip

        init = jax.jit(init_fn, out_shardings=st_sh)
        phases = [
            _phase(self.opt_plan, view, rows, s == 0, k, (p_sh, st_sh, rep))
            for k in range(self.opt_plan.num_slots + 1)
        ]
        self._opt_fns[s] = (init, phases)
        return init, phases

    def compile_ahead(self) -> None:
        """Build every local stage's optimizer functions now (not at the first step)."""
        if self.optimizer is None:
            return
        pl = self.plan
        for s in range(pl.staged.num_stages):
            if pl.layout.local(pl.placement.rank_of(s)):
                self.optimizer_fns(s)

    def stage_args(self, state: PipelineState, batch: Any) -> dict[tuple[int, int], list[Any]]:
        """Per (stage, microbatch): the stage's flat arguments (parameters and batch slices)."""
        pl = self.plan
        leaves = pl.check_batch(batch)
        b, m, n = pl.microbatch_size, pl.num_microbatches, pl.num_params
        host = host_leaves(leaves)
        placement = pl.placement
        placed: dict[tuple[int, int, int], Any] = {}  # (leaf, rank, microbatch) -> array
        args: dict[tuple[int, int], list[Any]] = {}
        for st in pl.staged.stages:
            r = placement.rank_of(st.index)
            if not pl.layout.local(r):
                continue
            for i in range(m):
                row = []
                want_sh = pl.execs[st.index].param_shardings
                for p, want in zip(st.params_needed, want_sh, strict=True):
                    if p < n:
                        x = state.values[r][p]
                        # two stages of one rank for which propagation chose differently
                        row.append(x if x.sharding == want else jax.device_put(x, want))
                        continue
                    key = (p - n, r, i)
                    if key not in placed:
                        part = host[key[0]][i * b : (i + 1) * b]
                        placed[key] = jax.device_put(part, placement.data(r, part))
                    row.append(placed[key])
                args[(st.index, i)] = row
        return args

    def total_grads(self, acc: list[list[Any]]) -> list[Any]:
        """Per parameter, the sum of its stages' gradients, on its owner's rank (``None``
        for a parameter another process owns)."""
        direct = self._direct_grads()
        if direct:
            return [acc[e][n] for e, n in direct]
        pl = self.plan
        per_param: dict[int, list[tuple[int, Any]]] = {}
        for ex, g in zip(pl.execs, acc, strict=True):
            st = ex.stage
            local = pl.layout.local(ex.rank)
            for n, k in enumerate(ex.autodiff.diff_params):
                gk = g[n] if local else None
                per_param.setdefault(st.params_needed[k], []).append((st.index, gk))
        out: list[Any] = []
        for p, a in enumerate(pl.param_avals):
            owner = pl.owner_rank[p]
            rep = pl.param_sharding(owner, p)
            parts = per_param.get(p)
            if not parts:
                local = pl.layout.local(owner)
                out.append(jax.device_put(np.zeros(a.shape, a.dtype), rep) if local else None)
                continue
            rank_of = pl.placement.rank_of
            total = self.comm.move(parts[0][1], rank_of(parts[0][0]), owner, a, rep)
            for s, g in parts[1:]:
                moved = self.comm.move(g, rank_of(s), owner, a, rep)
                if moved is not None:
                    total = total + moved
            out.append(total)
        return out

    def _direct_grads(self) -> list[tuple[int, int]]:
        """Per parameter, (stage, accumulator) holding its whole gradient, when every
        parameter has one stage computing its gradient, on its owner's rank in this process
        (then :meth:`total_grads` has nothing to sum or move); else empty. Decided once."""
        if self._direct is None:
            pl = self.plan
            src: dict[int, list[tuple[int, int, int]]] = {}
            for e, ex in enumerate(pl.execs):
                for n, k in enumerate(ex.autodiff.diff_params):
                    src.setdefault(ex.stage.params_needed[k], []).append((e, n, ex.rank))
            direct: list[tuple[int, int]] = []
            for p in range(len(pl.param_avals)):
                parts = src.get(p, [])
                if (
                    len(parts) != 1
                    or parts[0][2] != pl.owner_rank[p]
                    or not pl.layout.local(parts[0][2])
                ):
                    direct = []
                    break
                direct.append(parts[0][:2])
            self._direct = direct
        return self._direct

    def update(self, state: PipelineState, grads: list[Any]) -> tuple[PipelineState, Any]:
        """The optimizer's update of every stage's owned parameters (replicas refreshed from
        their owner), issued without waiting: a global-norm clip's norm is summed and sent on
        the devices (across processes, shared on the host); and what :meth:`grad_norm` turns
        into the global gradient norm (per stage, its squared norm, still on its devices)."""
        pl = self.plan
        if self.optimizer is None:
            return state, [
                (pl.layout.lead(pl.owner_rank[p]), g)
                for p, g in enumerate(grads)
                if g is not None and jnp.issubdtype(g.dtype, jnp.inexact)
            ]

        values = [dict(v) for v in state.values]
        opt_states = list(state.opt_states)
        sqnorms = []
        local = [s for s in range(len(pl.owned)) if pl.layout.local(pl.placement.rank_of(s))]
        upd: dict[int, Any] = {s: [grads[p] for p in pl.owned[s]] for s in local}
        assert self.opt_plan is not None
        n_slots = self.opt_plan.num_slots
        ranks = sorted({pl.placement.rank_of(s) for s in local})
        totals: dict[int, tuple[Any, ...]] = dict.fromkeys(ranks, ())
        for k in range(n_slots + 1):
            # Phase k < n_slots: every stage's part of global sum k (a squared global norm),
            # summed over the stages (and processes) before any stage goes on.
            parts = []
            for s in local:
                rank = pl.placement.rank_of(s)
                own = [values[pl.owner_rank[p]][p] for p in pl.owned[s]]
                out = self.optimizer_fns(s)[1][k](upd[s], opt_states[s], own, totals[rank])
                if k == n_slots:
                    upd[s], opt_states[s] = out[0], out[1]
                elif pl.layout.lead(rank):  # a rank's part counted once
                    parts.append(out[0])
                if k == 0 and pl.layout.lead(rank):  # a rank's norm counted once
                    sqnorms.append(out[-1])
            if k < n_slots:
                total = self._sum_to_ranks(parts, ranks, k)
                totals = {r: (*totals[r], total[r]) for r in ranks}
        for s, owned in enumerate(pl.owned):
            new: list[Any] = upd[s] if s in upd else [None] * len(owned)
            for p, x in zip(owned, new, strict=True):
                for r in pl.holders[p]:
                    if r == pl.owner_rank[p]:
                        if x is not None:
                            values[r][p] = x
                        continue
                    moved = self.comm.move(
                        x, pl.owner_rank[p], r, pl.param_avals[p], pl.param_sharding(r, p)
                    )
                    if moved is not None:
                        values[r][p] = moved
        return self.state(values, opt_states, state.step + 1), sqnorms

    def _zero_on(self, rank: int) -> jax.Array:
        """A float32 zero replicated on ``rank``'s devices, made once per pipeline."""
        z = self._zero.get(rank)
        if z is None:
            z = self._zero[rank] = jax.device_put(
                np.float32(0), self.plan.placement.replicated(rank)
            )
        return z

    def _sum_to_ranks(self, parts: list[Any], ranks: list[int], slot: int) -> dict[int, Any]:
        """Global sum ``slot`` from the local stages' ``parts``, replicated on each of
        ``ranks``. In one process it never leaves the devices: the parts are moved to the
        first rank and summed there, and the total is sent to the others (so a clipped step
        reads nothing on the host). Across processes they are shared as floats, by
        collectives every process issues in the same order."""
        rep = self.plan.placement.replicated
        if self.comm.multi:
            mine = sum(float(host_value(x)) for x in parts)
            total = self.comm.sum_over_processes(mine)
            assert self.opt_plan is not None
            dtype = parts[0].dtype if parts else self.opt_plan.slot_dtype(slot)
            return {r: jax.device_put(np.asarray(total, dtype), rep(r)) for r in ranks}
        here = rep(ranks[0])
        g = self._sum([jax.device_put(x, here) for x in parts])
        return {r: g if r == ranks[0] else jax.device_put(g, rep(r)) for r in ranks}

    def grad_norm(self, pending: Any) -> float:
        """The global gradient norm from what :meth:`update` returned (waits for it)."""
        if self.optimizer is None:
            sq = sum(_square_sum(g) * lead for lead, g in pending)
        else:
            sq = sum(float(host_value(x)) for x in pending)
        return math.sqrt(self.comm.sum_over_processes(sq))

    def on_every_process(self, state: PipelineState, p: int) -> np.ndarray:
        """Parameter ``p``'s owner copy as a host array in every process."""
        r = self.plan.owner_rank[p]
        value = state.values[r].get(p) if self.plan.layout.local(r) else None
        return self.comm.on_every_process(value, r, self.plan.param_avals[p], False)


def _square_sum(g: jax.Array) -> float:
    """The sum of ``g``'s squares: in float64 on the host when this process holds all of
    ``g``; else on its devices in float32, by every process holding a part (a collective)."""
    if g.is_fully_addressable:
        return float(np.sum(np.square(np.asarray(g, np.float64))))
    return float(host_value(jnp.sum(jnp.square(g.astype(jnp.float32)))))


def _sq_of(xs: list[Any]) -> Any:
    return sum((jnp.sum(jnp.square(x.astype(jnp.float32))) for x in xs), jnp.float32(0))


class _Rows:
    """How stage ``s``'s owned parameter leaves (``PipelinePlan.owned[s]``, the rows of a cut
    layer loop's stacked parameter among them) make the optimizer's leaves it updates:
    ``leaves`` (the caller's indices), ``groups[i]`` the positions in the owned list of the
    rows of ``leaves[i]`` in row order, ``spans`` each owned leaf's rows of its whole
    (``None``: all of it)."""

    def __init__(self, leaves: tuple[int, ...], groups: list[list[int]],
                 spans: list[tuple[int, int] | None]) -> None:  # fmt: skip
        self.leaves = leaves
        self.groups = groups
        self.spans = spans

    @classmethod
    def of(cls, plan: PipelinePlan, leaf_of: Sequence[int], s: int,
           leaves: tuple[int, ...]) -> _Rows:  # fmt: skip
        owned = plan.owned[s]
        spans: list[tuple[int, int] | None] = []
        for p in owned:
            pc = plan.param_pieces[p] if plan.param_pieces else None
            spans.append(None if pc is None or pc.start is None else (pc.start, pc.stop))
        groups = [
            sorted((i for i, p in enumerate(owned) if leaf_of[p] == q),
                   key=lambda i: (spans[i] or (0, 0))[0])
            for q in leaves
        ]  # fmt: skip
        return cls(leaves, groups, spans)

    def join(self, xs: Sequence[Any]) -> list[Any]:
        """The optimizer's leaves from the owned leaves ``xs`` (rows joined)."""
        return [
            xs[g[0]] if len(g) == 1 else jnp.concatenate([xs[i] for i in g], axis=0)
            for g in self.groups
        ]

    def split(self, whole: Sequence[Any]) -> list[Any]:
        """The owned leaves from the optimizer's leaves ``whole`` (rows cut out again)."""
        out: list[Any] = [None] * len(self.spans)
        for g, x in zip(self.groups, whole, strict=True):
            for i in g:
                span = self.spans[i]
                out[i] = x if span is None else x[span[0] : span[1]]
        return out


def _phase(
    oplan: _optim.OptimizerPlan, view: Any, rows: _Rows, counts_free: bool, k: int,
    shardings: tuple,
) -> Any:  # fmt: skip
    """Update phase ``k`` of a stage, jitted: ``(updates, state, params, totals) -> ...``
    over the stage's owned parameter leaves, ``totals`` the global sums before ``k``. A phase
    before the last returns the stage's part of global sum ``k``; the last, the new
    parameters and state. Phase 0 adds the squared norm of the gradients (for StepMetrics).
    ``shardings``: the parameters', the state's, and a replicated one for the scalars."""
    import optax

    p_sh, st_sh, rep = shardings
    last = k == oplan.num_slots
    own = frozenset(rows.leaves)

    def fn(u: list[Any], st: Any, p: list[Any], totals: tuple[Any, ...]) -> Any:
        ud = view.full(rows.leaves, rows.join(u))
        pd = view.full(rows.leaves, rows.join(p))
        leaves = [*jax.tree.leaves(ud), *jax.tree.leaves(st), *jax.tree.leaves(pd)]
        outs, part = oplan.run(leaves, own, counts_free, totals)
        out: list[Any]
        if last:
            n_u = view.treedef.num_leaves
            st_leaves = jax.tree.leaves(st)
            new_st = [x if y is None else y for x, y in zip(st_leaves, outs[n_u:], strict=True)]
            u_own = [outs[q] for q in rows.leaves]
            new = optax.apply_updates(rows.join(p), u_own)
            # another stage's parameters' state leaves stay the placeholders init gave them
            # (one that depends on no parameter, adafactor's unused [1] statistic, is computed
            # here too): the state's shapes never change, so no step compiles this again
            new_tree = view.stage_state(jax.tree.unflatten(jax.tree.structure(st), new_st),
                                        rows.leaves)  # fmt: skip
            out = [rows.split(new), new_tree]
        else:
            out = [part]
        if k == 0:
            out.append(_sq_of(u))  # the gradient norm StepMetrics reports
        return tuple(out)

    if last:
        out_sh: tuple = (p_sh, st_sh, *([rep] if k == 0 else []))
    else:
        out_sh = (rep, *([rep] if k == 0 else []))
    return jax.jit(fn, out_shardings=out_sh, donate_argnums=(1, 2) if last else ())
