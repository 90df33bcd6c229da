"""Checkpoints of a :class:`Pipeline`'s state: per parameter, by its path, written atomically.

Layout of ``DIR`` (one folder per saved step; the newest is what :func:`restore` reads)::

    DIR/step_00000005/meta.json                 step, parameter paths, shapes, dtypes
    DIR/step_00000005/params/<path>.npy         one file per parameter (its owner's copy)
    DIR/step_00000005/opt/<leaf path>.npy       optimizer leaves of one parameter, by path
    DIR/step_00000005/opt_shared/stage<s>/...   optimizer leaves of no parameter (adam's count)

Each process writes the parameters and optimizer state of the stages it holds, from their
devices, into ``DIR/.tmp-step_...``; every file is fsynced; after all processes are done
(a barrier), process 0 writes ``meta.json`` and renames the folder into place, which is the
commit: a crash before it leaves the previous checkpoints as they were, and a half-written
folder is never read. In a multi-process job ``DIR`` must be on a filesystem every process
sees (on one host, any folder).

A stacked parameter whose rows are held by several stages (a cut layer loop: each stage
holds the rows of its range of iterations) is stored whole, by the caller's path, as are its
optimizer leaves: each process writes the rows it holds as ``<name>.rows<start>.npy`` and
process 0 joins them (in row order) into ``<name>.npy`` before the commit; a restore takes
each stage's rows from the whole. Such a checkpoint restores onto another stage count, and
onto the program unsplit.

Because everything is stored per parameter, not per stage, a checkpoint restores onto any
number of processes and stages whose parameters have the same paths, shapes and dtypes (the
optimizer's per-parameter leaves are found by the parameter path in their own path; leaves of
no parameter, such as a step count, are equal on every stage and taken from the first).

No checkpoint library: ``numpy.save`` plus fsync and rename is all this needs, and keeps the
dependency list short.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.parse
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from hlopipe.errors import RuntimeConfigError

if TYPE_CHECKING:
    from hlopipe.runtime._pipeline import Pipeline, PipelineState

_STEP_RE = re.compile(r"^step_(\d+)$")
FORMAT = "hlopipe-checkpoint-1"


def _fname(path: str) -> str:
    return urllib.parse.quote(path, safe="") + ".npy"


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: str, array: Any) -> None:
    with open(path, "wb") as f:
        np.save(f, np.asarray(array), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def _read(path: str, dtype: Any) -> np.ndarray:
    """An array written by :func:`_write`, as ``dtype``. NumPy writes the dtypes that JAX adds
    (bfloat16, float8, int4: ml_dtypes) as raw bytes (``|V2``), so they are viewed back."""
    a = np.load(path, allow_pickle=False)
    want = np.dtype(dtype)
    if a.dtype != want and a.dtype.kind == "V" and a.dtype.itemsize == want.itemsize:
        a = a.view(want)
    return a


def _opt_leaves(pipe: Pipeline, s: int, state: Any) -> list[tuple[str, str | None, Any, Any]]:
    """(leaf path, kind, leaf, parameter) of stage ``s``'s optimizer state: kind ``"param"``
    for a leaf of a parameter the stage owns, ``"shared"`` for one of no parameter (a count),
    ``None`` for a placeholder's (another stage's parameter: not stored)."""
    view = pipe.param_store.view
    own = set(pipe.owned[s])
    out: list[tuple[str, str | None, Any, Any]] = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        q = view.param_of(path, np.shape(leaf))
        kind = "shared" if q is None else "param" if q in own else None
        out.append((jax.tree_util.keystr(path), kind, leaf, q))
    return out


def _caller_params(pipe: Pipeline) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The caller's parameter paths and avals (stacked parameters whole)."""
    plan = pipe.plan
    if plan.param_pieces:
        return plan.caller_names, plan.caller_avals
    return tuple(pipe.param_names), tuple(pipe.param_avals)


def _pieces(pipe: Pipeline) -> list[tuple[str, int | None, int | None]]:
    """Per parameter leaf of the pipeline: the caller's path it is stored under, and its rows
    of that parameter (``None``: all of it)."""
    plan = pipe.plan
    if not plan.param_pieces:
        return [(n, None, None) for n in pipe.param_names]
    return [(plan.caller_names[pc.source], pc.start, pc.stop) for pc in plan.param_pieces]


def _stored_opt_path(pipe: Pipeline, leaf_path: str, q: int | None) -> tuple[str, Any]:
    """The path an optimizer leaf is stored under (a row range's leaf: the whole
    parameter's), and the rows it holds (``None``: all)."""
    plan = pipe.plan
    if q is None or not plan.param_pieces or plan.param_pieces[q].start is None:
        return leaf_path, None
    pc = plan.param_pieces[q]
    mine = _tree_paths(pipe)[q]
    if not leaf_path.endswith(mine):
        raise RuntimeConfigError(
            f"optimizer state {leaf_path!r} of the rows {pipe.param_names[q]} of a stacked "
            "parameter does not end with its path: cannot store it whole"
        )
    return leaf_path[: len(leaf_path) - len(mine)] + plan.caller_names[pc.source], pc


