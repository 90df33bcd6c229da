"""The output processor: a sequence's token ids turned into text as they come, off the engine
thread (the web side's event loop runs it), with O(1) work per token.

**Incremental detokenization.** With a tokenizer, each token goes through a
``tokenizers.decoders.DecodeStream`` (the library's own incremental decoder: it decodes a short
window of recent ids and gives out the new text only once it does not end in a replacement
character, so a byte-level BPE token that ends inside a UTF-8 character is held until the
character completes). At the sequence's end the text held back is given out: the ids decoded
whole once, less what was already given. So no piece ever holds a partial character, and the
pieces join to exactly ``tokenizer.decode(ids)``. Without a tokenizer a token's text is its id
after a space.

**Stop strings.** Text that could still be the start of a stop string is held back (at most
the longest stop string less one character); once a stop string is complete, the text before
it is given out and the sequence ends (``finish_reason: "stop"``); tokens the engine made after
that are dropped. An end-of-sequence id ends the sequence without its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class FinishReason(StrEnum):
    """Why a sequence ended."""

    LENGTH = "length"  # max_tokens made, or the cache's end
    STOP = "stop"  # an end-of-sequence id, a request's stop id, or a stop string
    CANCELLED = "cancelled"  # its client went away (or its output ended it): never answered


class Detokenizer(Protocol):
    """A sequence's ids to text, a token at a time."""

    def step(self, token: int) -> str:
        """The text that ``token`` completes (may be empty: held until a character ends)."""
        ...

    def flush(self) -> str:
        """The text still held back, at the sequence's end."""
        ...


class IdText:
    """No tokenizer: a token's text is its id after a space."""

    def step(self, token: int) -> str:
        return f" {token}"

    def flush(self) -> str:
        return ""


class TokenizerText:
    """A ``tokenizers.Tokenizer``'s incremental decode (its ``DecodeStream``; special tokens
    skipped, as ``Tokenizer.decode`` skips them by default)."""

    def __init__(self, tokenizer: Any) -> None:
        from tokenizers.decoders import DecodeStream

        self._tokenizer = tokenizer
        self._stream = DecodeStream(skip_special_tokens=True)
        self._ids: list[int] = []
        self._given: list[str] = []

    def step(self, token: int) -> str:
        self._ids.append(token)
        text = self._stream.step(self._tokenizer, token) or ""
        self._given.append(text)
        return text

    def flush(self) -> str:
        """The whole decode less what was given (once per sequence: O(length) once)."""
        whole, given = str(self._tokenizer.decode(self._ids)), "".join(self._given)
        if not whole.startswith(given):  # the decode stream's contract: a bug if broken
            raise RuntimeError(
                f"the tokenizer's decode stream gave {given!r}, not a prefix of its decode of "
                f"the same ids {whole!r}"
            )
        return whole[len(given) :]


def detokenizer(tokenizer: Any) -> Detokenizer:
    """A fresh :class:`Detokenizer` for one sequence (``tokenizer`` ``None``: ids as text)."""
    return IdText() if tokenizer is None else TokenizerText(tokenizer)


@dataclass(frozen=True)
class Piece:
    """What one token gave a sequence's output: its text (possibly empty: held back) and, on
    the sequence's last token, why it ended."""

    text: str
    finish: FinishReason | None


@dataclass
class SequenceOutput:
    """One sequence's output: the tokens kept, the text given out, and why it ended.

    Args:
      text: its detokenizer (:func:`detokenizer`).
      stops: the request's stop strings.
      stop_ids: the ids that end it unshown (end-of-sequence ids, ``stop_token_ids``).
    """

    text: Detokenizer
    stops: tuple[str, ...] = ()
    stop_ids: frozenset[int] = frozenset()
    tokens: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    finish: FinishReason | None = None
    _held: str = ""

    def push(self, token: int, finish: FinishReason | None) -> Piece | None:
        """``token`` made, the engine saying ``finish`` when it is the sequence's last.

        Returns:
          The token's :class:`Piece`, or ``None`` for a token made after the sequence ended
          here (at a stop string): dropped.
        """
        if self.finish is not None:
            return None
        self.tokens.append(token)
        shown = not (finish is FinishReason.STOP and token in self.stop_ids)
        new = self.text.step(token) if shown else ""
        if finish is not None:
            new += self.text.flush()
        text, self._held = self._held + new, ""
        cut = _first_stop(text, self.stops)
        if cut is not None:
            text, finish = text[:cut], FinishReason.STOP
        elif finish is None and self.stops:
            keep = _stop_prefix(text, self.stops)
            text, self._held = text[: len(text) - keep], text[len(text) - keep :]
        self.pieces.append(text)
        self.finish = finish
        return Piece(text, finish)

    @property
    def joined(self) -> str:
        return "".join(self.pieces)


def _first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    """Where the earliest stop string in ``text`` begins, or ``None``."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(found) if found else None


def _stop_prefix(text: str, stops: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that begins some stop string (held back:
    it may still become one)."""
    longest = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), longest, -1):
            if text.endswith(s[:k]):
                longest = k
                break
    return longest
