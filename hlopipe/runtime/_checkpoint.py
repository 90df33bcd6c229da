"""Checkpoints of a :class:`Pipeline`'s state: per parameter, by its path, written atomically
with orbax-checkpoint's array serialization, from whichever processes hold each array.

Layout of ``DIR`` (one folder per saved step; the newest is what :func:`restore` reads)::

    DIR/step_00000005/meta.json              format, step, parameter paths, shapes, dtypes,
                                             the caller's ``extra`` (a data position)
    DIR/step_00000005/params/<path>/         one zarr array per parameter (caller's path)
    DIR/step_00000005/opt/<leaf path>/       optimizer leaves of one parameter, by path
    DIR/step_00000005/opt_shared/<leaf>/     optimizer leaves of no parameter (adam's count)

Every array is a ``jax.Array`` on its rank's stage mesh. Each process writes, with
``orbax.checkpoint.serialization.async_serialize``, the shards it holds of the arrays it
holds (replica 0 of each shard only): an array held whole by one process (a stage on one
process, today's multi-process layout) is written by that process; an array over a mesh that
spans several processes is written once, shard by shard, by the processes holding the shards
(the lowest one writes its zarr metadata). Arrays are stored uncompressed, a chunk per shard
(orbax's default zstd made a save about twice as slow for weights that hardly compress), and
tensorstore's file driver syncs every chunk it writes. orbax's own
``PyTreeCheckpointHandler`` is not used because it refuses, in a multi-process job, an array
that lies on one process's devices.

A restore reads, with ``async_deserialize``, only the shards of each array that this
process's devices hold in *this* pipeline's shardings: onto another stage count, mesh shape or
process count alike. A stacked parameter whose rows are held by several stages (a cut layer
loop) is stored whole, by the caller's path: each stage writes its rows into the whole zarr
array (chunks of one row, so no two writers share a chunk), and a restore reads each stage's
rows; such a checkpoint restores onto another split and onto the program unsplit.

The commit: everything goes into ``DIR/.tmp-step_...``; after every process is done (a
barrier), process 0 writes ``meta.json`` and renames the folder into place: a crash before it
leaves the previous checkpoints as they were, and a half-written folder is never read. In a
multi-process job ``DIR`` must be on a filesystem every process sees (on one host, any folder).
The optimizer's per-parameter leaves are found by the parameter path in their own path; leaves
of no parameter, such as a step count, are equal on every stage and saved from stage 0's.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import re
import shutil
import urllib.parse
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from hlopipe.errors import RuntimeConfigError

if TYPE_CHECKING:
    from hlopipe.runtime._pipeline import Pipeline, PipelineState

_STEP_RE = re.compile(r"^step_(\d+)$")
FORMAT = "hlopipe-checkpoint-2"
_SUBS = ("params", "opt", "opt_shared")


# -- arrays: orbax's serialization, one zarr array per stored path ------------------------------


def _spec(folder: str, sub: str, path: str, rows: Any = None, whole: Any = None) -> dict:
    """The tensorstore spec of the array stored under ``path``; with ``rows`` (a piece of a
    stacked parameter) a view of its rows ``rows.start:rows.stop`` of the ``whole`` aval."""
    spec: dict[str, Any] = {
        "driver": "zarr",
        "kvstore": {"driver": "file", "path": os.path.join(folder, sub, _dirname(path))},
    }
    if rows is not None:
        rest = [int(d) for d in whole.shape[1:]]
        spec["transform"] = {
            "input_inclusive_min": [0] * (1 + len(rest)),
            "input_exclusive_max": [rows.stop - rows.start, *rest],
            "output": [{"input_dimension": 0, "offset": rows.start}]
            + [{"input_dimension": i + 1} for i in range(len(rest))],
        }
    return spec


def _dirname(path: str) -> str:
    return urllib.parse.quote(path, safe="")


def _write(x: jax.Array, spec: dict, whole: Any = None) -> Coroutine[Any, Any, None]:
    """Write this process's shards of ``x`` (rows of the ``whole`` array, for a row view),
    uncompressed, a chunk per shard (per row of a shard for a row view: no two writers share
    a chunk). The lowest process holding ``x`` writes the zarr metadata (a row view's,
    identical from every writer, is written by each)."""
    from orbax.checkpoint import serialization

    devices: Any = x.sharding.device_set
    shard = [max(1, int(n)) for n in x.sharding.shard_shape(x.shape)]
    piece = "transform" in spec
    spec = dict(spec, dtype=np.dtype(x.dtype).name)
    spec["metadata"] = {
        "shape": [int(n) for n in (whole.shape if piece else x.shape)],
        "chunks": [1, *shard[1:]] if piece else shard,
        "compressor": None,
    }
    primary = None if piece else min(int(d.process_index) for d in devices)
    return serialization.async_serialize(x, spec, primary_host=primary)


async def _read(spec: dict, aval: Any, sharding: Any) -> jax.Array:
    from orbax.checkpoint import serialization

    x, _ = await serialization.async_deserialize(sharding, spec, tuple(aval.shape), aval.dtype)
    return x


def _run(coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Run ``coros`` concurrently to the end, in a thread of their own (the caller may be in
    an event loop already: a notebook)."""

    async def all_of() -> list[Any]:
        return list(await asyncio.gather(*coros))

    with ThreadPoolExecutor(1, thread_name_prefix="hlopipe-checkpoint") as pool:
        return pool.submit(asyncio.run, all_of()).result()


