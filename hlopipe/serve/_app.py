"""The OpenAI-compatible HTTP API over an :class:`~hlopipe.serve._engine.Engine` (Starlette).

``POST /v1/completions``, ``GET /v1/models``, ``GET /health`` (503 until every stage is
compiled), ``GET /metrics`` (Prometheus). A mistake of the client is a 400 with OpenAI's error
body, ``{"error": {"message", "type", "param", "code"}}``; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hlopipe.serve._engine import Engine, Request, Sequence

FINGERPRINT_GREEDY = "hlopipe-greedy"  # a token-returning decode step: greedy whatever is asked
FINGERPRINT_SAMPLED = "hlopipe-sampled"  # a step returning logits: sampled as asked
_FIELDS = {  # the fields read, and the JSON types each may have
    "model": (str,),
    "prompt": (str, list),
    "max_tokens": (int,),
    "temperature": (int, float),
    "top_p": (int, float),
    "seed": (int,),
    "top_k": (int,),
    "stop": (str, list),
    "n": (int,),
    "stream": (bool,),
}
_IGNORED = {"user", "logprobs", "echo", "presence_penalty", "frequency_penalty", "best_of",
            "logit_bias", "suffix", "stream_options"}  # fmt: skip


class BadRequest(Exception):
    """What the client got wrong: a 400 naming the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Model:
    """What is served: its id, the engine, and the text side (a ``tokenizers.Tokenizer`` or
    ``None``: prompts are token ids and text is the ids joined by spaces)."""

    id: str
    engine: Engine
    tokenizer: Any = None
    vocab: int | None = None


def _error(message: str, status: int = 400, param: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status == 400 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status)


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
        prefilled = Gauge("hlopipe_prefilled_sequences", "sequences whose prompt went through "
                          "the prefill since ready", registry=reg)  # fmt: skip
        prefilled.set_function(lambda: model.engine.prefilled)
        busy = Gauge("hlopipe_engine_busy_seconds", "time spent issuing and reading decode steps",
                     registry=reg)  # fmt: skip
        busy.set_function(lambda: model.engine.busy_s)
        stage_busy = Gauge("hlopipe_stage_busy_fraction", "each stage's busy fraction since "
                           "ready: its step timed alone x the group steps run / wall time",
                           ["stage"], registry=reg)  # fmt: skip
        for s in range(len(getattr(model.engine.gen, "plans", ()))):
            stage_busy.labels(str(s)).set_function(functools.partial(model.engine.stage_busy, s))


def make_app(model: Model) -> Starlette:
    """The Starlette application serving ``model``."""
    metrics = _Metrics(model)
    greedy_only = not model.engine.samples  # a step returning tokens (see docs/serving.md)

    async def health(_: HttpRequest) -> Response:
        if model.engine.error is not None:
            return _error(f"the engine stopped: {model.engine.error!r}", 500)
        if not model.engine.ready.is_set():
            return _error("compiling the stages", 503)
        return JSONResponse({"status": "ok"})

    async def models(_: HttpRequest) -> Response:
        card = {"id": model.id, "object": "model", "created": 0, "owned_by": "hlopipe"}
        return JSONResponse({"object": "list", "data": [card]})

    async def prometheus(_: HttpRequest) -> Response:
        return Response(generate_latest(metrics.registry), media_type="text/plain; version=0.0.4")

    async def completions(http: HttpRequest) -> Response:
        try:
            body = await _json(http)
            prompts, opts = _parse(body, model)
        except BadRequest as e:
            metrics.requests.labels("400").inc()
            return _error(str(e), 400, e.param)
        if not model.engine.ready.is_set():
            return _error("the server is compiling its stages; retry when /health answers 200", 503)
        metrics.requests.labels("200").inc()
        metrics.prompt_tokens.inc(sum(len(p) for p in prompts) * opts["n"])
        headers = {}
        if greedy_only and opts["temperature"] != 0:
            headers["x-hlopipe-warning"] = "greedy: the decode step returns tokens, not logits"
        call = _Call(model, metrics, prompts, opts, greedy_only)
        call.submit()
        if opts["stream"]:
            return StreamingResponse(call.events(), media_type="text/event-stream", headers=headers)
        try:
            await call.finished()
        finally:
            call.cancel()  # a client gone mid-request frees its slot; a no-op once finished
        if model.engine.error is not None:
            return _error(f"the engine stopped: {model.engine.error!r}", 500)
        return JSONResponse(call.body(), headers=headers)

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/metrics", prometheus),
            Route("/v1/completions", completions, methods=["POST"]),
        ]
    )


