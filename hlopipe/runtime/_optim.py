"""Optimizers across stages: any optax transformation, run per stage, equal to one device.

The runtime updates each stage's parameters where they live, with the optimizer applied to
that stage's parameters only, in the pytree the user gave (:class:`TreeView`: the other
parameters are empty placeholders), so that masks and labels (``optax.masked``,
``multi_transform``, ``adamw(mask=...)``), by pytree or by path, see what they see on one
device. A stacked parameter of a cut layer loop is one leaf there, whole: its rows are owned
by one stage (see ``runtime/_plan.py``), so a statistic over the whole parameter (a trust
ratio, a norm, adafactor's factored moments, an RMS) is the one-device statistic.

What the transformation does is read from its own dataflow, never from its Python structure:
its ``update`` is traced over the whole parameter tree (abstractly, nothing runs) and the
jaxpr (calls inlined) is walked with, for every value, the parameters it depends on.

- A value of one parameter (or of none: a step count) is computed by the stage owning that
  parameter (by every stage).
- A scalar ``add`` of values of different parameters is a *global sum* (the squared global
  norm of ``optax.clip_by_global_norm``, ``normalize_by_update_norm``, wherever it sits in
  nested chains): each stage adds the terms it has, the runtime sums those partial sums
  over the stages (and processes), and the stages run on with the total, one *phase* per
  global sum.
- Anything else that combines two parameters (a ``concatenate`` of their flags, a product
  of their norms) cannot be split by stage: the optimizer is refused before the first step
  (:class:`RuntimeConfigError`), naming the operation, the output it reaches and where in
  the optimizer's source it was traced.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe.errors import RuntimeConfigError


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

    def full_shaped(self, own: Sequence[int], leaves: Sequence[Any], trained: Sequence[int]) -> Any:
        """The parameter tree with ``leaves`` at the positions ``own``, zeros of their full
        shape at the other ``trained`` positions and placeholders elsewhere: the tree the
        optimizer's plan was traced over, so that a transformation whose state depends on a
        parameter's shape (muon, labels chosen by ``ndim``, factored statistics) builds the
        one-device state tree. Inside ``jax.jit`` the zeros are never materialised when no
        kept output reads them (:func:`stage_state` keeps none)."""
        out: list[Any] = [self.placeholder(a) for a in self.avals]
        for q in trained:
            out[q] = jnp.zeros(self.avals[q].shape, self.avals[q].dtype)
        for q, x in zip(own, leaves, strict=True):
            out[q] = x
        return jax.tree_util.tree_unflatten(self.treedef, out)

    def stage_state(self, state: Any, own: Sequence[int]) -> Any:
        """``state`` (over the full-shape tree) with the leaves of parameters outside
        ``own`` replaced by empty placeholders: what a stage holds."""
        mine = set(own)

        def one(path: Any, leaf: Any) -> Any:
            q = self.param_of(path, np.shape(leaf))
            if q is None or q in mine:
                return leaf
            return jnp.zeros((0,), leaf.dtype)

        return jax.tree_util.tree_map_with_path(one, state)

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


# -- the optimizer's update as a flat list of operations -------------------------------------

# Primitives that only call a jaxpr: inlined, so that the walk sees through them (jnp's
# jitted helpers, optax's safe norms under custom_jvp). Loops and branches stay whole.
_CALLS = frozenset(
    {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
     "checkpoint", "remat"}
)  # fmt: skip


class _Op(NamedTuple):
    """One operation of the flattened update: values are numbered (``ins``, ``outs``)."""

    prim: Any
    params: dict[str, Any]
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    out_avals: tuple[Any, ...]
    where: str


def _where(eqn: Any) -> str:
    """Where ``eqn`` was traced: the innermost two frames outside JAX (``function (file:line)``)."""
    tb = getattr(eqn.source_info, "traceback", None)
    frames = [] if tb is None else tb.frames
    out = []
    for f in frames:
        name = f.file_name.replace("\\", "/")
        if "/jax/" in name or "/jaxlib/" in name:
            continue
        short = "/".join(name.split("/")[-3:])
        out.append(f"{f.function_name} ({short}:{f.line_num})")
        if len(out) == 2:
            break
    return ", in ".join(out) or "an unknown place"


class _Flat:
    """A closed jaxpr with its calls inlined: ``ops`` in order over numbered values;
    ``consts`` the values known when tracing (literals, closed-over constants)."""

    def __init__(self, closed: Any) -> None:
        self.ops: list[_Op] = []
        self.consts: dict[int, Any] = {}
        self._n = 0
        jaxpr = closed.jaxpr
        consts = [self._const(c) for c in closed.consts]
        self.invars = [self._fresh() for _ in jaxpr.invars]
        self.outvars = self._inline(jaxpr, consts, self.invars)

    def _fresh(self) -> int:
        self._n += 1
        return self._n

    def _const(self, value: Any) -> int:
        k = self._fresh()
        self.consts[k] = value
        return k

    def _inline(self, jaxpr: Any, consts: Sequence[int], ins: Sequence[int]) -> list[int]:
        from jax.extend.core import Literal

        env: dict[Any, int] = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, ins, strict=True))

        def read(v: Any) -> int:
            return self._const(v.val) if isinstance(v, Literal) else env[v]

        for e in jaxpr.eqns:
            args = [read(v) for v in e.invars]
            inner = e.params.get("jaxpr", e.params.get("call_jaxpr"))
            if e.primitive.name == "cond":
                outs = self._cond(e, args)
            elif e.primitive.name in _CALLS and inner is not None:
                closed_consts = [self._const(c) for c in getattr(inner, "consts", ())]
                outs = self._inline(getattr(inner, "jaxpr", inner), closed_consts, args)
            else:
                outs = [self._fresh() for _ in e.outvars]
                avals = tuple(v.aval for v in e.outvars)
                self.ops.append(_Op(e.primitive, e.params, tuple(args), tuple(outs), avals,
                                    _where(e)))  # fmt: skip
            for v, k in zip(e.outvars, outs, strict=True):
                env[v] = k
        return [read(v) for v in jaxpr.outvars]

    def _cond(self, eqn: Any, args: Sequence[int]) -> list[int]:
        """A ``cond`` as every branch inlined and a select of their outputs by the index.

        A branch over all parameters (``MultiSteps``' accumulate-or-emit, ``apply_if_finite``'s
        update-or-skip) then splits by parameter like any other operation, and a stage
        computes its own parameters' part of each branch. The branches are pure (optax's
        are), so computing both and keeping one gives the value the ``cond`` gives.
        """
        index, *operands = args
        per_branch = [
            self._inline(br.jaxpr, [self._const(c) for c in br.consts], operands)
            for br in eqn.params["branches"]
        ]
        outs = []
        for j, v in enumerate(eqn.outvars):
            k = self._fresh()
            cases = tuple(b[j] for b in per_branch)
            self.ops.append(_Op(_SELECT, {"shape": tuple(v.aval.shape), "dtype": v.aval.dtype},
                                (index, *cases), (k,), (v.aval,), _where(eqn)))  # fmt: skip
            outs.append(k)
        return outs


class _Select:
    """``lax.select_n`` of a ``cond``'s branch outputs, each cast to the ``cond``'s output
    type (a branch may give a weakly typed literal)."""

    name = "select_n"
    multiple_results = False

    @staticmethod
    def bind(which: Any, *cases: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        cast = [jnp.broadcast_to(jnp.asarray(c, dtype), shape) for c in cases]
        return jax.lax.select_n(which, *cast)


_SELECT = _Select()


class _Reduce(enum.StrEnum):
    """How the stages' parts of a global value are added and read: a sum of floats, or an
    ``all``/``any`` over booleans (each stage counting its false / true flags, the counts
    summed, the total compared with 0)."""

    SUM = "sum"
    ALL = "all"
    ANY = "any"


# a reduction over a concatenate of values of several parameters (``jnp.all(jnp.array([...
# per-leaf flags]))``, apply_if_finite's all-finite): a global all / any
_REDUCE_OF_GATHER = {"reduce_and": _Reduce.ALL, "reduce_or": _Reduce.ANY}


def _gatherable(op: _Op) -> bool:
    a = op.out_avals[0]
    return op.prim.name == "concatenate" and a.ndim == 1 and op.params.get("dimension") == 0


class _Dep(NamedTuple):
    """What a value depends on: the parameters (at most one, unless ``partial``), the global
    sums (slots), and whether it is a sum of several parameters' terms still being added."""

    params: frozenset[int]
    slots: frozenset[int]
    partial: bool = False