# -- what is stored where --------------------------------------------------------------------


class LeafKind(enum.StrEnum):
    """What an optimizer-state leaf of a stage is, for a checkpoint: a leaf of a parameter
    the stage owns (stored under ``opt/``), or of no parameter, a count (``opt_shared/``,
    from stage 0)."""

    PARAM = "param"
    SHARED = "shared"


def _opt_leaves(pipe: Pipeline, s: int, state: Any) -> list[tuple[str, LeafKind | None, Any]]:
    """(leaf path, kind, leaf) of stage ``s``'s optimizer state; kind ``None`` for a
    placeholder's (another stage's parameter: not stored). The state is over the caller's
    tree (a stacked parameter of a cut layer loop whole, on the stage owning its rows), so
    each leaf is stored under its own path."""
    view = pipe.param_store.view
    own = set(pipe.param_store.opt_owned[s])
    out: list[tuple[str, LeafKind | None, Any]] = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        q = view.param_of(path, np.shape(leaf))
        kind = LeafKind.SHARED if q is None else LeafKind.PARAM if q in own else None
        out.append((jax.tree_util.keystr(path), kind, leaf))
    return out


def _caller_params(pipe: Pipeline) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The caller's parameter paths and avals (stacked parameters whole)."""
    plan = pipe.plan
    if plan.param_pieces:
        return plan.caller_names, plan.caller_avals
    return tuple(pipe.param_names), tuple(pipe.param_avals)


def _param_at(pipe: Pipeline, p: int) -> tuple[str, Any, Any]:
    """Parameter leaf ``p``'s stored path, its rows of that array (``None``: all of it) and
    the whole array's aval."""
    plan = pipe.plan
    if not plan.param_pieces:
        return pipe.param_names[p], None, pipe.param_avals[p]
    pc = plan.param_pieces[p]
    rows = None if pc.start is None else pc
    return plan.caller_names[pc.source], rows, plan.caller_avals[pc.source]


# -- save --------------------------------------------------------------------------------------


class _Sync:
    """Barriers among the job's processes (nothing in a single process)."""

    def __init__(self, pipe: Pipeline, what: str) -> None:
        self.multi = pipe.layout.multi
        self.prefix = f"hlopipe-{what}-{pipe.comm.uid}-{pipe.comm.next_sync_id()}"
        self.timeout = pipe.recv_timeout
        self.n = 0

    def barrier(self) -> None:
        if not self.multi:
            return
        from hlopipe.runtime import distributed

        self.n += 1
        try:
            distributed.barrier(f"{self.prefix}-{self.n}", self.timeout)
        except RuntimeError as e:  # the coordination client's refusal (a JaxRuntimeError)
            distributed.raise_lost_peer(e)
            raise RuntimeConfigError(f"checkpoint barrier {self.n} failed: {e}") from e


