"""The serving engine's scheduler: which sequences hold which rows, and what each turn runs.

The generator's ``groups`` sessions have ``batch`` rows each, a sequence a row. The
scheduler admits waiting sequences into free rows, and each call of :meth:`Scheduler.schedule`
returns a :class:`StepPlan`: the sessions begun afresh, the sampling set, the rows prefilled
with which prompts, the tokens (and positions) fed, and the groups whose decode step is
issued and read. The runner (``_runner.py``) makes the plan's calls and hands back what they
made (:class:`StepResult`); :meth:`Scheduler.update` then gives each row's token to its
sequence (or feeds the next prompt token instead), ends the sequences that stopped, frees
their rows, and returns what to tell the requests (:class:`Emit`). It calls no generator: a
plan is data, checked on its own by ``tests/serve/test_scheduler.py``.

Two policies (:class:`Policy`) of the one protocol, by the decode step's form:

- :attr:`Policy.ROWS` (a position per sequence): each free row takes the next waiting
  sequence at the next plan, from position 0 or from the prefill written into its row alone
  (``Session.prefill_rows``), while the group's other rows carry on. Every running group is
  fed its rows' tokens and positions each turn; an idle row of a busy group runs at
  position 0 and its token is dropped.
- :attr:`Policy.GROUPS` (one position for a group): a group is the unit. A group whose rows
  are all free takes up to ``batch`` waiting sequences whose prompts have one length (the
  first waiting one's) in a session begun afresh (:class:`Start`): through the prefill when
  the length is a prefill's, else from the prompts' first tokens at position 0, the rest fed
  a turn each. Unused rows repeat the first prompt and their tokens are dropped.

In both, a group with a sequence in flight is stepped every turn (every group's step issued
before any is read, so the groups overlap on the stages), a sequence whose client left or
whose output ended it is freed at the next update. A plan that prefills rows is a turn too:
the rows prefilled are fed in the same plan, a row whose prompt the prefill read whole its
prefill's token (:data:`PREFILLED`, which the runner takes from the prefill's result), so a
turn is one plan (under ``launch``, one broadcast).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import numpy as np

from hlopipe.serve._output import FinishReason

# A prefill run's least cost in prompt tokens (``Scheduler._parts``): a run reads every weight
# and writes its rows back whatever its rows, about the time of 20 to 30 prompt tokens of
# compute on a CPU (benchmarks/serve.py's 125M Llama: a 16-token prefill at 1, 2, 4, 8 rows
# took 0.41, 0.55, 1.11, 2.48 s on a loaded machine)
RUN_TOKENS = 32

# A move's least steps left (``Scheduler._move``): a move is one call a stage copying a row of
# each cache, and each step after it at fewer rows saves the rows it no longer computes.
# Measured in process (benchmarks/serve.py --move's programs, a batch-1 export at 8 rows, 2
# stages, medians of 30 on a loaded 2-core CPU): the built-in tiny GPT (host-bound) moves in
# 0.24-0.32 ms where its step at 1 row saves 0.15 ms on its step at 8; at d_model 768 a move
# takes 0.9-1.7 ms and saves 10.8 ms a step (8.9 against 19.7). So a move pays within 2 steps
# on both, and within 1 where the step's compute is what costs
MOVE_STEPS = 2

_T = TypeVar("_T")


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


class Policy(enum.StrEnum):
    """How rows are admitted (see the module's docstring)."""

    ROWS = "rows"  # a position per sequence: each row on its own
    GROUPS = "groups"  # one position a group: a group begun afresh, prompts of one length


@dataclass(frozen=True)
class Start:
    """Group ``group``'s session begun afresh with ``prompts`` (one a row, of one length):
    through the prefill (``prefill``), else from their first tokens at position 0. ``seqs``:
    each row's sequence (``None``: unused), whose sampling the session starts with."""

    group: int
    prompts: tuple[tuple[int, ...], ...]
    prefill: bool
    seqs: tuple[Sequence | None, ...]


@dataclass(frozen=True)
class SetSampling:
    """Group ``group``'s sampling set from its rows' sequences (``None``: an idle row, drawn
    greedy); the penalties' counts are kept (:class:`Counts`)."""

    group: int
    seqs: tuple[Sequence | None, ...]


@dataclass(frozen=True)
class Counts:
    """Group ``group``'s penalties' counts this turn (kept on the device, a row each, for
    the rows of penalized sequences): rows ``admitted`` set afresh from their sequence's
    prompt (seen; nothing generated yet) before the prefills, so that a prefill's token is
    drawn with them; rows ``prefilled`` counting the token a prefill of this plan made them
    (fed, :data:`PREFILLED`) before the step; rows ``drawn`` counting the token the step
    hands back (their sequence's next: the step's draw, or, a session begun through its
    prefill, at its first turn the prefill's) after it. A sequence's row then counts exactly
    the tokens given to it, as OpenAI's penalties count them."""

    group: int
    admitted: tuple[int, ...] = ()
    prefilled: tuple[int, ...] = ()
    drawn: tuple[int, ...] = ()


@dataclass(frozen=True)
class Prefill:
    """``prompts`` (each of one prefill's length, or past one by chunks: of any lengths)
    written into rows ``rows`` of group ``group``'s cache; the prefill's (or last chunk's)
    token of each row comes back."""

    group: int
    rows: tuple[int, ...]
    prompts: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Move:
    """Group ``group``'s sequences in rows ``src`` moved to the free rows ``dst``, with all
    their rows hold (``Session.move_rows``: cache rows, sampling, counts, token, position),
    first in the turn: the sequences left above free rows move down so that the group's
    decode step runs at fewer rows (``Scheduler._move``)."""

    group: int
    src: tuple[int, ...]
    dst: tuple[int, ...]


# a fed token that is the token a prefill of the same plan made for that row
PREFILLED = -1


@dataclass(frozen=True)
class Feed:
    """The tokens group ``group`` reads at its next step, one a row, at ``positions`` (one a
    row: :attr:`Policy.ROWS`) or at the group's own position (``None``); a token
    :data:`PREFILLED` is the one the plan's prefill made for that row."""

    group: int
    tokens: tuple[int, ...]
    positions: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StepPlan:
    """One call of the runner (a turn), its parts made in this order: rows ``moves``,
    sessions begun, sampling set, prefills run, tokens fed (a :data:`PREFILLED` token from
    the prefill's), then each of ``steps``' decode step issued before any is read, and the
    log-probabilities of the groups ``logprobs`` read; the penalties' ``counts`` updated
    where :class:`Counts` says.
    ``step_rows``: the rows each of ``steps``' decode step computes, its first (its sequences
    all lie there: ``Scheduler``'s ``step_counts``); empty: all."""

    starts: tuple[Start, ...] = ()
    sampling: tuple[SetSampling, ...] = ()
    prefills: tuple[Prefill, ...] = ()
    feeds: tuple[Feed, ...] = ()
    steps: tuple[int, ...] = ()
    logprobs: tuple[int, ...] = ()
    counts: tuple[Counts, ...] = ()
    step_rows: tuple[int, ...] = ()
    moves: tuple[Move, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.starts or self.sampling or self.prefills or self.feeds or self.steps
                    or self.moves)  # fmt: skip


class StepResult(NamedTuple):
    """What a plan's calls made: each prefill's token of each of its rows, each stepped
    group's tokens (one a row), and the log-probability rows ``[b, 1 + 2k]`` of the groups
    whose log-probabilities were read."""

    prefilled: tuple[tuple[int, ...], ...] = ()
    tokens: dict[int, tuple[int, ...]] = {}
    logprobs: dict[int, np.ndarray] = {}


class Emit(NamedTuple):
    """What to tell a request: ``request.emit(seq, token, finish)`` (``seq``: the sequence's
    index, -1 once all of them ended)."""

    request: Request
    seq: int
    token: int | None
    finish: FinishReason | None


@dataclass
class _Row:
    """A row's sequence: its request and index, the prompt tokens fed so far, and what the
    row reads next (its token and position)."""

    request: Request
    index: int
    fed: int = 1
    token: int = 0
    position: int = 0
    prompted: bool = False  # ``token`` is the prompt's, not the one the row made
    counted: bool = False  # its penalties' counts were set (:class:`Counts`)

    @property
    def seq(self) -> Sequence:
        return self.request.seqs[self.index]


class Scheduler:
    """Admission, rows and groups as one protocol (see the module's docstring): :meth:`add`
    queues a request's sequences, :meth:`schedule` returns the next :class:`StepPlan`,
    :meth:`update` takes what the runner made of it.

    ``prefill_lens``: each prefill's prompt length, shortest first; ``samples``: the step
    returns logits (sampling is set; else greedy tokens); ``pads``: a prompt of another
    length may go through a prefill right-padded (the runner's warm-up check says);
    ``chunk_row``: a prompt longer than every prefill, as the prefill and a chunk step read it
    (``generate/_chunk.py``: ``(prompt, padded) -> (row, covered)``), ``None`` without a chunk
    step; ``row_counts``: the row counts below the batch at which a prefill runs as they
    are (``Generator.narrow``; any other runs at the next one up, its extra rows computed
    for nothing); ``step_counts``: likewise, the row counts below the batch at which a
    decode step runs (``Generator.narrow_steps``): a group's step runs at the fewest of them
    holding its last running row (a new sequence takes the lowest free row, so the running
    rows pack at the bottom); ``moves``: sequences left above free rows may be moved down
    (``Session.move_rows``), when that lets the step run at fewer of ``step_counts``
    (:meth:`_move` says when it pays)."""

    def __init__(
        self,
        policy: Policy,
        groups: int,
        batch: int,
        *,
        prefill_lens: tuple[int, ...] = (),
        samples: bool = False,
        pads: bool = False,
        chunk_row: Callable[[list[int], bool], tuple[list[int], int]] | None = None,
        row_counts: tuple[int, ...] = (),
        step_counts: tuple[int, ...] = (),
        moves: bool = False,
    ) -> None:
        self.policy = policy
        self.batch = batch
        self.row_counts = tuple(sorted({n for n in row_counts if 0 < n < batch} | {batch}))
        self.step_counts = tuple(sorted({n for n in step_counts if 0 < n < batch} | {batch}))
        self.prefill_lens = tuple(sorted(prefill_lens))
        self.samples = samples
        self.pads = pads
        self.chunk_row = chunk_row
        self.moves = moves and len(self.step_counts) > 1
        self.waiting: list[tuple[Request, int]] = []
        self.rows: list[list[_Row | None]] = [[None] * batch for _ in range(groups)]
        self.prefilled = 0  # sequences whose prompt went through a prefill

    # -- state -------------------------------------------------------------------------------
    def add(self, request: Request) -> None:
        self.waiting.extend((request, i) for i in range(len(request.seqs)))

    def live(self) -> list[int]:
        """The groups with a sequence in flight."""
        return [g for g, row in enumerate(self.rows) if any(r is not None for r in row)]

    def running(self) -> int:
        """The sequences holding a row (reading their prompts or generating)."""
        return sum(r is not None for row in self.rows for r in row)

    def requests(self) -> list[Request]:
        """Every request waiting or in flight."""
        held = [r.request for row in self.rows for r in row if r is not None]
        return held + [r for r, _ in self.waiting]

    # -- plans -------------------------------------------------------------------------------
    def schedule(self) -> StepPlan:
        """The next plan: waiting sequences admitted into free rows (prefilled, when through a
        prefill), then the turn of every group in flight."""
        self.waiting = [(r, i) for r, i in self.waiting if not _gone(r, i)]
        if self.policy is Policy.ROWS:
            changed, prefills = self._admit_rows()
            starts: list[Start] = []
        else:
            changed, prefills, starts = set(), [], self._admit_groups()
        live = self.live()
        # after admission (which fills the lowest free rows first): no row admitted this turn
        # lies above a free row, so none is moved and none is moved into
        moves = tuple(m for g in live if (m := self._move(g)) is not None) if self.moves else ()
        sampling = tuple(SetSampling(g, self._seqs(g)) for g in sorted(changed) if self.samples)
        feeds = tuple(f for g in live if (f := self._feed(g)) is not None)
        logprobs = tuple(
            g for g in live if any(_gives(r) and r.seq.logprobs is not None for r in self._held(g))
        )
        begun = {s.group for s in starts}  # their counts set by the start (its sampling)
        counts = tuple(c for g in live if (c := self._counts(g, g in begun)) is not None)
        step_rows = tuple(self._step_rows(g) for g in live) if len(self.step_counts) > 1 else ()
        return StepPlan(tuple(starts), sampling, tuple(prefills), feeds, tuple(live), logprobs,
                        counts if self.samples else (), step_rows, moves)  # fmt: skip

    def _counts(self, g: int, begun: bool) -> Counts | None:
        """Group ``g``'s :class:`Counts` this turn (``None``: no penalized sequence);
        ``begun``: its session is begun afresh this turn, with its rows' counts."""
        rows = [(b, r) for b, r in enumerate(self.rows[g]) if r is not None]
        held = [(b, r) for b, r in rows if r.seq.sampling.penalized]
        if not held:
            return None
        admitted = tuple(b for b, r in held if not r.counted and not begun)
        for _, r in held:
            r.counted = True
        return Counts(
            g,
            admitted,
            tuple(b for b, r in held if r.token == PREFILLED),
            tuple(b for b, r in held if _gives(r)),
        )

    def _move(self, g: int) -> Move | None:
        """Group ``g``'s sequences above the fewest of ``step_counts`` holding as many rows
        as it runs, moved into its free rows below, when that lowers the rows its step
        computes and one of them has at least :data:`MOVE_STEPS` steps left (at most: its
        prompt's tokens still to read and its ``max_tokens`` still to make; a stop may end
        it sooner), the steps its group runs at fewer rows for it. ``None``: no move."""
        rows = self.rows[g]
        held = [b for b, r in enumerate(rows) if r is not None]
        fewer = next(c for c in self.step_counts if c >= len(held))
        if fewer >= self._step_rows(g):
            return None
        src = [b for b in held if b >= fewer]
        left = max(len(r.seq.prompt) - r.fed + r.seq.max_tokens - len(r.seq.tokens)
                   for b in src if (r := rows[b]) is not None)  # fmt: skip
        if left < MOVE_STEPS:
            return None
        dst = [b for b in range(fewer) if rows[b] is None][: len(src)]
        for s, d in zip(src, dst, strict=True):
            moved = rows[s]
            assert moved is not None and moved.token != PREFILLED  # none admitted this turn
            rows[d], rows[s] = moved, None
        return Move(g, tuple(src), tuple(dst))

    def _step_rows(self, g: int) -> int:
        """The rows group ``g``'s decode step computes: the fewest of ``step_counts`` holding
        its last running row."""
        top = 1 + max(b for b, r in enumerate(self.rows[g]) if r is not None)
        return next(c for c in self.step_counts if c >= top)

    def _held(self, g: int) -> list[_Row]:
        return [r for r in self.rows[g] if r is not None]

    def _seqs(self, g: int) -> tuple[Sequence | None, ...]:
        return tuple(None if r is None else r.seq for r in self.rows[g])

    def _feed(self, g: int) -> Feed | None:
        """Group ``g``'s tokens for its next step: every row's and its position (ROWS), or a
        prompt's next tokens (GROUPS, while its rows read their prompts; else the session
        feeds back what it made)."""
        rows = self.rows[g]
        if self.policy is Policy.ROWS:
            tokens = tuple(0 if r is None else r.token for r in rows)
            return Feed(g, tokens, tuple(0 if r is None else r.position for r in rows))
        if not any(r is not None and r.prompted for r in rows):
            return None  # the session feeds back what it made
        return Feed(g, tuple(0 if r is None else r.token for r in rows))

    def _admit_rows(self) -> tuple[set[int], list[Prefill]]:
        """Each free row takes the next waiting sequence: through a prefill when its prompt
        has a prefill's length (and its log-probabilities are not asked for: the decode step
        gives those, so it reads the last prompt token) or, ``pads``, any prompt of 2 tokens
        or more; else from its first token at position 0. Returns the groups whose rows
        changed (their sampling is set) and the prefills: a group's rows of one prefill
        length (split across row counts: :meth:`_parts`), and its rows continued by chunks
        in one, whatever their lengths."""
        changed: set[int] = set()
        # (group, P): rows; (group, None): the rows past every prefill by chunks, of any
        # lengths (the session runs them together where the chunk step takes a position a row)
        heads: dict[tuple[int, int | None], list[tuple[int, list[int]]]] = {}
        for g, row in enumerate(self.rows):
            for b, held in enumerate(row):
                if held is not None or not self.waiting:
                    continue
                req, i = self.waiting.pop(0)
                seq = req.seqs[i]
                row[b] = new = _Row(req, i, token=seq.prompt[0])
                changed.add(g)
                whole = len(seq.prompt) in self.prefill_lens and seq.logprobs is None
                padded = self.pads and len(seq.prompt) > 1 and self.prefill_lens
                if whole or padded or self._chunked(seq.prompt):
                    head, covered = self._head(seq.prompt, seq.logprobs is not None)
                    P = len(head) if len(head) in self.prefill_lens else None
                    heads.setdefault((g, P), []).append((b, head))
                    # what the row reads at this turn's step: the prompt's next token, or,
                    # the prompt read whole, the prefill's (in the plan's result)
                    new.position = covered
                    if covered < len(seq.prompt):
                        new.token, new.fed = seq.prompt[covered], covered + 1
                    else:
                        new.token, new.fed = PREFILLED, covered
        prefills = [
            Prefill(g, tuple(b for b, _ in part), tuple(tuple(h) for _, h in part))
            for (g, P), got in heads.items()
            for part in self._parts(got, P)
        ]
        self.prefilled += sum(len(p.rows) for p in prefills)
        return changed, prefills

    def _parts(self, got: list[_T], length: int | None) -> list[list[_T]]:
        """The rows admitted into one group at one prefill length, as the prefills that run
        them: one, at the fewest of ``row_counts`` holding them, unless runs of exactly
        those counts (largest first: 3 rows as 2 + 1) compute fewer token rows, a run
        counted as at least :data:`RUN_TOKENS` tokens (a prefill reads every weight
        whatever its rows: below that many tokens a run costs about one read). Prompts
        continued by a chunk step (``length`` ``None``) share one run: not split."""
        n = len(got)
        if length not in self.prefill_lens or n in self.row_counts or 1 not in self.row_counts:
            return [got]
        whole = next(c for c in self.row_counts if c >= n)
        sizes, left = [], n
        while left:
            sizes.append(max(c for c in self.row_counts if c <= left))
            left -= sizes[-1]
        split = sum(max(RUN_TOKENS, k * length) for k in sizes)
        if split >= max(RUN_TOKENS, whole * length):
            return [got]
        out, at = [], 0
        for k in sizes:
            out.append(got[at : at + k])
            at += k
        return out

    def _head(self, prompt: list[int], padded: bool) -> tuple[list[int], int]:
        """The row a prefill reads for ``prompt`` and how many of the prompt's tokens it
        covers: all of one of a prefill's length (unless ``padded``: its first token's
        log-probabilities are asked for, which the decode step gives); else its first
        ``len - 1`` through the shortest prefill that holds them, padded with the last of
        them (positions the decode step overwrites before it reads them), or, longer than
        every prefill, its first ``P`` through the longest."""
        L = len(prompt)
        if L in self.prefill_lens and not padded:
            return prompt, L
        if self.chunk_row is not None and self._chunked(prompt):
            return self.chunk_row(prompt, padded)
        fits = [P for P in self.prefill_lens if P >= L - 1]
        P = fits[0] if fits else self.prefill_lens[-1]
        n = min(L - 1, P)
        return prompt[:n] + [prompt[n - 1]] * (P - n), n

    def _chunked(self, prompt: list[int]) -> bool:
        """Whether ``prompt`` is longer than every prefill and a chunk step continues it."""
        return self.chunk_row is not None and len(prompt) - 1 > max(self.prefill_lens)

    def _admit_groups(self) -> list[Start]:
        """Each group whose rows are all free takes up to ``batch`` waiting sequences whose
        prompts have the first waiting one's length, begun through the prefill when it is a
        prefill's length and none asks for log-probabilities (the prefill gives none)."""
        starts = []
        for g, row in enumerate(self.rows):
            if any(r is not None for r in row) or not self.waiting:
                continue
            length = len(self.waiting[0][0].seqs[self.waiting[0][1]].prompt)
            members = [m for m in self.waiting if len(m[0].seqs[m[1]].prompt) == length]
            members = members[: self.batch]
            self.waiting = [m for m in self.waiting if not any(m is t for t in members)]
            prompts = [tuple(r.seqs[i].prompt) for r, i in members]
            prompts += [prompts[0]] * (self.batch - len(prompts))
            asked = any(r.seqs[i].logprobs is not None for r, i in members)
            whole = length in self.prefill_lens and not asked
            for b, (req, i) in enumerate(members):
                row[b] = _Row(req, i, fed=length if whole else 1, token=prompts[b][0])
            self.prefilled += len(members) if whole else 0
            starts.append(Start(g, tuple(prompts), whole, self._seqs(g)))
        return starts

    # -- results -----------------------------------------------------------------------------
    def update(self, plan: StepPlan, result: StepResult) -> list[Emit]:
        """Take what ``plan``'s calls made: a row whose prompt a prefill read whole is given
        the prefill's token (a row prefilled in part read its next prompt token at the step);
        each stepped row's token is given to its sequence, or its next prompt token is fed
        instead; a sequence that ended frees its row (a row ended by its prefill's token was
        stepped too, its step's token dropped). Returns what to tell the requests, in
        order."""
        return self.give_prefilled(plan, result.prefilled) + self.update_steps(plan, result)

    def give_prefilled(self, plan: StepPlan, prefilled: tuple[tuple[int, ...], ...]) -> list[Emit]:
        """The first part of :meth:`update`, as soon as ``plan``'s prefills made ``prefilled``
        (before its decode steps are read: a first token told a step sooner)."""
        out: list[Emit] = []
        for p, made in zip(plan.prefills, prefilled, strict=True):
            for b, tok in zip(p.rows, made, strict=True):
                r = self.rows[p.group][b]
                assert r is not None  # admitted by the plan
                if r.token != PREFILLED:  # the prefill's token is not the prompt's next
                    continue
                r.token = tok
                self._give(r, tok, None, out)
                if r.seq.finish is not None:  # one token asked: done
                    self.rows[p.group][b] = None
        return out

    def update_steps(self, plan: StepPlan, result: StepResult) -> list[Emit]:
        """The rest of :meth:`update`, once :meth:`give_prefilled` took the prefills'."""
        out: list[Emit] = []
        for g in plan.steps:
            lps = result.logprobs.get(g)
            for b, r in enumerate(self.rows[g]):
                if r is None:
                    continue
                r.position += 1
                if _gone(r.request, r.index):
                    r.seq.finish = FinishReason.CANCELLED
                    _ended(r.request, out)
                elif r.fed < len(r.seq.prompt):  # still reading the prompt
                    r.token, r.prompted = r.seq.prompt[r.fed], True
                    r.fed += 1
                    continue
                else:
                    r.token, r.prompted = result.tokens[g][b], False
                    self._give(r, r.token, None if lps is None else lps[b], out)
                if r.seq.finish is not None:
                    self.rows[g][b] = None
        return out

    @staticmethod
    def _give(r: _Row, tok: int, lp: np.ndarray | None, out: list[Emit]) -> None:
        """Row ``r``'s sequence made ``tok`` (and ``lp``, its log-probabilities row, when
        they are asked for): kept, its end told."""
        seq = r.seq
        seq.tokens.append(tok)
        if seq.logprobs is not None:
            assert lp is not None  # a sequence asking for them is in ``plan.logprobs``
            seq.token_logprobs.append(TokenLogprobs.of(lp, seq.logprobs))
        if tok in seq.stop_ids:
            seq.finish = FinishReason.STOP
        elif len(seq.tokens) >= seq.max_tokens:
            seq.finish = FinishReason.LENGTH
        out.append(Emit(r.request, r.index, tok, seq.finish))
        _ended(r.request, out)


def _gives(r: _Row) -> bool:
    """Whether the row's next step's token is given to its sequence (its prompt read)."""
    return r.fed >= len(r.seq.prompt)


def _ended(req: Request, out: list[Emit]) -> None:
    if all(s.finish is not None for s in req.seqs):
        out.append(Emit(req, -1, None, None))


def _gone(req: Request, i: int) -> bool:
    """Whether sequence ``i`` of ``req`` was cancelled (its client left, or its output ended
    it)."""
    return req.cancelled or req.seqs[i].cancelled
