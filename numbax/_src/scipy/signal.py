"""scipy.signal on traced arrays: direct (lax.conv_general_dilated) and FFT convolutions and
correlations, detrend, and the windowed-FFT family (stft, istft, csd, welch)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import api
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.conv_ops import conv_general_dilated
from numbax._src.numpy import fft as jnp_fft
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray
from numbax._src.numpy.padding import pad

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _check_mode(api_name: str, mode: str) -> None:
    if mode not in _MODES:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: mode has {mode!r}, expected 'full', 'same' or "
            "'valid'.")


def _inexact_pair(api_name: str, in1: Any, in2: Any) -> tuple[Any, Any]:
    in1, in2 = ufuncs.promote_dtypes_inexact(f"scipy.signal.{api_name}", asarray(in1),
                                             asarray(in2))
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if len(s1) != len(s2):
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: in1 has shape {s1} and in2 has shape {s2}, "
            "expected the same number of dimensions.")
    if 0 in s1 or 0 in s2:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: in1 has shape {s1} and in2 has shape {s2}, "
            "expected non-empty arrays.")
    return in1, in2


# ----------------------------------------------------------------------------- direct convolution


def _convolve_nd(api_name: str, in1: Any, in2: Any, mode: str, precision: Any) -> Any:
    """scipy's N-d convolution as one lax.conv_general_dilated of the flipped kernel (the
    smaller input, which must be smaller in every dimension)."""
    _check_mode(api_name, mode)
    in1, in2 = _inexact_pair(api_name, in1, in2)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    larger = all(a >= b for a, b in zip(s1, s2))
    smaller = all(a <= b for a, b in zip(s1, s2))
    if not (larger or smaller):
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: in1 has shape {s1} and in2 has shape {s2}, "
            "expected one input at least as large as the other in every dimension.")
    shape_o = s2
    if not larger:
        in1, in2 = in2, in1
    kernel = get_aval(in2).shape
    in2 = shape_ops.rev(in2, tuple(range(len(kernel))))
    if mode == "valid":
        padding = [(0, 0)] * len(kernel)
    elif mode == "same":
        padding = [(k - 1 - (o - 1) // 2, k - o + (o - 1) // 2) for k, o in zip(kernel, shape_o)]
    else:
        padding = [(k - 1, k - 1) for k in kernel]
    x = shape_ops.expand_dims(in1, (0, 1))
    w = shape_ops.expand_dims(in2, (0, 1))
    out = conv_general_dilated(x, w, (1,) * len(kernel), padding, precision=precision)
    return shape_ops.squeeze(out, (0, 1))


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """scipy.signal.convolve: N-d convolution of in1 and in2.

    Args:
      in1, in2: arrays of equal rank; one at least as large as the other in every dimension
        (for 'direct'/'auto').
      mode: 'full', 'same' (the size of in1) or 'valid'.
      method: 'auto' or 'direct' (lax.conv_general_dilated), or 'fft' (fftconvolve).
      precision: as in lax.conv_general_dilated.

    Returns:
      The convolution.

    >>> import numpy as np
    >>> convolve(np.array([1., 2., 3.]), np.array([1., 1.]))
    Array([1., 3., 5., 3.], dtype=float64)
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("auto", "direct"):
        raise NumbaxValueError(
            f"numbax.scipy.signal.convolve: method has {method!r}, expected 'auto', 'direct' "
            "or 'fft'.")
    return _convolve_nd("convolve", in1, in2, mode, precision)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """scipy.signal.correlate: N-d cross-correlation (in2 conjugated and flipped, convolved).

    Args:
      in1, in2, mode, method, precision: as in convolve.

    Returns:
      The cross-correlation.

    >>> import numpy as np
    >>> correlate(np.array([1., 2., 3.]), np.array([1., 0.]))
    Array([0., 1., 2., 3.], dtype=float64)
    """
    in2 = asarray(in2)
    if kind_of(get_aval(in2).dtype) == "c":
        in2 = ew.conj(in2)
    in2 = shape_ops.rev(in2, tuple(range(get_aval(in2).ndim)))
    return convolve(in1, in2, mode, method, precision)


