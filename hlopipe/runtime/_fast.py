"""``StepRunner``: a :class:`StepProgram` fed with one step's parameters and batch, and run by
one of its interpreters.

Per step it does only what depends on the step's values, and waits for no device:

* the parameters' arrays into their slots;
* the batch's whole leaves to the ranks that read them (nothing is sliced or copied on the
  host: a NumPy leaf is copied in the prologue's call, an array already laid out there is not
  moved, one on one device bound for a one-device rank moves by jaxlib's batched copy, others
  in one ``jax.device_put``); across processes, a process's own rows
  (``Pipeline.process_rows``) shaped ``(microbatches, microbatch, ...)``, each device given
  its rows of every microbatch, so that no row crosses between processes;
* per rank one *prologue* executable that slices the microbatches on the device and makes the
  stages' zero gradient accumulators in the same dispatch (no zeroing dispatch of its own);
* the program: the single controller (``_stream.py``), or the threaded interpreter
  (``profile``, and across processes).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from hlopipe._jax_compat import device_to_device
from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime._comm import Comm
from hlopipe.runtime._executor import StepResult
from hlopipe.runtime._multiprocess import threaded_run
from hlopipe.runtime._plan import PipelinePlan
from hlopipe.runtime._program import StepProgram
from hlopipe.runtime._stream import Stream, gather


class _Prologue:
    """One rank's per-step prologue: whole batch leaves in, microbatch slices and zero
    accumulators out, in one compiled executable."""

    def __init__(
        self, plan: PipelinePlan, prog: StepProgram, rank: int, *, by_microbatch: bool = False
    ) -> None:
        b = plan.microbatch_size
        self.rank = rank
        self.by_microbatch = by_microbatch
        self.slices = sorted((leaf, i, k) for (leaf, r, i), k in prog.batch_slots.items()
                             if r == rank)  # fmt: skip
        self.leaves = sorted({leaf for leaf, _, _ in self.slices})
        pos = {leaf: n for n, leaf in enumerate(self.leaves)}
        whole_sharding = self.by_microbatch_sharding if by_microbatch else self._whole
        self.in_shardings = [whole_sharding(plan, rank, leaf) for leaf in self.leaves]
        outs, out_sh = [], []
        for leaf, i, _ in self.slices:
            a = plan.batch_avals[leaf]
            mb = jax.ShapeDtypeStruct((b, *a.shape[1:]), a.dtype)
            outs.append((pos[leaf], i))
            out_sh.append(plan.placement.data(rank, mb))
        zeros = []
        self.acc_slots: list[int] = []
        for ex in plan.execs:
            if ex.rank == rank and ex.stage.index in prog.acc_slots:
                zeros += list(ex.acc_avals)
                out_sh += ex.acc_shardings
                self.acc_slots += prog.acc_slots[ex.stage.index]

        def prologue(*whole: Any) -> tuple[Any, ...]:
            if by_microbatch:  # each device's rows of microbatch i are its rows of whole[i]
                parts = [whole[j][i] for j, i in outs]
            else:
                parts = [whole[j][i * b : (i + 1) * b] for j, i in outs]
            return (*parts, *(jnp.zeros(a.shape, a.dtype) for a in zeros))

        args = [jax.ShapeDtypeStruct(self.whole_shape(plan, leaf, by_microbatch),
                                     plan.batch_avals[leaf].dtype)
                for leaf in self.leaves]  # fmt: skip
        jitted = jax.jit(
            prologue,
            in_shardings=tuple(self.in_shardings),
            out_shardings=tuple(out_sh),
            keep_unused=True,
        )
        self._jitted, self._args = jitted, args
        self.out_slots = [k for _, _, k in self.slices] + self.acc_slots

    @functools.cached_property
    def fn(self) -> Any:
        """The compiled prologue (compiled at its first use, or when the runner asks)."""
        return self._jitted.lower(*self._args).compile()

    @staticmethod
    def whole_shape(plan: PipelinePlan, leaf: int, by_microbatch: bool) -> tuple[int, ...]:
        """A whole batch leaf's shape: ``(batch, ...)``, or ``(microbatches, microbatch, ...)``
        ``by_microbatch``."""
        shape = tuple(plan.batch_avals[leaf].shape)
        if by_microbatch:
            return (plan.num_microbatches, plan.microbatch_size, *shape[1:])
        return shape

    @staticmethod
    def by_microbatch_sharding(plan: PipelinePlan, rank: int, leaf: int) -> NamedSharding:
        """A whole batch leaf shaped ``(microbatches, microbatch, ...)`` laid out so that each
        device holds, of every microbatch, the rows the stage's compute reads there: its
        second axis split as a microbatch is over the ``"data"`` axis. Slicing microbatch
        ``i`` out of it moves no row between devices (nor processes)."""
        a = plan.batch_avals[leaf]
        mb = jax.ShapeDtypeStruct((plan.microbatch_size, *a.shape[1:]), a.dtype)
        spec = plan.placement.data(rank, mb).spec
        return NamedSharding(plan.placement.meshes[rank], PartitionSpec(None, *spec))

    @staticmethod
    def _whole(plan: PipelinePlan, rank: int, leaf: int) -> Any:
        """A whole batch leaf's layout on ``rank``: split over its ``"data"`` axis as the
        microbatches are, else replicated."""
        a = plan.batch_avals[leaf]
        mb = jax.ShapeDtypeStruct((plan.microbatch_size, *a.shape[1:]), a.dtype)
        spec = plan.placement.data(rank, mb).spec
        return NamedSharding(plan.placement.meshes[rank], PartitionSpec(*spec))


def _device_block(mine: Any, column: dict[int, int], b: int, index: Any) -> Any:
    """A device's block ``index`` of a ``(microbatches, b, ...)`` leaf, from this process's
    rows ``mine`` (``column``: a row's offset in a microbatch -> its column in ``mine``)."""
    lo, hi, _ = index[1].indices(b)
    j = column[lo]
    return mine[(index[0], slice(j, j + hi - lo), *index[2:])]


class StepRunner:
    """The step of one mode for this process's ranks (built once per pipeline and mode).

    Everything a step does that does not depend on its values is decided here, once: which
    parameter goes into which slot, which batch leaf goes to which prologue, which slots hold
    the results; per step :meth:`fill` and :meth:`run` only move the step's own values."""

    def __init__(self, plan: PipelinePlan, prog: StepProgram, comm: Comm) -> None:
        self.plan = plan
        self.prog = prog
        self.comm = comm
        local = plan.layout.local
        prog.place_consts(local)
        self.fns = prog.resolve(local)
        self.stream = None if plan.layout.multi else Stream(prog, self.fns)
        # a register file holding the constants (copied per step; the rest is filled in)
        self._blank: list[Any] = [None] * prog.n
        for k, (r, v) in prog.const.items():
            if local(r):
                self._blank[k] = v
        self.param_slots = [(k, r, p) for (r, p), k in prog.param_slots.items() if local(r)]
        ranks = sorted({ex.rank for ex in plan.execs if local(ex.rank)})
        self.prologues = [_Prologue(plan, prog, r) for r in ranks]
        self.prologues = [p for p in self.prologues if p.out_slots]
        self.puts = [(n, leaf, sh) for n, p in enumerate(self.prologues)
                     for leaf, sh in zip(p.leaves, p.in_shardings, strict=True)]  # fmt: skip
        # per put, its device where a leaf on one device may be copied there by jaxlib's
        # batched copy (a one-process job, a one-device target), else None
        one_process = jax.process_count() == 1
        self._put_device = [next(iter(sh.device_set))
                            if one_process and len(sh.device_set) == 1 else None
                            for _, _, sh in self.puts]  # fmt: skip
        self._copiers: dict[tuple[int, ...], Any] = {}  # puts -> their batched copy
        self.dtypes = [a.dtype for a in plan.batch_avals]
        self._shapes = [(tuple(a.shape), a.dtype) for a in plan.batch_avals]
        self._by_microbatch: list[_Prologue] | None = None
        self.rows = self._process_rows()
        if len(self.rows) == plan.batch_size:
            # compiled now, with the rest of the step; a process holding part of the batch
            # compiles the prologues of the layout its steps use, at their first use
            for pro in self.prologues:
                pro.fn  # noqa: B018 (compiles it)
        # the results' slots, read in one call each
        self._ranks = tuple(prog.plan.schedule.actions)
        self._out_keys = tuple(prog.output_slots)
        self._out_get = gather(tuple(prog.output_slots.values()))
        self._acc_gets = [gather(tuple(prog.acc_slots.get(ex.stage.index, [])))
                          for ex in prog.plan.execs]  # fmt: skip

    def _process_rows(self) -> tuple[int, ...]:
        """The rows of the full batch that this process's devices hold, ascending: of every
        microbatch, the rows its devices compute on there (a stage mesh whose ``"data"`` axis
        spans processes gives each process its shards of each microbatch), the same for every
        batch leaf of every rank it runs; else every row."""
        plan = self.plan
        m, b = plan.num_microbatches, plan.microbatch_size
        every = tuple(range(plan.batch_size))
        found: set[tuple[int, ...]] = set()
        for n, leaf, sh in self.puts:
            if sh.is_fully_addressable or not self._shapes[leaf][0]:
                found.add(every)
                continue
            by_mb = _Prologue.by_microbatch_sharding(plan, self.prologues[n].rank, leaf)
            held: set[int] = set()
            shape = _Prologue.whole_shape(plan, leaf, by_microbatch=True)
            for index in by_mb.addressable_devices_indices_map(shape).values():
                lo, hi, _ = index[1].indices(b)  # type: ignore[index]  # never None here
                held.update(range(lo, hi))
            found.add(tuple(i * b + o for i in range(m) for o in sorted(held)))
        return found.pop() if len(found) == 1 else every

    def fill(self, state: Any, batch: Any, *, local: bool = False) -> list[Any]:
        """A register file holding the step's inputs (nothing waited for); ``local``: the
        batch is this process's rows (:attr:`rows`) of the full batch."""
        if local and len(self.rows) != self.plan.batch_size:
            prologues = self._local_prologues()
            args = self._local_args(batch, prologues)
        else:
            prologues = self.prologues
            args = self._prologue_args(self._leaves(batch))
        regs = self._blank.copy()
        values = state.values
        for k, r, p in self.param_slots:
            regs[k] = values[r][p]
        for pro, a in zip(prologues, args, strict=True):
            got = pro.fn(*a)
            for k, v in zip(pro.out_slots, got, strict=True):
                regs[k] = v
        return regs

    def _local_prologues(self) -> list[_Prologue]:
        """The prologues taking each batch leaf as ``(microbatches, microbatch, ...)``, each
        device holding its rows of every microbatch (built at the first process-local step)."""
        if self._by_microbatch is None:
            self._by_microbatch = [
                _Prologue(self.plan, self.prog, p.rank, by_microbatch=True) for p in self.prologues
            ]
        return self._by_microbatch

    def _prologue_args(self, leaves: list[Any]) -> list[list[Any]]:
        """Per prologue, its whole batch leaves. A NumPy leaf goes to the prologue as it is
        (copied in its call, on the calling thread: a device_put first would wait for a copy
        thread); a JAX array already laid out there is used as it is; the rest move in one
        batched copy (arrays on one device bound for one device, in one process: the copy
        ``jax.device_put`` makes, without its Python checks) and one ``jax.device_put``."""
        args: list[list[Any]] = [[] for _ in self.prologues]
        moves: list[tuple[int, int, Any, Any]] = []
        copies: list[tuple[int, int, Any, int]] = []
        dtypes = self.dtypes
        for q, (n, leaf, sh) in enumerate(self.puts):
            x = leaves[leaf]
            if type(x) is np.ndarray and x.dtype == dtypes[leaf]:
                args[n].append(x)
                continue
            host = isinstance(x, np.ndarray) and x.dtype == dtypes[leaf]
            if not host and not sh.is_fully_addressable and not isinstance(x, np.ndarray):
                # a mesh spanning processes: each process gives its own shards of its copy
                x, host = np.asarray(x), x.dtype == dtypes[leaf]
            if not host and not (
                isinstance(x, jax.Array) and x.sharding.is_equivalent_to(sh, x.ndim)
            ):
                if (
                    self._put_device[q] is not None
                    and isinstance(x, jax.Array)
                    and len(x.sharding.device_set) == 1
                ):
                    copies.append((n, len(args[n]), x, q))
                else:
                    moves.append((n, len(args[n]), x, sh))
            args[n].append(x)
        if copies:
            key = tuple(c[3] for c in copies)
            copy = self._copiers.get(key)
            if copy is None:
                copy = self._copiers[key] = device_to_device(
                    [self._put_device[q] for q in key], [self.puts[q][2] for q in key]
                )
            for (n, j, _, _), x in zip(copies, copy(*(c[2] for c in copies)), strict=True):
                args[n][j] = x
        if moves:
            moved = jax.device_put([m[2] for m in moves], [m[3] for m in moves])
            for (n, j, _, _), x in zip(moves, moved, strict=True):
                args[n][j] = x
        return args

    def _local_args(self, batch: Any, prologues: list[_Prologue]) -> list[list[Any]]:
        """The ``prologues``' arguments from this process's rows (:attr:`rows`, in their
        order) of the full batch: global arrays over the stage meshes, each device given its
        rows of every microbatch from this process's own, so no row moves between processes
        (no process holds the whole batch)."""
        leaves, treedef = jax.tree_util.tree_flatten(batch)
        if treedef != self.plan.batch_treedef:
            raise RuntimeConfigError(
                f"batch has structure {treedef}, the pipeline was built for "
                f"{self.plan.batch_treedef}"
            )
        m, b = self.plan.num_microbatches, self.plan.microbatch_size
        rows = len(self.rows)
        # this process's rows of a microbatch: offsets in it -> their column in its own rows
        column = {o: j for j, o in enumerate(self.rows[: rows // m])}
        args: list[list[Any]] = [[] for _ in prologues]
        for n, pro in enumerate(prologues):
            for leaf, sh in zip(pro.leaves, pro.in_shardings, strict=True):
                x = np.asarray(leaves[leaf], dtype=self.dtypes[leaf])
                shape = self._shapes[leaf][0]
                if x.shape != (rows, *shape[1:]):
                    raise RuntimeConfigError(
                        f"batch leaf {leaf} is {list(x.shape)}; this process feeds {rows} rows "
                        f"of the full batch {list(shape)} (Pipeline.process_rows): give "
                        f"{[rows, *shape[1:]]}"
                    )
                mine = x.reshape(m, rows // m, *shape[1:])
                block = functools.partial(_device_block, mine, column, b)
                args[n].append(jax.make_array_from_callback((m, b, *shape[1:]), sh, block))
        return args

    def _leaves(self, batch: Any) -> list[Any]:
        """The batch's leaves, checked against the pipeline's batch: a quick look at the
        structure, shapes and dtypes; anything else goes through ``PipelinePlan.check_batch``
        (which converts, or refuses with a clear error)."""
        leaves, treedef = jax.tree_util.tree_flatten(batch)
        if treedef == self.plan.batch_treedef and len(leaves) == len(self._shapes):
            for x, (shape, dtype) in zip(leaves, self._shapes):  # noqa: B905 (lengths checked)
                if getattr(x, "shape", None) != shape or getattr(x, "dtype", None) != dtype:
                    break
            else:
                return leaves
        return self.plan.check_batch(batch)

    def run(self, state: Any, batch: Any, *, sync: bool = False, local: bool = False) -> StepResult:
        """One step: the single controller; ``sync`` (or across processes) the threaded
        interpreter, every instruction waited for and timed when ``sync``; ``local``: see
        :meth:`fill`."""
        regs = self.fill(state, batch, local=local)
        if self.stream is not None and not sync:
            seconds = self.stream.run(regs)
            return StepResult(
                events={r: [] for r in self._ranks},
                outputs=dict(zip(self._out_keys, self._out_get(regs), strict=True)),
                acc=[list(get(regs)) for get in self._acc_gets],
                peak_live=dict(self.prog.peak_live),
                wall_ms=seconds * 1e3,
                dispatch_ms=seconds * 1e3,
            )
        run = threaded_run(self.comm, self.prog, self.fns, regs, sync=sync)
        result = run.run()
        self.comm.last_transfer_seconds = getattr(run, "transfer_seconds", 0.0)
        self.comm.last_transfer_bytes = getattr(run, "transfer_bytes", 0)
        return result
