"""scipy.signal's windowed-FFT family on traced arrays: stft, istft, csd and welch (one
spectral helper, as in scipy), with detrend for the segments."""
from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import concrete_or_error, get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.numpy import fft as jnp_fft
from numbax._src.numpy import linalg_ops, quantiles, reductions, ufuncs
from numbax._src.numpy.indexing import take
from numbax._src.numpy.lax_numpy import asarray, where
from numbax._src.numpy.padding import pad
from numbax._src.numpy.shapes import moveaxis

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _static_int(api: str, name: str, value: Any) -> int:
    value = concrete_or_error(value, f"scipy.signal.{api}: {name}")
    try:
        return operator.index(value)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.scipy.signal.{api}: {name} has {value!r}, expected an int.") from None


def detrend(data: Any, axis: int = -1, type: str = "linear",  # noqa: A002
            bp: Any = 0, overwrite_data: None = None) -> Any:
    """scipy.signal.detrend: removes the mean ('constant') or a least-squares line ('linear',
    piecewise between the breakpoints bp) along `axis`.

    Args:
      data: the array.
      axis: the axis to detrend.
      type: 'linear' (default) or 'constant'.
      bp: static breakpoints for the piecewise-linear fit.
      overwrite_data: must be None (arrays are immutable).

    Returns:
      The detrended data (floating).

    >>> import numpy as np
    >>> np.round(detrend(np.array([1., 2., 4.])), 12)
    Array([ 0.16666667, -0.33333333,  0.16666667], dtype=float64)
    """
    if overwrite_data is not None:
        raise NumbaxValueError("numbax.scipy.signal.detrend: overwrite_data has "
                               f"{overwrite_data!r}, expected None (arrays are immutable).")
    if type not in ("linear", "l", "constant", "c"):
        raise NumbaxValueError(
            f"numbax.scipy.signal.detrend: type has {type!r}, expected 'linear' or 'constant'.")
    (x,) = ufuncs.promote_dtypes_inexact("scipy.signal.detrend", asarray(data))
    ndim = get_aval(x).ndim
    axis = _static_int("detrend", "axis", axis)
    if not -ndim <= axis < max(ndim, 1):
        raise NumbaxValueError(
            f"numbax.scipy.signal.detrend: axis has {axis}, out of bounds for rank {ndim}.")
    if type in ("constant", "c"):
        return ufuncs.subtract(x, reductions.mean(x, axis=axis, keepdims=True))
    n = get_aval(x).shape[axis]
    points = np.unique(np.r_[0, np.asarray(bp, dtype=np.int64).ravel(), n])
    if points[0] < 0 or points[-1] > n:
        raise NumbaxValueError(
            f"numbax.scipy.signal.detrend: bp has {bp!r}, expected breakpoints in [0, {n}] "
            "(the length of data along axis).")
    x = moveaxis(x, axis, -1)
    dtype = get_aval(x).dtype
    real = finfo_of(dtype).dtype
    pieces = []
    for lo, hi in zip(points[:-1], points[1:]):
        count = int(hi - lo)
        design = np.stack([np.ones(count), np.arange(1, count + 1) / count], axis=1)
        solve = np.linalg.pinv(design).T.astype(real)  # segment @ solve: the line's coefs
        segment = shape_ops.slice_in_dim(x, int(lo), int(hi), axis=-1)
        fit = linalg_ops.matmul(linalg_ops.matmul(segment, asarray(solve)),
                                asarray(design.T.astype(real)))
        pieces.append(ufuncs.subtract(segment, fit))
    out = pieces[0] if len(pieces) == 1 else shape_ops.concatenate(pieces, get_aval(x).ndim - 1)
    return moveaxis(out, -1, axis)


# ----------------------------------------------------------------------------- spectral helper


def _window(api: str, window: Any, nperseg: int | None, length: int, dtype: np.dtype
            ) -> tuple[Any, int]:
    """The window as an array and the segment length (scipy's rules: a named window has
    nperseg samples, default 256 capped at the signal's length; an array sets nperseg)."""
    if isinstance(window, (str, tuple)):
        n = 256 if nperseg is None else nperseg
        if n > length:
            warnings.warn(f"scipy.signal.{api}: nperseg = {n} is greater than the input "
                          f"length = {length}, using nperseg = {length}", stacklevel=3)
            n = length
        import scipy.signal

        return asarray(scipy.signal.get_window(window, n).astype(dtype)), n
    win = asarray(window)
    if get_aval(win).ndim != 1:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: window has shape {get_aval(win).shape}, expected a "
            "1-D array (or a window name such as 'hann').")
    n = get_aval(win).shape[0]
    if length < n:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: window has length {n}, longer than the input "
            f"({length}).")
    if nperseg is not None and nperseg != n:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: nperseg has {nperseg}, expected the window's length "
            f"{n}.")
    return ew.convert_element_type(win, dtype) if get_aval(win).dtype != dtype else win, n


