"""Parameters stacked over a layer loop that the split cut: each such leaf becomes the pieces
(row ranges) the stages read, and the plan speaks of pieces where the caller spoke of leaves.

``param_pieces`` gives the pieces, their tree and avals; ``piece_specs`` carries the caller's
``param_specs`` over to them; ``piece_names`` names each piece after its leaf and rows;
``join_rows`` joins one parameter's pieces back into the caller's leaf.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.stages import StagedProgram


def param_pieces(
    staged: StagedProgram, treedef: Any, avals: list[Any]
) -> tuple[tuple[Any, ...], Any, list[Any]]:
    """When a layer loop was cut: the pieces of the parameter leaves, the tree of the pieces
    (a stacked leaf replaced by the tuple of its ranges) and their avals; else ``()`` and the
    caller's own."""
    if staged.arg_pieces is None:
        return (), treedef, avals
    n = len(avals)
    pieces = tuple(pc for pc in staged.arg_pieces if pc.source < n)
    new_avals = list(staged.in_avals[: len(pieces)])
    per: list[list[Any]] = [[] for _ in range(n)]
    for pc, a in zip(pieces, new_avals, strict=True):
        per[pc.source].append(a)
    leaves = [ps[0] if _whole(pieces, i) else tuple(ps) for i, ps in enumerate(per)]
    tree = jax.tree_util.tree_unflatten(treedef, leaves)
    return pieces, jax.tree_util.tree_structure(tree), new_avals


def piece_specs(specs: Any, caller_treedef: Any, treedef: Any, pieces: Sequence[Any]) -> Any:
    """``param_specs`` written for the caller's tree, as the tree of the pieces (each piece of
    a stacked parameter gets that parameter's spec); unchanged if it does not fit (the
    structure check then says so)."""
    if specs is None:
        return None
    try:
        given = caller_treedef.flatten_up_to(specs)
    except (ValueError, TypeError):
        return specs
    return jax.tree_util.tree_unflatten(treedef, [given[pc.source] for pc in pieces])


def _whole(pieces: Sequence[Any], source: int) -> bool:
    return any(pc.source == source and pc.start is None for pc in pieces)


def piece_names(pieces: Sequence[Any], names: Sequence[str]) -> tuple[str, ...]:
    """Each piece's name: its leaf's, with ``[start:stop]`` for a range of rows."""
    return tuple(
        names[pc.source] if pc.start is None else f"{names[pc.source]}[{pc.start}:{pc.stop}]"
        for pc in pieces
    )


def join_rows(xs: Sequence[Any]) -> Any:
    """Pieces of one stacked parameter (in row order) joined on their first axis: on the
    first piece's sharding when they are device arrays, as NumPy otherwise; ``None`` if a
    piece is."""
    if len(xs) == 1 or any(x is None for x in xs):
        return xs[0] if len(xs) == 1 else None
    if all(isinstance(x, jax.Array) for x in xs):
        sh = xs[0].sharding
        return jnp.concatenate([jax.device_put(x, sh) for x in xs], axis=0)
    return np.concatenate([np.asarray(x) for x in xs], axis=0)
