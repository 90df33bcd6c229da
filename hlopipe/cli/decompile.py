"""`hlopipe decompile`: a program back to JAX source (over `decompile`)."""

from __future__ import annotations

import argparse

from hlopipe.cli._common import Command
from hlopipe.errors import HlopipeError


def _add_decompile(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program (any format) or a dump folder")
    p.add_argument("-o", "--output", required=True, metavar="OUT.py", help="the module to write")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument(
        "--style",
        choices=("jnp", "lax"),
        default="jnp",
        help="jnp: idiomatic folds where exact (default); lax: one lax call per equation",
    )


def _cmd_decompile(args: argparse.Namespace) -> int:
    """write a program back as readable JAX source (a .py defining main)"""
    from pathlib import Path

    import hlopipe
    from hlopipe.decompile import decompile

    out = Path(args.output)
    if out.suffix != ".py":
        raise HlopipeError(f"-o {args.output}: the output must be a .py file")
    if not out.parent.is_dir():
        raise HlopipeError(f"-o {args.output}: the folder {out.parent} does not exist")
    prog = hlopipe.load(args.file, module=args.module)
    result = decompile(prog, style=args.style, constants_file=out.stem + ".npz")
    try:
        written = result.save(out)
    except OSError as e:
        raise HlopipeError(f"-o {args.output}: cannot write: {e}") from e
    lines = len(result.source.splitlines())
    print(f"wrote {', '.join(map(str, written))} ({lines} lines, def main)")
    return 0


COMMAND = Command("decompile", _add_decompile, _cmd_decompile)
