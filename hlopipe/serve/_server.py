"""``hlopipe serve`` as a library function: load, split, compile, serve over HTTP."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.serve._engine import Engine


@dataclass
class Server:
    """What :func:`build_server` made: the engine and, on process 0 (or alone), the HTTP
    application and its bound socket; on another process of a job, the follower that makes
    process 0's session calls. :meth:`run` serves until stopped."""

    engine: Engine
    app: Any = None
    sock: socket.socket | None = None
    follower: Any = None  # a ``serve._control.Follower``: this process follows process 0
    out: Any = print

    def run(self) -> int:
        """Serve until stopped: uvicorn until Ctrl-C (or a SIGTERM the command turned into
        one), then the requests in flight drained; a follower until process 0 stops.

        Returns:
          The exit status (0 after a clean stop)."""
        import uvicorn

        if self.follower is not None:
            self.engine.follow(self.follower)
            self.out("stopped", flush=True)
            return 0
        assert self.sock is not None  # built with one when not a follower
        config = uvicorn.Config(self.app, log_level="warning", timeout_graceful_shutdown=30)
        server = uvicorn.Server(config)
        self.engine.start()
        try:
            server.run(sockets=[self.sock])
        except KeyboardInterrupt:  # uvicorn stopped serving, then re-raised the signal
            pass
        finally:
            self.engine.stop(timeout=60)  # the requests in flight finish
            self.sock.close()
        self.out("stopped", flush=True)
        return 0


def serve(*args: Any, **kwargs: Any) -> int:
    """Serve a decode step (and its prefill) split into stages, until interrupted:
    ``build_server(...).run()`` (see :func:`build_server` for the arguments). Installs no
    signal handler: the ``hlopipe serve`` command does (SIGTERM drained as Ctrl-C is)."""
    return build_server(*args, **kwargs).run()