def _boundary_padded(api_name: str, in1: Any, kernel: Sequence[int], boundary: str,
                     fillvalue: Any) -> Any:
    """in1 extended by kernel - 1 on each side as the boundary condition prescribes."""
    widths = [(k - 1, k - 1) for k in kernel]
    if boundary == "fill":
        if np.ndim(fillvalue) != 0:
            raise NumbaxValueError(
                f"numbax.scipy.signal.{api_name}: fillvalue has shape {np.shape(fillvalue)}, "
                "expected a scalar.")
        return pad(in1, widths, "constant", constant_values=fillvalue)
    modes = {"wrap": "wrap", "circular": "wrap", "symm": "symmetric", "symmetric": "symmetric"}
    if boundary not in modes:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: boundary has {boundary!r}, expected 'fill', "
            "'wrap' or 'symm'.")
    return pad(in1, widths, modes[boundary])


def _convolve2d(api_name: str, in1: Any, in2: Any, mode: str, boundary: str, fillvalue: Any,
                precision: Any) -> Any:
    _check_mode(api_name, mode)
    in1, in2 = _inexact_pair(api_name, in1, in2)
    if get_aval(in1).ndim != 2:
        raise NumbaxValueError(
            f"numbax.scipy.signal.{api_name}: in1 has shape {get_aval(in1).shape}, expected "
            "2-dimensional inputs.")
    if boundary == "fill" and np.ndim(fillvalue) == 0 and fillvalue == 0:
        return _convolve_nd(api_name, in1, in2, mode, precision)
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if mode == "valid":
        return _convolve_nd(api_name, in1, in2, mode, precision)
    if not all(a >= b for a, b in zip(s1, s2)):  # scipy extends the larger input
        if all(a <= b for a, b in zip(s1, s2)) and mode == "full":
            in1, in2, s1, s2 = in2, in1, s2, s1
        else:
            raise NumbaxValueError(
                f"numbax.scipy.signal.{api_name}: in1 has shape {s1} and in2 has shape {s2}; "
                "with a boundary other than zero fill in1 must be at least as large as in2.")
    full = _convolve_nd(api_name, _boundary_padded(api_name, in1, s2, boundary, fillvalue),
                        in2, "valid", precision)
    if mode == "full":
        return full
    starts = [(k - 1) // 2 for k in s2]
    return shape_ops.slice(full, starts, [b + n for b, n in zip(starts, s1)])


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: float = 0, precision: Any = None) -> Any:
    """scipy.signal.convolve2d: 2-D convolution with a boundary condition.

    Args:
      in1, in2: 2-D arrays.
      mode: 'full', 'same' or 'valid'.
      boundary: 'fill' (pad with fillvalue), 'wrap' (circular) or 'symm' (mirrored).
        Unlike JAX, which has 'fill' with 0 only, all three work.
      fillvalue: the value 'fill' pads with.
      precision: as in lax.conv_general_dilated.

    Returns:
      The convolution.

    >>> import numpy as np
    >>> convolve2d(np.eye(2), np.ones((1, 2)))
    Array([[1., 1., 0.],
           [0., 1., 1.]], dtype=float64)
    """
    return _convolve2d("convolve2d", in1, in2, mode, boundary, fillvalue, precision)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: float = 0, precision: Any = None) -> Any:
    """scipy.signal.correlate2d: 2-D cross-correlation with a boundary condition.

    Args:
      in1, in2, mode, boundary, fillvalue, precision: as in convolve2d.

    Returns:
      The cross-correlation.

    >>> import numpy as np
    >>> correlate2d(np.eye(2), np.array([[1., 2.]]))
    Array([[2., 1., 0.],
           [0., 2., 1.]], dtype=float64)
    """
    in1, in2 = asarray(in1), asarray(in2)
    if get_aval(in2).ndim != 2 or get_aval(in1).ndim != 2:
        raise NumbaxValueError(
            f"numbax.scipy.signal.correlate2d: in1 has shape {get_aval(in1).shape} and in2 "
            f"{get_aval(in2).shape}, expected 2-dimensional inputs.")
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    swap = all(a <= b for a, b in zip(s1, s2))

    def conv(a, b):
        return _convolve2d("correlate2d", a, b, mode, boundary, fillvalue, precision)

    if mode == "full" and swap and s1 != s2:
        return _conj(conv(_flip(in2), _conj(in1)))
    if mode == "valid" and swap and s1 != s2:
        return conv(_flip(in2), _conj(in1))
    return _flip(conv(_flip(in1), _conj(in2)))


