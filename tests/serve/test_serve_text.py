"""Text out of the server in every script, and requests that end when their client leaves.

The tokenizer is a byte-level BPE (the `tokenizers` library: a ByteLevel pre-tokenizer and
decoder, BPE merges trained here on a short text in four scripts: Latin with accents,
Cyrillic, CJK, emoji), so a token may end inside a UTF-8 character. The model is a decode step
exported here with `jax.export` whose logits at position `p` favour the text's token `p + 1`
by a margin (a table, `(params, cache, tokens[b], position[b]) -> (logits[b, vocab], cache)`):
greedy, it continues the text from wherever its prompt ends; sampled, it strays. It is served
by the real engine and app over HTTP (uvicorn in a thread, one stage, one group of 2 slots)
and driven by the `openai` client.

The oracle is the tokenizer's own `decode` of the ids each answer returns: every streamed
chunk must be whole characters, the chunks must join to the unstreamed text, and that to the
decode (cut before a stop string)."""

from __future__ import annotations

import functools
import json
import socket
import threading
import time

import numpy as np
import openai
import pytest
from test_serve import _in_thread

from hlopipe.serve import Engine, Model, Request
from hlopipe.serve._output import FinishReason, SequenceOutput, detokenizer

TEXT = (
    "Café déjà vu, naïve façade; Ærøskøbing. Привет, как дела? Съешь же ещё этих мягких "
    "булок. 日本語のテキストと中文字符。東京は晴れです。 Emoji: 🙂🚀🎉👍🏽 and ñ, ü, ø."
)
MAX_LEN = 96
MARGIN = 6.0  # the text's token leads the others' logits by this: sampled, it mostly follows
TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>"


@functools.cache
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|end|>", "<|user|>", "<|assistant|>"],
    )
    tok.train_from_iterator([TEXT] * 4, trainer)
    return tok


@functools.cache
def text_ids() -> list[int]:
    ids = tokenizer().encode(TEXT).ids
    assert tokenizer().decode(ids) == TEXT and len(ids) < MAX_LEN
    # the premise: some tokens end inside a character (their bytes alone are not UTF-8)
    assert any("\ufffd" in tokenizer().decode([i]) for i in ids)
    return ids


def _table() -> np.ndarray:
    """Logits by position: the text's next token (cycling) ahead by ``MARGIN``."""
    ids, vocab = text_ids(), tokenizer().get_vocab_size()
    rng = np.random.default_rng(0)
    table = rng.normal(0, 0.5, (MAX_LEN, vocab)).astype(np.float32)
    for p in range(MAX_LEN):
        table[p, ids[(p + 1) % len(ids)]] += MARGIN
    return table


@pytest.fixture(scope="module")
def text_server(tmp_path_factory):
    """The table model behind the real engine and app, with the tokenizer (and a chat
    template): its URL and engine."""
    import jax
    import jax.numpy as jnp

    from hlopipe.generate import Generator
    from hlopipe.io import load
    from hlopipe.serve._chat import load_chat_template

    batch = 2

    def step(params, cache, tokens, position):
        cache = cache.at[jnp.arange(batch), position].set(tokens)
        return params["table"][position], cache

    params = {"table": jnp.asarray(_table())}
    cache = jnp.zeros((batch, MAX_LEN), jnp.int32)
    zeros = jnp.zeros(batch, jnp.int32)
    exported = jax.export.export(jax.jit(step, donate_argnums=1))(params, cache, zeros, zeros)
    gen = Generator(load(exported.serialize()), params, num_stages=1, groups=1, max_len=MAX_LEN)
    folder = tmp_path_factory.mktemp("bpe")
    tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    template = load_chat_template(str(folder / "tokenizer.json"), None)
    engine = _Paced(gen)
    model = Model("bpe", engine, tokenizer(), tokenizer().get_vocab_size(), template)
    with _in_thread(model) as url:
        engine.start()
        assert engine.ready.wait(120)
        yield f"{url}/v1", engine
        engine.stop(60)


class _Paced(Engine):
    """The real engine; while ``hold`` is set, a request submitted has its first token's
    hand-over wait (on the engine thread) until the request is cancelled, so a test knows the
    exact step at which its client left."""

    hold = False
    first = threading.Event()
    submitted: Request | None = None

    def submit(self, request: Request) -> None:
        if self.hold:
            emit = request.emit

            def paced(i, tok, finish):
                if tok is not None and len(request.seqs[i].tokens) == 1:
                    self.first.set()
                    deadline = time.monotonic() + 10
                    while not request.cancelled and time.monotonic() < deadline:
                        time.sleep(0.01)
                return emit(i, tok, finish)

            request.emit = paced
            self.submitted = request
        super().submit(request)


