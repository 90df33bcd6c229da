"""A ``transformers`` causal LM exported for generation: :func:`export_generation` (its
prefill, decode step and, with ``chunk=C``, chunk step around its own ``StaticCache``, its
parameters by ``state_dict`` name and a manifest). No torch at import, no JAX."""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hlopipe.torch._trace import (
    MANIFEST,
    _mark_layers,
    _on_device,
    _program,
    _signature,
    _tensor_names,
)


class Returns(enum.StrEnum):
    """What the exported steps return first: the greedy token, or the logits (sampled by
    hlopipe: temperature, top-p, top-k, a seed per sequence)."""

    TOKENS = "tokens"
    LOGITS = "logits"


#: The manifest's format tag of an export folder for generation.
FORMAT = "hlopipe.generation/1"


def export_generation(
    model: Any,
    out_dir: str | Path,
    *,
    batch: int,
    prompt_len: int,
    max_len: int,
    returns: Returns | str = Returns.TOKENS,
    stages: int = 1,
    eos_token_ids: Sequence[int] | None = None,
    tokenizer: Any = None,
    chunk: int | None = None,
) -> Path:
    """Export a ``transformers`` causal LM for generation: its prefill and decode step around
    its own ``StaticCache``, traced with torch_xla, its parameters, and a manifest.

    Writes into ``out_dir``: ``prefill.mlir`` (``(weights..., prompt int64[batch,
    prompt_len]) -> (first, caches..., counters...)``) and ``decode.mlir`` (``(weights...,
    caches..., counters..., tokens int64[batch]) -> (next, caches..., counters...)``), where
    ``first`` / ``next`` is the greedy token ``int64[batch]`` or the last position's logits
    ``float[batch, vocab]`` (``returns``); every argument carries its name (StableHLO
    locations). ``params.npz``: each weight under its ``state_dict`` name (tied weights once:
    the manifest's ``tied`` names the others), the buffers the decode step reads that the
    ``state_dict`` leaves out under their module names, and the scalars torch_xla lifted into
    its arguments as ``lifted.<dtype>[<value>]``. ``manifest.json``: batch, prompt length, cache
    length, end-of-sequence ids, the tokenizer folder, each program's arguments by name and
    kind, the versions traced with.

    With ``chunk=C`` the position is an argument of every program instead (a position kept in
    the ``StaticCache`` counters cannot be started where a server asks: a chunk is run from a
    position the prefill did not end at), and a chunk step is written too, the three taking
    the same weights in the same order: ``prefill.mlir`` ``(weights..., prompt int64[batch,
    prompt_len]) -> (first, caches...)``, ``decode.mlir`` ``(weights..., caches..., tokens
    int64[batch], position int64[batch]) -> (next, caches...)`` (each sequence at its own
    position, written there with ``index_put_``) and ``chunk<C>.mlir`` ``(weights...,
    caches..., tokens int64[batch, C], cache_position int64[C]) -> (next, caches...)``: the
    model's forward over ``C`` tokens at ``cache_position`` (``arange(p, p + C)``), the keys and
    values written there by its ``StaticCache`` layers' own ``index_copy_`` along the sequence
    axis, attention masked to the positions up to each query's (a 4D mask), ``next`` the
    token or logits after the last. ``hlopipe serve DIR`` then reads a prompt longer than the
    prefill in chunks (docs/serving.md).

    Args:
      model: a ``transformers`` ``*ForCausalLM`` (Llama, GPT-2, Qwen2, Gemma: any whose
        ``StaticCache`` layers are plain ``StaticLayer``s, no sliding window); moved to the
        XLA device (its stage markers' hooks removed afterwards).
      out_dir: the folder to write (made if missing).
      batch / prompt_len / max_len: the sequences per step, the prefill's prompt length and
        the cache length, fixed in the programs.
      returns: ``"tokens"`` (greedy, the argmax in the program) or ``"logits"`` (sampled).
      stages: pipeline stages: a marker after every ``layers / stages`` decoder layers
        (:func:`mark_stages`); 1: none.
      eos_token_ids: default the model's ``generation_config.eos_token_id``.
      tokenizer: a ``transformers`` tokenizer (saved under ``tokenizer/``) or its folder
        (recorded as it is); optional.
      chunk: the tokens of a chunk step, written with all three programs taking the position
        as an argument (above); None: the prefill and decode step around the counters.

    Returns:
      ``out_dir`` as a ``Path``.

    Raises:
      ValueError: sizes below 1, a prompt or chunk longer than the cache, stages that do not
        divide the decoder layers, a model whose cache or layers are not of the known form.

    Example:
      >>> model = transformers.LlamaForCausalLM(config)                 # doctest: +SKIP
      >>> hlopipe.torch.export_generation(model, "out", batch=2, prompt_len=8, max_len=64,
      ...                                 returns="logits", stages=2)   # doctest: +SKIP
      >>> hlopipe.torch.export_generation(model, "out", batch=2, prompt_len=16, max_len=256,
      ...                                 returns="logits", chunk=16)   # doctest: +SKIP
    """

    returns = Returns(returns)
    for what, n in (("batch", batch), ("prompt_len", prompt_len), ("max_len", max_len)):
        if n < 1:
            raise ValueError(f"export_generation: {what}={n}; give at least 1")
    if prompt_len >= max_len:
        raise ValueError(
            f"export_generation: prompt_len={prompt_len} leaves no room in the cache "
            f"(max_len={max_len}); give max_len > prompt_len"
        )
    if chunk is not None and not 1 <= chunk < max_len - prompt_len:
        raise ValueError(
            f"export_generation: chunk={chunk}; give at least 1 and fewer than max_len - "
            f"prompt_len = {max_len - prompt_len} tokens (a chunk follows the prefill in the "
            "cache)"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hooks = _mark_layers(model, stages)
    try:
        return _export_generation(model, out, batch, prompt_len, max_len, returns, stages,
                                  eos_token_ids, tokenizer, chunk)  # fmt: skip
    finally:
        for h in hooks:
            h.remove()


def _export_generation(
    model: Any, out: Path, batch: int, prompt_len: int, max_len: int, returns: Returns,
    stages: int, eos_token_ids: Sequence[int] | None, tokenizer: Any, chunk: int | None,
) -> Path:  # fmt: skip
    import numpy as np
    import torch
    import torch_xla
    import transformers

    from hlopipe import _torch_xla_compat as xla

    dev = torch_xla.device()
    model = _on_device(model, dev, "export_generation").eval()
    named, tied, buffers, state = _tensor_names(model, xla)
    weights = dict(state)
    weights.update({n: t for n, t in model.named_buffers() if n not in weights and n not in tied})
    values: dict[str, Any] = {}  # the arrays of params.npz, by name
    with torch.no_grad():
        if chunk is None:
            programs = _counter_programs(model, batch, prompt_len, max_len, returns, named,
                                         buffers, values, xla)  # fmt: skip
        else:
            programs = _positioned_programs(model, batch, prompt_len, max_len, chunk, returns,
                                            named, buffers, values, xla)  # fmt: skip
        # the state_dict (a tied weight once), then what else the steps read: buffers
        # the state_dict leaves out, lifted scalars (the prefill's own, a counter's advance,
        # are told by hlopipe from its data flow)
        arrays = {n: t.detach().cpu().numpy() for n, t in state.items()}
        for name, value in values.items():
            if name not in arrays:
                arrays[name] = (
                    value if name not in weights else weights[name].detach().cpu().numpy()
                )
    np.savez(out / "params.npz", **arrays)
    files: dict[str, Any] = {}
    for which, (file, text, args) in programs.items():
        (out / file).write_text(text)
        files[which] = {"file": file, "args": args}
    manifest = {
        "format": FORMAT,
        "returns": str(returns),
        "batch": batch,
        "prompt_len": prompt_len,
        "max_len": max_len,
        **({} if chunk is None else {"chunk_len": chunk}),
        "stages": stages,
        "eos_token_ids": _eos_ids(model, eos_token_ids),
        "tokenizer": _save_tokenizer(tokenizer, out),
        "params": "params.npz",
        "tied": tied,
        **files,
        "versions": {
            "torch": torch.__version__,
            "torch_xla": torch_xla.__version__,
            "transformers": transformers.__version__,
        },
        "model": type(model).__name__,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return out


def _step_keyword(model: Any) -> str:
    return "cache" if "cache" in _forward_parameters(model) else "past_key_values"


def _counter_programs(
    model: Any, batch: int, prompt_len: int, max_len: int, returns: Returns,
    named: dict[int, str], buffers: set[str], values: dict[str, Any], xla: Any,
) -> dict[str, tuple[str, str, list[dict[str, Any]]]]:  # fmt: skip
    """The prefill and decode step around the model's own ``StaticCache``, its position in
    the per-layer ``cumulative_length`` counters: ``{which: (file, text, args)}``."""
    import numpy as np
    import torch
    import torch_xla
    import transformers

    dev = torch_xla.device()
    keyword = _step_keyword(model)

    def step(tokens: Any, cache: Any) -> list[Any]:
        logits = model(input_ids=tokens, use_cache=True, **{keyword: cache}).logits[:, -1]
        first = logits if returns is Returns.LOGITS else logits.argmax(-1)
        layers = _cache_layers(cache)
        kv = [t for ly in layers for t in (ly.keys, ly.values)]
        return [first, *kv, *[ly.cumulative_length for ly in layers]]

    prompt = torch.from_numpy(np.zeros((batch, prompt_len), np.int64)).to(dev)
    cache = transformers.StaticCache(config=model.config, max_cache_len=max_len)
    inputs = {xla.tensor_id(prompt): ("prompt", "prompt")}
    outs = step(prompt, cache)
    prefill = _program(outs, named, buffers, inputs, {}, xla)
    torch_xla.sync()
    layers = _cache_layers(cache)
    inputs = {}
    for k, ly in enumerate(layers):
        inputs[xla.tensor_id(ly.keys)] = (f"cache.{k}.keys", "state")
        inputs[xla.tensor_id(ly.values)] = (f"cache.{k}.values", "state")
        inputs[xla.tensor_id(ly.cumulative_length)] = (f"cache.{k}.cumulative_length",
                                                        "counter")  # fmt: skip
    tokens = torch.from_numpy(np.zeros(batch, np.int64)).to(dev)
    inputs[xla.tensor_id(tokens)] = ("tokens", "token")
    outs = step(tokens[:, None], cache)
    decode = _program(outs, named, buffers, inputs, values, xla)
    return {"prefill": ("prefill.mlir", *prefill), "decode": ("decode.mlir", *decode)}


def _positioned_programs(
    model: Any, batch: int, prompt_len: int, max_len: int, chunk: int, returns: Returns,
    named: dict[int, str], buffers: set[str], values: dict[str, Any], xla: Any,
) -> dict[str, tuple[str, str, list[dict[str, Any]]]]:  # fmt: skip
    """The prefill, decode step and chunk step of ``chunk`` tokens with the position an
    argument: ``{which: (file, text, args)}``, every program taking the same weights in the
    same order, then the cache, the tokens and the position (see :func:`export_generation`).

    One forward serves all three. Over ``C`` tokens at ``cache_position`` (``int64[C]``: the
    prefill's ``arange(prompt_len)``, the chunk's argument) the model's own ``StaticCache``
    layers write the keys and values with their ``index_copy_`` along the sequence axis at
    ``arange(C) + cumulative_length``, their counter set to ``cache_position[0]`` (so at
    ``cache_position``, a range); the decode step's one token a row is written at that row's
    position (``index_put_``, :func:`_row_writer`). The positions embedded are the same ones,
    and attention is masked to the keys at positions up to each query's (a 4D mask the model
    takes as it is). The counters are not returned: nothing carries the position but the
    argument."""
    import numpy as np
    import torch
    import torch_xla
    import transformers

    dev = torch_xla.device()
    keyword = _step_keyword(model)
    dtype = next(model.parameters()).dtype

    def step(tokens: Any, at: Any, rows: bool, caches: list[Any] | None) -> list[Any]:
        """The forward over ``tokens[b, C]``: at ``at`` (``int64[C]``, the positions every
        row's tokens are at), or with ``rows`` at ``at[r]`` for row ``r`` (``int64[b]``, C =
        1); ``caches``: the keys and values taken, else zeros made inside."""
        b, C = tokens.shape
        cache = transformers.StaticCache(config=model.config, max_cache_len=max_len)
        layers = _cache_layers(cache)
        for k, ly in enumerate(layers):
            kv = caches[2 * k : 2 * k + 2] if caches else None
            if rows:
                ly.update = _row_writer(ly, at, kv)
            else:
                ly.lazy_initialization = _start_at(ly, at[0], kv)
        positions = at[:, None] if rows else at[None, :].expand(b, C)  # [b, C]
        seen = torch.arange(max_len, device=dev)[None, None, :] <= positions[:, :, None]
        mask = torch.zeros(seen.shape, dtype=dtype, device=dev)
        mask = mask.masked_fill(~seen, torch.finfo(dtype).min)[:, None]  # [b, 1, C, max_len]
        logits = model(input_ids=tokens, attention_mask=mask, position_ids=positions,
                       use_cache=True, **{keyword: cache}).logits[:, -1]  # fmt: skip
        first = logits if returns is Returns.LOGITS else logits.argmax(-1)
        if any(not ly.is_initialized for ly in layers):
            raise ValueError(
                "export_generation: the model's forward did not write every layer of its "
                "StaticCache; chunk= takes a model whose every layer caches its keys and values"
            )
        return [first, *[t for ly in layers for t in (ly.keys, ly.values)]]

    got: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    # the prefill: its cache made inside (zeros), the positions 0 .. prompt_len - 1
    prompt = torch.from_numpy(np.zeros((batch, prompt_len), np.int64)).to(dev)
    outs = step(prompt, torch.arange(prompt_len, device=dev), False, None)
    got["prefill"] = _program(outs, named, buffers, {xla.tensor_id(prompt): ("prompt", "prompt")},
                              values, xla)  # fmt: skip
    shapes = [(tuple(t.shape), t.dtype) for t in outs[1:]]
    torch_xla.sync()
    for which, C in (("decode", 1), ("chunk", chunk)):
        caches = [torch.zeros(s, dtype=d).to(dev) for s, d in shapes]
        inputs = {}
        for k in range(len(caches) // 2):
            inputs[xla.tensor_id(caches[2 * k])] = (f"cache.{k}.keys", "state")
            inputs[xla.tensor_id(caches[2 * k + 1])] = (f"cache.{k}.values", "state")
        rows = which == "decode"  # the decode step: a position a row
        tokens = torch.from_numpy(np.zeros((batch,) if rows else (batch, C), np.int64)).to(dev)
        at = np.zeros(batch, np.int64) if rows else np.arange(C, dtype=np.int64)
        position = torch.from_numpy(at).to(dev)
        inputs[xla.tensor_id(tokens)] = ("tokens", "tokens")
        inputs[xla.tensor_id(position)] = ("position" if rows else "cache_position", "position")
        outs = step(tokens.reshape(batch, C), position, rows, caches)
        got[which] = _program(outs, named, buffers, inputs, values, xla)
        torch_xla.sync()
    # one order for all three: the weights as the decode step reads them (then any only the
    # others read, each program taking every one: chunk and prefill are matched to the
    # decode step's in order), the cache, the tokens, the position
    weights: dict[str, dict[str, Any]] = {}
    for which in ("decode", "chunk", "prefill"):
        for a in got[which][1]:
            if a["kind"] not in ("state", "tokens", "prompt", "position"):
                weights.setdefault(a["name"], a)
    types = {w: _argument_types(text, [a["name"] for a in args])
             for w, (text, args) in got.items()}  # fmt: skip
    weight_types = {n: t[n] for t in types.values() for n in t if n in weights}
    files = {"prefill": "prefill.mlir", "decode": "decode.mlir", "chunk": f"chunk{chunk}.mlir"}
    programs = {}
    for which, (text, args) in got.items():
        rest = [a for a in args if a["name"] not in weights]
        order = [*weights.values(), *sorted(rest, key=_argument_rank)]
        typed = {**weight_types, **types[which]}
        programs[which] = (files[which], _reordered(text, args, order, typed), order)
    return programs


def _start_at(layer: Any, start: Any, caches: list[Any] | None) -> Any:
    """A ``StaticLayer``'s ``lazy_initialization`` that then takes ``caches`` (``[keys,
    values]``, the step's arguments) for its buffers when given, and ``start`` (the chunk's
    first position) for its counter: its ``update`` then writes at ``start + arange(C)``."""

    init = type(layer).lazy_initialization

    def lazy_initialization(key_states: Any, value_states: Any) -> None:
        init(layer, key_states, value_states)
        if caches:
            layer.keys, layer.values = caches
        layer.cumulative_length = start.clone()

    return lazy_initialization


def _row_writer(layer: Any, position: Any, caches: list[Any] | None) -> Any:
    """A ``StaticLayer``'s ``update`` for one token a row, row ``r`` written at
    ``position[r]`` (``index_put_``), its buffers ``caches`` (``[keys, values]``, the step's
    arguments)."""
    import torch

    def update(key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
        if not layer.is_initialized:
            type(layer).lazy_initialization(layer, key_states, value_states)
            if caches:
                layer.keys, layer.values = caches
        b, h = key_states.shape[:2]
        # every index leading (rows, heads, position): a scatter on the cache as it is laid
        # out (an index after a slice makes torch_xla transpose the cache around it)
        at = (torch.arange(b, device=key_states.device)[:, None],
              torch.arange(h, device=key_states.device)[None, :], position[:, None])  # fmt: skip
        layer.keys[at] = key_states[:, :, 0]
        layer.values[at] = value_states[:, :, 0]
        return layer.keys, layer.values

    return update


def _argument_rank(a: dict[str, Any]) -> tuple[int, int, str]:
    """The cache first (layer by layer, keys before values), then the tokens and position."""
    kind = {"state": 0, "tokens": 1, "prompt": 1, "position": 2}[a["kind"]]
    parts = a["name"].split(".")
    return (kind, int(parts[1]) if kind == 0 else 0, a["name"])


def _argument_types(text: str, names: list[str]) -> dict[str, str]:
    """Each named argument's type in ``@main``'s signature (``tensor<2x3xf32>``)."""
    pieces, _, _ = _signature(text)
    types = [re.sub(r"\s+loc\(.*\)$", "", p.split(":", 1)[1].strip()) for p in pieces]
    return dict(zip(names, types, strict=True))


def _reordered(
    text: str, args: list[dict[str, Any]], order: list[dict[str, Any]], types: dict[str, str]
) -> str:
    """StableHLO text whose ``@main`` takes the arguments named in ``order``, in that order,
    each carrying its name (one it does not read taken and left unused)."""
    names = [a["name"] for a in args]
    _, start, end = _signature(text)
    old = {n: k for k, n in enumerate(names)}
    new = {old[a["name"]]: k for k, a in enumerate(order) if a["name"] in old}
    if len(new) != len(old):
        raise ValueError("hlopipe.torch: an argument of the program is left out of its order")
    if text.count("func.func") != 1:
        raise ValueError("hlopipe.torch: torch_xla's StableHLO holds more than @main")
    sig = ", ".join(
        f"%arg{k}: {types[a['name']]} loc({json.dumps(a['name'])})" for k, a in enumerate(order)
    )
    # the nested regions' own arguments (reducers, scatter updates) are numbered after
    # @main's: moved past the arguments added
    shift = len(order) - len(old)

    def renamed(m: re.Match[str]) -> str:
        k = int(m.group(1))
        return f"%arg{new[k] if k in new else k + shift}"

    body = re.sub(r"%arg(\d+)\b", renamed, text[end:])
    return text[:start] + sig + body


def _forward_parameters(model: Any) -> list[str]:
    import inspect

    return list(inspect.signature(model.forward).parameters)


def _cache_layers(cache: Any) -> list[Any]:
    layers = list(getattr(cache, "layers", ()))
    need = ("keys", "values", "cumulative_length")
    # exactly StaticLayer: its subclasses (a sliding window) keep the cache another way
    kinds = sorted({type(ly).__name__ for ly in layers} - {"StaticLayer"})
    if not layers or kinds or not all(hasattr(ly, a) for ly in layers for a in need):
        raise ValueError(
            f"export_generation: the model's {type(cache).__name__} has layers of "
            f"{', '.join(kinds) or 'another form'}; only transformers 5's StaticLayer (keeping "
            f"{', '.join(need)}) is supported: a sliding-window or hybrid cache is not"
        )
    return layers


def _eos_ids(model: Any, given: Sequence[int] | None) -> list[int]:
    if given is not None:
        return [int(i) for i in given]
    for source in (getattr(model, "generation_config", None), model.config):
        eos = getattr(source, "eos_token_id", None)
        if eos is not None:
            return [int(eos)] if isinstance(eos, int) else [int(i) for i in eos]
    return []


def _save_tokenizer(tokenizer: Any, out: Path) -> str | None:
    """The tokenizer copied into the export folder (its JSON files, from a tokenizer object,
    a Hugging Face repo folder or a ``tokenizer.json``), named relative to the folder: the
    folder is whole wherever it is moved, and a relative path given here is read from the
    caller's working directory, not the folder's."""
    import shutil

    if tokenizer is None:
        return None
    dest = out / "tokenizer"
    if isinstance(tokenizer, str | Path):
        src = Path(tokenizer)
        if src.is_dir():
            dest.mkdir(exist_ok=True)
            for f in src.glob("*.json"):
                shutil.copyfile(f, dest / f.name)
            return "tokenizer"
        if not src.is_file():
            raise ValueError(
                f"export_generation: tokenizer={str(tokenizer)!r} is no file or folder"
            )
        dest.mkdir(exist_ok=True)
        shutil.copyfile(src, dest / src.name)
        return f"tokenizer/{src.name}"
    tokenizer.save_pretrained(str(dest))
    return "tokenizer"
