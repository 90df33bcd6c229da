"""Parameters and optimizer: where each parameter lives, its gradient, its update.

A parameter lives on every rank that uses it; the copy on its owner's rank (its first stage's)
is the one the optimizer updates, and the others are refreshed from it after each update.
The optimizer runs per stage over the parameters that stage owns, as one jitted function per
stage, compiled once per pipeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.runtime._comm import Comm
from hlopipe.runtime._plan import PipelinePlan


@dataclass(eq=False)
class PipelineState:
    """Parameters and optimizer state, living on their stages' devices.

    Attributes:
      values: per rank, flat parameter index -> the array on that rank (replicated on its
        mesh). A parameter used by stages on several ranks (a tied embedding) has a copy on
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

    @property
    def params(self) -> Any:
        """The parameters as the pytree given to :meth:`Pipeline.init` (owner copies, each
        on its stage's devices; ``jax.device_get`` brings them to the host). Across processes,
        the leaves another process owns are ``None``; :meth:`Pipeline.gather_params` gives
        every process all of them."""
        leaves = [self.values[r].get(p) for p, r in enumerate(self.owner_rank)]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


def fresh_copy(x: Any, sharding: Any) -> jax.Array:
    """``x`` on ``sharding`` in buffers of its own (the state's buffers get donated).

    ``jax.device_put(..., may_alias=False)`` still aliases the source's buffer on a device it
    shares with a multi-device target (seen with jax 0.10.2), so such arrays go via the host.
    """
    if isinstance(x, jax.Array) and set(x.devices()) & set(sharding.device_set):
        x = np.asarray(x)
    return jax.device_put(x, sharding, may_alias=False)


