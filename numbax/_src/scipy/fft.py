"""scipy.fft's discrete cosine transforms (dct, idct, dctn, idctn) on traced arrays, types 2
and 3, each an FFT of the reordered signal with twiddle factors (Makhoul's method)."""
from __future__ import annotations

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
from numbax._src.numpy import fft as jnp_fft
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray

__all__ = ["dct", "dctn", "idct", "idctn"]

_NORMS = (None, "backward", "ortho", "forward")


def _along(values: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A 1-D constant shaped to broadcast along `axis` of a rank-ndim array."""
    shape = [1] * ndim
    shape[axis] = len(values)
    return values.reshape(shape)


def _dct2(x: Any, axis: int) -> Any:
    """Unnormalised DCT-II (scipy's 'backward') of real x along axis: the FFT of the even
    samples followed by the reversed odd ones, rotated by exp(-i pi k / 2N)."""
    aval = get_aval(x)
    n = aval.shape[axis]
    evens = shape_ops.slice_in_dim(x, 0, None, 2, axis)
    odds = shape_ops.rev(shape_ops.slice_in_dim(x, 1, None, 2, axis), (axis,))
    v = shape_ops.concatenate([evens, odds], axis)
    spectrum = jnp_fft.fft(v, axis=axis)
    twiddle = 2 * np.exp(-0.5j * np.pi * np.arange(n) / n)
    twiddle = _along(twiddle.astype(get_aval(spectrum).dtype), aval.ndim, axis)
    return ew.real(ufuncs.multiply(spectrum, twiddle))


def _dct3(y: Any, axis: int) -> Any:
    """Unnormalised DCT-III (scipy's 'backward': y_0 + 2 sum y_k cos(pi k (2n + 1) / 2N)), the
    inverse steps of _dct2: rotate, inverse FFT, then undo the even/odd reordering."""
    aval = get_aval(y)
    n = aval.shape[axis]
    cdtype = np.result_type(aval.dtype, np.complex64)
    rest = shape_ops.rev(shape_ops.slice_in_dim(y, 1, None, 1, axis), (axis,))
    zero_shape = list(aval.shape)
    zero_shape[axis] = 1
    flipped = shape_ops.concatenate([shape_ops.full(zero_shape, 0, aval.dtype), rest], axis)
    rotated = ew.complex_(y, ew.neg(flipped))  # y_k - i y_{N-k}
    twiddle = _along((n * np.exp(0.5j * np.pi * np.arange(n) / n)).astype(cdtype), aval.ndim,
                     axis)
    v = ew.real(jnp_fft.ifft(ufuncs.multiply(rotated, twiddle), axis=axis))
    half = (n + 1) // 2
    evens = shape_ops.slice_in_dim(v, 0, half, 1, axis)
    odds = shape_ops.rev(shape_ops.slice_in_dim(v, half, None, 1, axis), (axis,))
    if n == 1:
        return evens
    # interleave: out[2m] = evens[m], out[2m + 1] = odds[m]
    odds_padded = odds if n % 2 == 0 else shape_ops.concatenate(
        [odds, shape_ops.full(zero_shape, 0, get_aval(v).dtype)], axis)
    pair = shape_ops.concatenate([shape_ops.expand_dims(evens, (axis + 1,)),
                                  shape_ops.expand_dims(odds_padded, (axis + 1,))], axis + 1)
    shape = list(get_aval(v).shape)
    shape[axis] = 2 * half
    merged = shape_ops.reshape(pair, tuple(shape))
    return shape_ops.slice_in_dim(merged, 0, n, 1, axis)


def _scaled(x: Any, factors: np.ndarray, axis: int) -> Any:
    aval = get_aval(x)
    return ufuncs.multiply(x, _along(factors.astype(aval.dtype), aval.ndim, axis))


def _transform(api: str, x: Any, kind: int, axis: int, norm: str | None) -> Any:
    """DCT of `kind` (2 or 3) along axis with scipy's norm."""
    n = get_aval(x).shape[axis]
    if kind == 2:
        out = _dct2(x, axis)
        if norm == "ortho":
            factors = np.full(n, np.sqrt(1 / (2 * n)))
            factors[0] = np.sqrt(1 / (4 * n))
            return _scaled(out, factors, axis)
    else:
        if norm == "ortho":  # scale the input so the unnormalised DCT-III is orthonormal
            factors = np.full(n, 1 / np.sqrt(2 * n))
            factors[0] = 1 / np.sqrt(n)
            x = _scaled(x, factors, axis)
        out = _dct3(x, axis)
    if norm == "forward":
        out = _scaled(out, np.full(n, 1 / (2 * n)), axis)
    return out


def _prepare(api: str, x: Any, type: int, norm: str | None) -> Any:  # noqa: A002
    if type not in (2, 3):
        raise NotImplementedError(
            f"numbax.scipy.fft.{api}: type {type} is not implemented; types 2 and 3 are (JAX "
            "has type 2 only).")
    if norm not in _NORMS:
        raise NumbaxValueError(
            f"numbax.scipy.fft.{api}: norm has {norm!r}, expected None, 'backward', 'ortho' "
            "or 'forward'.")
    x = asarray(x)
    dt = get_aval(x).dtype
    if kind_of(dt) not in "fc":
        x = ew.convert_element_type(x, dtypes.to_inexact(dt))
    return x


def _resize(x: Any, axis: int, size: int | None) -> Any:
    return x if size is None else jnp_fft._resize(x, axis, size)


def _one_axis(api: str, x: Any, kind: int, n: int | None, axis: int, norm: str | None) -> Any:
    ndim = get_aval(x).ndim
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"numbax.scipy.fft.{api}: axis has {axis!r}, expected an int in [-{ndim}, {ndim}).")
    axis = int(axis) % ndim
    if n is not None:
        n = operator.index(n)
        if n < 1:
            raise NumbaxValueError(f"numbax.scipy.fft.{api}: n has {n}, expected n >= 1.")
    x = _resize(x, axis, n)
    if kind_of(get_aval(x).dtype) == "c":
        return ew.complex_(_transform(api, ew.real(x), kind, axis, norm),
                           _transform(api, ew.imag(x), kind, axis, norm))
    return _transform(api, x, kind, axis, norm)


_INVERSE_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None) -> Any:
    """scipy.fft.dct: the discrete cosine transform along `axis`.

    Args:
      x: the array (integers become floats; complex input is transformed part by part).
      type: 2 (default) or 3. Unlike JAX, which has type 2 only, type 3 works too.
      n: the transform's length: x is zero-padded or truncated along `axis` to it.
      axis: the axis to transform.
      norm: None or 'backward' (unnormalised), 'ortho', or 'forward' (scaled by 1/2N).

    Returns:
      The transform.

    >>> import numpy as np
    >>> dct(np.array([1., 2.]))
    Array([ 6.        , -1.41421356], dtype=float64)
    """
    x = _prepare("dct", x, type, norm)
    return _one_axis("dct", x, type, n, axis, norm)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None) -> Any:
    """scipy.fft.idct: the inverse of dct of the same type and norm along `axis`.

    Args:
      x, type, n, axis, norm: as in dct.

    Returns:
      The inverse transform.

    >>> import numpy as np
    >>> idct(dct(np.array([1., 2., 3.])))
    Array([1., 2., 3.], dtype=float64)
    """
    x = _prepare("idct", x, type, norm)
    return _one_axis("idct", x, 5 - type, n, axis, _INVERSE_NORM[norm])


