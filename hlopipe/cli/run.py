"""`hlopipe run`: rehydrate a program and run it (over `io`, `rehydrate`)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from hlopipe.cli._common import Command, check_output_file, load


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="an XLA program (any format) or a dump folder")
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument("--inputs", help=".npz with the arguments (arg0, arg1, ... or in order)")
    p.add_argument("--outputs", help="write the results to this .npz")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--no-jit", action="store_true", help="run op by op instead of jitted")
    p.add_argument("--x64", action="store_true", help="enable 64-bit types (auto when needed)")


def _cmd_run(args: argparse.Namespace) -> int:
    """rehydrate a program and run it on given or random inputs"""
    import jax

    from hlopipe.io import TokenType

    if args.outputs:
        check_output_file(args.outputs, "--outputs", (".npz",))
    prog = load(args.file, args.module)
    avals = [a for a in prog.in_avals if not isinstance(a, TokenType)]
    from hlopipe.rehydrate import module_ir, uses_64bit

    # 64-bit mode for this run only (never left on for the caller)
    x64 = args.x64 or uses_64bit(module_ir(prog))
    with jax.enable_x64(True) if x64 else contextlib.nullcontext():
        return _run_loaded(args, prog, avals)


def _run_loaded(args: argparse.Namespace, prog: Any, avals: list) -> int:
    import jax
    import numpy as np

    from hlopipe.errors import HlopipeError
    from hlopipe.io import format_aval
    from hlopipe.training import load_npz

    fn = prog.as_function(flat=True)
    if args.inputs:
        data = dict(zip(*load_npz(args.inputs, "inputs"), strict=True))
        keys = list(data.keys())
        if len(keys) != len(avals):
            raise HlopipeError(
                f"{args.inputs} holds {len(keys)} arrays, the program takes {len(avals)}"
            )
        named = [f"arg{i}" for i in range(len(avals))]
        values = [data[k] for k in (named if set(named) <= set(keys) else keys)]
    else:
        values = _random_inputs(avals, args.seed)
    run = fn if args.no_jit else jax.jit(fn)
    out = run(*values)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        arr = np.asarray(o)
        stats = ""
        if arr.size and arr.dtype.kind in "fiu":
            stats = (
                f"  mean {arr.astype(np.float64).mean():.6g}  min {arr.min():.6g}  "
                f"max {arr.max():.6g}"
            )
        print(f"out{i}: {format_aval(jax.ShapeDtypeStruct(arr.shape, arr.dtype))}{stats}")
        if arr.size <= 8:
            print(f"  {arr.tolist()}")
    if args.outputs:
        arrays = {f"out{i}": np.asarray(o) for i, o in enumerate(outs)}
        np.savez(args.outputs, **arrays)  # type: ignore[arg-type]
        print(f"outputs written to {args.outputs}")
    return 0


def _random_inputs(avals: list, seed: int) -> list:
    import numpy as np

    rng = np.random.default_rng(seed)
    values = []
    for a in avals:
        dt = np.dtype(a.dtype)
        if dt == np.dtype(bool):
            values.append(rng.random(a.shape) < 0.5)
        elif dt.kind in "iu":
            values.append(rng.integers(0, 4, a.shape).astype(dt))
        elif dt.kind == "c":
            values.append(
                (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)).astype(dt)
            )
        else:
            values.append(rng.standard_normal(a.shape).astype(dt))
    return values


COMMAND = Command("run", _add_run, _cmd_run, inputs="--inputs")
