"""Optimizers across stages: which optax transformations are exact per stage, and global-norm
clipping over all stages.

The runtime updates each stage's parameters where they live, with the optimizer applied to
that stage's parameters only. That equals the optimizer on one device exactly when every
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
    return {n: c.cell_contents for n, c in zip(code.co_freevars, cells)}


def chain_parts(opt: Any) -> list[Any] | None:
    """The transformations of a top-level ``optax.chain`` (``None`` if ``opt`` is not one)."""
    if _name(opt) != "chain":
        return None
    import optax

    inits = _closure(opt.init).get("init_fns")
    updates = _closure(_unwrap(opt.update)).get("update_fns")
    if not isinstance(inits, tuple | list) or not isinstance(updates, tuple | list):
        return None
    return [optax.GradientTransformation(i, u) for i, u in zip(inits, updates)]


def global_clip_norm(t: Any) -> float | None:
    """``max_norm`` when ``t`` is ``optax.clip_by_global_norm(max_norm)``, else ``None``."""
    if _name(t) != "clip_by_global_norm":
        return None
    v = _closure(_unwrap(t.update)).get("max_norm")
    return None if v is None else float(v)


def _key_names(path: Any) -> set[str]:
    return {k.key for k in path if isinstance(k, jax.tree_util.DictKey) and isinstance(k.key, str)}


def _deps(jaxpr: Any, ins: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """For each output of ``jaxpr`` (a Jaxpr), the labels of the inputs it depends on."""
    from jax.extend.core import Literal

    env: dict[Any, frozenset[str]] = dict(zip(jaxpr.invars, ins))
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
        for v, d in zip(e.outvars, outs):
            env[v] = d
    return [read(v) for v in jaxpr.outvars]


def mixing(t: Any, names: Sequence[str], avals: Sequence[Any]) -> str | None:
    """Why ``t`` cannot run per stage (a sentence), or ``None`` when it can: traces
    ``t.update`` over ``{name: aval}`` and checks that each parameter's update and state depend
    on that parameter only (state leaves of no parameter, like a step count, on none)."""
    p = {n: jax.ShapeDtypeStruct(a.shape, a.dtype) for n, a in zip(names, avals)}
    try:
        state = jax.eval_shape(t.init, p)
        closed = jax.make_jaxpr(lambda g, s, q: t.update(g, s, q))(p, state, p)
    except Exception as e:  # a transformation that needs more than (updates, state, params)
        return f"its update cannot be checked ({type(e).__name__}: {e})"
    g_paths = jax.tree_util.tree_flatten_with_path(p)[0]
    s_paths = jax.tree_util.tree_flatten_with_path(state)[0]

    def label(path: Any, kind: str) -> frozenset[str]:
        ks = _key_names(path) & set(names)
        return frozenset(ks) if ks else frozenset({f"<{kind}>"})

    ins = [
        *[label(k, "x") for k, _ in g_paths],
        *[label(k, "shared") for k, _ in s_paths],
        *[label(k, "x") for k, _ in g_paths],
    ]
    outs = _deps(closed.jaxpr, ins)
    upd_struct, st_struct = jax.eval_shape(lambda g, s, q: t.update(g, s, q), p, state, p)
    out_paths = [
        *[k for k, _ in jax.tree_util.tree_flatten_with_path(upd_struct)[0]],
        *[k for k, _ in jax.tree_util.tree_flatten_with_path(st_struct)[0]],
    ]
    for path, d in zip(out_paths, outs):
        own = _key_names(path) & set(names)
        data = {x for x in d if not x.startswith("<")}
        if len(data - own) > 0:
            where = jax.tree_util.keystr(path)
            who = sorted(data - own)[:3]
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


def plan_optimizer(opt: Any, names: Sequence[str], avals: Sequence[Any]) -> OptimizerPlan:
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
        why = mixing(t, names, avals)
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


def state_shardings(state: Any, names: Sequence[str], avals: Sequence[Any],
                    shardings: Sequence[Any], mesh: Any) -> Any:  # fmt: skip
    """Shardings for an optimizer state over ``{name: param}``: a leaf of one parameter with
    that parameter's shape gets the parameter's sharding, every other leaf is replicated."""
    by_name = {n: (tuple(a.shape), sh) for n, a, sh in zip(names, avals, shardings)}
    rep = NamedSharding(mesh, PartitionSpec())

    def one(path: Any, leaf: Any) -> Any:
        for n in _key_names(path):
            if n in by_name and by_name[n][0] == tuple(leaf.shape):
                return by_name[n][1]
        return rep

    return jax.tree_util.tree_map_with_path(one, state)
