"""The action IR: kinds, actions, and a schedule (per-rank ordered lists of actions).

An action names one piece of work of one pipeline stage on one microbatch. A send or a receive
carries the stage *on the rank that runs it*: ``SEND_F`` of stage ``s`` ships stage ``s``'s
output to stage ``s + 1``; ``RECV_F`` of stage ``s`` receives stage ``s``'s input from stage
``s - 1``; ``SEND_B`` of stage ``s`` ships the gradient of stage ``s``'s input to stage
``s - 1``; ``RECV_B`` of stage ``s`` receives the gradient of its output from stage ``s + 1``.
So an action never needs a peer field: the peer follows from the stage and the placement.

An :class:`Overlap` (kind ``OVERLAP_F_B``) is one forward and one backward, of other stages or
microbatches, run as one unit on a rank (DualPipe's F&B overlap: one's compute hides the
other's transfers). It prints as torch.distributed.pipelining does, ``(0F7;7B3)OVERLAP_F_B``.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from hlopipe.errors import ScheduleError


class Kind(enum.StrEnum):
    """What an action does."""

    F = "F"  # forward
    B = "B"  # full backward (input and weight gradients)
    I = "I"  # backward for inputs only (zero-bubble split)
    W = "W"  # backward for weights only (zero-bubble split)
    SEND_F = "SEND_F"  # send this stage's activation to the next stage
    RECV_F = "RECV_F"  # receive this stage's input activation from the previous stage
    SEND_B = "SEND_B"  # send the gradient of this stage's input to the previous stage
    RECV_B = "RECV_B"  # receive the gradient of this stage's output from the next stage
    OVERLAP_F_B = "OVERLAP_F_B"  # one F and one B (or I) run together: see Overlap


COMPUTE_KINDS = frozenset({Kind.F, Kind.B, Kind.I, Kind.W, Kind.OVERLAP_F_B})
COMM_KINDS = frozenset({Kind.SEND_F, Kind.RECV_F, Kind.SEND_B, Kind.RECV_B})

# Longest names first so that "SEND_F" is not read as "S..." + "F". OVERLAP_F_B has its own
# form, "(F;B)OVERLAP_F_B", never "<stage>OVERLAP_F_B<microbatch>".
_PLAIN_KINDS = sorted((k.value for k in Kind if k is not Kind.OVERLAP_F_B), key=len, reverse=True)
_ACTION_RE = re.compile(r"^(\d+)(" + "|".join(_PLAIN_KINDS) + r")(\d+)$")
_OVERLAP_RE = re.compile(r"^\(([^;()]*);([^;()]*)\)" + Kind.OVERLAP_F_B.value + "$")


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
        """The action ``text`` names (the exact inverse of ``str``); ScheduleError if none.

        ``(0F7;7B3)OVERLAP_F_B`` gives an :class:`Overlap`.
        """
        stripped = text.strip() if isinstance(text, str) else ""
        overlap = _OVERLAP_RE.match(stripped)
        if overlap is not None:
            return Overlap(cls.parse(overlap[1]), cls.parse(overlap[2]))
        match = _ACTION_RE.match(stripped)
        if match is None:
            kinds = ", ".join(_PLAIN_KINDS[::-1])
            raise ScheduleError(
                f"cannot parse action {text!r}: expected <stage><kind><microbatch> such as "
                f"'2F0' or '1SEND_B3', kind one of {kinds}, or (<F>;<B>)OVERLAP_F_B such as "
                "'(0F7;7B3)OVERLAP_F_B'"
            )
        return cls(int(match[1]), Kind(match[2]), int(match[3]))

    def describe(self) -> str:
        """Words for error messages: ``B of stage 2, microbatch 3``."""
        return f"{self.kind.value} of stage {self.stage}, microbatch {self.microbatch}"

    @property
    def parts(self) -> tuple[Action, ...]:
        """The plain actions this one runs: itself, or an overlap's forward and backward."""
        return (self,)


