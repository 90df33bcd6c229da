"""Rehydration: turn a StableHLO module back into a JAX function, one ``jax.lax`` rule per op."""

import sys
import types
from typing import Any

from hlopipe.rehydrate._interpreter import Interpreter, raise_if_unsupported, scan_unsupported
from hlopipe.rehydrate._ir import ModuleIR, attrs_from_text, is_float
from hlopipe.rehydrate._rehydrate import module_ir, rehydrate, uses_64bit
from hlopipe.rehydrate._sharding_text import hlo_sharding_spec, parse_sdy_shardings
from hlopipe.rehydrate.custom_calls import CUSTOM_CALLS, register_custom_call
from hlopipe.rehydrate.registry import RULES, Region, RuleContext, rule

__all__ = [
    "hlo_sharding_spec",
    "parse_sdy_shardings",
    "CUSTOM_CALLS",
    "RULES",
    "Interpreter",
    "ModuleIR",
    "Region",
    "RuleContext",
    "attrs_from_text",
    "is_float",
    "module_ir",
    "raise_if_unsupported",
    "register_custom_call",
    "rehydrate",
    "rule",
    "scan_unsupported",
    "uses_64bit",
]


class _CallablePackage(types.ModuleType):
    """``hlopipe.rehydrate`` is both this package and the function: importing a submodule sets
    the package as ``hlopipe``'s attribute, so the package itself calls :func:`rehydrate`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return rehydrate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
