"""The OpenAI-compatible HTTP API over an :class:`~hlopipe.serve._engine.Engine` (Starlette).

``POST /v1/completions``, ``POST /v1/chat/completions`` (the prompt rendered from the messages
by the tokenizer's chat template, ``serve._chat``; then the same way through),
``GET /v1/models``, ``GET /health`` (503 until every stage is compiled), ``GET /metrics``
(Prometheus). A mistake of the client is a 400 with OpenAI's error body, ``{"error":
{"message", "type", "param", "code"}}``; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hlopipe.serve._chat import ChatTemplate, TemplateFailed, TemplateRefused
from hlopipe.serve._engine import Engine
from hlopipe.serve._output import FinishReason, Piece, SequenceOutput, detokenizer
from hlopipe.serve._scheduler import Request, SamplingParams, Sequence, TokenLogprobs

_log = logging.getLogger("hlopipe.serve")

FINGERPRINT_GREEDY = "hlopipe-greedy"  # a token-returning decode step: greedy whatever is asked
FINGERPRINT_SAMPLED = "hlopipe-sampled"  # a step returning logits: sampled as asked
_FIELDS = {  # the fields read, and the JSON types each may have
    "model": (str,),
    "prompt": (str, list),
    "messages": (list,),
    "max_tokens": (int,),
    "max_completion_tokens": (int,),
    "temperature": (int, float),
    "top_p": (int, float),
    "seed": (int,),
    "top_k": (int,),
    "stop": (str, list),
    "n": (int,),
    "stream": (bool,),
    "ignore_eos": (bool,),  # vLLM's: generate through the end-of-sequence ids
    "stop_token_ids": (list,),  # vLLM's: more ids to stop at
    "stream_options": (dict,),  # {"include_usage": bool}: a last chunk with the usage
    "user": (str,),  # logged with the request
    "logprobs": (bool, int),  # completions: how many top ones (an int); chat: whether (a bool)
    "top_logprobs": (int,),  # chat: how many top ones
    "presence_penalty": (int, float),  # OpenAI's, in [-2, 2]
    "frequency_penalty": (int, float),  # OpenAI's, in [-2, 2]
    "repetition_penalty": (int, float),  # vLLM's (Hugging Face's), above 0
    "response_format": (dict,),  # {"type": "text"}; the json modes are a 400 saying why
    "echo": (bool,),  # completions: the prompt's text before the answer's
    "best_of": (int,),  # completions: draws of which the n most likely are returned
    "tools": (list,),  # chat, with tool_choice "none": given to the chat template
    "tool_choice": (str, dict),  # chat: "none" only (no tool-call parser)
    "parallel_tool_calls": (bool,),  # chat: no tool call is ever made, so either value
}
# OpenAI's (and vLLM's) fields this server does not implement: a 400 naming the field unless
# the value is the one that changes nothing (never silently ignored)
_NOT_IMPLEMENTED: dict[str, tuple[Any, ...]] = {
    "logit_bias": (None, {}),
    "echo": (None, False),
    "best_of": (None, 1),
    "suffix": (None, ""),
    "min_tokens": (None, 0),
}
_ROLES = ("system", "developer", "user", "assistant")  # developer: OpenAI's newer system
_CHAT_ONLY = frozenset({"messages", "max_completion_tokens", "top_logprobs", "tools",
                        "tool_choice", "parallel_tool_calls"})  # fmt: skip
_COMPLETIONS_ONLY = frozenset({"prompt", "echo", "best_of"})


class Endpoint(StrEnum):
    """The two ways a completion is asked for and answered: the fields each takes (beyond the
    sampling options both share) and ignores, and the objects it answers with."""

    COMPLETIONS = "text_completion"
    CHAT = "chat.completion"

    @property
    def fields(self) -> frozenset[str]:
        if self is Endpoint.COMPLETIONS:
            return frozenset(_FIELDS) - _CHAT_ONLY
        return frozenset(_FIELDS) - _COMPLETIONS_ONLY

    @property
    def path(self) -> str:
        return "/v1/completions" if self is Endpoint.COMPLETIONS else "/v1/chat/completions"

    @property
    def chunk_object(self) -> str:
        return "text_completion" if self is Endpoint.COMPLETIONS else "chat.completion.chunk"

    @property
    def id_prefix(self) -> str:
        return "cmpl" if self is Endpoint.COMPLETIONS else "chatcmpl"


class BadRequest(Exception):
    """What the client got wrong: a 400 naming the field (``status`` 404: a model not
    served)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param = param
        self.status = status


@dataclass(frozen=True)
class Model:
    """What is served: its id, the engine, and the text side (a ``tokenizers.Tokenizer`` or
    ``None``: prompts are token ids and text is the ids joined by spaces; the tokenizer's chat
    template, without which chat completions are refused; the end-of-sequence ids every
    sequence stops at unless its request says ``ignore_eos``). ``id`` and ``aliases`` are the
    names it is served under (``--served-model-name``): a request naming another model is a
    404; one naming none gets ``id``."""

    id: str
    engine: Engine
    tokenizer: Any = None
    vocab: int | None = None
    chat_template: ChatTemplate | None = None
    eos_ids: frozenset[int] = frozenset()
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


