"""Sharding attributes read as text: HLO sharding strings and Shardy attributes.

:func:`hlo_sharding_spec` reads ``{devices=[2,1]<=[2]}`` as a ``PartitionSpec`` over mesh
axes: from the structure of an iota tile assignment (``<=[8]T(...)``) where its runs line up
with the axes, else by trying every placement of the axes on the dimensions (explicit device
lists, and iota runs that split an axis). Shardy's
``#sdy.mesh`` and ``#sdy.sharding`` read as axis names (:func:`parse_sdy_mesh`,
:func:`parse_sdy_shardings`); mapping them onto the user's mesh is ``_on_mesh.AxisMap``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from jax.sharding import PartitionSpec

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import OpaqueAttr

# ---- sharding strings --------------------------------------------------------------------------

_HLO_SHARDING = re.compile(
    r"^\{\s*devices=\[([\d,\s]+)\]\s*(<=\[[\d,\s]+\](?:T\([\d,\s]+\))?|[\d,\s]+)(.*)\}$", re.S
)


def hlo_sharding_spec(
    text: str, ndim: int, axes: Sequence[tuple[str, int]]
) -> PartitionSpec | None:
    """An HLO sharding string (``{devices=[2,1]<=[2]}``) as a PartitionSpec over ``axes``
    (``(name, size)`` pairs whose row-major numbering is the program's device ids).

    Returns None for ``{manual}`` (the value is already per device); raises
    UnsupportedOpError when no PartitionSpec over these axes gives the same tiling.
    """
    s = text.strip()
    s = re.sub(r",?\s*metadata=\{[^}]*\}", "", s)
    if s in ("{replicated}", "{}", "{unknown}") or s.startswith("{maximal"):
        return PartitionSpec()
    if s == "{manual}":
        return None
    if s.startswith("{{"):
        raise UnsupportedOpError(f"tuple sharding {text} is not supported")
    m = _HLO_SHARDING.match(s)
    if m is None:
        raise UnsupportedOpError(f"sharding {text} is not supported (cannot read it)")
    dims = [int(v) for v in m.group(1).split(",") if v.strip()]
    assign = m.group(2).strip()
    rest = m.group(3)
    total = math.prod(dims)
    iota = None
    if assign.startswith("<="):
        im = re.match(r"<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?", assign)
        assert im is not None
        reshape = [int(v) for v in im.group(1).split(",") if v.strip()]
        perm = [int(v) for v in (im.group(2) or "").split(",") if v.strip()]
        perm = perm or list(range(len(reshape)))
        iota = (reshape, perm)
        devices = np.arange(math.prod(reshape)).reshape(reshape).transpose(perm).reshape(dims)
    else:
        devices = np.array([int(v) for v in assign.split(",") if v.strip()]).reshape(dims)
    n_subgroup = 0
    if "last_tile_dim_replicate" in rest:
        n_subgroup = 1
    else:
        lm = re.search(r"last_tile_dims=\{([^}]*)\}", rest)
        if lm:
            kinds = [k.strip() for k in lm.group(1).split(",") if k.strip()]
            if any(k != "replicated" for k in kinds):
                raise UnsupportedOpError(f"sharding {text} (partly manual) is not supported")
            n_subgroup = len(kinds)
    if len(dims) - n_subgroup != ndim:
        raise UnsupportedOpError(f"sharding {text} does not fit a rank-{ndim} value")
    if total == 1:
        return PartitionSpec()
    if iota is not None:
        spec = _iota_spec(dims, *iota, ndim, axes)
        if spec is not None:
            return spec
    return _find_spec(devices, ndim, axes, text)


def _iota_spec(
    dims: list[int], reshape: list[int], perm: list[int], ndim: int, axes: Sequence[tuple[str, int]]
) -> PartitionSpec | None:
    """The spec of an iota tile assignment (``devices=[dims]<=[reshape]T(perm)``) read from its
    structure: each dimension of ``reshape`` is a run of the mesh axes in order (the device ids
    are row-major over them), ``perm`` orders those runs, and the tile dimensions take the
    ordered axes in turn, major first. None where an axis would be split (the search decides)."""
    live = [(n, s) for n, s in axes if s > 1]
    runs: list[list[tuple[str, int]]] = []
    k = 0
    for r in reshape:
        run: list[tuple[str, int]] = []
        while math.prod(s for _, s in run) < r and k < len(live):
            run.append(live[k])
            k += 1
        if math.prod(s for _, s in run) != r:
            return None
        runs.append(run)
    if k != len(live):
        return None
    order = [a for j in perm for a in runs[j]]
    entries: list[Any] = []
    for d in dims:
        names: list[str] = []
        while math.prod(s for _, s in order[: len(names)]) < d and len(names) < len(order):
            names.append(order[len(names)][0])
        if math.prod(s for _, s in order[: len(names)]) != d:
            return None
        order = order[len(names) :]
        entries.append(None if not names else names[0] if len(names) == 1 else tuple(names))
    return PartitionSpec(*entries[:ndim])


def _find_spec(
    devices: np.ndarray, ndim: int, axes: Sequence[tuple[str, int]], text: str
) -> PartitionSpec:
    live = [(n, s) for n, s in axes if s > 1]
    sizes = [s for _, s in axes]
    n_dev = math.prod(sizes)
    if devices.size != n_dev:
        raise UnsupportedOpError(
            f"sharding {text} spans {devices.size} devices, the mesh axes "
            f"{[n for n, _ in axes]} have {n_dev}"
        )
    # tile coordinates of each device id
    tile_of = np.zeros((n_dev, devices.ndim), np.int64)
    for coord in np.ndindex(*devices.shape):
        tile_of[int(devices[coord])] = coord
    coords = np.array(list(np.ndindex(*sizes))) if sizes else np.zeros((1, 0), np.int64)
    names = [n for n, _ in axes]
    live_idx = [names.index(n) for n, _ in live]
    tile_dims = list(devices.shape[:ndim])
    for slots in itertools.product(range(ndim + 1), repeat=len(live)):
        per_dim: list[list[int]] = [[] for _ in range(ndim)]
        for k, slot in zip(live_idx, slots, strict=True):
            if slot < ndim:
                per_dim[slot].append(k)
        if any(math.prod(sizes[k] for k in per_dim[i]) != tile_dims[i] for i in range(ndim)):
            continue
        for orders in itertools.product(*(itertools.permutations(p) for p in per_dim)):
            ok = True
            for i, order in enumerate(orders):
                idx = np.zeros((n_dev,), np.int64)
                for k in order:
                    idx = idx * sizes[k] + coords[:, k]
                if not np.array_equal(idx, tile_of[:, i]):
                    ok = False
                    break
            if ok:
                entries: list[Any] = []
                for order in orders:
                    if not order:
                        entries.append(None)
                    elif len(order) == 1:
                        entries.append(names[order[0]])
                    else:
                        entries.append(tuple(names[k] for k in order))
                return PartitionSpec(*entries)
    raise UnsupportedOpError(
        f"sharding {text} cannot be expressed as a PartitionSpec over mesh axes "
        f"{dict(axes)}: pass a mesh whose axes match it"
    )


# ---- Shardy attributes -------------------------------------------------------------------------

_SDY_ONE = re.compile(
    r"<\s*(@[\w.$-]+|mesh<[^>]*>)\s*,\s*\[(.*?)\]\s*(?:replicated=\{[^}]*\}\s*)?>"
)


def parse_sdy_mesh(text: str) -> tuple[tuple[str, int], ...]:
    """``#sdy.mesh<["x"=4, "y"=2]>`` (or its body) -> (("x", 4), ("y", 2))."""
    return tuple((n, int(s)) for n, s in re.findall(r'"([^"]+)"\s*=\s*(\d+)', text))


def parse_sdy_shardings(text: str) -> list[tuple[str, list[list[str]]]]:
    """``#sdy.sharding<@mesh, [{"x"}, {}]>`` or ``#sdy.sharding_per_value<[...]>`` ->
    [(mesh ref, per-dimension axis names)]."""
    out = []
    for m in _SDY_ONE.finditer(text):
        dims = []
        for body in re.findall(r"\{([^}]*)\}", m.group(2)):
            names = []
            for item in body.split(","):
                item = item.strip()
                if not item or item == "?":
                    continue
                am = re.fullmatch(r'"([^"]+)"', item)
                if am is None:
                    raise UnsupportedOpError(
                        f"Shardy sharding {text} (sub-axis {item}) is not supported"
                    )
                names.append(am.group(1))
            dims.append(names)
        out.append((m.group(1), dims))
    return out


def attr_text(a: Any) -> str:
    return a.text if isinstance(a, OpaqueAttr) else str(a)