async def _json(http: HttpRequest) -> dict[str, Any]:
    raw = await http.body()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def _parse(body: dict[str, Any], model: Model) -> tuple[list[list[int]], dict[str, Any]]:
    """The prompts (token ids) and options of a completion request, checked."""
    for key, value in body.items():
        if key in _FIELDS:
            kinds = _FIELDS[key]
            if value is not None and (
                not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
            ):
                want = " or ".join(k.__name__ for k in kinds)
                raise BadRequest(f"{key} must be {want}, got {type(value).__name__}", key)
        elif key not in _IGNORED:
            raise BadRequest(f"unknown field {key!r}", key)
    if "prompt" not in body:
        raise BadRequest("prompt is required", "prompt")
    opts = {
        "max_tokens": _get(body, "max_tokens", 16),
        "temperature": _get(body, "temperature", 1.0),
        "top_p": _get(body, "top_p", 1.0),
        "n": _get(body, "n", 1),
        "stream": _get(body, "stream", False),
        "stop": _get(body, "stop", []),
        "seed": body.get("seed"),
        "top_k": _get(body, "top_k", 0),
    }
    if isinstance(opts["stop"], str):
        opts["stop"] = [opts["stop"]]
    if not all(isinstance(s, str) and s for s in opts["stop"]) or len(opts["stop"]) > 4:
        raise BadRequest("stop must be a string or a list of at most 4 non-empty strings", "stop")
    if opts["max_tokens"] < 1:
        raise BadRequest("max_tokens must be at least 1", "max_tokens")
    if not 1 <= opts["n"] <= 16:
        raise BadRequest("n must be between 1 and 16", "n")
    if not 0 <= opts["temperature"] <= 2:
        raise BadRequest("temperature must be between 0 and 2", "temperature")
    if not 0 < opts["top_p"] <= 1:
        raise BadRequest("top_p must be in (0, 1]", "top_p")
    if opts["top_k"] < -1:
        raise BadRequest("top_k must be -1 or 0 (no cut) or a positive count", "top_k")
    opts["top_k"] = max(opts["top_k"], 0)
    prompts = [_ids(p, model) for p in _prompt_list(body["prompt"])]
    limit = model.engine.max_len
    for p in prompts:
        if len(p) + opts["max_tokens"] - 1 > limit:
            raise BadRequest(
                f"a prompt of {len(p)} tokens and max_tokens {opts['max_tokens']} need "
                f"{len(p) + opts['max_tokens'] - 1} positions; the cache holds {limit}",
                "max_tokens" if len(p) <= limit else "prompt",
            )
    return prompts, opts


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
    if not ids:
        raise BadRequest("a prompt is empty", "prompt")
    if model.vocab is not None and not all(0 <= x < model.vocab for x in ids):
        raise BadRequest(f"token ids must be in [0, {model.vocab})", "prompt")
    return ids


def _text(model: Model, ids: list[int]) -> str:
    if model.tokenizer is not None:
        return str(model.tokenizer.decode(ids))
    return "".join(f" {x}" for x in ids)


