"""Matrix rows for fft: the four transform types over one to three minor axes."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(180)
X, Y = RNG.normal(size=(2, 4, 6)), RNG.normal(size=(2, 4, 6))


def cases() -> dict[str, list[Case]]:
    def complex_fft(kind, lengths):
        return lambda x, y: lax.fft(lax.complex(x, y), kind, lengths)

    half_re, half_im = RNG.normal(size=(2, 4, 4)), RNG.normal(size=(2, 4, 4))
    return {"fft": [
        Case(complex_fft("fft", (6,)), (X, Y), (0, 1)),
        Case(complex_fft(lax.FftType.IFFT, (4, 6)), (X, Y), (0, 1)),
        Case(lambda x: lax.fft(x, "rfft", (2, 4, 6)), (X,), (0,)),
        Case(complex_fft("irfft", (4, 7)), (half_re, half_im), (0, 1)),
        Case(complex_fft("irfft", (6,)), (half_re, half_im), (0, 1)),
        Case(lambda x: lax.fft(x, "rfft", (6,)), (X.astype(np.float32),)),
    ]}
