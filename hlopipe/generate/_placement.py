"""Where a generator's stages run, and how values move between them.

Every placement the training runtime has, through the runtime's own pieces: each stage on its
own N-D device mesh (``runtime.place``: ``stage_mesh_shape``, ``stage_mesh_axes``; one device
per stage by default), parameters laid out by ``param_specs`` or the program's own sharding
annotations (checked as the ``Pipeline`` checks them), per-group values (activations, the
token) split on the mesh's ``"data"`` axis when it divides the group's batch, and values
moving between stages through ``runtime.move_group``: a ``device_put`` inside a process, one
XLA collective between two processes of a ``jax.distributed`` job (``hlopipe launch``), which
both processes issue in the same order. Every process runs the same driver loop over every
stage and every move, computes its own stages only, and calls every move (a bystander's call
returns at once), so the order of the collectives is the same everywhere.

A stage's state (its KV cache) is laid out as sharding propagation chooses it once, with the
parameters pinned (one compile with the state free), then pinned as both input and output of
the stage's executable, which donates it: the cache is updated in place on its own mesh and
never moves.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding

from hlopipe.errors import RuntimeConfigError
from hlopipe.generate._plan import InputKind, StagePlan
from hlopipe.runtime import (
    Links,
    ProcessLayout,
    host_copy,
    move_group,
    on_every_process,
    param_spec_leaves,
    place,
)
from hlopipe.stages import arg_partition_specs


@dataclass(eq=False)
class StagePlacement:
    """The stages' meshes (one rank per stage), which process holds each, and the compiled
    cross-process transfers (``runtime.Links``) for as long as the generator lives."""

    placement: Any
    layout: ProcessLayout
    links: Links = field(init=False)

    def __post_init__(self) -> None:
        self.links = Links.for_layout(self.layout)

    @property
    def multi(self) -> bool:
        return self.layout.multi

    def local(self, stage: int) -> bool:
        return self.layout.local(stage)

    def mesh(self, stage: int) -> Any:
        return self.placement.meshes[stage]

    def devices(self, stage: int) -> list[Any]:
        return list(self.placement.meshes[stage].devices.flat)

    def replicated(self, stage: int) -> NamedSharding:
        return self.placement.replicated(stage)

    def data(self, stage: int, aval: Any) -> NamedSharding:
        """A per-group value on ``stage``: split on its batch axis over ``"data"``."""
        return self.placement.data(stage, aval)

    def put(self, value: Any, stage: int, sharding: Any) -> Any:
        """A host value onto ``stage`` (``None`` in a process that does not hold it)."""
        return jax.device_put(value, sharding) if self.local(stage) else None

    def move(self, value: Any, src: int, dst: int, aval: Any, sharding: Any) -> Any:
        """``value`` (held by stage ``src``; ``None`` where not local) to ``sharding`` on
        stage ``dst``. Every process calls it, in the same order."""
        if src == dst:
            if value is None or value.sharding.is_equivalent_to(sharding, len(aval.shape)):
                return value
            return jax.device_put(value, sharding)
        moved = move_group(
            self.links, [value] if self.local(src) else None, self.placement, self.layout,
            src, dst, [aval], [sharding],
        )  # fmt: skip
        return None if moved is None else moved[0]

    def move_all(
        self, values: Sequence[Any], src: int, dst: int, avals: Sequence[Any], shardings: Any
    ) -> Sequence[Any]:
        """:meth:`move` of several values at once: one collective between two processes
        (``None`` for each where this process does not hold ``dst``)."""
        if src == dst:
            return [self.move(*vas) for vas in zip(values, [src] * len(avals), [dst] * len(avals),
                                                  avals, shardings, strict=True)]  # fmt: skip
        moved = move_group(
            self.links, list(values) if self.local(src) else None, self.placement, self.layout,
            src, dst, list(avals), list(shardings),
        )  # fmt: skip
        return [None] * len(avals) if moved is None else moved

    def host(self, value: Any, stage: int) -> np.ndarray:
        """``value`` (on ``stage``'s mesh) whole on the host of a process holding the stage
        (a collective among its processes when the mesh spans them and splits the value)."""
        return host_copy(value, self.placement, stage)

    def everywhere(self, value: np.ndarray | None, stage: int, aval: Any) -> np.ndarray:
        """A host array known to the processes holding ``stage`` (``None`` elsewhere), in
        every process of the job (``runtime.on_every_process``: one transfer to each other
        process, in process order)."""
        return on_every_process(self.links, self.placement, self.layout, value, stage, aval)


def place_stages(
    devices: Sequence[Any] | None,
    num_stages: int,
    batch: int,
    stage_mesh_shape: Any,
    stage_mesh_axes: Sequence[str] | None,
) -> StagePlacement:
    """Stage ``s`` on the ``s``-th group of ``devices``, each group a mesh of
    ``stage_mesh_shape`` (a tuple, or one per stage). Default devices: in one process all of
    them; in a job of several, the first devices of each process, as many stages on each."""
    shape = (1,) if stage_mesh_shape is None else stage_mesh_shape
    devs = list(devices) if devices is not None else _spread(num_stages, shape)
    pl = place(
        devs, shape, num_stages, tuple(range(num_stages)), batch_size=batch,
        schedule_name=f"{num_stages} stages", stage_mesh_axes=stage_mesh_axes,
    )  # fmt: skip
    return StagePlacement(pl, ProcessLayout.of(pl, "generator"))


def _spread(num_stages: int, shape: Any) -> list[Any]:
    """The job's devices for ``num_stages`` stage meshes, the same number in every process
    (all of them, in process order, when a stage's mesh is larger than a process's devices:
    each mesh then spans whole processes)."""
    n = jax.process_count()
    if n == 1 or isinstance(shape, list) or math.prod(shape) > len(jax.local_devices()):
        return list(jax.devices())
    if num_stages % n:
        raise RuntimeConfigError(
            f"{num_stages} stages cannot be spread evenly over {n} processes; give a multiple "
            f"of {n} stages or pass devices="
        )
    per = num_stages // n * math.prod(shape)
    mine: dict[int, list[Any]] = {}
    for d in jax.devices():
        mine.setdefault(int(d.process_index), []).append(d)
    return [d for q in sorted(mine) for d in mine[q][:per]]


def parameter_specs(
    params: Any, param_specs: Any, program: Any, staged: Any, sp: StagePlacement, count: int
) -> list[Any]:
    """One ``PartitionSpec`` (``None``: propagation decides) per parameter, checked against
    every stage's mesh as the ``Pipeline`` checks them: ``param_specs`` (a pytree of
    ``params``' structure), else the program's own annotations on a mesh of more than one
    device, else replicated."""
    avals = [jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype) for x in _leaves(params)]
    treedef = jax.tree_util.tree_structure(params)
    flat = None
    if param_specs is None:
        mesh = sp.placement.meshes[0]
        flat = annotated_specs(program, [(n, int(s)) for n, s in dict(mesh.shape).items()], count)
    return param_spec_leaves(param_specs, treedef, avals, staged.in_paths, sp.placement, flat)


def annotated_specs(
    program: Any, mesh_axes: Sequence[tuple[str, int]], count: int
) -> list[Any] | None:
    """The program's own sharding annotations of its first ``count`` arguments (the
    parameters) over a stage mesh of ``mesh_axes`` (``(name, size)`` each): the parameters'
    layout without ``param_specs``. ``None`` on a mesh of one device, or when the program
    carries none (they are then replicated)."""
    if math.prod(size for _, size in mesh_axes) <= 1 or not hasattr(program, "entry_func"):
        return None
    got = arg_partition_specs(program, list(mesh_axes))
    return None if got is None else list(got[:count])


def _leaves(params: Any) -> list[Any]:
    return jax.tree_util.tree_leaves(params)


def check_params(params: Any, roles: Any, source: str) -> dict[int, Any]:
    """The parameters by flat argument, each checked against the program's argument."""
    leaves = jax.tree_util.tree_leaves_with_path(params)
    want = roles.parameters
    if len(leaves) != len(want):
        raise RuntimeConfigError(
            f"{source}: params has {len(leaves)} leaves, the program takes {len(want)} "
            "parameters (its first argument)"
        )
    by_arg: dict[int, Any] = {}
    for (path, leaf), r in zip(leaves, want, strict=True):
        shape, dtype = tuple(np.shape(leaf)), str(np.asarray(leaf).dtype)
        if (shape, dtype) != (tuple(r.shape), r.dtype):
            raise RuntimeConfigError(
                f"{source}: params{jax.tree_util.keystr(path)} is {dtype}{list(shape)} but "
                f"argument {r.index} ({r.path}) is {r.dtype}{list(r.shape)}"
            )
        by_arg[r.index] = leaf
    return by_arg