def _error(
    message: str,
    status: int = 400,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """OpenAI's error body, ``{"error": {"message", "type", "param", "code"}}``; a 404 of a
    model not served has the code ``model_not_found`` (``param`` ``"model"``)."""
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    if code is None and status == 404 and param == "model":
        code = "model_not_found"
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _http_error(http: HttpRequest, exc: Exception) -> Response:
    """A route or method not served (Starlette's 404 and 405) in OpenAI's error body, as
    OpenAI's API answers an unknown URL."""
    assert isinstance(exc, HTTPException)
    where = f"{http.method} {http.url.path}"
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        message = f"no route {where}: this server serves {', '.join(_ROUTES)}"
    elif exc.status_code == 405:
        message = f"{where}: the method is not allowed here (allowed: {headers.get('Allow')})"
    else:
        message = f"{where}: {exc.detail}"
    return _error(message, exc.status_code, headers=headers)


class _RequestId:
    """ASGI middleware: a request's ``x-request-id`` header, when sent, is echoed on its
    answer (as OpenAI's and vLLM's servers echo it), whatever the route and status."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = [v for k, v in scope["headers"] if k == b"x-request-id"][:1]
        if not sent:
            await self.app(scope, receive, send)
            return

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()),
                                                   (b"x-request-id", sent[0])]}  # fmt: skip
            await send(message)

        await self.app(scope, receive, send_with_id)


class _Metrics:
    def __init__(self, model: Model) -> None:
        self.registry = reg = CollectorRegistry()
        self.requests = Counter("hlopipe_requests", "completion requests", ["status"], registry=reg)
        self.prompt_tokens = Counter("hlopipe_prompt_tokens", "prompt tokens", registry=reg)
        self.generated = Counter("hlopipe_generated_tokens", "generated tokens", registry=reg)
        buckets = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
        self.ttft = Histogram("hlopipe_time_to_first_token_seconds", "time to first token",
                              buckets=buckets, registry=reg)  # fmt: skip
        self.itl = Histogram("hlopipe_inter_token_latency_seconds", "time between tokens",
                             buckets=buckets, registry=reg)  # fmt: skip
        depth = Gauge("hlopipe_queue_depth", "sequences waiting for a slot", registry=reg)
        depth.set_function(model.engine.queue_depth)
        running = Gauge("hlopipe_running_sequences", "sequences holding a slot", registry=reg)
        running.set_function(model.engine.running)
        steps = Gauge("hlopipe_engine_steps", "decode turns run since ready (every group with "
                      "a sequence in flight stepped once)", registry=reg)  # fmt: skip
        steps.set_function(lambda: model.engine.steps)
        sent = Gauge("hlopipe_engine_broadcasts", "plans sent to the other processes of a job "
                     "since ready (one a turn; 0 in one process)", registry=reg)  # fmt: skip
        sent.set_function(lambda: model.engine.broadcasts)
        prefilled = Gauge("hlopipe_prefilled_sequences", "sequences whose prompt went through "
                          "the prefill since ready", registry=reg)  # fmt: skip
        prefilled.set_function(lambda: model.engine.prefilled)
        busy = Gauge("hlopipe_engine_busy_seconds", "time spent issuing and reading decode steps",
                     registry=reg)  # fmt: skip
        busy.set_function(lambda: model.engine.busy_s)
        stage_busy = Gauge("hlopipe_stage_busy_fraction", "each stage's busy fraction since "
                           "ready: its step timed alone x the group steps run / wall time",
                           ["stage"], registry=reg)  # fmt: skip
        group_steps = Gauge("hlopipe_group_steps", "group decode steps run since ready (each "
                            "busy group's step of each turn)", registry=reg)  # fmt: skip
        group_steps.set_function(lambda: model.engine.group_steps)
        step_s = Gauge("hlopipe_stage_step_seconds", "each stage's decode step timed alone once "
                       "warm", ["stage"], registry=reg)  # fmt: skip
        for s in range(len(model.engine.gen.plans)):
            stage_busy.labels(str(s)).set_function(functools.partial(model.engine.stage_busy, s))
            step_s.labels(str(s)).set_function(functools.partial(model.engine.stage_step, s))


def make_app(model: Model) -> Starlette:
    """The Starlette application serving ``model``."""
    metrics = _Metrics(model)
    greedy_only = not model.engine.samples  # a step returning tokens (see docs/serving.md)
    outboxes: dict[asyncio.AbstractEventLoop, _Outbox] = {}  # the one loop uvicorn runs

    async def health(_: HttpRequest) -> Response:
        if model.engine.error is not None:
            return _error(f"the engine stopped: {model.engine.error!r}", 500)
        if not model.engine.ready.is_set():
            return _error("compiling the stages", 503)
        return JSONResponse({"status": "ok"})

    def card(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "hlopipe",
                "max_model_len": model.engine.max_len}  # fmt: skip

    async def models(_: HttpRequest) -> Response:
        return JSONResponse({"object": "list", "data": [card(name) for name in model.names]})

    async def one_model(http: HttpRequest) -> Response:
        name = http.path_params["name"]
        if name not in model.names:
            served = ", ".join(repr(n) for n in model.names)
            return _error(f"the model {name!r} does not exist: this server serves {served}",
                          404, "model")  # fmt: skip
        return JSONResponse(card(name))

    async def prometheus(_: HttpRequest) -> Response:
        return Response(generate_latest(metrics.registry), media_type="text/plain; version=0.0.4")

    async def complete(http: HttpRequest, endpoint: Endpoint) -> Response:
        """Both endpoints' one way through: parse, submit, answer (streamed or whole)."""
        try:
            body = await _json(http)
            prompts, opts = _parse(body, model, endpoint)
        except BadRequest as e:
            metrics.requests.labels(str(e.status)).inc()
            _log.info("%s %d %s", endpoint.path, e.status, e)
            return _error(str(e), e.status, e.param)
        if not model.engine.ready.is_set():
            return _error("the server is compiling its stages; retry when /health answers 200", 503)
        metrics.requests.labels("200").inc()
        metrics.prompt_tokens.inc(sum(len(p) for p in prompts) * opts["best_of"])
        headers = {}
        if greedy_only and opts["temperature"] != 0:
            headers["x-hlopipe-warning"] = "greedy: the decode step returns tokens, not logits"
        loop = asyncio.get_running_loop()
        outbox = outboxes.get(loop) or outboxes.setdefault(loop, _Outbox(loop))
        call = _Call(model, metrics, prompts, opts, greedy_only, endpoint, outbox)
        call.submit()
        if opts["stream"]:
            return StreamingResponse(call.events(), media_type="text/event-stream", headers=headers)
        try:
            gone = await _until_finished_or_gone(call.finished(), http)
        finally:
            call.cancel()  # a client gone mid-request frees its slot; a no-op once finished
        if gone:  # nobody to answer
            call.log(499)
            return Response(status_code=499)
        if model.engine.error is not None:
            call.log(500)
            return _error(f"the engine stopped: {model.engine.error!r}", 500)
        call.log(200)
        return JSONResponse(call.body(), headers=headers)

    async def completions(http: HttpRequest) -> Response:
        return await complete(http, Endpoint.COMPLETIONS)

    async def chat(http: HttpRequest) -> Response:
        return await complete(http, Endpoint.CHAT)

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/v1/models/{name:path}", one_model),
            Route("/metrics", prometheus),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ],
        middleware=[Middleware(_RequestId)],
        exception_handlers={HTTPException: _http_error},
    )


