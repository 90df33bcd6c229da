"""The ``hlopipe`` command.

Each subcommand is a pair of functions, ``_add_<name>(subparsers)`` that declares its
arguments and ``_cmd_<name>(args) -> int`` that runs it. Errors a user can cause are
:class:`~hlopipe.errors.HlopipeError`; they print one ``error: ...`` line and exit 2 (with a
traceback under ``--debug``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence

from hlopipe.errors import HlopipeError

# name -> (adder, handler); filled by the _register decorator below.
_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {}


def _register(name: str, help: str):  # noqa: A002 - argparse's word
    def deco(adder: Callable[[argparse.ArgumentParser], None]):
        def wrap(handler: Callable[[argparse.Namespace], int]):
            _COMMANDS[name] = (adder, handler)
            handler.__doc__ = help
            return handler

        return wrap

    return deco


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors follow the one-line ``error: ...`` / exit 2 convention."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hlopipe", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, (adder, handler) in _COMMANDS.items():
        p = sub.add_parser(name, help=handler.__doc__, description=handler.__doc__)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks on errors")
        adder(p)
        p.set_defaults(_handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        return int(args._handler(args) or 0)
    except HlopipeError as e:
        if debug:
            traceback.print_exc()
        msg = " ".join(str(e).split("\n")[0].split()) if not debug else str(e)
        print(f"error: {_one_line(e)}" if not debug else f"error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _one_line(e: BaseException) -> str:
    """The error as one line: its lines joined, whitespace collapsed."""
    return " ".join(str(e).split())


# ---------------------------------------------------------------------------------------------
# Subcommands. Each room adds its own pair below; keep them in this order:
# inspect, run (io/rehydrate) · schedule (schedules) · conformance (rehydrate) ·
# split (stages) · train, demo (runtime) · launch (distributed).
# ---------------------------------------------------------------------------------------------