def _tree_paths(pipe: Pipeline) -> list[str]:
    tree = jax.tree_util.tree_unflatten(pipe.plan.param_treedef, list(pipe.param_avals))
    return [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _rows_name(path: str, start: int) -> str:
    return _fname(path)[: -len(".npy")] + f".rows{start}.npy"


_ROWS_RE = re.compile(r"^(.*)\.rows(\d+)\.npy$")


def _join_rows(folder: str) -> None:
    """Join every ``<name>.rows<start>.npy`` of ``folder`` into ``<name>.npy`` (row order)."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for f in os.listdir(folder):
        m = _ROWS_RE.match(f)
        if m:
            groups.setdefault(m.group(1), []).append((int(m.group(2)), f))
    for name, parts in groups.items():
        parts.sort()
        arrays = [np.load(os.path.join(folder, f), allow_pickle=False) for _, f in parts]
        _write(os.path.join(folder, name + ".npy"), np.concatenate(arrays, axis=0))
        for _, f in parts:
            os.remove(os.path.join(folder, f))


def _load_rows(file: str, dtype: Any, rows: Any) -> np.ndarray:
    """The saved array (its rows ``rows.start:rows.stop`` when ``rows`` is a piece)."""
    a = _read(file, dtype)
    return a if rows is None else a[rows.start : rows.stop]


class _Sync:
    """Barriers among the job's processes (nothing in a single process)."""

    def __init__(self, pipe: Pipeline, what: str) -> None:
        self.multi = pipe.layout.multi
        self.prefix = f"hlopipe-{what}-{pipe._uid}-{pipe._next_sync_id()}"
        self.n = 0

    def barrier(self, timeout: float) -> None:
        if not self.multi:
            return
        from hlopipe.runtime import distributed

        self.n += 1
        try:
            distributed._client().wait_at_barrier(f"{self.prefix}-{self.n}", int(timeout * 1000))
        except Exception as e:
            distributed.raise_lost_peer(e)
            raise RuntimeConfigError(f"checkpoint barrier {self.n} failed: {e}") from e


def save(pipe: Pipeline, state: PipelineState, directory: str | os.PathLike, keep: int = 2) -> str:
    """Write ``state`` under ``directory`` (see the module docstring); every process of the
    job calls it. Returns the committed folder. Keeps the newest ``keep`` checkpoints."""
    root = os.fspath(directory)
    name = f"step_{state.step:08d}"
    final = os.path.join(root, name)
    tmp = os.path.join(root, f".tmp-{name}")
    me0 = pipe.layout.me == min(pipe.layout.rank_process)
    sync = _Sync(pipe, "save")
    timeout = pipe.recv_timeout
    if me0:
        os.makedirs(root, exist_ok=True)
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        for sub in ("params", "opt", "opt_shared"):
            os.makedirs(os.path.join(tmp, sub))
    sync.barrier(timeout)

    # 1. this process's share: owner copies of parameters, optimizer state of its stages.
    pieces = _pieces(pipe)
    for p, r in enumerate(pipe.owner_rank):
        if pipe.layout.local(r):
            name, start, _ = pieces[p]
            fname = _fname(name) if start is None else _rows_name(name, start)
            _write(os.path.join(tmp, "params", fname), state.values[r][p])
    for s, st in enumerate(state.opt_states):
        if st is None or not pipe.layout.local(pipe.placement.rank_of(s)):
            continue
        shared = os.path.join(tmp, "opt_shared", f"stage{s}")
        for leaf_path, kind, leaf, q in _opt_leaves(pipe, s, st):
            if kind == "param":
                path, rows = _stored_opt_path(pipe, leaf_path, q)
                fname = _fname(path) if rows is None else _rows_name(path, rows.start)
                _write(os.path.join(tmp, "opt", fname), leaf)
            elif kind == "shared":
                os.makedirs(shared, exist_ok=True)
                _write(os.path.join(shared, _fname(leaf_path)), leaf)
        if os.path.isdir(shared):
            _fsync_dir(shared)
    for sub in ("params", "opt", "opt_shared"):
        _fsync_dir(os.path.join(tmp, sub))
    sync.barrier(timeout)

    # 2. the commit: stacked parameters joined, meta.json, then one rename.
    if me0:
        for sub in ("params", "opt"):
            _join_rows(os.path.join(tmp, sub))
        meta = {
            "format": FORMAT,
            "step": state.step,
            "params": [
                {"path": n, "shape": list(a.shape), "dtype": np.dtype(a.dtype).name}
                for n, a in zip(*_caller_params(pipe), strict=True)
            ],
            "num_stages": pipe.staged.num_stages,
            "optimizer": state.opt_states[0] is not None if state.opt_states else False,
        }
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(tmp)
        if os.path.exists(final):  # the same step saved again: replace it
            old = os.path.join(root, f".old-{name}")
            if os.path.exists(old):
                shutil.rmtree(old)
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old)
        else:
            os.rename(tmp, final)
        _fsync_dir(root)
        steps = sorted(_steps(root))
        for k in steps[: max(len(steps) - keep, 0)]:
            shutil.rmtree(os.path.join(root, f"step_{k:08d}"), ignore_errors=True)
    sync.barrier(timeout)
    return final


