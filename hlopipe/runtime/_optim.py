"""Optimizers across stages: which optax transformations are exact per stage, and global-norm
clipping over all stages.

The runtime updates each stage's parameters where they live, with the optimizer applied to
that stage's parameters only, in the pytree the user gave (:class:`TreeView`: the other
parameters are empty placeholders), so that masks and labels (``optax.masked``,
``multi_transform``, ``adamw(mask=...)``), by pytree or by path, see what they see on one
device. That equals the optimizer on one device exactly when every
update (and every state leaf) of a parameter depends on that parameter's gradient, value and
state alone (sgd, adam, adamw, lion, adafactor, per-parameter clipping...). Whether it does is
read from the transformation itself: its ``update`` is traced (abstractly, nothing runs) and
the dataflow of the jaxpr says which parameters each output depends on.

``optax.clip_by_global_norm`` is the one transformation that reads a global statistic and is
made exact: an ``optax.chain`` is cut at each such clip; the stages run the part before it,
the runtime sums every stage's (and process's) squared norm of the updates, and every stage
then clips with that global norm, with optax's own formula, and runs on. Any other
transformation that mixes parameters is refused by name (:class:`RuntimeConfigError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe.errors import RuntimeConfigError


def _unwrap(fn: Any) -> Any:
    """The update function inside optax's ``with_extra_args_support`` wrapper."""
    while getattr(fn, "__qualname__", "") == "with_extra_args_support.<locals>.update":
        fn = _closure(fn)["tx"].update
    return fn


def _name(t: Any) -> str:
    fn = _unwrap(getattr(t, "update", None))
    q = getattr(fn, "__qualname__", "") or type(t).__name__
    return q.split(".<locals>")[0] if ".<locals>" in q else q


