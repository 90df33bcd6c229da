"""``hlopipe serve`` as a library function: load, split, compile, serve over HTTP."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from hlopipe.errors import Keyword, RuntimeConfigError


def serve(
    decode: Any = None,
    *,
    prefill: Any = None,
    params_path: str | None = None,
    tokenizer_path: str | None = None,
    stages: int | None = None,
    groups: int = 4,
    max_len: int | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    seed: int = 0,
    out: Any = print,
) -> int:
    """Serve a decode step (and its prefill) split into stages, until interrupted.

    Args:
      decode / prefill: loaded programs (``hlopipe.load``); ``decode=None`` serves the
        built-in tiny GPT (``hlopipe.models.gpt_decode``): a position per sequence, logits
        sampled (``serve._builtin.Form.SLOTS``).
      params_path: an .npz of the parameters in argument order (default: random).
      tokenizer_path: a Hugging Face ``tokenizers`` file (text in and out); without it,
        prompts are token ids.
      stages / groups / max_len: as ``hlopipe.Generator`` takes them; ``groups`` is the
        number of slots requests are batched into.
      host / port: where to listen (loopback by default; port 0 picks a free port). One
        line, ``serving <model> at http://host:port/v1``, is printed once every stage is
        compiled; until then ``/health`` answers 503.

    Returns:
      The exit status (0 after a clean stop: Ctrl-C drains the requests in flight).

    Raises:
      RuntimeConfigError: a bad count, parameters or tokenizer; a port that cannot be bound.
    """
    import uvicorn

    from hlopipe.generate import Generator, load_params, load_tokenizer
    from hlopipe.serve._app import Model, make_app
    from hlopipe.serve._builtin import builtin_model, builtin_vocab
    from hlopipe.serve._engine import Engine

    if not isinstance(groups, int) or groups < 1:
        raise RuntimeConfigError(Keyword("groups", groups), " must be at least 1")
    tokenizer = load_tokenizer(tokenizer_path) if tokenizer_path else None
    vocab = tokenizer.get_vocab_size() if tokenizer is not None else None
    if decode is None:
        if params_path is not None or prefill is not None:
            raise RuntimeConfigError(
                "the built-in model takes no ", Keyword("params_path"), " or ",
                Keyword("prefill"), "; give the decode step's file to serve your own",
            )  # fmt: skip
        decode, prefill, params, builtin_len = builtin_model(stages or 2, seed)
        max_len = max_len or builtin_len
        name, vocab = "hlopipe-tiny-gpt", vocab or builtin_vocab()
    else:
        params = load_params(params_path, decode.arg_roles(), seed)
        name = Path(str(getattr(decode, "source", "decode"))).name
    gen = Generator(decode, params, prefill=prefill, num_stages=stages, groups=groups,
                    max_len=max_len)  # fmt: skip
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    url = f"http://{host}:{bound}/v1"
    engine = Engine(
        gen, on_ready=lambda: out(f"serving {name} at {url}", flush=True), profile_stages=True
    )
    app = make_app(Model(name, engine, tokenizer, vocab))
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=30)
    server = uvicorn.Server(config)
    engine.start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn stops serving, then re-raises Ctrl-C: a clean stop
        pass
    finally:
        engine.stop(timeout=60)  # the requests in flight finish
        sock.close()
    out("stopped", flush=True)
    return 0


def _bind(host: str, port: int) -> socket.socket:
    if not isinstance(port, int) or not 0 <= port < 65536:
        raise RuntimeConfigError(Keyword("port", port), " must be in 0..65535 (0: a free port)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise RuntimeConfigError(Keyword("port", port), f": cannot listen on {host} ({e})") from e
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