def _extend(x: Any, n: int, boundary: str) -> Any:
    """x extended by n samples at both ends of its last axis ('odd': point reflection)."""
    widths = [(0, 0)] * (get_aval(x).ndim - 1) + [(n, n)]
    if boundary == "zeros":
        return pad(x, widths)
    if boundary == "constant":
        return pad(x, widths, "edge")
    if boundary == "even":
        return pad(x, widths, "reflect")
    length = get_aval(x).shape[-1]
    if n > length - 1:
        raise NumbaxValueError(
            f"numbax.scipy.signal: boundary 'odd' extends by {n} samples, expected at most "
            f"{length - 1} (the input's length - 1).")
    left = shape_ops.slice_in_dim(x, 0, 1, axis=-1)
    right = shape_ops.slice_in_dim(x, length - 1, length, axis=-1)
    head = shape_ops.rev(shape_ops.slice_in_dim(x, 1, n + 1, axis=-1), (get_aval(x).ndim - 1,))
    tail = shape_ops.rev(shape_ops.slice_in_dim(x, length - n - 1, length - 1, axis=-1),
                         (get_aval(x).ndim - 1,))
    two = np.array(2, get_aval(x).dtype)
    return shape_ops.concatenate([ufuncs.subtract(ufuncs.multiply(two, left), head), x,
                                  ufuncs.subtract(ufuncs.multiply(two, right), tail)],
                                 get_aval(x).ndim - 1)


def _segments(x: Any, win: Any, detrend_fn: Callable, nperseg: int, step: int, nfft: int,
              twosided: bool) -> Any:
    """The windowed FFT of every segment of x's last axis: (..., segments, frequencies)."""
    length = get_aval(x).shape[-1]
    starts = np.arange(0, length - nperseg + 1, step)
    index = starts[:, None] + np.arange(nperseg)[None, :]
    frames = detrend_fn(take(x, index, axis=-1))
    frames = ufuncs.multiply(frames, win)
    if twosided:
        return jnp_fft.fft(frames, n=nfft)
    return jnp_fft.rfft(ufuncs.real(frames), n=nfft)


