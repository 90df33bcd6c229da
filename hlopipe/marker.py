"""The ``stage_boundary`` marker: an identity primitive that says "cut the pipeline here".

``stage_boundary(*xs)`` returns its arguments unchanged. It is a real JAX primitive, so it
stays visible in jaxprs (where :mod:`hlopipe.stages` cuts at it), passes through ``jax.grad``,
``jax.jvp``, ``jax.linearize``, ``jax.vmap`` and ``jax.jit`` (tangents and cotangents go through
a marker of their own, so derived programs keep the stage structure), and lowers to
``stablehlo.optimization_barrier`` carrying the frontend attribute ``hlopipe.stage_boundary``.
XLA compiles the barrier as a no-op, HLO text keeps the attribute
(``opt-barrier(...), frontend_attributes={hlopipe.stage_boundary="..."}``), and rehydration
turns such a barrier back into this marker (see :func:`is_stage_boundary_attrs`, the one test
of "is this op a marker" that loading, rehydration and the CLI share).

Compiling removes optimisation barriers (XLA's CPU pipeline runs its barrier expander), so
``jax.jit(f).lower(...).compile().as_text()`` has no markers left, unless compiled with
:data:`KEEP_MARKERS` (``.compile(compiler_options=hlopipe.marker.KEEP_MARKERS)``): then the
barriers and their attribute stay, the compiled program computes the same, and the
post-optimisation HLO splits at its markers like the text before optimisation.
``hlopipe split --at-markers`` on a post-optimisation program without markers says so
(:attr:`hlopipe.Program.optimized`).

This module imports JAX (and the ground-floor `hlopipe._jax_compat`) only: it sits below
every other room of hlopipe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
from jax.extend import source_info_util
from jax.extend.core import Primitive

from hlopipe._jax_compat import BARRIER_EXPANDER_PASS, ad, batching, mlir

__all__ = [
    "ATTRIBUTE",
    "KEEP_MARKERS",
    "is_stage_boundary_attrs",
    "stage_boundary",
    "stage_boundary_p",
]

# error messages and source locations point at the caller, not at this module
source_info_util.register_exclusion(__file__)

#: The frontend attribute that marks an ``optimization_barrier`` as a stage boundary.
ATTRIBUTE = "hlopipe.stage_boundary"

#: Compiler options that keep the markers through XLA's optimisation passes: the barrier
#: expander (the pass that drops optimisation barriers on CPU) is disabled. Pass them to
#: ``jax.jit(f).lower(...).compile(compiler_options=KEEP_MARKERS)``.
KEEP_MARKERS: dict[str, str] = {"xla_disable_hlo_passes": BARRIER_EXPANDER_PASS}

#: The primitive. One equation per marker call; its single parameter ``name`` is a string
#: (``""`` when the user gave none) that becomes the attribute's value (``"true"`` if empty).
stage_boundary_p = Primitive("stage_boundary")
stage_boundary_p.multiple_results = True


def stage_boundary(*xs: Any, name: str = "") -> Any:
    """Mark a pipeline stage boundary: the identity on any pytree.

    Everything computed before the marker belongs to the earlier stage, everything after to
    the later one. With one positional argument the (pytree) argument is returned; with
    several, a tuple of them.

    Args:
      *xs: pytrees of arrays (or Python scalars) to pass across the boundary.
      name: optional label, kept as the value of the ``hlopipe.stage_boundary`` attribute.

    Returns:
      ``xs[0]`` if one argument was given, else the tuple ``xs``, unchanged in value.

    Example:
      >>> import jax.numpy as jnp, hlopipe
      >>> def model(w, x):
      ...     h = jnp.tanh(x @ w[0])
      ...     h = hlopipe.stage_boundary(h)
      ...     return h @ w[1]
    """
    leaves, tree = jax.tree_util.tree_flatten(xs)
    if not leaves:
        return xs[0] if len(xs) == 1 else xs
    outs = stage_boundary_p.bind(*leaves, name=str(name))
    out = jax.tree_util.tree_unflatten(tree, outs)
    return out[0] if len(xs) == 1 else out


def is_stage_boundary_attrs(attrs: Mapping[str, Any] | Any) -> bool:
    """True if ``attrs`` (an op's frontend attributes) mark a stage boundary.

    Accepts a plain mapping (``{"hlopipe.stage_boundary": "true"}``), an MLIR ``DictAttr``
    (the value of an op's ``mhlo.frontend_attributes``), or an MLIR operation / its
    ``attributes``. Rehydration calls this on each ``stablehlo.optimization_barrier``.

    Example:
      >>> is_stage_boundary_attrs({"hlopipe.stage_boundary": "true"})
      True
    """
    if attrs is None:
        return False
    op_attrs = getattr(attrs, "attributes", None)
    if op_attrs is not None and not isinstance(attrs, Mapping):
        attrs = op_attrs
    if not isinstance(attrs, Mapping) and "mhlo.frontend_attributes" in _safe_keys(attrs):
        attrs = attrs["mhlo.frontend_attributes"]
    if isinstance(attrs, Mapping):
        if ATTRIBUTE in attrs:
            return True
        inner = attrs.get("mhlo.frontend_attributes")
        return inner is not None and is_stage_boundary_attrs(inner)
    return ATTRIBUTE in _safe_keys(attrs)


def _safe_keys(attrs: Any) -> set[str]:
    """Names held by an MLIR attribute dict / op attribute map, or an empty set."""
    try:
        return {a.name for a in attrs}  # NamedAttribute iteration (ir.DictAttr, op.attributes)
    except (TypeError, AttributeError):  # not iterable, or items without names
        try:
            return set(attrs)
        except TypeError:
            return set()


# --- rules ----------------------------------------------------------------------------------


def _impl(*xs, name):
    del name
    return list(xs)


def _abstract_eval(*avals, name):
    del name
    return list(avals)


def _jvp(primals, tangents, *, name):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return stage_boundary_p.bind(*primals, name=name), stage_boundary_p.bind(*tangents, name=name)


def _transpose(cts, *primals, name):
    del primals
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    return stage_boundary_p.bind(*cts, name=name)


def _batch(args, dims, *, name):
    return stage_boundary_p.bind(*args, name=name), dims


def _lower(ctx, *args, name):
    from jax.extend.mlir import ir, lower_with_sharding_in_types
    from jax.extend.mlir.dialects import stablehlo

    op = stablehlo.OptimizationBarrierOp(list(args))
    op.operation.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(
        {ATTRIBUTE: ir.StringAttr.get(name or "true")}
    )
    return [
        lower_with_sharding_in_types(ctx, r, aval)
        for r, aval in zip(op.results, ctx.avals_out, strict=True)
    ]


stage_boundary_p.def_impl(_impl)
stage_boundary_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[stage_boundary_p] = _jvp
ad.primitive_transposes[stage_boundary_p] = _transpose
batching.primitive_batchers[stage_boundary_p] = _batch
mlir.register_lowering(stage_boundary_p, _lower)
