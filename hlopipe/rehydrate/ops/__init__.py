"""Every op family module; importing this package registers every rule.

A test checks that each module under ``ops/`` is imported here.
"""

from hlopipe.rehydrate.ops import (  # noqa: F401
    chlo,
    collectives,
    control_flow,
    convolution,
    custom_call,
    elementwise,
    fft,
    gpu,
    linalg,
    normalization,
    quantize,
    random,
    reduce,
    shape,
    slicing,
    sort,
    windowed,
)