_ROUTES = ("GET /health", "GET /metrics", "GET /v1/models", "GET /v1/models/{model}",
           "POST /v1/completions", "POST /v1/chat/completions")  # fmt: skip


async def _until_finished_or_gone(finished: Any, http: HttpRequest) -> bool:
    """Await ``finished`` (a request's answer) while watching its connection; returns whether
    the client went away first (then ``finished`` is cancelled). The body is read, so the
    next ASGI message is the disconnect (uvicorn sends it when the connection closes)."""
    work = asyncio.ensure_future(finished)
    watch = asyncio.ensure_future(_disconnected(http))
    try:
        await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, watch):
            if not task.done():
                task.cancel()
    if work.done() and not work.cancelled():
        work.result()  # a bug in the answer surfaces here
        return False
    return True


async def _disconnected(http: HttpRequest) -> None:
    while True:
        message = await http.receive()
        if message["type"] == "http.disconnect":
            return


async def _json(http: HttpRequest) -> dict[str, Any]:
    raw = await http.body()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def _parse(
    body: dict[str, Any], model: Model, endpoint: Endpoint
) -> tuple[list[list[int]], dict[str, Any]]:
    """The prompts (token ids) and options of a request to ``endpoint``, checked."""
    if endpoint is Endpoint.CHAT:
        _template(model)  # before all else: without one, every chat request is refused
    for key, value in body.items():
        if key in endpoint.fields:
            kinds = _FIELDS[key]
            if value is not None and (
                not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
            ):
                want = " or ".join(k.__name__ for k in kinds)
                raise BadRequest(f"{key} must be {want}, got {type(value).__name__}", key)
        elif key in _NOT_IMPLEMENTED:
            if not any(value == v and type(value) is type(v) for v in _NOT_IMPLEMENTED[key]):
                raise BadRequest(_not_implemented(key, model), key)
        else:
            raise BadRequest(f"unknown field {key!r}", key)
    asked = body.get("model")
    if asked is not None and asked not in model.names:
        served = ", ".join(repr(n) for n in model.names)
        raise BadRequest(f"the model {asked!r} does not exist: this server serves {served}",
                         "model", status=404)  # fmt: skip
    length_field = "max_tokens"
    if endpoint is Endpoint.CHAT and body.get("max_completion_tokens") is not None:
        length_field = "max_completion_tokens"  # OpenAI's newer name wins, as vLLM's does
    default_length = 16 if endpoint is Endpoint.COMPLETIONS else None  # chat: to the cache's end
    opts = {
        "max_tokens": _get(body, length_field, default_length),
        "temperature": _get(body, "temperature", 1.0),
        "top_p": _get(body, "top_p", 1.0),
        "n": _get(body, "n", 1),
        "stream": _get(body, "stream", False),
        "stop": _get(body, "stop", []),
        "seed": body.get("seed"),
        "top_k": _get(body, "top_k", 0),
        "stop_ids": _stop_ids(body, model),
        "model": asked if asked is not None else model.id,
        "user": body.get("user"),
        "include_usage": _include_usage(body),
        "logprobs": _logprobs(body, model, endpoint),
        "penalties": _penalties(body, model),
        "echo": _get(body, "echo", False),
    }
    _response_format(body)
    if isinstance(opts["stop"], str):
        opts["stop"] = [opts["stop"]]
    if not all(isinstance(s, str) and s for s in opts["stop"]) or len(opts["stop"]) > 4:
        raise BadRequest("stop must be a string or a list of at most 4 non-empty strings", "stop")
    if opts["max_tokens"] is not None and opts["max_tokens"] < 1:
        raise BadRequest(f"{length_field} must be at least 1", length_field)
    if not 1 <= opts["n"] <= 16:
        raise BadRequest("n must be between 1 and 16", "n")
    if not 0 <= opts["temperature"] <= 2:
        raise BadRequest("temperature must be between 0 and 2", "temperature")
    if not 0 < opts["top_p"] <= 1:
        raise BadRequest("top_p must be in (0, 1]", "top_p")
    if opts["top_k"] < -1:
        raise BadRequest("top_k must be -1 or 0 (no cut) or a positive count", "top_k")
    opts["top_k"] = max(opts["top_k"], 0)
    opts["best_of"] = _best_of(body, opts, model)
    if opts["echo"] and opts["logprobs"] is not None:
        raise BadRequest("echo with logprobs would need the prompt's log-probabilities, "
                         "which this server does not compute; ask for one or the other",
                         "echo")  # fmt: skip
    if endpoint is Endpoint.COMPLETIONS:
        if "prompt" not in body:
            raise BadRequest("prompt is required", "prompt")
        asked_prompts = _prompt_list(body["prompt"])
        prompts = [_ids(p, model) for p in asked_prompts]
        if opts["echo"]:  # each prompt's text as the client sent it, or its ids' decode
            opts["echo"] = [p if isinstance(p, str) else _prompt_text(ids, model)
                            for p, ids in zip(asked_prompts, prompts, strict=True)]  # fmt: skip
        where = "prompt"
    else:
        tools = _tools(body)
        prompts = [_chat_ids(body.get("messages"), model, _template(model), tools)]
        where = "messages"
    limit = model.engine.max_len
    if opts["max_tokens"] is None:  # as many as the cache holds after the longest prompt
        opts["max_tokens"] = max(limit - max(len(p) for p in prompts) + 1, 1)
    for p in prompts:
        if len(p) + opts["max_tokens"] - 1 > limit:
            raise BadRequest(
                f"a prompt of {len(p)} tokens and {length_field} {opts['max_tokens']} need "
                f"{len(p) + opts['max_tokens'] - 1} positions; the cache holds {limit}",
                length_field if len(p) <= limit else where,
            )
    return prompts, opts