def _closure(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    return {n: c.cell_contents for n, c in zip(code.co_freevars, cells, strict=True)}


def chain_parts(opt: Any) -> list[Any] | None:
    """The transformations of a top-level ``optax.chain`` (``None`` if ``opt`` is not one)."""
    if _name(opt) != "chain":
        return None
    import optax

    inits = _closure(opt.init).get("init_fns")
    updates = _closure(_unwrap(opt.update)).get("update_fns")
    if not isinstance(inits, tuple | list) or not isinstance(updates, tuple | list):
        return None
    return [optax.GradientTransformation(i, u) for i, u in zip(inits, updates, strict=True)]


def global_clip_norm(t: Any) -> float | None:
    """``max_norm`` when ``t`` is ``optax.clip_by_global_norm(max_norm)``, else ``None``."""
    if _name(t) != "clip_by_global_norm":
        return None
    v = _closure(_unwrap(t.update)).get("max_norm")
    return None if v is None else float(v)


def _keys(path: Any) -> tuple[str, ...]:
    return tuple(jax.tree_util.keystr((k,)) for k in path)


@dataclass(frozen=True, eq=False)
class TreeView:
    """The parameter pytree as a stage's optimizer sees it: the stage's own parameters in
    place, every other leaf a placeholder (an empty array), so the tree has the user's
    structure and paths; and which parameter an optimizer-state leaf belongs to."""

    treedef: Any
    avals: tuple[Any, ...]
    by_keys: dict[tuple[str, ...], int]

    @classmethod
    def of(cls, treedef: Any, avals: Sequence[Any]) -> TreeView:
        n = treedef.num_leaves
        tree = jax.tree_util.tree_unflatten(treedef, list(range(n)))
        paths = jax.tree_util.tree_flatten_with_path(tree)[0]
        return cls(treedef, tuple(avals), {_keys(k): q for k, q in paths})

    @staticmethod
    def placeholder(aval: Any) -> Any:
        dt = aval.dtype if jnp.issubdtype(aval.dtype, jnp.inexact) else jnp.float32
        return jnp.zeros((0,), dt)

    def full(self, own: Sequence[int], leaves: Sequence[Any], abstract: bool = False) -> Any:
        """The parameter tree with ``leaves`` at the positions ``own``, placeholders elsewhere."""
        out: list[Any] = []
        for a in self.avals:
            ph = self.placeholder(a)
            out.append(jax.ShapeDtypeStruct(ph.shape, ph.dtype) if abstract else ph)
        for q, x in zip(own, leaves, strict=True):
            out[q] = x
        return jax.tree_util.tree_unflatten(self.treedef, out)

    def pick(self, tree: Any, own: Sequence[int]) -> list[Any]:
        leaves = self.treedef.flatten_up_to(tree)
        return [leaves[q] for q in own]

    def param_of(self, path: Any, shape: Sequence[int] | None = None) -> int | None:
        """The parameter whose path ends the state leaf's ``path`` (the longest such), or
        ``None`` (a count, a shared statistic). A lone array's empty path matches a leaf of
        its shape only."""
        keys = _keys(path)
        for cut in range(len(keys) + 1):
            q = self.by_keys.get(keys[cut:])
            if q is None:
                continue
            if cut == len(keys) and (shape is None or tuple(shape) != tuple(self.avals[q].shape)):
                return None
            return q
        return None


def _deps(jaxpr: Any, ins: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """For each output of ``jaxpr`` (a Jaxpr), the labels of the inputs it depends on."""
    from jax.extend.core import Literal

    env: dict[Any, frozenset[str]] = dict(zip(jaxpr.invars, ins, strict=True))
    for v in jaxpr.constvars:
        env[v] = frozenset()

    def read(v: Any) -> frozenset[str]:
        return frozenset() if isinstance(v, Literal) else env.get(v, frozenset())

    for e in jaxpr.eqns:
        args = [read(v) for v in e.invars]
        inner = e.params.get("jaxpr", e.params.get("call_jaxpr"))
        inner = getattr(inner, "jaxpr", inner)
        if inner is not None and hasattr(inner, "eqns") and len(inner.invars) == len(args):
            outs = _deps(inner, args)
        else:
            union = frozenset().union(*args) if args else frozenset()
            outs = [union] * len(e.outvars)
        for v, d in zip(e.outvars, outs, strict=True):
            env[v] = d
    return [read(v) for v in jaxpr.outvars]


def mixing(t: Any, view: TreeView, trained: Sequence[int], names: Sequence[str]) -> str | None:
    """Why ``t`` cannot run per stage (a sentence), or ``None`` when it can: traces
    ``t.update`` over the parameter tree (the ``trained`` leaves; placeholders for the others)
    and checks that each parameter's update and state depend on that parameter only (state
    leaves of no parameter, like a step count, on none)."""
    avals = [jax.ShapeDtypeStruct(view.avals[q].shape, view.avals[q].dtype) for q in trained]
    p = view.full(trained, avals, abstract=True)
    try:
        state = jax.eval_shape(t.init, p)
        closed = jax.make_jaxpr(lambda g, s, q: t.update(g, s, q))(p, state, p)
    except Exception as e:  # a transformation that needs more than (updates, state, params)
        return f"its update cannot be checked ({type(e).__name__}: {e})"
    mine = set(trained)

    def label(q: int | None, kind: str) -> frozenset[str]:
        return frozenset({str(q)}) if q is not None and q in mine else frozenset({f"<{kind}>"})

    g_labels = [label(q, "x") for q in range(len(view.avals))]
    s_paths = jax.tree_util.tree_flatten_with_path(state)[0]
    ins = [
        *g_labels,
        *[label(view.param_of(k, np.shape(x)), "shared") for k, x in s_paths],
        *g_labels,
    ]
    outs = _deps(closed.jaxpr, ins)
    upd_struct, st_struct = jax.eval_shape(lambda g, s, q: t.update(g, s, q), p, state, p)
    u_paths = jax.tree_util.tree_flatten_with_path(upd_struct)[0]
    st_paths = jax.tree_util.tree_flatten_with_path(st_struct)[0]
    owners = [*range(len(u_paths)), *[view.param_of(k, np.shape(x)) for k, x in st_paths]]
    out_paths = [k for k, _ in [*u_paths, *st_paths]]
    for path, q, d in zip(out_paths, owners, outs, strict=True):
        own = {str(q)} if q is not None else set()
        data = {x for x in d if not x.startswith("<")}
        if len(data - own) > 0:
            where = jax.tree_util.keystr(path)
            who = sorted(names[int(x)] for x in data - own)[:3]
            return f"its output {where} depends on other parameters ({', '.join(who)} ...)"
    return None


@dataclass(frozen=True)
class OptimizerPlan:
    """How the runtime applies an optimizer: ``segments`` of transformations run per stage,
    with a global-norm clip (``clips[k]``, the max norm) between segment ``k`` and ``k+1``.
    ``parts`` is ``None`` when the optimizer runs whole (no clip to cut at)."""

    parts: tuple[Any, ...] | None
    bounds: tuple[tuple[int, int], ...]
    clips: tuple[float, ...]


def plan_optimizer(
    opt: Any, view: TreeView, trained: Sequence[int], names: Sequence[str]
) -> OptimizerPlan:
    """Check ``opt`` for running per stage; raises :class:`RuntimeConfigError` naming the
    transformation that reads across parameters (other than a top-level global-norm clip)."""
    parts = chain_parts(opt)
    if parts is None:
        parts = [opt]
    clips = [(i, global_clip_norm(t)) for i, t in enumerate(parts)]
    clip_at = [i for i, c in clips if c is not None]
    for i, t in enumerate(parts):
        if i in clip_at:
            continue
        why = mixing(t, view, trained, names)
        if why is not None:
            raise RuntimeConfigError(
                f"optimizer transformation {_name(t)!r} reads across parameters ({why}); "
                "the pipeline updates each stage's parameters where they live and would not "
                "equal one device. Supported: per-parameter transformations, and "
                "optax.clip_by_global_norm at the top level of an optax.chain (computed over "
                "all stages)"
            )
    if not clip_at:
        return OptimizerPlan(None, ((0, len(parts)),), ())
    bounds = []
    start = 0
    for i in clip_at:
        bounds.append((start, i))
        start = i + 1
    bounds.append((start, len(parts)))
    return OptimizerPlan(
        tuple(parts), tuple(bounds), tuple(float(c) for _, c in clips if c is not None)
    )


def clip_with(updates: Any, g_norm: Any, max_norm: float) -> Any:
    """``optax.clip_by_global_norm``'s formula, given the global norm."""
    trigger = jnp.squeeze(g_norm < max_norm)
    return jax.tree.map(
        lambda t: jax.lax.select(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm), updates
    )


def state_shardings(state: Any, view: TreeView, own: Sequence[int], shardings: Sequence[Any],
                    mesh: Any) -> Any:  # fmt: skip
    """Shardings for a stage's optimizer state: a leaf of one of its parameters (``own``) with
    that parameter's shape gets the parameter's sharding, every other leaf is replicated."""
    by_param = {q: sh for q, sh in zip(own, shardings, strict=True)}
    rep = NamedSharding(mesh, PartitionSpec())

    def one(path: Any, leaf: Any) -> Any:
        q = view.param_of(path, leaf.shape)
        if q in by_param and tuple(view.avals[q].shape) == tuple(leaf.shape):
            return by_param[q]
        return rep

    return jax.tree_util.tree_map_with_path(one, state)
