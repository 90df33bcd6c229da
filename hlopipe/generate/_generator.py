"""`Generator`: a decode step served across pipeline stages, each stage keeping its state.

One controller per process: every stage's executables run on their own devices (a mesh of
its own, possibly spanning processes of a ``jax.distributed`` job), and each process runs the
same driver loop over every stage and move, computing its own stages and issuing every action
asynchronously (``jax.jit`` dispatch, ``jax.device_put`` and a transfer between processes
return before the device is done), in the order of :func:`hlopipe.schedules.decode` (round
robin of the groups, token after token). A step of a group is an instruction list built once
(``_steps.py``) and run by the :class:`~hlopipe.generate._session.Session`; nothing waits on a
device until the tokens are read. State arguments are donated to the stage that keeps them, so
a cache is updated in place and never leaves its device; only activations and feedback move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.errors import ApiOnly, Keyword, RuntimeConfigError, StageError
from hlopipe.generate._chunk import ChunkStep, takes_cache
from hlopipe.generate._match import _traced
from hlopipe.generate._oracle import generate_unsplit as generate_unsplit
from hlopipe.generate._placement import (
    CompiledStage,
    Held,
    PlacedStages,
    check_params,
    compile_stages,
    input_sharding,
    nbytes,
    parameter_specs,
    place_params,
    place_stages,
    state_shardings,
)
from hlopipe.generate._plan import (
    InputKind,
    cache_length,
    counters_as_position,
    logits_as_feedback,
    params_as,
    plan_stages,
    position_of,
    position_value,
    prefill_args,
    prefill_outputs,
    prefill_returns_logits,
    split_warnings,
    stage_layers,
)
from hlopipe.generate._prefill_check import chunk_difference
from hlopipe.generate._sampling import TOP_LOGPROBS, Sampling, sample, token_logprobs
from hlopipe.generate._session import Session
from hlopipe.generate._steps import (
    FeedbackPlace,
    Home,
    Layout,
    Registers,
    Sampler,
    StatePlace,
    StepProgram,
    build,
)
from hlopipe.io import ArgRoles, Use
from hlopipe.runtime import BytesSent
from hlopipe.stages import (
    SourceKind,
    StackedSplit,
    Stage,
    StateCrossesStages,
    StatefulSplit,
    prefer_stacked,
    retrace_outputs,
    split_prefill,
    split_stacked,
    split_stateful,
    state_sends,
)

# what the command says where Python would pass a keyword (the command has no flag for it)
_FROM_PYTHON = (
    "; the command reads the roles from the program alone: from Python, name them with "
    "hlopipe.generate.Generator(..., {})"
)


class Generator:
    """A decode step (and optionally its prefill) split into stages that keep their state.

    Args:
      decode: the decode step, a loaded ``Program``:
        ``(params, state, tokens, position) -> (next_tokens, state)``; or ``-> (logits,
        state)`` with ``logits`` a float ``[b, vocab]``: the token fed back is then sampled
        from them on the stage making them (greedy until ``Session.sampling`` says
        otherwise). ``position`` is ``[]`` (one for the group) or ``[b]`` (one per sequence:
        ``Session.feed`` then sets each sequence's, so that a sequence can start again while
        the others of its group carry on).
      params: the first argument's pytree (the program's parameters).
      prefill: the prefill ``Program``, ``(params, prompt) -> (next_tokens, state)``; for a
        decode step returning logits, ``-> (logits, state)`` with ``logits`` a float ``[b,
        vocab]`` (the prompt's last position) or ``[b, length, vocab]`` (the last position
        taken): the first token is sampled from them as the decode step's are (or a prefill
        returning the token, fed back as it is). With a position per sequence it may also
        start some rows of a group alone (``Session.prefill_rows``), its cache laid out as the
        step's (each cache's sequence axis told by the prefill's data flow). A sequence of
        prefills of distinct prompt lengths (the same model exported at several lengths:
        buckets) is split alike; a prompt goes through the one of its length
        (:meth:`prefill_for`), ``prefill`` is then the first given.
      prefill_params: the prefill's own arguments, every one but the prompt in its order
        (or all, ``None`` at the prompt), for a prefill whose parameters cannot be matched to
        the decode step's; default: the decode step's ``params``, matched in order, else by
        name, shape and data flow (a ``torch.export`` prefill beside a torch_xla decode step:
        its own order, its own lifted counter starts; see docs/generation.md).
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
      row_prefills: ``{n: the prefills at n rows}`` (``Widened.narrow``: a batch-1 prefill
        vmapped over ``n < batch`` rows, its state in the step's layout with ``n`` rows):
        ``Session.prefill_rows`` runs the one at the fewest rows holding its prompts instead
        of computing the whole batch (one-device stages in one process; else not used); a
        chunk step among them (it takes the cache in) continues those prompts at ``n`` rows.
      row_steps: ``{n: the decode step computing its first n rows}`` (``Widened.steps``: the
        decode step's arguments and outputs, its caches written back at those rows only):
        ``Session.issue(rows=n)`` runs it when no sequence runs beyond row ``n`` (one-device
        stages in one process, a position per sequence; else not used).

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
        prefill_params: Sequence[Any] | None = None,
        stage_mesh_shape: Any = None,
        stage_mesh_axes: Sequence[str] | None = None,
        param_specs: Any = None,
        row_prefills: Mapping[int, Sequence[Any]] | None = None,
        row_steps: Mapping[int, Any] | None = None,
    ) -> None:
        self.source = getattr(decode, "source", "the decode step")
        roles = counters_as_position(decode.arg_roles(state=state, feedback=feedback))
        # the logits' output, when the token fed back is sampled from them
        roles, self.logits_out = logits_as_feedback(roles)
        self.roles: ArgRoles = roles
        self._check_roles(roles)
        if not isinstance(groups, int) or groups < 1:
            raise RuntimeConfigError(f"groups must be a positive integer, got {groups!r}")
        self.groups = groups
        self.stacked: StackedSplit | None = None
        self._layout_notes: list[str] = []  # state that looks stacked but is kept whole
        programs = [] if prefill is None else list(_as_programs(prefill))
        # a program taking a cache in is a chunk step (``_chunk.py``), the others prefills
        takes = [takes_cache(p) for p in programs]
        chunks = [p for p, t in zip(programs, takes, strict=True) if t]
        programs = [p for p, t in zip(programs, takes, strict=True) if not t]
        try:
            self.split: StatefulSplit = split_stateful(
                decode, roles, num_stages=num_stages, what=self.source
            )
        except StateCrossesStages as e:  # a cache stacked over the layers: sliced, or refused
            self.stacked = split_stacked(
                decode, roles, num_stages=num_stages, what=self.source, refused=e
            )
        else:  # kept whole on one stage; sliced along its layer axis when it has one
            if self.split.num_stages > 1:
                staged = self.split.staged  # traced already, unless a layer loop was cut
                self.stacked, self._layout_notes = prefer_stacked(
                    decode, roles, num_stages=num_stages, what=self.source,
                    closed=staged.jaxpr if staged.arg_pieces is None else None,
                )  # fmt: skip
        if self.stacked is not None:
            self.split, self.roles = self.stacked.split, self.stacked.roles
            roles = self.roles
            self._check_roles(roles)
            programs = [_sliced_prefill(p, self.stacked, self.token.index) for p in programs]
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
        if prefill_params is not None and not programs:
            raise RuntimeConfigError(
                Keyword("prefill_params"), " given without a prefill (", Keyword("prefill"), ")"
            )
        S = self.split.num_stages
        # the program whose arguments the roles index: a prefill's are matched to it (a
        # stacked split's roles are its sliced program's: the prefill matched in order only)
        match_with = decode if self.stacked is None else None
        self.prefills: tuple[_Prefill, ...] = tuple(
            _Prefill(p, self, S, prefill_params, match_with) for p in programs
        )
        self.prefill = self.prefills[0] if self.prefills else None
        lengths = [int(p.prompt_aval.shape[-1]) for p in self.prefills]
        if len(set(lengths)) < len(lengths):
            raise RuntimeConfigError(
                Keyword("prefill"), f": the prefills' prompt lengths {lengths} repeat; give one "
                "program a length"
            )  # fmt: skip
        self.narrow: dict[tuple[int, int], _Prefill] = {}  # (length, rows) -> at those rows
        one_device = not self.place.multi and all(
            len(self.place.devices(s)) == 1 for s in range(S)
        )  # a stage splitting the batch over devices: its prefills run at the full batch
        narrow_chunks: dict[int, list[Any]] = {}  # a chunk step among them: at n rows too
        for n, progs in (row_prefills or {}).items() if one_device else ():
            narrow_chunks[n] = [p for p in progs if takes_cache(p)]
            progs = [p for p in progs if not takes_cache(p)]
            if len(progs) != len(self.prefills):
                raise RuntimeConfigError(
                    Keyword("row_prefills"), f": {len(progs)} prefills at {n} rows, not one "
                    f"for each of the {len(self.prefills)} prefills, in their order"
                )  # fmt: skip
            for p, like in zip(progs, self.prefills, strict=True):
                q = (
                    p
                    if self.stacked is None
                    else _sliced_prefill(p, self.stacked, self.token.index)
                )
                shape = tuple(q.in_avals[like.prompt_arg].shape)
                want = (n, int(like.prompt_aval.shape[-1]))
                if shape != want or len(q.in_avals) != len(like.unsplit.in_avals):
                    raise RuntimeConfigError(
                        Keyword("row_prefills"), f": the prefill at {n} rows takes a prompt "
                        f"{list(shape)}, not {list(want)} as {like.what} does at {n} rows"
                    )  # fmt: skip
                self.narrow[(want[1], n)] = _Prefill(q, self, S, like=like)
        self.chunk: ChunkStep | None = self._chunk_step(chunks, S, decode)  # checked on host
        self.narrow_chunks: dict[int, ChunkStep] = {}  # rows -> the chunk step at those rows
        for n, progs in narrow_chunks.items():
            if len(progs) != (self.chunk is not None):
                raise RuntimeConfigError(
                    Keyword("row_prefills"), f": {len(progs)} chunk steps at {n} rows beside "
                    f"{int(self.chunk is not None)} among the prefills"
                )  # fmt: skip
            if self.chunk is not None:
                self.narrow_chunks[n] = self.chunk.at_rows(progs[0], self, n, S)
        self.narrow_steps: dict[int, _RowStep] = {}  # rows -> the step at its first rows
        if one_device and self.per_sequence and self.stacked is None:
            for n, program in sorted((row_steps or {}).items()):
                self.narrow_steps[n] = _RowStep(program, self, n, S)
        self._let_go_of_host_params()

    def _chunk_step(self, programs: list[Any], S: int, decode: Any) -> ChunkStep | None:
        """The chunk step among the prefills (``_chunk.py``), split and compiled like the
        decode step, and checked against the decode loop (unsplit, on one device): refused
        where its first chunk differs; its padding taken where the padded one agrees."""
        if not programs:
            return None
        if len(programs) > 1 or self.prefill is None:
            raise RuntimeConfigError(
                Keyword("prefill"), f": {len(programs)} programs take a cache in (chunk steps) "
                f"beside {len(self.prefills)} prefill(s); give one chunk step and at least one "
                "prefill (a chunk continues a prompt a prefill started)"
            )  # fmt: skip
        chunk = ChunkStep(programs[0], self)
        shortest = min(self.prefills, key=lambda p: int(p.prompt_aval.shape[-1]))
        if int(shortest.prompt_aval.shape[-1]) + chunk.length > self.max_len:
            raise RuntimeConfigError(
                f"{chunk.what}: a chunk of {chunk.length} tokens after the prefill of "
                f"{int(shortest.prompt_aval.shape[-1])} goes beyond the cache ({self.max_len})"
            )
        verdict = chunk_difference(chunk, shortest, decode, self.roles,
                                   self.placed.host_params, self.max_len)  # fmt: skip
        if verdict.difference is not None:
            d = verdict.difference
            raise RuntimeConfigError(
                f"{chunk.what}: run on a random prompt after {shortest.what} (its tokens as "
                f"argument {chunk.tokens_arg}, the position of the first as argument "
                f"{chunk.position_arg}), {d.what} differs from the decode loop's fed the same "
                f"prompt token by token (largest difference {d.relative:.3g} of its largest "
                "value): export it as the decode step with C tokens, the position of the first "
                "as its position, returning the token after the last"
            )
        chunk.pads, chunk.overlaps, chunk.apart = verdict.pads, verdict.overlaps, verdict.apart
        chunk.place(self, S)
        return chunk

    def prefill_for(self, length: int) -> _Prefill:
        """The prefill whose prompt has ``length`` tokens.

        Raises:
          RuntimeConfigError: no prefill, or none of that length (the lengths named)."""
        for p in self.prefills:
            if int(p.prompt_aval.shape[-1]) == length:
                return p
        if not self.prefills:
            raise RuntimeConfigError("prompts need a prefill program (prefill=...)")
        lengths = ", ".join(str(int(p.prompt_aval.shape[-1])) for p in self.prefills)
        raise RuntimeConfigError(
            f"a prompt of {length} tokens: the prefills take prompts of {lengths} tokens"
        )

    def narrow_for(self, length: int, rows: int) -> _Prefill | None:
        """The prefill of ``length`` tokens at the fewest rows (``row_prefills``) holding
        ``rows`` prompts, fewer than the batch; ``None``: none, the prefill at the batch."""
        fits = [n for (m, n) in self.narrow if m == length and rows <= n < self.batch]
        return self.narrow[(length, min(fits))] if fits else None

    def narrow_chunk_for(self, rows: int) -> ChunkStep | None:
        """The chunk step at the fewest rows (``row_prefills``) holding ``rows`` prompts,
        fewer than the batch; ``None``: none, the chunk step at the batch."""
        fits = [n for n in self.narrow_chunks if rows <= n < self.batch]
        return self.narrow_chunks[min(fits)] if fits else None

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
        compiled = compile_stages(self.split.staged.stages, self.plans, self.place, self.roles,
                                  self.param_specs)  # fmt: skip
        self.placed = PlacedStages(
            compiled=tuple(compiled),
            params=tuple(place_params(by_arg, self.plans, compiled)),
            state_shardings=tuple(
                {} if c is None else state_shardings(c, p)
                for c, p in zip(compiled, self.plans, strict=True)
            ),
            host_params=by_arg,
        )
        self._registers()

    def _let_go_of_host_params(self) -> None:
        """Every program is placed: the placed parameters are the only copy kept (a host copy
        beside them doubles a server's resident memory on CPU, where both are host memory)."""
        self.placed = self.placed.without_host_params()

    # -- the step programs (``_steps.py``) ---------------------------------------------------
    def _registers(self) -> None:
        """Every group's registers: the state, the feedback, then the placed parameters
        (``registers.template``, copied for each group of a session); no step program yet."""
        slots = self.split.slots
        fed = self.roles.feedback
        first_sampling = len(slots) + len(fed)
        n_sampling = 0 if self.logits_out is None else len(Sampling._fields)
        layout = Layout(
            state={x.arg: i for i, x in enumerate(slots)},
            feedback={r.index: len(slots) + k for k, r in enumerate(fed)},
            sampling=tuple(range(first_sampling, first_sampling + n_sampling)),
        )
        self.registers = Registers(layout)
        self.sampler: Sampler | None = None  # how a step returning logits gives its token
        self.sampler_stage: int | None = None  # the stage sampling the logits
        self.vocab: int | None = None  # the logits' last axis (the penalties' counts)
        if self.logits_out is not None:
            if self.position is None:
                raise RuntimeConfigError(
                    f"{self.source} returns logits but takes no position argument (it lives in "
                    "the state): the sampler folds each sequence's key with its position; export "
                    "the step with a position argument"
                )
            assert self.roles.out_avals is not None  # logits_as_feedback read them
            self.vocab = int(self.roles.out_avals[self.logits_out][0][-1])
            self.sampler_stage = next(
                p.stage for p in self.plans if self.logits_out in p.program_out.values()
            )
            position = jax.ShapeDtypeStruct(tuple(self.position.shape), self.position.dtype)
            self._draws: dict[int, Any] = {}  # each stage's sampler, compiled once a shape
            self.sampler = Sampler(self.logits_out, layout.sampling, position,
                                    self._sample_on)  # fmt: skip
        self._param_slots = self.registers.add_params(self.plans, self.placed.params)
        self._programs: dict[tuple[Any, ...], StepProgram] = {}
        self._positions: dict[tuple[int, int], Any] = {}  # (stage, position) -> placed
        self._fed_by: dict[int, tuple[int, ...]] = {}  # program output -> feedback arguments
        for arg, out in self.split.feedback:
            self._fed_by[out] = (*self._fed_by.get(out, ()), arg)
        # what ``start`` puts: per state argument its register, its sharding (None: a stage of
        # another process) and its zeros (the default state; device_put copies it); per
        # feedback argument the stage reading it and the sharding it takes
        self.state_places = tuple(
            StatePlace(x.arg, layout.state[x.arg],
                       self.placed.state_shardings[x.stage].get(x.arg)
                       if self.place.local(x.stage) else None,
                       np.zeros(self.roles[x.arg].shape, self.roles[x.arg].dtype))
            for x in slots
        )  # fmt: skip
        self.first_feedback: dict[int, FeedbackPlace] = {}
        for r in fed:
            reader = next(
                (p.stage for p in self.plans if (InputKind.FEEDBACK, r.index) in p.inputs), None
            )
            if reader is None:  # fed back, but read by no stage
                continue
            aval = jax.ShapeDtypeStruct(tuple(r.shape), r.dtype)
            self.first_feedback[r.index] = FeedbackPlace(
                reader, input_sharding(self.place, reader, InputKind.FEEDBACK, aval)
            )

    def _program(self, homes: Mapping[int, Home]) -> StepProgram:
        """The decode step's program with the feedback lying at ``homes`` (built once)."""
        key = tuple(homes.get(r.index) for r in self.roles.feedback)
        prog = self._programs.get(key)
        if prog is None:
            prog = build(
                self, self.place, self.registers.layout, dict(homes), self._fed_by,
                self._param_slots, self.registers.size, self.sampler,
            )  # fmt: skip
            self._programs[key] = prog
        return prog

    def _sample_on(self, stage: int) -> Any:
        """:func:`~hlopipe.generate._sampling.sample` compiled for ``stage``'s devices, its
        token replicated there, of the token argument's dtype (PyTorch's int64), and beside
        it the token's log-probabilities (``_sampling.token_logprobs``), read only when
        asked for."""
        if stage in self._draws:
            return self._draws[stage]
        dtype = np.dtype(self.token.dtype)

        vocab = int(self.vocab or 0)
        width = 1 + 2 * min(TOP_LOGPROBS, vocab)

        def draw(logits: Any, position: Any, *args: Any) -> tuple[Any, Any]:
            token = sample(logits, position, *args)  # the penalties applied first
            wanted = Sampling(*args).logprobs  # by a sequence of the group: else none made
            lp = jax.lax.cond(
                jnp.any(wanted),
                lambda: token_logprobs(logits, token),
                lambda: jnp.zeros((token.shape[0], width), jnp.float32),
            )
            return token.astype(dtype), lp

        where = self.place.replicated(stage)
        fn = Held(draw, out_shardings=(where, where))  # an instruction's results: a tuple
        self._draws[stage] = fn  # one a stage: the programs at each row count share it
        return fn

    def step_programs(self, homes: Mapping[int, Home], steps: int) -> list[StepProgram]:
        """The program of each of ``steps`` decode steps from ``homes`` (the first step
        reads the feedback where ``start`` put it, the next ones where a step left it)."""
        return _chained(self._program, homes, steps)

    def placed_positions(
        self, progs: list[StepProgram], first: int, steps: int
    ) -> list[tuple[tuple[int, Any], ...]]:
        """Per step, ``(register, value)`` of the position on each stage reading it. A
        position is placed once per stage for the generator's life (at most ``max_len`` small
        arrays per stage), those missing in one batched ``device_put``: a step moves nothing
        from the host."""
        readers = [(s, sh) for s, _, sh in progs[0].inputs]
        missing = [(s, pos, sh) for pos in range(first, first + steps) for s, sh in readers
                   if (s, pos) not in self._positions]  # fmt: skip
        local = [(s, pos, sh) for s, pos, sh in missing if self.place.local(s)]
        if local:
            values = [position_value(self.position, pos) for _, pos, _ in local]
            placed = jax.device_put(values, [sh for *_, sh in local])
            for (s, pos, _), v in zip(local, placed, strict=True):
                self._positions[(s, pos)] = v
        for s, pos, _ in missing:
            self._positions.setdefault((s, pos), None)
        at = self._positions
        return [
            tuple((slot, at[(s, first + t)]) for s, slot, _ in progs[t].inputs)
            for t in range(steps)
        ]

    def placed_sequence_positions(
        self, progs: list[StepProgram], first: np.ndarray, steps: int
    ) -> list[list[tuple[tuple[int, Any], ...]]]:
        """Per step and group, ``(register, value)`` of each sequence's position (``first``,
        ``[groups, b]``, plus the step) on each stage reading it (a position per sequence
        changes whenever a sequence starts again, so none is kept): in one process the host
        arrays, which each reading executable transfers with its call (a tenth of the host
        time of ``device_put``, the step's largest cost on a small model); else one batched
        ``device_put``."""
        G = first.shape[0]
        if not self.place.multi:  # (no input register is moved: each reader has its own)
            dtype = jax.dtypes.canonicalize_dtype(self.position.dtype)
            at = [[position_value(self.position, first[g] + t).astype(dtype, copy=False)
                   for g in range(G)] for t in range(steps)]  # fmt: skip
            return [[tuple((slot, at[t][g]) for _, slot, _ in progs[t].inputs) for g in range(G)]
                    for t in range(steps)]  # fmt: skip
        keys = [(t, g, s, slot, sh) for t in range(steps) for g in range(G)
                for s, slot, sh in progs[t].inputs]  # fmt: skip
        local = [k for k, (_, _, s, _, _) in enumerate(keys) if self.place.local(s)]
        placed = jax.device_put(
            [position_value(self.position, first[keys[k][1]] + keys[k][0]) for k in local],
            [keys[k][4] for k in local],
        )
        value: list[Any] = [None] * len(keys)  # None: a stage another process computes
        for k, v in zip(local, placed, strict=True):
            value[k] = v
        out: list[list[tuple[tuple[int, Any], ...]]] = [[()] * G for _ in range(steps)]
        for k, (t, g, _, slot, _) in enumerate(keys):
            out[t][g] += ((slot, value[k]),)
        return out

    def with_groups(self, groups: int) -> Generator:
        """The same generator (same compiled stages and placed parameters) for another number
        of groups in flight.

        Raises:
          RuntimeConfigError: ``groups`` is not a positive integer.
        """
        if not isinstance(groups, int) or groups < 1:
            raise RuntimeConfigError(f"groups must be a positive integer, got {groups!r}")
        return Generator._sharing(self, groups)

    @classmethod
    def _sharing(cls, built: Generator, groups: int) -> Generator:
        """A generator of ``groups`` groups made whole from ``built``'s parts. Every other part
        is the same object as ``built``'s: nothing but the group count depends on it (a step
        program is one group's, a session makes its groups' registers), so the split, the
        compiled stages, the placed parameters, the prefill and the caches of step programs
        are shared, not rebuilt."""
        other = cls.__new__(cls)
        vars(other).update({**vars(built), "groups": groups})
        return other

    # -- roles -------------------------------------------------------------------------------
    def _check_roles(self, roles: ArgRoles) -> None:
        if roles.ambiguous:
            r = roles.ambiguous[0]
            raise RuntimeConfigError(
                f"{self.source}: which output feeds argument {r.index} ({r.path}) is a guess "
                f"({r.reason}); a wrong pairing would mix up state, so name it",
                ApiOnly(
                    ": state={argument: output} or feedback={argument: output}",
                    _FROM_PYTHON.format("state={argument: output}, feedback={argument: output}"),
                ),
            )
        if not roles.state:
            raise RuntimeConfigError(
                f"{self.source}: no argument is state (nothing is aliased to an output: the "
                "program was exported without donation); export it with the state donated "
                "(jax.jit(step, donate_argnums=...))",
                ApiOnly(
                    " or pass state=[argument paths]", _FROM_PYTHON.format("state=[argument paths]")
                ),
            )
        fb = roles.feedback
        if not fb:
            raise RuntimeConfigError(
                f"{self.source}: no argument is fed back from an output (the token)",
                ApiOnly(
                    "; pass feedback={argument: output}",
                    _FROM_PYTHON.format("feedback={argument: output}"),
                ),
            )
        self.token = fb[0]
        self.batch = self.token.shape[0] if self.token.shape else 1
        self.position = position_of(roles, self.source, self.batch)
        # a position per sequence: each sequence of a group at its own
        self.per_sequence = (
            self.position is not None and self.batch > 1 and self.position.shape == (self.batch,)
        )

    # -- views -------------------------------------------------------------------------------
    @property
    def stages(self) -> tuple[Stage, ...]:
        """The decode step's stages (``split.staged.stages``; a :class:`PlannedStages`)."""
        return self.split.staged.stages

    @property
    def compiled(self) -> tuple[CompiledStage | None, ...]:
        """Each stage's executable (``None``: a stage another process computes)."""
        return self.placed.compiled

    def state_bytes(self, stage: int) -> int:
        return sum(x.nbytes for x in self.split.state_of(stage))

    def param_bytes(self, stage: int) -> int:
        roles = self.roles
        return sum(nbytes(roles[a]) for k, a in self.plans[stage].inputs if k is InputKind.PARAM)

    def bytes_per_token(self) -> BytesSent:
        """Theory, per group and decode step, as the :class:`~hlopipe.runtime.BytesSent` a
        session measures (``Session.metrics.decode_bytes_sent``): activations sent between
        stages, feedback sent from the stage that makes it to those that read it, and state: 0
        unless stage markers cut between a cache's update and a read of it (the pieces of it
        then sent)."""
        return BytesSent(
            activations=sum(p.send_bytes for p in self.plans),
            feedback=self._feedback_bytes(),
            state=sum(p.state_send_bytes for p in self.plans),
        )

    def _feedback_bytes(self) -> int:
        total = 0
        for arg, out in self.split.feedback:
            src = self.split.staged.out_sources[out]
            readers = {
                p.stage
                for p in self.plans
                for k, a in p.inputs
                if k is InputKind.FEEDBACK and a == arg
            }
            nbytes = (
                int(np.prod(self.roles[arg].shape, dtype=np.int64))
                * np.dtype(self.roles[arg].dtype).itemsize
            )
            total += nbytes * sum(
                1 for s in readers if src.kind is not SourceKind.STAGE or s != src.stage
            )
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
        return split_warnings(self.layers(), self.split.state_sent) + self._layout_notes

    # -- sessions ----------------------------------------------------------------------------
    def start(
        self,
        prompts: Any = None,
        *,
        tokens: Any = None,
        state: Sequence[Sequence[Any]] | None = None,
        position: int | None = None,
        feedback: Mapping[Any, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Session:
        """A session of ``groups`` groups: from ``prompts[groups, b, P]`` through the prefill
        (pipelined, the prefill's token first), or from ``tokens[groups, b]`` at ``position``
        with ``state`` (per group, the flat state arguments; zeros when not given).
        ``feedback`` gives the first value of every other feedback argument (an RNG key), by
        path or flat index, shaped ``[groups, ...]``. ``sampling`` (a step returning logits)
        is :meth:`Session.sampling`'s, set before the prefill (whose first token it samples
        when the prefill returns logits); default greedy."""
        return Session(self, prompts, tokens, state, position, sampling, feedback)


_KIND = {
    Use.PARAMETER: InputKind.PARAM,
    Use.STATE: InputKind.STATE,
    Use.FEEDBACK: InputKind.FEEDBACK,
    Use.INPUT: InputKind.INPUT,
}


def _as_programs(prefill: Any) -> tuple[Any, ...]:
    """``prefill``: one program, or a sequence of them (buckets)."""
    if isinstance(prefill, list | tuple):
        return tuple(prefill)
    return (prefill,)


def _sliced_prefill(program: Any, stacked: StackedSplit, token_arg: int) -> Any:
    """The prefill with its stacked state outputs made in the decode step's slices."""
    what = f"the prefill {getattr(program, 'source', '')}".rstrip()
    orig = stacked.original_roles
    orig_token = next(r.index for r in orig.feedback if r.path == stacked.roles[token_arg].path)
    _, state_of_out = prefill_outputs(program, orig, orig_token, what)
    by_arg = {s.arg: (s.axis, s.ranges) for s in stacked.stacks}
    outputs = {o: by_arg[a] for o, a in state_of_out.items() if a in by_arg}
    return retrace_outputs(program, outputs, what)


class _Prefill:
    """The prefill split like the decode step: the same stages keep the same state (a
    :class:`PlannedStages`, as the generator is)."""

    state_of_out: dict[int, int]  # {prefill output: decode state argument}
    params: list[dict[int, Any]]  # each stage's placed parameters {argument: array}

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.staged.stages

    def __init__(
        self,
        program: Any,
        gen: Generator,
        S: int,
        own: Any = None,
        match_with: Any = None,
        like: _Prefill | None = None,
    ) -> None:
        """``like``: the prefill ``program`` is at fewer rows (``row_prefills``), its arguments
        and outputs in the same order: its matching and check taken, not made again."""
        what = f"the prefill {getattr(program, 'source', '')}".rstrip()
        if like is None:
            host = gen.placed.host_params
            self.args = prefill_args(program, gen.roles, what, own, match_with, host)
        else:
            self.args = like.args
        self.prompt_arg, param_of, constants = self.args[:3]
        # its own lifted constants are parameters of keys beyond the decode step's arguments
        const_key = {i: len(gen.roles) + i for i in constants}
        param_of = {**param_of, **const_key}
        self.prompt_aval = program.in_avals[self.prompt_arg]
        self.unsplit, self.what = program, what  # (the chunk step's check runs it)
        state_of_out: dict[int, int]
        if like is None:
            self.token_out, state_of_out = prefill_outputs(
                program, gen.roles, gen.token.index, what
            )
        else:
            self.token_out, state_of_out = like.token_out, like.state_of_out
        # a prefill returning logits: its first token sampled from them as the decode step's
        # are (its last stage, the session's sampling, the key folded with the prompt's last
        # position); else its token, fed back as it is
        sampler = None
        if prefill_returns_logits(program, self.token_out):
            assert gen.sampler is not None  # a float first output: the step returns logits
            sampler = gen.sampler._replace(output=self.token_out)
        self.samples = sampler is not None
        self._program, self._what, self._roles, self._batch = program, what, gen.roles, gen.batch
        self._rows: dict[int, int] | None = None  # each state argument's sequence axis
        self._writers: dict[tuple[tuple[int, ...], bool], Any] = {}  # a stage's (``writer``)
        self._movers: dict[tuple[Any, ...], Any] = {}  # a stage's (``mover``)
        slots = {x.arg: x for x in gen.split.slots}
        stage_of = {o: slots[arg].stage for o, arg in state_of_out.items()}
        try:  # cut where the decode step keeps each cache
            self.staged = split_prefill(program, stage_of, S, what, _held_on(gen, param_of))
        except StageError as e:
            if str(e).startswith(what):  # split_prefill's own: it names the prefill
                raise
            raise StageError(f"{what} does not split like the decode step ({S} stages): {e}") from e
        for o, arg in state_of_out.items():
            src = self.staged.out_sources[o]
            if src.kind is not SourceKind.STAGE or src.stage != slots[arg].stage:
                made = f"stage {src.stage}" if src.kind is SourceKind.STAGE else "no stage"
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
        kinds = {
            i: (InputKind.PARAM if i in param_of else InputKind.INPUT)
            for i in range(len(program.in_avals))
        }
        self.state_of_out = state_of_out
        self.plans = [  # each stage's cache outputs written in the decode step's layout
            replace(p, state_out={j: state_of_out[o] for j, o in p.program_out.items()
                                  if o in state_of_out})
            for p in params_as(plan_stages(self.staged, kinds, {}), param_of)
        ]  # fmt: skip
        sp, placed, regs = gen.place, gen.placed, gen.registers
        self.compiled = compile_stages(self.staged.stages, self.plans, sp, gen.roles,
                                       gen.param_specs, placed.state_shardings)  # fmt: skip
        host = {**placed.host_params, **{const_key[i]: v for i, v in constants.items()}}
        # the decode step's placed parameters used again, and ``like``'s (its own placed)
        reuse = (*placed.params, *(() if like is None else like.params))
        self.params = params = place_params(host, self.plans, self.compiled, reuse)
        param_slots = regs.add_params(self.plans, params)
        self.program = build(self, sp, regs.layout, {},
                             {self.token_out: (gen.token.index,)}, param_slots,
                             regs.size, sampler)  # fmt: skip

    def row_axes(self) -> dict[int, int]:
        """``{decode state argument: its axis holding the sequences}``: the axis of each state
        output of the prefill that the prompt's rows land on, followed through the prefill's
        data flow (:func:`hlopipe.stages.row_axes`), worked out once.

        Raises:
          RuntimeConfigError naming the state output whose sequence axis cannot be told (its
          rows mixed on the way, no axis or several of them carrying the rows)."""
        if self._rows is not None:
            return self._rows
        from hlopipe.stages import row_axes

        b, prompt = self._batch, self.prompt_aval
        if len(prompt.shape) != 2 or prompt.shape[0] != b:
            raise RuntimeConfigError(
                f"{self._what}: its prompt is {list(prompt.shape)}, not [{b}, length] (a row a "
                "sequence of the decode step's batch): one sequence's row cannot be prefilled"
            )
        outs = sorted(self.state_of_out)
        found = row_axes(_traced(self._program), self.prompt_arg, 0, outs)
        rows: dict[int, int] = {}
        for o, got in zip(outs, found, strict=True):
            r = self._roles[self.state_of_out[o]]
            named = f"{self._what}: cannot tell which axis of its state output {o} ({r.path}, "
            named += f"{r.dtype}{list(r.shape)}) holds the sequences"
            if got.lost is not None:
                reason = f"the prompt's rows are mixed or not followed at {got.lost}"
            elif len(got.axes) != 1:
                which = sorted(got.axes)
                reason = f"the prompt's rows land on axes {which}" if which else (
                    "it does not depend on the prompt's rows")  # fmt: skip
            elif r.shape[next(iter(got.axes))] != b:
                reason = f"the prompt's rows land on axis {next(iter(got.axes))}, not of size {b}"
            else:
                rows[self.state_of_out[o]] = next(iter(got.axes))
                continue
            raise RuntimeConfigError(
                f"{named} ({reason}), so one sequence's cache row cannot be written alone; "
                "without the prefill, prompts are read by the decode step, a token a step"
            )
        self._rows = rows
        return rows

    def writer(self, args: tuple[int, ...], shardings: tuple[Any, ...], narrow: bool) -> Any:
        """The row writer of one stage's state arguments ``args`` (laid out as
        ``shardings``), all in one call: ``(states, prefilled, which) -> states``, ``which``
        a mask ``[b]`` of the rows taken from ``prefilled`` along each one's sequence axis,
        or (``narrow``: a prefill at fewer rows, ``Generator.narrow_for``) the rows ``[n]``
        its ``n`` rows are written at, one out of range dropped (so that any ``k <= n``
        prompts take the one compile of ``n``). Compiled once a stage and row count (at
        warm-up), the states donated."""
        fn = self._writers.get((args, narrow))
        if fn is None:
            axes = tuple(self.row_axes()[a] for a in args)
            one = _write_at if narrow else _write_rows

            def write(states: Any, prefilled: Any, which: Any) -> tuple[Any, ...]:
                return tuple(one(s, v, which, axis=ax)
                             for s, v, ax in zip(states, prefilled, axes, strict=True))  # fmt: skip

            fn = Held(write, donate_argnums=0, out_shardings=shardings)
            self._writers[(args, narrow)] = fn
        return fn

    def mover(
        self, args: tuple[int, ...], shardings: tuple[Any, ...], rest: tuple[tuple[Any, bool], ...]
    ) -> Any:
        """The row mover of one stage (``Session.move_rows``), all in one call: ``(states,
        donated, kept, src, dst) -> (states, donated, kept)``, rows ``src [b]`` copied to rows
        ``dst [b]`` (read before any is written; a ``dst`` out of range dropped, so that any
        number of rows takes the one compile) along each state argument's sequence axis (the
        stage's ``args``, laid out as ``shardings``) and along the first axis of each other
        per-row register (``rest``: each one's sharding and whether it is donated, in order;
        ``donated`` and ``kept`` hold them so split). Compiled once a stage and register set
        (at warm-up), the states donated."""
        key = (args, rest)
        fn = self._movers.get(key)
        if fn is None:
            axes = tuple(self.row_axes()[a] for a in args)

            def one(x: Any, src: Any, dst: Any, axis: int) -> Any:
                return _write_at(x, x.take(src, axis=axis), dst, axis=axis)

            def move(states: Any, donated: Any, kept: Any, src: Any, dst: Any) -> Any:
                return (tuple(one(s, src, dst, ax) for s, ax in zip(states, axes, strict=True)),
                        tuple(one(x, src, dst, 0) for x in donated),
                        tuple(one(x, src, dst, 0) for x in kept))  # fmt: skip

            out = (shardings, *(tuple(sh for sh, d in rest if d is flag) for flag in (True, False)))
            fn = Held(move, donate_argnums=(0, 1), out_shardings=out)
            self._movers[key] = fn
        return fn


def _write_at(state: Any, prefilled: Any, rows: Any, *, axis: int) -> Any:
    """``state`` with its rows ``rows`` (along ``axis``) ``prefilled``'s, in order; a row out
    of range is dropped."""
    at = [slice(None)] * state.ndim
    at[axis] = rows
    return state.at[tuple(at)].set(prefilled, mode="drop")


def _write_rows(state: Any, prefilled: Any, mask: Any, *, axis: int) -> Any:
    import jax.numpy as jnp

    shape = [1] * state.ndim
    shape[axis] = state.shape[axis]
    return jnp.where(mask.reshape(shape), prefilled, state)


class _RowStep:
    """The decode step computing only its first ``rows`` rows (``row_steps``: its arguments
    and outputs the decode step's, its caches written back at those rows in place), split,
    compiled and placed like the decode step, on the same registers: its step programs run
    on a group's registers as the decode step's do (``Session.issue(rows=...)``), the
    decode step's sampler drawing from its logits (the same shapes: nothing more compiled
    for it)."""

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.staged.stages

    def __init__(self, program: Any, gen: Generator, rows: int, S: int) -> None:
        """Refused by name where ``program``'s arguments are not the decode step's, or it
        keeps a cache on another stage."""
        from hlopipe.stages import split_stateful

        what = f"the decode step at {rows} rows {getattr(program, 'source', '')}".rstrip()
        # its roles are the decode step's (its token and position not told apart again: the
        # data flow of its rows' write-back hides which one indexes the cache)
        roles = gen.roles
        want = [(tuple(r.shape), str(r.dtype)) for r in sorted(roles, key=lambda r: r.index)]
        got = [(tuple(a.shape), str(np.dtype(a.dtype))) for a in program.in_avals]
        state = {(r.index, r.output) for r in program.arg_roles().state}
        same = got == want and state == {(r.index, r.output) for r in roles.state}
        if not same or not 0 < rows < gen.batch:
            raise RuntimeConfigError(
                Keyword("row_steps"), f": {what} does not take and give the arguments and "
                f"outputs of {gen.source} (the whole state, its tokens and positions at "
                f"{gen.batch} rows), or {rows} is not fewer rows than {gen.batch}"
            )  # fmt: skip
        split = split_stateful(program, roles, num_stages=S, what=what)
        decode_stage = {x.arg: x.stage for x in gen.split.slots}
        for x in split.slots:
            if x.stage != decode_stage[x.arg]:
                raise StageError(
                    f"{what}: keeps the cache {x.path} on stage {x.stage}, the decode step on "
                    f"stage {decode_stage[x.arg]}"
                )
        self.rows, self.staged, self._gen = rows, split.staged, gen
        kinds = {r.index: _KIND[r.role] for r in roles}
        self.plans = plan_stages(split.staged, kinds, {x.arg: x for x in split.slots},
                                 split.state_sent)  # fmt: skip
        placed = gen.placed
        self.compiled = compile_stages(self.staged.stages, self.plans, gen.place, gen.roles,
                                       gen.param_specs, placed.state_shardings)  # fmt: skip
        params = place_params(dict(placed.host_params), self.plans, self.compiled, placed.params)
        self._param_slots = gen.registers.add_params(self.plans, params)
        self._programs: dict[tuple[Any, ...], StepProgram] = {}

    def _program(self, homes: Mapping[int, Home]) -> StepProgram:
        """Its step program with the feedback lying at ``homes`` (built once)."""
        gen = self._gen
        key = tuple(homes.get(r.index) for r in gen.roles.feedback)
        prog = self._programs.get(key)
        if prog is None:
            prog = build(self, gen.place, gen.registers.layout, dict(homes), gen._fed_by,
                         self._param_slots, gen.registers.size, gen.sampler)  # fmt: skip
            self._programs[key] = prog
        return prog

    def step_programs(self, homes: Mapping[int, Home], steps: int) -> list[StepProgram]:
        """As ``Generator.step_programs``, of this step."""
        return _chained(self._program, homes, steps)


def _chained(
    program: Callable[[Mapping[int, Home]], StepProgram], homes: Mapping[int, Home], steps: int
) -> list[StepProgram]:
    """``steps`` step programs from ``homes``, each the one reading the feedback where the
    step before left it (``program``: the step program for feedback at given homes, built
    once; each remembers its successor)."""
    prog, out = program(homes), []
    for _ in range(steps):
        out.append(prog)
        if prog.successor is None:
            prog.successor = program(prog.feedback_home)
        prog = prog.successor
    return out


def _held_on(gen: Generator, param_of: Mapping[int, int]) -> dict[int, frozenset[int]]:
    """For each prefill argument that is a decode step's parameter (``param_of``), the stages
    whose decode program reads it: a prefill cut elsewhere would place it twice."""
    stages: dict[int, set[int]] = {}
    for p in gen.plans:
        for kind, key in p.inputs:
            if kind is InputKind.PARAM:
                stages.setdefault(key, set()).add(p.stage)
    return {i: frozenset(stages[a]) for i, a in param_of.items() if a in stages}
