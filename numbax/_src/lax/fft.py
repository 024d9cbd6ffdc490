"""fft: the FFT primitive (complex, inverse, real and inverse-real transforms over the last one
to three axes), linear, so its transpose gives reverse mode."""
from __future__ import annotations

import enum
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import fft_library, shape_ops


class FftType(enum.IntEnum):
    """Which FFT operation lax.fft performs."""

    FFT = 0
    "Forward complex-to-complex FFT."
    IFFT = 1
    "Inverse complex-to-complex FFT."
    RFFT = 2
    "Forward real-to-complex FFT."
    IRFFT = 3
    "Inverse real-to-complex FFT (a complex half-spectrum to a real signal)."


_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}
_REAL = {c: r for r, c in _COMPLEX.items()}

# fft_type is kept as a plain int in the params (JAX prints it the same way), so equations hash,
# print and render as data.
fft_p = Primitive("fft")


def _fft_abstract_eval(x: ShapedArray, *, fft_type: int, fft_lengths) -> list[ShapedArray]:
    kind = FftType(fft_type).name
    k = len(fft_lengths)
    if k > x.ndim or not 1 <= k <= 3:
        raise NumbaxValueError(
            f"lax.fft: operand has shape {x.shape} and fft_lengths {fft_lengths}, expected 1 to "
            f"3 fft_lengths and at most one per operand dimension.")
    if fft_type == FftType.RFFT:
        if x.dtype not in _COMPLEX:
            raise NumbaxTypeError(
                f"lax.fft: operand has dtype {x.dtype}, expected float32 or float64 for RFFT.")
        dtype = _COMPLEX[x.dtype]
        shape = x.shape[:-k] + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
        minor = x.shape[-k:]
    else:
        if kind_of(x.dtype) != "c":
            raise NumbaxTypeError(
                f"lax.fft: operand has dtype {x.dtype}, expected complex64 or complex128 for "
                f"{kind}.")
        if fft_type == FftType.IRFFT:
            dtype, shape, minor = _REAL[x.dtype], x.shape[:-k] + tuple(fft_lengths), None
            if x.shape[-k:-1] != tuple(fft_lengths[:-1]):
                raise NumbaxValueError(
                    f"lax.fft: operand has shape {x.shape}, expected its minor dimensions but "
                    f"the last to equal fft_lengths[:-1] = {tuple(fft_lengths[:-1])} (IRFFT).")
        else:
            dtype, shape, minor = x.dtype, x.shape, x.shape[-k:]
    if minor is not None and minor != tuple(fft_lengths):
        raise NumbaxValueError(
            f"lax.fft: operand has shape {x.shape}, expected its {k} minor dimensions to equal "
            f"fft_lengths {tuple(fft_lengths)} ({kind}).")
    return [ShapedArray(shape, dtype)]


def _workers(size: int) -> int:
    """Threads for the FFT library: all cores for large transforms, one for small ones."""
    return (os.cpu_count() or 1) if size >= 1 << 16 else 1


def _fft_impl(x, *, fft_type: int, fft_lengths):
    return [fft_library.transform(x, fft_type, tuple(fft_lengths), _workers(x.size))]


def _rfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
    """RFFT is the full FFT of a real signal cut to n // 2 + 1 bins: transpose the cut (zero
    padding), the FFT (itself: the DFT matrix is symmetric) and the real-to-complex step
    (the real part)."""
    ct_aval = get_aval(ct)
    n = fft_lengths[-1]
    config = [(0, 0, 0)] * (ct_aval.ndim - 1) + [(0, n - ct_aval.shape[-1], 0)]
    full = shape_ops.pad(ct, np.array(0, ct_aval.dtype), config)
    return ew.real(fft_p.bind(full, fft_type=int(FftType.FFT), fft_lengths=fft_lengths))


def _irfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
    """IRFFT reads each of the bins that stand for two conjugate bins twice: the transpose is
    the RFFT of the cotangent, scaled by 1/N and doubled on those bins, then conjugated (the
    convention of the real/imag/complex transposes)."""
    x = fft_p.bind(ct, fft_type=int(FftType.RFFT), fft_lengths=fft_lengths)
    aval = get_aval(x)
    m, n = aval.shape[-1], fft_lengths[-1]
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    weights = (weights / math.prod(fft_lengths)).astype(aval.dtype)
    scale = shape_ops.broadcast_in_dim(weights, aval.shape, (aval.ndim - 1,))
    return ew.conj(ew.mul(x, scale))


def _fft_transpose(cts, x, *, fft_type: int, fft_lengths):
    (ct,) = cts
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_batch(axis_size, vals, dims, *, fft_type: int, fft_lengths):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    return [fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)], [0]


core.abstract_eval_rules[fft_p] = _fft_abstract_eval
core.impl_rules[fft_p] = _fft_impl
ad.deflinear(fft_p, _fft_transpose)
batching.batch_rules[fft_p] = _fft_batch


def _fft_type(value: Any) -> FftType:
    if isinstance(value, FftType):
        return value
    if isinstance(value, str) and value.upper() in FftType.__members__:
        return FftType[value.upper()]
    raise NumbaxValueError(
        f"lax.fft: fft_type has {value!r}, expected a lax.FftType or one of 'fft', 'ifft', "
        "'rfft', 'irfft'.")


def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Any:
    """Fast Fourier transform over the last len(fft_lengths) (1 to 3) axes of x.

    Args:
      x: the operand; converted to complex (FFT, IFFT, IRFFT) or to a real floating dtype
        (RFFT).
      fft_type: FftType.FFT, IFFT (scaled by 1/N), RFFT (real input, the n // 2 + 1
        non-negative frequencies of the last axis) or IRFFT (the inverse of RFFT), or their
        names as strings.
      fft_lengths: the transform's sizes: those of x's minor axes (for IRFFT, the output's).

    Returns:
      The transform.

    >>> import numpy as np
    >>> fft(np.array([1., 0., 0., 0.]), "rfft", (4,))
    Array([1.+0.j, 1.+0.j, 1.+0.j], dtype=complex128)
    """
    typ = _fft_type(fft_type)
    try:
        lengths = tuple(int(n) for n in fft_lengths)
    except TypeError:
        raise NumbaxTypeError(
            f"lax.fft: fft_lengths has {fft_lengths!r}, expected a sequence of ints.") from None
    aval = get_aval(x)
    if typ == FftType.RFFT:
        if kind_of(aval.dtype) == "c":
            raise NumbaxTypeError(
                f"lax.fft: x has dtype {aval.dtype}, expected a real dtype for RFFT. Use FFT for "
                "complex input.")
        if aval.dtype not in _COMPLEX:
            x = ew.convert_element_type(x, _inexact(aval.dtype))
    elif kind_of(aval.dtype) != "c":
        x = ew.convert_element_type(x, _COMPLEX[_inexact(aval.dtype)])
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=int(typ), fft_lengths=lengths)


def _inexact(dtype: np.dtype) -> np.dtype:
    """The real floating dtype numbax promotes `dtype` to (float32 stays, else float64)."""
    if dtype == np.float32 or dtype == np.float16:
        return np.dtype(np.float32)
    return dtypes.canonicalize_dtype(np.float64)