def requested_shardings(
    roles: Any, specs: list[Any], sp: StagePlacement, stage: int
) -> dict[int, Any]:
    """``{parameter argument: NamedSharding on the stage's mesh, or None}``."""
    mesh = sp.mesh(stage)
    return {
        r.index: None if spec is None else NamedSharding(mesh, spec)
        for r, spec in zip(roles.parameters, specs, strict=True)
    }


def place_params(
    by_arg: dict[int, Any], plans: list[StagePlan], compiled: list[Any], reuse: Any = ()
) -> list[dict[int, Any]]:
    """Each local stage's parameters in the shardings its executable takes (``reuse``: the
    decode step's placed parameters, used again where the layout is the same)."""
    placed: list[dict[int, Any]] = []
    for p, c in zip(plans, compiled, strict=True):
        mine: dict[int, Any] = {}
        for i, (k, a) in enumerate(p.inputs if c is not None else ()):
            if k is not InputKind.PARAM:
                continue
            sh = c.in_shardings[i]
            again = [d[a] for d in reuse if a in d and d[a].sharding == sh]
            mine[a] = again[0] if again else jax.device_put(by_arg[a], sh)
        placed.append(mine)
    return placed


@dataclass(eq=False)
class CompiledStage:
    """A stage's executable on its mesh and the shardings of its inputs and outputs."""

    fn: Any
    in_shardings: list[Any]
    out_shardings: list[Any]


