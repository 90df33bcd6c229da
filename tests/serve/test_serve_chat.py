"""`POST /v1/chat/completions`: the messages rendered by the tokenizer's chat template.

The server is the real `hlopipe serve` process (the built-in tiny GPT, one stage, one group of
2 slots) with a tiny word-level `tokenizers` tokenizer written here (64 words, the model's
vocabulary), a `tokenizer_config.json` beside it (special tokens, a chat template) and a
`--chat-template` file that overrides that template. The oracle: the template rendered here
with jinja2 directly (as Hugging Face's `apply_chat_template` sets it up), tokenized here, and
the tiny GPT's decode step run directly in JAX on those ids (`test_serve.oracle`)."""

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
import openai
import pytest
from test_serve import _in_thread, _stand_in_generator, oracle

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


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    tokenizer = make_tokenizer(folder)
    (folder / "override.jinja").write_text(FILE_TEMPLATE)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    argv = ["serve", "--port", "0", "--stages", "1", "--groups", "1", "--tokenizer",
            str(tokenizer), "--chat-template", str(folder / "override.jinja")]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "hlopipe", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # one line, once every stage is compiled
    if not line.startswith("serving "):
        proc.kill()
        pytest.fail(f"no URL line: {line!r}{proc.stdout.read()}")
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

    # no max_tokens: as many as the cache (48 positions) holds after the prompt
    r = _client(url).chat.completions.create(model="m", messages=CHAT[1:], temperature=0)
    ids = prompt_ids(CHAT[1:])
    assert r.choices[0].model_dump()["token_ids"] == oracle(ids, 48 - len(ids) + 1)


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
    status, body = _post(url, {"messages": CHAT, "max_tokens": 2, "stream": True})
    assert status == 200
    events = [e for e in body.split("\n\n") if e]
    assert events[-1] == "data: [DONE]" and len(events) == 1 + 2 + 1 + 1


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