_NONE = _Dep(frozenset(), frozenset())


def _summable(op: _Op) -> bool:
    a = op.out_avals[0]
    return (
        op.prim.name in ("add", "add_any")
        and len(op.ins) == 2
        and tuple(a.shape) == ()
        and jnp.issubdtype(a.dtype, jnp.floating)
    )


class _Mixing(Exception):
    """An operation that combines parameters in a way stages cannot split (internal)."""

    def __init__(self, op: _Op, params: frozenset[int]) -> None:
        super().__init__(op.prim.name)
        self.op = op
        self.params = params


class _Absent(enum.Enum):
    """A value a stage does not compute: another stage's, or one that needs a global sum
    not known yet."""

    ABSENT = "another stage's"
    LATER = "needs a later global sum"


@dataclass(frozen=True, eq=False)
class OptimizerPlan:
    """An optimizer's update as the stages run it: the flattened update, which of its
    operations add partial sums (``sums``) or gather several parameters' flags for a global
    all / any (``gathers``, ``reductions``), and the values whose totals over the stages are
    the global values, in the order they are needed (``slots``, each combined as
    ``slot_reduce`` says; phase ``k`` computes a stage's part of slot ``k``, the last phase
    the new parameters and state)."""

    flat: _Flat
    deps: dict[int, _Dep]
    sums: frozenset[int]
    gathers: frozenset[int]
    reductions: dict[int, _Reduce]
    slots: tuple[int, ...]
    slot_of: dict[int, int]
    slot_reduce: tuple[_Reduce, ...]

    @property
    def num_slots(self) -> int:
        return len(self.slots)

    def run(
        self, leaves: Sequence[Any], own: frozenset[int], counts_free: bool, totals: Sequence[Any]
    ) -> tuple[list[Any], Any]:
        """Evaluate the update for a stage owning parameters ``own``, given the flat
        ``(updates, state, params)`` leaves (the others' placeholders are not read) and the
        totals of the first ``len(totals)`` slots. Returns the outputs (``None`` where they
        are another stage's or need a later total) and the stage's part of slot
        ``len(totals)`` (``None`` once every total is given). ``counts_free``: whether this
        stage adds the terms of no parameter (one stage does)."""
        absent, later = _Absent.ABSENT, _Absent.LATER
        env: dict[int, Any] = dict(self.flat.consts)
        for k, x in zip(self.flat.invars, leaves, strict=True):
            env[k] = x if self.deps[k].params <= own else absent

        def use(k: int) -> Any:
            slot = self.slot_of.get(k)
            if slot is None:
                return env[k]
            if slot >= len(totals):
                return later
            total, how = totals[slot], self.slot_reduce[slot]
            if how is _Reduce.ALL:
                return total == 0  # no stage counted a false flag
            if how is _Reduce.ANY:
                return total > 0
            return total

        for n, op in enumerate(self.flat.ops):
            if n in self.sums:
                env[op.outs[0]] = self._partial(op, env, counts_free)
                continue
            if n in self.gathers:
                env[op.outs[0]] = self._pieces(op, env, counts_free)
                continue
            how = self.reductions.get(n)
            if how is not None:
                env[op.outs[0]] = _count(how, env[op.ins[0]])
                continue
            args = [use(k) for k in op.ins]
            if any(a is later for a in args) or any(a is absent for a in args):
                flag = later if any(a is later for a in args) else absent
                for k in op.outs:
                    env[k] = flag
                continue
            outs = op.prim.bind(*args, **op.params)
            outs = outs if op.prim.multiple_results else [outs]
            for k, x in zip(op.outs, outs, strict=True):
                env[k] = x
        part = None
        if len(totals) < self.num_slots:
            part = env[self.slots[len(totals)]]
            if part is None:
                part = jnp.zeros((), self.slot_dtype(len(totals)))
        outs = [use(k) for k in self.flat.outvars]
        return [None if isinstance(x, _Absent) else x for x in outs], part

    def _terms(self, op: _Op, env: dict[int, Any], counts_free: bool) -> list[Any] | _Absent:
        """The inputs of ``op`` this stage counts (``LATER`` if one waits for a total)."""
        terms: list[Any] = []
        for k in op.ins:
            x = env[k]
            if x is _Absent.LATER:
                return x
            dep = self.deps[k]
            if x is _Absent.ABSENT or x is None or (not dep.params and not counts_free):
                continue  # another stage's term, a zero partial sum, or counted elsewhere
            if isinstance(x, tuple):  # an inner gather's pieces (jnp.array of many flags)
                terms.extend(x)
            else:
                terms.append(x)
        return terms

    def _partial(self, op: _Op, env: dict[int, Any], counts_free: bool) -> Any:
        terms = self._terms(op, env, counts_free)
        if isinstance(terms, _Absent) or not terms:
            return terms or None
        acc = functools.reduce(lambda a, b: a + b, terms)
        return jnp.asarray(acc, op.out_avals[0].dtype)

    def _pieces(self, op: _Op, env: dict[int, Any], counts_free: bool) -> Any:
        terms = self._terms(op, env, counts_free)
        return terms if isinstance(terms, _Absent) else tuple(terms)

    def slot_dtype(self, slot: int) -> Any:
        """The dtype of global value ``slot``'s parts."""
        if self.slot_reduce[slot] is not _Reduce.SUM:
            return jnp.float32  # a count of flags
        k = self.slots[slot]
        for op in self.flat.ops:
            if k in op.outs:
                return op.out_avals[0].dtype
        raise AssertionError(f"slot {slot} has no operation")


