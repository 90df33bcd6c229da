"""Stage markers from PyTorch: ``hlopipe::stage_boundary`` and :func:`mark_stages`.

PyTorch has no way to emit what :func:`hlopipe.stage_boundary` emits in JAX (an
``optimization_barrier`` carrying the frontend attribute ``hlopipe.stage_boundary``):
torch_xla's ``optimization_barrier_`` carries no attribute, and the one op of torch_xla that
carries frontend attributes is a custom call. So the torch op lowers, on an XLA device, to
an optimisation barrier followed by a ``LayoutConstraint`` custom call that carries the
attribute. ``LayoutConstraint`` is an XLA target every backend removes at compile time (an
identity on values), so the program still runs; hlopipe's loaders read a custom call
carrying the attribute as a marker (:func:`hlopipe.marker.is_stage_boundary_attrs`).

Where the marker survives (each form torch_xla users export):

* lazy-tensor HLO text and proto (``_get_xla_tensors_hlo`` / ``_proto``), ``xm.get_stablehlo``
  (``_get_stablehlo``), ``torch.export`` + ``exported_program_to_stablehlo`` (the op has a
  fake implementation, so ``torch.export`` keeps it as ``hlopipe.stage_boundary``), and the
  HLO XLA dumps at a sync before its passes: the attributed custom call;
* the HLO dumped after XLA's passes, only with
  ``XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`` (what
  :data:`hlopipe.marker.KEEP_MARKERS` sets for JAX): XLA drops the custom call and moves its
  attribute onto the barrier's ``get-tuple-element``, which the HLO text loader reads as the
  marker. Without the flag XLA removes the barrier too and the markers are gone.

On a CPU tensor (eager PyTorch, ``model.generate``) the op is the identity. Gradients pass
through unchanged.

:func:`export_generation` writes a ``transformers`` causal LM's prefill and decode step (around
its own ``StaticCache``; with ``chunk=C`` a chunk step of ``C`` tokens too, the position an
argument of all three) with its parameters by ``state_dict`` name and a manifest, a folder
that ``hlopipe generate DIR`` and ``hlopipe serve DIR`` read (docs/torch.md).

This module imports torch only inside its functions (``hlopipe`` never needs torch) and no
JAX, so it runs in a PyTorch environment without JAX: install with the ``torch`` extra.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ATTRIBUTE",
    "CUSTOM_CALL_TARGET",
    "KEEP_MARKERS_XLA_FLAGS",
    "Returns",
    "export_generation",
    "export_training",
    "mark_stages",
    "op",
]

#: The frontend attribute that marks a stage boundary; equal to
#: :data:`hlopipe.marker.ATTRIBUTE` (repeated here so that this module needs no JAX).
ATTRIBUTE = "hlopipe.stage_boundary"

#: The custom call the torch op lowers to after its barrier: an identity XLA removes.
CUSTOM_CALL_TARGET = "LayoutConstraint"

#: The ``XLA_FLAGS`` option that keeps the markers in HLO dumped after XLA's passes.
KEEP_MARKERS_XLA_FLAGS = "--xla_disable_hlo_passes=cse_barrier_expander"

_OP: Any = None


def op() -> Any:
    """The registered torch op ``torch.ops.hlopipe.stage_boundary`` (registered on first use).

    ``op()(x, name)`` returns ``x`` unchanged in value; on an XLA device it is traced as a
    stage marker. ``name`` (a string, ``""`` for none) becomes the attribute's value.

    Example:
      >>> import hlopipe.torch
      >>> h = hlopipe.torch.op()(h, "")  # doctest: +SKIP
    """
    global _OP
    if _OP is None:
        _OP = _register()
    return _OP


def _register() -> Any:
    import torch

    # the schema is given: this module's annotations are strings (no torch at import)
    @torch.library.custom_op(
        "hlopipe::stage_boundary", mutates_args=(), schema="(Tensor x, str name) -> Tensor"
    )
    def stage_boundary(x: torch.Tensor, name: str) -> torch.Tensor:
        if x.device.type != "xla":
            return x.clone()
        from hlopipe import _torch_xla_compat as xla

        y = x.clone()
        xla.optimization_barrier_([y])
        return xla.custom_call_with_attributes(y, CUSTOM_CALL_TARGET, {ATTRIBUTE: name or "true"})

    @stage_boundary.register_fake
    def _(x: torch.Tensor, name: str) -> torch.Tensor:
        return torch.empty_like(x)

    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None

    stage_boundary.register_autograd(backward)
    return stage_boundary


def mark_stages(model: Any, modules: Iterable[Any], name: str = "") -> list[Any]:
    """Place a stage marker after each of ``modules`` (submodules of ``model``) with forward
    hooks, without editing the model's code.

    Everything computed up to a marked module's output belongs to the earlier stage. The hook
    marks the module's output tensor, or the first tensor of a tuple / list output (the hidden
    states of a transformer layer); other outputs pass unmarked.

    Args:
      model: the ``torch.nn.Module`` the modules belong to (checked, so that a module of
        another model is not marked by mistake).
      modules: the submodules after which a stage ends, e.g. ``[model.model.layers[0]]``.
      name: optional label, the attribute's value.

    Returns:
      The hooks' handles, one a module; ``handle.remove()`` takes a marker away.

    Raises:
      ValueError: a module that is not a submodule of ``model``, or given twice; a hooked
        module whose output holds no tensor (raised when it runs).

    Example:
      >>> handles = hlopipe.torch.mark_stages(model, [model.model.layers[0]])  # doctest: +SKIP
    """
    mark = op()
    owned = {id(m): n for n, m in model.named_modules()}
    chosen: list[Any] = []
    for k, module in enumerate(modules):
        if id(module) not in owned:
            raise ValueError(
                f"mark_stages: module {k} ({type(module).__name__}) is not a submodule of the "
                "model; pass modules reached from the model, e.g. model.model.layers[0]"
            )
        if any(module is c for c in chosen):
            raise ValueError(f"mark_stages: module {owned[id(module)]!r} is given twice")
        chosen.append(module)

    def hook(module: Any, args: Any, output: Any) -> Any:
        import torch

        if isinstance(output, torch.Tensor):
            return mark(output, name)
        if isinstance(output, tuple | list):
            for i, x in enumerate(output):
                if isinstance(x, torch.Tensor):
                    marked = [*output[:i], mark(x, name), *output[i + 1 :]]
                    return type(output)(marked)
        raise ValueError(
            f"mark_stages: the output of {owned[id(module)]!r} ({type(output).__name__}) holds "
            "no tensor to mark; mark a module whose output is a tensor or a tuple of them"
        )

    return [m.register_forward_hook(hook) for m in chosen]


class Returns(enum.StrEnum):
    """What the exported steps return first: the greedy token, or the logits (sampled by
    hlopipe: temperature, top-p, top-k, a seed per sequence)."""

    TOKENS = "tokens"
    LOGITS = "logits"


#: The manifest's name in an export folder, and its format tag.
MANIFEST = "manifest.json"
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


def _signature(text: str) -> tuple[list[str], int, int]:
    """``@main``'s arguments as written (split at top-level commas), where they start, and
    where the closing parenthesis is."""
    head = re.search(r"func\.func (?:public )?@main\(", text)
    if head is None:
        raise ValueError("hlopipe.torch: torch_xla's StableHLO has no @main")
    start = head.end()
    depth, k, pieces, begin = 0, start, [], start
    while True:  # the signature's arguments, split at top-level commas
        c = text[k]
        if c in "<({[":
            depth += 1
        elif c in ">)}]" and depth:
            depth -= 1
        elif c == '"':
            k = text.index('"', k + 1)
        elif c in ",)" and depth == 0:
            pieces.append(text[begin:k])
            begin = k + 1
            if c == ")":
                break
        k += 1
    return [p for p in pieces if p.strip()], start, k


#: A training export's manifest format tag.
TRAINING_FORMAT = "hlopipe.training/1"


def export_training(
    model: Any,
    loss: Any,
    batch: Mapping[str, Any],
    out_dir: str | Path,
    *,
    stages: int = 1,
) -> Path:
    """Export a model's training loss for ``hlopipe train``: ``loss(model, **batch)`` (a
    scalar, the mean over the batch) traced with torch_xla; hlopipe differentiates it.

    Writes into ``out_dir``: ``loss.mlir`` (StableHLO, every argument carrying its name: the
    ``state_dict`` names, buffers the ``state_dict`` leaves out, ``lifted.<dtype>[<value>]``
    scalars, ``batch.<key>``); ``params.npz``: every argument but the batch, in the program's
    argument order, each under its name (``hlopipe train --params`` reads them in order; a
    tied weight once); ``batch.npz``: ``batch`` as one microbatch (``--data``); and
    ``manifest.json`` with the batch arguments' indices and the command that trains it.

    Args:
      model: a ``torch.nn.Module`` (moved to the XLA device); dropout, if any, is traced as it
        is (put the model in the mode to train in).
      loss: ``loss(model, **batch) -> scalar tensor``, e.g. ``lambda m, **b: m(**b).loss``.
      batch: one microbatch, by name (``{"input_ids": ..., "labels": ...}``): CPU tensors or
        arrays; their shapes are the program's.
      out_dir: the folder to write (made if missing).
      stages: as :func:`export_generation`'s (markers after the decoder layers).

    Returns:
      ``out_dir`` as a ``Path``.

    Raises:
      ValueError: an empty batch, a loss that is not a scalar, stages that do not divide the
        layers.

    Example:
      >>> hlopipe.torch.export_training(model, lambda m, **b: m(**b).loss,
      ...     {"input_ids": ids, "labels": ids}, "train", stages=2)   # doctest: +SKIP
    """

    if not batch:
        raise ValueError("export_training: an empty batch; give its arrays by name")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hooks = _mark_layers(model, stages)
    try:
        return _export_training(model, loss, batch, out, stages)
    finally:
        for h in hooks:
            h.remove()


def _export_training(
    model: Any, loss: Any, batch: Mapping[str, Any], out: Path, stages: int
) -> Path:
    import numpy as np
    import torch
    import torch_xla

    from hlopipe import _torch_xla_compat as xla

    dev = torch_xla.device()
    model = _on_device(model, dev, "export_training")
    named, tied, buffers, state = _tensor_names(model, xla)
    tensors = {**state, **dict(model.named_buffers())}
    inputs, on_device = {}, {}
    for key, value in batch.items():
        x = torch.as_tensor(np.asarray(value.cpu() if hasattr(value, "cpu") else value))
        on_device[key] = x.to(dev)
        inputs[xla.tensor_id(on_device[key])] = (f"batch.{key}", "batch")
    with torch.no_grad():
        value = loss(model, **on_device)
        if not isinstance(value, torch.Tensor) or value.dim() != 0:
            raise ValueError(
                f"export_training: the loss is {type(value).__name__}"
                f"{list(getattr(value, 'shape', []))}; return a scalar tensor (a mean)"
            )
        lifted: dict[str, Any] = {}
        text, args = _program([value], named, buffers, inputs, lifted, xla)
    (out / "loss.mlir").write_text(text)
    params = {}
    for a in args:
        if a["kind"] != "batch" and a["name"] not in params:
            t = tensors.get(a["name"])
            params[a["name"]] = lifted[a["name"]] if t is None else t.detach().cpu().numpy()
    np.savez(out / "params.npz", **params)
    np.savez(out / "batch.npz", **{
        a["name"]: on_device[a["name"].removeprefix("batch.")].cpu().numpy()
        for a in args if a["kind"] == "batch"
    })  # fmt: skip
    batch_args = [i for i, a in enumerate(args) if a["kind"] == "batch"]
    manifest = {
        "format": TRAINING_FORMAT,
        "program": "loss.mlir",
        "params": "params.npz",
        "batch": "batch.npz",
        "args": args,
        "batch_args": batch_args,
        "tied": tied,
        "command": "hlopipe train loss.mlir --params params.npz --data batch.npz "
        f"--microbatches 1 --batch-args {','.join(map(str, batch_args))}"
        + (f" --stages {stages}" if stages > 1 else ""),
        "versions": {"torch": torch.__version__, "torch_xla": torch_xla.__version__},
        "model": type(model).__name__,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return out


def _on_device(model: Any, dev: Any, what: str) -> Any:
    """``model`` moved to ``dev``, its shared weights shared still (moving a ``transformers``
    model to the XLA device unties them: tied again with ``tie_weights``)."""
    shared = len({id(t) for t in model.state_dict(keep_vars=True).values()})
    model = model.to(dev)
    if len({id(t) for t in model.state_dict(keep_vars=True).values()}) != shared:
        model.tie_weights()
        if len({id(t) for t in model.state_dict(keep_vars=True).values()}) != shared:
            raise ValueError(
                f"{what}: the model's shared weights are no longer shared on the XLA device and "
                "tie_weights() did not tie them again; tie them after moving it"
            )
    return model


def _tensor_names(model: Any, xla: Any) -> tuple[dict[int, str], dict[str, str], set[str], dict]:
    """Every device tensor a step may read, by torch_xla's id: ``(named, tied, buffers,
    state)``: state_dict names first (a tied weight under its first name; ``tied``: the other
    name -> it), then the buffers the state_dict leaves out (``buffers``, non-persistent:
    rotary tables), and the state_dict without the tied names."""
    named: dict[int, str] = {}
    tied: dict[str, str] = {}
    for name, t in model.state_dict(keep_vars=True).items():
        i = xla.tensor_id(t)
        if i in named:
            tied[name] = named[i]
        else:
            named[i] = name
    buffers = set()
    for name, t in model.named_buffers():
        if named.setdefault(xla.tensor_id(t), name) == name and name not in tied:
            buffers.add(name)
    buffers -= set(model.state_dict())
    state = {name: t for name, t in model.state_dict(keep_vars=True).items() if name not in tied}
    return named, tied, buffers, state


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


def _decoder_layers(model: Any) -> Any:
    """The model's decoder layers: its largest ``ModuleList`` of ``num_hidden_layers``."""
    import torch

    n = getattr(model.config, "num_hidden_layers", None)
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n]
    if not lists:
        raise ValueError(
            f"export_generation: no ModuleList of the config's {n} decoder layers found in "
            f"{type(model).__name__}; mark the stages yourself (mark_stages) and give stages=1"
        )
    return lists[0]


