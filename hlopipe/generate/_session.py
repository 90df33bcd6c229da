"""`Session`: groups of sequences being generated, driven by the generator's step programs.

Each group's values live in one register list (``_steps.py``): its parameters, its state on
the stages that keep it, its feedback. A decode step of a group is its step program run on
those registers: asynchronous dispatches only, the position taken from arrays the generator
placed once. Nothing is read back between steps: :meth:`Session.generate` reads its tokens
once, with one batched copy; :meth:`Session.stream` reads each step's tokens while the next
step is already issued; :meth:`Session.issue` returns once its steps are issued, and the
:class:`Issued` handle it returns reads them later (``generate(n)`` is ``issue(n).read()``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Generator as Gen
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import numpy as np

from hlopipe import schedules
from hlopipe.errors import RuntimeConfigError
from hlopipe.generate._placement import CompiledStage, Held
from hlopipe.generate._plan import InputKind, StagePlan, position_value
from hlopipe.generate._sampling import TOP_LOGPROBS, Sampling, count_tokens, set_count_row
from hlopipe.generate._steps import Home, StepProgram
from hlopipe.runtime import BytesSent, GenerateMetrics
from hlopipe.schedules import Phase

if TYPE_CHECKING:
    from hlopipe.generate._chunk import ChunkStep
    from hlopipe.generate._generator import Generator


@dataclass
class _Counters:
    activations: int = 0
    feedback: int = 0
    state: int = 0
    actions: int = 0
    host_s: float = 0.0


def _rows_of(held: tuple[Any, ...], rows: Any) -> tuple[Any, ...]:
    """Rows ``rows`` of each of ``held`` (a group's sampling registers), in one call."""
    return tuple(h[rows] for h in held)


# compiled once a signature and held (``Held``: none through jax.jit's caches, which the
# engine clears once warm), for every generator of the process (so keyed by sharding too)
_take_rows = Held(_rows_of, by_sharding=True)
# the penalties' counts updated in place on their stage (donated: never the zeros shared by
# every session, ``_zeros_on``, which a group's first update replaces by its own)
_count = Held(count_tokens, by_sharding=True, donate_argnums=(0, 1))
_set_row = Held(set_count_row, by_sharding=True, donate_argnums=(0, 1))


class Session:
    """Groups of sequences being generated: state on its stages, tokens fed back on device.

    ``metrics`` (a :class:`~hlopipe.runtime.GenerateMetrics`; ``None`` before the first
    :meth:`generate`) after :meth:`generate` (and after a :meth:`stream` is exhausted): tokens/s,
    time to first token (with a prefill: from ``start`` until group 0's first token is ready,
    read once every step is issued, so that decoding overlaps the later groups' prefills),
    inter-token latency, host time per action, bytes sent by kind since the start and in the
    last call (``state``: counted, 0 when state stays).
    """

    def __init__(
        self,
        gen: Generator,
        prompts: Any,
        tokens: Any,
        state: Any,
        position: Any,
        sampling: Sampling | None = None,
        feedback: Mapping[Any, Any] | None = None,
    ):
        self.gen = gen
        G, b = gen.groups, gen.batch
        self.counters = _Counters()
        self.metrics: GenerateMetrics | None = None  # set by the first generate
        self._prefill_dispatch_s: float | None = None
        # the rows the last ``prefill_rows``'s prefill computed (its prompt's, as run)
        self.prefill_rows_run: int | None = None
        self._time_to_first_token_s: float | None = None
        self._regs: list[list[Any]] = [gen.registers.template for _ in range(G)]
        self._shared: list[Any] = []  # the shared zeros placed as counts or seen (not donated)
        self._masks: dict[tuple[bool, ...], Any] = {}  # rows counted: placed once each
        self._home: dict[int, Home] = {}  # where each feedback argument lies
        # feedback registers holding the host arrays ``feed`` gave (one process): their
        # sharding, for a move that must read a placed array (``_issue``)
        self._on_host: dict[int, Any] = {}
        # each sampling field but counts and seen as last put (``[groups, b]``): one given
        # again unchanged is kept where it lies, not put again
        self._sampled: dict[int, np.ndarray] = {}
        # tokens issued and not yet returned: each group's value, and the stage holding it
        self._pending: list[Any] | None = None
        self._pending_at = 0
        self._first_token = False  # the pending tokens are the prefill's (time to first token)
        self._log: list[tuple[Phase, tuple[int, ...], int]] = []  # (phase, microbatches, position)
        self._t0 = t0 = time.perf_counter()
        if gen.logits_out is not None:  # before a prefill, which may sample the first token
            greedy = Sampling(*(None if v is None else np.stack([v] * G)
                                for v in Sampling.greedy(b)))  # penalties none  # fmt: skip
            self.sampling(sampling or greedy)
        elif sampling is not None:
            self.sampling(sampling)  # refused: the step returns tokens
        if prompts is not None:
            if gen.prefill is None:
                raise RuntimeConfigError("prompts need a prefill program (prefill=...)")
            prompts = _check_shape(prompts, (G, b), "prompts", "[groups, batch, length]", 3)
            prompts = prompts.astype(gen.prefill_for(prompts.shape[2]).prompt_aval.dtype)
            self.position = int(prompts.shape[2])
            self._check_position(self.position)
            self._run_prefill(prompts)  # dispatched, not waited for: decoding overlaps it
            self._prefill_dispatch_s = time.perf_counter() - t0
        else:
            if tokens is None:
                raise RuntimeConfigError("start needs prompts (with a prefill) or tokens=")
            tokens = _check_shape(tokens, (G, *gen.token.shape), "tokens", "[groups, batch]", 2)
            tokens = tokens.astype(gen.token.dtype)
            self.position = 0 if position is None else int(position)
            self._check_position(self.position)
            self._start_from(tokens, state)
        # each sequence's position (a step taking one per sequence; else all alike)
        self.positions = np.full((G, b), self.position, np.int64)
        self._start_feedback(feedback or {})

    @property
    def issued(self) -> list[tuple[Phase, int, int]]:
        """What was issued, ``(phase, group, position)`` in issue order."""
        G = self.gen.groups
        return [(phase, m % G, pos + m // G) for phase, order, pos in self._log for m in order]

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

    def _put_feedback(self, arg: int, values: np.ndarray, host: bool = False) -> None:
        """Each group's first value of feedback argument ``arg`` onto the stage reading it
        (one batched ``device_put`` for the groups). ``host`` (in one process): each kept as
        the host array it is, which the reading executable transfers with its call, about a
        tenth of ``device_put``'s host time (a move reading it puts it first: ``_issue``)."""
        gen = self.gen
        if arg not in gen.first_feedback:  # read by no stage
            return
        reader, sh = gen.first_feedback[arg]
        G, slot = gen.groups, gen.registers.layout.feedback[arg]
        if host and not gen.place.multi:
            placed = list(values.astype(jax.dtypes.canonicalize_dtype(values.dtype), copy=False))
            self._on_host[slot] = sh
        else:
            placed = (jax.device_put(list(values), [sh] * G) if gen.place.local(reader)
                      else [None] * G)  # fmt: skip
            self._on_host.pop(slot, None)
        for g in range(G):
            self._regs[g][slot] = placed[g]
        self._home[arg] = Home(reader, sh)

    def feed(self, tokens: Any, position: Any = None) -> None:
        """Make the next decode step read ``tokens [groups, b]`` in place of the tokens the
        last step made: a prompt consumed by the decode step itself, one token a step (a
        server's prompts of any length). Tokens already issued and not yet read (a prefill's,
        a stream's read-ahead) are still returned first.

        ``position [groups, b]`` (a step taking a position per sequence) sets each sequence's
        position from the next step on: a sequence put back to 0 starts again (its cache row
        written afresh from there, what it held beyond its position never read) while the
        others carry on."""
        gen = self.gen
        arr = _check_shape(tokens, (gen.groups, *gen.token.shape), "tokens", "[groups, batch]", 2)
        if position is not None:
            if not gen.per_sequence:
                raise RuntimeConfigError(
                    f"feed(position=...): {gen.source} takes one position for a whole group, "
                    "not one per sequence; feed the tokens alone"
                )
            pos = _check_shape(position, (gen.groups, gen.batch), "position", "[groups, batch]", 2)
            self._check_position(int(pos.max()))
            self._check_position(int(pos.min()))
            self.positions = pos.astype(np.int64)
            self.position = int(pos.max())
        self._put_feedback(gen.token.index, arr.astype(gen.token.dtype), host=True)

    def move_rows(self, src: Any, dst: Any, group: int = 0) -> None:
        """Move group ``group``'s sequences in rows ``src [m]`` to rows ``dst [m]`` (a step
        taking a position per sequence, with a prefill telling each cache's sequence axis):
        everything kept per row is copied, on the device, in one call a stage (the caches
        donated): each state's cache row, and on the sampling stage the row's sampling (its
        seed: a drawn token's key is its seed folded with its position, so its draws go on
        as they would have), its penalties' counts and seen (:meth:`count`), and the token it
        reads next, wherever it lies; its position on the host. The rows left behind hold
        what they held (free rows: a sequence admitted there writes its own). A server moves
        a sequence left alone in a high row down, so that its group's step runs at fewer rows
        (``issue(rows=...)``).

        Raises:
          RuntimeConfigError: a step taking one position for a group, no prefill (the
            caches' sequence axes are read from its data flow), tokens issued and not yet
            read (a prefill's pending token), or rows not two equally long lists of rows
            in ``range(batch)``, ``dst`` repeated."""
        gen = self.gen
        if not gen.per_sequence or gen.prefill is None:
            raise RuntimeConfigError(
                f"move_rows: {gen.source} "
                + ("takes one position for a whole group" if not gen.per_sequence
                   else "has no prefill, whose data flow tells each cache's sequence axis")
            )  # fmt: skip
        if self._pending is not None:
            raise RuntimeConfigError("move_rows: tokens are pending; read them first (generate)")
        b = gen.batch
        frm, to = np.asarray(src).reshape(-1), np.asarray(dst).reshape(-1)
        if (
            frm.dtype.kind not in "iu"
            or to.dtype.kind not in "iu"
            or len(frm) != len(to)
            or len(set(to.tolist())) != len(to)
            or not all(0 <= r < b for r in [*frm.tolist(), *to.tolist()])
        ):
            raise RuntimeConfigError(
                f"move_rows: src and dst must be as many rows in range({b}), dst distinct, got "
                f"{np.asarray(src).tolist()} and {np.asarray(dst).tolist()}"
            )
        if not isinstance(group, int) or not 0 <= group < gen.groups:
            raise RuntimeConfigError(f"move_rows: group {group!r} is not in range({gen.groups})")
        # one compile whatever the rows: padded to b, a padded row's dst out of range (dropped)
        at_src, at_dst = np.zeros(b, np.int32), np.full(b, b, np.int32)
        at_src[: len(frm)], at_dst[: len(to)] = frm, to
        regs, layout = self._regs[group], gen.registers.layout
        tok = self._home.get(gen.token.index)
        counts = {layout.sampling[Sampling._fields.index(f)] for f in ("counts", "seen")
                  if layout.sampling}  # fmt: skip
        on: dict[int, list[int]] = {}  # each local stage's state arguments
        for x in gen.split.slots:
            if gen.place.local(x.stage):
                on.setdefault(x.stage, []).append(x.arg)
        stages = set(on) | {s for s in (gen.sampler_stage, None if tok is None else tok.stage)
                            if s is not None and gen.place.local(s)}  # fmt: skip
        for stage in sorted(stages):
            args = tuple(on.get(stage, ()))
            rest: list[tuple[int, Any, bool]] = []  # (register, sharding, donated)
            if stage == gen.sampler_stage:  # counts and seen donated (never the shared zeros)
                sh = gen.place.replicated(stage)
                rest += [(k, sh, k in counts) for k in layout.sampling if regs[k] is not None
                         and not any(regs[k] is z for z in self._shared)]  # fmt: skip
            k_tok = layout.feedback[gen.token.index]
            if tok is not None and tok.stage == stage and regs[k_tok] is not None:
                rest.append((k_tok, tok.sharding, False))  # read by issued steps: kept
            shardings = tuple(gen.placed.state_shardings[stage][a] for a in args)
            move = gen.prefill.mover(args, shardings, tuple((sh, d) for _, sh, d in rest))
            rs = [layout.state[a] for a in args]
            moved = move(tuple(regs[r] for r in rs), tuple(regs[k] for k, _, d in rest if d),
                         tuple(regs[k] for k, _, d in rest if not d), at_src, at_dst)  # fmt: skip
            for r, v in zip(rs, moved[0], strict=True):
                regs[r] = v
            donated, kept = [k for k, _, d in rest if d], [k for k, _, d in rest if not d]
            for r, v in zip([*donated, *kept], [*moved[1], *moved[2]], strict=True):
                regs[r] = v
        self.positions[group, to] = self.positions[group, frm].copy()

    def sampling(self, params: Sampling) -> None:
        """How each sequence's next tokens are chosen from the logits (a step returning
        logits): ``params`` holds ``[groups, b]`` arrays (``Sampling``'s fields: seed,
        temperature, top_p, top_k, the penalties presence, frequency, repetition, and whether
        log-probabilities are wanted), and
        ``[groups, b, vocab]`` ones (counts, seen), put on the stage sampling them; a
        penalty's field left ``None`` is none, but counts and seen left ``None`` are kept
        as they are (zeros when the session starts; :meth:`set_counts` and :meth:`count`
        change them on the device). A session starts greedy. A field equal to the one set
        last stays where it lies, not put again (a server's admission changes a row's seed,
        rarely its other fields).

        Raises:
          RuntimeConfigError: the step returns tokens, or a field's shape is not ``[groups,
          b]`` (``[groups, b, vocab]``)."""
        gen = self.gen
        if gen.sampler_stage is None:
            raise RuntimeConfigError(
                f"{gen.source} returns tokens, not logits: it decodes greedily, nothing to sample"
            )
        dtypes = Sampling(np.uint32, np.float32, np.float32, np.int32, np.float32, np.float32,
                          np.float32, np.bool_, np.float32, np.bool_)  # fmt: skip
        none = Sampling(0, 0, 1, 0, 0, 0, 1, False, 0, False)  # a field left None
        values: list[np.ndarray] = []
        stage, local = gen.sampler_stage, gen.place.local(gen.sampler_stage)
        zeros: dict[int, Any] = {}  # counts or seen left None: one placed array of zeros
        keep: dict[int, list[Any]] = {}  # counts or seen left None once set: each group's
        # (or a field given as it was set last)
        put_now: dict[int, np.ndarray] = {}  # the fields put, as the host has them
        for k, (name, value, dtype, default) in enumerate(
            zip(Sampling._fields, params, dtypes, none, strict=True)
        ):
            shape: tuple[int, ...] = (gen.groups, gen.batch)
            if name in ("counts", "seen"):
                shape += (int(gen.vocab or 0),)
                if value is None and self._regs[0][gen.registers.layout.sampling[k]] is not None:
                    keep[k] = [regs[gen.registers.layout.sampling[k]] for regs in self._regs]
                    values.extend([np.zeros(0, dtype)] * gen.groups)  # (a stand-in, not put)
                    continue
                if value is None:  # not put again at every call: [b, vocab] a group
                    zeros[k] = (
                        _zeros_on(shape[1:], dtype, gen.place.replicated(stage)) if local else None
                    )
                    values.extend([np.zeros(0, dtype)] * gen.groups)  # (a stand-in, not put)
                    continue
            arr = np.full(shape, default, dtype) if value is None else np.asarray(value)
            if arr.shape != shape:
                raise RuntimeConfigError(
                    f"sampling {name}: expected shape {list(shape)} ([groups, batch"
                    f"{', vocab' if len(shape) == 3 else ''}]), got {list(arr.shape)}"
                )
            arr = arr.astype(dtype)
            if name not in ("counts", "seen"):
                last = self._sampled.get(k)
                if last is not None and np.array_equal(last, arr):  # (its dtype, as put)
                    keep[k] = [regs[gen.registers.layout.sampling[k]] for regs in self._regs]
                    values.extend([np.zeros(0, dtype)] * gen.groups)  # (a stand-in, not put)
                    continue
                put_now[k] = arr
            values.extend(arr)
        G = gen.groups
        put = [v for k in range(len(Sampling._fields)) if k not in zeros and k not in keep
               for v in values[k * G : (k + 1) * G]]  # fmt: skip
        placed = iter([None] * len(put))
        if local and put:
            placed = iter(jax.device_put(put, [gen.place.replicated(stage)] * len(put)))
        for k, reg in enumerate(gen.registers.layout.sampling):
            for g in range(G):
                if k in keep:
                    self._regs[g][reg] = keep[k][g]
                else:
                    self._regs[g][reg] = zeros[k] if k in zeros else next(placed)
        self._sampled.update(put_now)
        for v in zeros.values():  # (at most two arrays, cached: ``_zeros_on``)
            if v is not None and not any(v is z for z in self._shared):
                self._shared.append(v)

    def set_counts(self, rows: Any, counts: Any, seen: Any, group: int = 0) -> None:
        """Rows ``rows [n]`` of group ``group``'s penalties' ``counts`` (how often each token
        was generated) and ``seen`` (the tokens of the prompt and the output) replaced by
        ``counts``, ``seen [n, vocab]`` (sequences admitted into those rows: a put of their
        rows, a row a call, one shape to compile; the others' kept on the device).
        :meth:`count` then counts their tokens in as they are made.

        Raises:
          RuntimeConfigError: the step returns tokens, or the shapes are not ``[n, vocab]``."""
        gen = self.gen
        stage = self._sampler_stage("set_counts")
        where = np.asarray(rows, np.int32).reshape(-1)
        shape = (len(where), int(gen.vocab or 0))
        c, s = np.asarray(counts, np.float32), np.asarray(seen, np.bool_)
        if c.shape != shape or s.shape != shape:
            raise RuntimeConfigError(
                f"set_counts: counts and seen must be {list(shape)} ([rows, vocab]), got "
                f"{list(c.shape)} and {list(s.shape)}"
            )
        if not gen.place.local(stage):  # another process samples
            return
        kc, ks = self._count_registers(group)
        regs, sh = self._regs[group], gen.place.replicated(stage)
        for i, row in enumerate(where.tolist()):
            placed = jax.device_put([np.int32(row), c[i : i + 1], s[i : i + 1]], [sh] * 3)
            regs[kc], regs[ks] = _set_row(regs[kc], regs[ks], *placed)

    def _count_registers(self, group: int) -> tuple[int, int]:
        """The registers of the penalties' counts and seen, group ``group``'s own (a shared
        zeros array replaced by a copy of its own, which updates may donate)."""
        sampling, regs = self.gen.registers.layout.sampling, self._regs[group]
        pair = sampling[Sampling._fields.index("counts")], sampling[Sampling._fields.index("seen")]
        for k in pair:
            if any(regs[k] is z for z in self._shared):
                held = regs[k]
                regs[k] = jax.device_put(np.zeros(held.shape, held.dtype), held.sharding)
        return pair

    def count(self, rows: Any, tokens: Any = None, group: int = 0) -> None:
        """Count tokens into group ``group``'s penalties' counts and seen (:meth:`set_counts`)
        at the rows where ``rows [b]`` (bool) is set, on the device: the tokens its last
        decode step drew (``tokens`` ``None``; the step's own, before anything is fed), or
        ``tokens [b]`` (fed: a prefill's, known here). Call it once a token is a
        sequence's: the step after reads counts with it.

        Raises:
          RuntimeConfigError: the step returns tokens, or ``tokens`` is ``None`` after a
            feed (the tokens then lie where the step reads them, not where it samples)."""
        gen = self.gen
        stage = self._sampler_stage("count")
        if not gen.place.local(stage):  # another process samples
            return
        tok, layout, regs = gen.token.index, gen.registers.layout, self._regs[group]
        sh = gen.place.replicated(stage)
        if tokens is None:
            home = self._home.get(tok)
            if home is None or home.stage != stage:
                raise RuntimeConfigError(
                    "count: the group's tokens were fed since its last step; give them "
                    "(count(rows, tokens=...))"
                )
            drawn = regs[layout.feedback[tok]]
            if isinstance(drawn, np.ndarray):  # fed (one stage samples and reads it)
                drawn = jax.device_put(drawn, sh)
        else:
            drawn = jax.device_put(np.asarray(tokens, gen.token.dtype).reshape(-1), sh)
        key = tuple(bool(x) for x in np.asarray(rows).reshape(-1))
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = jax.device_put(np.asarray(key, np.bool_), sh)
        kc, ks = self._count_registers(group)
        regs[kc], regs[ks] = _count(regs[kc], regs[ks], drawn, mask)

    def _sampler_stage(self, what: str) -> int:
        if self.gen.sampler_stage is None:
            raise RuntimeConfigError(
                f"{what}: {self.gen.source} returns tokens, not logits: no penalties to count"
            )
        return self.gen.sampler_stage

    def _check_position(self, pos: int) -> None:
        if not 0 <= pos < self.gen.max_len:
            raise RuntimeConfigError(
                f"position {pos} is beyond the cache (length {self.gen.max_len}); shorten the "
                "prompt or the generation"
            )

    def _start_from(self, tokens: np.ndarray, state: Any) -> None:
        """Every group's state (given, or zeros) placed with one batched ``device_put``, and
        the first tokens."""
        gen = self.gen
        n_state = len(gen.split.slots if gen.stacked is None else gen.stacked.original_roles.state)
        values, shardings, where = [], [], []
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
            for arg, reg, sh, zeros in gen.state_places:
                value = zeros if flat is None else given[arg]
                if flat is not None:
                    r = gen.roles[arg]
                    if (np.shape(value), str(np.asarray(value).dtype)) != (r.shape, r.dtype):
                        raise RuntimeConfigError(
                            f"state of group {g}, {r.path}: expected {r.dtype}{list(r.shape)}, "
                            f"got {np.asarray(value).dtype}{list(np.shape(value))}"
                        )
                if sh is None:  # a stage another process computes
                    self._regs[g][reg] = None
                else:
                    values.append(value)
                    shardings.append(sh)
                    where.append((g, reg))
        for (g, reg), v in zip(where, jax.device_put(values, shardings), strict=True):
            self._regs[g][reg] = v
        self._put_feedback(gen.token.index, tokens)

    # -- the driver --------------------------------------------------------------------------
    # Every process runs the same step programs over every stage and every move; it computes
    # its own stages only, and every move between processes is a collective both sides issue
    # in this one order (``_placement.py``).
    def _count(self, prog: StepProgram, times: int) -> None:
        c = self.counters
        c.activations += prog.bytes.activations * times
        c.feedback += prog.bytes.feedback * times
        c.state += prog.bytes.state * times

    def _run_prefill(self, prompts: np.ndarray) -> None:
        gen, pre = self.gen, self.gen.prefill_for(prompts.shape[2])
        prog = pre.program
        G = gen.groups
        order = decode_order(len(gen.plans), G, 1, prefill=True)
        self._log.append((Phase.PREFILL, order, self.position))
        # each stage reading the prompt (every group's, in one device_put) and, for a prefill
        # returning logits, the sampler reading the prompt's last position (its key's)
        last = position_value(gen.position, self.position - 1) if prog.sampler_inputs else None
        placed = {
            slot: (jax.device_put([last] * G if slot in prog.sampler_inputs else list(prompts),
                                  [sh] * G) if gen.place.local(s) else [None] * G)
            for s, slot, sh in prog.inputs
        }  # fmt: skip
        self._fit(prog.size)
        for g in order:  # the decode+prefill schedule's first step of each group, in order
            regs = self._regs[g]
            for _, slot, _ in prog.inputs:
                regs[slot] = placed[slot][g]
            prog.run(regs)
        self._count(prog, G)
        self._home.update(prog.feedback_home)
        tok = gen.registers.layout.feedback[gen.token.index]
        self._pending = [self._regs[g][tok] for g in range(G)]
        self._pending_at = prog.feedback_home[gen.token.index].stage
        self._first_token = True

    def prefill_rows(
        self, prompts: Any, rows: Any, group: int = 0, lengths: Any = None
    ) -> np.ndarray:
        """Start new sequences in some rows of a group while the others carry on (a step
        taking a position per sequence): ``prompts [n, L]`` (the prefill's length) go through
        the prefill, and only their rows ``rows [n]`` of group ``group``'s state are written,
        each from the prefill's row of its prompt, on the stages keeping the state (the other
        rows stay bit for bit as they were). Their positions become ``L``. With a chunk step
        (``Generator.chunk``), ``L`` may also be a prefill's length ``P`` plus whole chunks
        (or any ``L >= P + C`` when ``chunk.overlaps``: the last chunk ends at ``L``, inside
        the one before): the first ``P`` tokens go through that prefill and the rest through
        the chunk step, ``C`` at a time, each on the state the last left (all on scratch
        state before the rows are written).

        ``lengths [n]``: each prompt's own length, the prompts right-padded to the longest
        (default: all ``L``). Prompts past the same prefill ``P`` by chunks share each run
        when the chunk step's rows may start apart (``ChunkStep.apart``): the prefill and
        each chunk one call for all of them, each row at its own position, a row whose
        prompt is read running its last chunk again (the same tokens at the same positions:
        the same keys and values written, the same token made); other lengths run one after
        the other.

        Returns the first token of each, ``[n]`` (the prefill's, sampled from its logits with
        the rows' sampling when it returns logits): feed it at those rows
        (:meth:`feed` with ``position``) before the next step, as the decode step's own tokens
        are fed back.

        Raises:
          RuntimeConfigError: no prefill, a step taking one position for a group, prompts not
          ``[n, L]`` integers, lengths not one a prompt, rows out of ``range(batch)`` or
          repeated, or a state whose sequence axis the prefill's data flow does not tell
          (named).

        Example:
          >>> first = session.prefill_rows(prompts[None, 0], [1])     # doctest: +SKIP
          >>> tokens[0, 1], positions[0, 1] = first[0], prompts.shape[1]
          >>> session.feed(tokens, position=positions)                 # doctest: +SKIP
        """
        gen = self.gen
        if gen.prefill is None:
            raise RuntimeConfigError("prefill_rows needs a prefill program (prefill=...)")
        if not gen.per_sequence:
            raise RuntimeConfigError(
                f"prefill_rows: {gen.source} takes one position for a whole group; start a "
                "session from prompts to prefill whole groups"
            )
        arr = np.asarray(prompts)
        where = np.asarray(rows).reshape(-1)
        ends = None if lengths is None else np.asarray(lengths).reshape(-1)
        if arr.ndim == 2 and ends is None:
            ends = np.full(len(arr), arr.shape[1], np.int64)
        lens = sorted(int(p.prompt_aval.shape[-1]) for p in gen.prefills)
        chunk = gen.chunk
        starts: list[int | None] = []  # each prompt's prefill length (None: none fits)
        if (
            arr.ndim == 2
            and len(arr) > 0
            and ends is not None
            and ends.dtype.kind in "iu"
            and len(ends) == len(arr)
            and all(0 < e <= arr.shape[1] for e in ends.tolist())
        ):
            for e in ends.tolist():
                P_e = e if e in lens else None
                if P_e is None and chunk is not None:  # a prefill's length and whole chunks
                    P_e = chunk.splits(e, tuple(lens))
                starts.append(P_e)
        if not starts or None in starts or arr.dtype.kind not in "iu":
            form = " or ".join(f"[n, {n}]" for n in lens)
            more = ""
            if chunk is not None:  # whole chunks, or the last one inside the one before
                more = f" plus {chunk.length} or more" if chunk.overlaps else (
                    f" plus a multiple of {chunk.length}")  # fmt: skip
                more = f", or one of those{more}: chunks"
            given = "" if lengths is None else f", lengths {np.asarray(lengths).tolist()}"
            raise RuntimeConfigError(
                f"prefill_rows: prompts must be integers shaped {form} (a prefill's length"
                f"{more}), or right-padded to the longest with each one's length given, got "
                f"{arr.dtype}{list(arr.shape)}{given}"
            )
        assert ends is not None
        b = gen.batch
        if (
            where.dtype.kind not in "iu"
            or len(where) != len(arr)
            or len(set(where.tolist())) != len(where)
            or not all(0 <= r < b for r in where.tolist())
        ):
            raise RuntimeConfigError(
                f"prefill_rows: rows must be {len(arr)} distinct integers in range({b}), one a "
                f"prompt, got {where.tolist()}"
            )
        if not isinstance(group, int) or not 0 <= group < gen.groups:
            raise RuntimeConfigError(f"prefill_rows: group {group!r} is not in range({gen.groups})")
        # the runs: prompts of one length each, but those past one prefill by chunks together
        # when the chunk step takes a position a row
        runs: dict[tuple[int, int], list[int]] = {}
        apart = chunk is not None and chunk.apart
        for i, (P_i, e) in enumerate(zip(starts, ends.tolist(), strict=True)):
            assert P_i is not None
            runs.setdefault((P_i, -1 if apart and e > P_i else e), []).append(i)
        made = np.zeros(len(arr), np.int64)
        # each run issued, then their tokens read: no host sync between runs
        issued = [(idx, self._prefill_run(arr[idx, : int(ends[idx].max())], where[idx], group,
                                          P_i, ends[idx]))
                  for (P_i, _), idx in runs.items()]  # fmt: skip
        for idx, read in issued:
            made[idx] = read()
        return made

    def _prefill_run(
        self, arr: np.ndarray, where: np.ndarray, group: int, P: int, ends: np.ndarray
    ) -> Callable[[], np.ndarray]:
        """One run of :meth:`prefill_rows`, issued: ``arr [k, L]`` (each row's prompt its
        first ``ends`` tokens, all past the prefill of ``P`` by chunks, or all ``P``) into
        rows ``where`` of group ``group``; returns what reads their first tokens ``[k]``."""
        gen, chunk = self.gen, self.gen.chunk
        pre = gen.prefill_for(P)
        pre.row_axes()  # refused here when a state's sequence axis cannot be told
        b, L = gen.batch, int(arr.shape[1])
        self._check_position(L)
        # the prefill at the fewest rows holding the prompts (``Generator.narrow_for``), its
        # row i standing for the group's row ``took[i]``; else at the batch, row for row
        # (and the chunks at as many rows, when the prompts go on past the prefill)
        narrow, chunks = gen.narrow_for(P, len(arr)), chunk
        if narrow is not None and L > P:
            chunks = gen.narrow_chunk_for(len(arr))
            if chunks is None or chunks.rows != int(narrow.prompt_aval.shape[0]):
                narrow, chunks = None, chunk
        n, k = b if narrow is None else int(narrow.prompt_aval.shape[0]), len(arr)
        batch = np.repeat(arr[:1], n, axis=0)  # the rows not asked for: any prompt
        to = np.repeat(ends[:1], n)  # each row's end
        took = np.repeat(where[:1], n) if narrow is not None else np.arange(b)
        if narrow is None:
            batch[where], to[where] = arr, ends
        else:
            batch[:k], to[:k], took[:k] = arr, ends, where
        # 1. the prefill on scratch registers, with this group's sampling (its rows')
        prog, layout = (pre if narrow is None else narrow).program, gen.registers.layout
        scratch = gen.registers.template
        scratch.extend([None] * (prog.size - len(scratch)))
        held = {reg: self._regs[group][reg] for reg in layout.sampling}
        if narrow is not None:  # the rows ``took`` of each, in one call
            have = [reg for reg, v in held.items() if v is not None]
            held.update(zip(have, _take_rows(tuple(held[r] for r in have), took), strict=True))
        for reg, v in held.items():
            scratch[reg] = v
        # the prefill's last position (before any chunk), for each of its rows
        last = (position_value(gen.position, P - 1) if narrow is None
                else np.full(n, P - 1, np.dtype(gen.position.dtype)))  # fmt: skip
        dtype = pre.prompt_aval.dtype
        host = not gen.place.multi  # the executables take the host arrays (``feed``'s reason)
        for s, slot, sh in prog.inputs:
            value = last if slot in prog.sampler_inputs else batch[:, :P].astype(dtype)
            if host:
                scratch[slot] = value.astype(jax.dtypes.canonicalize_dtype(value.dtype))
            else:
                scratch[slot] = jax.device_put(value, sh) if gen.place.local(s) else None
        prog.run(scratch)
        self._count(prog, 1)
        self.prefill_rows_run = n
        if L > P:  # 1b. the chunks, each on the state the last left (``_chunk.py``)
            assert chunks is not None
            prog, scratch = self._run_chunks(chunks, scratch, batch, P, to, narrow is not None)
        # 2. only the asked rows of each state written into the group's, each stage's in one
        # call: by a mask from the prefill's row of each (at the batch), else its first k at
        # ``where`` (its other rows at ``b``, out of range: dropped)
        if narrow is None:
            which = np.zeros(b, bool)
            which[where] = True
        else:
            which = np.full(n, b, np.int32)
            which[:k] = where
        regs = self._regs[group]
        on: dict[int, list[int]] = {}  # each local stage's state arguments
        for x in gen.split.slots:
            if gen.place.local(x.stage):
                on.setdefault(x.stage, []).append(x.arg)
        for stage, args in on.items():
            shardings = tuple(gen.placed.state_shardings[stage][a] for a in args)
            write = pre.writer(tuple(args), shardings, narrow is not None)
            rs = [layout.state[a] for a in args]
            mask = which if host else jax.device_put(which, gen.place.replicated(stage))
            made = write(tuple(regs[r] for r in rs), tuple(scratch[r] for r in rs), mask)
            for r, v in zip(rs, made, strict=True):
                regs[r] = v
        self.positions[group, where] = ends
        self.position = int(self.positions.max())
        # 3. their first tokens, in every process (read when asked)
        tok = gen.token
        at = prog.feedback_home[tok.index].stage
        value = scratch[layout.feedback[tok.index]]

        def read() -> np.ndarray:
            got = gen.place.host(value, at) if gen.place.local(at) else None
            if gen.place.multi:
                shape = jax.ShapeDtypeStruct(tuple(tok.shape), tok.dtype)
                got = gen.place.everywhere(got, at, shape)
            return np.asarray(got).reshape(n)[where if narrow is None else slice(k)]

        return read

    def _run_chunks(
        self,
        chunk: ChunkStep,
        made: list[Any],
        batch: np.ndarray,
        start: int,
        ends: np.ndarray,
        narrow: bool = False,
    ) -> tuple[StepProgram, list[Any]]:
        """The chunk step over each row of ``batch`` from ``start`` to its end ``ends``
        (whole chunks), in turn on the state in ``made`` (a prefill's scratch registers),
        donated from chunk to chunk; returns its program (where it left the token) and its
        registers. They are fresh ones with ``made``'s state and sampling: a prefill built
        before the chunk step takes the registers of its parameters for its own values.
        ``narrow``: ``chunk`` is at fewer rows than the batch (``Generator.narrow_chunk_for``),
        a key a row. Rows of different ends (``chunk.apart``) each run at their own position;
        a row whose chunks are all run runs its last again until the longest is read, and
        the last run (sampled) gives every row its token."""
        gen, C = self.gen, chunk.length
        layout = gen.registers.layout
        size = max(chunk.program.size, chunk.inner.size)
        scratch = gen.registers.template
        scratch.extend([None] * (size - len(scratch)))
        for reg in [*layout.state.values(), *layout.sampling]:
            scratch[reg] = made[reg]
        dtype = chunk.tokens_dtype()
        # each row's chunk starts (the last inside the one before: ``overlaps``)
        each = [chunk.starts(start, e) for e in ends.tolist()]
        runs = max(len(s) for s in each)
        rows = np.arange(len(batch))[:, None]
        prog = chunk.program
        for j in range(runs):
            ats = np.asarray([s[min(j, len(s) - 1)] for s in each])
            prog = chunk.program if j == runs - 1 else chunk.inner  # the last samples
            pos = np.dtype(gen.position.dtype)
            if narrow:
                key = (ats + C - 1).astype(pos)
            elif (ats == ats[0]).all():
                key = position_value(gen.position, int(ats[0]) + C - 1)
            else:  # a position a row (``apart``)
                key = (ats + C - 1).astype(pos).reshape(tuple(gen.position.shape))
            tokens = batch[rows, ats[:, None] + np.arange(C)].astype(dtype)  # each row's
            values = {None: key,  # the sampler's key
                      chunk.position_arg: chunk.position_values(ats),
                      chunk.tokens_arg: tokens}  # fmt: skip
            local = [(slot, values[arg], sh)
                     for (s, slot, sh), arg in zip(prog.inputs, prog.input_args, strict=True)
                     if gen.place.local(s)]  # fmt: skip
            placed = jax.device_put([v for _, v, _ in local], [sh for *_, sh in local])
            for _, slot, _ in prog.inputs:
                scratch[slot] = None  # a stage another process computes
            for (slot, _, _), v in zip(local, placed, strict=True):
                scratch[slot] = v
            prog.run(scratch)
            self._count(prog, 1)
        return prog, scratch

    def _fit(self, size: int) -> None:
        for regs in self._regs:
            regs.extend([None] * (size - len(regs)))

    def _issue(
        self, steps: int, logprobs: list[list[Any]] | None = None, rows: int | None = None
    ) -> Gen[tuple[list[Any], int], None, None]:
        """Issue ``steps`` decode steps of every group in the decode schedule's order (round
        robin: step ``t`` of every group, then step ``t + 1``), yielding each step's tokens
        (each group's value, and the stage holding them) once it is issued for every group,
        and appending each step's log-probabilities (each group's) to ``logprobs`` when given
        (a step returning logits). Closed early, what was issued is accounted for (position,
        bytes, ``issued``). ``rows``: the decode step computing its first ``rows`` rows
        (``Generator.narrow_steps``), else the whole batch."""
        gen, G = self.gen, self.gen.groups
        if not steps:
            return
        order = decode_order(len(gen.plans), G, steps)
        step = gen if rows is None else gen.narrow_steps[rows]
        progs = step.step_programs(self._home, steps)
        if gen.per_sequence:
            inputs = gen.placed_sequence_positions(progs, self.positions, steps)
        else:
            inputs = [[row] * G for row in gen.placed_positions(progs, self.position, steps)]
        self._fit(max(p.size for p in progs))
        lift = [k for k in self._on_host if k in progs[0].moved]  # fed, then moved: put first
        if lift:
            for regs in self._regs:
                for k, v in zip(lift, jax.device_put([regs[k] for k in lift],
                                                     [self._on_host[k] for k in lift]),
                                strict=True):  # fmt: skip
                    regs[k] = v
        self._on_host.clear()  # the first step reads them; its results replace them
        tok_arg = gen.token.index
        tok = gen.registers.layout.feedback[tok_arg]
        all_regs, done, host, start = self._regs, 0, 0.0, self.position
        try:
            for t in range(steps):
                h = time.perf_counter()
                prog, row = progs[t], []
                for m in order[t * G : (t + 1) * G]:
                    g = m % G
                    regs = all_regs[g]
                    for slot, value in inputs[t][g]:
                        regs[slot] = value
                    prog.run(regs)
                    row.append(regs[tok])
                if logprobs is not None and prog.logprobs is not None:  # as ``row`` holds
                    logprobs.append([all_regs[m % G][prog.logprobs]
                                     for m in order[t * G : (t + 1) * G]])  # fmt: skip
                done += 1
                host += time.perf_counter() - h
                yield row, prog.feedback_home[tok_arg].stage
        finally:
            if done:
                self._log.append((Phase.DECODE, order[: done * G], start))
                self.position = start + done
                self.positions += done
                self._home = dict(progs[done - 1].feedback_home)
                for p in set(progs[:done]):
                    self._count(p, G * progs[:done].count(p))
            self.counters.host_s += host
            self.counters.actions += done * G * len(gen.plans)

    def _tokens(self, rows: list[tuple[list[Any], int]]) -> np.ndarray:
        """The tokens ``[groups, b, n]`` of ``rows`` (a step's tokens of each group, and the
        stage holding them) on the host, in every process. In one process one batched copy;
        in several, each gathered onto the stage making the last one, then sent to the
        processes that lack them."""
        place, tok = self.gen.place, self.gen.token
        if not place.multi:
            values = [v for row, _ in rows for v in row]
            if len(values) == 1:  # a server's turn of one group: no tree walk, no moveaxis
                return np.array(values[0]).reshape(1, *tok.shape, 1)
            host = jax.device_get(values)
            flat = np.stack(host).reshape(len(rows), self.gen.groups, *tok.shape)
            return np.moveaxis(flat, 0, -1)
        at = rows[-1][1]
        aval = jax.ShapeDtypeStruct(tuple(tok.shape), tok.dtype)
        sh = place.replicated(at)
        moved = [[place.move(v, s, at, aval, sh) for v in row] for row, s in rows]
        out = None
        if place.local(at):
            out = np.moveaxis(np.stack([np.stack(jax.device_get(row)) for row in moved]), 0, -1)
        whole = jax.ShapeDtypeStruct((self.gen.groups, *tok.shape, len(rows)), tok.dtype)
        return place.everywhere(out, at, whole)

    def _row(self, row: tuple[list[Any], int]) -> np.ndarray:
        """One step's tokens ``[groups, b]`` on the host (in one process, each group's
        array read as it is ready)."""
        if self.gen.place.multi:
            return self._tokens([row])[..., 0]
        values = row[0]  # filled in place: np.stack costs 6 us more per token, a stream's path
        first = np.asarray(values[0])
        out = np.empty((len(values), *first.shape), first.dtype)
        out[0] = first
        for g in range(1, len(values)):
            out[g] = np.asarray(values[g])
        return out

    def _begin(self, n: int, what: str) -> int:
        """The number of decode steps of the next ``n`` tokens (one fewer when tokens are
        pending: the prefill's, or a stream's read-ahead), checked against the cache."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise RuntimeConfigError(f"{what} needs a positive number of tokens, got {n!r}")
        pending = self._pending is not None
        steps = n - pending
        last = self.position + steps - 1
        if steps and last >= self.gen.max_len:
            raise RuntimeConfigError(
                f"position {last} is beyond the cache (length {self.gen.max_len}): {steps} "
                f"decode steps from position {self.position}; generate at most "
                f"{self.gen.max_len - self.position + pending} tokens"
            )
        return steps

    def _take_pending(self) -> tuple[list[tuple[list[Any], int]], list[Any] | None]:
        """The tokens issued and not yet returned (a row, or none), and, when they are the
        prefill's, the value to wait on for the time to first token."""
        if self._pending is None:
            return [], None
        rows = [(self._pending, self._pending_at)]
        first = self._pending[:1] if self._first_token else None
        self._pending, self._first_token = None, False
        return rows, first

    def _time_first(self, first: list[Any] | None) -> None:
        """The time to first token, waited for once every step is issued (nothing waits on
        it)."""
        if first is not None:
            jax.block_until_ready([x for x in first if x is not None])
            self._time_to_first_token_s = time.perf_counter() - self._t0

    def generate(self, n: int) -> np.ndarray:
        """The next ``n`` tokens of every sequence, ``[groups, b, n]`` (with a prefill, its
        token is the first of the first call). Every step is issued before any token is read;
        the tokens are read once, at the end: ``issue(n).read()``."""
        return self._issue_steps(n, "generate").read()

    def issue(self, n: int = 1, rows: int | None = None) -> Issued:
        """Issue the decode steps of the next ``n`` tokens of every sequence and return at
        once, without reading anything: :meth:`Issued.read` reads them later, ``[groups, b,
        n]``, the tokens :meth:`generate` would have returned (``generate(n)`` is
        ``issue(n).read()``).

        Meanwhile the host is free to issue other work, which the devices run alongside:
        several sessions (a server's groups) each issued before any is read overlap on the
        stages as the groups of one session do. The session may be fed (:meth:`feed`,
        :meth:`sampling`) and issued again before a handle is read; each handle keeps its own
        tokens, and handles may be read in any order. ``metrics`` are set when a handle is
        read (its wall time from the issue). In a job of several processes, every process
        issues and reads in the same order (a read gathers the tokens with collectives).

        ``rows`` (one of ``Generator.narrow_steps``): the steps compute the first ``rows``
        rows only, their cache rows written back in place and every other row's left as it
        was (its token read back is junk): for a server whose running sequences all lie in
        those rows.

        Example:
          >>> issued = [s.issue() for s in sessions]   # doctest: +SKIP
          >>> tokens = [h.read() for h in issued]     # every stage busy meanwhile

        Raises:
          RuntimeConfigError: ``n`` is not positive, its steps go beyond the cache, or
          ``rows`` is not a row count the generator has a step for."""
        if rows is not None and rows not in self.gen.narrow_steps:
            raise RuntimeConfigError(
                f"issue(rows={rows!r}): the decode step is at "
                f"{sorted(self.gen.narrow_steps) or 'no'} rows besides the batch "
                f"({self.gen.batch}); give one of those or none"
            )
        return self._issue_steps(n, "issue", rows)

    def _issue_steps(self, n: int, what: str, rows: int | None = None) -> Issued:
        steps = self._begin(n, what)
        c = self.counters
        before = Counted(c.activations, c.feedback, c.state, c.host_s)
        t0 = time.perf_counter()
        made, first = self._take_pending()
        logprobs: list[list[Any]] = []
        if steps:
            made += list(self._issue(steps, logprobs, rows))
        return Issued(self, IssuedSteps(made, first, steps, t0, before, logprobs))

    def read_issued(self, issued: IssuedSteps) -> np.ndarray:
        """The tokens of ``issued`` (what :meth:`issue` left on the devices), ``[groups, b,
        n]``, on the host in one batched copy, the time to first token waited for and
        ``metrics`` set (:meth:`Issued.read` calls it once)."""
        self._time_first(issued.first)
        tokens = self._tokens(issued.rows)
        wall = time.perf_counter() - issued.t0
        self._metrics(tokens.size, issued.steps, wall, issued.before)
        return tokens

    def stream(self, n: int) -> Iterator[np.ndarray]:
        """The next ``n`` tokens of every sequence one step at a time, ``[groups, b]`` each,
        as soon as it is ready: step ``t + 1`` is issued before step ``t``'s tokens are read,
        so the devices never wait for the reader. The tokens equal :meth:`generate`'s, and
        ``metrics`` are set when the last one is read.

        Stopping early leaves the step issued ahead pending: the next ``generate`` or
        ``stream`` returns its tokens first.

        Example:
          >>> for tokens in session.stream(32):   # doctest: +SKIP
          ...     send(tokens)                    # a server's inter-token latency
        """
        steps = self._begin(n, "stream")
        return self._stream(steps)

    def _stream(self, steps: int) -> Iterator[np.ndarray]:
        c = self.counters
        before = Counted(c.activations, c.feedback, c.state, c.host_s)
        t0 = time.perf_counter()
        ahead, first = self._take_pending()
        issue = self._issue(steps)
        count = 0
        for row in issue:
            ahead.append(row)
            if len(ahead) > 1:
                self._time_first(first)
                first = None
                got = self._row(ahead.pop(0))
                count += got.size
                try:
                    yield got
                except GeneratorExit:  # the caller stopped: the step issued ahead is pending
                    issue.close()
                    self._pending, self._pending_at = ahead[0]
                    raise
        self._time_first(first)
        last = self._row(ahead[0])
        self._metrics(count + last.size, steps, time.perf_counter() - t0, before)
        yield last

    def _metrics(self, tokens: int, steps: int, wall: float, before: Counted) -> None:
        c = self.counters
        actions = steps * self.gen.groups * len(self.gen.plans)
        self.metrics = GenerateMetrics(
            wall_s=wall,
            tokens=int(tokens),
            tokens_per_s=tokens / wall if wall else float("inf"),
            inter_token_s=wall / steps if steps else 0.0,
            host_per_action_s=(c.host_s - before.host_s) / actions if actions else 0.0,
            # since start, the prefill's included
            bytes_sent=BytesSent(c.activations, c.feedback, c.state),
            decode_bytes_sent=BytesSent(
                c.activations - before.activations,
                c.feedback - before.feedback,
                c.state - before.state,
            ),
            prefill_dispatch_s=self._prefill_dispatch_s,
            time_to_first_token_s=self._time_to_first_token_s,
        )

    def profile(self, repeats: int = 3) -> list[float]:
        """Each stage's decode step alone (seconds, the median of ``repeats`` runs waited
        for), on group 0's state at the current position: what the measured busy fraction
        and the simulator's costs are made of. The state is not changed. A stage another
        process holds is ``nan``."""
        gen = self.gen
        times = []
        for p, c, st in zip(gen.plans, gen.compiled, gen.stages, strict=True):
            if c is None:
                times.append(float("nan"))
                continue
            fn = jax.jit(st.fn)  # no donation: group 0's state must survive
            args = [self._example_input(p, c, i) for i in range(len(p.inputs))]
            jax.block_until_ready(fn(*args))
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*args))
                runs.append(time.perf_counter() - t0)
            times.append(float(np.median(runs)))
        return times

    def _example_input(self, p: StagePlan, c: CompiledStage, i: int) -> Any:
        """Input ``i`` of stage ``p`` for :meth:`profile`: the parameter, group 0's state,
        else zeros (the position: the current one) in the executable's sharding."""
        gen = self.gen
        kind, key = p.inputs[i]
        if kind is InputKind.PARAM:
            return gen.placed.params[p.stage][key]
        if kind is InputKind.STATE:
            return self._regs[0][gen.registers.layout.state[key]]
        aval = gen.stages[p.stage].jaxpr.in_avals[i]
        if kind is InputKind.INPUT:
            pos = min(self.position, gen.max_len - 1)
            return jax.device_put(position_value(gen.position, pos), c.in_shardings[i])
        return jax.device_put(np.zeros(aval.shape, aval.dtype), c.in_shardings[i])

    def _held_state(self, g: int) -> dict[int, tuple[int, Any]]:
        """Group ``g``'s state: ``{argument: (its stage, its value; None in another
        process)}``."""
        regs, layout = self._regs[g], self.gen.registers.layout
        return {x.arg: (x.stage, regs[layout.state[x.arg]]) for x in self.gen.split.slots}

    def state(self, g: int) -> list[np.ndarray]:
        """Group ``g``'s state, the flat state arguments in order (read from the devices; a
        state stacked over the layers reassembled from its stages' slices). In a job of
        several processes, see :meth:`local_state`."""
        held = self._held_state(g)
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
        held = self._held_state(g)
        return {
            gen.roles[slot.arg].path: gen.place.host(held[slot.arg][1], slot.stage)
            for slot in gen.split.slots
            if gen.place.local(slot.stage)
        }


class Counted(NamedTuple):
    """A session's counters when steps were issued (their metrics count from there)."""

    activations: int
    feedback: int
    state: int
    host_s: float


class IssuedSteps(NamedTuple):
    """Decode steps issued and not yet read: each step's tokens (each group's value, the
    stage holding them), the prefill's token to wait on for the time to first token (or
    ``None``), the steps issued (one fewer than the tokens after a prefill), when, and the
    counters then."""

    rows: list[tuple[list[Any], int]]
    first: list[Any] | None
    steps: int
    t0: float
    before: Counted
    logprobs: list[list[Any]] | tuple[()] = ()  # each step's log-probabilities, as ``rows``


class Issued:
    """The tokens of decode steps :meth:`Session.issue` issued, not yet read from the
    devices. :meth:`read` waits for them."""

    def __init__(self, session: Session, issued: IssuedSteps) -> None:
        self.session = session
        self.steps = issued.steps
        self._issued: IssuedSteps | None = issued
        self._result = np.empty(0, np.int32)  # set by the first read
        self._logprobs = issued.logprobs  # on the sampling stage until :meth:`logprobs`
        self._logprobs_at = issued.rows[-1][1] if issued.logprobs else 0  # that stage

    def logprobs(self) -> np.ndarray:
        """The issued steps' log-probabilities, ``[groups, b, steps, 1 + 2k]`` (a step returning
        logits; per token ``_sampling.token_logprobs``: the sampled token's, then the ``k``
        largest, then their ids), on the host in one batched copy. Covers the decode steps
        issued (a prefill's pending token has none). In a job of several processes, every
        process calls it in the same order: the sampling stage's process sends them to each
        other process (one transfer each, as a read's tokens).

        Raises:
          RuntimeConfigError: the step returns tokens."""
        gen = self.session.gen
        if gen.sampler is None:
            raise RuntimeConfigError(
                f"{gen.source} returns tokens, not logits: there are no log-probabilities"
            )
        if not self._logprobs:
            return np.zeros((gen.groups, gen.batch, 0, 0), np.float32)
        at, place = self._logprobs_at, gen.place
        if not place.multi:
            host = np.stack([np.stack(row) for row in jax.device_get(self._logprobs)])
        else:
            held = None
            if place.local(at):
                rows = [[place.host(v, at) for v in row] for row in self._logprobs]
                held = np.stack([np.stack(row) for row in rows])
            width = 1 + 2 * min(TOP_LOGPROBS, int(gen.vocab or 0))
            whole = (len(self._logprobs), gen.groups, gen.batch, width)
            host = place.everywhere(held, at, jax.ShapeDtypeStruct(whole, np.float32))
        return np.moveaxis(host, 0, 2)  # [steps, groups, b, w] -> [groups, b, steps, w]

    @staticmethod
    def read_all(handles: Sequence[Issued]) -> list[np.ndarray]:
        """Each handle's :meth:`read`, the tokens of all of them copied at once when their
        sessions share one generator (a server's groups, each a session of
        ``with_groups(1)``): one batched copy in one process, one transfer to each other
        process in a job of several (where every process calls it with the same handles in
        the same order)."""
        todo = [h for h in handles if h._issued is not None]
        if len(todo) > 1 and all(h.session.gen is todo[0].session.gen for h in todo):
            issued = [h._issued for h in todo if h._issued is not None]
            for h, i in zip(todo, issued, strict=True):
                h.session._time_first(i.first)
            tokens = todo[0].session._tokens([row for i in issued for row in i.rows])
            k = 0
            for h, i in zip(todo, issued, strict=True):
                h._result, k = tokens[..., k : k + len(i.rows)], k + len(i.rows)
                wall = time.perf_counter() - i.t0
                h.session._metrics(h._result.size, i.steps, wall, i.before)
                h._issued = None
        return [h.read() for h in handles]

    def read(self) -> np.ndarray:
        """The tokens, ``[groups, b, n]``, on the host (one batched copy; read once, the same
        array returned again after), and the session's ``metrics`` set."""
        if self._issued is not None:
            self._result = self.session.read_issued(self._issued)
            self._issued = None  # the device values are no longer held
        return self._result


@functools.lru_cache(maxsize=16)
def _zeros_on(shape: tuple[int, ...], dtype: Any, sharding: Any) -> Any:
    """Zeros placed once (a sampling field left as none: device arrays are immutable, so
    every group and session shares it)."""
    return jax.device_put(np.zeros(shape, dtype), sharding)


@functools.lru_cache(maxsize=256)
def decode_order(
    num_stages: int, groups: int, steps: int, *, prefill: bool = False
) -> tuple[int, ...]:
    """The microbatches of ``schedules.decode`` in the order every rank runs them (checked by
    the validator: the driver issues each microbatch's stages in this order). With
    ``prefill``, microbatch ``m < groups`` is group ``m``'s prefill. Kept per shape: a server
    asks for the same few again and again."""
    sched = schedules.decode(num_stages, groups, steps, prefill=prefill)
    schedules.validate(sched)
    rows = [tuple(a.microbatch for a in row if a is not None) for row in sched.actions.values()]
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
