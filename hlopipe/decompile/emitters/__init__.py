"""One emitter per jax primitive, one module per primitive family (as ``rehydrate/ops/``): the
plain ``jax.lax`` call that binds exactly that equation. The registry and the helpers the
families share are ``decompile/_prims.py``; importing this package registers every family."""

from hlopipe.decompile.emitters import (  # noqa: F401  (each registers its emitters)
    contraction,
    control_flow,
    elementwise,
    fft,
    marker,
    random,
    reduce,
    shape,
    slicing,
    sort,
)