_WHY_NOT = {  # why each field in _NOT_IMPLEMENTED is not
    "logit_bias": "the sampler on the device keeps no bias a sequence",
    "min_tokens": "the end-of-sequence ids are not masked before a count",
    "suffix": "the model is not asked to fill in between a prefix and a suffix",
    "echo": "chat does not give back its last message (vLLM's echo)",
    "best_of": "chat does not draw more answers than it returns",
}


def _not_implemented(key: str, model: Model) -> str:
    return f"{key} is not implemented by this server ({_WHY_NOT[key]}); leave it out"


def _best_of(body: dict[str, Any], opts: dict[str, Any], model: Model) -> int:
    """How many completions are drawn a prompt (``best_of``, at least ``n``; by default ``n``):
    above ``n``, the ``n`` with the highest log-probability per token are returned (OpenAI's
    definition), so the step must return logits, and the answer cannot be streamed."""
    n, best_of = opts["n"], body.get("best_of")
    if best_of is None or best_of == n:
        return n
    if not n <= best_of <= 16:
        raise BadRequest(f"best_of must be between n ({n}) and 16", "best_of")
    if opts["stream"]:
        raise BadRequest("best_of above n cannot be streamed: which draws are the best is known "
                         "only once all have ended", "best_of")  # fmt: skip
    if not model.engine.samples:
        raise BadRequest("best_of above n ranks draws by their log-probabilities; this server's "
                         "step returns tokens (its own argmax), so there are none (and every "
                         "draw is the same)", "best_of")  # fmt: skip
    return best_of


def _prompt_text(ids: list[int], model: Model) -> str:
    """What ``echo`` gives back of a prompt sent as token ids: their decode with special tokens
    kept (the prompt as the model read it), or the ids, each after a space, without a
    tokenizer (as answers' text is then)."""
    if model.tokenizer is None:
        return "".join(f" {x}" for x in ids)
    return str(model.tokenizer.decode(ids, skip_special_tokens=False))


def _response_format(body: dict[str, Any]) -> None:
    """``response_format``: ``{"type": "text"}`` (what is made anyway) is accepted; the json
    modes need constrained decoding, which this server does not do."""
    fmt = body.get("response_format")
    if fmt is None or fmt == {"type": "text"}:
        return
    kind = fmt.get("type")
    if kind in ("json_object", "json_schema"):
        raise BadRequest(f"response_format {kind!r} needs constrained (guided) decoding, which "
                         "this server does not do; leave response_format out or send "
                         '{"type": "text"}', "response_format")  # fmt: skip
    raise BadRequest('response_format must be {"type": "text"} (the json modes are not '
                     f"implemented); got {json.dumps(fmt)[:100]}", "response_format")  # fmt: skip


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A chat request's ``tools``, checked, for the chat template (``None``: none). Without a
    tool-call parser the only choice served is ``tool_choice: "none"``, as vLLM's server
    without ``--enable-auto-tool-choice``: the tools are shown to the model through the
    template (vLLM's default) and the answer is text. OpenAI's default choice with tools is
    ``"auto"``, so tools without ``tool_choice: "none"`` are a 400."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    for k, tool in enumerate(tools or ()):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (
            isinstance(function, dict)
            and tool.get("type") == "function"
            and set(tool) <= {"type", "function"}
            and isinstance(function.get("name"), str)
            and function["name"]
        ):
            raise BadRequest(f'tools[{k}] must be {{"type": "function", "function": {{"name", '
                             f'...}}}}; got {json.dumps(tool)[:100]}', "tools")  # fmt: skip
    if choice is None and tools:
        raise BadRequest('tools ask for tool calls (OpenAI\'s default tool_choice is "auto"), '
                         "and this server has no tool-call parser: send tool_choice: \"none\" "
                         "for the tools to be shown to the model through the chat template "
                         "and the answer given as text, or leave tools out", "tools")  # fmt: skip
    if choice is not None and choice != "none":
        shown = choice if isinstance(choice, str) else json.dumps(choice)[:100]
        raise BadRequest(f"tool_choice {shown!r}: this server has no tool-call parser, so it "
                         'makes no tool calls; tool_choice must be "none"',
                         "tool_choice")  # fmt: skip
    return tools or None


