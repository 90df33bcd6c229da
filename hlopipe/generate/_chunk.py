"""A chunk step: a prompt longer than every prefill prefilled ``C`` tokens at a time.

A chunk step is ``(params, cache, tokens[b, C], position) -> (token or logits, cache)``: the
decode step's own arguments with ``C`` tokens in place of one, ``position`` the first
token's (``[]``, or ``[b]`` all alike) or each token's (``[C]``, a ``cache_position``), the
cache donated and written at ``position .. position + C - 1``, the token (or the logits it is
sampled from) the next after the chunk's last. It is what vLLM's chunked prefill runs (a
prefill that reads the cache it is given) and the fixed shapes JAX serving engines bucket by.
A prompt of ``L`` tokens then goes through a prefill of its first ``P`` and about
``(L - P) / C`` chunks (``Session.prefill_rows``; the split: :meth:`ChunkStep.row`), in
place of ``L - P`` decode steps.

Which programs qualify, and why: the cache must be an argument (aliased to its output, as the
decode step's), the position must be an argument (the chunk is run from a position the
prefill did not end at; a position kept in state counters, transformers' ``StaticCache`` of
5.x, advances by what the program says, not by what the server asks), and the parameters and
caches must be the decode step's, in its order and shapes (one model exported twice), and a
cache stacked over the layers (sliced by stage) is not taken. Each is refused by name
otherwise, and a chunk step that keeps a cache on another stage than the decode step when
split. That the position is the chunk's first and that the token is
the next after its last is an inference from shapes, so it is run once, unsplit on one
device, against the decode step fed the same prompt token by token
(``_prefill_check.chunk_difference``): a chunk that differs is refused. Whether its last chunk
may be right-padded (its padded positions written with junk the decode step overwrites
before it reads them: true of a causal chunk) is run the same way; when it is not, the
remainder of a prompt is read by the decode step a token a step. So is whether a call's rows
may start at their own positions (a position with a row axis that each row reads as its
own): prompts of several lengths then share each chunk run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from hlopipe.errors import RuntimeConfigError, StageError
from hlopipe.generate._placement import (
    compile_stages,
    place_params,
)
from hlopipe.generate._plan import InputKind, StagePlan, plan_stages
from hlopipe.generate._steps import build
from hlopipe.io import Use

if TYPE_CHECKING:
    from hlopipe.generate._generator import Generator
    from hlopipe.stages import Stage

_KIND = {
    Use.PARAMETER: InputKind.PARAM,
    Use.STATE: InputKind.STATE,
    Use.FEEDBACK: InputKind.INPUT,  # not fed back: a chunk's outputs feed no next chunk
    Use.INPUT: InputKind.INPUT,
}


def takes_cache(program: Any) -> bool:
    """Whether ``program`` (given among the prefills) takes a cache in: an argument aliased
    to an output, as a decode step's state is. A prefill makes its cache; a chunk step takes
    it."""
    return bool(program.arg_roles().state)


class ChunkRow(NamedTuple):
    """How a prompt is prefilled: ``row`` (the tokens the prefill and the chunks read, the
    last chunk right-padded) and ``covered`` (how many of the prompt's tokens they read; the
    next is fed to the decode step at its position, and the chunks' token is dropped, unless
    ``covered`` is the whole prompt)."""

    row: list[int]
    covered: int


class ChunkStep:
    """A chunk step split like the decode step: the same stages keep the same caches (a
    ``PlannedStages``, as the generator is).

    Attributes:
      length: ``C``, the tokens a chunk reads.
      pads: whether a last chunk may be right-padded (set by the check; else the remainder is
        read by the decode step).
      overlaps: whether the last chunk may end at the prompt's end, started inside the chunk
        before it (its first tokens written again: set by the check); the prompt is then
        read whole by the prefill and chunks, the last chunk's token the first, with no
        decode step for its last token.
      program: its step program (``_steps.StepProgram``, after :meth:`place`), run on a
        group's scratch registers; ``program.input_args`` tells its tokens from its position.
      inner: the program of a chunk before the last (logits not sampled: nothing reads them).
      apart: whether each row of a call may start at its own position (set by the check:
        a position with a row axis, ``[rows]`` or ``[rows, C]``, whose rows run at different
        positions leave each row's cache and token as the decode loop does); else a call's
        rows run at one position.
    """

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.staged.stages

    def __init__(self, program: Any, gen: Generator) -> None:
        """Its form read and refused by name where it does not fit (nothing compiled yet:
        :meth:`place` splits and compiles it)."""
        what = f"the chunk step {getattr(program, 'source', '')}".rstrip()
        self.what = what
        if gen.stacked is not None:
            raise RuntimeConfigError(
                f"{what}: the decode step's cache is stacked over the layers and sliced by stage; "
                "a chunk step is taken beside a cache of one array per layer only"
            )
        roles = program.arg_roles()
        self.roles = roles
        self.decode_arg = self._match(roles, gen, what)
        self.tokens_arg, self.position_arg, self.length = self._inputs(roles, gen, what)
        pos, C = tuple(roles[self.position_arg].shape), self.length
        # a position for each token (a ``cache_position``: ``[C]``, or ``[b, C]`` widened)
        self.per_token = C > 1 and (pos == (C,) or pos == (gen.batch, C))
        self.token_out, self.samples = self._token_out(program, roles, gen, what)
        self.pads = False  # set by the check (Generator)
        self.overlaps = False  # likewise: a last chunk may start inside the one before
        self.apart = False  # likewise: a call's rows may start at their own positions
        self.unsplit = program

    def place(self, gen: Generator, num_stages: int) -> None:
        """Split like the decode step (each cache on the stage keeping it, else refused),
        compiled there, its parameters placed and its step program built."""
        from hlopipe.stages import split_stateful

        program, roles, what = self.unsplit, self.roles, self.what
        split = split_stateful(program, roles, num_stages=num_stages, what=what)
        self.staged = split.staged
        decode_stage = {x.arg: x.stage for x in gen.split.slots}
        for x in split.slots:
            want = decode_stage[self.decode_arg[x.arg]]
            if x.stage != want:
                raise StageError(
                    f"{what}: keeps the cache {x.path} on stage {x.stage}, the decode step on "
                    f"stage {want}: mark the stages of both programs alike (the same stage "
                    "markers)"
                )
        kinds = {r.index: _KIND[r.role] for r in roles}
        plans = plan_stages(split.staged, kinds, {x.arg: x for x in split.slots},
                            split.state_sent)  # fmt: skip
        self.plans: list[StagePlan] = [self._as_decode(p) for p in plans]
        sp, placed, regs = gen.place, gen.placed, gen.registers
        self.compiled = compile_stages(self.staged.stages, self.plans, sp, gen.roles,
                                       gen.param_specs, placed.state_shardings)  # fmt: skip
        params = place_params(dict(placed.host_params), self.plans, self.compiled, placed.params)
        param_slots = regs.add_params(self.plans, params)
        sampler = None
        if self.samples:
            assert gen.sampler is not None  # a float token output: the step returns logits
            sampler = gen.sampler._replace(output=self.token_out)
        fed: dict[int, tuple[int, ...]] = {self.token_out: (gen.token.index,)}
        self.program = build(self, sp, regs.layout, {}, fed, param_slots, regs.size, sampler)
        # a chunk before the last: its token is not wanted, so its logits are not sampled
        self.inner = self.program
        if sampler is not None:
            self.inner = build(self, sp, regs.layout, {}, fed, param_slots, regs.size, None)

    def at_rows(self, program: Any, gen: Generator, rows: int, num_stages: int) -> ChunkStep:
        """This chunk step vmapped over ``rows`` (fewer than the batch: ``Widened.narrow``),
        its arguments and outputs in this one's order (its form and check taken, not made
        again), split, compiled and placed like it.

        Raises:
          RuntimeConfigError: ``program``'s arguments are not this one's with ``rows`` in
            place of the batch (named)."""
        from copy import copy

        roles, b = program.arg_roles(), gen.batch
        want = [(r.role, tuple(r.shape)) if r.role is Use.PARAMETER
                else (r.role, (rows, *tuple(r.shape)[1:])) for r in self.roles]  # fmt: skip
        got = [(r.role, tuple(r.shape)) for r in roles]
        if got != want:
            raise RuntimeConfigError(
                f"the chunk step {getattr(program, 'source', '')} at {rows} rows: its arguments "
                f"are not those of {self.what} (at {b}) with {rows} rows in place of {b}"
            )
        other = copy(self)
        other.what = f"the chunk step {getattr(program, 'source', '')}".rstrip()
        other.unsplit, other.roles = program, roles
        other.place(gen, num_stages)
        return other

    # -- the form --------------------------------------------------------------------------
    @staticmethod
    def _match(roles: Any, gen: Generator, what: str) -> dict[int, int]:
        """``{chunk argument: the decode step's}`` for the parameters and caches, in order."""
        if roles.counters:
            r = roles.counters[0]
            raise RuntimeConfigError(
                f"{what}: its position lives in the state counter {r.path} (transformers' "
                "StaticCache), which advances by what the program says, not from the position "
                "a chunk starts at; export the chunk step with the position as an argument "
                "(cache_position) and the cache buffers as arguments"
            )
        out: dict[int, int] = {}
        for kind, mine, theirs in (
            ("parameters", roles.parameters, gen.roles.parameters),
            ("caches", roles.state, gen.roles.state),
        ):
            a = [(tuple(r.shape), str(r.dtype)) for r in mine]
            b = [(tuple(r.shape), str(r.dtype)) for r in theirs]
            if a != b:
                first = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                             min(len(a), len(b)))  # fmt: skip
                raise RuntimeConfigError(
                    f"{what}: its {kind} are not the decode step's in its order ({len(a)} "
                    f"against {len(b)}; the first to differ is number {first}: "
                    f"{a[first] if first < len(a) else 'none'} against "
                    f"{b[first] if first < len(b) else 'none'}): export the chunk step from the "
                    "decode step's function with the same parameters and cache"
                )
            out.update((r.index, s.index) for r, s in zip(mine, theirs, strict=True))
        return out

    @staticmethod
    def _inputs(roles: Any, gen: Generator, what: str) -> tuple[int, int, int]:
        """The tokens ``int[b, C]`` and position (``int[]`` or ``int[b]``) arguments, and
        ``C``."""
        b = gen.batch
        rest = [r for r in roles if r.role is not Use.PARAMETER and r.role is not Use.STATE]
        ints = [r for r in rest if np.dtype(r.dtype).kind in "iu"]
        tokens = [r for r in ints if len(r.shape) == 2 and r.shape[0] == b]
        C = int(tokens[0].shape[1]) if len(tokens) == 1 else -1
        forms = ((), (1,), (b,), (C,), (b, C))  # (b, C): a cache_position widened over rows
        position = [r for r in ints if r not in tokens and tuple(r.shape) in forms]
        if len(rest) != 2 or len(tokens) != 1 or len(position) != 1:
            found = ", ".join(f"{r.index} {r.path} {r.dtype}{list(r.shape)}" for r in rest)
            raise RuntimeConfigError(
                f"{what}: besides the decode step's parameters and caches it must take two "
                f"arguments, the tokens int[{b}, C] and the position: of the first token "
                f"(int[] or int[{b}]) or of each (int[C], a cache_position); it takes "
                f"{found or 'none'}"
            )
        if b == C and b > 1 and tuple(position[0].shape) == (b,):
            raise RuntimeConfigError(
                f"{what}: its position int[{b}] could be one a sequence or one a token (the "
                f"chunk of {C} tokens is as long as the batch); export it at another length"
            )
        return tokens[0].index, position[0].index, C

    @staticmethod
    def _token_out(program: Any, roles: Any, gen: Generator, what: str) -> tuple[int, bool]:
        """The output that is not a cache (the token ``[b]``, or logits ``[b, vocab]`` for a
        decode step returning logits), and whether it is logits."""
        state_outs = {int(r.output) for r in roles.state}
        others = [o for o in range(len(program.out_avals)) if o not in state_outs]
        tok = gen.token
        want = (f"float[{gen.batch}, {gen.vocab}] logits" if gen.sampler is not None
                else f"{tok.dtype}{list(tok.shape)} tokens")  # fmt: skip
        if len(others) == 1:
            a = program.out_avals[others[0]]
            shape, kind = tuple(a.shape), np.dtype(a.dtype).kind
            if gen.sampler is not None and shape == (gen.batch, gen.vocab) and kind == "f":
                return others[0], True
            if gen.sampler is None and shape == tuple(tok.shape) and kind in "iu":
                return others[0], False
        outs = ", ".join(f"{o} {program.out_avals[o].dtype}{list(program.out_avals[o].shape)}"
                         for o in others)  # fmt: skip
        raise RuntimeConfigError(
            f"{what}: besides its caches it must return one output, the {want} after its last "
            f"token, as the decode step returns; it returns {outs or 'none'}"
        )

    def _as_decode(self, p: StagePlan) -> StagePlan:
        """A plan keyed by the decode step's arguments (its placed parameters, its state
        registers)."""
        m = self.decode_arg
        inputs = tuple(
            (k, m[a]) if k in (InputKind.PARAM, InputKind.STATE) else (k, a) for k, a in p.inputs
        )
        return replace(p, inputs=inputs, state_out={j: m[a] for j, a in p.state_out.items()})

    # -- use -------------------------------------------------------------------------------
    def position_value(self, position: int) -> np.ndarray:
        """The position argument for a chunk starting at ``position``: that position (for
        every sequence), or each token's (a ``cache_position`` of ``C``)."""
        r = self.roles[self.position_arg]
        dtype, shape = np.dtype(r.dtype), tuple(r.shape)
        if self.per_token:
            each = np.arange(position, position + self.length, dtype=dtype)
            return np.ascontiguousarray(np.broadcast_to(each, shape))
        return np.full(shape, position, dtype)

    def position_values(self, starts: np.ndarray) -> np.ndarray:
        """The position argument for chunks starting at ``starts`` (one a row): as
        :meth:`position_value` when they are alike, else each row's (:attr:`apart`: the
        position's leading axis is the rows)."""
        if (starts == starts[0]).all():
            return self.position_value(int(starts[0]))
        r = self.roles[self.position_arg]
        dtype, shape = np.dtype(r.dtype), tuple(r.shape)
        assert self.apart and shape[:1] == (len(starts),), "rows at one position only"
        each = starts.astype(dtype)
        if self.per_token:
            return np.ascontiguousarray(each[:, None] + np.arange(self.length, dtype=dtype))
        return each.reshape(shape)

    @property
    def rows(self) -> int:
        """The rows a call computes (its tokens' leading axis)."""
        return int(self.roles[self.tokens_arg].shape[0])

    def tokens_dtype(self) -> Any:
        return np.dtype(self.roles[self.tokens_arg].dtype)

    def row(
        self, prompt: list[int], prefill_lens: tuple[int, ...], max_len: int, exact: bool = True
    ) -> ChunkRow:
        """How ``prompt`` (longer than a prefill) goes through the longest prefill not
        longer than it and chunks: its first ``L - 1`` tokens (the last one read
        by the decode step, which gives the first token), the last chunk right-padded when
        :attr:`pads` (and the padded chunk ends inside the cache), else the whole chunks only
        (the rest read by the decode step); the whole prompt when it is a prefill and whole
        chunks exactly, or a prefill and at least a chunk when :attr:`overlaps` (the chunk's
        token is then the first), unless not ``exact`` (the
        first token's log-probabilities asked for: the decode step gives them)."""
        L, C = len(prompt), self.length
        P = max((p for p in prefill_lens if p <= L), default=0)
        if P == 0:
            raise RuntimeConfigError(
                f"{self.what}: a prompt of {L} tokens is shorter than every prefill "
                f"({', '.join(map(str, prefill_lens))}); it starts in a prefill"
            )
        if exact and self.splits(L, prefill_lens) is not None:  # whole, or the last overlapping
            return ChunkRow(list(prompt), L)
        n = L - 1
        P = max(p for p in prefill_lens if p <= n)
        whole = P + (n - P) // C * C
        padded = whole + C
        if whole < n and self.pads and padded < max_len:
            return ChunkRow(list(prompt[:n]) + [prompt[n - 1]] * (padded - n), n)
        return ChunkRow(list(prompt[:whole]), whole)

    def splits(self, length: int, prefill_lens: tuple[int, ...]) -> int | None:
        """The prefill length ``P`` for a row of ``length`` tokens (``P`` + whole chunks, or
        when :attr:`overlaps`, ``P`` + at least one chunk: :meth:`starts`), or ``None``."""
        C = self.length
        fits = [p for p in prefill_lens if p < length and (length - p) % C == 0]
        if not fits and self.overlaps:
            fits = [p for p in prefill_lens if length - p >= C]
        return max(fits) if fits else None

    def starts(self, start: int, end: int) -> list[int]:
        """Where each chunk of tokens ``start .. end - 1`` starts: every ``C`` tokens, the last
        at ``end - C`` (inside the one before when ``end - start`` is not whole chunks)."""
        at = list(range(start, end - self.length + 1, self.length))
        if at[-1] + self.length < end:
            at.append(end - self.length)
        return at
