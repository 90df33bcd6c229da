"""Chat templates: the Jinja template a Hugging Face tokenizer carries, rendered as its
``apply_chat_template`` renders it, for ``POST /v1/chat/completions``.

Where the template comes from, first found wins: a ``--chat-template`` file, a
``chat_template.jinja`` beside the ``tokenizer.json``, the ``chat_template`` of the
``tokenizer_config.json`` beside it (a string, or a list of ``{"name", "template"}`` of which
``default`` is taken). The special tokens the template reads (``bos_token``, ``eos_token``,
...) come from that ``tokenizer_config.json`` (strings, or ``{"content": ...}`` records).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.serve._tokenizer_files import CONFIG_NAME, read_config, token_text

TEMPLATE_NAME = "chat_template.jinja"  # where newer Hugging Face repos keep the template
_SPECIAL = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token",
            "mask_token")  # fmt: skip


class TemplateRefused(Exception):
    """The template called ``raise_exception(message)``: the messages are not what it takes."""


class TemplateFailed(Exception):
    """The template failed while rendering (an error of the template or of what it was given)."""


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template ready to render, and where it came from (for messages); made by
    :meth:`from_source` or :func:`load_chat_template`.

    Example:
      >>> t = ChatTemplate.from_source("{% for m in messages %}{{ m.content }}{% endfor %}")
      >>> t.render([{"role": "user", "content": "hi"}])
      'hi'
    """

    source: str
    origin: str = "<string>"
    special_tokens: Mapping[str, str] = field(default_factory=dict)
    _compiled: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_source(
        cls, source: str, origin: str = "<string>", special_tokens: Mapping[str, str] | None = None
    ) -> ChatTemplate:
        """Compile ``source`` (Jinja) in a sandbox as Hugging Face's tokenizers do.

        Raises:
          RuntimeConfigError: the template is not valid Jinja (naming ``origin`` and the line).
        """
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
        try:
            compiled = env.from_string(source)
        except jinja2.TemplateSyntaxError as e:
            raise RuntimeConfigError(
                f"the chat template of {origin} is not valid Jinja (line {e.lineno}: {e.message})"
            ) from e
        return cls(source, origin, dict(special_tokens or {}), compiled)

    def render(
        self,
        messages: list[dict[str, Any]],
        add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """The prompt text of ``messages`` (``{"role", "content"}`` records, content a string)
        and ``tools`` (OpenAI's ``{"type": "function", "function"}`` records, as Hugging Face's
        ``apply_chat_template`` passes JSON-schema tools; ``None``: none).

        Raises:
          TemplateRefused: the template called ``raise_exception`` (its message).
          TemplateFailed: any other error while rendering (its type and message).
        """
        try:
            return str(
                self._compiled.render(
                    messages=messages,
                    tools=tools,  # None when none given: templates test `is none`
                    documents=None,
                    add_generation_prompt=add_generation_prompt,
                    **self.special_tokens,
                )
            )
        except TemplateRefused:
            raise
        except Exception as e:  # the template is the server operator's code, run in a sandbox
            raise TemplateFailed(f"{type(e).__name__}: {e}") from e


def load_chat_template(
    tokenizer_path: str | None, chat_template_path: str | None
) -> ChatTemplate | None:
    """The chat template served beside the tokenizer at ``tokenizer_path``, or ``None``.

    Args:
      tokenizer_path: a ``tokenizer.json``; its folder's ``chat_template.jinja`` or
        ``tokenizer_config.json`` (``chat_template``) gives the template, the config the
        special tokens.
      chat_template_path: a Jinja file overriding those.

    Returns:
      The compiled template, or ``None`` when there is none (chat completions are refused).

    Raises:
      RuntimeConfigError: ``chat_template_path`` without a tokenizer or not a readable file;
        a config that is not JSON, or whose ``chat_template`` list has no ``default``; a
        template that is not valid Jinja.
    """
    if chat_template_path is not None and tokenizer_path is None:
        raise RuntimeConfigError(
            Keyword("chat_template_path", chat_template_path), " needs ",
            Keyword("tokenizer_path"), ": the rendered text is tokenized",
        )  # fmt: skip
    if tokenizer_path is None:
        return None
    folder = Path(tokenizer_path).parent
    config = read_config(folder / CONFIG_NAME)
    special = {k: v for k in _SPECIAL if (v := token_text(config.get(k))) is not None}
    if chat_template_path is not None:
        at = Keyword("chat_template_path", chat_template_path)
        try:
            source = Path(chat_template_path).read_text()
        except FileNotFoundError:
            raise RuntimeConfigError(at, ": no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise RuntimeConfigError(at, f": cannot read it ({e})") from e
        return ChatTemplate.from_source(source, chat_template_path, special)
    beside = folder / TEMPLATE_NAME
    if beside.is_file():
        return ChatTemplate.from_source(beside.read_text(), str(beside), special)
    found = config.get("chat_template")
    origin = str(folder / CONFIG_NAME)
    if isinstance(found, list):
        named = {t.get("name"): t.get("template") for t in found if isinstance(t, dict)}
        if "default" not in named:
            raise RuntimeConfigError(
                f"{origin}: chat_template lists {sorted(map(str, named))} and no 'default'; "
                "give the one to serve with ", Keyword("chat_template_path"),
            )  # fmt: skip
        found = named["default"]
    if found is None:
        return None
    if not isinstance(found, str):
        raise RuntimeConfigError(f"{origin}: chat_template must be a string or a list of "
                                 f"{{name, template}}, not {type(found).__name__}")  # fmt: skip
    return ChatTemplate.from_source(found, origin, special)


def _raise_exception(message: str) -> None:
    raise TemplateRefused(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # templates print tool schemas with it; Jinja's own escapes HTML, which a prompt must not
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)
