"""What the simulator charges for: :class:`CostKey`, one kind of work (of one stage or all).

A cost key is read from text once, where text comes in (``--costs F@3=1.5``, a mapping with
string keys given to :func:`~hlopipe.schedules.simulate`), and printed once (``str(key)``,
the same text); everything in between holds the typed key.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from hlopipe.errors import ScheduleError
from hlopipe.schedules._ir import Kind


class CostKind(enum.StrEnum):
    """What a cost is charged for that is not a compute :class:`Kind` of an action."""

    SEND = "send"  # one transfer between ranks
    PREFILL = "prefill"  # a decode schedule's prefill step (an F over the whole prompt)


# The kinds a cost may be given for, and whether each may name one stage (``F@3``).
_PER_STAGE: dict[Kind | CostKind, bool] = {
    Kind.F: True,
    Kind.B: True,
    Kind.I: True,
    Kind.W: True,
    Kind.OVERLAP_F_B: False,
    CostKind.SEND: False,
    CostKind.PREFILL: True,
}
_OVERLAP_TEXT = "F&B"  # how users write Kind.OVERLAP_F_B's cost
_BY_TEXT: dict[str, Kind | CostKind] = {
    (_OVERLAP_TEXT if k is Kind.OVERLAP_F_B else k.value): k for k in _PER_STAGE
}


@dataclass(frozen=True, slots=True)
class CostKey:
    """One key of a cost mapping: a ``kind`` of work, of one ``stage`` or (``None``) of all.

    ``str`` gives the text users type and :meth:`parse` is its exact inverse: ``F``, ``B``,
    ``I``, ``W``, ``send``, ``F&B`` (an OVERLAP_F_B), ``prefill``, and ``<kind>@<stage>``
    (``F@3``, ``prefill@1``) for one stage's cost.

    >>> str(CostKey(Kind.F, 3)), CostKey.parse("send") == CostKey(CostKind.SEND)
    ('F@3', True)

    Raises:
      ScheduleError: a kind that has no cost (a send or receive action: its cost is ``send``),
        a stage for ``send`` or ``F&B``, or a negative stage.
    """

    kind: Kind | CostKind
    stage: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, Kind | CostKind) or self.kind not in _PER_STAGE:
            raise ScheduleError(
                f"no cost for kind {self.kind!s}; costs are for {', '.join(_BY_TEXT)}"
            )
        if self.stage is not None and (
            not _PER_STAGE[self.kind] or not isinstance(self.stage, int) or self.stage < 0
        ):
            raise ScheduleError(
                f"cost {self.kind!s}@{self.stage}: a stage is a number >= 0, given only for "
                f"{', '.join(str(_text(k)) for k, per in _PER_STAGE.items() if per)}"
            )

    def __str__(self) -> str:
        name = _text(self.kind)
        return name if self.stage is None else f"{name}@{self.stage}"

    @classmethod
    def parse(cls, text: str) -> CostKey:
        """The key ``text`` names (the exact inverse of ``str``).

        Raises:
          ScheduleError: naming the text and the keys there are.
        """
        name, at, stage = text.strip().partition("@") if isinstance(text, str) else ("", "", "")
        kind = _BY_TEXT.get(name)
        per_stage = kind is not None and _PER_STAGE[kind]
        if kind is None or (at and not (per_stage and stage.isdigit())):
            raise ScheduleError(
                f"unknown cost {text!r}; use {', '.join(_BY_TEXT)}, or <kind>@<stage> such as F@3"
            )
        return cls(kind, int(stage) if at else None)


def _text(kind: Kind | CostKind) -> str:
    return _OVERLAP_TEXT if kind is Kind.OVERLAP_F_B else kind.value


def cost_key(key: CostKey | str) -> CostKey:
    """``key`` as a :class:`CostKey`: one given typed is kept, text is parsed.

    Raises:
      ScheduleError: text that names no cost, or a key that is neither.
    """
    if isinstance(key, CostKey):
        return key
    if isinstance(key, str):
        return CostKey.parse(key)
    raise ScheduleError(f"a cost key is a CostKey or text such as 'F@3', got {key!r}")


F = CostKey(Kind.F)
B = CostKey(Kind.B)
I = CostKey(Kind.I)
W = CostKey(Kind.W)
SEND = CostKey(CostKind.SEND)
OVERLAP = CostKey(Kind.OVERLAP_F_B)
PREFILL = CostKey(CostKind.PREFILL)

# What the public functions take: typed keys, or the text users type (parsed on the way in).
GivenCosts = Mapping[CostKey, float] | Mapping[str, float]