@dataclass(frozen=True, eq=False)
class PlacedStages:
    """What a generator compiled and put on the devices, shared with its prefill and its
    sessions: per stage its executable (``None``: a stage another process computes), its
    placed parameters ``{argument: array}`` and the shardings its state arguments take; and
    the parameters on the host ``{argument: value}`` while the generator is built (a prefill
    places its own from them; emptied once every prefill is placed)."""

    compiled: tuple[CompiledStage | None, ...]
    params: tuple[dict[int, Any], ...]
    state_shardings: tuple[dict[int, Any], ...]
    host_params: Mapping[int, Any]

    def without_host_params(self) -> PlacedStages:
        """The same placement with the host copy of the parameters let go."""
        return replace(self, host_params={})


def compile_stages(
    stages: Sequence[Any],
    plans: list[StagePlan],
    sp: StagePlacement,
    roles: Any,
    specs: list[Any],
    state_sh: Sequence[dict[int, Any]] | None = None,
) -> list[CompiledStage | None]:
    """Each stage of ``stages`` this process computes compiled on its mesh by
    :func:`compile_stage` (``None``: another process's), its parameters asked for as
    ``specs`` say and its state as ``state_sh[stage]`` when given."""
    return [
        compile_stage(st, p, sp, requested_shardings(roles, specs, sp, p.stage),
                      None if state_sh is None else state_sh[p.stage])
        if sp.local(p.stage) else None
        for st, p in zip(stages, plans, strict=True)
    ]  # fmt: skip


def input_sharding(sp: StagePlacement, stage: int, kind: InputKind, aval: Any) -> Any:
    """What a stage's executable takes for an input that may come from elsewhere (feedback,
    a received value, the position, a prompt): fixed by the placement alone, so every process
    knows it for every stage; ``None`` for parameters and state (decided per stage)."""
    if kind in (InputKind.FEEDBACK, InputKind.RECV):
        return sp.data(stage, aval)
    if kind is InputKind.INPUT:
        return sp.data(stage, aval) if aval.shape else sp.replicated(stage)
    return None


