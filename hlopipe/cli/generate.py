"""`hlopipe generate`: a decode step split into stages, generating token by token (over
`hlopipe.generate`)."""

from __future__ import annotations

import argparse
import contextlib
import os

from hlopipe.cli._common import CPU_DEVICES, Command


def _add_generate(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="the decode step: (params, state, tokens, position) -> "
                   "(next_tokens, state), state donated")  # fmt: skip
    p.add_argument("--prefill", help="the prefill: (params, prompt) -> (next_tokens, state)")
    p.add_argument("--params", help=".npz of the parameters in order (default: random)")
    p.add_argument("--stages", type=int, help="must agree with the stage markers")
    p.add_argument("--groups", type=int, default=1, help="groups of sequences in flight")
    p.add_argument("--tokens", type=int, default=16, help="tokens to generate per sequence")
    p.add_argument("--prompt-len", type=int, default=8, help="random prompt length")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-len", type=int, help="the cache length (default: the axis the "
                   "position indexes in the cache's updates)")  # fmt: skip
    p.add_argument("--check", action="store_true", help="compare with the unsplit program")
    p.add_argument("--cpu-devices", type=int, help=f"CPU devices (default {CPU_DEVICES})")


def _cmd_generate(args: argparse.Namespace) -> int:
    """generate tokens with a decode step split into stages"""
    import jax

    from hlopipe.generate import run_command
    from hlopipe.runtime import distributed

    if os.environ.get(distributed.ENV_COORDINATOR):  # under hlopipe launch: join the job
        distributed.initialize(cpu_devices=args.cpu_devices)
    else:
        with contextlib.suppress(Exception):  # CPU only; a backend already up keeps its devices
            jax.config.update("jax_num_cpu_devices", args.cpu_devices or CPU_DEVICES)
    return run_command(args.file, prefill_path=args.prefill, params_path=args.params,
                       stages=args.stages, groups=args.groups, tokens=args.tokens,
                       prompt_len=args.prompt_len, seed=args.seed, max_len=args.max_len,
                       check=args.check)  # fmt: skip


COMMAND = Command(
    "generate", _add_generate, _cmd_generate, num_stages="--stages", max_len="--max-len"
)