def _mark_layers(model: Any, stages: int) -> list[Any]:
    """Stage markers after every ``layers / stages`` decoder layers: the hooks' handles."""
    if stages <= 1:
        return []
    layers = _decoder_layers(model)
    if len(layers) % stages:
        raise ValueError(
            f"export_generation: stages={stages} does not divide the {len(layers)} decoder "
            "layers; give a divisor"
        )
    per = len(layers) // stages
    return mark_stages(model, [layers[per * s - 1] for s in range(1, stages)])


def _program(
    outs: list[Any], named: dict[int, str], buffers: set[str],
    inputs: dict[int, tuple[str, str]], values: dict[str, Any], xla: Any,
) -> tuple[str, list[dict[str, Any]]]:  # fmt: skip
    """The StableHLO text of the lazy graph of ``outs`` (torch_xla's public
    ``get_stablehlo``), each argument named after the tensor it reads (``named``: weights and
    buffers, ``inputs``: the prompt, token and cache), a lifted scalar after its value (added to
    ``values`` with the weights read)."""
    import torch_xla.core.xla_model as xm

    text = xm.get_stablehlo(outs)
    if "__elided__" in text:  # MLIR printed a large constant without its values
        raise ValueError(
            "hlopipe.torch: torch_xla's StableHLO elides a large constant's values; "
            "make the tensor a buffer of the model (it is then an argument)"
        )
    ids, datas = xla.device_data(outs)
    args = []
    for i, data in zip(ids, datas, strict=True):
        if i in inputs:
            name, kind = inputs[i]
        elif i in named:
            name = named[i]
            kind = "buffer" if name in buffers else "parameter"
            values[name] = None  # read back with the weights
        else:  # a scalar torch_xla lifted into an argument
            value = data.detach().cpu().numpy()
            if value.size != 1:
                raise ValueError(
                    f"hlopipe.torch: the graph reads a device tensor {value.dtype}"
                    f"{list(value.shape)} that is no weight, buffer, prompt or cache; make it a "
                    "buffer of the model"
                )
            # the value in brackets: a name ending in ".<digits>" reads as an HLO suffix
            name, kind = f"lifted.{value.dtype}[{value.item()!r}]", "constant"
            values[name] = value
            args.append({"name": name, "kind": kind, "value": value.item()})
            continue
        args.append({"name": name, "kind": kind})
    return _name_arguments(text, [a["name"] for a in args]), args


def _name_arguments(text: str, names: list[str]) -> str:
    """StableHLO text with each argument of ``@main`` carrying its name as its location."""
    pieces, start, k = _signature(text)
    if len(pieces) != len(names):
        raise ValueError(
            f"hlopipe.torch: @main takes {len(pieces)} arguments, torch_xla named {len(names)}"
        )
    named = ", ".join(
        f"{p.strip()} loc({json.dumps(n)})" for p, n in zip(pieces, names, strict=True)
    )
    return text[:start] + named + text[k:]


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
