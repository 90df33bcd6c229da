"""`hlopipe generate`: a decode step split into stages, generating token by token (over
`hlopipe.generate`)."""

from __future__ import annotations

import argparse
from typing import Any

from hlopipe.cli._common import (
    CPU_DEVICES,
    Command,
    add_stage_mesh_flags,
    check_output_file,
    join_job_or_ask_cpu_devices,
    load,
    param_rules,
    stage_mesh,
    x64_for,
)
from hlopipe.errors import RuntimeConfigError


def _add_generate(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="the decode step: (params, state, tokens, "
                   "position) -> (next_tokens, state), state donated, or a folder of "
                   "hlopipe.torch.export_generation (default: the built-in tiny GPT, as "
                   "hlopipe serve has it)")  # fmt: skip
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

    if args.output is not None:
        check_output_file(args.output, "--output", (".npy",))
    mesh_shape, mesh_axes = stage_mesh(args)
    rules = param_rules(args, mesh_shape, mesh_axes)
    join_job_or_ask_cpu_devices(args.cpu_devices)
    from hlopipe.generate import is_export_folder, read_export_folder

    params, max_len = None, args.max_len
    params_path, tokenizer_path = args.params, args.tokenizer
    if args.file is None:  # the built-in tiny GPT, as `hlopipe serve` has it
        decode, prefill, params, max_len = _builtin(args)
    elif is_export_folder(args.file):  # hlopipe.torch.export_generation's folder
        if args.prefill is not None:
            raise RuntimeConfigError(
                f"--prefill given with the folder {args.file}, which holds its own prefill"
            )
        folder = read_export_folder(args.file)
        decode, prefill = load(folder.decode, None), load(folder.prefill, None)
        params_path = params_path or folder.params
        tokenizer_path = tokenizer_path or folder.tokenizer
        max_len = max_len or folder.max_len
    else:
        decode = load(args.file, None)
        prefill = load(args.prefill, None) if args.prefill else None
    with x64_for(decode, prefill):  # PyTorch's int64 tokens: 64-bit mode for this run
        return run_command(decode, prefill=prefill, params=params, params_path=params_path,
                           prefill_params_path=args.prefill_params, stages=args.stages,
                           groups=args.groups, tokens=args.tokens, prompts_path=args.prompts,
                           tokenizer_path=tokenizer_path, prompt_len=args.prompt_len,
                           output_path=args.output, seed=args.seed, max_len=max_len,
                           check=args.check, stage_mesh_shape=mesh_shape,
                           stage_mesh_axes=mesh_axes, param_rules=rules)  # fmt: skip


def _builtin(args: argparse.Namespace) -> tuple[Any, Any, Any, int]:
    """The built-in tiny GPT's decode step, prefill, parameters and cache length (the flags
    that name files of one's own refused beside it)."""
    for flag, value in (("--prefill", args.prefill), ("--params", args.params),
                        ("--prefill-params", args.prefill_params)):  # fmt: skip
        if value is not None:
            raise RuntimeConfigError(
                f"{flag} given without a decode step file: the built-in tiny GPT has its "
                f"own; give the decode step (hlopipe generate decode.bin {flag} ...)"
            )
    try:
        from hlopipe.serve import builtin_model
    except ImportError as e:
        raise RuntimeConfigError(
            f"the built-in tiny GPT lives in the serve extra ({e.name} is missing): pip "
            "install 'hlopipe[serve]', or give a decode step file"
        ) from e
    built = builtin_model(args.stages or 2, args.seed)
    return built.decode, built.prefill, built.params, args.max_len or built.max_len


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
