"""`Generator`: a decode step served across pipeline stages, each stage keeping its state.

One host, one controller: every stage's executables run on their own device and the driver
issues every action asynchronously (``jax.jit`` dispatch and ``jax.device_put`` return before
the device is done), in the order of :func:`hlopipe.schedules.decode` (round robin of the
groups, token after token). Nothing waits on a device until the tokens are read at the end of
:meth:`Session.generate`. State arguments are donated to the stage that keeps them, so a cache
is updated in place and never leaves its device; only activations and feedback move.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np

from hlopipe import schedules
from hlopipe.errors import Keyword, RuntimeConfigError, StageError
from hlopipe.generate._oracle import generate_unsplit as generate_unsplit
from hlopipe.generate._placement import (
    CompiledStage,
    check_params,
    compile_stage,
    input_sharding,
    nbytes,
    parameter_specs,
    place_params,
    place_stages,
    requested_shardings,
    state_shardings,
)
from hlopipe.generate._plan import (
    FEEDBACK,
    INPUT,
    PARAM,
    RECV,
    STATE,
    StagePlan,
    cache_length,
    params_as,
    plan_stages,
    position_of,
    position_value,
    prefill_args,
    prefill_outputs,
    split_warnings,
    stage_layers,
)
from hlopipe.io import ArgRoles
from hlopipe.stages import (
    StackedSplit,
    StateCrossesStages,
    StatefulSplit,
    retrace_outputs,
    split_prefill,
    split_stacked,
    split_stateful,
    state_sends,
)


class Generator:
    """A decode step (and optionally its prefill) split into stages that keep their state.

    Args:
      decode: the decode step, a loaded ``Program``:
        ``(params, state, tokens, position) -> (next_tokens, state)``.
      params: the first argument's pytree (the program's parameters).
      prefill: the prefill ``Program``, ``(params, prompt) -> (next_tokens, state)``.
      num_stages: must agree with the programs' stage markers when both are given (without
        markers, the cut points are chosen by the cost model).
      groups: how many groups of sequences are in flight.
      devices: the devices, cut into one group per stage in order (default: every device of
        the job, ``jax.devices()``; under ``jax.distributed`` each process runs the stages on
        its own devices).
      stage_mesh_shape / stage_mesh_axes / param_specs: as ``Pipeline`` takes them: each
        stage on a mesh of that shape (default one device), its axes so named (``"data"``
        splits the groups' batch), parameters laid out by ``param_specs`` (a pytree of
        ``PartitionSpec``; default the program's own annotations, else replicated).
      state / feedback: overrides of the argument roles (see ``Program.arg_roles``).
      max_len: the cache length (default: the size of the axis the position indexes in the
        state's update chain; an error names the candidate axes when that cannot be told).

    Example:
      >>> gen = hlopipe.Generator(dec, params, prefill=pre, groups=8)   # doctest: +SKIP
      >>> tokens = gen.start(prompts).generate(32)                       # doctest: +SKIP
    """

    def __init__(
        self,
        decode: Any,
        params: Any,
        *,
        prefill: Any = None,
        num_stages: int | None = None,
        groups: int = 1,
        devices: Sequence[Any] | None = None,
        state: Any = None,
        feedback: Any = None,
        max_len: int | None = None,
        stage_mesh_shape: Any = None,
        stage_mesh_axes: Sequence[str] | None = None,
        param_specs: Any = None,
    ) -> None:
        self.source = getattr(decode, "source", "the decode step")
        roles = decode.arg_roles(state=state, feedback=feedback)
        self.roles: ArgRoles = roles
        self._check_roles(roles)
        if not isinstance(groups, int) or groups < 1:
            raise RuntimeConfigError(f"groups must be a positive integer, got {groups!r}")
        self.groups = groups
        self.stacked: StackedSplit | None = None
        try:
            self.split: StatefulSplit = split_stateful(
                decode, roles, num_stages=num_stages, what=self.source
            )
        except StateCrossesStages as e:  # a cache stacked over the layers: sliced, or refused
            self.stacked = split_stacked(
                decode, roles, num_stages=num_stages, what=self.source, refused=e
            )
            self.split, self.roles = self.stacked.split, self.stacked.roles
            roles = self.roles
            self._check_roles(roles)
            if prefill is not None:
                prefill = _sliced_prefill(prefill, self.stacked, self.token.index)
        self.batch = self.token.shape[0] if self.token.shape else 1
        if max_len is not None and (not isinstance(max_len, int) or max_len < 1):
            raise RuntimeConfigError(
                Keyword("max_len", max_len), " must be a positive integer (the cache length)"
            )
        if max_len is None:
            max_len = cache_length(self.roles, self.split, self.position, self.batch, self.source)
        self.max_len = max_len
        kinds = {r.index: _KIND[r.role] for r in roles}
        slots = {x.arg: x for x in self.split.slots}
        self.plans = plan_stages(self.split.staged, kinds, slots, self.split.state_sent)
        mesh = (stage_mesh_shape, stage_mesh_axes, param_specs)
        self._place(decode, params, devices, *mesh)
        self.prefill = None if prefill is None else _Prefill(prefill, self, self.split.num_stages)

    def _place(
        self, decode: Any, params: Any, devices: Any, shape: Any, axes: Any, specs: Any
    ) -> None:
        """Each stage on its mesh (``_placement.py``), compiled there, its parameters put."""
        S = self.split.num_stages
        self.place = place_stages(devices, S, self.batch, shape, axes)
        self.devices = [self.place.devices(s)[0] for s in range(S)]
        self.param_specs = parameter_specs(
            params, specs, decode, self.split.staged, self.place, len(self.roles.parameters)
        )
        by_arg = check_params(params, self.roles, self.source)
        self._stages = [
            compile_stage(st, p, self.place, requested_shardings(self.roles, self.param_specs,
                          self.place, p.stage)) if self.place.local(p.stage) else None
            for st, p in zip(self.split.staged.stages, self.plans, strict=True)
        ]  # fmt: skip
        self._fns = [None if c is None else c.fn for c in self._stages]
        self._state_sh = [
            {} if c is None else state_shardings(c, p)
            for c, p in zip(self._stages, self.plans, strict=True)
        ]
        self._host_params = by_arg  # the prefill places its own from these
        self._params = place_params(by_arg, self.plans, self._stages)

    def with_groups(self, groups: int) -> Generator:
        """The same generator (same compiled stages and placed parameters) for another number
        of groups in flight."""
        if not isinstance(groups, int) or groups < 1:
            raise RuntimeConfigError(f"groups must be a positive integer, got {groups!r}")
        other = copy.copy(self)
        other.groups = groups
        return other

    # -- roles -------------------------------------------------------------------------------
    def _check_roles(self, roles: ArgRoles) -> None:
        if roles.ambiguous:
            r = roles.ambiguous[0]
            raise RuntimeConfigError(
                f"{self.source}: which output feeds argument {r.index} ({r.path}) is a guess "
                f"({r.reason}); a wrong pairing would mix up state, so name it: "
                "state={argument: output} or feedback={argument: output}"
            )
        if not roles.state:
            raise RuntimeConfigError(
                f"{self.source}: no argument is state (nothing is aliased to an output: the "
                "program was exported without donation); export it with the state donated or "
                "pass state=[argument paths]"
            )
        fb = roles.feedback
        if not fb:
            raise RuntimeConfigError(
                f"{self.source}: no argument is fed back from an output (the token); pass "
                "feedback={argument: output}"
            )
        self.token = fb[0]
        self.position = position_of(roles, self.source)

    # -- views -------------------------------------------------------------------------------
    def state_bytes(self, stage: int) -> int:
        return sum(x.nbytes for x in self.split.state_of(stage))

    def param_bytes(self, stage: int) -> int:
        roles = self.roles
        return sum(nbytes(roles[a]) for k, a in self.plans[stage].inputs if k == PARAM)

    def bytes_per_token(self) -> dict[str, int]:
        """Theory, per group and decode step: activations sent between stages, feedback sent
        from the stage that makes it to those that read it, and state: 0 unless stage markers
        cut between a cache's update and a read of it (the pieces of it then sent)."""
        act = sum(p.send_bytes for p in self.plans)
        state = sum(p.state_send_bytes for p in self.plans)
        return {"activations": act, "feedback": self._feedback_bytes(), "state": state}

    def _feedback_bytes(self) -> int:
        total = 0
        for arg, out in self.split.feedback:
            src = self.split.staged.out_sources[out]
            readers = {
                p.stage for p in self.plans for k, a in p.inputs if k == FEEDBACK and a == arg
            }
            nbytes = (
                int(np.prod(self.roles[arg].shape, dtype=np.int64))
                * np.dtype(self.roles[arg].dtype).itemsize
            )
            total += nbytes * sum(1 for s in readers if src.kind != "stage" or s != src.stage)
        return total

    def _where(self, stage: int) -> str:
        mesh = self.place.mesh(stage)
        if mesh.devices.size == 1:
            return str(self.devices[stage])
        return "x".join(map(str, mesh.devices.shape)) + f" from {self.devices[stage]}"

    def __repr__(self) -> str:
        lines = [
            f"Generator({self.source}: {len(self.plans)} stages, {self.groups} group(s) of "
            f"{self.batch}, cache length {self.max_len})",
            f"{'stage':>5}  {'device':<14} {'state':<28} {'layers':>6} {'param B':>9} "
            f"{'state B/group':>13} {'sent B/token':>12}",
        ]
        layers = self.layers()
        for p in self.plans:
            paths = self.split.layers_of(p.stage)
            shown = ", ".join(paths[:2]) + (f" +{len(paths) - 2}" if len(paths) > 2 else "")
            lines.append(
                f"{p.stage:>5}  {self._where(p.stage):<14} {shown:<28} {layers[p.stage]:>6} "
                f"{self.param_bytes(p.stage):>9} {self.state_bytes(p.stage):>13} "
                f"{p.send_bytes:>12}"
            )
        return "\n".join(lines + self.warnings())

    def layers(self) -> list[int]:
        """How many layers' state each stage keeps (see ``_plan.stage_layers``)."""
        return stage_layers(self.split, self.stacked)

    def warnings(self) -> list[str]:
        """What ``print(gen)`` warns of (see ``_plan.split_warnings``)."""
        return split_warnings(self.layers(), self.split.state_sent)

    # -- sessions ----------------------------------------------------------------------------
    def start(
        self,
        prompts: Any = None,
        *,
        tokens: Any = None,
        state: Sequence[Sequence[Any]] | None = None,
        position: int | None = None,
        feedback: Mapping[Any, Any] | None = None,
    ) -> Session:
        """A session of ``groups`` groups: from ``prompts[groups, b, P]`` through the prefill
        (pipelined, the prefill's token first), or from ``tokens[groups, b]`` at ``position``
        with ``state`` (per group, the flat state arguments; zeros when not given).
        ``feedback`` gives the first value of every other feedback argument (an RNG key), by
        path or flat index, shaped ``[groups, ...]``."""
        session = Session(self, prompts, tokens, state, position)
        session._start_feedback(feedback or {})
        return session


_KIND = {"parameter": PARAM, "state": STATE, "feedback": FEEDBACK, "input": INPUT}


def _sliced_prefill(program: Any, stacked: StackedSplit, token_arg: int) -> Any:
    """The prefill with its stacked state outputs made in the decode step's slices."""
    what = f"the prefill {getattr(program, 'source', '')}".rstrip()
    orig = stacked.original_roles
    orig_token = next(r.index for r in orig.feedback if r.path == stacked.roles[token_arg].path)
    _, state_of_out = prefill_outputs(program, orig, orig_token, what)
    by_arg = {s.arg: s.ranges for s in stacked.stacks}
    outputs = {o: by_arg[a] for o, a in state_of_out.items() if a in by_arg}
    return retrace_outputs(program, outputs, what)


class _Prefill:
    """The prefill split like the decode step: the same stages keep the same state."""

    def __init__(self, program: Any, gen: Generator, S: int) -> None:
        what = f"the prefill {getattr(program, 'source', '')}".rstrip()
        self.prompt_arg, param_of = prefill_args(program, gen.roles, what)
        self.prompt_aval = program.in_avals[self.prompt_arg]
        self.token_out, state_of_out = prefill_outputs(program, gen.roles, gen.token.index, what)
        slots = {x.arg: x for x in gen.split.slots}
        stage_of = {o: slots[arg].stage for o, arg in state_of_out.items()}
        try:  # cut where the decode step keeps each cache
            self.staged = split_prefill(program, stage_of, S, what)
        except StageError as e:
            if str(e).startswith(what):  # split_prefill's own: it names the prefill
                raise
            raise StageError(f"{what} does not split like the decode step ({S} stages): {e}") from e
        for o, arg in state_of_out.items():
            src = self.staged.out_sources[o]
            if src.kind != "stage" or src.stage != slots[arg].stage:
                made = f"stage {src.stage}" if src.kind == "stage" else "no stage"
                raise StageError(
                    f"{what}: {made} makes the state {slots[arg].path}, which the decode step "
                    f"keeps on stage {slots[arg].stage}: the stage markers of the two programs "
                    "disagree"
                )
        items = [(None, o, slots[a].path, gen.roles[a].shape, gen.roles[a].dtype)
                 for o, a in state_of_out.items()]  # fmt: skip
        crossing = state_sends(self.staged, items)
        if crossing:
            s, d, path = crossing[0]
            raise StageError(
                f"{what}: a version of the state {path} would be sent from stage {s} to stage "
                f"{d}; make each stage's state on that stage (an empty cache inside its layer)"
            )
        kinds = {i: (PARAM if i in param_of else INPUT) for i in range(len(program.in_avals))}
        self.state_of_out = state_of_out
        self.plans = [  # each stage's cache outputs written in the decode step's layout
            replace(p, state_out={j: state_of_out[o] for j, o in p.program_out.items()
                                  if o in state_of_out})
            for p in params_as(plan_stages(self.staged, kinds, {}), param_of)
        ]  # fmt: skip
        sp = gen.place
        self._stages = [
            compile_stage(st, p, sp, requested_shardings(gen.roles, gen.param_specs, sp, p.stage),
                          gen._state_sh[p.stage]) if sp.local(p.stage) else None
            for st, p in zip(self.staged.stages, self.plans, strict=True)
        ]  # fmt: skip
        self._fns = [None if c is None else c.fn for c in self._stages]
        self._params = place_params(gen._host_params, self.plans, self._stages, gen._params)


@dataclass
class _Counters:
    activations: int = 0
    feedback: int = 0
    state: int = 0
    actions: int = 0
    host_s: float = 0.0
    per_step: list[int] = field(default_factory=list)


class Session:
    """Groups of sequences being generated: state on its stages, tokens fed back on device.

    ``metrics`` after :meth:`generate`: tokens/s, time to first token (with a prefill: from
    ``start`` until group 0's first token is ready, read once every step is issued, so that
    decoding overlaps the later groups' prefills), inter-token latency, host time per action,
    bytes sent by kind since the start and in the last ``generate`` (``state``: counted, 0 when
    state stays).
    """

    def __init__(self, gen: Generator, prompts: Any, tokens: Any, state: Any, position: Any):
        self.gen = gen
        G, b = gen.groups, gen.batch
        self.counters = _Counters()
        self.metrics: dict[str, Any] = {}
        # per group, {argument: (the stage holding it, the value; None in another process)}
        self._state: list[dict[int, tuple[int, Any]]] = [{} for _ in range(G)]
        self._feedback: list[dict[int, tuple[int, Any]]] = [{} for _ in range(G)]
        self._first: list[tuple[int, Any]] | None = None
        self.issued: list[tuple[str, int, int]] = []  # (phase, group, position) in issue order
        self._t0 = t0 = time.perf_counter()
        if prompts is not None:
            if gen.prefill is None:
                raise RuntimeConfigError("prompts need a prefill program (prefill=...)")
            prompts = _check_shape(prompts, (G, b), "prompts", "[groups, batch, length]", 3)
            prompts = prompts.astype(gen.prefill.prompt_aval.dtype)
            self.position = int(prompts.shape[2])
            self._check_position(self.position)
            self._run_prefill(prompts)  # dispatched, not waited for: decoding overlaps it
            self.metrics["prefill_dispatch_s"] = time.perf_counter() - t0
        else:
            if tokens is None:
                raise RuntimeConfigError("start needs prompts (with a prefill) or tokens=")
            tokens = _check_shape(tokens, (G, *gen.token.shape), "tokens", "[groups, batch]", 2)
            tokens = tokens.astype(gen.token.dtype)
            self.position = 0 if position is None else int(position)
            self._check_position(self.position)
            self._start_from(tokens, state)

    def _wait_first(self) -> None:
        jax.block_until_ready([x for _, x in self._first or [] if x is not None])

    def _start_feedback(self, given: Mapping[Any, Any]) -> None:
        """The first value of each feedback argument other than the token."""
        gen = self.gen
        known = {r.path: r for r in gen.roles.feedback} | {r.index: r for r in gen.roles.feedback}
        for name in given:
            if name not in known or known[name].index == gen.token.index:
                raise RuntimeConfigError(
                    f"feedback={{{name!r}: ...}}: not a feedback argument other than the token; "
                    f"those are {[r.path for r in gen.roles.feedback[1:]]}"
                )
        for r in gen.roles.feedback[1:]:
            value = given.get(r.path, given.get(r.index))
            if value is None:
                raise RuntimeConfigError(
                    f"feedback argument {r.index} ({r.path}, {r.dtype}{list(r.shape)}) needs a "
                    f"first value per group: start(..., feedback={{{r.path!r}: [groups, ...]}})"
                )
            arr = np.asarray(value)
            if arr.shape != (gen.groups, *r.shape) or str(arr.dtype) != r.dtype:
                raise RuntimeConfigError(
                    f"feedback {r.path}: expected {r.dtype}{[gen.groups, *r.shape]} (groups "
                    f"first), got {arr.dtype}{list(arr.shape)}"
                )
            self._put_feedback(r.index, arr)

    def _put_feedback(self, arg: int, values: np.ndarray) -> None:
        """Each group's first value of feedback argument ``arg`` onto the stage reading it."""
        gen = self.gen
        reader = next(p.stage for p in gen.plans if (FEEDBACK, arg) in p.inputs)
        aval = jax.ShapeDtypeStruct(values.shape[1:], values.dtype)
        sh = input_sharding(gen.place, reader, FEEDBACK, aval)
        for g in range(gen.groups):
            self._feedback[g][arg] = (reader, gen.place.put(values[g], reader, sh))

    def _check_position(self, pos: int) -> None:
        if not 0 <= pos < self.gen.max_len:
            raise RuntimeConfigError(
                f"position {pos} is beyond the cache (length {self.gen.max_len}); shorten the "
                "prompt or the generation"
            )

    def _start_from(self, tokens: np.ndarray, state: Any) -> None:
        gen = self.gen
        n_state = len(gen.split.slots if gen.stacked is None else gen.stacked.original_roles.state)
        for g in range(gen.groups):
            flat = None if state is None else list(state[g])
            if flat is not None and len(flat) != n_state:
                raise RuntimeConfigError(
                    f"state of group {g}: {len(flat)} arrays, the program has "
                    f"{n_state} state arguments"
                )
            given: dict[int, Any] = {}
            if flat is not None:
                given = (
                    dict(zip((x.arg for x in gen.split.slots), flat, strict=True))
                    if gen.stacked is None
                    else gen.stacked.disassemble(flat)
                )
            for slot in gen.split.slots:
                r = gen.roles[slot.arg]
                value = np.zeros(r.shape, r.dtype) if flat is None else given[slot.arg]
                if (tuple(np.shape(value)), str(np.asarray(value).dtype)) != (r.shape, r.dtype):
                    raise RuntimeConfigError(
                        f"state of group {g}, {r.path}: expected {r.dtype}{list(r.shape)}, got "
                        f"{np.asarray(value).dtype}{list(np.shape(value))}"
                    )
                sh = gen._state_sh[slot.stage].get(slot.arg)
                self._state[g][slot.arg] = (slot.stage, gen.place.put(value, slot.stage, sh))
        self._put_feedback(gen.token.index, tokens)

    # -- the driver --------------------------------------------------------------------------
    # Every process runs this loop over every stage and every move; it computes its own
    # stages only, and every move between processes is a collective both sides issue here,
    # in this one order (``_placement.py``).
    def _send(self, value: Any, src: int, dst: int, aval: Any, sh: Any, kind: str) -> Any:
        """``value`` from stage ``src`` to ``sh`` on stage ``dst``, its bytes counted by kind
        when it crosses a stage (in every process alike)."""
        if src != dst:
            setattr(self.counters, kind, getattr(self.counters, kind) + nbytes(aval))
        return self.gen.place.move(value, src, dst, aval, sh)

    def _inputs(self, g: int, p: StagePlan, c: Any, st: Any, x: Any, got: dict) -> list[Any]:
        """Stage ``p``'s arguments for group ``g``: parameters, state, feedback, ``x`` (the
        position, or the prompt) and what earlier stages sent (``got``)."""
        gen, s = self.gen, p.stage
        holder = c if c is not None else gen  # the prefill, or the decode step
        comp: CompiledStage | None = holder._stages[s]
        args: list[Any] = []
        for i, ((kind, key), aval) in enumerate(zip(p.inputs, st.jaxpr.in_avals, strict=True)):
            if kind == PARAM:
                args.append(holder._params[s].get(key))
                continue
            sh = comp.in_shardings[i] if comp else input_sharding(gen.place, s, kind, aval)
            if kind == INPUT:
                args.append(gen.place.put(x, s, sh))
            elif kind == RECV:
                args.append(self._send(got.get(key), key[0], s, aval, sh, p.recv_kind(key)))
            else:
                at, value = (self._state if kind == STATE else self._feedback)[g][key]
                args.append(self._send(value, at, s, aval, sh, kind))
        return args

    def _run_prefill(self, prompts: np.ndarray) -> None:
        gen, pre = self.gen, self.gen.prefill
        assert pre is not None
        tok_src = pre.staged.out_sources[pre.token_out]
        firsts: list[Any] = [None] * gen.groups
        # The decode+prefill schedule's first step of each group, in its order.
        for g in decode_order(len(gen.plans), gen.groups, 1, prefill=True):
            self.issued.append(("prefill", g, self.position))
            got: dict[tuple[int, int], Any] = {}
            for st, p in zip(pre.staged.stages, pre.plans, strict=True):
                args = self._inputs(g, p, pre, st, prompts[g], got)
                fn = pre._fns[st.index]
                outs = fn(*args) if fn is not None else [None] * len(st.outputs)
                for j, out in enumerate(outs):
                    got[(st.index, j)] = out
                for j, arg in p.state_out.items():
                    self._state[g][arg] = (st.index, outs[j])
            tok = (tok_src.stage, got[(tok_src.stage, tok_src.index)])
            self._feedback[g][gen.token.index] = tok
            firsts[g] = tok
        self._first = firsts

    def _step(self, g: int, position: int, tokens_out: list[Any]) -> None:
        """One decode step of group ``g``: every stage in order, all dispatched async."""
        gen = self.gen
        self.issued.append(("decode", g, position))
        got: dict[tuple[int, int], Any] = {}
        new_fb: dict[int, tuple[int, Any]] = {}
        for p, fn, st in zip(gen.plans, gen._fns, gen.split.staged.stages, strict=True):
            args = self._inputs(g, p, None, st, position_value(gen.position, position), got)
            outs = fn(*args) if fn is not None else [None] * len(st.outputs)
            self.counters.actions += 1
            for j, out in enumerate(outs):
                got[(p.stage, j)] = out
            for j, arg in p.state_out.items():
                self._state[g][arg] = (p.stage, outs[j])
            for j, o in p.program_out.items():
                for arg, fo in gen.split.feedback:
                    if fo == o:
                        new_fb[arg] = (p.stage, outs[j])
        self._feedback[g].update(new_fb)
        tokens_out.append(new_fb[gen.token.index])

    def _tokens(self, out: list[list[tuple[int, Any]]]) -> np.ndarray:
        """The tokens ``[groups, b, n]`` on the host, in every process (each gathered onto the
        stage making the last one, then sent to the processes that lack them)."""
        place = self.gen.place
        at = out[0][-1][0]
        tok = self.gen.token
        aval = jax.ShapeDtypeStruct(tuple(tok.shape), tok.dtype)
        rows = [[place.move(v, s, at, aval, place.replicated(at)) for s, v in row] for row in out]
        host = None
        if place.local(at):
            host = np.stack([np.stack([np.asarray(x) for x in row], axis=-1) for row in rows])
        whole = jax.ShapeDtypeStruct((len(out), *tok.shape, len(out[0])), tok.dtype)
        return place.everywhere(host, at, whole)

    def generate(self, n: int) -> np.ndarray:
        """The next ``n`` tokens of every sequence, ``[groups, b, n]`` (with a prefill, its
        token is the first of the first call)."""
        if not isinstance(n, int) or n < 1:
            raise RuntimeConfigError(f"generate needs a positive number of tokens, got {n!r}")
        gen = self.gen
        first = self._first
        steps = n - (1 if first is not None else 0)
        last = self.position + steps - 1
        if steps and last >= gen.max_len:
            raise RuntimeConfigError(
                f"position {last} is beyond the cache (length {gen.max_len}): {steps} decode "
                f"steps from position {self.position}; generate at most "
                f"{gen.max_len - self.position + (first is not None)} tokens"
            )
        out: list[list[Any]] = [[] if first is None else [first[g]] for g in range(gen.groups)]
        self._first = None
        c = self.counters
        before = (c.activations, c.feedback, c.state)
        t0 = time.perf_counter()
        host = 0.0
        # Issued in the decode schedule's order: microbatch m is step m // G of group m % G;
        # each rank's list is that order, so one global pass respects every rank's list.
        order = decode_order(len(gen.plans), gen.groups, steps) if steps else []
        for m in order:
            t, g = divmod(m, gen.groups)
            h = time.perf_counter()
            self._step(g, self.position + t, out[g])
            host += time.perf_counter() - h
        self.position += steps
        if first is not None:  # waited for now, with every step issued: nothing waits on it
            jax.block_until_ready([x for _, x in first[:1] if x is not None])
            self.metrics["time_to_first_token_s"] = time.perf_counter() - self._t0
        result = self._tokens(out)
        wall = time.perf_counter() - t0
        self.counters.host_s += host
        actions = steps * gen.groups * len(gen.plans)
        self.metrics.update(
            tokens=int(result.size),
            wall_s=wall,
            tokens_per_s=result.size / wall if wall else float("inf"),
            inter_token_s=wall / steps if steps else 0.0,
            host_per_action_s=host / actions if actions else 0.0,
            bytes_sent=dict(
                activations=c.activations, feedback=c.feedback, state=c.state
            ),  # since start, the prefill's included
            decode_bytes_sent=dict(
                activations=c.activations - before[0],
                feedback=c.feedback - before[1],
                state=c.state - before[2],
            ),
        )
        return result

    def profile(self, repeats: int = 3) -> list[float]:
        """Each stage's decode step alone (seconds, the median of ``repeats`` runs waited
        for), on group 0's state at the current position: what the measured busy fraction
        and the simulator's costs are made of. The state is not changed. A stage another
        process holds is ``nan``."""
        gen = self.gen
        times = []
        for p, c, st in zip(gen.plans, gen._stages, gen.split.staged.stages, strict=True):
            if c is None:
                times.append(float("nan"))
                continue
            fn = jax.jit(st.fn)  # no donation: group 0's state must survive
            args = [_example_input(self, p, c, i) for i in range(len(p.inputs))]
            jax.block_until_ready(fn(*args))
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*args))
                runs.append(time.perf_counter() - t0)
            times.append(float(np.median(runs)))
        return times

    def state(self, g: int) -> list[np.ndarray]:
        """Group ``g``'s state, the flat state arguments in order (read from the devices; a
        state stacked over the layers reassembled from its stages' slices). In a job of
        several processes, see :meth:`local_state`."""
        held = self._state[g]
        if any(v is None for _, v in held.values()):
            raise RuntimeConfigError(
                f"process {self.gen.place.layout.me} holds the state of some stages only; "
                "read them with local_state(g)"
            )
        host = {a: self.gen.place.host(v, s) for a, (s, v) in held.items()}
        if self.gen.stacked is not None:
            return self.gen.stacked.assemble(host)
        return [host[slot.arg] for slot in self.gen.split.slots]

    def local_state(self, g: int) -> dict[str, np.ndarray]:
        """Group ``g``'s state held by this process's stages: ``{argument path: array}``."""
        gen = self.gen
        return {
            gen.roles[slot.arg].path: gen.place.host(self._state[g][slot.arg][1], slot.stage)
            for slot in gen.split.slots
            if gen.place.local(slot.stage)
        }


