"""Decompilation: an XLA program back to readable JAX source that a person can edit and run."""

from hlopipe.decompile import (
    _patterns,  # noqa: F401  (registers the multi-equation folds)
    emitters,  # noqa: F401  (registers one emitter per primitive)
)
from hlopipe.decompile._decompile import STYLES, Decompiled, decompile, format_source
from hlopipe.decompile._source import DecompileError

__all__ = ["STYLES", "DecompileError", "Decompiled", "decompile", "format_source"]
