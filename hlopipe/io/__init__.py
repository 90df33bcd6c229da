"""Loading XLA programs of every format into a :class:`Program`, and export to text."""

from hlopipe.io._detect import detect_format
from hlopipe.io._dump import dump_modules
from hlopipe.io._inplace import output_sources
from hlopipe.io._load import FORMATS, load, load_bytes
from hlopipe.io._npz import load_npz
from hlopipe.io._program import Program, format_aval
from hlopipe.io._roles import ArgRole, ArgRoles, Use
from hlopipe.io._types import (
    DynamicAval,
    Quantized,
    QuantizedAval,
    TokenType,
    aval_of_type,
    dtype_of,
    mlir_name,
    parse_tensor_type,
)

__all__ = [
    "output_sources",
    "ArgRole",
    "ArgRoles",
    "FORMATS",
    "DynamicAval",
    "Program",
    "Quantized",
    "QuantizedAval",
    "TokenType",
    "Use",
    "aval_of_type",
    "detect_format",
    "dtype_of",
    "dump_modules",
    "format_aval",
    "load",
    "load_bytes",
    "load_npz",
    "mlir_name",
    "parse_tensor_type",
]
