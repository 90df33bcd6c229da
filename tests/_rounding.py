"""Bounds on float rounding that a test states instead of a count of ULP seen on one machine.

How many ULP a compiled kernel loses depends on the processor's vector width and on the
compiler's optimisation (the order in which it sums), so a bound of "a few ULP" measured on one
CPU fails on another. A bound derived from the computation holds on any IEEE machine.
"""

from __future__ import annotations

import numpy as np


def reordering_bound(terms: int, depth: int, scale: float, dtype=np.float32) -> float:
    """An absolute bound on how far apart two evaluations of one computation can be when they
    differ only in the order of their sums (two frameworks' kernels, two vector widths).

    Each sum of at most ``terms`` terms is within ``gamma_n = n u / (1 - n u)`` of the exact
    sum, relative to the sum of its terms' magnitudes (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., section 3.1), so two evaluations are within twice that; to
    first order the errors of ``depth`` chained sums add. ``scale`` bounds the sums of the
    terms' magnitudes (the largest value reached, with a margin for cancellation).
    """
    u = float(np.finfo(dtype).eps) / 2
    gamma = terms * u / (1 - terms * u)
    return 2 * depth * gamma * scale
