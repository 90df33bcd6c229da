"""hlopipe: take an XLA program apart and run it as a pipeline.

Public names are loaded lazily so that ``from hlopipe import schedules`` (pure Python) does not
import JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

from hlopipe.errors import (
    DistributedError,
    HlopipeError,
    LoadError,
    RehydrateError,
    RuntimeConfigError,
    ScheduleError,
    StageError,
    UnsupportedOpError,
)

__version__ = "0.1.0"

# public name -> (module, attribute); attribute None means the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    "load": ("hlopipe.io", "load"),
    "Program": ("hlopipe.io", "Program"),
    # the package is callable: hlopipe.rehydrate(...) == hlopipe.rehydrate.rehydrate(...)
    "rehydrate": ("hlopipe.rehydrate", None),
    "register_custom_call": ("hlopipe.rehydrate", "register_custom_call"),
    # callable too: hlopipe.decompile(program) == hlopipe.decompile.decompile(program)
    "decompile": ("hlopipe.decompile", None),
    "stage_boundary": ("hlopipe.marker", "stage_boundary"),
    "split": ("hlopipe.stages", "split"),
    "StagedProgram": ("hlopipe.stages", "StagedProgram"),
    "Pipeline": ("hlopipe.runtime", "Pipeline"),
    "Generator": ("hlopipe.generate", "Generator"),
    "io": ("hlopipe.io", None),
    "stages": ("hlopipe.stages", None),
    "schedules": ("hlopipe.schedules", None),
    "runtime": ("hlopipe.runtime", None),
    "training": ("hlopipe.training", None),
    "models": ("hlopipe.models", None),
    "distributed": ("hlopipe.runtime.distributed", None),
}

__all__ = [
    "DistributedError",
    "HlopipeError",
    "LoadError",
    "RehydrateError",
    "RuntimeConfigError",
    "ScheduleError",
    "StageError",
    "UnsupportedOpError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'hlopipe' has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
