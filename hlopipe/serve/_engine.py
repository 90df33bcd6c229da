"""The engine behind ``hlopipe serve``: requests queue, sequences are generated.

**Slots** (a decode step taking a position per sequence): every sequence of every group is a
slot; each group is a :class:`~hlopipe.generate.Session` of one group that lives as long as
the engine (``Generator.with_groups(1)``). Each turn, every group with a sequence in flight is
fed its slots' tokens and positions (``Session.feed(tokens, position=...)``: a prompt's next
token, or the token the slot made) and its step is issued (``Session.issue``); a group with
none is not run. Only once every group's step is issued are their tokens read
(``Issued.read``), so the groups overlap on the stages as a ``Session``'s groups do (group
``g``'s step on stage 1 while group ``g + 1``'s is on stage 0). A finished
sequence's slot takes the next waiting sequence at the next turn, from position 0 (its cache
row written afresh, its attention masked to its own positions), while the other slots carry
on; a sequence whose prompt has the prefill's length starts instead from the prefill
(``Session.prefill_rows``: the prefill run on its group's new prompts, only their rows of each
cache written, the first token taken from the prefill's output) at the prompt's end. An idle
slot of a busy group runs at position 0 and its tokens are dropped.

**Groups** (a decode step taking one position for a group): a group is the unit of
batching. Each of the generator's ``groups`` slots holds one
:class:`~hlopipe.generate.Session` of one group (``Generator.with_groups(1)``: the same
compiled stages and parameters); a slot whose sequences are all finished takes the next
requests from the queue at once, in a fresh session (its cache starts from zeros), while the
other slots carry on. One thread drives every slot: each turn issues a decode step of
every slot in flight, then reads them in the same order.

**Many processes** (``hlopipe launch``): process 0's engine serves; before each session call
(a slot's session started, fed, given its sampling, prefilled, its step issued, its tokens
read) it sends the call to the other processes (``_control.py``), whose engines
(:meth:`Engine.follow`, no HTTP) make the same calls in the same order.

A prompt of the prefill's length goes through the prefill; any other length is consumed by
the decode step itself, its tokens fed in place of the generated ones (``Session.feed``). The
sequences of one group share the decode step's position, so a group takes requests whose
prompts have the same length; its unused sequences repeat the first one and are dropped.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from hlopipe.errors import DistributedError, RuntimeConfigError
from hlopipe.serve._control import Follower, Leader, Op, OpKind
from hlopipe.serve._output import FinishReason


class ServedGenerator(Protocol):
    """What the engine reads of a generator (:class:`hlopipe.Generator` is one): its groups
    and their batch, the cache length, whether it takes a position per sequence, its
    prefills, the fed-back token's role, its logits output (``None``: it returns tokens), its
    stages' plans, and sessions of one group on the same stages (``with_groups(1)``)."""

    groups: int
    batch: int
    max_len: int
    per_sequence: bool
    prefill: Any
    prefills: tuple[Any, ...]
    token: Any
    logits_out: Any
    vocab: int | None
    plans: Any

    def with_groups(self, groups: int) -> Any: ...


class SamplingParams(NamedTuple):
    """How a sequence's tokens are drawn (a step returning logits): its 32-bit ``seed``,
    ``temperature`` (0: greedy), ``top_p`` (1: no cut), ``top_k`` (0: no cut), and the
    penalties ``presence``, ``frequency`` (0: none) and ``repetition`` (1: none); whether its
    ``logprobs`` are wanted (its group's step then makes them)."""

    seed: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    presence: float = 0.0
    frequency: float = 0.0
    repetition: float = 1.0
    logprobs: bool = False

    @property
    def penalized(self) -> bool:
        return self.presence != 0 or self.frequency != 0 or self.repetition != 1


# SamplingParams' fields
_SAMPLING_DTYPES = (np.uint32, np.float32, np.float32, np.int32, np.float32, np.float32,
                    np.float32, np.bool_)  # fmt: skip


class TokenLogprobs(NamedTuple):
    """A token's log-probability under the step's logits and the ``top`` largest ones asked
    for, ``(token id, log-probability)`` largest first (``_sampling.token_logprobs``)."""

    logprob: float
    top: tuple[tuple[int, float], ...]

    @classmethod
    def of(cls, row: np.ndarray, k: int) -> TokenLogprobs:
        """From one token's ``[1 + 2K]`` row (its own, the ``K`` largest, their ids)."""
        K = (len(row) - 1) // 2
        top = tuple((int(row[1 + K + j]), float(row[1 + j])) for j in range(min(k, K)))
        return cls(float(row[0]), top)


