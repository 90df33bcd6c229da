"""The action IR: kinds, actions, and a schedule (per-rank ordered lists of actions).

An action names one piece of work of one pipeline stage on one microbatch. A send or a receive
carries the stage *on the rank that runs it*: ``SEND_F`` of stage ``s`` ships stage ``s``'s
output to stage ``s + 1``; ``RECV_F`` of stage ``s`` receives stage ``s``'s input from stage
``s - 1``; ``SEND_B`` of stage ``s`` ships the gradient of stage ``s``'s input to stage
``s - 1``; ``RECV_B`` of stage ``s`` receives the gradient of its output from stage ``s + 1``.
So an action never needs a peer field: the peer follows from the stage and the placement.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from hlopipe.errors import ScheduleError


class Kind(str, Enum):  # noqa: UP042 - the house style: a str mixin
    """What an action does."""

    F = "F"  # forward
    B = "B"  # full backward (input and weight gradients)
    I = "I"  # backward for inputs only (zero-bubble split)
    W = "W"  # backward for weights only (zero-bubble split)
    SEND_F = "SEND_F"  # send this stage's activation to the next stage
    RECV_F = "RECV_F"  # receive this stage's input activation from the previous stage
    SEND_B = "SEND_B"  # send the gradient of this stage's input to the previous stage
    RECV_B = "RECV_B"  # receive the gradient of this stage's output from the next stage

    def __str__(self) -> str:
        return self.value


COMPUTE_KINDS = frozenset({Kind.F, Kind.B, Kind.I, Kind.W})
COMM_KINDS = frozenset({Kind.SEND_F, Kind.RECV_F, Kind.SEND_B, Kind.RECV_B})

# Longest names first so that "SEND_F" is not read as "S..." + "F".
_ACTION_RE = re.compile(
    r"^(\d+)(" + "|".join(sorted((k.value for k in Kind), key=len, reverse=True)) + r")(\d+)$"
)


class Action(NamedTuple):
    """One action: ``stage``, ``kind`` and ``microbatch``; prints as ``2F0``.

    >>> str(Action(2, Kind.F, 0)), Action.parse("1SEND_B3")
    ('2F0', Action(stage=1, kind=<Kind.SEND_B: 'SEND_B'>, microbatch=3))
    """

    stage: int
    kind: Kind
    microbatch: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind.value}{self.microbatch}"

    @classmethod
    def parse(cls, text: str) -> Action:
        """The action ``text`` names (the exact inverse of ``str``); ScheduleError if none."""
        match = _ACTION_RE.match(text.strip())
        if match is None:
            kinds = ", ".join(k.value for k in Kind)
            raise ScheduleError(
                f"cannot parse action {text!r}: expected <stage><kind><microbatch> such as "
                f"'2F0' or '1SEND_B3', kind one of {kinds}"
            )
        return cls(int(match[1]), Kind(match[2]), int(match[3]))

    def describe(self) -> str:
        """Words for error messages: ``B of stage 2, microbatch 3``."""
        return f"{self.kind.value} of stage {self.stage}, microbatch {self.microbatch}"


@dataclass(repr=False)
class Schedule:
    """A pipeline schedule: per rank, the ordered actions it runs (``None`` = an idle slot).

    ``stage_to_rank[s]`` is the rank holding stage ``s``. Trailing idle slots are dropped and
    every rank in ``range(num_ranks)`` gets a list, so equal schedules compare equal.

    >>> s = Schedule("tiny", 1, 1, 1, (0,), {0: [Action(0, Kind.F, 0), Action(0, Kind.B, 0)]})
    >>> Schedule.from_text(s.to_text()) == s
    True
    """

    name: str
    num_ranks: int
    num_stages: int
    num_microbatches: int
    stage_to_rank: tuple[int, ...]
    actions: dict[int, list[Action | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for attr in ("num_ranks", "num_stages", "num_microbatches"):
            value = getattr(self, attr)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ScheduleError(f"{attr} must be a positive integer, got {value!r}")
        self.stage_to_rank = tuple(self.stage_to_rank)
        if len(self.stage_to_rank) != self.num_stages:
            raise ScheduleError(
                f"stage_to_rank has {len(self.stage_to_rank)} entries for {self.num_stages} stages"
            )
        for s, r in enumerate(self.stage_to_rank):
            if not 0 <= r < self.num_ranks:
                raise ScheduleError(f"stage {s} placed on rank {r}, not in 0..{self.num_ranks - 1}")
        extra = set(self.actions) - set(range(self.num_ranks))
        if extra:
            raise ScheduleError(
                f"actions for ranks {sorted(extra)} of a {self.num_ranks}-rank schedule"
            )
        normalised: dict[int, list[Action | None]] = {}
        for r in range(self.num_ranks):
            row = list(self.actions.get(r, []))
            while row and row[-1] is None:
                row.pop()
            normalised[r] = row
        self.actions = normalised

    def __repr__(self) -> str:
        """One screen: the shape of the schedule and its rank x step grid (``to_text()`` and
        ``actions`` hold the full form)."""
        from hlopipe.schedules._grid import format_grid

        n = sum(a is not None for row in self.actions.values() for a in row)
        head = (
            f"Schedule({self.name!r}: {self.num_ranks} ranks, {self.num_stages} stages, "
            f"{self.num_microbatches} microbatches, {n} actions"
            + (", lowered" if self.is_lowered else "")
            + ")"
        )
        lines = format_grid(self).splitlines()
        if len(lines) > 40 or max((len(x) for x in lines), default=0) > 2000:
            return f"{head}\n(grid too large to show: print(schedules.format_grid(s)))"
        return head + "\n" + "\n".join(lines)

    # -- queries ---------------------------------------------------------------------------------

    def stages_of(self, rank: int) -> list[int]:
        """The stages placed on ``rank``, in increasing order."""
        return [s for s, r in enumerate(self.stage_to_rank) if r == rank]

    @property
    def is_lowered(self) -> bool:
        """Whether the schedule holds sends and receives (see :func:`lower`)."""
        return any(
            a is not None and a.kind in COMM_KINDS for row in self.actions.values() for a in row
        )

    @property
    def has_backward(self) -> bool:
        """Whether the schedule trains (holds B, I or W) rather than only runs forwards."""
        return any(
            a is not None and a.kind in (Kind.B, Kind.I, Kind.W)
            for row in self.actions.values()
            for a in row
        )

    def compute_only(self) -> Schedule:
        """This schedule without sends, receives and idle slots."""
        return self.replace_actions(
            {
                r: [a for a in row if a is not None and a.kind in COMPUTE_KINDS]
                for r, row in self.actions.items()
            }
        )

    def replace_actions(self, actions: Mapping[int, Sequence[Action | None]]) -> Schedule:
        """A copy with other actions and the same shape and placement."""
        return Schedule(
            self.name,
            self.num_ranks,
            self.num_stages,
            self.num_microbatches,
            self.stage_to_rank,
            {r: list(row) for r, row in actions.items()},
        )

    # -- text and CSV ----------------------------------------------------------------------------

    def _header(self) -> str:
        meta = {
            "name": self.name,
            "num_ranks": self.num_ranks,
            "num_stages": self.num_stages,
            "num_microbatches": self.num_microbatches,
            "stage_to_rank": list(self.stage_to_rank),
        }
        return "# hlopipe-schedule " + json.dumps(meta)

    def to_text(self) -> str:
        """One line per rank, ``rank: action action ...``, ``.`` for an idle slot.

        >>> print(Schedule("t", 1, 1, 1, (0,), {0: [None, Action(0, Kind.F, 0)]}).to_text())
        # hlopipe-schedule {"name": "t", "num_ranks": 1, "num_stages": 1, "num_microbatches": 1, "stage_to_rank": [0]}
        0: . 0F0
        <BLANKLINE>
        """  # noqa: E501
        lines = [self._header()]
        for r in range(self.num_ranks):
            cells = " ".join("." if a is None else str(a) for a in self.actions[r])
            lines.append(f"{r}: {cells}".rstrip())
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str) -> Schedule:
        """The schedule :meth:`to_text` wrote."""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        meta = _parse_header(lines[0] if lines else "")
        actions: dict[int, list[Action | None]] = {}
        for ln in lines[1:]:
            rank_text, sep, rest = ln.partition(":")
            if not sep or not rank_text.strip().isdigit():
                raise ScheduleError(f"expected 'rank: actions', got {ln!r}")
            actions[int(rank_text)] = [
                None if tok == "." else Action.parse(tok) for tok in rest.split()
            ]
        return cls(actions=actions, **meta)

    def to_csv(self) -> str:
        """A header comment, then ``rank,0,1,...`` and one row per rank; empty cell = idle."""
        out = io.StringIO()
        out.write(self._header() + "\n")
        width = max((len(row) for row in self.actions.values()), default=0)
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["rank", *range(width)])
        for r in range(self.num_ranks):
            row = ["" if a is None else str(a) for a in self.actions[r]]
            writer.writerow([r, *row, *[""] * (width - len(row))])
        return out.getvalue()

    @classmethod
    def from_csv(cls, text: str) -> Schedule:
        """The schedule :meth:`to_csv` wrote."""
        first, _, body = text.partition("\n")
        meta = _parse_header(first)
        rows = list(csv.reader(io.StringIO(body)))
        actions: dict[int, list[Action | None]] = {}
        for row in rows[1:]:
            if not row:
                continue
            if not row[0].strip().isdigit():
                raise ScheduleError(f"CSV row does not start with a rank: {row[:3]!r}")
            actions[int(row[0])] = [Action.parse(c) if c.strip() else None for c in row[1:]]
        return cls(actions=actions, **meta)


def _parse_header(line: str) -> dict:
    prefix = "# hlopipe-schedule "
    if not line.startswith(prefix):
        raise ScheduleError(f"not a schedule: first line should start with {prefix.strip()!r}")
    try:
        meta = json.loads(line[len(prefix) :])
        return {
            "name": str(meta["name"]),
            "num_ranks": int(meta["num_ranks"]),
            "num_stages": int(meta["num_stages"]),
            "num_microbatches": int(meta["num_microbatches"]),
            "stage_to_rank": tuple(int(r) for r in meta["stage_to_rank"]),
        }
    except (ValueError, KeyError, TypeError) as e:
        raise ScheduleError(f"bad schedule header {line!r}: {e}") from e


def iter_actions(schedule: Schedule) -> Iterable[tuple[int, int, Action]]:
    """Every (rank, step, action) of ``schedule``, idle slots skipped."""
    for r in range(schedule.num_ranks):
        for t, a in enumerate(schedule.actions[r]):
            if a is not None:
                yield r, t, a