def _client(url):
    return openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=60)


def _whole(text: str) -> bool:
    """Valid text with no replacement character: no chunk carries half a character."""
    text.encode("utf-8")  # a lone surrogate would raise
    return "\ufffd" not in text


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_streamed_text_joins_to_the_decode_in_four_scripts(text_server, endpoint):
    """Greedy (the text itself, from where the prompt stops) and seeded-sampled (strays into
    other tokens): every chunk whole characters (greedy: the decode has no replacement
    character, so none may appear), the chunks joined equal the unstreamed text, which equals
    the tokenizer's decode of the returned ids."""
    url, _ = text_server
    client = _client(url)
    prompt = TEXT[:5]  # "Café "
    greedy = None
    for how in ({"temperature": 0}, {"temperature": 1, "seed": 7}):
        if endpoint == "chat":
            ask = functools.partial(client.chat.completions.create, model="bpe",
                                    messages=[{"role": "user", "content": prompt}])  # fmt: skip
        else:
            ask = functools.partial(client.completions.create, model="bpe", prompt=prompt)
        whole = ask(max_tokens=60, **how).model_dump()
        chunks = [c.model_dump() for c in ask(max_tokens=60, stream=True, **how)]
        (choice,) = whole["choices"]
        ids = choice["token_ids"]
        want = tokenizer().decode(ids)
        if endpoint == "chat":
            got = choice["message"]["content"]
            pieces = [c["choices"][0]["delta"].get("content") or "" for c in chunks]
        else:
            got = choice["text"]
            pieces = [c["choices"][0]["text"] for c in chunks]
        assert got == want, how
        assert "".join(pieces) == want, (how, pieces)
        assert [x for c in chunks for x in c["choices"][0].get("token_ids") or []] == ids
        if how["temperature"] == 0:
            greedy = ids
            assert all(_whole(p) for p in pieces), pieces
            assert len(set(want) - set(" ,.;?:")) > 30  # four scripts' characters came out
            assert any(ord(ch) > 0xFFFF for ch in want)  # an emoji among them
        else:
            assert ids != greedy  # it strayed from the text
            assert sum(p.count("\ufffd") for p in pieces) == want.count("\ufffd")


def test_a_stop_string_split_across_tokens_is_held_back(text_server):
    """A stop string that begins mid-token and ends tokens later: no streamed chunk shows any
    of it, the chunks join to the unstreamed text, which is the decode cut before the stop
    string; the ids end at the token that completed it (none made after is returned)."""
    url, _ = text_server
    client = _client(url)
    prompt, stop = TEXT[:5], "ет, ка"
    whole = client.completions.create(model="bpe", prompt=prompt, max_tokens=60, stop=stop,
                                      temperature=0)  # fmt: skip
    chunks = list(client.completions.create(model="bpe", prompt=prompt, max_tokens=60,
                                            stop=stop, temperature=0, stream=True))  # fmt: skip
    (choice,) = whole.choices
    ids = choice.model_dump()["token_ids"]
    decoded = tokenizer().decode(ids)
    assert stop in decoded and stop not in tokenizer().decode(ids[:-1])
    assert choice.text == decoded[: decoded.index(stop)] and choice.finish_reason == "stop"
    texts = [c.choices[0].text for c in chunks]
    assert "".join(texts) == choice.text
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_output_processor_joins_to_the_decode_for_any_ids():
    """Without a server: random id sequences (most not UTF-8 at all) and random stop strings
    through :class:`SequenceOutput`: the pieces join to the tokenizer's decode cut before its
    first stop string (a brute force over the whole decode), and none ends in a replacement
    character the decode does not have there."""
    rng = np.random.default_rng(1)
    vocab = tokenizer().get_vocab_size()
    for trial in range(300):
        ids = rng.integers(0, vocab, rng.integers(1, 30)).tolist()
        if trial % 2:  # half of them the text's own tokens: real characters to stop in
            start = int(rng.integers(0, len(text_ids()) - 30))
            ids = text_ids()[start : start + len(ids)]
        decoded = tokenizer().decode(ids)
        stops = ()
        if trial % 3 and len(decoded) > 4:
            at = int(rng.integers(0, len(decoded) - 3))
            stops = (decoded[at : at + int(rng.integers(1, 4))], "never seen")
        out = SequenceOutput(detokenizer(tokenizer()), stops)
        for k, tok in enumerate(ids):
            last = k == len(ids) - 1
            out.push(tok, FinishReason.LENGTH if last else None)
            if out.finish is not None:
                break
        cuts = [decoded.find(s) for s in stops if s in decoded]
        want = decoded[: min(cuts)] if cuts else decoded
        assert out.joined == want, (ids, stops)
        assert out.finish is (FinishReason.STOP if cuts else FinishReason.LENGTH)
        for k, piece in enumerate(out.pieces):
            if piece.endswith("\ufffd"):  # only where the decode of those ids has one
                assert "".join(out.pieces[: k + 1]) in decoded, (ids, out.pieces)