def compile_stage(
    st: Any,
    plan: StagePlan,
    sp: StagePlacement,
    param_sh: dict[int, Any],
    state_sh: dict[int, Any] | None = None,
) -> CompiledStage:
    """``st`` compiled on its stage's mesh, its state donated.

    Parameters take ``param_sh`` (``None``: propagation decides); the state takes
    ``state_sh`` when given (the prefill writes the decode step's layout), else what
    propagation chooses with it left free, pinned on the state's input and output alike (a
    second compile only when propagation chose two layouts for one state argument).
    """
    s = plan.stage
    avals = [*st.param_avals, *(r.aval for r in st.receives)]
    state_sh = dict(state_sh or {})
    ins = []
    for (kind, key), a in zip(plan.inputs, avals, strict=True):
        pinned = param_sh.get(key) if kind is InputKind.PARAM else state_sh.get(key)
        ins.append(
            pinned if kind in (InputKind.PARAM, InputKind.STATE) else input_sharding(sp, s, kind, a)
        )
    outs = [
        state_sh.get(plan.state_out[j]) if j in plan.state_out else sp.data(s, a)
        for j, a in enumerate(st.outputs)
    ]
    fn = _compile(st, avals, ins, outs, plan.donate)
    chosen_in, chosen_out = _flat(fn.input_shardings[0]), _flat(fn.output_shardings)
    chosen = {key: chosen_in[i] for i, (k, key) in enumerate(plan.inputs) if k is InputKind.STATE}
    for j, arg in plan.state_out.items():
        chosen.setdefault(arg, chosen_out[j])
        if not chosen_out[j].is_equivalent_to(chosen[arg], len(st.outputs[j].shape)):
            # two layouts of one state: pin the input's on both sides and compile again
            outs = [chosen[plan.state_out[i]] if i in plan.state_out else x
                    for i, x in enumerate(chosen_out)]  # fmt: skip
            fn = _compile(st, avals, chosen_in, outs, plan.donate)
            chosen_in, chosen_out = _flat(fn.input_shardings[0]), _flat(fn.output_shardings)
            break
    return CompiledStage(fn, chosen_in, chosen_out)


def _compile(st: Any, avals: list[Any], ins: list[Any], outs: list[Any], donate: Any) -> Any:
    """The stage's function lowered on ``ins`` (``None``: free) with ``outs`` pinned."""
    args = [
        jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh) if sh is not None else
        jax.ShapeDtypeStruct(a.shape, a.dtype)
        for a, sh in zip(avals, ins, strict=True)
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        jitted = jax.jit(
            lambda *a: tuple(st.fn(*a)),
            out_shardings=tuple(outs),
            donate_argnums=tuple(donate),
            keep_unused=True,
        )
        return jitted.lower(*args).compile()


class Held:
    """``fn`` compiled ahead of time (``jax.jit(fn, **jit).lower(...).compile()``) once for
    each signature it is called at, each executable held here and called directly: never
    through ``jax.jit``'s caches, so that ``jax.clear_caches()`` (the engine's, once warm)
    leaves every executable a server calls in place and makes nothing compile again. A
    signature first met later compiles then, into this object.

    A signature is the arguments' tree and shapes, and (``by_sharding``: a function shared
    by generators on other devices) their shardings; the executable itself refuses arguments
    of another dtype or sharding (an error, never a silent compile). The key is built on
    every call (a few microseconds for a sampler's dozen arguments), which is why it holds
    no more than that."""

    def __init__(self, fn: Callable[..., Any], *, by_sharding: bool = False, **jit: Any) -> None:
        self._jit = jax.jit(fn, **jit)
        self._by_sharding = by_sharding
        self._compiled: dict[Any, Any] = {}

    def __call__(self, *args: Any) -> Any:
        leaves, tree = jax.tree_util.tree_flatten(args)
        key: tuple[Any, ...] = (tree, *(getattr(x, "shape", None) for x in leaves))
        if self._by_sharding:
            key += tuple(getattr(x, "sharding", None) for x in leaves)  # None: a host array
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._compiled[key] = self._jit.lower(*args).compile()
        return fn(*args)


def _flat(x: Any) -> list[Any]:
    return list(
        jax.tree_util.tree_leaves(x, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding))
    )


def state_shardings(compiled: CompiledStage, plan: StagePlan) -> dict[int, Any]:
    """``{state argument: sharding}`` of a compiled decode stage."""
    out = {
        key: compiled.in_shardings[i]
        for i, (k, key) in enumerate(plan.inputs)
        if k is InputKind.STATE
    }
    for j, arg in plan.state_out.items():
        out.setdefault(arg, compiled.out_shardings[j])
    return out


def nbytes(aval: Any) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize
