"""The ``hlopipe`` command.

One module per subcommand (``cli/<name>.py``), each a thin layer over the library: an
``_add_<name>(parser)`` that declares its arguments, a handler whose docstring is its help
line, and a ``COMMAND`` (:class:`~hlopipe.cli._common.Command`) naming both, together with
the flags that set the library keywords its errors may name; ``_IN_ORDER`` below lists them.
Errors a user can cause are :class:`~hlopipe.errors.HlopipeError`; they print one
``error: ...`` line and exit 2 (with a traceback under ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence

from hlopipe import __version__
from hlopipe.cli import (
    conformance,
    decompile,
    demo,
    export_params,
    generate,
    inspect,
    launch,
    plan,
    run,
    schedule,
    serve,
    split,
    train,
)
from hlopipe.cli._common import COMMANDS, Parser, one_line
from hlopipe.errors import HlopipeError

__all__ = ["build_parser", "main"]

# The commands, in the order `hlopipe --help` lists them.
_IN_ORDER = (
    schedule,
    inspect,
    run,
    decompile,
    demo,
    split,
    plan,
    conformance,
    train,
    export_params,
    generate,
    serve,
    launch,
)
COMMANDS.update((m.COMMAND.name, m.COMMAND) for m in _IN_ORDER)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="hlopipe", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"hlopipe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        p.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks on errors",
        )
        command.add(p)
        p.set_defaults(_handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # XLA's C++ INFO logs would drown the output.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        code = int(args._handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except HlopipeError as e:
        if debug:
            traceback.print_exc()
        msg = str(e)
        print(f"error: {one_line(e, args.command)}" if not debug else f"error: {msg}",
              file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`hlopipe inspect --json | head`): stop quietly; stdout now
        # goes nowhere so that the flush at exit does not fail again
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