class _Call:
    """One completion request in flight: the engine's tokens handed to the event loop."""

    def __init__(
        self,
        model: Model,
        metrics: _Metrics,
        prompts: list[list[int]],
        opts: dict,
        greedy_only: bool,
    ) -> None:
        self.model, self.metrics, self.opts = model, metrics, opts
        self.fingerprint = FINGERPRINT_GREEDY if greedy_only else FINGERPRINT_SAMPLED
        self.id = f"cmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.loop = asyncio.get_running_loop()
        self.events_q: asyncio.Queue[tuple[int, int | None, str | None]] = asyncio.Queue()
        seed = opts["seed"] if opts["seed"] is not None else secrets.randbits(32)
        how = (opts["temperature"], opts["top_p"], opts["top_k"])
        seqs = [Sequence(p, opts["max_tokens"], sampling=(_seed_of(seed, k), *how))
                for p in prompts for k in range(opts["n"])]  # fmt: skip
        stops = opts["stop"]
        self.request = Request(
            seqs,
            lambda *event: self.loop.call_soon_threadsafe(self.events_q.put_nowait, event),
            stop_check=(lambda i, toks: any(s in _text(model, toks) for s in stops))
            if stops
            else None,
        )
        self.t0 = time.perf_counter()
        self.last: float | None = None

    def submit(self) -> None:
        self.model.engine.submit(self.request)

    def cancel(self) -> None:
        self.request.cancelled = True

    def _timed(self) -> None:
        now = time.perf_counter()
        if self.last is None:
            self.metrics.ttft.observe(now - self.t0)
        else:
            self.metrics.itl.observe(now - self.last)
        self.last = now
        self.metrics.generated.inc()

    async def finished(self) -> None:
        while True:
            i, _, _ = await self.events_q.get()
            if i < 0:
                return
            self._timed()

    def _choice_text(self, tokens: list[int]) -> str:
        text = _text(self.model, tokens)
        for s in self.opts["stop"]:  # OpenAI's text ends before the stop string
            if s in text:
                text = text[: text.index(s)]
        return text

    def body(self) -> dict[str, Any]:
        seqs = self.request.seqs
        choices = [
            {
                "index": k,
                "text": self._choice_text(s.tokens),
                "token_ids": s.tokens,
                "logprobs": None,
                "finish_reason": s.finish,
            }
            for k, s in enumerate(seqs)
        ]
        return {
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model.id,
            "system_fingerprint": self.fingerprint,
            "choices": choices,
            "usage": self._usage(),
        }

    def _usage(self) -> dict[str, int]:
        seqs = self.request.seqs
        prompt = sum(len(s.prompt) for s in seqs[:: self.opts["n"]])
        made = sum(len(s.tokens) for s in seqs)
        return {"prompt_tokens": prompt, "completion_tokens": made, "total_tokens": prompt + made}

    def _chunk(self, k: int, text: str, ids: list[int], finish: str | None) -> str:
        choice = {"index": k, "text": text, "token_ids": ids, "logprobs": None,
                  "finish_reason": finish}  # fmt: skip
        body = {"id": self.id, "object": "text_completion", "created": self.created,
                "model": self.model.id, "system_fingerprint": self.fingerprint,
                "choices": [choice]}  # fmt: skip
        return f"data: {json.dumps(body)}\n\n"

    async def events(self) -> AsyncIterator[str]:
        """Server-sent events: a chunk per token and sequence, then ``[DONE]``. Closed early
        (the client went away), the request is cancelled and its slot freed."""
        sent = [""] * len(self.request.seqs)
        made: list[list[int]] = [[] for _ in self.request.seqs]
        try:
            while True:
                i, tok, finish = await self.events_q.get()
                if i < 0 or tok is None:
                    break
                self._timed()
                made[i].append(tok)
                text = self._choice_text(made[i])
                delta, sent[i] = text[len(sent[i]) :], text
                yield self._chunk(i, delta, [tok], finish)
            if self.model.engine.error is not None:  # OpenAI's error body, as a last event
                error = {"message": f"the engine stopped: {self.model.engine.error!r}",
                         "type": "server_error", "param": None, "code": None}  # fmt: skip
                yield f"data: {json.dumps({'error': error})}\n\n"
            yield "data: [DONE]\n\n"
        finally:
            self.cancel()


def _seed_of(seed: int, choice: int) -> int:
    """Choice ``choice``'s 32-bit seed of a request's ``seed`` (each of ``n`` choices its own
    draws; the same request repeats them)."""
    return (seed * 0x9E3779B1 + choice * 0x85EBCA6B) % (1 << 32)
