"""Python source pieces: expressions with their precedence, literals, parameters, constants."""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jax import lax

from hlopipe.errors import HlopipeError


class DecompileError(HlopipeError):
    """The program uses something the decompiler cannot write as JAX source."""


# Python operator precedences, lowest first (the ones the emitter writes).
CMP, OR, XOR, AND, SHIFT, ADD, MUL, UNARY, POW, ATOM = range(10)


@dataclass(frozen=True)
class Expr:
    """A Python expression, its precedence, and the named values it reads."""

    text: str
    prec: int = ATOM
    deps: frozenset[Any] = field(default_factory=frozenset)

    def wrap(self, prec: int, right: bool = False) -> str:
        """The text to use as an operand of an operator of precedence ``prec``."""
        if self.prec < prec or (self.prec == prec and (right or prec == CMP)):
            return f"({self.text})"
        return self.text


def dtype_name(dtype: Any) -> str:
    """``jnp.float32`` for a dtype."""
    name = np.dtype(dtype).name
    if name == "bool":
        return "jnp.bool_"
    import jax.numpy as jnp

    if not hasattr(jnp, name):
        raise DecompileError(f"dtype {name} has no jax.numpy name")
    return f"jnp.{name}"


def scalar(v: Any, dtype: Any) -> str:
    """A Python literal for one value of ``dtype`` (no dtype attached)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return repr(bool(v))
    if np.issubdtype(dt, np.integer):
        return repr(int(v))
    if np.issubdtype(dt, np.complexfloating):
        c = complex(v)
        return f"complex({scalar(c.real, np.float64)}, {scalar(c.imag, np.float64)})"
    f = float(np.asarray(v).astype(np.float64))
    if math.isnan(f):
        return "np.nan"
    if math.isinf(f):
        return "np.inf" if f > 0 else "-np.inf"
    if dt.itemsize < 8:
        # the shortest text that reads back as the same value of this dtype: 1e-05, not
        # 9.999999747378752e-06 (checked, so the source stays exact)
        short = repr(dt.type(v)).removeprefix(f"np.{dt.name}(").removesuffix(")")
        try:
            if np.asarray(float(short)).astype(dt) == np.asarray(v).astype(dt):
                return repr(float(short))
        except ValueError:
            pass
    return repr(f)


def typed_scalar(v: Any, dtype: Any) -> str:
    """A scalar of exactly ``dtype``: ``np.float32(1.0)``, ``jnp.bfloat16(0.5)``."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return f"np.bool_({scalar(v, dt)})"
    if isinstance(getattr(np, dt.name, None), type):
        return f"np.{dt.name}({scalar(v, dt)})"
    return f"{dtype_name(dt)}({scalar(v, dt)})"


def nested_list(a: np.ndarray) -> str:
    if a.ndim == 0:
        return scalar(a[()], a.dtype)
    return "[" + ", ".join(nested_list(x) for x in a) + "]"


def array_literal(a: np.ndarray) -> str:
    """``jnp.array([...], dtype=...)``, or ``jnp.full`` when every element is the same."""
    a = np.asarray(a)
    dt = dtype_name(a.dtype)
    if a.size and a.ndim and np.all(a == a.flat[0]) and not np.isnan(a.flat[0]).any():
        return f"jnp.full({param(tuple(a.shape))}, {scalar(a.flat[0], a.dtype)}, dtype={dt})"
    return f"jnp.array({nested_list(a)}, dtype={dt})"


def param(v: Any) -> str:
    """A Python expression for an equation parameter (shapes, dtypes, lax enums, ...)."""
    if v is None or isinstance(v, (bool, str)):
        return repr(v)
    if isinstance(v, enum.Enum):  # before int: lax.FftType is an IntEnum
        cls = type(v)
        if getattr(lax, cls.__name__, None) is cls:
            return f"lax.{cls.__name__}.{v.name}"
        raise DecompileError(f"cannot write the parameter {v!r} as source")
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    if isinstance(v, float):
        return scalar(v, np.float64)
    if isinstance(v, type(lax.add_p)):
        attr = v.name.replace("-", "_") + "_p"
        if getattr(lax, attr, None) is v:
            return f"lax.{attr}"
        raise DecompileError(f"cannot write the primitive parameter {v.name} as source")
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        tcls = type(v)
        if getattr(lax, tcls.__name__, None) is tcls:
            inner = ", ".join(f"{f}={param(getattr(v, f))}" for f in v._fields)
            return f"lax.{tcls.__name__}({inner})"
        raise DecompileError(f"cannot write the parameter {v!r} as source")
    if isinstance(v, (tuple, list)):
        items = [param(x) for x in v]
        if isinstance(v, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return dtype_name(v)
    try:
        dt = np.dtype(v)
    except TypeError:
        dt = None
    if dt is not None and not isinstance(v, np.ndarray):
        return dtype_name(dt)
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        return typed_scalar(a[()], a.dtype) if a.ndim == 0 else array_literal(a)
    raise DecompileError(f"cannot write the parameter {v!r} ({type(v).__name__}) as source")


_IDENT = re.compile(r"[^0-9a-zA-Z_]")
_RESERVED = {
    "jax",
    "jnp",
    "lax",
    "np",
    "hlopipe",
    "main",
    "carry",
    "xs",
    "lambda",
    "def",
    "return",
    "class",
    "in",
    "is",
    "if",
    "else",
    "for",
    "while",
    "and",
    "or",
    "not",
    "None",
    "True",
    "False",
    "pass",
    "del",
    "from",
    "import",
    "as",
    "with",
    "try",
    "global",
    "yield",
    "async",
    "await",
    "assert",
    "break",
    "continue",
    "elif",
    "except",
    "finally",
    "nonlocal",
    "raise",
}


def identifier(name: str) -> str:
    """A valid, lower-case Python identifier made from ``name``."""
    s = _IDENT.sub("_", name).strip("_").lower()
    s = re.sub(r"_+", "_", s)
    if not s or s[0].isdigit():
        s = "v_" + s
    if s in _RESERVED:
        s += "_"
    return s
