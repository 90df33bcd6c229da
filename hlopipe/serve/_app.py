"""The OpenAI-compatible HTTP API over an :class:`~hlopipe.serve._engine.Engine` (Starlette).

``POST /v1/completions``, ``POST /v1/chat/completions`` (the prompt rendered from the messages
by the tokenizer's chat template, ``serve._chat``; then the same way through),
``GET /v1/models``, ``GET /health`` (503 until every stage is compiled), ``GET /metrics``
(Prometheus). A request's body is read by ``serve._request`` into a typed record; a mistake
of the client is a 400 with OpenAI's error body, ``{"error": {"message", "type", "param",
"code"}}``; the server keeps serving.
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
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from hlopipe.serve._output import FinishReason, Piece, SequenceOutput, detokenizer
from hlopipe.serve._request import Asked, BadRequest, Endpoint, Model, parse
from hlopipe.serve._scheduler import Request, SamplingParams, Sequence, TokenLogprobs

_log = logging.getLogger("hlopipe.serve")

FINGERPRINT_GREEDY = "hlopipe-greedy"  # a token-returning decode step: greedy whatever is asked
FINGERPRINT_SAMPLED = "hlopipe-sampled"  # a step returning logits: sampled as asked


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
            asked = parse(body, model, endpoint)
        except BadRequest as e:
            metrics.requests.labels(str(e.status)).inc()
            _log.info("%s %d %s", endpoint.path, e.status, e)
            return _error(str(e), e.status, e.param)
        if not model.engine.ready.is_set():
            return _error("the server is compiling its stages; retry when /health answers 200", 503)
        metrics.requests.labels("200").inc()
        metrics.prompt_tokens.inc(sum(len(p) for p in asked.prompts) * asked.best_of)
        headers = {}
        if greedy_only and asked.temperature != 0:
            headers["x-hlopipe-warning"] = "greedy: the decode step returns tokens, not logits"
        loop = asyncio.get_running_loop()
        outbox = outboxes.get(loop) or outboxes.setdefault(loop, _Outbox(loop))
        call = _Call(model, metrics, asked, greedy_only, endpoint, outbox)
        call.submit()
        if asked.stream:
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
        asked: Asked,
        greedy_only: bool,
        endpoint: Endpoint,
        outbox: _Outbox,
    ) -> None:
        self.model, self.metrics, self.asked, self.endpoint = model, metrics, asked, endpoint
        self.fingerprint = FINGERPRINT_GREEDY if greedy_only else FINGERPRINT_SAMPLED
        self.id = f"{endpoint.id_prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.events_q: asyncio.Queue[tuple[int, int | None, FinishReason | None]] = asyncio.Queue()
        seed = asked.seed if asked.seed is not None else secrets.randbits(32)
        presence, frequency, repetition = asked.penalties
        self.draws = asked.best_of  # sequences a prompt: n, or best_of to rank
        logprobs = asked.logprobs
        if logprobs is None and self.draws > asked.n:
            logprobs = 0  # ranking reads each token's log-probability
        seqs = [
            Sequence(list(p), asked.max_tokens, asked.stop_ids,
                     SamplingParams(_seed_of(seed, k), asked.temperature, asked.top_p,
                                    asked.top_k, presence, frequency, repetition,
                                    logprobs is not None),
                     logprobs=logprobs)
            for p in asked.prompts for k in range(self.draws)
        ]  # fmt: skip
        self.outputs = [
            SequenceOutput(detokenizer(model.tokenizer), asked.stop, asked.stop_ids) for _ in seqs
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
            self.id, self.endpoint.path, status, self.asked.model,
            sum(len(s.prompt) for s in self.request.seqs[:: self.draws]),
            sum(len(out.tokens) for out in self.outputs), finishes, ttft, total,
            f" user={self.asked.user}" if self.asked.user else "",
        )  # fmt: skip

    def _returned(self) -> list[int]:
        """The sequences answered, in choice order: every one, or of each prompt's
        ``best_of`` draws the ``n`` with the highest mean log-probability a token, best
        first (ties: the earlier draw)."""
        n, draws = self.asked.n, self.draws
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
            "model": self.asked.model,
            "system_fingerprint": self.fingerprint,
            "choices": choices,
            "usage": self._usage(),
        }

    def _echoed(self, k: int) -> str:
        """Choice ``k``'s prompt text when the request asked for ``echo`` (else ``""``)."""
        echo = self.asked.echo
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
        if self.asked.logprobs is None:  # not asked for (best_of may have made them)
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
                "model": self.asked.model, "system_fingerprint": self.fingerprint,
                "choices": choices}  # fmt: skip
        if k is None:
            body["usage"] = said["usage"]
        elif self.asked.include_usage:
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
            elif self.asked.echo:  # each choice's prompt first, a chunk of no token
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
            elif self.asked.include_usage:
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
