"""An OpenAI request's body read into a typed record (:class:`Asked`), checked, for the
served :class:`Model`: the fields each endpoint takes and the JSON types each may have, the
fields refused by name (never silently ignored), prompts as text, token ids or chat messages
rendered by the chat template. What the client got wrong is a :class:`BadRequest` naming the
field (the app answers it with OpenAI's error body)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from hlopipe.serve._chat import ChatTemplate, TemplateFailed, TemplateRefused

if TYPE_CHECKING:
    from hlopipe.serve._engine import Engine

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


@dataclass(frozen=True)
class Asked:
    """A request's prompts (token ids) and options, checked: every field a default where
    the client sent none, ``max_tokens`` resolved (chat without one: to the cache's end),
    ``stop`` a tuple, ``top_k`` 0 for no cut, ``echo`` each prompt's text (completions'
    ``echo``) or None, ``penalties`` (presence, frequency, repetition), ``logprobs`` how many
    of the largest a token comes with or None, ``best_of`` the draws a prompt (``n`` unless
    more are ranked)."""

    prompts: tuple[tuple[int, ...], ...]
    model: str
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    n: int
    best_of: int
    stream: bool
    stop: tuple[str, ...]
    stop_ids: frozenset[int]
    seed: int | None
    user: str | None
    include_usage: bool
    logprobs: int | None
    penalties: tuple[float, float, float]
    echo: tuple[str, ...] | None


def parse(body: dict[str, Any], model: Model, endpoint: Endpoint) -> Asked:
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
    max_tokens: int | None = _get(body, length_field, default_length)
    temperature, top_p = _get(body, "temperature", 1.0), _get(body, "top_p", 1.0)
    n, stream, top_k = _get(body, "n", 1), _get(body, "stream", False), _get(body, "top_k", 0)
    stop = _get(body, "stop", [])
    logprobs = _logprobs(body, model, endpoint)
    echo = _get(body, "echo", False)
    _response_format(body)
    if isinstance(stop, str):
        stop = [stop]
    if not all(isinstance(s, str) and s for s in stop) or len(stop) > 4:
        raise BadRequest("stop must be a string or a list of at most 4 non-empty strings", "stop")
    if max_tokens is not None and max_tokens < 1:
        raise BadRequest(f"{length_field} must be at least 1", length_field)
    if not 1 <= n <= 16:
        raise BadRequest("n must be between 1 and 16", "n")
    if not 0 <= temperature <= 2:
        raise BadRequest("temperature must be between 0 and 2", "temperature")
    if not 0 < top_p <= 1:
        raise BadRequest("top_p must be in (0, 1]", "top_p")
    if top_k < -1:
        raise BadRequest("top_k must be -1 or 0 (no cut) or a positive count", "top_k")
    best_of = _best_of(body, n, stream, model)
    if echo and logprobs is not None:
        raise BadRequest("echo with logprobs would need the prompt's log-probabilities, "
                         "which this server does not compute; ask for one or the other",
                         "echo")  # fmt: skip
    echoed: tuple[str, ...] | None = None
    if endpoint is Endpoint.COMPLETIONS:
        if "prompt" not in body:
            raise BadRequest("prompt is required", "prompt")
        asked_prompts = _prompt_list(body["prompt"])
        prompts = [_ids(p, model) for p in asked_prompts]
        if echo:  # each prompt's text as the client sent it, or its ids' decode
            echoed = tuple(p if isinstance(p, str) else _prompt_text(ids, model)
                           for p, ids in zip(asked_prompts, prompts, strict=True))  # fmt: skip
        where = "prompt"
    else:
        tools = _tools(body)
        prompts = [_chat_ids(body.get("messages"), model, _template(model), tools)]
        where = "messages"
    limit = model.engine.max_len
    if max_tokens is None:  # as many as the cache holds after the longest prompt
        max_tokens = max(limit - max(len(p) for p in prompts) + 1, 1)
    for p in prompts:
        if len(p) + max_tokens - 1 > limit:
            raise BadRequest(
                f"a prompt of {len(p)} tokens and {length_field} {max_tokens} need "
                f"{len(p) + max_tokens - 1} positions; the cache holds {limit}",
                length_field if len(p) <= limit else where,
            )
    return Asked(
        prompts=tuple(tuple(p) for p in prompts),
        model=asked if asked is not None else model.id,
        max_tokens=max_tokens,
        temperature=float(temperature),
        top_p=float(top_p),
        top_k=max(top_k, 0),
        n=n,
        best_of=best_of,
        stream=stream,
        stop=tuple(stop),
        stop_ids=_stop_ids(body, model),
        seed=body.get("seed"),
        user=body.get("user"),
        include_usage=_include_usage(body),
        logprobs=logprobs,
        penalties=_penalties(body, model),
        echo=echoed,
    )


_WHY_NOT = {  # why each field in _NOT_IMPLEMENTED is not
    "logit_bias": "the sampler on the device keeps no bias a sequence",
    "min_tokens": "the end-of-sequence ids are not masked before a count",
    "suffix": "the model is not asked to fill in between a prefix and a suffix",
    "echo": "chat does not give back its last message (vLLM's echo)",
    "best_of": "chat does not draw more answers than it returns",
}


def _not_implemented(key: str, model: Model) -> str:
    return f"{key} is not implemented by this server ({_WHY_NOT[key]}); leave it out"


def _best_of(body: dict[str, Any], n: int, stream: bool, model: Model) -> int:
    """How many completions are drawn a prompt (``best_of``, at least ``n``; by default ``n``):
    above ``n``, the ``n`` with the highest log-probability per token are returned (OpenAI's
    definition), so the step must return logits, and the answer cannot be streamed."""
    best_of = body.get("best_of")
    if best_of is None or best_of == n:
        return n
    if not n <= best_of <= 16:
        raise BadRequest(f"best_of must be between n ({n}) and 16", "best_of")
    if stream:
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