class Overlap(Action):
    """One forward and one backward run as one unit (torch's ``OVERLAP_F_B``).

    As a tuple it reads ``(forward.stage, OVERLAP_F_B, forward.microbatch)``, so code that only
    looks at ``kind`` sees one action; ``forward`` and ``backward`` (a B or an I, of another
    stage or microbatch) are the two it runs, ``parts`` both. Two overlaps are equal when both
    parts are.

    >>> o = Overlap(Action(0, Kind.F, 7), Action(7, Kind.B, 3))
    >>> str(o), o.kind.value, Action.parse(str(o)) == o
    ('(0F7;7B3)OVERLAP_F_B', 'OVERLAP_F_B', True)
    """

    backward: Action

    def __new__(cls, forward: Action, backward: Action) -> Overlap:
        if not (isinstance(forward, Action) and forward.kind is Kind.F):
            raise ScheduleError(f"OVERLAP_F_B: the first part must be an F, got {forward}")
        if not (isinstance(backward, Action) and backward.kind in (Kind.B, Kind.I)):
            raise ScheduleError(f"OVERLAP_F_B: the second part must be a B or an I, got {backward}")
        if isinstance(forward, Overlap) or isinstance(backward, Overlap):
            raise ScheduleError("OVERLAP_F_B: an overlap cannot hold another overlap")
        self = super().__new__(cls, forward.stage, Kind.OVERLAP_F_B, forward.microbatch)
        self.backward = Action(*backward)
        return self

    @property
    def forward(self) -> Action:
        """The forward part."""
        return Action(self.stage, Kind.F, self.microbatch)

    @property
    def parts(self) -> tuple[Action, ...]:
        return (self.forward, self.backward)

    def __str__(self) -> str:
        return f"({self.forward};{self.backward}){Kind.OVERLAP_F_B.value}"

    def __repr__(self) -> str:
        return f"Overlap({self.forward!r}, {self.backward!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Overlap)
            and tuple(self) == tuple(other)
            and self.backward == other.backward
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((tuple(self), tuple(self.backward)))

    def __getnewargs__(self) -> tuple[Action, Action]:  # type: ignore[override]
        return (self.forward, self.backward)

    def describe(self) -> str:
        return f"OVERLAP_F_B of {self.forward.describe()} and {self.backward.describe()}"


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
    # A decode schedule (``schedules.decode``): microbatch ``m`` is step ``m // feedback_groups``
    # of group ``m % feedback_groups``, and the last stage's output of ``m`` feeds the first
    # stage of ``m + feedback_groups``. 0: no feedback (every other schedule).
    feedback_groups: int = 0
    # With feedback: step 0 of each group (microbatches ``0..feedback_groups-1``) is the
    # group's prefill, the program that makes its state from the prompt.
    prefill: bool = False

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
            a is not None and a.kind in (Kind.B, Kind.I, Kind.W, Kind.OVERLAP_F_B)
            for row in self.actions.values()
            for a in row
        )

    @property
    def has_overlaps(self) -> bool:
        """Whether the schedule holds OVERLAP_F_B actions (see :func:`split_overlaps`)."""
        return any(isinstance(a, Overlap) for row in self.actions.values() for a in row)

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
            self.feedback_groups,
            self.prefill,
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
        if self.feedback_groups:
            meta["feedback_groups"] = self.feedback_groups
        if self.prefill:
            meta["prefill"] = True
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

    # -- torch.distributed.pipelining's CSV ------------------------------------------------------

    def to_torch_csv(self) -> str:
        """The CSV torch.distributed.pipelining reads (``_load_csv``): one row per rank in rank
        order, one action per cell in torch's text (``0F1``, ``1SEND_B0``,
        ``(0F7;7B3)OVERLAP_F_B``), no header; an idle slot is an empty cell.

        A compute-only schedule is torch's ``compute_only`` format, a lowered one its
        ``compute_comms`` format (same action names and meaning: SEND_F of stage s ships s's
        output to s + 1, RECV_B of stage s takes the gradient of s's output from s + 1).

        >>> from hlopipe.schedules import get
        >>> print(get("1f1b", 2, 2).to_torch_csv(), end="")
        0F0,0F1,0B0,0B1
        1F0,1B0,1F1,1B1
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for r in range(self.num_ranks):
            writer.writerow(["" if a is None else str(a) for a in self.actions[r]])
        return out.getvalue()

    @classmethod
    def from_torch_csv(
        cls, text: str, name: str = "torch", num_microbatches: int | None = None
    ) -> Schedule:
        """The schedule in torch.distributed.pipelining's CSV form (see :meth:`to_torch_csv`).

        Row r is rank r. Stage placement and the stage count come from where each stage's
        actions are; the microbatch count from the largest one named unless given. torch's
        bookkeeping actions that move no data between stages and compute nothing the
        schedule orders (``UNSHARD``, ``RESHARD``, ``REDUCE_GRAD``: FSDP/DDP steps; hlopipe's
        runtime reduces gradients itself) are dropped. Anything else unknown is an error
        naming its row and column.

        >>> s = Schedule.from_torch_csv("0F0,0F1,0B0,0B1\\n1F0,1B0,1F1,1B1\\n")
        >>> s.num_ranks, s.num_stages, s.num_microbatches, s.stage_to_rank
        (2, 2, 2, (0, 1))
        """
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or all(not any(c.strip() for c in row) for row in rows):
            raise ScheduleError("torch CSV: no actions (expected one row of actions per rank)")
        actions: dict[int, list[Action | None]] = {}
        placed: dict[int, int] = {}
        top_mb = -1
        for r, row in enumerate(rows):
            parsed: list[Action | None] = []
            for col, cell in enumerate(row):
                cell = cell.strip()
                if not cell:
                    parsed.append(None)
                    continue
                if _TORCH_BOOKKEEPING.match(cell):
                    continue
                try:
                    a = Action.parse(cell)
                except ScheduleError as e:
                    raise ScheduleError(
                        f"torch CSV, row {r + 1} (rank {r}), column {col + 1}: {e}"
                    ) from e
                for part in a.parts:
                    top_mb = max(top_mb, part.microbatch)
                    if part.kind in COMPUTE_KINDS and placed.setdefault(part.stage, r) != r:
                        raise ScheduleError(
                            f"torch CSV, row {r + 1} (rank {r}), column {col + 1}: {part} runs "
                            f"stage {part.stage}, which rank {placed[part.stage]} runs too"
                        )
                parsed.append(a)
            actions[r] = parsed
        num_stages = max(placed, default=-1) + 1
        missing = [s for s in range(num_stages) if s not in placed]
        if missing or not placed:
            raise ScheduleError(
                f"torch CSV: no compute action of stage(s) {missing or [0]}, so their rank is "
                "unknown"
            )
        m = top_mb + 1 if num_microbatches is None else num_microbatches
        return cls(
            name, len(rows), num_stages, m, tuple(placed[s] for s in range(num_stages)), actions
        )


# torch's actions that are not part of a schedule's data flow: FSDP's unshard/reshard and the
# gradient reduction after a stage's last backward, as ``<stage>UNSHARD`` and so on.
_TORCH_BOOKKEEPING = re.compile(r"^\d+(UNSHARD|RESHARD|REDUCE_GRAD)\d*$")


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
            "feedback_groups": int(meta.get("feedback_groups", 0)),
            "prefill": bool(meta.get("prefill", False)),
        }
    except (ValueError, KeyError, TypeError) as e:
        raise ScheduleError(f"bad schedule header {line!r}: {e}") from e


def iter_actions(schedule: Schedule) -> Iterable[tuple[int, int, Action]]:
    """Every (rank, step, action) of ``schedule``, idle slots skipped."""
    for r in range(schedule.num_ranks):
        for t, a in enumerate(schedule.actions[r]):
            if a is not None:
                yield r, t, a


def iter_parts(schedule: Schedule) -> Iterable[tuple[int, int, Action]]:
    """Like :func:`iter_actions`, with each overlap given as its two parts (same rank, step)."""
    for r, t, a in iter_actions(schedule):
        for part in a.parts:
            yield r, t, part


def split_overlaps(schedule: Schedule) -> Schedule:
    """``schedule`` with each OVERLAP_F_B replaced by its forward, then its backward.

    For a runtime that does not fuse the two: the result runs the same work in an order the
    validator accepts whenever the original's is accepted (neither part waits for the other,
    so running them one after the other only delays, never deadlocks). Sends and receives of
    a lowered schedule stay where they are (before and after the pair).

    >>> s = Schedule("t", 2, 2, 2, (0, 1), {0: [Overlap(Action(0, Kind.F, 1), Action(0, Kind.B, 0))]})
    >>> [str(a) for a in split_overlaps(s).actions[0]]
    ['0F1', '0B0']
    """  # noqa: E501
    return schedule.replace_actions(
        {
            r: [part for a in row for part in ((None,) if a is None else a.parts)]
            for r, row in schedule.actions.items()
        }
    )
