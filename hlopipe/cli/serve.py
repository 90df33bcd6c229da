"""`hlopipe serve`: an OpenAI-compatible HTTP server over the pipelined generator (over
`hlopipe.serve`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from hlopipe.cli._common import (
    CPU_DEVICES,
    Command,
    add_stage_mesh_flags,
    join_job_or_ask_cpu_devices,
    load,
    param_rules,
    stage_mesh,
    x64_for,
)
from hlopipe.errors import RuntimeConfigError


def _add_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="the decode step: (params, state, tokens, "
                   "position) -> (next_tokens, state), state donated, or a folder of "
                   "hlopipe.torch.export_generation (default: the built-in tiny GPT)")  # fmt: skip
    p.add_argument("--prefill", action="append", metavar="FILE", help="the prefill: (params, "
                   "prompt) -> (next_tokens or logits, state); repeat it for the same model "
                   "exported at other prompt lengths (buckets: a prompt goes through the "
                   "shortest that holds it, right-padded)")  # fmt: skip
    p.add_argument(
        "--params",
        help=".npz of the parameters in order, or a checkpoint folder "
        "of hlopipe train --save (default: random)",
    )
    p.add_argument("--tokenizer", metavar="JSON", help="a Hugging Face tokenizers file: text in "
                   "and out (default: prompts are token ids); the chat template of "
                   "/v1/chat/completions from the tokenizer_config.json beside it")  # fmt: skip
    p.add_argument("--chat-template", metavar="FILE", help="a Jinja chat template for "
                   "/v1/chat/completions, overriding the tokenizer's (needs "
                   "--tokenizer)")  # fmt: skip
    p.add_argument("--eos-token-id", metavar="ID[,ID...]", action="append", help="an "
                   "end-of-sequence token id every sequence stops at (repeat the flag or join "
                   "ids with commas; default: the tokenizer folder's generation_config.json "
                   "eos_token_id, else its tokenizer_config.json eos_token)")  # fmt: skip
    p.add_argument("--stages", type=int, help="must agree with the stage markers")
    p.add_argument("--groups", type=int, default=4, help="groups in flight (default 4): the "
                   "slots requests are batched into, a slot per sequence when the decode step "
                   "takes a position per sequence")  # fmt: skip
    p.add_argument("--max-len", type=int, help="the cache length (default: from the program)")
    p.add_argument("--max-batch", type=int, metavar="N", help="serve a decode step at N "
                   "sequences a step: the step (and its prefills) vmapped over them, each its "
                   "own cache row and position, a row refilled as a sequence ends; exported at "
                   "batch b with a position per sequence, N a multiple of b; with one position "
                   "a batch (StaticCache counters), a sequence a call (default: the step's own "
                   "batch)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="where to listen (default loopback)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (default 8000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random parameters")
    p.add_argument("--served-model-name", metavar="NAME", action="append", help="a name "
                   "requests may give as model (repeat for more; the first is answered with; "
                   "default: the decode file's name); any other name is a 404")  # fmt: skip
    p.add_argument("--cpu-devices", type=int, help=f"CPU devices (default {CPU_DEVICES})")
    add_stage_mesh_flags(p)


def _cmd_serve(args: argparse.Namespace) -> int:
    """serve a decode step over HTTP with the OpenAI completions and chat completions API"""

    try:
        from hlopipe.serve import build_server
    except ImportError as e:
        raise RuntimeConfigError(
            f"hlopipe serve needs the serve extra ({e.name} is missing): "
            "pip install 'hlopipe[serve]'"
        ) from e

    eos = _eos_ids(args.eos_token_id)
    _log_requests()
    _few_malloc_arenas()
    mesh_shape, mesh_axes = stage_mesh(args)
    rules = param_rules(args, mesh_shape, mesh_axes)
    join_job_or_ask_cpu_devices(args.cpu_devices)
    from hlopipe.generate import is_export_folder, read_export_folder

    params, tokenizer, max_len = args.params, args.tokenizer, args.max_len
    if args.file and is_export_folder(args.file):  # hlopipe.torch.export_generation's folder
        if args.prefill is not None:
            raise RuntimeConfigError(
                f"--prefill given with the folder {args.file}, which holds its own prefill"
            )
        folder = read_export_folder(args.file)
        decode, prefills = load(folder.decode, None), [load(folder.prefill, None)]
        if folder.chunk is not None:  # export_generation(chunk=C): one more prefill file
            prefills.append(load(folder.chunk, None))
        params, tokenizer = params or folder.params, tokenizer or folder.tokenizer
        max_len = max_len or folder.max_len
        if eos is None and folder.eos_token_ids:
            eos = folder.eos_token_ids
        names = args.served_model_name or [os.path.basename(os.path.normpath(args.file))]
    else:
        decode = load(args.file, None) if args.file else None
        prefills = [load(f, None) for f in args.prefill or ()]
        names = args.served_model_name or []
    prefill = prefills[0] if len(prefills) == 1 else prefills or None
    with x64_for(decode, *prefills):  # PyTorch's int64 tokens: 64-bit mode for this run
        server = build_server(decode, prefill=prefill, params_path=params,
                     tokenizer_path=tokenizer, chat_template_path=args.chat_template,
                     eos_token_ids=eos,
                     stages=args.stages, groups=args.groups,
                     max_len=max_len, host=args.host, port=args.port,
                     seed=args.seed, stage_mesh_shape=mesh_shape,
                     stage_mesh_axes=mesh_axes, param_rules=rules,
                     served_model_names=names, max_batch=args.max_batch)  # fmt: skip
        if server.follower is not None:
            _ignore_stop_signals()
        else:
            _sigterm_as_ctrl_c()
        return server.run()


def _few_malloc_arenas() -> None:
    """A served step's temporaries (a prefill of every row, attention scores) are freed after
    each call, but glibc's malloc keeps freed blocks in the arena of the thread that freed
    them, and XLA's threads each get one: a server held about twice its parameters and caches
    in freed memory (a 125M-parameter Llama at --max-batch 8: 2.2 GiB resident for 0.6 GiB of
    live arrays, 1.2 GiB after ``malloc_trim``). Two arenas keep the reuse (a prefill as fast:
    2.2-2.4 s either way) and hold less (1.6 GiB on that server); a fixed mmap threshold held
    less still (1.5 GiB) but made that prefill 30% slower (its temporaries mapped afresh each
    call). Process-wide, so set by the command, not the library; a no-op where the C library
    is not glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:  # no C library to load: nothing to tune
        return
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is not None:
        mallopt(-8, 2)  # M_ARENA_MAX (malloc.h)


