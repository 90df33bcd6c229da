"""Decompilation: an XLA program back to readable JAX source that a person can edit and run.

``hlopipe.decompile(program)`` is :func:`decompile` (the package is callable, as
``hlopipe.rehydrate`` is)."""

import sys
import types
from typing import Any

from hlopipe.decompile import (
    _patterns,  # noqa: F401  (registers the multi-equation folds)
    emitters,  # noqa: F401  (registers one emitter per primitive)
)
from hlopipe.decompile._decompile import STYLES, Decompiled, decompile, format_source
from hlopipe.decompile._source import DecompileError

__all__ = ["STYLES", "DecompileError", "Decompiled", "decompile", "format_source"]


class _CallablePackage(types.ModuleType):
    """``hlopipe.decompile`` is both this package and the function: importing a submodule sets
    the package as ``hlopipe``'s attribute, so the package itself calls :func:`decompile`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Decompiled:
        return decompile(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
