"""``--check``'s reference: the program called directly on one device, with the roles its own
tree or names give, never the plan's.

A plan whose roles are wrong (a data argument trained as a parameter) would match itself if
the reference took its roles from the plan. So the reference reads the roles again from what
the program itself says -- a ``jax.export`` artifact's input tree (the leaves of argument 0
are the parameters, the later arguments the batch), else the argument names (a pytree root
``params``/``variables``/``state``/``weights``/... is a parameter) -- and calls the loaded
function as the exported function was called (``f(params, x, y)`` with its trees), with optax
on one device. Where the program has neither a tree nor names, the roles cannot be checked
and the result says so.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.training._plan import TrainingPlan
from hlopipe.training._roles import PARAMETER_ROOTS, Role, name_root


class Evidence(enum.StrEnum):
    """What the program itself says about its arguments' roles."""

    TREE = "its tree (jax.export: argument 0 the parameters, the later ones the batch)"
    NAMES = "its argument names (the leaves under " + "/".join(sorted(PARAMETER_ROOTS)) + ")"
    NONE = "neither a tree nor argument names that show the parameters"


@dataclass(frozen=True)
class ProgramRoles:
    """The roles the program itself gives: ``parameters`` and ``batch`` positions (the other
    arguments are scalars, constants), and the ``evidence`` they come from."""

    evidence: Evidence
    parameters: tuple[int, ...]
    batch: tuple[int, ...]


@dataclass(frozen=True)
class ReferenceRun:
    """The reference's result: ``losses`` of the run on one device (``None`` when the plan's
    roles are not the program's: nothing comparable was run), the roles it took and, when
    they differ from the plan's, ``differences`` in words."""

    roles: ProgramRoles
    losses: list[float] | None
    differences: tuple[str, ...] = ()


def program_roles(program: Any) -> ProgramRoles:
    """The parameters and the batch as the program's own tree or names give them."""
    avals = list(program.in_avals)
    n = len(avals)
    tops = program.top_level_args()
    if tops is not None and max(tops, default=0) >= 1:
        params = tuple(i for i in range(n) if tops[i] == 0)
        batch = tuple(i for i in range(n) if tops[i] > 0 and avals[i].shape)
        return ProgramRoles(Evidence.TREE, params, batch)
    names = program.arg_names
    roots = [name_root(x) for x in names]
    if any(r in PARAMETER_ROOTS for r in roots) and all(
        r is not None for r, a in zip(roots, avals, strict=True) if a.shape
    ):
        params = tuple(i for i in range(n) if roots[i] in PARAMETER_ROOTS)
        batch = tuple(i for i in range(n) if roots[i] not in PARAMETER_ROOTS and avals[i].shape)
        if batch:
            return ProgramRoles(Evidence.NAMES, params, batch)
    return ProgramRoles(Evidence.NONE, (), ())


def _differences(plan: TrainingPlan, roles: ProgramRoles) -> tuple[str, ...]:
    said = {i: Role.PARAMETER for i in roles.parameters} | {i: Role.BATCH for i in roles.batch}
    words = {Role.PARAMETER: "a parameter", Role.BATCH: "in the batch", Role.FROZEN: "frozen"}
    out = []
    for a in plan.roles.arguments:
        want = said.get(a.position, Role.FROZEN)
        if a.role is not want:
            out.append(
                f"argument {a.describe()} is {words[a.role]} in the plan, {words[want]} by "
                "the program"
            )
    return tuple(out)


def train_reference(
    plan: TrainingPlan,
    optimizer: Any,
    steps: int,
    batches: Sequence[Sequence[Any]] | None = None,
) -> ReferenceRun:
    """``steps`` steps of ``optimizer`` (optax) on one device, the program called directly with
    the roles it gives itself (:func:`program_roles`), from the plan's initial values.

    Args:
      plan: where the values come from (initial parameters, frozen constants, the data); its
        roles are compared with the program's, never used.
      batches: the full batch of each step (arrays in the order of the batch arguments);
        default: the plan's batch every step.

    Returns:
      A :class:`ReferenceRun`: no losses when the program has no tree and no names
      (``evidence`` is ``Evidence.NONE``: nothing to check the roles against) or when the
      plan's roles differ from the program's (``differences`` says how).
    """
    roles = program_roles(plan.program)
    if roles.evidence is Evidence.NONE:
        return ReferenceRun(roles, None)
    differences = _differences(plan, roles)
    if differences:
        return ReferenceRun(roles, None, differences)
    return ReferenceRun(roles, _run(plan, roles, optimizer, steps, batches))


def _run(
    plan: TrainingPlan,
    roles: ProgramRoles,
    optimizer: Any,
    steps: int,
    batches: Sequence[Sequence[Any]] | None,
) -> list[float]:
    import jax
    import jax.numpy as jnp
    import optax

    program = plan.program
    n = len(program.in_avals)
    values: dict[int, Any] = {}
    for a, v in zip(plan.roles.parameters, plan.params, strict=True):
        values[a.position] = v
    for a, v in zip(plan.roles.frozen, plan.frozen, strict=True):
        values[a.position] = v
    trained = [i for i in roles.parameters if np.dtype(program.in_avals[i].dtype).kind in "fc"]
    tree = program.exported.in_tree if program.exported is not None else None
    call = program.as_function(flat=roles.evidence is not Evidence.TREE)
    m, mb = plan.num_microbatches, plan.microbatch

    def loss_of(leaves: list[Any]) -> Any:
        if roles.evidence is Evidence.TREE:  # as the exported function was called
            args, kwargs = jax.tree_util.tree_unflatten(tree, leaves)
            out = call(*args, **kwargs)
        else:
            out = call(*leaves)
        return jax.tree_util.tree_leaves(out)[0]

    def loss(weights: list[Any], fixed: dict[int, Any], batch: list[Any]) -> Any:
        # the microbatches stacked on a new leading axis, scanned: the program is traced and
        # compiled once whatever m is (a loop of m calls inlined it m times), and the carry
        # sums the losses in microbatch order, as that loop did
        stacked = [b[: m * mb].reshape(m, mb, *b.shape[1:]) for b in batch]

        def add(total: Any, micro: list[Any]) -> tuple[Any, None]:
            leaves = [fixed.get(i) for i in range(n)]
            for i, w in zip(trained, weights, strict=True):
                leaves[i] = w
            for i, b in zip(roles.batch, micro, strict=True):
                leaves[i] = b
            return total + loss_of(leaves), None

        first = program.out_avals[0]  # the loss: the first output, as loss_of takes it
        total, _ = jax.lax.scan(add, jnp.zeros(first.shape, first.dtype), stacked)
        return total / m

    @jax.jit
    def step(weights: Any, state: Any, fixed: Any, batch: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(weights, fixed, batch)
        updates, state = optimizer.update(grads, state, weights)
        return optax.apply_updates(weights, updates), state, value

    # on the default device, uncommitted: one compile of the step for every call
    weights = [jnp.asarray(values[i]) for i in trained]
    fixed = {i: jnp.asarray(v) for i, v in values.items() if i not in trained}
    state = jax.jit(optimizer.init)(weights)
    losses = []
    for k in range(steps):
        batch = plan.batch if batches is None else batches[k]
        # the plan lists its batch in argument order, as roles.batch is
        batch = [jnp.asarray(b) for b in batch]
        weights, state, value = step(weights, state, fixed, batch)
        losses.append(float(value))
    return losses
