"""A model's training loss exported for ``hlopipe train``: :func:`export_training`. No torch
at import, no JAX."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hlopipe.torch._trace import MANIFEST, _mark_layers, _on_device, _program, _tensor_names

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
