"""MLIR types -> numpy/JAX dtypes and avals."""

from __future__ import annotations

import re
from dataclasses import dataclass

import jax
import ml_dtypes
import numpy as np

from hlopipe.errors import UnsupportedOpError

_DTYPES: dict[str, np.dtype] = {
    "i1": np.dtype(bool),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}
# Sub-byte and fp8 types, where ml_dtypes has them.
for _name, _attr in [
    ("i2", "int2"),
    ("ui2", "uint2"),
    ("i4", "int4"),
    ("ui4", "uint4"),
    ("f8E4M3FN", "float8_e4m3fn"),
    ("f8E5M2", "float8_e5m2"),
    ("f8E4M3FNUZ", "float8_e4m3fnuz"),
    ("f8E5M2FNUZ", "float8_e5m2fnuz"),
    ("f8E4M3B11FNUZ", "float8_e4m3b11fnuz"),
    ("f8E4M3", "float8_e4m3"),
    ("f8E3M4", "float8_e3m4"),
    ("f8E8M0FNU", "float8_e8m0fnu"),
    ("f4E2M1FN", "float4_e2m1fn"),
    ("f6E2M3FN", "float6_e2m3fn"),
    ("f6E3M2FN", "float6_e3m2fn"),
]:
    if hasattr(ml_dtypes, _attr):
        _DTYPES[_name] = np.dtype(getattr(ml_dtypes, _attr))

_NAMES = {v: k for k, v in _DTYPES.items()}
# `index` only appears in attributes (e.g. dense<...> : tensor<2xindex>); read it as int64.
_DTYPES["index"] = np.dtype(np.int64)

TOKEN = "!stablehlo.token"


class TokenType:
    """Stands for `!stablehlo.token` in signatures (a token is an empty array at run time)."""

    def __repr__(self) -> str:
        return "token"


@dataclass(frozen=True)
class Quantized:
    """A quantized element type ``!quant.uniform<storage<min:max>:expressed[:axis], params>``:
    values are held as ``storage`` integers, each meaning ``(q - zero_point) * scale`` of the
    ``expressed`` type; per-axis types have one (scale, zero_point) per index of ``axis``."""

    storage: np.dtype
    expressed: np.dtype
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None
    storage_min: int
    storage_max: int


class QuantizedAval(jax.ShapeDtypeStruct):
    """The aval of a quantized tensor: the shape and the storage dtype, and its
    :class:`Quantized` type as ``quant``."""

    def __init__(self, shape: tuple[int, ...], quant: Quantized) -> None:
        super().__init__(shape, quant.storage)
        self.quant = quant


_QUANT = re.compile(
    r"^!quant\.uniform<(?P<storage>[a-z]+\d+)(?:<(?P<min>-?\d+):(?P<max>-?\d+)>)?"
    r":(?P<expressed>\w+)(?::(?P<axis>\d+))?,\s*(?P<params>.*)>$",
    re.S,
)
_SCALE_ZP = re.compile(r"\s*([-+0-9.eE]+|0x[0-9a-fA-F]+)\s*(?::\s*(-?\d+))?\s*")


def quantized_of(element_type: str) -> Quantized:
    """``!quant.uniform<...>`` (per tensor or per axis) -> :class:`Quantized`."""
    m = _QUANT.match(element_type.strip())
    if m is None:
        raise UnsupportedOpError(f"quantized element type {element_type!r} is not supported")
    storage = dtype_of(m.group("storage"))
    expressed = dtype_of(m.group("expressed"))
    params = m.group("params").strip()
    if m.group("axis") is not None:
        params = params.removeprefix("{").removesuffix("}")
    scales, zps = [], []
    for part in params.split(","):
        pm = _SCALE_ZP.fullmatch(part)
        if pm is None:
            raise UnsupportedOpError(f"cannot read the scale:zero_point {part!r} of {element_type}")
        scale = pm.group(1)
        scales.append(
            float(np.array(int(scale, 16), np.uint64).view(np.float64))
            if scale.startswith("0x")
            else float(scale)
        )
        zps.append(int(pm.group(2) or 0))
    try:
        info = ml_dtypes.iinfo(storage)
    except (ValueError, TypeError):
        raise UnsupportedOpError(
            f"quantized storage type of {element_type} is not an integer"
        ) from None
    lo = int(m.group("min")) if m.group("min") is not None else int(info.min)
    hi = int(m.group("max")) if m.group("max") is not None else int(info.max)
    axis = int(m.group("axis")) if m.group("axis") is not None else None
    return Quantized(storage, expressed, tuple(scales), tuple(zps), axis, lo, hi)