def _penalties(body: dict[str, Any], model: Model) -> tuple[float, float, float]:
    """``presence_penalty``, ``frequency_penalty`` (OpenAI's, -2 to 2; 0: none) and
    ``repetition_penalty`` (vLLM's, above 0; 1: none), applied to the logits before sampling
    (``hlopipe.generate.penalize``): a step returning tokens has none to apply."""
    presence = float(_get(body, "presence_penalty", 0.0))
    frequency = float(_get(body, "frequency_penalty", 0.0))
    repetition = float(_get(body, "repetition_penalty", 1.0))
    for key, value in (("presence_penalty", presence), ("frequency_penalty", frequency)):
        if not -2 <= value <= 2:
            raise BadRequest(f"{key} must be between -2 and 2", key)
    if not repetition > 0:
        raise BadRequest("repetition_penalty must be above 0 (1: none)", "repetition_penalty")
    for key, value, none in (("presence_penalty", presence, 0.0),
                             ("frequency_penalty", frequency, 0.0),
                             ("repetition_penalty", repetition, 1.0)):  # fmt: skip
        if value != none and not model.engine.samples:
            raise BadRequest(f"{key} needs a decode step that returns logits; this server's "
                             "step returns tokens (its own argmax), so there are no logits to "
                             "penalize", key)  # fmt: skip
    return presence, frequency, repetition


def _logprobs(body: dict[str, Any], model: Model, endpoint: Endpoint) -> int | None:
    """How many of the largest log-probabilities each token comes with (``None``: none asked
    for): completions' ``logprobs`` (an int, OpenAI's up to 5, here up to 20 as vLLM's), or
    chat's ``logprobs: true`` with ``top_logprobs`` (0 to 20)."""
    from hlopipe.generate import TOP_LOGPROBS

    asked, top = body.get("logprobs"), body.get("top_logprobs")
    if endpoint is Endpoint.COMPLETIONS:
        if asked is not None and (type(asked) is not int or not 0 <= asked <= TOP_LOGPROBS):
            raise BadRequest(f"logprobs must be an integer in 0..{TOP_LOGPROBS}", "logprobs")
        key, n = "logprobs", asked
    else:
        if asked is not None and type(asked) is not bool:
            raise BadRequest("logprobs must be true or false", "logprobs")
        if top is not None and not 0 <= top <= TOP_LOGPROBS:
            raise BadRequest(f"top_logprobs must be an integer in 0..{TOP_LOGPROBS}",
                             "top_logprobs")  # fmt: skip
        if top is not None and not asked:
            raise BadRequest("top_logprobs needs logprobs: true", "top_logprobs")
        key, n = ("top_logprobs" if top else "logprobs"), (top or 0) if asked else None
    if n is None:
        return None
    if not model.engine.samples:
        raise BadRequest(f"{key} needs a decode step that returns logits; this server's step "
                         "returns tokens (its own argmax), so there are no probabilities to "
                         "give", key)  # fmt: skip
    return n


def _include_usage(body: dict[str, Any]) -> bool:
    """``stream_options``: ``{"include_usage": bool}``, with ``stream: true`` only."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not body.get("stream"):
        raise BadRequest("stream_options is only allowed with stream: true", "stream_options")
    extra = sorted(set(options) - {"include_usage"})
    if extra or not isinstance(options.get("include_usage", False), bool):
        raise BadRequest("stream_options must be {\"include_usage\": true or false}",
                         "stream_options")  # fmt: skip
    return bool(options.get("include_usage", False))


_NO_TOKENIZER = (
    "this server has no tokenizer, so no chat template: chat completions need one; start it "
    "with --tokenizer tokenizer.json and --chat-template FILE (a Jinja chat template), or use "
    "/v1/completions"
)
_NO_TEMPLATE = (
    "the served tokenizer has no chat template (no chat_template in the tokenizer_config.json "
    "beside it, no chat_template.jinja): start the server with --chat-template FILE (a Jinja "
    "chat template), or use /v1/completions"
)


def _template(model: Model) -> ChatTemplate:
    if model.chat_template is None:
        raise BadRequest(_NO_TEMPLATE if model.tokenizer is not None else _NO_TOKENIZER)
    return model.chat_template


def _chat_ids(
    messages: Any, model: Model, template: ChatTemplate, tools: list[dict[str, Any]] | None = None
) -> list[int]:
    """The prompt of a chat request: its messages checked, rendered by the chat template (with
    the generation prompt and ``tools``) and tokenized without adding special tokens (the
    template has them). A ``developer`` message (OpenAI's name for a system message to newer
    models) is rendered as ``system``, the role open models' templates know."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages is required: a non-empty list of messages", "messages")
    plain = []
    for k, message in enumerate(messages):
        at = f"messages[{k}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{at} must be an object with role and content", "messages")
        extra = sorted(set(message) - {"role", "content", "name"})
        if extra:
            raise BadRequest(f"{at} has {extra[0]!r}: a message has role, content and name "
                             "(tool calls are not supported)", "messages")  # fmt: skip
        role = message.get("role")
        if role not in _ROLES:
            raise BadRequest(f"{at}.role is {role!r}: it must be one of {', '.join(_ROLES)}",
                             "messages")  # fmt: skip
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise BadRequest(f"{at}.name must be a string", "messages")
        content = _content_text(message.get("content"), at)
        role = "system" if role == "developer" else role
        plain.append({"role": role, "content": content, **({"name": name} if name else {})})
    try:
        text = template.render(plain, tools=tools)
    except TemplateRefused as e:
        raise BadRequest(f"the chat template refused the messages: {e}", "messages") from None
    except TemplateFailed as e:
        raise BadRequest(f"the chat template ({template.origin}) failed to render: {e}",
                         "messages") from None  # fmt: skip
    ids = list(model.tokenizer.encode(text, add_special_tokens=False).ids)
    return _checked(ids, model, "messages")


