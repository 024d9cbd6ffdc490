"""The FFT library lax.fft runs on, eagerly and in compiled CPU programs alike (one function,
so jit gives eager's bits): ducc0, pocketfft's successor by its author (vectorised across
lines, and threads for a single long transform), where it is installed (a dependency of
numbax); scipy.fft's pocketfft otherwise. On the 2-core VM ducc0 took 0.4-0.9x scipy's time:
rfft2 of 8 x 512^2 float32 2.7 against 4.4 ms on one core, an FFT of 2^20 complex64 2.8
against 8.9 ms on two."""
from __future__ import annotations

import functools

import numpy as np
import scipy  # scipy.fft: imported at first use (scipy loads subpackages lazily)

FFT, IFFT, RFFT, IRFFT = 0, 1, 2, 3  # lax.FftType's values
_SCIPY = ("fftn", "ifftn", "rfftn", "irfftn")
_DUCC_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                               np.complex128))


@functools.cache
def _ducc0():
    """ducc0, imported at the first transform (every virtual device's worker imports numbax),
    or None on a platform without its wheel."""
    try:
        import ducc0
    except ImportError:
        return None
    return ducc0


def transform(x: np.ndarray, fft_type: int, fft_lengths: tuple, workers: int) -> np.ndarray:
    """lax.fft's `fft_type` of x over its last len(fft_lengths) axes on `workers` threads:
    unnormalised forward transforms, inverse ones scaled by 1/n (numpy's "backward")."""
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    ducc0 = _ducc0()
    if ducc0 is None or x.size == 0 or x.dtype not in _DUCC_DTYPES:
        scipy_transform = getattr(scipy.fft, _SCIPY[fft_type])
        if fft_type == IRFFT:
            return scipy_transform(x, s=tuple(fft_lengths), axes=axes, workers=workers)
        return scipy_transform(x, axes=axes, workers=workers)
    if fft_type == FFT:
        return ducc0.fft.c2c(x, axes=axes, forward=True, nthreads=workers)
    if fft_type == IFFT:
        return ducc0.fft.c2c(x, axes=axes, forward=False, inorm=2, nthreads=workers)
    if fft_type == RFFT:
        return ducc0.fft.r2c(x, axes=axes, forward=True, nthreads=workers)
    bins = fft_lengths[-1] // 2 + 1  # the input's last axis cut or zero-padded to these, as scipy
    if x.shape[-1] != bins:
        x = np.pad(x[..., :bins], [(0, 0)] * (x.ndim - 1) + [(0, bins - min(bins, x.shape[-1]))])
    return ducc0.fft.c2r(x, axes=axes, lastsize=fft_lengths[-1], forward=False, inorm=2,
                         nthreads=workers)