def test_a_non_streamed_request_whose_client_leaves_frees_its_slot(text_server):
    """Over HTTP, a non-streamed request for 80 tokens; its client closes the connection
    once the engine made the first token (the engine thread waits there until the server
    saw the disconnect and cancelled the request): the sequence ends at the next step with
    that one token, and the slot serves the next request."""
    url, engine = text_server
    host, port = url.removeprefix("http://").removesuffix("/v1").split(":")
    body = json.dumps({"prompt": TEXT[:5], "max_tokens": 80, "temperature": 0}).encode()
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    engine.first.clear()
    engine.hold = True
    try:
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(head + body)
            assert engine.first.wait(30)
            before = engine.steps
        request = engine.submitted
        assert request is not None
        for _ in range(500):
            if request.seqs[0].finish is not None:
                break
            time.sleep(0.01)
    finally:
        engine.hold = False
    assert request is not None and request.cancelled
    assert request.seqs[0].finish is FinishReason.CANCELLED
    assert len(request.seqs[0].tokens) == 1  # none made after the client left
    assert engine.steps - before <= 2
    r = _client(url).completions.create(model="bpe", prompt=TEXT[:5], max_tokens=3,
                                        temperature=0)  # fmt: skip
    start = len(tokenizer().encode(TEXT[:5]).ids)  # greedy: the text from the prompt's end
    assert r.choices[0].model_dump()["token_ids"] == text_ids()[start : start + 3]


def test_another_model_name_is_a_404_and_unimplemented_fields_a_400(text_server):
    """A ``model`` not served: 404 (OpenAI's NotFoundError); a field the server does not
    implement, with a value that would change the answer: a 400 naming it (its no-op value
    is accepted); ``stream_options.include_usage`` gives a last usage chunk."""
    url, _ = text_server
    client = _client(url)
    with pytest.raises(openai.NotFoundError, match="'other' does not exist"):
        client.completions.create(model="other", prompt="Café", max_tokens=2)
    for field, value in (("logit_bias", {"5": 1}), ("suffix", "x"), ("min_tokens", 2)):
        with pytest.raises(openai.BadRequestError, match=field):
            client.completions.create(model="bpe", prompt="Café", max_tokens=2,
                                      extra_body={field: value})  # fmt: skip
    client.completions.create(model="bpe", prompt="Café", max_tokens=2, presence_penalty=0)
    chunks = list(client.completions.create(model="bpe", prompt="Café", max_tokens=3, stream=True,
                                            stream_options={"include_usage": True}))  # fmt: skip
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 3


def test_echo_gives_the_prompt_then_the_answer(text_server):
    """``echo``: a string prompt comes back as sent, a prompt of ids as their decode with its
    special tokens kept, then the answer (the tokenizer's decode of its ids), streamed (the
    prompt in a chunk of its own first) and not."""
    url, _ = text_server
    client = _client(url)
    ids = [tokenizer().token_to_id("<|user|>"), *text_ids()[:4]]
    shown = tokenizer().decode(ids, skip_special_tokens=False)
    assert shown.startswith("<|user|>") and shown.endswith(tokenizer().decode(text_ids()[:4]))
    for prompt, echoed in ((TEXT[:5], TEXT[:5]), (ids, shown)):
        how = {"model": "bpe", "prompt": prompt, "max_tokens": 3, "temperature": 0, "echo": True}
        r = client.completions.create(**how)
        answer = tokenizer().decode(r.choices[0].model_dump()["token_ids"])
        assert r.choices[0].text == echoed + answer and len(answer) > 0
        chunks = list(client.completions.create(**how, stream=True))
        assert chunks[0].choices[0].text == echoed
        assert "".join(c.choices[0].text for c in chunks) == r.choices[0].text
