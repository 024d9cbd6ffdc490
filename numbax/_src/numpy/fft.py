"""numpy.fft on traced arrays (jnp.fft): every transform is lax.fft over moved, cropped or padded
axes, with numpy's norm= conventions; plus the frequency helpers and shifts."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.fft import FftType
from numbax._src.lax.fft import fft as lax_fft
from numbax._src.numpy.flips import roll
from numbax._src.numpy.lax_numpy import asarray
from numbax._src.numpy.shapes import moveaxis

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_factor(name: str, norm: str | None, inverse: bool,
                 lengths: Sequence[int]) -> float | None:
    """The factor numpy's norm= puts on top of the unnormalised forward / 1/N inverse pair."""
    if norm is None or norm == "backward":
        return None
    n = float(math.prod(lengths))
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1 / math.sqrt(n)
    if norm == "forward":
        return n if inverse else 1 / n
    raise NumbaxValueError(
        f"numbax.numpy.fft.{name}: norm has {norm!r}, expected None, 'backward', 'ortho' or "
        "'forward'.")


def _on_axes(x: Any, typ: FftType, axes: Sequence[int], lengths: Sequence[int]) -> Any:
    """lax.fft over `axes` (at most 3, the minor ones of x after a move), moved back."""
    ndim = get_aval(x).ndim
    minor = tuple(range(ndim - len(axes), ndim))
    x = moveaxis(x, tuple(axes), minor)
    x = lax_fft(x, typ, tuple(lengths))
    return moveaxis(x, minor, tuple(axes))


def _transform(x: Any, typ: FftType, axes: list[int], lengths: list[int]) -> Any:
    """A transform over any number of axes as chunks of at most three: the real (R/IR) step
    takes the chunk holding the last axis, after (RFFT) or before (IRFFT) the complex ones."""
    if len(axes) <= 3:
        return _on_axes(x, typ, axes, lengths)
    head, tail = axes[:-3], axes[-3:]
    head_len, tail_len = lengths[:-3], lengths[-3:]
    if typ in (FftType.FFT, FftType.RFFT):
        x = _on_axes(x, typ, tail, tail_len)
        return _transform(x, FftType.FFT, head, head_len)
    x = _transform(x, FftType.IFFT, head, head_len)
    return _on_axes(x, typ, tail, tail_len)


def _canonical_axes(name: str, ndim: int, axes: Sequence[int]) -> list[int]:
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise NumbaxValueError(
                f"numbax.numpy.fft.{name}: axis {a} is out of bounds for an array of rank "
                f"{ndim}.")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise NumbaxValueError(f"numbax.numpy.fft.{name}: axes {tuple(axes)} repeat an axis.")
    return out


def _resize(x: Any, axis: int, size: int) -> Any:
    """x cropped or zero-padded at the end of `axis` to `size`."""
    shape = get_aval(x).shape
    if shape[axis] == size:
        return x
    if shape[axis] > size:
        return shape_ops.slice_in_dim(x, 0, size, axis=axis)
    config = [(0, 0, 0)] * len(shape)
    config[axis] = (0, size - shape[axis], 0)
    return shape_ops.pad(x, np.array(0, get_aval(x).dtype), config)


