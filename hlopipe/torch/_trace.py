"""A model traced with torch_xla into StableHLO whose arguments carry their names: what
:func:`~hlopipe.torch.export_generation` and :func:`~hlopipe.torch.export_training` share
(the model on the XLA device with its weights still tied, every tensor a step may read by
name, stage markers after the decoder layers, ``@main``'s signature read and its arguments
named). No torch at import, no JAX."""

from __future__ import annotations

import json
import re
from typing import Any

from hlopipe.torch._markers import mark_stages

#: The manifest's name in an export folder.
MANIFEST = "manifest.json"


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
