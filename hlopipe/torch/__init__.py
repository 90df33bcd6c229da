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

This package imports torch only inside its functions (``hlopipe`` never needs torch) and no
JAX, so it runs in a PyTorch environment without JAX: install with the ``torch`` extra.

The parts: ``_markers`` (the op and :func:`mark_stages`), ``_trace`` (a model traced with
torch_xla into StableHLO whose arguments carry their names, what both exports share),
``_generation`` (:func:`export_generation`) and ``_training`` (:func:`export_training`).
"""

from hlopipe.torch._generation import FORMAT as FORMAT
from hlopipe.torch._generation import Returns, export_generation
from hlopipe.torch._markers import (
    ATTRIBUTE,
    CUSTOM_CALL_TARGET,
    KEEP_MARKERS_XLA_FLAGS,
    mark_stages,
    op,
)
from hlopipe.torch._trace import MANIFEST as MANIFEST
from hlopipe.torch._training import TRAINING_FORMAT as TRAINING_FORMAT
from hlopipe.torch._training import export_training

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
