"""Parameter layouts written as partitioning rules (``--param-spec PATTERN=SPEC``): a regular
expression over a parameter's path, the first rule whose pattern is found in it giving the
parameter's ``PartitionSpec``. :func:`param_specs_from_rules` turns rules into the
``param_specs`` :class:`~hlopipe.generate.Generator` takes (one spec per parameter, in order).

A parameter's path is the one hlopipe prints for it in the argument roles
(``ArgRole.path``: ``[0]['layers'][0]['qkv']`` for a ``jax.export`` of ``(params, ...)``,
``arg 3`` for a program that names no argument)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hlopipe.runtime import ParamRule, parse_param_rule, specs_from_rules

__all__ = ["ParamRule", "param_specs_from_rules", "parse_param_rule"]


def param_specs_from_rules(
    rules: Sequence[ParamRule],
    program: Any,
    mesh_shape: Sequence[int] | None = None,
    mesh_axes: Sequence[str] | None = None,
    params: Any = None,
) -> Any:
    """The ``param_specs`` of ``program``'s parameters (its argument roles' parameters, in
    order: the list ``Generator`` takes them as, or in the structure of ``params`` when it is
    given, a pytree with a leaf per parameter): each parameter's spec from the first of
    ``rules`` whose pattern is found in its path (``re.search``); a parameter no rule matches
    keeps the default ``Generator`` gives it without ``param_specs`` (the program's own
    sharding annotation over a stage mesh of ``mesh_shape``/``mesh_axes`` when it has more
    than one device, else replicated).

    Raises:
      RuntimeConfigError: a rule that matches no parameter (naming the closest paths), or
        one giving more axes than a parameter it matches has dimensions."""
    roles = list(program.arg_roles().parameters)
    specs = specs_from_rules(
        rules, [r.path for r in roles], [r.shape for r in roles], [r.dtype for r in roles]
    )
    default = _default_specs(program, len(roles), mesh_shape, mesh_axes)
    flat = [s if s is not None else default[k] for k, s in enumerate(specs)]
    if params is None:
        return flat
    import jax

    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(params), flat)


def _default_specs(
    program: Any, count: int, shape: Sequence[int] | None, axes: Sequence[str] | None
) -> list[Any]:
    """What ``Generator`` gives parameters without ``param_specs`` (``annotated_specs``, else
    replicated) on a stage mesh of ``shape``/``axes``."""
    from jax.sharding import PartitionSpec

    from hlopipe.generate._placement import annotated_specs

    if shape is None:  # a device a stage
        return [PartitionSpec()] * count
    names = tuple(axes) if axes is not None else ("data",)
    mesh = list(zip(names, (int(s) for s in shape), strict=True))
    got = annotated_specs(program, mesh, count)
    return got if got is not None else [PartitionSpec()] * count
