"""What every command shares: the description of a command, the parser, checks of output paths
before any work, loading a FILE with --module, 64-bit mode for one run."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from hlopipe.errors import HlopipeError


class Command:
    """One subcommand: ``add`` declares its arguments, ``run`` runs it (its docstring is the
    command's help line), ``flags`` names the library keywords its errors may concern by the
    flags that set them (``num_stages="--stages"``). Each ``cli/<name>.py`` ends with its
    ``COMMAND``; ``cli/__init__.py`` lists them."""

    def __init__(
        self,
        name: str,
        add: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
        **flags: str,
    ) -> None:
        self.name, self.add, self.run = name, add, run
        self.help = (run.__doc__ or "").strip()
        self.flags = {**COMMON_FLAGS, **flags}


# name -> Command, in the order `hlopipe --help` lists them (``cli/__init__.py`` fills it).
COMMANDS: dict[str, Command] = {}

# keywords every command renders as its flag
COMMON_FLAGS = {"module": "--module"}

CPU_DEVICES = 8  # on CPU, `train` and `demo` simulate this many devices unless told otherwise
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".webp", ".tif", ".tiff")


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors follow the one-line ``error: ...`` / exit 2 convention, and
    a mistyped choice (a subcommand) gets a "did you mean"."""

    def error(self, message: str):  # type: ignore[override]
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = [c.strip(" '") for c in m.group(2).split(",")]
            message = f"{message}{did_you_mean(m.group(1), choices)}"
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def did_you_mean(word: str, choices: Any) -> str:
    """``" (did you mean 'x'?)"`` when a choice is close to ``word``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(word).lower(), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def one_line(e: BaseException, command: str | None = None) -> str:
    """The error as one line: its lines joined, whitespace collapsed, and the library keywords
    it concerns (its ``Keyword`` fields) written as the command's flags."""
    cmd = COMMANDS.get(command or "")
    text = e.render(cmd.flags if cmd else COMMON_FLAGS) if isinstance(e, HlopipeError) else str(e)
    return " ".join(text.split())


def check_output_file(path: str, flag: str, suffixes: Sequence[str] | None = None) -> None:
    """Before any work: ``path`` can be written as a file (its folder exists, it is not a
    folder, its suffix is one of ``suffixes``, and a file can be created there)."""
    from pathlib import Path

    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise HlopipeError(
            f"{flag} {path}: the format follows the file name; use one of "
            f"{', '.join(suffixes[:3])} (not {p.suffix or 'no suffix'!r})"
        )
    if p.is_dir():
        raise HlopipeError(f"{flag} {path}: is a folder; give a file name")
    _check_parent(p, flag, path)
    _probe(p, flag, path, folder=False)


def check_output_dir(path: str, flag: str) -> None:
    """Before any work: ``path`` is a folder or can become one (its parent exists, and a
    folder can be created there)."""
    from pathlib import Path

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise HlopipeError(f"{flag} {path}: is a file, not a folder; give a folder name")
    if not p.exists():
        _check_parent(p, flag, path)
    _probe(p, flag, path, folder=True)


def _check_parent(p: Any, flag: str, path: str) -> None:
    """``p``'s folder exists and is a folder (``-o f.mlir/sub``: f.mlir is a file)."""
    from pathlib import Path

    parent = p.parent if str(p.parent) else Path(".")
    if parent.is_dir():
        return
    # the nearest ancestor that exists: a file there is the mistake to name
    blocker = next((a for a in p.parents if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise HlopipeError(f"{flag} {path}: {blocker} is a file, not a folder")
    raise HlopipeError(f"{flag} {path}: the folder {parent} does not exist; create it first")


def _probe(p: Any, flag: str, path: str, folder: bool) -> None:
    """Create what the command will write (and remove it again), so that a place that cannot
    hold it (a read-only or virtual file system such as /proc, where even root may not
    write) fails here, before any work; permission bits alone do not tell (root)."""
    import tempfile

    existed = p.exists()
    try:
        if folder and p.exists():
            fd, probe = tempfile.mkstemp(dir=p, prefix=".hlopipe-probe-")
            os.close(fd)
            os.unlink(probe)
        elif folder:
            p.mkdir()
            p.rmdir()
        elif p.exists():
            with open(p, "ab"):  # appending nothing leaves the file as it is
                pass
        else:
            with open(p, "xb"):
                pass
            p.unlink()
    except OSError as e:
        what = ("write in" if existed else "create") + (" the folder" if folder else " the file")
        raise HlopipeError(
            f"{flag} {path}: cannot {what} ({e.strerror or e}); "
            "give a path in a folder you can write to"
        ) from None


def load(path: str, module: str | None) -> Any:
    """``io.load`` for a command's FILE and --module, with a "did you mean" for the module."""
    from pathlib import Path

    from hlopipe import io

    if module is not None and Path(path).is_dir():
        names = list(io.dump_modules(path))
        if names and not any(module in n for n in names):
            short = [n.split(".", 1)[-1] for n in names]
            raise HlopipeError(
                f"--module {module}: no module of {path} matches{did_you_mean(module, short)}; "
                f"modules: {', '.join(short)}"
            )
    return io.load(path, module=module)


def add_stage_mesh_flags(p: argparse.ArgumentParser) -> None:
    """``--stage-mesh`` and ``--stage-mesh-axes``: each stage's mesh, as ``Generator`` takes
    it (read with :func:`stage_mesh`); ``--param-spec``: the parameters' layout on it (read
    with :func:`param_rules`)."""
    p.add_argument("--stage-mesh", metavar="SHAPE", help="each stage on a mesh of this shape, "
                   "sizes joined by 'x' such as 2 or 2x2 (default: a device a stage)")  # fmt: skip
    p.add_argument("--stage-mesh-axes", metavar="NAMES", help="the stage mesh's axis names, "
                   "comma-separated, one per size (default: data, for one size); 'data' splits "
                   "a group's batch")  # fmt: skip
    p.add_argument("--param-spec", action="append", default=[], metavar="PATTERN=SPEC",
                   help="lay out the parameters whose path (as the argument roles print it, "
                   "such as [0]['layers'][0]['qkv']) holds a match of the regular expression "
                   "PATTERN: SPEC is a stage mesh axis or _ per dimension, comma-separated, "
                   "such as 'qkv=_,model'; repeatable, the first matching rule wins; "
                   "parameters no rule matches keep the program's layout (else "
                   "replicated)")  # fmt: skip


def stage_mesh(args: argparse.Namespace) -> tuple[tuple[int, ...] | None, tuple[str, ...] | None]:
    """The stage mesh's shape and axis names from :func:`add_stage_mesh_flags`' flags.

    Raises:
      HlopipeError: a shape that is not positive sizes joined by 'x', axes without a shape,
        a shape of several axes without their names, or a number of axis names that is not
        the shape's."""
    shape = axes = None
    if args.stage_mesh is not None:
        try:
            shape = tuple(int(v) for v in args.stage_mesh.lower().split("x"))
        except ValueError:
            shape = ()
        if not shape or min(shape) < 1:
            raise HlopipeError(
                f"--stage-mesh {args.stage_mesh!r}: expected positive sizes joined by 'x', such "
                "as 2 or 2x2"
            )
    if args.stage_mesh_axes is None and shape is not None and len(shape) > 1:
        raise HlopipeError(
            f"--stage-mesh {args.stage_mesh} has {len(shape)} axes: name them with "
            "--stage-mesh-axes, such as data,model ('data' splits a group's batch)"
        )
    if args.stage_mesh_axes is not None:
        axes = tuple(a.strip() for a in args.stage_mesh_axes.split(","))
        if shape is None:
            raise HlopipeError("--stage-mesh-axes needs --stage-mesh (the sizes of those axes)")
        if len(axes) != len(shape) or not all(axes) or len(set(axes)) != len(axes):
            raise HlopipeError(
                f"--stage-mesh-axes {args.stage_mesh_axes!r}: give {len(shape)} distinct "
                f"comma-separated names, one per size of --stage-mesh {args.stage_mesh}"
            )
    return shape, axes


def param_rules(
    args: argparse.Namespace, shape: tuple[int, ...] | None, axes: tuple[str, ...] | None
) -> list[Any]:
    """``--param-spec``'s rules (``hlopipe.generate.ParamRule``), checked against the stage
    mesh of :func:`stage_mesh` (``shape``, ``axes``) before any work; the library matches
    them to the parameters (``hlopipe.generate.param_specs_from_rules``).

    Raises:
      RuntimeConfigError: a rule without ``=``, a pattern that is not a regular expression,
        or an axis the stage mesh does not have."""
    from hlopipe.generate import parse_param_rule

    have = axes if axes is not None else ("data",) if shape is not None else None
    return [parse_param_rule(text, have) for text in args.param_spec]


def join_job_or_ask_cpu_devices(cpu_devices: int | None) -> None:
    """Under ``hlopipe launch`` (its coordinator in the environment): join the job, with
    ``cpu_devices`` per process; else ask JAX for ``cpu_devices`` (default ``CPU_DEVICES``)
    CPU devices in this process."""
    from hlopipe.runtime import distributed

    if os.environ.get(distributed.ENV_COORDINATOR):
        distributed.initialize(cpu_devices=cpu_devices)
    else:
        ask_cpu_devices(cpu_devices or CPU_DEVICES)


def ask_cpu_devices(n: int) -> None:
    """Ask JAX for ``n`` CPU devices (a CPU backend only; an accelerator's count is its own).
    JAX refuses (``RuntimeError``) once a backend is up: the devices it has are kept then."""
    import jax

    with contextlib.suppress(RuntimeError):
        jax.config.update("jax_num_cpu_devices", n)


@contextlib.contextmanager
def x64_for(*programs: Any) -> Any:
    """:func:`x64_if_needed` for each of ``programs`` that is given (not None) at once."""
    with contextlib.ExitStack() as stack:
        for program in programs:
            if program is not None:
                stack.enter_context(x64_if_needed(program))
        yield


@contextlib.contextmanager
def x64_if_needed(program: Any) -> Any:
    """A program with 64-bit types (TensorFlow's and PyTorch's int64 labels) is split and
    trained in JAX's 64-bit mode: set globally (the runtime's compile and rank threads must
    see it too, which ``jax.enable_x64`` does not reach), and put back after."""
    import jax

    from hlopipe.rehydrate import module_ir, uses_64bit

    before = bool(jax.config.read("jax_enable_x64"))
    if uses_64bit(module_ir(program)):
        jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)
