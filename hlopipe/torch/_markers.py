"""The ``hlopipe::stage_boundary`` torch op and :func:`mark_stages` (the package's docstring
says how the marker is lowered and where it survives). No torch at import, no JAX."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