def _spectral(api: str, x: Any, y: Any, fs: Any, window: Any, nperseg: Any, noverlap: Any,
              nfft: Any, detrend_type: Any, return_onesided: bool, scaling: str, axis: int,
              mode: str, boundary: str | None = None, padded: bool = False):
    """scipy.signal._spectral_helper: (frequencies, segment times, spectra)."""
    if boundary not in (None, "even", "odd", "constant", "zeros"):
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: boundary has {boundary!r}, expected None, 'even', "
            "'odd', 'constant' or 'zeros'.")
    if scaling not in ("density", "spectrum"):
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: scaling has {scaling!r}, expected 'density' or "
            "'spectrum'.")
    if y is None:
        (x,) = ufuncs.promote_dtypes_inexact(f"scipy.signal.{api}", asarray(x))
    else:
        x, y = ufuncs.promote_dtypes_inexact(f"scipy.signal.{api}", asarray(x), asarray(y))
    ndim = get_aval(x).ndim
    axis = _static_int(api, "axis", axis)
    if ndim == 0 or not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: axis has {axis}, out of bounds for x of shape "
            f"{get_aval(x).shape}.")
    x = moveaxis(x, axis, -1)
    if y is not None:
        if get_aval(y).ndim != ndim:
            raise NumbaxValueError(
                f"numbax.scipy.signal.{api}: x has rank {ndim} and y rank {get_aval(y).ndim}, "
                "expected equal ranks.")
        y = moveaxis(y, axis, -1)
        lx, ly = get_aval(x).shape[-1], get_aval(y).shape[-1]
        if lx != ly:  # zero-pad the shorter one
            if lx < ly:
                x = pad(x, [(0, 0)] * (ndim - 1) + [(0, ly - lx)])
            else:
                y = pad(y, [(0, 0)] * (ndim - 1) + [(0, lx - ly)])
    dtype = get_aval(x).dtype
    real = finfo_of(dtype).dtype
    complex_dtype = np.result_type(real, np.complex64)
    length = get_aval(x).shape[-1]
    n_seg = None if nperseg is None else _static_int(api, "nperseg", nperseg)
    if n_seg is not None and n_seg < 1:
        raise NumbaxValueError(f"numbax.scipy.signal.{api}: nperseg has {n_seg}, expected a "
                               "positive int.")
    win, n_seg = _window(api, window, n_seg, length, real)
    n_over = n_seg // 2 if noverlap is None else _static_int(api, "noverlap", noverlap)
    n_fft = n_seg if nfft is None else _static_int(api, "nfft", nfft)
    if n_fft < n_seg:
        raise NumbaxValueError(f"numbax.scipy.signal.{api}: nfft has {n_fft}, expected nfft "
                               f">= nperseg ({n_seg}).")
    if not 0 <= n_over < n_seg:
        raise NumbaxValueError(f"numbax.scipy.signal.{api}: noverlap has {n_over}, expected "
                               f"0 <= noverlap < nperseg ({n_seg}).")
    step = n_seg - n_over
    if boundary is not None:
        x = _extend(x, n_seg // 2, boundary)
        y = None if y is None else _extend(y, n_seg // 2, boundary)
    if padded:
        extra = (-(get_aval(x).shape[-1] - n_seg) % step) % n_seg
        widths = [(0, 0)] * (ndim - 1) + [(0, extra)]
        x = pad(x, widths)
        y = None if y is None else pad(y, widths)
    if isinstance(detrend_type, str):
        detrend_fn = lambda d: detrend(d, axis=-1, type=detrend_type)  # noqa: E731
    elif callable(detrend_type):
        detrend_fn = detrend_type
    elif not detrend_type:
        detrend_fn = lambda d: d  # noqa: E731
    else:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api}: detrend has {detrend_type!r}, expected 'constant', "
            "'linear', False or a function.")
    if scaling == "density":
        scale = ufuncs.divide(1.0, ufuncs.multiply(fs, reductions.sum(ufuncs.square(win))))
    else:
        scale = ufuncs.divide(1.0, ufuncs.square(reductions.sum(win)))
    if mode == "stft":
        scale = ufuncs.sqrt(scale)
    is_complex = kind_of(dtype) == "c" or (y is not None and kind_of(get_aval(y).dtype) == "c")
    twosided = not return_onesided or is_complex
    if return_onesided and is_complex:
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    freq_fn = jnp_fft.fftfreq if twosided else jnp_fft.rfftfreq
    freqs = freq_fn(n_fft, ufuncs.divide(1.0, fs), dtype=real)
    result = _segments(x, win, detrend_fn, n_seg, step, n_fft, twosided)
    if y is not None:
        result = ufuncs.multiply(ufuncs.conj(result),
                                 _segments(y, win, detrend_fn, n_seg, step, n_fft, twosided))
    elif mode == "psd":
        result = ufuncs.multiply(ufuncs.conj(result), result)
    result = ufuncs.multiply(result, scale)
    if not twosided and mode == "psd":  # the one-sided spectrum folds in the negative bins
        weights = np.full(get_aval(result).shape[-1], 2.0, real)
        weights[0] = 1.0
        if n_fft % 2 == 0:
            weights[-1] = 1.0
        result = ufuncs.multiply(result, weights)
    times = np.arange(n_seg / 2, get_aval(x).shape[-1] - n_seg / 2 + 1, step)
    if boundary is not None:
        times = times - n_seg / 2
    times = ufuncs.divide(asarray(times.astype(real)), fs)
    result = ew.convert_element_type(result, complex_dtype)
    if y is None and mode != "stft":
        result = ufuncs.real(result)
    return freqs, times, moveaxis(result, -1, axis if axis >= 0 else axis - 1)


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """scipy.signal.stft: the short-time Fourier transform.

    Args:
      x: the signal (time along `axis`).
      fs: the sampling frequency.
      window: a scipy.signal.get_window name or tuple, or a 1-D array.
      nperseg: the segment length (capped at the signal's length).
      noverlap: samples shared by consecutive segments (default nperseg // 2).
      nfft: the FFT length (default nperseg).
      detrend: False, 'constant', 'linear' or a function of each segment.
      return_onesided: keep the non-negative frequencies only (real input).
      boundary: how to extend the signal by nperseg // 2 at both ends: 'zeros', 'even',
        'odd', 'constant' or None.
      padded: zero-pad the end to a whole number of segments.
      axis: the time axis.

    Returns:
      (frequencies, segment times, the STFT with frequencies then times in place of axis).

    >>> import numpy as np
    >>> f, t, z = stft(np.ones(8), nperseg=4)
    >>> z.shape
    (3, 5)
    """
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, "spectrum", axis, "stft", boundary, padded)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """scipy.signal.csd: the cross power spectral density by Welch's method.

    Args:
      x, y: the signals (y None: the power spectral density of x).
      fs, window, noverlap, nfft, detrend, return_onesided, axis: as in stft.
      nperseg: the segment length; default 256 (capped at the signal's length) as in scipy
        and JAX's documentation (JAX's code uses the whole signal).
      scaling: 'density' (V**2/Hz) or 'spectrum' (V**2).
      average: 'mean' or 'median' of the segments' periodograms.

    Returns:
      (frequencies, the cross spectral density).

    >>> import numpy as np
    >>> f, p = csd(np.arange(8.), np.arange(8.), nperseg=4)
    >>> p.shape
    (3,)
    """
    if average not in ("mean", "median"):
        raise NumbaxValueError(
            f"numbax.scipy.signal.csd: average has {average!r}, expected 'mean' or 'median'.")
    freqs, _, pxy = _spectral("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None and kind_of(get_aval(pxy).dtype) != "c":
        pxy = ew.convert_element_type(pxy, np.result_type(get_aval(pxy).dtype, np.complex64))
    shape = get_aval(pxy).shape
    if len(shape) >= 2 and 0 not in shape:
        if shape[-1] > 1:
            if average == "median":
                count = shape[-1]
                bias = 1 + sum(1 / (k + 1) - 1 / k for k in range(2, count, 2))
                if kind_of(get_aval(pxy).dtype) == "c":
                    med = ew.complex_(quantiles.median(ufuncs.real(pxy), axis=-1),
                                      quantiles.median(ufuncs.imag(pxy), axis=-1))
                else:
                    med = quantiles.median(pxy, axis=-1)
                pxy = ufuncs.divide(med, bias)
            else:
                pxy = reductions.mean(pxy, axis=-1)
        else:
            pxy = shape_ops.reshape(pxy, shape[:-1])
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """scipy.signal.welch: the power spectral density by Welch's method.

    Args:
      x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis,
      average: as in csd.

    Returns:
      (frequencies, the power spectral density).

    >>> import numpy as np
    >>> f, p = welch(np.sin(np.arange(64.)), nperseg=16)
    >>> p.shape
    (9,)
    """
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, ufuncs.real(pxx)


def _overlap_add(frames: Any, step: int) -> Any:
    """Sums frames (..., count, length) placed `step` apart: (..., step * (count - 1) +
    length). Each frame is cut into blocks of `step`; block j of frame f lands at output
    block f + j, so the sum takes one shifted pad per block index, not per frame."""
    *batch, count, length = get_aval(frames).shape
    blocks = -(-length // step)
    widths = [(0, 0)] * (len(batch) + 1) + [(0, blocks * step - length)]
    frames = shape_ops.reshape(pad(frames, widths), (*batch, count, blocks, step))
    total = None
    for j in range(blocks):
        block = shape_ops.squeeze(shape_ops.slice_in_dim(frames, j, j + 1, axis=-2), (-2,))
        placed = pad(block, [(0, 0)] * len(batch) + [(j, blocks - 1 - j), (0, 0)])
        total = placed if total is None else ufuncs.add(total, placed)
    flat = shape_ops.reshape(total, (*batch, (count + blocks - 1) * step))
    return shape_ops.slice_in_dim(flat, 0, step * (count - 1) + length, axis=-1)


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,  # noqa: N803
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2
          ) -> tuple[Any, Any]:
    """scipy.signal.istft: the inverse short-time Fourier transform (overlap-add).

    Args:
      Zxx: the STFT (at least 2-D).
      fs, window, noverlap, nfft: as in stft.
      nperseg: the segment length (default from the frequency axis).
      input_onesided: Zxx holds non-negative frequencies only (irfft); else ifft.
      boundary: the STFT was taken with a boundary extension to strip again.
      time_axis, freq_axis: the axes of segments and frequencies.

    Returns:
      (times, the signal).

    >>> import numpy as np
    >>> t, x = istft(stft(np.arange(8.), nperseg=4)[2], nperseg=4)
    >>> np.round(x, 12)
    Array([0., 1., 2., 3., 4., 5., 6., 7.], dtype=float64)
    """
    z = asarray(Zxx)
    ndim = get_aval(z).ndim
    if ndim < 2:
        raise NumbaxValueError(
            f"numbax.scipy.signal.istft: Zxx has shape {get_aval(z).shape}, expected at least "
            "2 dimensions.")
    for name, a in (("time_axis", time_axis), ("freq_axis", freq_axis)):
        if not -ndim <= a < ndim:
            raise NumbaxValueError(
                f"numbax.scipy.signal.istft: {name} has {a}, out of bounds for rank {ndim}.")
    time_axis, freq_axis = time_axis % ndim, freq_axis % ndim
    if time_axis == freq_axis:
        raise NumbaxValueError("numbax.scipy.signal.istft: time_axis and freq_axis are both "
                               f"{time_axis}, expected different axes.")
    cdtype = np.result_type(dtypes.to_inexact(get_aval(z).dtype), np.complex64)
    z = ew.convert_element_type(z, dtypes.canonicalize_dtype(cdtype))
    n_freq = get_aval(z).shape[freq_axis]
    default = 2 * (n_freq - 1) if input_onesided else n_freq
    n_seg = default if nperseg is None else _static_int("istft", "nperseg", nperseg)
    if n_seg < 1:
        raise NumbaxValueError(f"numbax.scipy.signal.istft: nperseg has {n_seg}, expected a "
                               "positive int.")
    if nfft is None:
        n_fft = default + 1 if input_onesided and n_seg == default + 1 else default
    else:
        n_fft = _static_int("istft", "nfft", nfft)
    if n_fft < n_seg:
        raise NumbaxValueError(f"numbax.scipy.signal.istft: nfft has {n_fft}, expected nfft "
                               f">= nperseg ({n_seg}).")
    n_over = n_seg // 2 if noverlap is None else _static_int("istft", "noverlap", noverlap)
    if not 0 <= n_over < n_seg:
        raise NumbaxValueError(f"numbax.scipy.signal.istft: noverlap has {n_over}, expected "
                               f"0 <= noverlap < nperseg ({n_seg}).")
    step = n_seg - n_over
    outer = [a for a in range(ndim) if a not in (time_axis, freq_axis)]
    z = shape_ops.transpose(z, (*outer, time_axis, freq_axis))  # (..., segments, freqs)
    inverse = jnp_fft.irfft if input_onesided else jnp_fft.ifft
    frames = shape_ops.slice_in_dim(inverse(z, n=n_fft, axis=-1), 0, n_seg, axis=-1)
    real = finfo_of(get_aval(frames).dtype).dtype
    win, _ = _window("istft", window, n_seg, n_seg, real)
    frames = ufuncs.multiply(frames, reductions.sum(win))  # undo the 'spectrum' scaling
    signal = _overlap_add(ufuncs.multiply(frames, win), step)
    count = get_aval(frames).shape[-2]
    norm = _overlap_add(shape_ops.broadcast_in_dim(ufuncs.square(win), (count, n_seg), (1,)),
                        step)
    if boundary:
        half = n_seg // 2
        size = get_aval(signal).shape[-1]
        signal = shape_ops.slice_in_dim(signal, half, size - half, axis=-1)
        norm = shape_ops.slice_in_dim(norm, half, size - half, axis=-1)
    signal = ufuncs.divide(signal, _where(norm))
    if get_aval(signal).ndim > 1 and time_axis != ndim - 1:
        target = time_axis - 1 if freq_axis < time_axis else time_axis
        signal = moveaxis(signal, -1, target)
    times = ufuncs.divide(asarray(np.arange(get_aval(signal).shape[0]).astype(real)), fs)
    return times, signal


def _where(norm: Any) -> Any:
    """The overlap-add window norm with (near) zeros replaced by one."""
    return where(ufuncs.greater(norm, 1e-10), norm, 1.0)
