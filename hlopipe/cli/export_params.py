"""`hlopipe export-params`: a training checkpoint's parameters as an .npz for serving."""

from __future__ import annotations

import argparse
import re

from hlopipe.cli._common import Command, check_output_file


def _add_export_params(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "checkpoint",
        help="a checkpoint folder (hlopipe train --save DIR, Pipeline.save): its newest step",
    )
    p.add_argument("--step", type=int, help="the checkpoint's step to export (the newest)")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="NPZ",
        help="the .npz to write: the parameters in the order the run took them (hlopipe "
        "train: argument order), each named by its path; what --params of generate and "
        "serve reads",
    )


def member_name(path: str) -> str:
    """An .npz member's name for a parameter path: a one-level string key as itself
    (``['params.ln1']`` -> ``params.ln1``, an argument's name), any other path as written."""
    m = re.fullmatch(r"\['(.*)'\]", path)
    return m.group(1) if m else path


def _cmd_export_params(args: argparse.Namespace) -> int:
    """write a training checkpoint's parameters to an .npz for generate/serve --params"""
    import numpy as np

    from hlopipe.runtime import read_checkpoint_params

    check_output_file(args.output, "-o", (".npz",))
    named = read_checkpoint_params(args.checkpoint, args.step)
    # np.savez keeps the keyword order, which load_npz (and --params) reads back
    np.savez(args.output, **{member_name(path): x for path, x in named})
    total = sum(int(x.size) for _, x in named)
    print(f"wrote {len(named)} parameters ({total:,} values) to {args.output}")
    return 0


COMMAND = Command("export-params", _add_export_params, _cmd_export_params)
