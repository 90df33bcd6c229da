"""Parameter layouts written as partitioning rules (``--param-spec PATTERN=SPEC``, a plan
file's ``param_specs``): a regular expression over a parameter's path, the first rule whose
pattern is found in it giving the parameter's ``PartitionSpec``. One parser and one matcher for
every front end: ``hlopipe train`` and :meth:`Pipeline.from_plan` (training roles' paths),
``hlopipe generate``/``serve`` (``hlopipe.generate.param_specs_from_rules``, the decode step's
argument roles)."""

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


def specs_from_rules(
    rules: Sequence[ParamRule],
    paths: Sequence[str],
    shapes: Sequence[Sequence[int]],
    dtypes: Sequence[Any] | None = None,
) -> list[Any]:
    """Per parameter (its ``paths[k]``, ``shapes[k]``), the spec of the first rule whose
    pattern is found in its path (``re.search``), ``None`` where no rule matches.

    Raises:
      RuntimeConfigError: a rule that matches no parameter (naming the closest paths), or
        one giving more axes than a parameter it matches has dimensions."""
    specs: list[Any] = [None] * len(paths)
    for k, (path, shape) in enumerate(zip(paths, shapes, strict=True)):
        for rule in rules:
            if rule.pattern.search(path):
                if len(rule.axes) > len(shape):
                    dt = f"{dtypes[k]}" if dtypes is not None else ""
                    raise RuntimeConfigError(
                        Keyword("param_rules", rule.text), f": {len(rule.axes)} axes for "
                        f"{path}, which has {len(shape)} dimensions ({dt}{list(shape)}); give "
                        f"at most {len(shape)}",
                    )  # fmt: skip
                specs[k] = rule.spec()
                break
    for rule in rules:  # a rule every match of which an earlier rule took is kept, not refused
        if not any(rule.pattern.search(p) for p in paths):
            raise RuntimeConfigError(
                Keyword("param_rules", rule.text), f": {rule.pattern.pattern!r} is found in "
                f"no parameter's path; closest: {', '.join(_closest(rule.pattern.pattern, paths))}"
            )  # fmt: skip
    return specs


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
