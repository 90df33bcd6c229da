"""The custom-call registry: JAX implementations of ``stablehlo.custom_call`` targets.

``register_custom_call(target, fn)`` lets a user supply any target; hlopipe's own ones are
registered with :func:`builtin` by the op families (``ops/custom_call.py``: sharding markers,
``mhlo.*`` ops; ``ops/linalg.py``: the LAPACK targets JAX emits on CPU). The rule of the op
``stablehlo.custom_call`` (``ops/custom_call.py``) looks the target up here. An
implementation has the rule signature ``fn(ctx, *operands, **attrs)``, where attrs holds the
op's attributes (``backend_config``, ``api_version``, ...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from hlopipe.rehydrate.registry import ScopedTable, register_by_name

CustomCallImpl = Callable[..., Any]

CUSTOM_CALLS: dict[str, CustomCallImpl] = {}

# targets of a tool's own (the conformance runner's ``@check.*``), only inside
# :func:`scoped_custom_calls`; CUSTOM_CALLS itself never changes for them
_LAYERS: ScopedTable[CustomCallImpl] = ScopedTable(CUSTOM_CALLS, "custom calls")


def scoped_custom_calls(
    impls: Mapping[str, CustomCallImpl],
) -> contextlib.AbstractContextManager[None]:
    """Make ``impls`` (target -> implementation) visible beside :data:`CUSTOM_CALLS` to
    interpreters running in this context, for the duration; a registered target is refused."""
    return _LAYERS.scope(impls)


def find_custom_call(target: str) -> CustomCallImpl | None:
    """The implementation of ``target``: the registered one, else a scoped one."""
    return _LAYERS.find(target)


def register_custom_call(target: str, fn: CustomCallImpl, *, replace: bool = False) -> None:
    """Supply a JAX implementation for the custom-call ``target``.

    Args:
      target: the ``call_target_name`` of the custom call.
      fn: ``fn(ctx, *operands, **attrs)`` returning one array or a tuple of arrays; ``ctx`` is
        a :class:`~hlopipe.rehydrate.registry.RuleContext` (``ctx.result_avals`` has the
        expected result shapes). A plain ``fn(*operands)`` is accepted too.
      replace: allow replacing an existing implementation (a built-in one included).

    Example:
      >>> hlopipe.register_custom_call("my_gelu", lambda x: jax.nn.gelu(x))
    """
    if target in CUSTOM_CALLS and not replace:
        raise ValueError(f"custom call {target!r} already has an implementation; pass replace=True")
    CUSTOM_CALLS[target] = _adapt(fn)


def _adapt(fn: CustomCallImpl) -> CustomCallImpl:
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    takes_ctx = bool(params) and params[0].name == "ctx"
    if takes_ctx:
        return fn

    def call(ctx: Any, *operands: Any, **attrs: Any) -> Any:
        del ctx, attrs
        return fn(*operands)

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


# the custom calls a backend compiler writes into an optimised program: the kernels of its
# libraries (cuBLAS, cuDNN, CUB, Triton, Mosaic, ...), named ``__lib$kernel`` on GPUs and
# ``tpu_custom_call`` on TPUs
_COMPILER_TARGET_PREFIXES = ("__", "tpu_", "mosaic", "xla_gpu", "xla_tpu", "cu_", "hip_")


def unknown_target_advice(target: str) -> str:
    """What to do about a custom call with no implementation: register one, or, for a
    backend compiler's kernel, load the program dumped before the compiler's passes."""
    advice = f"Register one with hlopipe.register_custom_call({target!r}, fn)"
    if target.startswith(_COMPILER_TARGET_PREFIXES):
        advice += (
            ", or, as it is a kernel of XLA's GPU/TPU compiler that hlopipe has no published "
            "semantics for, load the program dumped before XLA's passes (the "
            "'*.before_optimizations.txt' file next to it under --xla_dump_to)"
        )
    return advice


def builtin(*targets: str) -> Callable[[CustomCallImpl], CustomCallImpl]:
    """Register hlopipe's own implementation of each custom-call target, as :func:`rule`
    registers an op's rule (the same :func:`~hlopipe.rehydrate.registry.register_by_name`):
    a target registered twice is an error. The op family modules use it (the targets JAX emits
    in ``ops/linalg.py``, sharding markers in ``ops/custom_call.py``); a user replaces one with
    :func:`register_custom_call` and ``replace=True``."""
    return register_by_name(CUSTOM_CALLS, targets, "a custom-call implementation")