def _count(how: _Reduce, pieces: Any) -> Any:
    """A stage's part of a global all (its false flags) or any (its true flags), a float."""
    if isinstance(pieces, _Absent) or not pieces:
        return pieces or None
    flags = [jnp.logical_not(x) if how is _Reduce.ALL else x for x in pieces]
    return functools.reduce(lambda a, b: a + b, [jnp.sum(x.astype(jnp.float32)) for x in flags])


class _Analysis(NamedTuple):
    """What :func:`_analyse` works out: each value's dependencies, the operations adding
    partial sums (``sums``), the concatenates of several parameters' values (``gathers``)
    and the reductions over them with how they combine (``reductions``), and the slots."""

    deps: dict[int, _Dep]
    sums: frozenset[int]
    gathers: frozenset[int]
    reductions: dict[int, _Reduce]
    slots: list[int]


def _analyse(flat: _Flat, in_deps: Sequence[_Dep]) -> _Analysis:
    """Each value's dependencies, the operations adding partial sums or reducing a gather,
    and the slots; raises :class:`_Mixing` at the first operation that combines parameters
    otherwise."""
    deps: dict[int, _Dep] = dict.fromkeys(flat.consts, _NONE)
    deps.update(zip(flat.invars, in_deps, strict=True))
    sums: set[int] = set()
    gathers: set[int] = set()
    gathered: set[int] = set()  # values made by a gather
    reductions: dict[int, _Reduce] = {}
    slots: list[int] = []

    def use(k: int) -> _Dep:
        d = deps[k]
        if not d.partial:
            return d
        if k not in slots:
            slots.append(k)
        return _Dep(frozenset(), d.slots | {slots.index(k)})

    for n, op in enumerate(flat.ops):
        ins = [deps[k] for k in op.ins]
        params = frozenset().union(*(d.params for d in ins))
        slot_deps = frozenset().union(*(d.slots for d in ins))
        reduce = _REDUCE_OF_GATHER.get(op.prim.name)
        if len(params) > 1 and _summable(op):
            sums.add(n)
            out = _Dep(params, slot_deps, True)
        elif (
            reduce is not None
            and len(op.ins) == 1
            and op.ins[0] in gathered
            and tuple(op.out_avals[0].shape) == ()
        ):
            reductions[n] = reduce
            out = _Dep(params, slot_deps, True)
        else:
            used = [use(k) for k in op.ins]
            params = frozenset().union(*(d.params for d in used))
            slot_deps = frozenset().union(*(d.slots for d in used))
            if len(params) > 1 and _gatherable(op):
                gathers.add(n)
                gathered.update(op.outs)
            elif len(params) > 1:
                raise _Mixing(op, params)
            out = _Dep(params, slot_deps)
        if any(k in gathered for k in op.ins) and n not in reductions and n not in gathers:
            raise _Mixing(op, params)
        for k in op.outs:
            deps[k] = out
    for k in flat.outvars:
        if k in gathered:
            raise _Mixing(next(op for op in flat.ops if k in op.outs), deps[k].params)
        deps[k] = use(k)
    return _Analysis(deps, frozenset(sums), frozenset(gathers), reductions, slots)


