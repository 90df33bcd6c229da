"""``stablehlo.fft``: FFT, IFFT, RFFT and IRFFT over the trailing ``fft_length`` dimensions."""

from __future__ import annotations

from typing import Any

from jax import lax

from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate.registry import RuleContext, rule

_TYPES = {
    "FFT": lax.FftType.FFT,
    "IFFT": lax.FftType.IFFT,
    "RFFT": lax.FftType.RFFT,
    "IRFFT": lax.FftType.IRFFT,
}


@rule("stablehlo.fft")
def fft(ctx: RuleContext, x: Any, *, fft_type: str, fft_length: tuple[int, ...]) -> Any:
    kind = _TYPES.get(str(fft_type))
    if kind is None:
        raise UnsupportedOpError(
            f"stablehlo.fft with fft_type {fft_type} at {ctx.loc} is not supported "
            f"(known: {', '.join(_TYPES)})"
        )
    return lax.fft(x, kind, tuple(int(n) for n in fft_length))
