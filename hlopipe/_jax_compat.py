"""Every private or version-dependent jax/jaxlib name hlopipe uses, in one place.

hlopipe was written for jax and jaxlib 0.10.2 (``pyproject.toml`` pins them). The names below
are not public API: a jax release may move, rename or drop any of them without notice. They
are looked up once, here, when hlopipe is imported, so an upgrade touches this file only:

* on another jax version, importing hlopipe warns once (:class:`JaxVersionWarning`) and names
  what to re-check: the entries of :data:`PRIVATE_NAMES` and the XLA pass in
  :data:`BARRIER_EXPANDER_PASS`;
* when one of the names is missing, importing hlopipe fails with a :class:`HlopipeError`
  naming it and the jax version found.

``jax.interpreters`` (``ad``, ``batching``, ``mlir``: the primitive-rule tables and the MLIR
lowering helpers) and ``jax.core.ShapedArray`` are importable in jax 0.10.2 but are legacy
namespaces jax keeps moving into ``jax._src`` and ``jax.extend``, so they are taken here too
and imported from here (``tests/test_jax_compat.py`` looks for them elsewhere).

Wherever jax 0.10.2 has a public name for what hlopipe needs, the code uses that instead:
``jax.extend.backend``'s
``get_backend`` / ``get_compile_options``, ``jax.extend.mlir.hlo_to_stablehlo``,
``jax.distributed.is_initialized`` and the ``coordinator_bind_address`` of
``jax.distributed.initialize``.

This module sits on the ground floor: it imports jax, jaxlib and :mod:`hlopipe.errors`
(which imports nothing).
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jaxlib

from hlopipe.errors import HlopipeError

__all__ = [
    "BARRIER_EXPANDER_PASS",
    "DeviceList",
    "HLO_TEXT_PARSER",
    "JAX_VERSION",
    "JaxVersionWarning",
    "PRIVATE_NAMES",
    "ShapedArray",
    "Tracer",
    "ad",
    "batching",
    "check_jax_version",
    "distributed_client",
    "geqrf",
    "get_distributed_runtime_service",
    "hlo_module_cost_analysis",
    "hlo_module_from_proto",
    "hlo_module_from_text",
    "is_tracer",
    "mhlo_to_stablehlo",
    "mlir",
    "mlir_module_to_xla_computation",
    "no_coordination_service",
]

#: The jax (and jaxlib) version every name here was checked against.
JAX_VERSION = "0.10.2"

#: What hlopipe takes from jax/jaxlib internals: name here -> (module, attribute path), and
#: what it is used for (shown when the name is missing).
PRIVATE_NAMES: dict[str, tuple[str, str, str]] = {
    "hlo_module_from_text": ("jaxlib._hlo", "hlo_module_from_text", "XLA's HLO text parser"),
    "HloModule": ("jaxlib._hlo", "HloModule", "HloModuleProto parsing"),
    "mhlo_to_stablehlo": ("jaxlib._jax", "mlir.mhlo_to_stablehlo", "MHLO -> StableHLO"),
    "mlir_module_to_xla_computation": (
        "jaxlib._jax",
        "mlir.mlir_module_to_xla_computation",
        "StableHLO -> HLO text",
    ),
    "hlo_module_cost_analysis": (
        "jaxlib._jax",
        "hlo_module_cost_analysis",
        "XLA's cost analysis of an HLO module",
    ),
    "DeviceList": ("jaxlib._jax", "DeviceList", "compiling a module for a list of devices"),
    "batched_copy": (
        "jaxlib._jax",
        "batched_copy_array_to_devices_with_sharding",
        "moving arrays between two devices of this process per generated token",
    ),
    "ArrayCopySemantics": ("jaxlib._jax", "ArrayCopySemantics", "the same"),
    "get_distributed_runtime_service": (
        "jaxlib._jax",
        "get_distributed_runtime_service",
        "hosting the coordination service in `hlopipe launch`",
    ),
    "geqrf": ("jax._src.lax.linalg", "geqrf", "the LAPACK geqrf custom call"),
    "distributed_state": (
        "jax._src.distributed",
        "global_state",
        "the jax.distributed client (key-value store)",
    ),
    "distributed_module": (
        "jax._src.distributed",
        "",
        "process 0 joining a coordination service hosted elsewhere",
    ),
    "distributed_jaxlib": (
        "jax._src.distributed",
        "_jax",
        "process 0 joining a coordination service hosted elsewhere",
    ),
    "Tracer": ("jax.core", "Tracer", "telling traced values from concrete ones"),
    "ShapedArray": ("jax.core", "ShapedArray", "the abstract values of a primitive's results"),
    "ad": ("jax.interpreters.ad", "", "the JVP and transpose rules of hlopipe's primitives"),
    "batching": ("jax.interpreters.batching", "", "the batching rules of hlopipe's primitives"),
    "mlir": (
        "jax.interpreters.mlir",
        "",
        "lowering rules, MLIR contexts and types, bytecode, portable artifacts",
    ),
}

#: The XLA pass that removes optimisation barriers (hence stage markers) on CPU; disabled by
#: ``hlopipe.marker.KEEP_MARKERS``. XLA pass names are not API: re-check on an upgrade.
BARRIER_EXPANDER_PASS = "cse_barrier_expander"

#: ``(module, name)`` of XLA's HLO text parser, for the guard process of ``io/_guard.py``,
#: which imports only that (not jax) to start fast.
HLO_TEXT_PARSER = (PRIVATE_NAMES["hlo_module_from_text"][0], "hlo_module_from_text")


class JaxVersionWarning(UserWarning):
    """hlopipe runs on a jax version other than the one it was written for."""


_warned = False


def version_message(version: str) -> str:
    """What to do on a jax version other than :data:`JAX_VERSION`."""
    names = ", ".join(sorted({f"{m}.{a}" if a else m for m, a, _ in PRIVATE_NAMES.values()}))
    return (
        f"hlopipe was written for jax {JAX_VERSION} but runs on jax {version}: it uses jax "
        f"internals that may have changed ({names}; the XLA pass {BARRIER_EXPANDER_PASS!r}). "
        f"Install jax=={JAX_VERSION} jaxlib=={JAX_VERSION} (the versions constraints.txt pins), or "
        "re-check those names in hlopipe/_jax_compat.py and run `make test`."
    )


def check_jax_version(version: str | None = None) -> bool:
    """Warn once (:class:`JaxVersionWarning`) when ``version`` (default: jax's) is not the
    version hlopipe was written for; return whether it is."""
    global _warned
    version = jax.__version__ if version is None else version
    if version == JAX_VERSION:
        return True
    if not _warned:
        _warned = True
        warnings.warn(version_message(version), JaxVersionWarning, stacklevel=2)
    return False


def resolve(module: str, path: str, purpose: str = "") -> Any:
    """``module.path``, or a :class:`HlopipeError` naming it and the jax version."""
    try:
        obj: Any = importlib.import_module(module)
        for part in path.split(".") if path else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        name = f"{module}.{path}" if path else module
        raise HlopipeError(
            f"jax {jax.__version__} / jaxlib {jaxlib.__version__} has no {name}, which hlopipe "
            f"uses for {purpose or 'its work'}; hlopipe was written for jax {JAX_VERSION}: "
            f"install jax=={JAX_VERSION} jaxlib=={JAX_VERSION}, or update hlopipe/_jax_compat.py"
        ) from None
    return obj


check_jax_version()
_names = {key: resolve(*where) for key, where in PRIVATE_NAMES.items()}

hlo_module_from_text = _names["hlo_module_from_text"]
_HloModule = _names["HloModule"]
mhlo_to_stablehlo = _names["mhlo_to_stablehlo"]
mlir_module_to_xla_computation = _names["mlir_module_to_xla_computation"]
hlo_module_cost_analysis = _names["hlo_module_cost_analysis"]
DeviceList = _names["DeviceList"]
get_distributed_runtime_service = _names["get_distributed_runtime_service"]
geqrf = _names["geqrf"]
Tracer: type = _names["Tracer"]
ShapedArray: type = _names["ShapedArray"]
ad = _names["ad"]
batching = _names["batching"]
mlir = _names["mlir"]
_distributed_state = _names["distributed_state"]
_batched_copy = _names["batched_copy"]
_REUSE_INPUT = _names["ArrayCopySemantics"].REUSE_INPUT
_distributed_module = _names["distributed_module"]


def hlo_module_from_proto(data: bytes) -> Any:
    """Parse a serialized HloModuleProto with XLA's own parser."""
    return _HloModule.from_serialized_hlo_module_proto(data)


def device_to_device(
    devices: Sequence[Any], shardings: Sequence[Any] | None = None
) -> Callable[..., list[Any]]:
    """A function copying arrays, each committed to one device of this process, one to each of
    ``devices``, in one call: the copy ``jax.device_put`` makes for such arrays, without its
    Python checks (about a fifth of its host time on CPU). Only for arrays on one device each,
    bound for one device each; anything else goes through ``jax.device_put``.

    ``shardings``: the copies' shardings, one per device, each on that device alone (default
    ``SingleDeviceSharding``); a one-device ``NamedSharding`` an executable was compiled for
    gives copies it takes as ``device_put``'s would."""
    lists = [DeviceList((d,)) for d in devices]
    if shardings is None:
        shardings = [jax.sharding.SingleDeviceSharding(d) for d in devices]
    shardings = list(shardings)
    semantics = [_REUSE_INPUT] * len(devices)

    def move(*values: Any) -> list[Any]:
        return _batched_copy(values, lists, shardings, semantics)

    return move


def is_tracer(x: Any) -> bool:
    """Whether ``x`` is a value being traced (its value is not known at trace time)."""
    return isinstance(x, Tracer)


def distributed_client() -> Any:
    """The ``jax.distributed`` client of this process (its key-value store), or ``None``."""
    return _distributed_state.client


@contextlib.contextmanager
def no_coordination_service() -> Iterator[None]:
    """While ``jax.distributed.initialize`` runs, process 0 connects to a coordination service
    hosted elsewhere instead of starting one (jax 0.10.2 starts it in process 0
    unconditionally, with no option to leave it out)."""
    real = _distributed_module._jax
    assert real is _names["distributed_jaxlib"]

    class _WithoutService:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        @staticmethod
        def get_distributed_runtime_service(*args: Any, **kwargs: Any) -> None:
            return None

    _distributed_module._jax = _WithoutService()
    try:
        yield
    finally:
        _distributed_module._jax = real