def build_server(
    decode: Any = None,
    *,
    prefill: Any = None,
    params_path: str | None = None,
    tokenizer_path: str | None = None,
    chat_template_path: str | None = None,
    eos_token_ids: tuple[int, ...] | None = None,
    stages: int | None = None,
    groups: int = 4,
    max_len: int | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    seed: int = 0,
    stage_mesh_shape: tuple[int, ...] | None = None,
    stage_mesh_axes: tuple[str, ...] | None = None,
    param_rules: Sequence[Any] = (),
    served_model_names: Sequence[str] = (),
    max_batch: int | None = None,
    out: Any = print,
) -> Server:
    """Load, split and compile a decode step (and its prefill) for serving, and bind the
    port: the :class:`Server` to run.

    Args:
      decode / prefill: loaded programs (``hlopipe.load``; ``prefill`` may be a list: the
        same model's prefill at several prompt lengths); ``decode=None`` serves the
        built-in tiny GPT (``hlopipe.models.gpt_decode``): a position per sequence, logits
        sampled, with its prefill (``serve._builtin.Form.SLOTS``).
      params_path: an .npz of the parameters in argument order (default: random).
      tokenizer_path: a Hugging Face ``tokenizers`` file (text in and out); without it,
        prompts are token ids. Its folder's ``tokenizer_config.json`` (``chat_template``,
        the special tokens) or ``chat_template.jinja`` gives the chat template of
        ``/v1/chat/completions`` (``serve._chat``); without one, chat requests are refused.
      chat_template_path: a Jinja chat template overriding the tokenizer's (needs
        ``tokenizer_path``).
      eos_token_ids: the end-of-sequence ids every sequence stops at (``finish_reason``
        ``"stop"``, the id not in the text) unless a request says ``ignore_eos``; default:
        the tokenizer folder's ``generation_config.json`` ``eos_token_id``, else its
        ``tokenizer_config.json`` ``eos_token`` (``serve._tokenizer_files``), else none. A
        second line after the ``serving`` line says which ids and where they came from.
      stages / groups / max_len: as ``hlopipe.Generator`` takes them; ``groups`` is the
        number of slots requests are batched into.
      host / port: where to listen (loopback by default; port 0 picks a free port). One
        line, ``serving <model> at http://host:port/v1``, is printed once every stage is
        compiled; until then ``/health`` answers 503.
      stage_mesh_shape / stage_mesh_axes: each stage on a mesh of that shape (default one
        device), its axes so named (``"data"`` splits a group's batch), as
        ``hlopipe.Generator`` takes them.
      served_model_names: the names requests may give as ``model`` (the first is the one
        answers carry when a request names none); another name is a 404. Default: the decode
        file's name (``hlopipe-tiny-gpt`` for the built-in).
      param_rules: ``hlopipe.generate.ParamRule``s laying out the parameters on the stage
        mesh (``param_specs_from_rules``: the first rule found in a parameter's path gives
        its spec); a parameter no rule matches, or every one without rules, keeps the
        program's own layout (else replicated).
      max_batch: serve a decode step (and its prefills) exported at batch 1 at ``max_batch``
        sequences a step (``hlopipe.generate.widen``: the step vmapped over them, each its
        own cache row and position; every step reads the parameters once for all of them),
        rows refilled as sequences end (a row per sequence, ``groups`` such steps in
        flight); the built-in model is then its batch-1 form (``serve._builtin.Form.TOKENS``).

    In a job of several processes (``hlopipe launch``, ``jax.distributed``), process 0 serves
    HTTP and every other process follows its engine's calls (``serve._control``), with no
    HTTP (``Server.follower``; the command makes a follower ignore Ctrl-C and SIGTERM: it
    stops when process 0 stops).

    Returns:
      The :class:`Server`, not yet serving.

    Raises:
      RuntimeConfigError: a bad count, parameters, tokenizer or chat template; a port that
        cannot be bound.
    """
    import jax

    from hlopipe.generate import (
        Generator,
        load_params,
        load_tokenizer,
        param_specs_from_rules,
    )
    from hlopipe.serve._app import make_app
    from hlopipe.serve._builtin import Form, builtin_model, builtin_vocab
    from hlopipe.serve._chat import load_chat_template
    from hlopipe.serve._request import Model
    from hlopipe.serve._tokenizer_files import end_token_ids

    if not isinstance(groups, int) or groups < 1:
        raise RuntimeConfigError(Keyword("groups", groups), " must be at least 1")
    if max_batch is not None and (type(max_batch) is not int or max_batch < 1):
        raise RuntimeConfigError(Keyword("max_batch", max_batch), " must be at least 1")
    tokenizer = load_tokenizer(tokenizer_path) if tokenizer_path else None
    chat_template = load_chat_template(tokenizer_path, chat_template_path)  # before compiling
    vocab = tokenizer.get_vocab_size() if tokenizer is not None else None
    if eos_token_ids is not None:
        eos, eos_from = tuple(eos_token_ids), "given"
    elif tokenizer_path is not None:
        eos, eos_from = end_token_ids(tokenizer_path, tokenizer)
    else:
        eos, eos_from = (), ""
    if decode is None:
        if params_path is not None or prefill is not None:
            raise RuntimeConfigError(
                "the built-in model takes no ", Keyword("params_path"), " or ",
                Keyword("prefill"), "; give the decode step's file to serve your own",
            )  # fmt: skip
        form = Form.SLOTS if max_batch is None else Form.TOKENS  # widened from batch 1
        decode, prefill, params, builtin_len = builtin_model(stages or 2, seed, form)
        max_len = max_len or builtin_len
        name, vocab = "hlopipe-tiny-gpt", vocab or builtin_vocab()
    else:
        params = load_params(params_path, decode.arg_roles(), seed)
        name = Path(str(getattr(decode, "source", "decode"))).name
    _check_ids(eos, vocab)
    ends = (f"stopping at end-of-sequence ids {list(eos)} ({eos_from})" if eos
            else "no end-of-sequence ids: sequences stop at max_tokens, a stop or the cache's "
            "end")  # fmt: skip
    specs = None
    if param_rules:  # --param-spec: the parameters' layout on the stage mesh
        specs = param_specs_from_rules(
            param_rules, decode, stage_mesh_shape, stage_mesh_axes, params=params
        )
    narrow: dict[int, tuple[Any, ...]] = {}  # the prefills at fewer rows (widened)
    steps: dict[int, Any] = {}  # the decode step at its first rows (widened)
    widened = None  # the form served at max_batch, as the summary says it
    if max_batch is not None:  # the batch-1 step vmapped over max_batch rows
        from hlopipe.generate import widen

        pres = (
            () if prefill is None else prefill if isinstance(prefill, list | tuple) else (prefill,)
        )
        wide = widen(decode, pres, max_batch)
        decode, prefill = wide.decode, list(wide.prefills) or None
        max_len, narrow, widened = max_len or wide.max_len, wide.narrow, wide.says
        steps = wide.steps
    gen = Generator(decode, params, prefill=prefill, num_stages=stages, groups=groups,
                    max_len=max_len, stage_mesh_shape=stage_mesh_shape,
                    stage_mesh_axes=stage_mesh_axes, param_specs=specs,
                    row_prefills=narrow, row_steps=steps)  # fmt: skip
    leader = None
    if jax.process_count() > 1:
        from hlopipe.serve._control import Follower, Leader

        if jax.process_index() != 0:
            return Server(Engine(gen, profile_stages=True), follower=Follower(), out=out)
        leader = Leader()
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    url = f"http://{host}:{bound}/v1"
    names = tuple(dict.fromkeys(served_model_names)) or (name,)

    def ready() -> None:
        summary = _summary(names[0], engine, tokenizer_path, chat_template, eos, widened)
        out(f"serving {names[0]} at {url}\n{ends}\n{summary}", flush=True)

    engine = Engine(
        gen,
        on_ready=ready,
        profile_stages=True,
        leader=leader,
    )
    app = make_app(
        Model(names[0], engine, tokenizer, vocab, chat_template, frozenset(eos), names[1:])
    )
    return Server(engine, app, sock, out=out)