def _steps(root: str) -> list[int]:
    if not os.path.isdir(root):
        return []
    out = []
    for n in os.listdir(root):
        m = _STEP_RE.match(n)
        if m and os.path.exists(os.path.join(root, n, "meta.json")):
            out.append(int(m.group(1)))
    return out


def latest_step(directory: str | os.PathLike) -> int | None:
    """The newest complete checkpoint's step under ``directory`` (``None``: there is none)."""
    steps = _steps(os.fspath(directory))
    return max(steps) if steps else None


def restore(pipe: Pipeline, directory: str | os.PathLike, step: int | None = None) -> PipelineState:
    """The state saved under ``directory`` (the newest, or ``step``), placed on this
    pipeline's stages; each process loads what its ranks hold."""
    root = os.fspath(directory)
    if step is None:
        step = latest_step(root)
        if step is None:
            raise RuntimeConfigError(f"no checkpoint under {root!r}")
    folder = os.path.join(root, f"step_{step:08d}")
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise RuntimeConfigError(f"no checkpoint of step {step} under {root!r}") from None
    if meta.get("format") != FORMAT:
        raise RuntimeConfigError(f"{folder}: not an hlopipe checkpoint ({meta.get('format')!r})")
    saved = {e["path"]: (tuple(e["shape"]), e["dtype"]) for e in meta["params"]}
    want = {
        n: (tuple(a.shape), np.dtype(a.dtype).name)
        for n, a in zip(*_caller_params(pipe), strict=True)
    }
    if saved != want:
        diff = sorted(set(saved.items()) ^ set(want.items()))[:4]
        raise RuntimeConfigError(
            f"{folder}: its parameters do not match this pipeline's (first differences: {diff})"
        )

    values: list[dict[int, jax.Array]] = [{} for _ in range(pipe.placement.num_ranks)]
    pieces = _pieces(pipe)
    for p, (n, start, stop) in enumerate(pieces):
        host = None
        for r in pipe.holders[p]:
            if pipe.layout.local(r):
                if host is None:
                    file = os.path.join(folder, "params", _fname(n))
                    host = _read(file, pipe.param_avals[p].dtype)[start:stop]
                values[r][p] = jax.device_put(host, pipe.plan.param_sharding(r, p))
    opt_states: list[Any] = [None] * pipe.staged.num_stages
    if pipe.optimizer is not None:
        shared_root = os.path.join(folder, "opt_shared")
        shared_dirs = sorted(
            os.listdir(shared_root) if os.path.isdir(shared_root) else [],
            key=lambda d: int(d[len("stage") :]),
        )
        for s, owned in enumerate(pipe.owned):
            if not pipe.layout.local(pipe.placement.rank_of(s)):
                continue
            own = [values[pipe.owner_rank[p]][p] for p in owned]
            template = pipe.param_store.optimizer_fns(s)[0](own)
            leaves = []
            for leaf_path, kind, leaf, q in _opt_leaves(pipe, s, template):
                rows = None
                if kind is None:  # a placeholder of another stage's parameter
                    leaves.append(leaf)
                    continue
                if kind == "param":
                    path, rows = _stored_opt_path(pipe, leaf_path, q)
                    file = os.path.join(folder, "opt", _fname(path))
                else:
                    cands = [os.path.join(shared_root, d, _fname(leaf_path)) for d in shared_dirs]
                    found = [c for c in cands if os.path.exists(c)]
                    file = found[0] if found else os.path.join(shared_root, _fname(leaf_path))
                if not os.path.exists(file):
                    raise RuntimeConfigError(
                        f"{folder}: no optimizer state {leaf_path!r} (saved with another "
                        "optimizer, or without one?)"
                    )
                leaves.append(jax.device_put(_load_rows(file, leaf.dtype, rows), leaf.sharding))
            opt_states[s] = jax.tree_util.tree_unflatten(
                jax.tree_util.tree_structure(template), leaves
            )
    return pipe.param_store.state(values, opt_states, int(meta["step"]))
