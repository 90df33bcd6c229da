"""The parameter-spec check of the ``Pipeline``, for other runners (``hlopipe.generate``).

One check, wherever the runtime keeps it: ``_plan._spec_leaves`` (taking the staged program
for its argument paths) today; issue 25's branch moves it to ``_placement.spec_leaves``
(taking the paths). Whichever exists is called, so this module survives that move; once it
has landed, ``param_spec_leaves`` can be that function re-exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any


def param_spec_leaves(
    param_specs: Any,
    treedef: Any,
    avals: Sequence[Any],
    in_paths: Sequence[str],
    placement: Any,
    flat: list[Any] | None = None,
) -> list[Any]:
    """One ``PartitionSpec`` (``None``: propagation decides) per parameter leaf: ``param_specs``
    (a pytree of ``treedef``'s structure), else ``flat`` (a program's own annotations), else
    replicated; checked against every rank's mesh, errors naming ``in_paths[k]``."""
    from hlopipe.runtime import _placement, _plan

    moved = getattr(_placement, "spec_leaves", None)
    if moved is not None:
        return list(moved(param_specs, treedef, avals, in_paths, placement, flat))
    check = getattr(_plan, "_spec_leaves")  # noqa: B009 - gone from _plan once it has moved
    staged = SimpleNamespace(in_paths=list(in_paths))
    return list(check(param_specs, treedef, avals, staged, placement, flat))
