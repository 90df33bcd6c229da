"""The serving engine's runner: a :class:`~hlopipe.serve._scheduler.StepPlan` made into
session calls on a :class:`ServedGenerator`.

Each of the generator's groups is a :class:`~hlopipe.generate.Session` of one group on the
same compiled stages (``Generator.with_groups(1)``): with a position per sequence one session
a group lives as long as the runner (begun at warm-up), else a group's session is begun afresh
by each :class:`~hlopipe.serve._scheduler.Start`. :meth:`Runner.run` turns a plan into calls
(:class:`~hlopipe.serve._control.Op`): rows moved, sessions begun, sampling set, prefills
run, tokens fed (a row prefilled this turn its prefill's token, taken from the prefill's
result), every
stepped group's decode step issued (``Session.issue``), then all of them read in one batched
copy (``Issued.read_all``), so the groups overlap on the stages, and the log-probabilities
read of the groups asking for them.

**Many processes** (``hlopipe launch``): process 0's runner sends a plan's calls (a turn's,
its prefills included) to the other processes in one broadcast (``_control.py``) before making
them; every other process's runner (:meth:`Runner.follow`, no HTTP) makes the same calls in
the same order. The tokens, and the
log-probabilities where read, reach every process through the generator itself.

The warm-up compiles every path (each prefill, a decode step at each row count it runs at, a
fed token) and decides whether prompts shorter than a prefill may go through it right-padded
(:meth:`Runner._padding_agrees`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from hlopipe.errors import DistributedError, RuntimeConfigError
from hlopipe.serve._control import Follower, Leader, Op, OpKind
from hlopipe.serve._scheduler import (
    PREFILLED,
    SamplingParams,
    Sequence,
    StepPlan,
    StepResult,
)


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
    chunk: Any  # a chunk step continuing prompts longer than every prefill, or None
    token: Any
    logits_out: Any
    vocab: int | None
    plans: Any

    @property
    def narrow(self) -> Mapping[tuple[int, int], Any]: ...  # (length, rows): prefills at fewer

    @property
    def narrow_steps(self) -> Mapping[int, Any]: ...  # rows: the decode step at its first rows

    def with_groups(self, groups: int) -> Any: ...


# SamplingParams' fields
_SAMPLING_DTYPES = (np.uint32, np.float32, np.float32, np.int32, np.float32, np.float32,
                    np.float32, np.bool_)  # fmt: skip


class Runner:
    """Makes plans' session calls on ``gen`` (sent first to the other processes of a job by
    ``leader``, process 0's)."""

    def __init__(self, gen: ServedGenerator, *, leader: Leader | None = None) -> None:
        self.gen = gen
        self.per_sequence = bool(gen.per_sequence)
        if self.per_sequence and gen.prefill is not None:
            gen.prefill.row_axes()  # a slot prefilled alone: its state's sequence axes, or why not
        # sequences left above free rows moved down (``Session.move_rows``: the prefill tells
        # the caches' sequence axes), where the decode step runs at fewer rows
        self.moves = self.per_sequence and gen.prefill is not None and bool(gen.narrow_steps)
        self.samples = gen.logits_out is not None  # else greedy only
        self.one = gen.with_groups(1)
        self.batch = gen.batch
        self.max_len = gen.max_len
        # every prefill's prompt length (buckets), shortest first
        self.prefill_lens = tuple(sorted(int(p.prompt_aval.shape[-1]) for p in gen.prefills))
        if self.prefill_lens and self.prefill_lens[-1] >= gen.max_len:
            raise RuntimeConfigError(
                f"a prefill of {self.prefill_lens[-1]} tokens leaves no position to generate "
                f"in a cache of {gen.max_len}: export the prefill at fewer tokens"
            )
        self.pads = False  # set at warm-up: prompts of other lengths through the prefills too
        self.leader = leader
        self._live: dict[int, Any] = {}  # each group's session
        self._issued: dict[int, Any] = {}  # each group's step issued this turn, not yet read
        self._read: dict[int, Any] = {}  # each group's step read last (its log-probabilities)
        self._prefilled: dict[int, dict[int, int]] = {}  # group: {row: its prefill's token}
        self._fed: dict[int, np.ndarray] = {}  # group: the tokens fed it last ([b])

    # -- a plan ------------------------------------------------------------------------------
    def run(
        self,
        plan: StepPlan,
        on_prefilled: Callable[[tuple[tuple[int, ...], ...]], None] | None = None,
    ) -> StepResult:
        """Make ``plan``'s calls (one broadcast in a job of several processes) and return
        what they made; ``on_prefilled`` is given the prefills' tokens as soon as they are
        made, before the decode steps are issued."""
        b = self.batch
        ops = [Op(OpKind.MOVE, m.group, (np.asarray(m.src, np.int64), np.asarray(m.dst, np.int64)))
               for m in plan.moves]  # fmt: skip
        for s in plan.starts:
            values = self._sampling(s.seqs, penalties=True) if self.samples else ()
            prompts = np.asarray(s.prompts, np.int32)[None]  # [1, b, L]
            if s.prefill:  # the sampling set before it runs: it draws the first token
                ops.append(Op(OpKind.START, s.group, (prompts, *values)))
                continue
            ops.append(Op(OpKind.START, s.group, (prompts[:, :, 0].astype(self.gen.token.dtype),)))
            if values:
                ops.append(Op(OpKind.SAMPLING, s.group, values))
        for u in plan.sampling:
            ops.append(Op(OpKind.SAMPLING, u.group, self._sampling(u.seqs, penalties=False)))
        counts = [c for c in plan.counts if c.admitted]  # set from their prompts: one put a row
        for c in counts:
            heads = [self._seq(plan, c.group, b).prompt for b in c.admitted]
            held = np.full((len(heads), max(map(len, heads))), -1, np.int64)
            for i, head in enumerate(heads):
                held[i, : len(head)] = head
            ops.append(Op(OpKind.COUNTS, c.group, (np.asarray(c.admitted, np.int64), held)))
        first_prefill = len(ops)
        for p in plan.prefills:  # prompts of several lengths right-padded, with their lengths
            ends = np.asarray([len(q) for q in p.prompts], np.int64)
            prompts = np.zeros((len(ends), int(ends.max())), np.int32)
            for i, q in enumerate(p.prompts):
                prompts[i, : len(q)] = q
            ops.append(Op(OpKind.PREFILL, p.group, (prompts, np.asarray(p.rows, np.int64), ends)))
        for f in plan.feeds:
            tokens = np.asarray([f.tokens], np.int32).reshape(1, b)
            if f.positions is None:
                ops.append(Op(OpKind.FEED, f.group, (tokens,)))
            else:
                positions = np.asarray([f.positions], np.int64)
                ops.append(Op(OpKind.FEED, f.group, (tokens, positions)))
        ops += [Op(OpKind.COUNT_FED, c.group, (self._mask(c.prefilled),))
                for c in plan.counts if c.prefilled]  # fmt: skip
        at = dict(zip(plan.steps, plan.step_rows, strict=True)) if plan.step_rows else {}
        ops += [Op(OpKind.STEP, g) if at.get(g, b) >= b
                else Op(OpKind.STEP, g, (np.asarray(at[g], np.int64),))
                for g in plan.steps]  # fmt: skip
        ops += [Op(OpKind.COUNT, c.group, (self._mask(c.drawn),)) for c in plan.counts if c.drawn]
        if plan.steps:  # every stepped group's tokens in one batched read
            ops.append(Op(OpKind.READ, values=(np.asarray(plan.steps, np.int64),)))
        ops += [Op(OpKind.LOGPROBS, g) for g in plan.logprobs]

        def made(got: list[Any]) -> tuple[tuple[int, ...], ...]:  # the prefills' tokens
            rows = got[first_prefill : first_prefill + len(plan.prefills)]
            return tuple(tuple(int(t) for t in m) for m in rows)

        after = first_prefill + len(plan.prefills)
        tell = None if on_prefilled is None or not plan.prefills else (after, on_prefilled)
        got = self._do_all(ops, tell, made)
        reads = got[-1 - len(plan.logprobs)] if plan.steps else []
        lps = got[len(got) - len(plan.logprobs) :]
        return StepResult(
            made(got),
            {g: tuple(int(t) for t in r[0, :, 0]) for g, r in zip(plan.steps, reads, strict=True)},
            dict(zip(plan.logprobs, lps, strict=True)),
        )

    def _mask(self, rows: tuple[int, ...]) -> np.ndarray:
        mask = np.zeros(self.batch, np.bool_)
        mask[list(rows)] = True
        return mask

    @staticmethod
    def _seq(plan: StepPlan, g: int, b: int) -> Sequence:
        """The sequence of group ``g``'s row ``b`` (admitted: its group's sampling is set)."""
        seq = next(u.seqs[b] for u in plan.sampling if u.group == g)
        assert seq is not None  # a row the scheduler counts holds a sequence
        return seq

    def _sampling(self, seqs: tuple[Sequence | None, ...], penalties: bool) -> tuple[Any, ...]:
        """A group's sampling, ``[1, b]`` per field (an idle row greedy), and the penalties'
        ``counts`` and ``seen`` ``[1, b, vocab]`` when ``penalties`` and one of ``seqs`` has
        one: how often each token was generated, and the tokens of the prompt and output (a
        session begun afresh; else they are kept on the device, ``Counts``)."""
        rows = [SamplingParams() if s is None else s.sampling for s in seqs]
        values: tuple[np.ndarray, ...] = tuple(
            np.asarray([c], t)
            for c, t in zip(zip(*rows, strict=True), _SAMPLING_DTYPES, strict=True)
        )
        if not (penalties and any(s is not None and s.sampling.penalized for s in seqs)):
            return values
        vocab = self.gen.vocab
        assert vocab is not None  # a step returning logits
        counts = np.zeros((1, len(seqs), vocab), np.float32)
        seen = np.zeros((1, len(seqs), vocab), np.bool_)
        for b, seq in enumerate(seqs):
            if seq is not None:
                made = np.asarray(seq.tokens, np.int64)
                counts[0, b] = np.bincount(made, minlength=vocab)[:vocab]
                seen[0, b, np.asarray(seq.prompt, np.int64)] = True
                seen[0, b, made] = True
        return (*values, counts, seen)

    # -- the calls ---------------------------------------------------------------------------
    def _do_all(self, ops: list[Op], tell: tuple[int, Callable[[Any], None]] | None = None,
                made: Callable[[list[Any]], Any] = list) -> list[Any]:  # fmt: skip
        """Make session calls in order, sent to the other processes first in one broadcast
        (none depends on another's result but a fed prefill's token, which every process
        has); ``tell``: ``(i, f)``, ``f(made(results))`` once the first ``i`` calls are
        made."""
        if self.leader is not None:
            for op in ops:
                self.leader.queue(op)
            self.leader.flush()
        got: list[Any] = []
        for op in ops:
            got.append(self.apply(op))
            if tell is not None and len(got) == tell[0]:
                tell[1](made(got))
        return got

    def apply(self, op: Op) -> Any:
        """Make one session call (here; :meth:`run` and :meth:`follow` send and receive)."""
        if op.kind is OpKind.START:
            first, *sampling = op.values
            if first.ndim == 3:  # prompts of the prefill's length (and the group's sampling)
                from hlopipe.generate import Sampling

                how = Sampling(*sampling) if sampling else None
                self._live[op.slot] = self.one.start(first, sampling=how)
            else:
                self._live[op.slot] = self.one.start(tokens=first, position=0)
            return None
        if op.kind is OpKind.READ:  # the groups' steps issued this turn, read at once
            from hlopipe.generate import Issued

            groups = op.values[0].tolist()
            handles = [self._issued.pop(g) for g in groups]
            self._read.update(zip(groups, handles, strict=True))
            return Issued.read_all(handles)
        session = self._live[op.slot]
        if op.kind is OpKind.FEED:
            tokens, *position = op.values
            made = self._prefilled.pop(op.slot, {})  # this plan's prefills of the group
            if (tokens == PREFILLED).any():  # their tokens, made in every process
                tokens = tokens.copy()
                for b in np.flatnonzero(tokens[0] == PREFILLED).tolist():
                    tokens[0, b] = made[b]
            self._fed[op.slot] = tokens[0]
            if position:
                session.feed(tokens, position=position[0])
            else:
                session.feed(tokens)
            return None
        if op.kind is OpKind.SAMPLING:
            from hlopipe.generate import Sampling

            session.sampling(Sampling(*op.values))
            return None
        if op.kind is OpKind.COUNTS:  # rows admitted: their prompts seen, nothing counted
            rows, prompts = op.values
            seen = np.zeros((len(rows), int(self.gen.vocab or 0)), np.bool_)
            for i, p in enumerate(prompts):
                seen[i, p[p >= 0]] = True
            session.set_counts(rows, np.zeros(seen.shape, np.float32), seen)
            return None
        if op.kind is OpKind.MOVE:  # rows' sequences moved down, all their rows hold
            session.move_rows(*op.values)
            return None
        if op.kind is OpKind.COUNT:  # what the step just issued draws
            session.count(op.values[0])
            return None
        if op.kind is OpKind.COUNT_FED:  # a prefill's tokens, fed
            session.count(op.values[0], tokens=self._fed[op.slot])
            return None
        if op.kind is OpKind.STEP:  # issued only: the turn's other groups are issued next
            if op.values:  # its first rows only
                self._issued[op.slot] = session.issue(1, rows=int(op.values[0]))
            else:
                self._issued[op.slot] = session.issue(1)
            return None
        if op.kind is OpKind.LOGPROBS:
            return self._read[op.slot].logprobs()[0, :, 0]
        if op.kind is OpKind.PREFILL:
            prompts, rows, ends = op.values
            made = session.prefill_rows(prompts, rows, lengths=ends)
            got = self._prefilled.setdefault(op.slot, {})
            got.update(zip(rows.tolist(), made.tolist(), strict=True))
            return made
        raise ValueError(f"{op.kind} is not a session call")  # pragma: no cover - a bug

    def follow(
        self,
        follower: Follower,
        on_idle: Callable[[], None] | None = None,
        idle_s: float = math.inf,
    ) -> None:
        """Another process's runner: make process 0's session calls in its order until it
        stops; ``on_idle()`` once no call came for ``idle_s`` seconds after one was made
        (process 0 idle: its next plan would have come within a turn), again only after
        the next call.

        Raises:
          DistributedError: process 0's engine failed (its error is named), or process 0
            was lost."""
        made = False  # a call made since ``on_idle`` last ran
        while True:
            op = follower.receive(idle_s if made and on_idle is not None else math.inf)
            if op is None:  # waited ``idle_s`` for process 0's next plan
                assert on_idle is not None  # the only wait that ends without a call
                on_idle()
                made = False
                continue
            made = True
            if op.kind is OpKind.STOP:
                return
            if op.kind is OpKind.FAIL:
                raise DistributedError(f"process 0's serving engine failed: {op.message}")
            self.apply(op)

    def stop(self) -> None:
        """Tell the other processes that serving ended."""
        if self.leader is not None:
            self.leader.send(Op(OpKind.STOP))

    def tell_failure(self, e: BaseException) -> None:
        """Stop the other processes with process 0's error (unless the channel is what
        failed: their heartbeat then names this process)."""
        if self.leader is None:
            return
        with contextlib.suppress(DistributedError):
            self.leader.send(Op(OpKind.FAIL, message=f"{type(e).__name__}: {e}"))

    # -- warm-up -----------------------------------------------------------------------------
    def warm(self) -> None:
        """Compile every path once: the prefill (if any), a decode step (and the step at
        each row count below the batch it runs at: ``Generator.narrow_steps``, and the rows'
        move down), a fed token."""
        b, token = self.batch, self.gen.token
        if self.per_sequence:
            for g in range(self.gen.groups):
                session = self.one.start(tokens=np.zeros((1, b), token.dtype), position=0)
                session.generate(1)
                if self.moves:  # a move after a step (the counts none, then kept)
                    session.move_rows([1], [0])
                self._warm_counts(session, fed=True)
                if self.moves:
                    session.move_rows([1], [0])
                session.feed(np.zeros((1, b), np.int32), position=np.zeros((1, b), np.int64))
                session.generate(1)
                for n in sorted(self.gen.narrow_steps):  # the step at its first n rows, fed
                    session.feed(np.zeros((1, b), np.int32), position=np.zeros((1, b), np.int64))
                    session.issue(1, rows=n).read()
                    session.issue(1, rows=n).read()  # and from where a step left its token
                # each prefill and each state's row writer, at each row count it runs at
                # (``Generator.narrow_for``: the fewest rows holding the admitted, or all)
                counts = sorted({n for _, n in self.gen.narrow} | {b})
                for P in self.prefill_lens:
                    for n in counts:
                        session.prefill_rows(np.zeros((n, P), np.int32), list(range(n)))
                chunk = self.gen.chunk  # and a chunk after the shortest, at each row count
                if chunk is not None and self.prefill_lens[0] + chunk.length < self.max_len:
                    L = self.prefill_lens[0] + chunk.length
                    for n in counts:
                        session.prefill_rows(np.zeros((n, L), np.int32), list(range(n)))
                self._live[g] = session
            if self.gen.prefill is not None:
                self.pads = self._padding_agrees()
            return
        for P in self.prefill_lens:
            s = self.one.start(np.zeros((1, b, P), np.int32))
            s.generate(2)
        s = self.one.start(tokens=np.zeros((1, b), token.dtype), position=0)
        s.generate(1)
        self._warm_counts(s, fed=False)
        s.feed(np.zeros((1, b), np.int32))
        s.generate(1)

    def _warm_counts(self, session: Any, fed: bool) -> None:
        """Compile the penalties' count updates (``Counts``) on ``session`` after a step: a
        row set afresh (a position per sequence), a step's tokens counted, and ``fed``
        ones."""
        if not self.samples:
            return
        b, vocab = self.batch, int(self.gen.vocab or 0)
        rows = np.ones(b, np.bool_)
        if fed:
            session.set_counts([0], np.zeros((1, vocab), np.float32),
                               np.zeros((1, vocab), np.bool_))  # fmt: skip
        session.count(rows)
        if fed:
            session.count(rows, tokens=np.zeros(b, np.int32))

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

    def profiled(self) -> list[float]:
        """Each stage's decode step alone, in seconds (on a session of one group)."""
        if self.per_sequence:
            return list(self._live[0].profile())
        zeros = np.zeros((1, self.batch), self.gen.token.dtype)
        return list(self.one.start(tokens=zeros, position=0).profile())