def _sigterm_as_ctrl_c() -> None:
    """uvicorn stops serving on SIGTERM as on Ctrl-C, then raises the signal again with the
    handler it found: SIGTERM's default would end the process before the requests in flight
    drain (and, in a job of several processes, before the others are told to stop)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def _ignore_stop_signals() -> None:
    """A follower leaves stopping to process 0, which drains its requests and then stops
    every process (a Ctrl-C reaching the whole job would otherwise end a follower while
    process 0 still drains)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)


def _log_requests() -> None:
    """A line per request on stderr (the library logs to ``hlopipe.serve``; the command
    decides where it goes): one handler however often the command runs in a process,
    writing to whatever ``sys.stderr`` is when a request ends."""
    import logging

    log = logging.getLogger("hlopipe.serve")
    if not any(isinstance(h, _Stderr) for h in log.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler on the current ``sys.stderr`` (a test's capture, or the real one)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def _eos_ids(given: list[str] | None) -> tuple[int, ...] | None:
    """The ids of the ``--eos-token-id`` flags (each one id or ids joined by commas)."""
    if given is None:
        return None
    ids = []
    for flag in given:
        for part in flag.split(","):
            if not part.strip().isdigit():
                raise RuntimeConfigError(
                    f"--eos-token-id {flag}: {part.strip()!r} is not a token id; give "
                    "non-negative integers, the flag repeated or the ids joined by commas"
                )
            ids.append(int(part))
    return tuple(dict.fromkeys(ids))


COMMAND = Command(
    "serve",
    _add_serve,
    _cmd_serve,
    num_stages="--stages",
    prefill="--prefill",
    groups="--groups",
    tokenizer_path="--tokenizer",
    chat_template_path="--chat-template",
    eos_token_ids="--eos-token-id",
    params_path="--params",
    max_len="--max-len",
    port="--port",
    jax_num_cpu_devices="--cpu-devices",
    stage_mesh_shape="--stage-mesh",
    stage_mesh_axes="--stage-mesh-axes",
    param_rules="--param-spec",
    served_model_names="--served-model-name",
    max_batch="--max-batch",
)