def _writes(pipe: Pipeline, state: PipelineState, tmp: str) -> list[Any]:
    """This process's share of the checkpoint: the owner copies of the parameters and the
    optimizer state of the stages it holds (stage 0's also gives the shared leaves)."""
    out = []
    for p, r in enumerate(pipe.owner_rank):
        if pipe.layout.local(r):
            path, rows, whole = _param_at(pipe, p)
            x = state.values[r][p]
            out.append(_write(x, _spec(tmp, "params", path, rows, whole), whole))
    for s, st in enumerate(state.opt_states):
        if st is None or not pipe.layout.local(pipe.placement.rank_of(s)):
            continue
        for leaf_path, kind, leaf in _opt_leaves(pipe, s, st):
            if kind is LeafKind.PARAM:
                out.append(_write(leaf, _spec(tmp, "opt", leaf_path)))
            elif kind is LeafKind.SHARED and s == 0:
                out.append(_write(leaf, _spec(tmp, "opt_shared", leaf_path)))
    return out


def _commit(
    pipe: Pipeline, state: PipelineState, root: str, name: str, keep: int, extra: Any
) -> None:
    """Process 0's part, once every array is written: ``meta.json``, then one rename (the
    same step saved again replaces the old folder), then the oldest beyond ``keep`` go."""
    tmp, final = os.path.join(root, f".tmp-{name}"), os.path.join(root, name)
    meta = {
        "format": FORMAT,
        "step": state.step,
        "params": [
            {"path": n, "shape": list(a.shape), "dtype": np.dtype(a.dtype).name}
            for n, a in zip(*_caller_params(pipe), strict=True)
        ],
        "num_stages": pipe.staged.num_stages,
        "optimizer": pipe.optimizer is not None,
        "extra": extra,
    }
    with open(os.path.join(tmp, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(final):
        old = os.path.join(root, f".old-{name}")
        shutil.rmtree(old, ignore_errors=True)
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old)
    else:
        os.rename(tmp, final)
    _fsync_dir(root)
    steps = sorted(_steps(root))
    for k in steps[: max(len(steps) - keep, 0)]:
        shutil.rmtree(os.path.join(root, f"step_{k:08d}"), ignore_errors=True)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(
    pipe: Pipeline,
    state: PipelineState,
    directory: str | os.PathLike,
    keep: int = 2,
    extra: Any = None,
) -> str:
    """Write ``state`` under ``directory`` (see the module docstring); every process of the
    job calls it. Returns the committed folder. Keeps the newest ``keep`` checkpoints.
    ``extra``: JSON-able data committed with the arrays (process 0's), read back by
    :func:`read_extra`."""
    json.dumps(extra)  # not JSON-able: a TypeError before anything is written
    root = os.fspath(directory)
    name = f"step_{state.step:08d}"
    tmp = os.path.join(root, f".tmp-{name}")
    # process 0 commits; a process's own pipeline (inside it) is its own to commit
    first = jax.process_index() == 0 or not pipe.layout.multi
    sync = _Sync(pipe, "save")
    if first:
        os.makedirs(root, exist_ok=True)
        _recover(root)
        shutil.rmtree(tmp, ignore_errors=True)
        for sub in _SUBS:
            os.makedirs(os.path.join(tmp, sub))
    sync.barrier()
    _run(_writes(pipe, state, tmp))
    sync.barrier()
    if first:
        _commit(pipe, state, root, name, keep, extra)
    sync.barrier()
    return os.path.join(root, name)


def _recover(root: str) -> None:
    """What a save killed part way left under ``root``, put right before the next save: a
    ``.tmp-step_*`` folder (arrays written, never committed) goes; a ``.old-step_*`` folder (a
    committed checkpoint moved aside to be replaced by the same step saved again, the kill
    between the two renames) is moved back when its step has no folder, else goes."""
    for n in os.listdir(root):
        path = os.path.join(root, n)
        if n.startswith(".tmp-step_"):
            shutil.rmtree(path, ignore_errors=True)
        elif n.startswith(".old-step_"):
            final = os.path.join(root, n[len(".old-") :])
            if os.path.exists(os.path.join(path, "meta.json")) and not os.path.exists(final):
                os.rename(path, final)
            else:
                shutil.rmtree(path, ignore_errors=True)


# -- restore -----------------------------------------------------------------------------------


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


def read_extra(directory: str | os.PathLike, step: int | None = None) -> Any:
    """The ``extra`` saved with checkpoint ``step`` (the newest: ``None``) under
    ``directory``; ``None`` when it was saved without."""
    root = os.fspath(directory)
    step = latest_step(root) if step is None else step
    if step is None:
        raise RuntimeConfigError(f"no checkpoint under {root!r} (no step_<n>/meta.json there)")
    try:
        with open(os.path.join(root, f"step_{step:08d}", "meta.json")) as f:
            return json.load(f).get("extra")
    except (OSError, ValueError) as e:
        raise RuntimeConfigError(
            f"{root}/step_{step:08d}/meta.json is not readable ({e}): the checkpoint is damaged"
        ) from e


def _check_processes(pipe: Pipeline) -> None:
    """Refuse a job with a process that holds no stage of this pipeline: it could not train
    on from the checkpoint."""
    n = jax.process_count()
    if n > 1 and not any(pipe.layout.local(r) for r in range(pipe.placement.num_ranks)):
        raise RuntimeConfigError(
            f"process {jax.process_index()} of {n} holds no stage of this pipeline "
            f"({pipe.staged.num_stages} stages on {pipe.placement.num_ranks} ranks of "
            f"{len(pipe.devices)} devices): restore with fewer processes, or give every "
            "process a rank (a stage_mesh_shape or num_stages that uses every process's "
            "devices)"
        )


def _checked_meta(pipe: Pipeline, root: str, step: int | None) -> tuple[str, dict]:
    """The folder of checkpoint ``step`` (the newest: ``None``) and its meta, checked to be
    an hlopipe checkpoint of this pipeline's parameters."""
    if step is None:
        step = latest_step(root)
        if step is None:
            raise RuntimeConfigError(
                f"no checkpoint under {root!r} (no step_<n>/meta.json there): save one with "
                "Pipeline.save (hlopipe train --save) first, or give the right folder"
            )
    folder = os.path.join(root, f"step_{step:08d}")
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise RuntimeConfigError(f"no checkpoint of step {step} under {root!r}") from None
    except (OSError, ValueError) as e:
        raise RuntimeConfigError(
            f"{folder}/meta.json is not readable ({e}): the checkpoint is damaged; restore an "
            "older step (restore(..., step=k)) or save again"
        ) from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise RuntimeConfigError(
            f"{folder}: not an hlopipe checkpoint of format {FORMAT!r} (found {got!r}); "
            "it was written by another tool or version"
        )
    saved = {e["path"]: (tuple(e["shape"]), e["dtype"]) for e in meta["params"]}
    want = {
        n: (tuple(a.shape), np.dtype(a.dtype).name)
        for n, a in zip(*_caller_params(pipe), strict=True)
    }
    if saved != want:
        diff = sorted(set(saved.items()) ^ set(want.items()))[:4]
        raise RuntimeConfigError(
            f"{folder}: saved from another program: its parameters do not match this "
            f"pipeline's (first differences, path/shape/dtype: {diff}); restore it into a "
            "pipeline of the program that saved it"
        )
    return folder, meta


def _param_reads(pipe: Pipeline, folder: str) -> tuple[list[tuple[int, int]], list[Any]]:
    """(rank, parameter) and the read of each parameter copy this process's ranks hold."""
    keys, reads = [], []
    for p in range(pipe.num_params):
        path, rows, whole = _param_at(pipe, p)
        for r in pipe.holders[p]:
            if pipe.layout.local(r):
                spec = _spec(folder, "params", path, rows, whole)
                keys.append((r, p))
                reads.append(_read(spec, pipe.param_avals[p], pipe.plan.param_sharding(r, p)))
    return keys, reads


def _opt_reads(pipe: Pipeline, folder: str, s: int, template: Any) -> list[Any]:
    """Stage ``s``'s optimizer leaves: a read per stored leaf, the placeholders as they are."""
    out: list[Any] = []
    for leaf_path, kind, leaf in _opt_leaves(pipe, s, template):
        if kind is None:  # a placeholder of another stage's parameter
            out.append(leaf)
            continue
        sub = "opt" if kind is LeafKind.PARAM else "opt_shared"
        if not os.path.isdir(os.path.join(folder, sub, _dirname(leaf_path))):
            raise RuntimeConfigError(
                f"{folder}: no optimizer state {leaf_path!r}: it was saved with another "
                "optimizer, or without one; restore with the optimizer that saved it"
            )
        out.append(_read(_spec(folder, sub, leaf_path), leaf, leaf.sharding))
    return out


def _gather(folder: str, reads: list[Any]) -> list[Any]:
    """Run the reads; a missing or damaged array is named with what to do."""
    try:
        return _run([r for r in reads if asyncio.iscoroutine(r)])
    except (ValueError, OSError) as e:
        raise RuntimeConfigError(
            f"{folder}: an array of the checkpoint is missing or damaged ({e}); restore "
            "an older step (restore(..., step=k)) or save again"
        ) from e


def restore(pipe: Pipeline, directory: str | os.PathLike, step: int | None = None) -> PipelineState:
    """The state saved under ``directory`` (the newest, or ``step``), placed on this
    pipeline's stages; each process reads the shards its devices hold."""
    _check_processes(pipe)
    folder, meta = _checked_meta(pipe, os.fspath(directory), step)
    keys, reads = _param_reads(pipe, folder)
    values: list[dict[int, jax.Array]] = [{} for _ in range(pipe.placement.num_ranks)]
    for (r, p), x in zip(keys, _gather(folder, reads), strict=True):
        values[r][p] = x
    # a fresh optimizer state of each local stage is the template its saved leaves fill
    opt_states = pipe.param_store.init_opt_states(values)
    for s, template in enumerate(opt_states):
        if template is None:
            continue
        leaves = _opt_reads(pipe, folder, s, template)
        it = iter(_gather(folder, leaves))
        leaves = [next(it) if asyncio.iscoroutine(x) else x for x in leaves]
        treedef = jax.tree_util.tree_structure(template)
        opt_states[s] = jax.tree_util.tree_unflatten(treedef, leaves)
    return pipe.param_store.state(values, opt_states, int(meta["step"]))


def read_params(directory: str | os.PathLike, step: int | None = None) -> list[tuple[str, Any]]:
    """The parameters of checkpoint ``step`` (the newest: ``None``) under ``directory`` as
    host arrays, with their paths, in the order the pipeline that saved it flattened them
    (``hlopipe train``: the program's argument order, each named by its argument). No
    pipeline is needed: what ``hlopipe export-params`` and ``--params CKPT`` read.

    Raises:
      RuntimeConfigError: no checkpoint there, not an hlopipe checkpoint, or an array
        missing or damaged.
    """
    from jax.sharding import SingleDeviceSharding

    root = os.fspath(directory)
    step = latest_step(root) if step is None else step
    if step is None:
        raise RuntimeConfigError(
            f"no checkpoint under {root!r} (no step_<n>/meta.json there): train with "
            "hlopipe train --save DIR (Pipeline.save) first, or give the right folder"
        )
    folder = os.path.join(root, f"step_{step:08d}")
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise RuntimeConfigError(f"{folder}/meta.json is not readable ({e})") from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise RuntimeConfigError(f"{folder}: not an hlopipe checkpoint of format {FORMAT!r}")
    host = SingleDeviceSharding(jax.local_devices(backend="cpu")[0])
    entries = meta["params"]
    reads = [
        _read(
            _spec(folder, "params", e["path"]),
            jax.ShapeDtypeStruct(tuple(e["shape"]), np.dtype(e["dtype"])),
            host,
        )
        for e in entries
    ]
    arrays = _gather(folder, reads)
    return [(e["path"], np.asarray(x)) for e, x in zip(entries, arrays, strict=True)]