def _flip(x: Any) -> Any:
    return shape_ops.rev(x, tuple(range(get_aval(x).ndim)))


def _conj(x: Any) -> Any:
    return ew.conj(x) if kind_of(get_aval(x).dtype) == "c" else x


# ----------------------------------------------------------------------------- FFT convolution


def _fftconvolve(in1: Any, in2: Any, mode: str) -> Any:
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if mode == "valid":
        if not all(a >= b for a, b in zip(s1, s2)):
            if not all(a <= b for a, b in zip(s1, s2)):
                raise NumbaxValueError(
                    f"numbax.scipy.signal.fftconvolve: in1 has shape {s1} and in2 {s2}; for "
                    "'valid' mode one must be at least as large as the other in every "
                    "dimension.")
            in1, in2, s1, s2 = in2, in1, s2, s1
    full = tuple(a + b - 1 for a, b in zip(s1, s2))
    axes = tuple(range(len(full)))
    if all(a == 1 or b == 1 for a, b in zip(s1, s2)):
        conv = ufuncs.multiply(in1, in2)
    elif kind_of(get_aval(in1).dtype) == "c" or kind_of(get_aval(in2).dtype) == "c":
        conv = jnp_fft.ifftn(ufuncs.multiply(jnp_fft.fftn(in1, full, axes),
                                             jnp_fft.fftn(in2, full, axes)), full, axes)
    else:
        conv = jnp_fft.irfftn(ufuncs.multiply(jnp_fft.rfftn(in1, full, axes),
                                              jnp_fft.rfftn(in2, full, axes)), full, axes)
    if mode == "full":
        out = full
    elif mode == "same":
        out = s1
    else:
        out = tuple(a - b + 1 for a, b in zip(s1, s2))
    starts = [(f - o) // 2 for f, o in zip(full, out)]
    return shape_ops.slice(conv, starts, [b + o for b, o in zip(starts, out)])


def fftconvolve(in1: Any, in2: Any, mode: str = "full",
                axes: Sequence[int] | None = None) -> Any:
    """scipy.signal.fftconvolve: N-d convolution through FFTs.

    Args:
      in1, in2: arrays of equal rank.
      mode: 'full', 'same' or 'valid'.
      axes: the axes to convolve over (default all); the others must match in size and are
        treated as a batch.

    Returns:
      The convolution.

    >>> import numpy as np
    >>> np.round(fftconvolve(np.array([1., 2., 3.]), np.array([1., 1.])), 12)
    Array([1., 3., 5., 3.], dtype=float64)
    """
    _check_mode("fftconvolve", mode)
    in1, in2 = _inexact_pair("fftconvolve", in1, in2)
    ndim = get_aval(in1).ndim
    fn: Callable = lambda a, b: _fftconvolve(a, b, mode)  # noqa: E731
    if axes is None:
        return fn(in1, in2)
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise NumbaxValueError(
                f"numbax.scipy.signal.fftconvolve: axes has {tuple(axes)}, out of bounds for "
                f"rank {ndim}.")
    axes = sorted({int(a) % ndim for a in axes})
    mapped = [a for a in range(ndim) if a not in axes]
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if any(s1[a] != s2[a] for a in mapped):
        raise NumbaxValueError(
            f"numbax.scipy.signal.fftconvolve: in1 has shape {s1} and in2 {s2}, expected equal "
            f"sizes along the axes not convolved ({tuple(mapped)}).")
    for a in mapped:  # the outer vmap takes the largest axis, so smaller ones keep their place
        fn = api.vmap(fn, in_axes=a, out_axes=a)
    return fn(in1, in2)
