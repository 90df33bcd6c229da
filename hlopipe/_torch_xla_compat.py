"""Every private torch_xla name hlopipe uses, in one place, with the versions it was checked
against.

torch_xla has no public way to ask which device data a lazy graph reads, in which order (the
order of the exported program's arguments), nor to put a frontend attribute on an op: those
are ``torch_xla._XLAC`` functions. Each is looked up here, on first use (this module imports
torch_xla only inside its functions and no JAX, so it runs in a PyTorch environment); a
torch_xla of another version than :data:`CHECKED_VERSIONS` warns once, naming what to check.
"""

from __future__ import annotations

import warnings
from typing import Any

#: The torch_xla versions (``major.minor``) these names were checked against.
CHECKED_VERSIONS = ("2.9",)

_WARNED: list[str] = []


def _xlac() -> Any:
    import torch_xla

    version = ".".join(str(torch_xla.__version__).split(".")[:2])
    if version not in CHECKED_VERSIONS and version not in _WARNED:
        _WARNED.append(version)
        warnings.warn(
            f"hlopipe's torch_xla calls were checked with torch_xla {', '.join(CHECKED_VERSIONS)}"
            f", not {torch_xla.__version__}: if an export fails, check the private names of "
            "hlopipe/_torch_xla_compat.py (_get_tensors_xla_device_data_node, "
            "_xla_get_tensor_id, _xla_optimization_barrier_, _xla_custom_call)",
            stacklevel=3,
        )
    return torch_xla._XLAC


def tensor_id(tensor: Any) -> int:
    """torch_xla's id of a device tensor (an updated tensor gets a new one)."""
    return int(_xlac()._xla_get_tensor_id(tensor))


def device_data(outputs: list[Any]) -> tuple[list[int], list[Any]]:
    """The device data the lazy graph of ``outputs`` reads, in the order of its program's
    arguments: ``(tensor ids, tensors)``; a scalar torch_xla lifted into an argument has an id
    no tensor of the caller has."""
    ids, tensors = _xlac()._get_tensors_xla_device_data_node(outputs)
    return [int(i) for i in ids], list(tensors)


def optimization_barrier_(tensors: list[Any]) -> None:
    """An ``optimization_barrier`` over ``tensors``, in place."""
    _xlac()._xla_optimization_barrier_(tensors)


def custom_call_with_attributes(x: Any, target: str, attributes: dict[str, str]) -> Any:
    """``x`` through the custom call ``target`` (one result, ``x``'s shape and dtype), carrying
    the frontend ``attributes``."""
    (out,) = _xlac()._xla_custom_call(
        [x], target, [list(x.shape)], [x.dtype], False, "", 1, attributes
    )
    return out