def _fft_core(name: str, typ: FftType, a: Any, s: Sequence[int] | None,
              axes: Sequence[int] | None, norm: str | None) -> Any:
    _norm_factor(name, norm, False, [1])  # validates norm before any work
    x = asarray(a)
    ndim = get_aval(x).ndim
    if typ == FftType.RFFT and kind_of(get_aval(x).dtype) == "c":
        raise NumbaxTypeError(
            f"numbax.numpy.fft.{name}: a has dtype {get_aval(x).dtype}, expected real input. "
            "Use fft/fftn for complex input.")
    if s is not None:
        try:
            s = [operator.index(n) for n in s]
        except TypeError:
            raise NumbaxTypeError(
                f"numbax.numpy.fft.{name}: s has {s!r}, expected a sequence of ints.") from None
        if any(n <= 0 for n in s):
            raise NumbaxValueError(
                f"numbax.numpy.fft.{name}: s has {tuple(s)}, expected positive sizes.")
        if axes is not None and len(s) != len(axes):
            raise NumbaxValueError(
                f"numbax.numpy.fft.{name}: s has {len(s)} entries and axes {len(axes)}, "
                "expected equal lengths.")
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = _canonical_axes(name, ndim, axes)
    if not axes:
        return x
    shape = get_aval(x).shape
    if s is None:
        lengths = [shape[a] for a in axes]
        if typ == FftType.IRFFT:
            lengths[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        lengths = list(s)
    if typ == FftType.IRFFT and lengths[-1] < 1:
        raise NumbaxValueError(
            f"numbax.numpy.fft.{name}: a has shape {shape}, which gives an output length "
            f"{lengths[-1]} along axis {axes[-1]}; pass n (or s) explicitly.")
    for a, n in zip(axes, lengths):  # crop or zero-pad the input to the transform's size
        x = _resize(x, a, n // 2 + 1 if typ == FftType.IRFFT and a == axes[-1] else n)
    out = _transform(x, typ, axes, lengths)
    factor = _norm_factor(name, norm, typ in (FftType.IFFT, FftType.IRFFT), lengths)
    if factor is not None:
        out = ew.mul(out, np.array(factor, get_aval(out).dtype))
    return out


def _axis_list(name: str, n: int | None, axis: int) -> tuple[list[int] | None, list[int]]:
    if not isinstance(axis, (int, np.integer)):
        raise NumbaxTypeError(f"numbax.numpy.fft.{name}: axis has {axis!r}, expected an int.")
    return (None if n is None else [n]), [axis]


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.fft: the 1-D discrete Fourier transform along `axis`.

    >>> fft(np.array([1., 2., 3., 4.]))
    Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex128)
    """
    return _fft_core("fft", FftType.FFT, a, *_axis_list("fft", n, axis), norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.ifft: the 1-D inverse discrete Fourier transform along `axis`."""
    return _fft_core("ifft", FftType.IFFT, a, *_axis_list("ifft", n, axis), norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.rfft: the 1-D transform of real input (the n // 2 + 1 non-negative
    frequencies)."""
    return _fft_core("rfft", FftType.RFFT, a, *_axis_list("rfft", n, axis), norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.irfft: the inverse of rfft (n defaults to 2 * (a.shape[axis] - 1))."""
    return _fft_core("irfft", FftType.IRFFT, a, *_axis_list("irfft", n, axis), norm)


def _swap_norm(name: str, norm: str | None) -> str:
    """hfft is irfft of the conjugate, and ihfft the conjugated rfft, with the direction of
    the scaling swapped (numpy's definition)."""
    swapped = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    if norm not in swapped:
        _norm_factor(name, norm, False, [1])
    return swapped[norm]


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.hfft: the (real) transform of a Hermitian-symmetric signal given by its first
    half; n defaults to 2 * (a.shape[axis] - 1).

    >>> hfft(np.array([1., 2., 3.]))
    Array([ 8., -2.,  0., -2.], dtype=float64)
    """
    x = asarray(a)
    if kind_of(get_aval(x).dtype) == "c":
        x = ew.conj(x)
    return _fft_core("hfft", FftType.IRFFT, x, *_axis_list("hfft", n, axis),
                     _swap_norm("hfft", norm))


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """numpy.fft.ihfft: the inverse of hfft (the conjugated, 1/n-scaled half spectrum of real
    input)."""
    out = _fft_core("ihfft", FftType.RFFT, a, *_axis_list("ihfft", n, axis),
                    _swap_norm("ihfft", norm))
    return ew.conj(out)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    """numpy.fft.fft2: the 2-D transform over `axes`."""
    return _fft_core("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """numpy.fft.ifft2: the 2-D inverse transform over `axes`."""
    return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """numpy.fft.rfft2: the 2-D transform of real input over `axes`."""
    return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    """numpy.fft.irfft2: the inverse of rfft2."""
    return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    """numpy.fft.fftn: the N-D transform over `axes` (all, or the last len(s), by default).

    >>> fftn(np.ones((2, 2)))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex128)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """numpy.fft.ifftn: the N-D inverse transform."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """numpy.fft.rfftn: the N-D transform of real input (halved along the last axis)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    """numpy.fft.irfftn: the inverse of rfftn."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def _freq_dtype(name: str, dtype: Any) -> np.dtype:
    if dtype is None:
        return dtypes.default_float_dtype()
    dt = dtypes.canonicalize_dtype(dtype, context=f"numbax.numpy.fft.{name}")
    if kind_of(dt) not in "fc":
        raise NumbaxTypeError(
            f"numbax.numpy.fft.{name}: dtype has {dt}, expected a floating dtype.")
    return dt


def _check_n(name: str, n: Any) -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise NumbaxTypeError(f"numbax.numpy.fft.{name}: n has {n!r}, expected an int.") from None
    if n <= 0:
        raise NumbaxValueError(f"numbax.numpy.fft.{name}: n has {n}, expected a positive int.")
    return n


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.fft.fftfreq: the sample frequencies [0, 1, ..., -2, -1] / (d * n) of an n-point
    transform.

    Args:
      n: the window length.
      d: the sample spacing (a scalar, possibly traced).
      dtype: the result's floating dtype (default float64, or float32 without x64).
      device: Unlike JAX: accepted and ignored (results live on the default device).

    Returns:
      An array of n frequencies.

    >>> fftfreq(4, 0.5)
    Array([ 0. ,  0.5, -1. , -0.5], dtype=float64)
    """
    del device
    n = _check_n("fftfreq", n)
    dt = _freq_dtype("fftfreq", dtype)
    k = np.arange(n)
    k = np.where(k < (n + 1) // 2, k, k - n).astype(dt)
    return ew.div(asarray(k), ew.mul(asarray(asarray(d, dtype=dt)), np.array(n, dt)))


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """numpy.fft.rfftfreq: the n // 2 + 1 non-negative sample frequencies of rfft.

    Args:
      n, d, dtype, device: as in fftfreq.

    Returns:
      An array of n // 2 + 1 frequencies.

    >>> rfftfreq(5)
    Array([0. , 0.2, 0.4], dtype=float64)
    """
    del device
    n = _check_n("rfftfreq", n)
    dt = _freq_dtype("rfftfreq", dtype)
    k = np.arange(n // 2 + 1).astype(dt)
    return ew.div(asarray(k), ew.mul(asarray(asarray(d, dtype=dt)), np.array(n, dt)))


def _shift(name: str, x: Any, axes: Any, sign: int) -> Any:
    x = asarray(x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = _canonical_axes(name, len(shape), axes)
    if not axes:
        return x
    return roll(x, tuple(sign * (shape[a] // 2) for a in axes), tuple(axes))


def fftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """numpy.fft.fftshift: moves the zero frequency to the centre of `axes` (default all).

    >>> fftshift(np.arange(5))
    Array([3, 4, 0, 1, 2], dtype=int64)
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """numpy.fft.ifftshift: the inverse of fftshift."""
    return _shift("ifftshift", x, axes, -1)
