"""Arrays from an ``.npz`` file (``np.savez``), for the values a command reads: parameters,
batches, inputs. Anything else (a text file, a single ``.npy``, pickled objects) is refused
with the file's name and the keyword (or flag) that gave it."""

from __future__ import annotations

import zipfile
from typing import Any

import numpy as np

from hlopipe.errors import HlopipeError, Keyword

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


def load_npz(path: str, keyword: str = "path") -> tuple[list[str], list[Any]]:
    """The names and arrays of an .npz file, in order.

    Args:
      path: the file.
      keyword: the argument that gave ``path``, named by the error (a command names it by its
        flag, ``--params``).

    Returns:
      the names and the arrays, in the file's order.

    Raises:
      HlopipeError: the file cannot be read, or is not an .npz of arrays.
    """
    kw = Keyword(keyword, path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_NPY_MAGIC))
    except OSError as e:
        raise HlopipeError(kw, f": cannot read it ({e.strerror or e})") from None
    if head.startswith(_NPY_MAGIC):
        raise HlopipeError(kw, ": a single .npy array, not an .npz file (np.savez)")
    if not head.startswith(_ZIP_MAGIC):
        raise HlopipeError(kw, ": not an .npz of arrays (write one with np.savez)")
    try:
        with np.load(path, allow_pickle=False) as f:
            return list(f.files), [f[k] for k in f.files]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        # a damaged archive, or members that are pickled objects rather than arrays
        why = str(e).split(". ")[0] if "pickle" not in str(e) else "it holds pickled objects"
        raise HlopipeError(kw, f": not an .npz of arrays ({why})") from None
