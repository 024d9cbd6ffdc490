"""lax.fft in compiled CPU programs: the eager implementation's library (lax/fft_library.py:
ducc0, or scipy.fft's pocketfft; float32 kept in float32), with as many workers as the thread
runtime gives the transform's work."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler.cpu.runtime import threads
from numbax._src.lax import fft_library

# pocketfft's serial time per element and log2 of the length, for the thread count: rfft2 of
# 1024^2 float32 took 2.5 ms on one core of the 2-core VM (docs/performance.md, issue 18)
NS_PER_ELEMENT_LOG = 0.12


def fft(x: np.ndarray, fft_type: int, fft_lengths: tuple, dtype: np.dtype) -> list[np.ndarray]:
    """lax.fft's FftType `fft_type` (0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT) over the last
    len(fft_lengths) axes, as the eager implementation computes it."""
    size = max(x.size, 2)
    workers = threads.threads_for(size * math.log2(size) * NS_PER_ELEMENT_LOG)
    out = fft_library.transform(x, fft_type, tuple(fft_lengths), workers)
    return [np.asarray(out, dtype=dtype, order="C")]
