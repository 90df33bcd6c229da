"""The JSON files a Hugging Face tokenizer folder holds beside ``tokenizer.json``, read once
for the chat template (``serve._chat``) and the end-of-sequence ids the server stops at.

End-of-sequence ids, first found wins: ``generation_config.json``'s ``eos_token_id`` (an int
or a list of ints, as ``transformers`` writes it), then ``tokenizer_config.json``'s
``eos_token`` (a string or an added token's ``{"content": ...}`` record) looked up in the
tokenizer's vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hlopipe.errors import Keyword, RuntimeConfigError

CONFIG_NAME = "tokenizer_config.json"  # beside tokenizer.json in every Hugging Face model repo
GENERATION_NAME = "generation_config.json"  # the model's generation defaults, eos_token_id


def read_config(path: Path) -> dict[str, Any]:
    """The JSON object at ``path`` (``{}`` when there is no such file)."""
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RuntimeConfigError(f"{path} is not JSON ({e})") from e
    if not isinstance(config, dict):
        raise RuntimeConfigError(f"{path} must hold a JSON object")
    return config


def token_text(token: Any) -> str | None:
    """A special token of a tokenizer config: a string, or an added token's record."""
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) else None


def end_token_ids(tokenizer_path: str, tokenizer: Any) -> tuple[tuple[int, ...], str]:
    """The end-of-sequence ids of the tokenizer at ``tokenizer_path`` (a loaded
    ``tokenizers.Tokenizer``), and the file they came from (``()`` and ``""``: none found).

    Raises:
      RuntimeConfigError: an ``eos_token_id`` that is not an int or a list of ints; an
        ``eos_token`` that is not in the tokenizer's vocabulary.
    """
    folder = Path(tokenizer_path).parent
    generation = folder / GENERATION_NAME
    found = read_config(generation).get("eos_token_id")
    if found is not None:
        ids = [found] if not isinstance(found, list) else found
        if not ids or not all(type(x) is int and x >= 0 for x in ids):
            raise RuntimeConfigError(
                f"{generation}: eos_token_id must be a token id or a list of them, not "
                f"{json.dumps(found)}; fix it or give the ids with ", Keyword("eos_token_ids"),
            )  # fmt: skip
        return tuple(dict.fromkeys(ids)), str(generation)
    config = folder / CONFIG_NAME
    text = token_text(read_config(config).get("eos_token"))
    if text is None:
        return (), ""
    found = tokenizer.token_to_id(text)
    if found is None:
        raise RuntimeConfigError(
            f"{config}: eos_token {text!r} is not in the tokenizer's vocabulary; give its id "
            "with ", Keyword("eos_token_ids"),
        )  # fmt: skip
    return (int(found),), str(config)