def _example_input(session: Session, p: StagePlan, c: CompiledStage, i: int) -> Any:
    """Input ``i`` of stage ``p`` for :meth:`Session.profile`: the parameter, group 0's state,
    else zeros (the position: the current one) in the executable's sharding."""
    gen = session.gen
    kind, key = p.inputs[i]
    if kind == PARAM:
        return gen._params[p.stage][key]
    if kind == STATE:
        return session._state[0][key][1]
    aval = gen.split.staged.stages[p.stage].jaxpr.in_avals[i]
    if kind == INPUT:
        pos = min(session.position, gen.max_len - 1)
        return jax.device_put(position_value(gen.position, pos), c.in_shardings[i])
    return jax.device_put(np.zeros(aval.shape, aval.dtype), c.in_shardings[i])


def decode_order(num_stages: int, groups: int, steps: int, *, prefill: bool = False) -> list[int]:
    """The microbatches of ``schedules.decode`` in the order every rank runs them (checked by
    the validator: the driver issues each microbatch's stages in this order). With
    ``prefill``, microbatch ``m < groups`` is group ``m``'s prefill."""
    sched = schedules.decode(num_stages, groups, steps, prefill=prefill)
    schedules.validate(sched)
    rows = [[a.microbatch for a in row if a is not None] for row in sched.actions.values()]
    if any(row != rows[0] for row in rows):  # pragma: no cover - the generator's invariant
        raise RuntimeConfigError("decode schedule: ranks disagree on the order of the groups")
    return rows[0]


def _check_shape(x: Any, lead: tuple[int, ...], name: str, form: str, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != ndim or tuple(arr.shape[: len(lead)]) != lead or arr.dtype.kind not in "iu":
        raise RuntimeConfigError(
            f"{name} must be integers shaped {form} with groups, batch = {lead[:2]}, got "
            f"{arr.dtype}{list(arr.shape)}"
        )
    return arr.astype(np.int32)
