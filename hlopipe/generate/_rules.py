"""Parameter layouts written as partitioning rules (``--param-spec PATTERN=SPEC``): a regular
expression over a parameter's path, the first rule whose pattern is found in it giving the
parameter's ``PartitionSpec``. :func:`param_specs_from_rules` turns rules into the
``param_specs`` :class:`~hlopipe.generate.Generator` takes (one spec per parameter, in order).

A parameter's path is the one hlopipe prints for it in the argument roles
(``ArgRole.path``: ``[0]['layers'][0]['qkv']`` for a ``jax.export`` of ``(params, ...)``,
``arg 3`` for a program that names no argument)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from hlopipe.errors import Keyword, RuntimeConfigError

_NOT_SPLIT = ("_", "None", "none", "")


class ParamRule(NamedTuple):
    """One rule: ``text`` as given, its compiled ``pattern``, and ``axes``, the mesh axis of
    each dimension of the parameter (``None``: that dimension is not split)."""

    text: str
    pattern: re.Pattern[str]
    axes: tuple[str | None, ...]

    def spec(self) -> Any:
        from jax.sharding import PartitionSpec

        return PartitionSpec(*self.axes)


def parse_param_rule(text: str, mesh_axes: Sequence[str] | None) -> ParamRule:
    """``PATTERN=SPEC`` -> a :class:`ParamRule`; ``SPEC`` is a mesh axis per dimension,
    comma-separated, ``_`` (or ``None``) for a dimension not split (``.*qkv=_,model``). The
    pattern is everything before the last ``=``, so it may itself hold ``=``.

    Raises:
      RuntimeConfigError: no ``=``, a pattern that is not a regular expression, an axis
        that is not one of ``mesh_axes`` (the stage mesh's; ``None``: no stage mesh), or an
        axis named twice."""
    pattern, eq, spec = text.rpartition("=")
    if not eq or not pattern:
        raise RuntimeConfigError(
            Keyword("param_rules", text), ": expected PATTERN=SPEC, such as "
            "'qkv=_,model' (a regular expression over the parameter's path, then a mesh axis "
            "or _ per dimension)"
        )  # fmt: skip
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise RuntimeConfigError(
            Keyword("param_rules", text), f": {pattern!r} is not a regular expression ({e})"
        ) from None
    axes = tuple(None if a.strip() in _NOT_SPLIT else a.strip() for a in spec.split(","))
    named = [a for a in axes if a is not None]
    have = tuple(mesh_axes or ())
    for a in named:
        if a not in have:
            if not have:
                raise RuntimeConfigError(
                    Keyword("param_rules", text), f": splits a parameter on mesh axis {a!r}, "
                    "but there is no stage mesh; give one with that axis (",
                    Keyword("stage_mesh_shape"), " 1x2 ", Keyword("stage_mesh_axes"),
                    f" data,{a})",
                )  # fmt: skip
            raise RuntimeConfigError(
                Keyword("param_rules", text),
                f": no mesh axis {a!r}; the stage mesh's axes (",
                Keyword("stage_mesh_axes"),
                f") are {', '.join(have)}",
            )
    if len(set(named)) != len(named):
        raise RuntimeConfigError(
            Keyword("param_rules", text), ": names a mesh axis twice; a mesh axis splits at "
            "most one dimension of a parameter"
        )  # fmt: skip
    return ParamRule(text, compiled, axes)


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
    paths = [r.path for r in roles]
    specs: list[Any] = [None] * len(roles)
    for k, r in enumerate(roles):
        for rule in rules:
            if rule.pattern.search(r.path):
                if len(rule.axes) > len(r.shape):
                    raise RuntimeConfigError(
                        Keyword("param_rules", rule.text), f": {len(rule.axes)} axes for "
                        f"{r.path}, which has {len(r.shape)} dimensions "
                        f"({r.dtype}{list(r.shape)}); give at most {len(r.shape)}",
                    )  # fmt: skip
                specs[k] = rule.spec()
                break
    for rule in rules:  # a rule every match of which an earlier rule took is kept, not refused
        if not any(rule.pattern.search(p) for p in paths):
            raise RuntimeConfigError(
                Keyword("param_rules", rule.text), f": {rule.pattern.pattern!r} is found in "
                f"no parameter's path; closest: {', '.join(_closest(rule.pattern.pattern, paths))}"
            )  # fmt: skip
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


def _closest(pattern: str, paths: Sequence[str]) -> list[str]:
    """The paths most like ``pattern`` (a few: by the whole path or its best-matching key),
    else the first few paths."""

    def score(path: str) -> float:
        pieces = [path, *re.findall(r"[\w.-]+", path)]
        return max(difflib.SequenceMatcher(None, pattern, p).ratio() for p in pieces)

    scored = sorted(((score(p), k) for k, p in enumerate(paths)), key=lambda t: (-t[0], t[1]))
    close = [paths[k] for s, k in scored[:3] if s >= 0.5]
    return [repr(p) for p in (close or list(paths)[:3])] + (
        [] if close or len(paths) <= 3 else [f"... ({len(paths)} parameters)"]
    )