def _axes_and_sizes(api: str, x: Any, s: Any, axes: Any) -> list[tuple[int, int | None]]:
    ndim = get_aval(x).ndim
    if s is not None:
        s = [operator.index(v) for v in (s if isinstance(s, Sequence) else [s])]
        if len(s) > ndim:
            raise NumbaxValueError(
                f"numbax.scipy.fft.{api}: s has {len(s)} entries, expected at most x.ndim = "
                f"{ndim}.")
    if axes is None:
        axes = list(range(ndim - len(s), ndim)) if s is not None else list(range(ndim))
    else:
        axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
        for a in axes:
            if not -ndim <= a < ndim:
                raise NumbaxValueError(
                    f"numbax.scipy.fft.{api}: axes has {tuple(axes)}, out of bounds for rank "
                    f"{ndim}.")
        axes = [int(a) % ndim for a in axes]
        if len(set(axes)) != len(axes):
            raise NumbaxValueError(f"numbax.scipy.fft.{api}: axes {tuple(axes)} repeat an "
                                   "axis.")
    if s is not None and len(s) != len(axes):
        raise NumbaxTypeError(
            f"numbax.scipy.fft.{api}: s has {len(s)} entries and axes {len(axes)}, expected "
            "equal lengths.")
    return list(zip(axes, s if s is not None else [None] * len(axes)))


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """scipy.fft.dctn: the multidimensional DCT, one axis after another.

    Args:
      x, type, norm: as in dct.
      s: the transform's size along each of `axes` (padding or truncating x).
      axes: the axes (default: the last len(s), or all).

    Returns:
      The transform.

    >>> import numpy as np
    >>> dctn(np.ones((2, 2)))
    Array([[16.,  0.],
           [ 0.,  0.]], dtype=float64)
    """
    x = _prepare("dctn", x, type, norm)
    for axis, size in _axes_and_sizes("dctn", x, s, axes):
        x = _one_axis("dctn", x, type, size, axis, norm)
    return x


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """scipy.fft.idctn: the inverse of dctn.

    Args:
      x, type, s, axes, norm: as in dctn.

    Returns:
      The inverse transform.

    >>> import numpy as np
    >>> idctn(dctn(np.arange(4.).reshape(2, 2)))
    Array([[0., 1.],
           [2., 3.]], dtype=float64)
    """
    x = _prepare("idctn", x, type, norm)
    for axis, size in _axes_and_sizes("idctn", x, s, axes):
        x = _one_axis("idctn", x, 5 - type, size, axis, _INVERSE_NORM[norm])
    return x