def plan_optimizer(
    opt: Any, view: TreeView, trained: Sequence[int], names: Sequence[str]
) -> OptimizerPlan:
    """How the stages run ``opt`` over the parameter tree ``view`` (the ``trained`` leaves;
    ``names`` name them), decided from its traced update (see the module's docstring).

    Raises:
      RuntimeConfigError: ``opt`` does not trace as an optax transformation over the tree,
        combines parameters other than by a global sum, or leaves an output of one
        parameter (or a state leaf of none) depending on another parameter.
    """
    avals = [jax.ShapeDtypeStruct(view.avals[q].shape, view.avals[q].dtype) for q in trained]
    p = view.full(trained, avals, abstract=True)
    try:
        init_closed, state = jax.make_jaxpr(opt.init, return_shape=True)(p)
        closed, out_shape = jax.make_jaxpr(lambda g, s, q: opt.update(g, s, q), return_shape=True)(
            p, state, p
        )
    except Exception as e:  # isolation: a user's optimizer that cannot be traced
        raise RuntimeConfigError(
            f"the optimizer cannot be traced over the parameters ({type(e).__name__}: {e}); "
            "give an optax GradientTransformation whose update takes (updates, state, params)"
        ) from e
    mine = set(trained)

    def dep(q: int | None) -> _Dep:
        return _Dep(frozenset({q}), frozenset()) if q is not None and q in mine else _NONE

    g_deps = [dep(q) for q in range(len(view.avals))]
    s_paths = jax.tree_util.tree_flatten_with_path(state)[0]
    s_owner = [view.param_of(k, np.shape(x)) for k, x in s_paths]
    # The state each stage makes (its own leaves of the full-shape tree's state) must not
    # read another stage's parameters: nothing is summed over the stages at init.
    init_flat = _Flat(init_closed)
    try:
        init = _analyse(init_flat, g_deps)
    except _Mixing as m:
        raise _mixing_error(m, names, "init") from None
    for (path, _), q, k in zip(s_paths, s_owner, init_flat.outvars, strict=True):
        if init.sums or not init.deps[k].params <= (frozenset({q}) - {None}):
            raise RuntimeConfigError(
                f"the optimizer's init makes state {jax.tree_util.keystr(path) or '(root)'} "
                "from several parameters: each stage makes the state of its own parameters, "
                "so it would not equal one device"
            )
    flat = _Flat(closed)
    try:
        an = _analyse(flat, [*g_deps, *[dep(q) for q in s_owner], *g_deps])
    except _Mixing as m:
        raise _mixing_error(m, names, "update") from None
    deps = an.deps
    u_paths, st_paths = (jax.tree_util.tree_flatten_with_path(x)[0] for x in out_shape)
    if len(u_paths) != view.treedef.num_leaves:
        raise RuntimeConfigError(
            f"the optimizer's updates have {len(u_paths)} leaves, the parameters "
            f"{view.treedef.num_leaves}: give an optax GradientTransformation"
        )
    owners = [*range(len(u_paths)), *[view.param_of(k, np.shape(x)) for k, x in st_paths]]
    paths = [*(("updates", k) for k, _ in u_paths), *(("state", k) for k, _ in st_paths)]
    for (kind, path), q, k in zip(paths, owners, flat.outvars, strict=True):
        own = frozenset() if q is None or q not in mine else frozenset({q})
        if not deps[k].params <= own:
            other = ", ".join(sorted(names[x] for x in deps[k].params - own)[:3])
            raise RuntimeConfigError(
                f"the optimizer's {kind} {jax.tree_util.keystr(path) or '(root)'} depends on "
                f"other parameters ({other}): the stages hold different parameters and "
                "would not equal one device"
            )
    slots = tuple(an.slots)
    made_by = {k: n for n, op in enumerate(flat.ops) for k in op.outs}
    slot_reduce = tuple(an.reductions.get(made_by[k], _Reduce.SUM) for k in slots)
    slot_of = {k: i for i, k in enumerate(slots)}
    return OptimizerPlan(
        flat, deps, an.sums, an.gathers, an.reductions, slots, slot_of, slot_reduce
    )


def _mixing_error(m: _Mixing, names: Sequence[str], where: str) -> RuntimeConfigError:
    who = ", ".join(sorted(names[q] for q in m.params)[:3])
    return RuntimeConfigError(
        f"the optimizer's {where} combines parameters ({who}"
        f"{', ...' if len(m.params) > 3 else ''}) with {m.op.prim.name!r} at {m.op.where}: "
        "the stages hold different parameters and only sums over parameters (a global "
        "norm) and all / any of per-parameter flags (all finite) are computed across them. "
        "Supported: per-parameter transformations, global-norm statistics "
        "(optax.clip_by_global_norm ...), branches on such global values "
        "(optax.apply_if_finite, optax.MultiSteps)"
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
