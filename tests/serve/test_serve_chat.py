"""`POST /v1/chat/completions`: the messages rendered by the tokenizer's chat template.

The server is the real `hlopipe serve` process (the built-in tiny GPT, one stage, one group of
2 slots) with a tiny word-level `tokenizers` tokenizer written here (64 words, the model's
vocabulary), a `tokenizer_config.json` beside it (special tokens, a chat template) and a
`--chat-template` file that overrides that template. The oracle: the template rendered here
with jinja2 directly (as Hugging Face's `apply_chat_template` sets it up), tokenized here, and
the tiny GPT's decode step run directly in JAX on those ids (`test_serve.oracle`).

Its `generation_config.json` names the end-of-sequence ids: `</s>` and a word the oracle's
greedy continuation of `CHAT[1:]` makes first at some step k (:func:`eos_choice`)."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import jinja2
import jinja2.sandbox
import numpy as np
import openai
import pytest
from test_serve import _in_thread, _stand_in_generator, log_softmax_after, oracle

ROOT = Path(__file__).resolve().parents[2]
SPECIAL = ["<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<unk>"]
_TEXT = "hello world how are you fine thanks tell me a story once upon time there was cat dog"
WORDS = [*_TEXT.split(), "who", "sat", "on", "the", "mat", "and", "ran", "far", "\n"]
VOCAB = SPECIAL + WORDS + [f"w{i}" for i in range(64 - len(SPECIAL) - len(WORDS))]
# the tokenizer_config's template: a start token, each message between its role and the end
# token, a system message only first (else raise_exception), the generation prompt
CONFIG_TEMPLATE = """{{ bos_token }}
{% for m in messages %}
{% if m.role == 'system' and not loop.first %}
{{ raise_exception('a system message must come first') }}
{% endif %}
<|{{ m.role }}|> {{ m.content }} {{ eos_token }}
{% endfor %}
{% if add_generation_prompt %}<|assistant|>{% endif %}"""
# the --chat-template file, which the server uses instead: a start token before every message
# and none at the end; the same rule for system messages, in its own words
FILE_TEMPLATE = """{% for m in messages %}
{% if m['role'] == 'system' and loop.index0 > 0 %}
{{ raise_exception('system goes first, not at ' ~ loop.index0) }}
{% endif %}
{{ bos_token }}<|{{ m['role'] }}|>
{{ m['content'] }}
{% endfor %}
{% if add_generation_prompt %}
<|assistant|>
{% endif %}"""
CHAT = [{"role": "system", "content": "you are a cat"},
        {"role": "user", "content": "tell me a story"}]  # fmt: skip


@functools.cache
def tokenizer():
    """The 64-word tokenizer: its post-processor adds ``<s>`` to what it encodes, as many
    do (a template's text must be encoded without it)."""
    import tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from tokenizers.processors import TemplateProcessing

    tok = tokenizers.Tokenizer(WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    tok.add_special_tokens(SPECIAL)
    tok.add_tokens(["\n"])  # a token: where a template's newlines fall changes the ids
    tok.post_processor = TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tok.decoder = tokenizers.decoders.WordPiece()  # joins the words with spaces
    return tok


def make_tokenizer(folder: Path, template: str | list | None = CONFIG_TEMPLATE) -> Path:
    """:func:`tokenizer` and its config (``template`` its chat template) written in
    ``folder``; the tokenizer's path."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer().save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": False,
              "normalized": False, "rstrip": False, "single_word": False}}  # fmt: skip
    if template is not None:
        config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder / "tokenizer.json"


def render(template: str, messages: list[dict]) -> str:
    """The oracle's rendering: jinja2 directly, set up as Hugging Face's tokenizers set it up."""

    def raise_exception(message):
        raise jinja2.TemplateError(message)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token="<s>", eos_token="</s>"
    )


def prompt_ids(messages, template=FILE_TEMPLATE) -> list[int]:
    """The prompt of ``messages``: rendered by :func:`render`, encoded with no ``<s>`` added."""
    return tokenizer().encode(render(template, messages), add_special_tokens=False).ids


def words(ids) -> str:
    return tokenizer().decode(ids)


@functools.cache
def long_answer() -> tuple[list[int], list[int]]:
    """``CHAT[1:]``'s prompt and the oracle's greedy continuation to the cache's end (48)."""
    ids = prompt_ids(CHAT[1:])
    return ids, oracle(ids, 48 - len(ids) + 1)


def eos_choice() -> tuple[int, int]:
    """The served end token: the first word (not a special token, which decoding drops
    anyway) that the oracle's continuation of ``CHAT[1:]`` makes for the first time at a step
    of at least 8; that step and the token."""
    _, full = long_answer()
    k = next(k for k in range(8, len(full)) if full[k] >= len(SPECIAL) and full[k] not in full[:k])
    return k, full[k]


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    tokenizer = make_tokenizer(folder)
    eos = [VOCAB.index("</s>"), eos_choice()[1]]  # the Hugging Face layout: an int or a list
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    (folder / "override.jinja").write_text(FILE_TEMPLATE)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    argv = ["serve", "--port", "0", "--stages", "1", "--groups", "1", "--tokenizer",
            str(tokenizer), "--chat-template", str(folder / "override.jinja"),
            "--served-model-name", "m", "--served-model-name", "hlopipe-tiny-gpt"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "hlopipe", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # once every stage is compiled; then the end ids' line
    if not line.startswith("serving "):
        proc.kill()
        pytest.fail(f"no URL line: {line!r}{proc.stdout.read()}")
    assert (
        proc.stdout.readline()
        == f"stopping at end-of-sequence ids {eos} ({folder / 'generation_config.json'})\n"
    )
    yield proc, line.split(" at ")[1].strip()
    proc.kill()
    proc.wait()


def _client(url):
    return openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=60)


def _post(url, body, path="/chat/completions"):
    data = json.dumps(body).encode()
    req = urllib.request.Request(f"{url}{path}", data=data, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_greedy_chat_equals_the_unsplit_program_on_the_rendered_prompt(chat_server):
    """The --chat-template file's rendering (not the config's: their ids differ), tokenized
    without a second start token: the greedy answer is the unsplit program's on those ids, and
    what /v1/completions gives them; text parts are joined by newlines."""
    _, url = chat_server
    ids = prompt_ids(CHAT)
    assert ids != prompt_ids(CHAT, CONFIG_TEMPLATE) and ids[0] == 0 and ids[1] != 0
    assert ids.count(VOCAB.index("\n")) == 5  # after each role, message, the last role
    want = oracle(ids, 6)
    r = _client(url).chat.completions.create(model="m", messages=CHAT, max_tokens=6, temperature=0)
    assert r.object == "chat.completion"
    (choice,) = r.choices
    assert choice.message.role == "assistant" and choice.message.content == words(want)
    assert choice.model_dump()["token_ids"] == want and choice.finish_reason == "length"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (len(ids), 6)
    plain = _client(url).completions.create(model="m", prompt=ids, max_tokens=6, temperature=0)
    assert plain.choices[0].model_dump()["token_ids"] == want

    two = [{"type": "text", "text": "tell me"}, {"type": "text", "text": "a story"}]
    parts = [CHAT[0], {"role": "user", "content": two}]
    joined = prompt_ids([CHAT[0], {"role": "user", "content": "tell me\na story"}])
    assert joined != prompt_ids([CHAT[0], {"role": "user", "content": "tell me a story"}])
    both = {"max_completion_tokens": 4, "max_tokens": 9}  # OpenAI's newer name wins
    status, text = _post(url, {"messages": parts, **both, "temperature": 0})
    assert status == 200, text
    assert json.loads(text)["choices"][0]["token_ids"] == oracle(joined, 4)


def test_chat_logprobs_equal_the_log_softmax_of_the_unsplit_steps_logits(chat_server):
    """``logprobs: true, top_logprobs: 2``, greedy, streamed and not: each token (its text,
    its UTF-8 bytes) with its log-probability and the two largest, as ``log_softmax`` of the
    unsplit step's logits after the rendered prompt; ``top_logprobs`` without ``logprobs``
    is a 400."""
    _, url = chat_server
    ids = prompt_ids(CHAT)
    client = _client(url)
    how = {"model": "m", "messages": CHAT, "max_tokens": 5, "temperature": 0, "logprobs": True,
           "top_logprobs": 2}  # fmt: skip
    (choice,) = client.chat.completions.create(**how).choices
    tokens = choice.model_dump()["token_ids"]
    assert tokens == oracle(ids, 5)
    want = log_softmax_after(ids, tokens)
    content = choice.logprobs.model_dump()["content"]
    assert [c["token"] for c in content] == [VOCAB[t] for t in tokens]
    assert [c["bytes"] for c in content] == [list(VOCAB[t].encode()) for t in tokens]
    np.testing.assert_allclose([c["logprob"] for c in content], want[range(5), tokens],
                               atol=1e-4)  # fmt: skip
    for row, c in zip(want, content, strict=True):
        top = np.argsort(-row)[:2]
        assert [t["token"] for t in c["top_logprobs"]] == [VOCAB[i] for i in top]
        np.testing.assert_allclose([t["logprob"] for t in c["top_logprobs"]], row[top],
                                   atol=1e-4)  # fmt: skip
    streamed = [
        entry
        for chunk in client.chat.completions.create(**how, stream=True)
        if chunk.choices and chunk.choices[0].logprobs is not None
        for entry in chunk.choices[0].logprobs.model_dump()["content"]
    ]
    assert streamed == content
    status, text = _post(url, {"messages": CHAT, "top_logprobs": 2})
    assert status == 400 and json.loads(text)["error"]["param"] == "top_logprobs"


def test_sequences_stop_at_the_end_token(chat_server):
    """Greedy, no max_tokens: the answer is the oracle's continuation up to the end token
    (its first k tokens shown, the end token in ``token_ids`` only, as vLLM does), finish
    ``stop``, streamed or not, chat or completions; ``ignore_eos`` runs to the cache's end
    (48 positions); ``stop_token_ids`` add ids to stop at."""
    _, url = chat_server
    ids, full = long_answer()
    k, eos = eos_choice()
    r = _client(url).chat.completions.create(model="m", messages=CHAT[1:], temperature=0)
    (choice,) = r.choices
    assert choice.model_dump()["token_ids"] == full[: k + 1] and choice.finish_reason == "stop"
    assert choice.message.content == words(full[:k]) and words([eos]) not in choice.message.content
    assert r.usage.completion_tokens == k + 1
    chunks = list(_client(url).chat.completions.create(model="m", messages=CHAT[1:],
                                                       temperature=0, stream=True))  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == words(full[:k])
    assert chunks[-1].choices[0].finish_reason == "stop"
    status, text = _post(
        url, {"prompt": ids, "max_tokens": len(full), "temperature": 0}, "/completions"
    )
    assert status == 200, text
    (plain,) = json.loads(text)["choices"]
    assert (plain["token_ids"], plain["text"], plain["finish_reason"]) == (
        full[: k + 1], words(full[:k]), "stop")  # fmt: skip

    status, text = _post(url, {"messages": CHAT[1:], "temperature": 0, "ignore_eos": True})
    assert status == 200, text
    (whole,) = json.loads(text)["choices"]
    assert whole["token_ids"] == full and whole["finish_reason"] == "length"
    assert whole["message"]["content"] == words(full)

    # a word made first at an early step j ends it there (with or without ignore_eos), the
    # earliest of the ids given
    j = next(j for j in range(1, k) if full[j] >= len(SPECIAL) and full[j] not in full[:j])
    later = next(t for t in full[j + 1 : k] if t not in full[: j + 1])
    for extra in ({"ignore_eos": True}, {}):
        body = {"messages": CHAT[1:], "temperature": 0, "stop_token_ids": [later, full[j]]}
        status, text = _post(url, body | extra)
        assert status == 200, text
        (got,) = json.loads(text)["choices"]
        assert (got["token_ids"], got["finish_reason"]) == (full[: j + 1], "stop")
        assert got["message"]["content"] == words(full[:j])
    # past the end token with ignore_eos: an id made first there ends it
    late = next(t for t in full[k + 1 :] if t not in full[: k + 1])
    body = {"messages": CHAT[1:], "temperature": 0, "ignore_eos": True, "stop_token_ids": [late]}
    status, text = _post(url, body)
    (got,) = json.loads(text)["choices"]
    assert got["token_ids"] == full[: full.index(late) + 1] and got["finish_reason"] == "stop"


def test_stream_starts_with_the_role_and_joins_to_the_answer(chat_server):
    """Greedy and seeded-sampled streams: the first chunk carries the role, the contents join
    to the unstreamed answer, the finish reason comes in a last chunk of its own, then
    [DONE]."""
    _, url = chat_server
    how = {"model": "m", "messages": CHAT, "max_tokens": 7, "temperature": 0}
    for extra in ({}, {"temperature": 1.3, "seed": 4}):
        whole = _client(url).chat.completions.create(**how | extra)
        chunks = list(_client(url).chat.completions.create(**how | extra, stream=True))
        assert all(c.object == "chat.completion.chunk" for c in chunks)
        assert chunks[0].choices[0].delta.role == "assistant"
        assert all(c.choices[0].delta.role is None for c in chunks[1:])
        contents = "".join(c.choices[0].delta.content or "" for c in chunks)
        assert contents == whole.choices[0].message.content
        assert [c.choices[0].finish_reason for c in chunks] == [None] * 8 + ["length"]
        assert chunks[-1].choices[0].delta.content is None
    assert whole.choices[0].model_dump()["token_ids"] != oracle(prompt_ids(CHAT), 7)  # sampled
    status, body = _post(
        url, {"messages": CHAT, "max_tokens": 2, "stream": True, "ignore_eos": True}
    )  # sampled unseeded: may make an end token
    assert status == 200
    events = [e for e in body.split("\n\n") if e]
    assert events[-1] == "data: [DONE]" and len(events) == 1 + 2 + 1 + 1


CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": CITY}}


def test_what_openai_clients_send_to_chat(chat_server):
    """A ``developer`` message (rendered as ``system``), a user message of two text parts
    (joined by a newline) with a ``name``, ``max_completion_tokens``, ``tools`` with
    ``tool_choice: "none"`` and ``parallel_tool_calls``, ``response_format`` text, ``user``,
    ``n`` 2: each choice's greedy tokens equal the oracle's on the prompt rendered here,
    ``usage`` counts that prompt once and both answers; each choice's stream (with
    ``include_usage``) joins to its answer, and the last chunk has that usage.
    Tool calls and the json modes, which the server cannot make, are a 400 naming the field."""
    _, url = chat_server
    client = _client(url)
    parts = [{"type": "text", "text": "tell me"}, {"type": "text", "text": "a story"}]
    messages = [{"role": "developer", "content": "you are a cat"},
                {"role": "user", "name": "bob", "content": parts}]  # fmt: skip
    rendered = [{"role": "system", "content": "you are a cat"},
                {"role": "user", "content": "tell me\na story"}]  # fmt: skip
    prompt = prompt_ids(rendered)
    how = {"model": "m", "messages": messages, "max_completion_tokens": 4, "temperature": 0,
           "tools": [WEATHER], "tool_choice": "none", "parallel_tool_calls": False,
           "response_format": {"type": "text"}, "user": "bob", "n": 2}  # fmt: skip
    r = client.chat.completions.create(**how)
    assert [c.model_dump()["token_ids"] for c in r.choices] == [oracle(prompt, 4)] * 2
    assert [c.message.tool_calls for c in r.choices] == [None, None]
    assert r.usage.prompt_tokens == len(prompt) and r.usage.completion_tokens == 8
    assert r.usage.total_tokens == len(prompt) + 8
    usage = {"include_usage": True}
    chunks = list(client.chat.completions.create(**how, stream=True, stream_options=usage))
    joined = ["", ""]
    for c in chunks[:-1]:
        (choice,) = c.choices
        joined[choice.index] += choice.delta.content or ""
    assert joined == [c.message.content for c in r.choices]
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump() == r.usage.model_dump()
    call = {"model": "m", "messages": CHAT, "max_tokens": 2}
    for body, param, says in (
        ({"tools": [WEATHER]}, "tools", 'default tool_choice is "auto"'),
        ({"tools": [WEATHER], "tool_choice": "auto"}, "tool_choice", "no tool-call parser"),
        ({"tool_choice": "required"}, "tool_choice", "no tool-call parser"),
        ({"tools": [WEATHER], "tool_choice": {"type": "function",
                                              "function": {"name": "get_weather"}}},
         "tool_choice", "no tool-call parser"),
        ({"tools": [{"name": "get_weather"}], "tool_choice": "none"}, "tools",
         r"tools\[0\] must be"),
        ({"response_format": {"type": "json_object"}}, "response_format", "guided"),
        ({"echo": True}, "echo", "not implemented"),  # vLLM's chat echo
        ({"best_of": 2}, "best_of", "not implemented"),  # completions' only
    ):  # fmt: skip
        with pytest.raises(openai.BadRequestError, match=says) as e:
            client.chat.completions.create(**call, extra_body=body)
        assert e.value.param == param, body


def test_tools_reach_the_chat_template():
    """With ``tool_choice: "none"`` the tools are given to the chat template (as vLLM gives
    them by default); without tools it sees ``None``. In process, on an engine that never
    compiles: the template refuses what it is given, so its message shows what it saw (a
    request it accepts gets the 503 of a server still compiling)."""
    from hlopipe.serve import Engine, Model
    from hlopipe.serve._chat import ChatTemplate

    source = ("{% if tools is not none %}{{ raise_exception('tools: ' ~ (tools | "
              "map(attribute='function') | map(attribute='name') | join(','))) }}{% endif %}"
              "{% for m in messages %}{{ m.content }}{% endfor %}")  # fmt: skip
    template = ChatTemplate.from_source(source, "tools.jinja")
    other = {"type": "function", "function": {"name": "f2"}}
    with _in_thread(Model("m", Engine(_stand_in_generator(None)), tokenizer(), 64,
                          template)) as url:  # fmt: skip
        status, text = _post(f"{url}/v1", {"messages": CHAT, "tools": [WEATHER, other],
                                           "tool_choice": "none"})  # fmt: skip
        assert status == 400 and "tools: get_weather,f2" in json.loads(text)["error"]["message"]
        assert _post(f"{url}/v1", {"messages": CHAT, "tool_choice": "none"})[0] == 503


BAD = [
    ({"max_tokens": 2}, "required"),
    ({"messages": []}, "required"),
    ({"messages": "hello"}, "messages must be list"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role is 'tool'"),
    ({"messages": [{"content": "x"}]}, "messages[0].role is None"),
    ({"messages": [CHAT[1], {"role": "user", "content": 3}]}, "messages[1].content must be"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "messages[0].content[0] must be a text part"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]},
     'must be a text part, {"type": "text", "text": "..."}; got {"type": "text", "text": 3}'),
    ({"messages": [{"role": "assistant", "content": "x", "tool_calls": []}]}, "'tool_calls'"),
    ({"messages": CHAT, "prompt": "hello"}, "unknown field 'prompt'"),
    ({"messages": CHAT, "max_completion_tokens": 0}, "max_completion_tokens must be at least 1"),
    ({"messages": CHAT, "max_tokens": 48}, "the cache holds 48"),
    ({"messages": CHAT[::-1]}, "refused the messages: system goes first, not at 1"),
    ({"messages": CHAT, "stop_token_ids": 5}, "stop_token_ids must be list, got int"),
    ({"messages": CHAT, "stop_token_ids": [5, "6"]}, "stop_token_ids must be a list of token ids"),
    ({"messages": CHAT, "stop_token_ids": [64]}, "integers in 0..63"),
    ({"messages": CHAT, "stop_token_ids": [True]}, "stop_token_ids must be a list of token ids"),
    ({"messages": CHAT, "ignore_eos": 1}, "ignore_eos must be bool, got int"),
]  # fmt: skip


def test_bad_chat_requests_get_400_and_the_server_keeps_serving(chat_server):
    """Each bad request: 400, OpenAI's error body naming what is wrong (a template's
    raise_exception: its message); then a good request is served as before."""
    proc, url = chat_server
    for body, says in BAD:
        status, text = _post(url, body)
        assert status == 400, (body, text)
        err = json.loads(text)["error"]
        assert err["type"] == "invalid_request_error" and says in err["message"], (body, err)
    with pytest.raises(openai.BadRequestError, match="system goes first"):
        _client(url).chat.completions.create(model="m", messages=CHAT[::-1], max_tokens=2)
    assert proc.poll() is None
    r = _client(url).chat.completions.create(model="m", messages=CHAT[1:], max_tokens=3,
                                             temperature=0)  # fmt: skip
    assert r.choices[0].model_dump()["token_ids"] == oracle(prompt_ids(CHAT[1:]), 3)


def test_no_template_or_a_failing_one_is_a_400():
    """In-process app on an engine that never compiles (the 400s come first): a tokenizer
    with no chat template, and a template that fails while rendering (an undefined value
    read), are 400s naming the cause and the way out."""
    from hlopipe.serve import Engine, Model
    from hlopipe.serve._chat import ChatTemplate

    tok = tokenizer()
    failing = ChatTemplate.from_source("{{ messages[3].content.strip() }}", "bad.jinja")
    cases = [(None, "has no chat template"), (failing, "bad.jinja) failed to render")]
    for template, says in cases:
        engine = Engine(_stand_in_generator(None))
        with _in_thread(Model("m", engine, tok, 64, template)) as url:
            status, text = _post(f"{url}/v1", {"messages": CHAT})
        assert status == 400, text
        message = json.loads(text)["error"]["message"]
        assert says in message, message
        assert template is not None or "--chat-template FILE" in message


def test_the_template_comes_from_the_config_or_the_file(tmp_path, capsys):
    """Without --chat-template the config's template (also as a list: its ``default``) with
    its special tokens, or a chat_template.jinja beside it; bad files and configs are errors
    naming them (the command: one ``error:`` line, exit 2)."""
    from hlopipe.cli import main
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.serve._chat import ChatTemplate, load_chat_template

    tokenizer = str(make_tokenizer(tmp_path / "a"))
    assert load_chat_template(tokenizer, None).render(CHAT) == render(CONFIG_TEMPLATE, CHAT)
    listed = [{"name": "tool_use", "template": "{{ 1 }}"},
              {"name": "default", "template": CONFIG_TEMPLATE}]  # fmt: skip
    in_list = str(make_tokenizer(tmp_path / "b", template=listed))
    assert load_chat_template(in_list, None).render(CHAT) == render(CONFIG_TEMPLATE, CHAT)
    assert load_chat_template(str(make_tokenizer(tmp_path / "c", None)), None) is None
    (tmp_path / "c" / "chat_template.jinja").write_text(FILE_TEMPLATE)  # newer repos' own file
    got = load_chat_template(str(tmp_path / "c" / "tokenizer.json"), None).render(CHAT)
    assert got == render(FILE_TEMPLATE, CHAT)
    tools = "{% if tools is not none %}{{ raise_exception('tools?') }}{% endif %}{{ 1 }}"
    assert ChatTemplate.from_source(tools).render(CHAT) == "1"  # None, as Hugging Face gives it
    no_default = str(make_tokenizer(tmp_path / "d", template=listed[:1]))
    with pytest.raises(RuntimeConfigError, match=r"lists \['tool_use'\] and no 'default'"):
        load_chat_template(no_default, None)

    (tmp_path / "broken.jinja").write_text("{% for m in messages %}\n{{ m.content }")
    cases = [
        (["--tokenizer", tokenizer, "--chat-template", str(tmp_path / "none.jinja")],
         f"--chat-template {tmp_path / 'none.jinja'}: no such file"),
        (["--chat-template", str(tmp_path / "broken.jinja")], "needs --tokenizer"),
        (["--tokenizer", tokenizer, "--chat-template", str(tmp_path / "broken.jinja")],
         "broken.jinja is not valid Jinja (line 2"),
    ]  # fmt: skip
    for argv, says in cases:  # port -1: were the template let through, no server would start
        assert main(["serve", *argv, "--port", "-1"]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], (argv, err)


def test_the_docs_chat_examples_run_as_written(chat_server, tmp_path):
    """docs/serving.md's chat curl and openai examples against this server (its port for
    8000): the greedy answer to their messages."""
    _, url = chat_server
    hostport = url.removeprefix("http://").removesuffix("/v1")
    page = (ROOT / "docs" / "serving.md").read_text()
    (curl,) = re.findall(r"^```bash\n(curl -s \S+/v1/chat/.*?)\n```", page, re.M | re.S)
    argv = shlex.split(curl.replace("127.0.0.1:8000", hostport))
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
    story = [{"role": "user", "content": "tell me a story"}]
    assert json.loads(out)["choices"][0]["token_ids"] == oracle(prompt_ids(story), 8)
    (code,) = [b for b in re.findall(r"^```python\n(.*?)^```", page, re.M | re.S) if "chat." in b]
    proc = subprocess.run(
        [sys.executable, "-c", code.replace("127.0.0.1:8000", hostport)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    want = words(oracle(prompt_ids(CHAT), 8))
    assert proc.stdout.splitlines() == [want, want]


def test_end_ids_come_from_the_generation_config_the_tokenizer_config_or_the_flag(tmp_path, capsys):
    """generation_config.json's eos_token_id (an int or a list) before tokenizer_config.json's
    eos_token (a record or a string, looked up in the vocabulary), none without either; bad
    ones, and bad --eos-token-id flags, are errors naming them (one ``error:`` line, exit 2)."""
    from hlopipe.cli import main
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.serve._tokenizer_files import end_token_ids

    path = make_tokenizer(tmp_path / "a")
    config = tmp_path / "a" / "tokenizer_config.json"
    assert end_token_ids(str(path), tokenizer()) == ((VOCAB.index("</s>"),), str(config))
    config.write_text(json.dumps({"eos_token": "mat"}))
    assert end_token_ids(str(path), tokenizer())[0] == (VOCAB.index("mat"),)
    generation = tmp_path / "a" / "generation_config.json"
    for found, want in ((7, (7,)), ([9, 3, 9], (9, 3))):
        generation.write_text(json.dumps({"eos_token_id": found}))
        assert end_token_ids(str(path), tokenizer()) == (want, str(generation))
    generation.write_text(json.dumps({"eos_token_id": "</s>"}))
    with pytest.raises(RuntimeConfigError, match=r'eos_token_id must be .* not "</s>"'):
        end_token_ids(str(path), tokenizer())
    generation.unlink()
    config.write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    with pytest.raises(RuntimeConfigError, match=r"'<\|endoftext\|>' is not in the tokenizer's"):
        end_token_ids(str(path), tokenizer())
    config.write_text(json.dumps({"bos_token": "<s>"}))
    assert end_token_ids(str(path), tokenizer()) == ((), "")

    cases = [
        (["--eos-token-id", "x"], "--eos-token-id x: 'x' is not a token id"),
        (["--eos-token-id", "3", "--eos-token-id", "4,,5"], "--eos-token-id 4,,5: '' is not"),
        (["--eos-token-id", "-1"], "'-1' is not a token id"),
        (["--tokenizer", str(path), "--eos-token-id", "3,64"], "--eos-token-id 3,64: 64 is not"),
        (["--tokenizer", str(path)], "'<|endoftext|>' is not in the tokenizer's vocabulary"),
    ]
    config.write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    for argv, says in cases:  # port -1: were the ids let through, no server would start
        assert main(["serve", *argv, "--port", "-1"]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], (argv, err)
