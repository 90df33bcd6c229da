"""XLA's parsers, converters and CPU compiler, as the loader uses them.

The private jax/jaxlib names behind them live in :mod:`hlopipe._jax_compat`.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
from jax.extend import backend as jex_backend
from jax.extend import mlir as jex_mlir
from jaxlib.mlir import ir

from hlopipe import _jax_compat as compat
from hlopipe._jax_compat import mlir as jax_mlir

JaxRuntimeError = jax.errors.JaxRuntimeError


def make_context() -> ir.Context:
    """An MLIR context with every dialect JAX registers (stablehlo, chlo, mhlo, sdy, func...)."""
    ctx = jax_mlir.make_ir_context()
    # Ops of dialects we do not know (e.g. the `check` dialect of StableHLO's tests) still parse.
    ctx.allow_unregistered_dialects = True
    return ctx


def hlo_module_from_text(text: str) -> Any:
    """Parse HLO text with XLA's own parser (raises JaxRuntimeError with line:column)."""
    return compat.hlo_module_from_text(text)


def hlo_module_from_proto(data: bytes) -> Any:
    """Parse a serialized HloModuleProto with XLA's own parser."""
    return compat.hlo_module_from_proto(data)


def hlo_module_to_stablehlo_bytes(module: Any) -> bytes:
    """HLO module -> StableHLO MLIR bytecode, with XLA's converter."""
    return jex_mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())


def hlo_proto_to_stablehlo_bytes(proto: bytes) -> bytes:
    """Serialized HloModuleProto -> StableHLO MLIR bytecode, with XLA's converter."""
    return jex_mlir.hlo_to_stablehlo(proto)


def mhlo_to_stablehlo(data: bytes) -> bytes:
    return bytes(compat.mhlo_to_stablehlo(data))


def deserialize_portable_artifact(data: bytes) -> Any:
    """A VHLO portable artifact (what jax.export stores) -> a StableHLO module in the current
    context (or its text, in jaxlib versions that give text)."""
    return jex_mlir.deserialize_portable_artifact(data)


@functools.cache
def empty_portable_artifact() -> bytes:
    """An empty module as a StableHLO portable artifact (deserializing it loads, into the
    current context, the dialects artifacts may use: ``quant`` among them)."""
    with make_context():
        return bytes(jex_mlir.serialize_portable_artifact(ir.Module.parse("module {}"), "1.0.0"))


def stablehlo_to_hlo_text(module_text: str) -> str:
    """StableHLO module text -> HLO text, with XLA's converter."""
    comp = compat.mlir_module_to_xla_computation(
        module_text, use_tuple_args=False, return_tuple=False
    )
    return str(comp.as_hlo_text())


def stablehlo_to_hlo_module(module_text: str) -> Any:
    return hlo_module_from_text(stablehlo_to_hlo_text(module_text))


def cost_analysis(hlo_module: Any) -> dict[str, float]:
    """XLA's cost analysis (flops, bytes accessed, ...) of an HLO module on the CPU backend."""
    backend = jex_backend.get_backend("cpu")
    return dict(compat.hlo_module_cost_analysis(backend, hlo_module))


def compile_stablehlo(module_text: str, num_devices: int = 1) -> Any:
    """Compile a StableHLO module directly with XLA on CPU devices (the --reference xla path).

    With JAX's own compile options: XLA's defaults differ (e.g. a fast min/max mode that drops
    NaNs), and the reference is what a JAX user's program got from XLA.
    """
    import numpy as np

    backend = jex_backend.get_backend("cpu")
    devices = backend.local_devices()[:num_devices]
    options = jex_backend.get_compile_options(
        num_replicas=1,
        num_partitions=num_devices,
        device_assignment=np.array(devices).reshape(1, num_devices),
        backend=backend,
    )
    if num_devices > 1:
        options.executable_build_options.use_spmd_partitioning = True
    device_list = compat.DeviceList(tuple(devices))
    with make_context() as ctx:
        del ctx
        mod = ir.Module.parse(module_text)
        data = jax_mlir.module_to_bytecode(mod)
    return backend.compile_and_load(data, device_list, options)


def error_text(e: BaseException) -> str:
    """An XLA/MLIR error's message on one line, without XLA's status prefix."""
    msg = str(e)
    msg = msg.replace("INVALID_ARGUMENT: ", "")
    return " ".join(msg.split())[:2000]
