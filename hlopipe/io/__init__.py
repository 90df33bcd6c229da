"""Loading XLA programs of every format into a :class:`Program`, and export to text."""

from hlopipe.io._detect import detect_format
from hlopipe.io._dump import dump_modules
from hlopipe.io._load import FORMATS, load, load_bytes
from hlopipe.io._program import Program
from hlopipe.io._types import TokenType, aval_of_type, dtype_of, parse_tensor_type

__all__ = [
    "FORMATS",
    "Program",
    "TokenType",
    "aval_of_type",
    "detect_format",
    "dtype_of",
    "dump_modules",
    "load",
    "load_bytes",
    "parse_tensor_type",
]
