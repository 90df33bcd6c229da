"""The errors hlopipe raises for user mistakes.

This module imports nothing, so every room (even the pure-Python ``schedules``) can use it.
Every error a user can cause is a subclass of :class:`HlopipeError`; the CLI prints such an
error as one ``error: ...`` line and exits with status 2.
"""

from __future__ import annotations


class HlopipeError(Exception):
    """Base class of every error hlopipe raises for bad input or unsupported programs."""


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