def _content_text(content: Any, at: str) -> str:
    """A message's content: a string, or a list of text parts (joined by newlines, as vLLM
    joins them for a template that reads content as a string)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for j, part in enumerate(content):
            text = part.get("text") if isinstance(part, dict) else None
            if not (isinstance(text, str) and part == {"type": "text", "text": text}):
                raise BadRequest(f"{at}.content[{j}] must be a text part, "
                                 f'{{"type": "text", "text": "..."}}; got '
                                 f"{json.dumps(part)[:100]}", "messages")  # fmt: skip
            texts.append(part["text"])
        return "\n".join(texts)
    raise BadRequest(f"{at}.content must be a string or a list of text parts, not "
                     f"{type(content).__name__}", "messages")  # fmt: skip


def _stop_ids(body: dict[str, Any], model: Model) -> frozenset[int]:
    """The token ids a request's sequences stop at: the served end-of-sequence ids (unless
    ``ignore_eos``) and the request's ``stop_token_ids``."""
    more = _get(body, "stop_token_ids", [])
    top = f"{model.vocab - 1}" if model.vocab is not None else "the vocabulary's last id"
    if not all(type(x) is int and 0 <= x < (model.vocab or x + 1) for x in more):
        raise BadRequest(f"stop_token_ids must be a list of token ids, integers in 0..{top}",
                         "stop_token_ids")  # fmt: skip
    ends = frozenset() if _get(body, "ignore_eos", False) else model.eos_ids
    return ends | frozenset(more)


def _get(body: dict[str, Any], key: str, default: Any) -> Any:
    value = body.get(key)
    return default if value is None else value


def _prompt_list(prompt: Any) -> list[Any]:
    """A prompt is a string, a list of ids, or a list of either."""
    if isinstance(prompt, str) or (
        isinstance(prompt, list) and prompt and all(type(x) is int for x in prompt)
    ):
        return [prompt]
    if isinstance(prompt, list) and prompt:
        if len(prompt) > 64:
            raise BadRequest("at most 64 prompts a request", "prompt")
        return prompt
    raise BadRequest("prompt must be a string, a list of token ids, or a list of either", "prompt")


def _ids(prompt: Any, model: Model) -> list[int]:
    if isinstance(prompt, str):
        if model.tokenizer is not None:
            ids = list(model.tokenizer.encode(prompt).ids)
        else:
            try:
                ids = [int(x) for x in prompt.split()]
            except ValueError:
                raise BadRequest(
                    "this server has no tokenizer (--tokenizer): a prompt is token ids, a list "
                    "or a string of ids separated by spaces",
                    "prompt",
                ) from None
    elif isinstance(prompt, list) and all(type(x) is int for x in prompt):
        ids = prompt
    else:
        raise BadRequest("each prompt must be a string or a list of token ids", "prompt")
    return _checked(ids, model)


def _checked(ids: list[int], model: Model, where: str = "prompt") -> list[int]:
    if not ids:
        raise BadRequest("a prompt is empty", where)
    if model.vocab is not None and not all(0 <= x < model.vocab for x in ids):
        raise BadRequest(f"token ids must be in [0, {model.vocab})", where)
    return ids


