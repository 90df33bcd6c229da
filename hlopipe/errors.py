"""The errors hlopipe raises for user mistakes.

This module imports nothing of hlopipe, so every room (even the pure-Python ``schedules``) can
use it. Every error a user can cause is a subclass of :class:`HlopipeError`; the CLI prints
such an error as one ``error: ...`` line and exits with status 2. An error names the keyword
arguments it concerns as :class:`Keyword` fields, which the CLI writes as its flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_UNSET: Any = object()


@dataclass(frozen=True)
class Keyword:
    """A keyword argument of a library call that an error message names, as a field of the
    error rather than words in its text: ``num_stages=3`` in Python, and whatever a front end
    sets it with (``--stages 3`` in the ``hlopipe`` command) when rendered by
    :meth:`HlopipeError.render`.

    Example:
      >>> raise StageError(Keyword("num_stages", 3), " was asked for; remove ",
      ...                  Keyword("num_stages"), " or the markers")
    """

    name: str
    value: Any = _UNSET

    def __str__(self) -> str:
        return self.name if self.value is _UNSET else f"{self.name}={self.value}"

    def as_flag(self, flag: str) -> str:
        """This keyword written as a command-line flag (with its value where it has one)."""
        if self.value is _UNSET:
            return flag
        value = self.value
        if isinstance(value, tuple) and len(value) == 1:
            value = value[0]
        return f"{flag} {value}"


@dataclass(frozen=True)
class ApiOnly:
    """Words of an error message that hold in Python only: advice to pass a keyword that no
    command-line flag sets. ``str(e)`` says ``text``; a front end that writes the message
    with its flags (:meth:`HlopipeError.render`) says ``elsewhere`` instead.

    Example:
      >>> raise RuntimeConfigError("no argument is state; export it with the state donated",
      ...                          ApiOnly(" or pass state=[argument paths]"))
    """

    text: str
    elsewhere: str = ""

    def __str__(self) -> str:
        return self.text


class HlopipeError(Exception):
    """Base class of every error hlopipe raises for bad input or unsupported programs.

    The message is given in parts: text, and :class:`Keyword` fields for the keyword
    arguments it concerns (``keywords``), so that a front end names them its own way
    (:meth:`render`); ``str(e)`` writes them as Python keywords.
    """

    def __init__(self, *parts: Any) -> None:
        self.parts: tuple[Any, ...] = parts
        if len(parts) > 1 or any(isinstance(p, Keyword) for p in parts):
            super().__init__("".join(str(p) for p in parts))
        else:
            super().__init__(*parts)

    @classmethod
    def refuse_unknown(cls, given: Mapping[str, object], declared: type, where: str) -> None:
        """Raise this error if ``given`` holds a keyword the TypedDict ``declared`` does not
        declare, naming it and those it does: the run-time check of a ``**kwargs:
        Unpack[declared]`` (mypy checks the callers it sees)."""
        known = list(declared.__annotations__)
        unknown = [k for k in given if k not in known]
        if unknown:
            raise cls(
                f"{where}: unknown keyword {unknown[0]!r}; the keywords are {', '.join(known)}"
            )

    @property
    def keywords(self) -> tuple[Keyword, ...]:
        """The keyword arguments this error concerns, in the order the message names them."""
        return tuple(p for p in getattr(self, "parts", ()) if isinstance(p, Keyword))

    def render(self, flags: Mapping[str, str]) -> str:
        """The message with each keyword named by ``flags`` (keyword -> flag) written as that
        flag, the others as Python keywords."""
        parts = getattr(self, "parts", None)
        if not parts or not any(isinstance(p, Keyword | ApiOnly) for p in parts):
            return str(self)
        return render(parts, flags)


def render(parts: Sequence[Any], flags: Mapping[str, str] | None = None) -> str:
    """Text and :class:`Keyword` parts joined, each keyword named by ``flags`` (keyword ->
    flag) written as that flag, the others as Python keywords. Given ``flags`` (a front end),
    an :class:`ApiOnly` part says its ``elsewhere``; without, its ``text``."""
    front_end = flags is not None
    flags = flags or {}

    def one(p: Any) -> str:
        if isinstance(p, Keyword) and p.name in flags:
            return p.as_flag(flags[p.name])
        if isinstance(p, ApiOnly) and front_end:
            return p.elsewhere
        return str(p)

    return "".join(one(p) for p in parts)


class LoadError(HlopipeError):
    """A file or buffer could not be read as any XLA program format."""


class UnsupportedOpError(HlopipeError):
    """A program uses operations (or features of them) that hlopipe cannot rehydrate."""


class RehydrateError(HlopipeError):
    """Running a rehydrated program failed: wrong arguments, or an op failed on its inputs."""


class StageError(HlopipeError):
    """A program cannot be split into pipeline stages as asked."""


class ScheduleError(HlopipeError):
    """A pipeline schedule is malformed, invalid, or deadlocks."""


class RuntimeConfigError(HlopipeError):
    """A pipeline cannot be placed or run as configured (devices, batch, parameters)."""


class DistributedError(HlopipeError):
    """A multi-process run failed: a peer process died or could not be reached."""


class NonFiniteError(HlopipeError):
    """A training step's loss or gradients are not finite (``Pipeline(check_finite=True)``)."""


class PlanFileError(HlopipeError):
    """A plan file (``hlopipe plan -o``, ``hlopipe train --plan``) is malformed: the message
    names the file, the field and what is allowed."""