@dataclass
class Sequence:
    """One sequence a request asked for: its prompt, how many tokens, and what came of it."""

    prompt: list[int]
    max_tokens: int
    stop_ids: frozenset[int] = frozenset()
    sampling: SamplingParams = field(default_factory=SamplingParams)
    tokens: list[int] = field(default_factory=list)
    finish: FinishReason | None = None
    cancelled: bool = False  # ended by its output (a stop string): freed at the next step
    logprobs: int | None = None  # how many of the largest log-probabilities (None: none)
    token_logprobs: list[TokenLogprobs] = field(default_factory=list)  # one a token, if asked


@dataclass
class Request:
    """A request's sequences. The engine thread calls ``emit(index, token, finish)`` for each
    token made (``finish``: ``None``, or why the sequence ended on this token) and
    ``emit(-1, None, None)`` once every sequence is finished or cancelled; the web side hands
    them over to its event loop. ``cancelled`` frees its slots at the next step (a client
    that went away); a sequence's own ``cancelled`` frees its slot alone."""

    seqs: list[Sequence]
    emit: Callable[[int, int | None, FinishReason | None], object]
    cancelled: bool = False
    queued_at: float = field(default_factory=time.perf_counter)


@dataclass
class _Slot:
    members: list[tuple[Request, int]]  # (request, sequence index) per batch row in use
    prompts: np.ndarray  # [b, L]
    fed: int  # prompt tokens consumed so far (the prefill consumes them all)


@dataclass
class _Lane:
    """A slot's sequence (a step with a position per sequence): its request and index, the
    prompt tokens fed so far."""

    request: Request
    index: int
    fed: int = 1