def _summary(
    name: str,
    engine: Any,
    tokenizer_path: str | None,
    chat_template: Any,
    eos: tuple[int, ...],
    widened: str | None = None,
) -> str:
    """The startup summary's line: what is served and how (``widened``: the form served at
    ``--max-batch``, ``Widened.says``)."""
    gen = engine.gen
    prompt = "none"
    if engine.prefill_lens:
        other = "other lengths padded" if engine.pads else "those lengths only"
        prompt = f"{', '.join(map(str, engine.prefill_lens))} tokens ({other})"
        chunk = getattr(gen, "chunk", None)  # longer prompts in chunks (generate/_chunk.py)
        if chunk is not None:
            last = "the last padded" if chunk.pads else "whole chunks, the rest a token a step"
            prompt += f", chunk step of {chunk.length} tokens ({last})"
    sampled = "logits, sampled" if gen.logits_out is not None else "tokens"
    return (
        f"model {name}: {len(gen.plans)} stages, {gen.groups} groups of {gen.batch}"
        f"{f' ({widened}, --max-batch)' if widened is not None else ''}, cache "
        f"{gen.max_len} positions, prefill {prompt}, step returns {sampled}, tokenizer "
        f"{tokenizer_path or 'none (token ids)'}, chat template "
        f"{'yes' if chat_template is not None else 'none'}, end ids {list(eos)}"
    )


def _check_ids(ids: tuple[int, ...], vocab: int | None) -> None:
    bad = [x for x in ids if type(x) is not int or x < 0 or (vocab is not None and x >= vocab)]
    if bad:
        top = f"0..{vocab - 1}" if vocab is not None else "0 or more"
        raise RuntimeConfigError(
            Keyword("eos_token_ids", ",".join(map(str, ids))),
            f": {bad[0]} is not a token id of this model ({top})",
        )  # fmt: skip


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