class Params:
    """Placement, gradients and optimizer updates of one pipeline's parameters."""

    def __init__(self, plan: PipelinePlan, comm: Comm, optimizer: Any) -> None:
        self.plan = plan
        self.comm = comm
        self.optimizer = optimizer
        self._opt_fns: dict[int, tuple[Any, Any]] = {}

    def state(self, values: list[dict[int, jax.Array]], opt_states: list[Any], step: int) -> Any:
        pl = self.plan
        return PipelineState(values, opt_states, step, pl.param_treedef, list(pl.owner_rank))

    def init(self, params: Any) -> PipelineState:
        pl = self.plan
        leaves = pl.check_params(params)
        values: list[dict[int, jax.Array]] = [{} for _ in range(pl.placement.num_ranks)]
        for p, x in enumerate(leaves):
            for r in pl.holders[p]:
                if pl.layout.local(r):
                    values[r][p] = fresh_copy(x, pl.placement.replicated(r))
        opt_states: list[Any] = [None] * pl.staged.num_stages
        if self.optimizer is not None:
            for s, owned in enumerate(pl.owned):
                if not pl.layout.local(pl.placement.rank_of(s)):
                    continue
                own = [values[pl.owner_rank[p]][p] for p in owned]
                opt_states[s] = self.optimizer_fns(s)[0](own)
        return self.state(values, opt_states, 0)

    def optimizer_fns(self, s: int) -> tuple[Any, Any]:
        """Stage ``s``'s jitted ``optimizer.init`` and update (built once per pipeline)."""
        hit = self._opt_fns.get(s)
        if hit is not None:
            return hit
        import optax

        pl = self.plan
        rank = pl.placement.rank_of(s)
        # The state is the optimizer's over {parameter path: array}, so that its per-parameter
        # leaves carry the parameter's path (checkpoints store them by it, not by stage).
        names = tuple(pl.param_names[p] for p in pl.owned[s])
        rep = pl.placement.replicated(rank)
        opt = self.optimizer

        def init_fn(p: list[Any]) -> Any:
            return opt.init(dict(zip(names, p)))

        def update(g: list[Any], st: Any, p: list[Any]) -> Any:
            gd, pd = dict(zip(names, g)), dict(zip(names, p))
            upd, st = opt.update(gd, st, pd)
            sq = sum((jnp.sum(jnp.square(x.astype(jnp.float32))) for x in g), jnp.float32(0))
            new = optax.apply_updates(pd, upd)
            return [new[n] for n in names], st, sq

        init = jax.jit(init_fn, out_shardings=rep)
        upd = jax.jit(update, out_shardings=rep, donate_argnums=(1, 2))
        self._opt_fns[s] = (init, upd)
        return init, upd

    def stage_args(self, state: PipelineState, batch: Any) -> dict[tuple[int, int], list[Any]]:
        """Per (stage, microbatch): the stage's flat arguments (parameters and batch slices)."""
        pl = self.plan
        leaves = pl.check_batch(batch)
        b, m, n = pl.microbatch_size, pl.num_microbatches, pl.num_params
        host = [np.asarray(x) for x in leaves]
        placement = pl.placement
        placed: dict[tuple[int, int, int], Any] = {}  # (leaf, rank, microbatch) -> array
        args: dict[tuple[int, int], list[Any]] = {}
        for st in pl.staged.stages:
            r = placement.rank_of(st.index)
            if not pl.layout.local(r):
                continue
            for i in range(m):
                row = []
                for p in st.params_needed:
                    if p < n:
                        row.append(state.values[r][p])
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
        pl = self.plan
        per_param: dict[int, list[tuple[int, Any]]] = {}
        for ex, g in zip(pl.execs, acc):
            st = ex.stage
            local = pl.layout.local(ex.rank)
            for n, k in enumerate(ex.autodiff.diff_params):
                gk = g[n] if local else None
                per_param.setdefault(st.params_needed[k], []).append((st.index, gk))
        out: list[Any] = []
        for p, a in enumerate(pl.param_avals):
            owner = pl.owner_rank[p]
            rep = pl.placement.replicated(owner)
            parts = per_param.get(p)
            if not parts:
                local = pl.layout.local(owner)
                out.append(jax.device_put(np.zeros(a.shape, a.dtype), rep) if local else None)
                continue
            rank_of = pl.placement.rank_of
            total = self.comm.move(parts[0][1], rank_of(parts[0][0]), owner, a)
            for s, g in parts[1:]:
                moved = self.comm.move(g, rank_of(s), owner, a)
                if moved is not None:
                    total = total + moved
            out.append(total)
        return out

    def update(self, state: PipelineState, grads: list[Any]) -> tuple[PipelineState, float]:
        """The optimizer's update of every stage's owned parameters (replicas refreshed from
        their owner), and the global gradient norm."""
        pl = self.plan
        if self.optimizer is None:
            sq = sum(
                float(np.sum(np.square(np.asarray(g, np.float64))))
                for g in grads
                if g is not None and jnp.issubdtype(g.dtype, jnp.inexact)
            )
            return state, math.sqrt(self.comm.sum_over_processes(sq))

        values = [dict(v) for v in state.values]
        opt_states = list(state.opt_states)
        sqnorms = []
        for s, owned in enumerate(pl.owned):
            new: list[Any] = [None] * len(owned)
            if pl.layout.local(pl.placement.rank_of(s)):
                own = [values[pl.owner_rank[p]][p] for p in owned]
                upd = self.optimizer_fns(s)[1]
                new, opt_states[s], sq = upd([grads[p] for p in owned], opt_states[s], own)
                sqnorms.append(sq)
            for p, x in zip(owned, new):
                for r in pl.holders[p]:
                    if r == pl.owner_rank[p]:
                        if x is not None:
                            values[r][p] = x
                        continue
                    moved = self.comm.move(x, pl.owner_rank[p], r, pl.param_avals[p])
                    if moved is not None:
                        values[r][p] = moved
        grad_norm = math.sqrt(self.comm.sum_over_processes(sum(float(x) for x in sqnorms)))
        return self.state(values, opt_states, state.step + 1), grad_norm

    def on_every_process(self, state: PipelineState, p: int) -> np.ndarray:
        """Parameter ``p``'s owner copy as a host array in every process."""
        r = self.plan.owner_rank[p]
        value = state.values[r].get(p) if self.plan.layout.local(r) else None
        return self.comm.on_every_process(value, r, self.plan.param_avals[p], False)