class Engine:
    """Continuous batching over a :class:`~hlopipe.generate.Generator`: ``gen.groups`` slots
    of one group each. ``submit`` queues a request; ``start`` warms every path (compiles) in
    the engine thread and then serves; ``stop`` drains the requests in flight and ends.

    In a job of several processes, process 0's engine is given a ``leader`` (it sends each
    session call to the others before making it) and every other process runs
    :meth:`follow`."""

    def __init__(
        self,
        gen: ServedGenerator,
        *,
        on_ready: Callable[[], None] | None = None,
        profile_stages: bool = False,
        leader: Leader | None = None,
    ) -> None:
        self.gen = gen
        self.per_sequence = bool(gen.per_sequence)
        if self.per_sequence and gen.prefill is not None:
            gen.prefill.row_axes()  # a slot prefilled alone: its state's sequence axes, or why not
        self.samples = gen.logits_out is not None  # else greedy only
        # log-probabilities are read in one process (the sampling stage's, not gathered)
        self.gives_logprobs = self.samples and leader is None
        self.one = gen.with_groups(1)
        self.batch = gen.batch
        self.max_len = gen.max_len
        self.prefill_len = None  # the (first) prefill's prompt length
        # every prefill's (buckets), shortest first
        self.prefill_lens = tuple(sorted(int(p.prompt_aval.shape[-1]) for p in gen.prefills))
        self.pads = False  # set at warm-up: prompts of other lengths through the prefills too
        if self.prefill_lens and self.prefill_lens[-1] >= gen.max_len:
            raise RuntimeConfigError(
                f"a prefill of {self.prefill_lens[-1]} tokens leaves no position to generate "
                f"in a cache of {gen.max_len}: export the prefill at fewer tokens"
            )
        if gen.prefill is not None:
            self.prefill_len = int(gen.prefill.prompt_aval.shape[-1])
        self.ready = threading.Event()
        self._on_ready = on_ready
        self._queue: queue.Queue[Request | None] = queue.Queue()
        self._waiting: list[tuple[Request, int]] = []
        self._slots: list[_Slot | None] = [None] * gen.groups
        # slots (a position per sequence): a session per group, a lane per sequence of each
        # each slot's session, by slot (a group's, a position per sequence)
        self._live: dict[int, Any] = {}
        self._issued: dict[int, Any] = {}  # each slot's step issued this turn, not yet read
        self._read: dict[int, Any] = {}  # each slot's step read last (its log-probabilities)
        self._leader = leader  # sends each session call to the other processes first
        self._lanes: list[list[_Lane | None]] = [[None] * gen.batch for _ in range(gen.groups)]
        self._tokens = np.zeros((gen.groups, gen.batch), np.int32)  # what each slot reads next
        self._positions = np.zeros((gen.groups, gen.batch), np.int64)
        self._sampling = [np.zeros((gen.groups, gen.batch), t) for t in _SAMPLING_DTYPES]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hlopipe-engine", daemon=True)
        self.steps = 0
        self.prefilled = 0  # sequences whose prompt went through the prefill
        # each stage's busy fraction (``profile_stages``): its step timed alone once warm
        # (``Session.profile``) times the group steps run, over the time since ready
        self._profile = profile_stages
        self.stage_step_s: list[float] = []
        self.group_steps = 0
        self._ready_at = 0.0
        self.busy_s = 0.0
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    # -- the web side --------------------------------------------------------------------------
    def submit(self, request: Request) -> None:
        """Queue ``request``; after the engine stopped on an error it is finished at once
        (``error`` says why)."""
        with self._lock:
            if self.error is None:
                self._queue.put(request)
                return
        request.emit(-1, None, None)

    def queue_depth(self) -> int:
        return self._queue.qsize() + len(self._waiting)

    def running(self) -> int:
        """The sequences holding a slot (reading their prompts or generating)."""
        lanes = sum(lane is not None for row in self._lanes for lane in row)
        held = [slot for slot in self._slots if slot is not None]
        return lanes + sum(r.seqs[i].finish is None for slot in held for r, i in slot.members)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Drain: the requests queued and in flight finish, then the thread ends."""
        self._stopping.set()
        self._queue.put(None)
        self._thread.join(timeout)

    # -- the engine thread -----------------------------------------------------------------------
    def _prepare(self) -> None:
        """What every process does alike before serving: compile, time the stages."""
        self._warm()
        if self._profile:
            self.stage_step_s = self._profiled()
        self._ready_at = time.perf_counter()

    def _run(self) -> None:
        try:
            self._prepare()
            if self._profile and self._leader is not None:  # the other processes' stages
                self.stage_step_s = self._leader.gather_times(self.stage_step_s)
            self.ready.set()
            if self._on_ready is not None:
                self._on_ready()
            self._loop()
            if self._leader is not None:
                self._leader.send(Op(OpKind.STOP))
        except BaseException as e:  # the thread's boundary: kept for /health and re-raised
            with self._lock:
                self.error = e
            self._fail_all()
            if self._leader is not None:
                self._tell_failure(e)
            raise

    def _tell_failure(self, e: BaseException) -> None:
        """Stop the other processes with process 0's error (unless the channel is what
        failed: their heartbeat then names this process)."""
        assert self._leader is not None
        with contextlib.suppress(DistributedError):
            self._leader.send(Op(OpKind.FAIL, message=f"{type(e).__name__}: {e}"))

    def follow(self, follower: Follower) -> None:
        """Another process's engine (no HTTP): compile as process 0 does, then make process
        0's session calls in its order until it stops.

        Raises:
          DistributedError: process 0's engine failed (its error is named), or process 0
            was lost."""
        self._prepare()
        if self._profile:
            follower.share_times(self.stage_step_s)
        self.ready.set()
        while True:
            op = follower.receive()
            if op.kind is OpKind.STOP:
                return
            if op.kind is OpKind.FAIL:
                raise DistributedError(f"process 0's serving engine failed: {op.message}")
            self._apply(op)

    def _do(self, op: Op) -> Any:
        """Make a session call, sent to the other processes first (a job of several)."""
        if self._leader is not None:
            self._leader.send(op)
        return self._apply(op)

    def _do_all(self, ops: list[Op]) -> list[Any]:
        """Make session calls in order, sent to the other processes first in one broadcast
        (a turn's: none depends on another's result)."""
        if self._leader is not None:
            for op in ops:
                self._leader.queue(op)
            self._leader.flush()
        return [self._apply(op) for op in ops]

    def _apply(self, op: Op) -> Any:
        if op.kind is OpKind.START:
            first, *sampling = op.values
            if first.ndim == 3:  # prompts of the prefill's length (and the group's sampling)
                from hlopipe.generate import Sampling

                how = Sampling(*sampling) if sampling else None
                self._live[op.slot] = self.one.start(first, sampling=how)
            else:
                self._live[op.slot] = self.one.start(tokens=first, position=0)
            return None
        session = self._live[op.slot]
        if op.kind is OpKind.FEED:
            tokens, *position = op.values
            session.feed(tokens, position=position[0] if position else None)
            return None
        if op.kind is OpKind.SAMPLING:
            from hlopipe.generate import Sampling

            session.sampling(Sampling(*op.values))
            return None
        if op.kind is OpKind.STEP:  # issued only: the turn's other groups are issued next
            self._issued[op.slot] = session.issue(1)
            return None
        if op.kind is OpKind.READ:
            self._read[op.slot] = issued = self._issued.pop(op.slot)
            return issued.read()
        if op.kind is OpKind.PREFILL:
            prompts, rows = op.values
            return session.prefill_rows(prompts, rows)
        raise ValueError(f"{op.kind} is not a session call")  # pragma: no cover - a bug

    def _fail_all(self) -> None:
        """Finish every request queued or in flight (after an error: none is left waiting)."""
        requests = [m[0] for slot in self._slots if slot is not None for m in slot.members]
        requests += [lane.request for row in self._lanes for lane in row if lane is not None]
        requests += [r for r, _ in self._waiting]
        while not self._queue.empty():
            r = self._queue.get_nowait()
            if r is not None:
                requests.append(r)
        for r in {id(r): r for r in requests}.values():
            r.emit(-1, None, None)

    def _warm(self) -> None:
        """Compile every path once: the prefill (if any), a decode step, a fed token."""
        b, token = self.batch, self.gen.token
        if self.per_sequence:
            for g in range(self.gen.groups):
                session = self.one.start(tokens=np.zeros((1, b), token.dtype), position=0)
                session.generate(1)
                session.feed(self._tokens[g : g + 1], position=self._positions[g : g + 1])
                session.generate(1)
                for P in self.prefill_lens:  # each prefill and each state's row writer
                    session.prefill_rows(np.zeros((1, P), np.int32), [0])
                self._live[g] = session
            if self.prefill_len is not None:
                self.pads = self._padding_agrees()
            return
        for P in self.prefill_lens:
            s = self.one.start(np.zeros((1, b, P), np.int32))
            s.generate(2)
        s = self.one.start(tokens=np.zeros((1, b), token.dtype), position=0)
        s.generate(1)
        s.feed(np.zeros((1, b), np.int32))
        s.generate(1)

    def _padding_agrees(self) -> bool:
        """Whether a prompt shorter than a prefill may go through it right-padded: for each
        prefill of ``P`` tokens, the tokens after prompts of two lengths (``P``, or the cache
        less 2 if shorter, and about ``P / 2``), their first ``len - 1`` tokens prefilled with
        junk after them and the last fed to the decode step at its position, equal the decode
        step's own on the whole prompt fed a token a step (greedy, three tokens each). True
        of a causal prefill whose padded positions the decode step overwrites before it
        reads them (its attention masked to positions up to its own); a program for which it
        fails has its prompts read by the decode step instead (but for prompts of a
        prefill's length)."""
        top, b = min(max(self.prefill_lens), self.max_len - 2), self.batch
        if top < 2:
            return False
        dtype = self.gen.token.dtype
        greedy = None
        if self.samples:
            from hlopipe.generate import Sampling

            none = zip(SamplingParams(), _SAMPLING_DTYPES, strict=True)
            greedy = Sampling(*(np.full((1, b), v, t) for v, t in none))
        plain = self.one.start(tokens=np.ones((1, b), dtype), position=0)
        if greedy is not None:
            plain.sampling(greedy)
        made = plain.generate(top + 2)[0, 0]  # fed 1 then its own tokens: a prompt and after
        prompt = [1, *made[: top - 1].tolist()]
        checks = {(P, n) for P in self.prefill_lens for n in (min(P, top), max(2, P // 2))}
        for P, length in sorted(checks):
            head = prompt[: length - 1]
            junk = (prompt[::-1] * 2)[: P - len(head)]  # anything but the prompt's own tokens
            padded = self.one.start(tokens=np.zeros((1, b), dtype), position=0)
            if greedy is not None:
                padded.sampling(greedy)
            padded.prefill_rows(np.asarray([head + junk], np.int32), [0])
            tokens = np.zeros((1, b), dtype)
            positions = np.zeros((1, b), np.int64)
            tokens[0, 0], positions[0, 0] = prompt[length - 1], length - 1
            padded.feed(tokens, position=positions)
            after = padded.generate(3)[0, 0].tolist()
            if after != made[length - 1 : length + 2].tolist():
                return False
        return True

    def _profiled(self) -> list[float]:
        """Each stage's decode step alone, in seconds (on a session of one group)."""
        if self.per_sequence:
            return list(self._live[0].profile())
        zeros = np.zeros((1, self.batch), self.gen.token.dtype)
        return list(self.one.start(tokens=zeros, position=0).profile())

    def stage_step(self, stage: int) -> float:
        """Stage ``stage``'s decode step timed alone once warm, in seconds (0 without
        profiling)."""
        return self.stage_step_s[stage] if stage < len(self.stage_step_s) else 0.0

    def stage_busy(self, stage: int) -> float:
        """Stage ``stage``'s busy fraction since the engine was ready: its step's time alone
        times the group steps run, over the wall time (0 before, or without profiling)."""
        if stage >= len(self.stage_step_s) or not self._ready_at:
            return 0.0
        wall = time.perf_counter() - self._ready_at
        busy = self.stage_step_s[stage] * self.group_steps / wall if wall else 0.0
        return busy if math.isnan(busy) else min(1.0, busy)  # nan: a stage not timed here

    def _loop(self) -> None:
        if self.per_sequence:
            self._loop_slots()
            return
        while True:
            self._take(block=not any(self._slots))
            if self._stopping.is_set() and not any(self._slots) and not self._waiting:
                return
            self._fill()
            t0 = time.perf_counter()
            live = [(i, slot) for i, slot in enumerate(self._slots) if slot is not None]
            for i, slot in live:  # every group's step issued before any is read: they overlap
                seqs = [r.seqs[j] for r, j in slot.members]
                if self.samples and slot.fed >= slot.prompts.shape[1] and self._penalized(seqs):
                    self._do(Op(OpKind.SAMPLING, i, self._slot_sampling(slot.members)))  # counts
                self._do(Op(OpKind.STEP, i))
            for i, slot in live:
                self._slots[i] = self._step(i, slot)
                self.group_steps += 1
            if any(self._slots):
                self.busy_s += time.perf_counter() - t0
                self.steps += 1

    # -- slots ---------------------------------------------------------------------------------
    def _busy(self) -> bool:
        return any(lane is not None for row in self._lanes for lane in row)

    def _loop_slots(self) -> None:
        while True:
            self._take(block=not self._busy())
            if self._stopping.is_set() and not self._busy() and not self._waiting:
                return
            self._admit()
            if not self._busy():
                continue
            t0 = time.perf_counter()
            made = np.zeros_like(self._tokens)
            live = [g for g, row in enumerate(self._lanes) if any(x is not None for x in row)]
            ops = []  # the turn's calls, one broadcast in a job of several processes
            for g in live:  # every group's step issued before any is read: they overlap
                if self._penalized([x.request.seqs[x.index] for x in self._lanes[g] if x]):
                    ops.append(Op(OpKind.SAMPLING, g, self._group_sampling(g)))  # new counts
                tokens, positions = self._tokens[g : g + 1], self._positions[g : g + 1]
                ops += [Op(OpKind.FEED, g, (tokens.copy(), positions.copy())), Op(OpKind.STEP, g)]
            ops += [Op(OpKind.READ, g) for g in live]
            lps: dict[int, np.ndarray] = {}  # [b, 1 + 2k] of a group asked for them
            for g, got in zip(live, self._do_all(ops)[-len(live) :], strict=True):
                made[g] = got[0, :, 0]
                self.group_steps += 1
                if any(
                    x is not None and _asks_logprobs(x.request, x.index) for x in self._lanes[g]
                ):
                    lps[g] = self._read[g].logprobs()[0, :, 0]
            self._advance(made, lps)
            self.busy_s += time.perf_counter() - t0
            self.steps += 1

    @staticmethod
    def _penalized(seqs: list[Sequence]) -> bool:
        return any(s.sampling.penalized and s.finish is None for s in seqs)

    def _penalties(self, rows: list[Sequence | None]) -> tuple[np.ndarray, ...]:
        """The penalties' ``counts`` and ``seen`` ``[1, b, vocab]`` of a group's rows (a
        sequence, or ``None``: an idle row), from the sequences' tokens so far: how often
        each token was generated, and the tokens of the prompt and the output."""
        vocab = self.gen.vocab
        assert vocab is not None  # a step returning logits
        counts = np.zeros((1, len(rows), vocab), np.float32)
        seen = np.zeros((1, len(rows), vocab), np.bool_)
        for b, seq in enumerate(rows):
            if seq is not None:
                made = np.asarray(seq.tokens, np.int64)
                counts[0, b] = np.bincount(made, minlength=vocab)[:vocab]
                seen[0, b, np.asarray(seq.prompt, np.int64)] = True
                seen[0, b, made] = True
        return counts, seen

    def _group_sampling(self, g: int) -> tuple[np.ndarray, ...]:
        """Group ``g``'s sampling (a position per sequence): its rows' fields ``[1, b]``, and
        the penalties' counts when one of its sequences has a penalty."""
        values = tuple(f[g : g + 1].copy() for f in self._sampling)
        seqs = [x.request.seqs[x.index] if x is not None else None for x in self._lanes[g]]
        if self._penalized([s for s in seqs if s is not None]):
            values += self._penalties(seqs)
        return values

    def _admit(self) -> None:
        """Each free slot takes the next waiting sequence: a prompt of the prefill's length
        through the prefill (the slots of a group so admitted share one run, and start
        generating from the prompt's end), any other from its first token at position 0."""
        self._waiting = [(r, i) for r, i in self._waiting if not _gone(r, i)]
        changed: set[int] = set()  # the groups whose sampling changed
        prefill: dict[int, list[tuple[int, _Lane]]] = {}  # per group, the slots prefilled
        for g, row in enumerate(self._lanes):
            for b, lane in enumerate(row):
                if lane is not None or not self._waiting:
                    continue
                req, i = self._waiting.pop(0)
                seq = req.seqs[i]
                row[b] = lane = _Lane(req, i)
                self._tokens[g, b] = seq.prompt[0]
                self._positions[g, b] = 0
                # a prompt of a prefill's length whose log-probabilities are asked for is
                # padded (its last token's read by the decode step, which gives them) or read
                whole = len(seq.prompt) in self.prefill_lens and seq.logprobs is None
                if whole or (self.pads and len(seq.prompt) > 1) or self._chunked(seq.prompt):
                    prefill.setdefault(g, []).append((b, lane))
                for field_values, value in zip(self._sampling, seq.sampling, strict=True):
                    field_values[g, b] = value
                changed.add(g)
        if changed and self.samples:  # before the prefill, which samples the first token
            for g in sorted(changed):
                self._do(Op(OpKind.SAMPLING, g, self._group_sampling(g)))
        for g, slots in prefill.items():
            self._prefill(g, slots)

    def _prefill(self, g: int, slots: list[tuple[int, _Lane]]) -> None:
        """Group ``g``'s slots (row, lane) start from their prompts through one prefill run:
        their cache rows written. A prompt of the prefill's length gives out its first token
        and goes on past the prompt; any other (``pads``: a shorter one right-padded, its last
        token left out; a longer one's first ``P`` tokens) goes on from its next prompt token
        at its position, read by the decode step."""
        heads = [
            self._head(
                lane.request.seqs[lane.index].prompt, _asks_logprobs(lane.request, lane.index)
            )
            for _, lane in slots
        ]
        by_length: dict[int, list[int]] = {}  # a run of each prefill needed
        for k, (row, _) in enumerate(heads):
            by_length.setdefault(len(row), []).append(k)
        made = [0] * len(slots)
        for ks in by_length.values():
            rows = np.asarray([slots[k][0] for k in ks], np.int64)
            prompts = np.asarray([heads[k][0] for k in ks], np.int32)
            for k, tok in zip(ks, self._do(Op(OpKind.PREFILL, g, (prompts, rows))), strict=True):
                made[k] = int(tok)
        self.prefilled += len(slots)
        for (b, lane), tok, (_, n) in zip(slots, made, heads, strict=True):
            prompt = lane.request.seqs[lane.index].prompt
            if n < len(prompt):  # the prefill's token is not the prompt's next: dropped
                lane.fed = n + 1
                self._tokens[g, b], self._positions[g, b] = prompt[n], n
                continue
            lane.fed = n
            self._tokens[g, b], self._positions[g, b] = int(tok), n
            self._give(lane.request, lane.index, int(tok))
            if lane.request.seqs[lane.index].finish is not None:  # one token asked: done
                self._lanes[g][b] = None
                self._tokens[g, b], self._positions[g, b] = 0, 0

    def _head(self, prompt: list[int], padded: bool = False) -> tuple[list[int], int]:
        """The row a prefill reads for ``prompt`` and how many of the prompt's tokens it
        covers: all of one of a prefill's length (unless ``padded``: its first token's
        log-probabilities are asked for, which the decode step gives); else its first
        ``len - 1`` through the
        shortest prefill that holds them, padded with the last of them (positions the decode
        step overwrites before it reads them), or, longer than every prefill, its first ``P``
        through the longest."""
        L = len(prompt)
        if L in self.prefill_lens and not padded:
            return prompt, L
        if self._chunked(prompt):  # a prefill and chunks (``generate/_chunk.py``)
            chunk = getattr(self.gen, "chunk", None)
            assert chunk is not None  # _chunked
            return chunk.row(prompt, self.prefill_lens, self.max_len, exact=not padded)
        fits = [P for P in self.prefill_lens if P >= L - 1]
        P = fits[0] if fits else self.prefill_lens[-1]
        n = min(L - 1, P)
        return prompt[:n] + [prompt[n - 1]] * (P - n), n

    def _chunked(self, prompt: list[int]) -> bool:
        """Whether ``prompt`` is longer than every prefill and a chunk step continues it."""
        return getattr(self.gen, "chunk", None) is not None and len(prompt) - 1 > max(
            self.prefill_lens
        )

    def _advance(self, made: np.ndarray, lps: dict[int, np.ndarray]) -> None:
        """After a step: each slot's next token and position (its prompt's next, or what it
        made), its sequence's token given out (with its log-probabilities when asked: ``lps``
        has them of its group), a finished sequence's slot freed."""
        for g, row in enumerate(self._lanes):
            for b, lane in enumerate(row):
                if lane is None:
                    continue
                req, seq = lane.request, lane.request.seqs[lane.index]
                self._positions[g, b] += 1
                if _gone(req, lane.index):
                    self._cancel(req, lane.index)
                elif lane.fed < len(seq.prompt):  # still reading the prompt
                    self._tokens[g, b] = seq.prompt[lane.fed]
                    lane.fed += 1
                    continue
                else:
                    tok = int(made[g, b])
                    self._tokens[g, b] = tok
                    self._give(req, lane.index, tok, lps[g][b] if g in lps else None)
                if seq.finish is not None:
                    row[b] = None
                    self._tokens[g, b], self._positions[g, b] = 0, 0

    def _give(self, req: Request, i: int, tok: int, lp: np.ndarray | None = None) -> None:
        """Sequence ``i`` of ``req`` made ``tok`` (and ``lp``, its log-probabilities row, when
        they are asked for): kept, its end told, and handed out."""
        seq = req.seqs[i]
        seq.tokens.append(tok)
        if seq.logprobs is not None:
            assert lp is not None  # a sequence asking for them takes the routes giving them
            seq.token_logprobs.append(TokenLogprobs.of(lp, seq.logprobs))
        if tok in seq.stop_ids:
            seq.finish = FinishReason.STOP
        elif len(seq.tokens) >= seq.max_tokens:
            seq.finish = FinishReason.LENGTH
        req.emit(i, tok, seq.finish)
        self._ended(req)

    def _cancel(self, req: Request, i: int) -> None:
        """Sequence ``i`` of ``req`` ends where it is (its client or its output ended it)."""
        req.seqs[i].finish = FinishReason.CANCELLED
        self._ended(req)

    @staticmethod
    def _ended(req: Request) -> None:
        if all(s.finish is not None for s in req.seqs):
            req.emit(-1, None, None)

    def _take(self, block: bool) -> None:
        """Move what was submitted into the waiting list (waiting for one when idle)."""
        try:
            while True:
                r = self._queue.get(block=block and not self._waiting)
                block = False
                if r is None:  # stop: wakes the thread
                    continue
                self._waiting.extend((r, i) for i in range(len(r.seqs)))
        except queue.Empty:
            return

    def _fill(self) -> None:
        """Give each free slot the next waiting sequences (up to the batch, prompts of one
        length: the first waiting one's)."""
        self._waiting = [(r, i) for r, i in self._waiting if not _gone(r, i)]
        for k, slot in enumerate(self._slots):
            if slot is not None or not self._waiting:
                continue
            length = len(self._waiting[0][0].seqs[self._waiting[0][1]].prompt)
            members = [m for m in self._waiting if len(m[0].seqs[m[1]].prompt) == length]
            members = members[: self.batch]
            taken = {id(m[0]) * 1_000_003 + m[1] for m in members}
            self._waiting = [m for m in self._waiting if id(m[0]) * 1_000_003 + m[1] not in taken]
            self._slots[k] = self._begin(k, members)

    def _begin(self, k: int, members: list[tuple[Request, int]]) -> _Slot:
        prompt_rows = [r.seqs[i].prompt for r, i in members]
        prompt_rows += [prompt_rows[0]] * (self.batch - len(prompt_rows))
        prompts = np.asarray(prompt_rows, np.int32)
        values = self._slot_sampling(members) if self.samples else ()
        asked = any(_asks_logprobs(r, i) for r, i in members)  # the prefill gives none
        if prompts.shape[1] in self.prefill_lens and not asked:  # sampling set before it runs
            self._do(Op(OpKind.START, k, (prompts[None], *values)))
            self.prefilled += len(members)
            return _Slot(members, prompts, prompts.shape[1])
        first = prompts[None, :, 0].astype(self.gen.token.dtype)
        self._do(Op(OpKind.START, k, (first,)))
        if values:
            self._do(Op(OpKind.SAMPLING, k, values))
        return _Slot(members, prompts, 1)

    def _slot_sampling(self, members: list[tuple[Request, int]]) -> tuple[np.ndarray, ...]:
        """One position a group, a step returning logits: a slot's sampling, ``[1, b]`` per
        field (its unused rows repeat the first), and the penalties' counts so far when one of
        its sequences has a penalty."""
        seqs = [r.seqs[i] for r, i in members]
        rows = [s.sampling for s in seqs]
        rows += [rows[0]] * (self.batch - len(rows))
        columns = zip(*rows, strict=True)
        values: tuple[np.ndarray, ...] = tuple(
            np.asarray([c], t) for c, t in zip(columns, _SAMPLING_DTYPES, strict=True)
        )
        if self._penalized(seqs):
            values += self._penalties([*seqs, *[None] * (self.batch - len(seqs))])
        return values

    def _step(self, k: int, slot: _Slot) -> _Slot | None:
        """Slot ``k``'s decode step (issued with the turn's others) read: a prompt token fed
        for the next, or a token given to each sequence. Returns the slot, or ``None`` once
        every sequence in it is finished."""
        row = self._do(Op(OpKind.READ, k))[0, :, 0]
        L = slot.prompts.shape[1]
        lps = None
        if slot.fed >= L and any(_asks_logprobs(r, i) for r, i in slot.members):
            lps = self._read[k].logprobs()[0, :, 0]
        if slot.fed < L:  # still reading the prompt: its next token replaces the made one
            self._do(Op(OpKind.FEED, k, (slot.prompts[None, :, slot.fed].copy(),)))
            slot.fed += 1
            return slot
        live = False
        for b, (req, i) in enumerate(slot.members):
            seq = req.seqs[i]
            if seq.finish is not None:
                continue
            if _gone(req, i):
                self._cancel(req, i)
                continue
            self._give(req, i, int(row[b]), None if lps is None else lps[b])
            live = live or seq.finish is None
        return slot if live else None


def _asks_logprobs(req: Request, i: int) -> bool:
    return req.seqs[i].logprobs is not None


def _gone(req: Request, i: int) -> bool:
    """Whether sequence ``i`` of ``req`` was cancelled (its client left, or its output ended
    it)."""
    return req.cancelled or req.seqs[i].cancelled