def dtype_of(element_type: str) -> np.dtype:
    if element_type.startswith("!quant."):
        return quantized_of(element_type).storage
    try:
        return _DTYPES[element_type]
    except KeyError:
        raise UnsupportedOpError(
            f"element type {element_type!r} is not supported (supported: {', '.join(_DTYPES)})"
        ) from None


def mlir_name(dtype: np.dtype) -> str:
    return _NAMES[np.dtype(dtype)]


_TENSOR = re.compile(r"^tensor<(?P<body>.*)>$", re.S)


class DynamicAval:
    """A ranked tensor type with dynamic dimensions (``tensor<?x2xf32>``): ``shape`` holds
    None for each ``?``. Values of such types inside a function get their sizes when they are
    computed; a program's own arguments must be static (:func:`aval_of_type`)."""

    def __init__(self, shape: tuple[int | None, ...], dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"DynamicAval({dims}, {self.dtype})"


def parse_tensor_type(text: str, dynamic: bool = False) -> tuple[tuple[int, ...], np.dtype]:
    """'tensor<2x3xf32>' -> ((2, 3), float32). Encodings (`, #sdy...`) are ignored. A ``?``
    dimension is refused unless ``dynamic``, which reads it as None."""
    text = text.strip()
    m = _TENSOR.match(text)
    if m is None:
        raise UnsupportedOpError(f"type {text} is not a ranked tensor type")
    body = m.group("body")
    # Drop an encoding after a top-level comma.
    depth = 0
    for i, ch in enumerate(body):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == "," and depth == 0:
            body = body[:i]
            break
    parts: list[int | None] = []
    rest = body
    while True:
        m2 = re.match(r"^(\?|\d+)x", rest)
        if not m2:
            break
        # a bounded dynamic dimension (XLA's padded tensors: ``#stablehlo.bounds<4>``) has a
        # size that changes at run time: refused either way
        if m2.group(1) == "?" and (not dynamic or "bounds<" in text):
            raise UnsupportedOpError(
                f"dynamic shape in {text}: refine the shapes first "
                "(jax.export with concrete shapes)"
            )
        parts.append(None if m2.group(1) == "?" else int(m2.group(1)))
        rest = rest[m2.end() :]
    return tuple(parts), dtype_of(rest)  # type: ignore[arg-type]


def aval_of_type(t: object, dynamic: bool = False) -> jax.ShapeDtypeStruct | TokenType:
    """An MLIR type (object or text) -> jax.ShapeDtypeStruct, or TokenType for tokens; with
    ``dynamic``, a type with ``?`` dimensions -> :class:`DynamicAval`."""
    text = str(t)
    if text == TOKEN:
        return TokenType()
    if text.startswith("tuple<"):
        raise UnsupportedOpError(f"tuple type {text} in a signature: flatten it first")
    shape, dtype = parse_tensor_type(text, dynamic)
    if None in shape:
        return DynamicAval(shape, dtype)  # type: ignore[return-value]
    if "!quant." in text:
        element = text[text.index("!quant.") :].removesuffix(">")
        return QuantizedAval(shape, quantized_of(_balanced(element)))
    return jax.ShapeDtypeStruct(shape, dtype)


def _balanced(text: str) -> str:
    """The leading ``name<...>`` of ``text`` (its brackets balanced)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                return text[: i + 1]
    return text
