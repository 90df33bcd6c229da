"""`hlopipe generate`: a decode step split into stages, generating token by token (over
`hlopipe.generate`)."""

from __future__ import annotations

import argparse
import os

from hlopipe.cli._common import (
    CPU_DEVICES,
    Command,
    add_stage_mesh_flags,
    ask_cpu_devices,
    check_output_file,
    load,
    param_rules,
    stage_mesh,
    x64_for,
)


def _add_generate(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="the decode step: (params, state, tokens, position) -> "
                   "(next_tokens, state), state donated")  # fmt: skip
    p.add_argument("--prefill", help="the prefill: (params, prompt) -> (next_tokens, state)")
    p.add_argument(
        "--params",
        help=".npz of the parameters in order, or a checkpoint folder "
        "of hlopipe train --save (default: random)",
    )
    p.add_argument("--prefill-params", metavar="FILE", help=".npz of the prefill's own "
                   "arguments but the prompt, in its order, where they cannot be matched "
                   "(default: the decode step's --params, matched by order, name, shape or "
                   "data flow)")  # fmt: skip
    p.add_argument("--stages", type=int, help="must agree with the stage markers")
    p.add_argument("--groups", type=int, help="groups of sequences in flight (default 1, or "
                   "as many as --prompts fills)")  # fmt: skip
    p.add_argument("--tokens", type=int, help="tokens to generate per sequence (default 16, "
                   "or as many as the cache holds)")  # fmt: skip
    p.add_argument("--prompts", metavar="FILE", help="the prompts (with --prefill): a .npy of "
                   "token ids [n, P] or [groups, batch, P], or a text file, one prompt a line, "
                   "with --tokenizer (default: random ids)")  # fmt: skip
    p.add_argument("--tokenizer", metavar="JSON", help="a Hugging Face tokenizers file: encodes "
                   "text --prompts, decodes what is generated")  # fmt: skip
    p.add_argument("--prompt-len", type=int, help="random prompt length (default: the prefill's)")
    p.add_argument("--output", metavar="FILE.npy", help="write the tokens, [groups, batch, "
                   "tokens], here")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-len", type=int, help="the cache length (default: the axis the "
                   "position indexes in the cache's updates)")  # fmt: skip
    p.add_argument("--check", action="store_true", help="compare with the unsplit program")
    add_stage_mesh_flags(p)
    p.add_argument("--cpu-devices", type=int, help=f"CPU devices (default {CPU_DEVICES})")


def _cmd_generate(args: argparse.Namespace) -> int:
    """generate tokens with a decode step split into stages"""

    from hlopipe.generate import run_command
    from hlopipe.runtime import distributed

    if args.output is not None:
        check_output_file(args.output, "--output", (".npy",))
    mesh_shape, mesh_axes = stage_mesh(args)
    rules = param_rules(args, mesh_shape, mesh_axes)
    if os.environ.get(distributed.ENV_COORDINATOR):  # under hlopipe launch: join the job
        distributed.initialize(cpu_devices=args.cpu_devices)
    else:
        ask_cpu_devices(args.cpu_devices or CPU_DEVICES)
    decode = load(args.file, None)
    prefill = load(args.prefill, None) if args.prefill else None
    with x64_for(decode, prefill):  # PyTorch's int64 tokens: 64-bit mode for this run
        return run_command(decode, prefill=prefill, params_path=args.params,
                           prefill_params_path=args.prefill_params, stages=args.stages,
                           groups=args.groups, tokens=args.tokens, prompts_path=args.prompts,
                           tokenizer_path=args.tokenizer, prompt_len=args.prompt_len,
                           output_path=args.output, seed=args.seed, max_len=args.max_len,
                           check=args.check, stage_mesh_shape=mesh_shape,
                           stage_mesh_axes=mesh_axes, param_rules=rules)  # fmt: skip


COMMAND = Command(
    "generate",
    _add_generate,
    _cmd_generate,
    num_stages="--stages",
    prefill="--prefill",
    groups="--groups",
    prompt_len="--prompt-len",
    prompts_path="--prompts",
    tokenizer_path="--tokenizer",
    params_path="--params",
    prefill_params="--prefill-params",
    prefill_params_path="--prefill-params",
    jax_num_cpu_devices="--cpu-devices",
    max_len="--max-len",
    stage_mesh_shape="--stage-mesh",
    stage_mesh_axes="--stage-mesh-axes",
    param_rules="--param-spec",
)