class _Outbox:
    """What the engine thread tells the requests of one event loop, handed over in batches:
    an event is queued here and the loop woken only when no delivery is already due, so a
    turn's tokens for every request in flight cost the engine one wake-up of the loop, not
    one per token (each ``call_soon_threadsafe`` signals the loop, which then competes with
    the engine thread for the GIL mid-turn). No lock: a ``deque``'s append and popleft are
    atomic, and a delivery clears ``_due`` before it drains, so an event queued meanwhile is
    either drained by it or schedules the next."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._events: collections.deque[tuple[asyncio.Queue[Any], tuple[Any, ...]]] = (
            collections.deque()
        )
        self._due = False  # a delivery is scheduled and has not started yet

    def put(self, queue: asyncio.Queue[Any], event: tuple[Any, ...]) -> None:
        """Queue ``event`` for ``queue`` (any thread)."""
        self._events.append((queue, event))
        if not self._due:
            self._due = True
            self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:  # on the loop
        self._due = False
        events = self._events
        while events:
            queue, event = events.popleft()
            queue.put_nowait(event)


class _Call:
    """One completion request in flight: the engine's tokens handed to the event loop, turned
    into text there by each sequence's output processor (``serve._output``), and answered as
    ``endpoint`` answers."""

    def __init__(
        self,
        model: Model,
        metrics: _Metrics,
        prompts: list[list[int]],
        opts: dict,
        greedy_only: bool,
        endpoint: Endpoint,
        outbox: _Outbox,
    ) -> None:
        self.model, self.metrics, self.opts, self.endpoint = model, metrics, opts, endpoint
        self.fingerprint = FINGERPRINT_GREEDY if greedy_only else FINGERPRINT_SAMPLED
        self.id = f"{endpoint.id_prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.events_q: asyncio.Queue[tuple[int, int | None, FinishReason | None]] = asyncio.Queue()
        seed = opts["seed"] if opts["seed"] is not None else secrets.randbits(32)
        presence, frequency, repetition = opts["penalties"]
        self.draws = opts["best_of"]  # sequences a prompt: n, or best_of to rank
        logprobs = opts["logprobs"]
        if logprobs is None and self.draws > opts["n"]:
            logprobs = 0  # ranking reads each token's log-probability
        seqs = [
            Sequence(p, opts["max_tokens"], opts["stop_ids"],
                     SamplingParams(_seed_of(seed, k), opts["temperature"], opts["top_p"],
                                    opts["top_k"], presence, frequency, repetition,
                                    logprobs is not None),
                     logprobs=logprobs)
            for p in prompts for k in range(self.draws)
        ]  # fmt: skip
        self.outputs = [
            SequenceOutput(detokenizer(model.tokenizer), tuple(opts["stop"]), opts["stop_ids"])
            for _ in seqs
        ]
        self.request = Request(seqs, lambda *event: outbox.put(self.events_q, event))
        self.given = [0] * len(seqs)  # tokens given out of each sequence (their logprobs)
        self.text_offset = [0] * len(seqs)  # completions' logprobs: where the next token is
        self.t0 = time.perf_counter()
        self.first: float | None = None
        self.last: float | None = None

    def submit(self) -> None:
        self.model.engine.submit(self.request)

    def cancel(self) -> None:
        self.request.cancelled = True

    def _timed(self) -> None:
        now = time.perf_counter()
        if self.last is None:
            self.first = now
            self.metrics.ttft.observe(now - self.t0)
        else:
            self.metrics.itl.observe(now - self.last)
        self.last = now
        self.metrics.generated.inc()

    async def _pieces(self) -> AsyncIterator[list[tuple[int, int, Piece]]]:
        """Each token's piece of text (sequence index, token, piece), a list for every
        hand-off from the engine (the events waiting when the request's turn comes: one a
        turn, more when the loop fell behind), until every sequence has ended here or the
        engine is done with the request (finished, or stopped on an error). A sequence its
        output ended (a stop string) is cancelled in the engine."""
        events_q = self.events_q
        while not all(out.finish is not None for out in self.outputs):
            events = [await events_q.get()]
            while not events_q.empty():
                events.append(events_q.get_nowait())
            got, done = [], False
            for i, tok, finish in events:
                if i < 0 or tok is None:
                    done = True
                    break
                piece = self.outputs[i].push(tok, finish)
                if piece is None:  # made after its stop string: dropped
                    continue
                self._timed()
                if piece.finish is not None and finish is None:  # ended here, not in the engine
                    self.request.seqs[i].cancelled = True
                self.given[i] += 1
                got.append((i, tok, piece))
            if got:
                yield got
            if done:
                return

    async def finished(self) -> None:
        async for _ in self._pieces():
            pass

    def log(self, status: int) -> None:
        """One line for the request: what was asked and what came of it."""
        finishes = ",".join(str(out.finish) for out in self.outputs)
        ttft = f"{(self.first - self.t0) * 1e3:.1f}" if self.first is not None else "-"
        total = (time.perf_counter() - self.t0) * 1e3
        _log.info(
            "%s %s %d model=%s prompt_tokens=%d completion_tokens=%d finish=%s ttft_ms=%s "
            "total_ms=%.1f%s",
            self.id, self.endpoint.path, status, self.opts["model"],
            sum(len(s.prompt) for s in self.request.seqs[:: self.draws]),
            sum(len(out.tokens) for out in self.outputs), finishes, ttft, total,
            f" user={self.opts['user']}" if self.opts.get("user") else "",
        )  # fmt: skip

    def _returned(self) -> list[int]:
        """The sequences answered, in choice order: every one, or of each prompt's
        ``best_of`` draws the ``n`` with the highest mean log-probability a token, best
        first (ties: the earlier draw)."""
        n, draws = self.opts["n"], self.draws
        if draws == n:
            return list(range(len(self.outputs)))

        def mean_logprob(k: int) -> float:
            kept = len(self.outputs[k].tokens)  # a stop string's later tokens are dropped
            made = self.request.seqs[k].token_logprobs[:kept]
            return sum(lp.logprob for lp in made) / max(kept, 1)

        chosen = []
        for first in range(0, len(self.outputs), draws):
            ranked = sorted(range(first, first + draws), key=lambda k: -mean_logprob(k))
            chosen += ranked[:n]
        return chosen

    def body(self) -> dict[str, Any]:
        choices = []
        for index, k in enumerate(self._returned()):
            out = self.outputs[k]
            text = out.joined
            if self.endpoint is Endpoint.CHAT:
                said: dict[str, Any] = {"message": {"role": "assistant", "content": text}}
            else:
                said = {"text": self._echoed(k) + text}
            lps = self._logprobs(k, 0, len(out.tokens), 0)
            choices.append({"index": index, **said, "token_ids": out.tokens, "logprobs": lps,
                            "finish_reason": _reason(out.finish)})  # fmt: skip
        return {
            "id": self.id,
            "object": self.endpoint.value,
            "created": self.created,
            "model": self.opts["model"],
            "system_fingerprint": self.fingerprint,
            "choices": choices,
            "usage": self._usage(),
        }

    def _echoed(self, k: int) -> str:
        """Choice ``k``'s prompt text when the request asked for ``echo`` (else ``""``)."""
        echo = self.opts["echo"]
        return echo[k // self.draws] if echo else ""

    def _token_text(self, token: int) -> str:
        """A token's own text in ``logprobs`` (its decode alone, special tokens kept; a byte
        of a longer character is U+FFFD, as vLLM shows it), or ``" ID"`` without a tokenizer."""
        if self.model.tokenizer is None:
            return f" {token}"
        return str(self.model.tokenizer.decode([token], skip_special_tokens=False))

    def _logprobs(self, k: int, start: int, stop: int, offset: int) -> dict[str, Any] | None:
        """Choice ``k``'s ``logprobs`` of its tokens ``start:stop`` in OpenAI's shape (chat's
        ``{"content": [...]}``, completions' parallel lists, ``text_offset`` counted from
        ``offset``), or ``None`` when not asked for."""
        seq = self.request.seqs[k]
        if self.opts["logprobs"] is None:  # not asked for (best_of may have made them)
            return None
        made: list[tuple[str, TokenLogprobs]] = [
            (self._token_text(t), lp)
            for t, lp in zip(seq.tokens[start:stop], seq.token_logprobs[start:stop], strict=True)
        ]
        if self.endpoint is Endpoint.CHAT:

            def entry(text: str, logprob: float) -> dict[str, Any]:
                return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

            return {"content": [
                {**entry(text, lp.logprob),
                 "top_logprobs": [entry(self._token_text(i), v) for i, v in lp.top]}
                for text, lp in made
            ]}  # fmt: skip
        offsets = []
        for text, _ in made:
            offsets.append(offset)
            offset += len(text)
        return {
            "tokens": [text for text, _ in made],
            "token_logprobs": [lp.logprob for _, lp in made],
            "top_logprobs": [{self._token_text(i): v for i, v in lp.top} for _, lp in made],
            "text_offset": offsets,
        }

    def _usage(self) -> dict[str, int]:
        seqs = self.request.seqs
        prompt = sum(len(s.prompt) for s in seqs[:: self.draws])
        made = sum(len(out.tokens) for out in self.outputs)  # every draw, best_of's too
        return {"prompt_tokens": prompt, "completion_tokens": made, "total_tokens": prompt + made}

    def _chunk(
        self,
        k: int | None,
        finish: FinishReason | None,
        said: dict[str, Any],
        logprobs: dict[str, Any] | None = None,
    ) -> str:
        """An event of choice ``k``: ``said`` is its text (``{"text"}``, ``{"token_ids"}``) or
        its chat delta (``{"delta"}``), with its token's ``logprobs``; ``k`` ``None``: the
        usage chunk (no choices)."""
        choices = []
        if k is not None:
            choices = [{"index": k, **said, "logprobs": logprobs,
                        "finish_reason": _reason(finish)}]  # fmt: skip
        body = {"id": self.id, "object": self.endpoint.chunk_object, "created": self.created,
                "model": self.opts["model"], "system_fingerprint": self.fingerprint,
                "choices": choices}  # fmt: skip
        if k is None:
            body["usage"] = said["usage"]
        elif self.opts["include_usage"]:
            body["usage"] = None  # OpenAI's: every other chunk has the field, null
        return f"data: {json.dumps(body)}\n\n"

    async def events(self) -> AsyncIterator[str]:
        """Server-sent events: a chunk per token and sequence (the chunks of one hand-off from
        the engine written at once), then ``[DONE]``; a chat stream
        starts with each choice's role and ends each with a chunk of its ``finish_reason``, as
        OpenAI's does; ``stream_options.include_usage`` adds a last chunk of the usage.
        Closed early (the client went away), the request is cancelled and its slots freed."""
        chat = self.endpoint is Endpoint.CHAT
        status = 200
        try:
            if chat:
                for k in range(len(self.request.seqs)):
                    yield self._chunk(k, None, {"delta": {"role": "assistant", "content": ""}})
            elif self.opts["echo"]:  # each choice's prompt first, a chunk of no token
                for k in range(len(self.request.seqs)):
                    yield self._chunk(k, None, {"text": self._echoed(k), "token_ids": []})
            given = list(self.given)  # tokens written out of each sequence
            async for pieces in self._pieces():  # one write for the events of a hand-off
                out = []
                for i, tok, piece in pieces:
                    given[i] += 1
                    lps = self._logprobs(i, given[i] - 1, given[i], self.text_offset[i])
                    if lps is not None and not chat:
                        self.text_offset[i] += len(lps["tokens"][0])
                    if chat:
                        delta = {"delta": {"content": piece.text}, "token_ids": [tok]}
                        out.append(self._chunk(i, None, delta, lps))
                        if piece.finish is not None:
                            out.append(self._chunk(i, piece.finish, {"delta": {}}))
                    else:
                        said = {"text": piece.text, "token_ids": [tok]}
                        out.append(self._chunk(i, piece.finish, said, lps))
                yield "".join(out)
            if self.model.engine.error is not None:  # OpenAI's error body, as a last event
                status = 500
                error = {"message": f"the engine stopped: {self.model.engine.error!r}",
                         "type": "server_error", "param": None, "code": None}  # fmt: skip
                yield f"data: {json.dumps({'error': error})}\n\n"
            elif self.opts["include_usage"]:
                yield self._chunk(None, None, {"usage": self._usage()})
            yield "data: [DONE]\n\n"
        finally:
            self.cancel()
            self.log(status)


def _reason(finish: FinishReason | None) -> str | None:
    return None if finish is None else str(finish)


def _seed_of(seed: int, choice: int) -> int:
    """Choice ``choice``'s 32-bit seed of a request's ``seed`` (each of ``n`` choices its own
    draws; the same request repeats them)."""
    return (seed * 0x9E3779B1 + choice * 0x85EBCA6B) % (1 << 32)
