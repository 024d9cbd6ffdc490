"""Image resampling (jax.image): resize and scale_and_translate as one weight-matrix contraction
per resized dimension, the weights sampled from an interpolation kernel; nearest-neighbour
resize as a gather."""
from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.numpy import linalg_ops, reductions, ufuncs
from numbax._src.numpy.indexing import take
from numbax._src.numpy.lax_numpy import asarray, where
from numbax._src.numpy.shapes import moveaxis

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Image resize methods: NEAREST, LINEAR (triangle), LANCZOS3, LANCZOS5, CUBIC (Keys,
    a = -0.5), CUBIC_PYTORCH (a = -0.75 with edge padding when not antialiased) and AREA."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        """The method a name stands for ('bilinear', 'bicubic', ... are accepted)."""
        names = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                 "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                 "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                 "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                 "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
                 "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
                 "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}
        if s not in names:
            raise NumbaxValueError(
                f"numbax.image: method has {s!r}, expected one of {sorted(names)} or a "
                "ResizeMethod.")
        return names[s]


def _lanczos(radius: float) -> Callable:
    def kernel(x):
        y = ufuncs.multiply(radius, ufuncs.multiply(ufuncs.sin(ufuncs.multiply(np.pi, x)),
                                                    ufuncs.sin(ufuncs.multiply(np.pi / radius,
                                                                               x))))
        safe = where(ufuncs.not_equal(x, 0), ufuncs.multiply(np.pi ** 2, ufuncs.square(x)), 1.0)
        out = where(ufuncs.greater(x, 1e-3), ufuncs.divide(y, safe), 1.0)
        return where(ufuncs.greater(x, radius), 0.0, out)

    return kernel


def _cubic(a: float) -> Callable:
    """The cubic convolution kernel with parameter a (Keys: -0.5, OpenCV/PyTorch: -0.75)."""
    def kernel(x):
        near = ufuncs.add(ufuncs.multiply(ufuncs.multiply(
            ufuncs.subtract(ufuncs.multiply(a + 2.0, x), a + 3.0), x), x), 1.0)
        far = ufuncs.subtract(ufuncs.multiply(ufuncs.add(ufuncs.multiply(
            ufuncs.subtract(ufuncs.multiply(a, x), 5.0 * a), x), 8.0 * a), x), 4.0 * a)
        out = where(ufuncs.greater_equal(x, 1.0), far, near)
        return where(ufuncs.greater_equal(x, 2.0), 0.0, out)

    return kernel


def _triangle(x):
    return ufuncs.maximum(0.0, ufuncs.subtract(1.0, ufuncs.abs(x)))


_AREA = "area"
_KERNELS: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)), ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA),
}
_EPS = 1000.0 * float(np.finfo(np.float32).eps)


def _normalise(weights: Any) -> Any:
    """Columns divided by their sums (columns summing to about zero become zero)."""
    total = reductions.sum(weights, axis=0, keepdims=True)
    safe = where(ufuncs.not_equal(total, 0), total, 1.0)
    return where(ufuncs.greater(ufuncs.abs(total), _EPS), ufuncs.divide(weights, safe), 0.0)


def _weights(m: int, n: int, scale: Any, translation: Any, kernel: Any, antialias: bool,
             radius: int | None, edge_padding: bool, dtype: np.dtype) -> Any:
    """The (m, n) matrix taking m input samples to n output samples: output pixel j's centre
    maps to input coordinate (j + 0.5 - t) / s - 0.5, and input pixel i contributes
    kernel(|i - that| / kernel_scale), kernel_scale = max(1 / s, 1) when antialiasing."""
    inv = ufuncs.divide(1.0, scale)
    kernel_scale = ufuncs.maximum(inv, 1.0) if antialias else 1.0
    out_idx = asarray(np.arange(n, dtype=dtype))
    sample = ufuncs.subtract(ufuncs.subtract(ufuncs.multiply(ufuncs.add(out_idx, 0.5), inv),
                                             ufuncs.multiply(translation, inv)), 0.5)
    pad = radius if edge_padding else 0
    in_idx = asarray(np.arange(-pad, m + pad, dtype=dtype))
    if kernel is _AREA:  # the overlap of output pixel j's footprint with input pixel i
        left = ufuncs.subtract(ufuncs.multiply(out_idx, inv), ufuncs.multiply(translation, inv))
        right = ufuncs.add(left, inv)
        lo_in = asarray(np.arange(m, dtype=dtype)[:, None])
        weights = ufuncs.maximum(0.0, ufuncs.subtract(
            ufuncs.minimum(right[None, :], ufuncs.add(lo_in, 1.0)),
            ufuncs.maximum(left[None, :], lo_in)))
    else:
        distance = ufuncs.abs(ufuncs.subtract(sample[None, :], in_idx[:, None]))
        weights = kernel(ufuncs.divide(distance, kernel_scale))
    if edge_padding:  # weight on samples beyond the edges goes to the edge pixels
        rows = [reductions.sum(weights[:pad + 1], axis=0, keepdims=True)]
        if m > 1:
            rows += [weights[pad + 1:pad + m - 1],
                     reductions.sum(weights[pad + m - 1:], axis=0, keepdims=True)]
        else:
            rows = [reductions.sum(weights, axis=0, keepdims=True)]
        weights = shape_ops.concatenate(rows, 0) if len(rows) > 1 else rows[0]
        return _normalise(weights)
    weights = _normalise(weights)
    inside = ufuncs.logical_and(ufuncs.greater_equal(sample, -0.5),
                                ufuncs.less_equal(sample, m - 0.5))
    return where(inside[None, :], weights, 0.0)


def _contract(x: Any, shape: Sequence[int], dims: Sequence[int], scales: Sequence[Any],
              translations: Sequence[Any], method: ResizeMethod, antialias: bool) -> Any:
    """x with each of `dims` resampled to its size in `shape`."""
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    dtype = get_aval(x).dtype
    real = finfo_of(dtype).dtype
    for d, s, t in zip(dims, scales, translations):
        m, n = get_aval(x).shape[d], shape[d]
        w = _weights(m, n, s, t, kernel, antialias, radius, edge_padding, real)
        if get_aval(w).dtype != dtype:
            w = ew.convert_element_type(w, dtype)
        x = moveaxis(linalg_ops.tensordot(x, w, axes=([d], [0])), -1, d)
    return x


def _method(method: Any) -> ResizeMethod:
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    raise NumbaxTypeError(
        f"numbax.image: method has {method!r}, expected a ResizeMethod or its name.")


def _shape(api: str, image: Any, shape: Any) -> tuple[int, ...]:
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.image.{api}: shape has {shape!r}, expected a tuple of ints.") from None
    if len(shape) != get_aval(image).ndim or any(d < 0 for d in shape):
        raise NumbaxValueError(
            f"numbax.image.{api}: shape has {shape}, expected {get_aval(image).ndim} "
            f"non-negative sizes (one per dimension of the image of shape "
            f"{get_aval(image).shape}).")
    return shape


def _inexact(image: Any) -> Any:
    """Floating images keep their dtype; integer and boolean ones become float as in JAX
    (promote_dtypes_inexact): float32 up to 32 bits, float64 for 64-bit integers."""
    image = asarray(image)
    if kind_of(get_aval(image).dtype) in "biu":
        return ew.convert_element_type(image, dtypes.to_inexact(get_aval(image).dtype))
    return image


def _resize_nearest(x: Any, shape: Sequence[int]) -> Any:
    for d, (m, n) in enumerate(zip(get_aval(x).shape, shape)):
        if m == n:
            continue
        # float32 offsets, as JAX computes them
        offsets = np.floor(((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m)
                            / np.float32(n)).astype(np.float32)).astype(np.int64)
        x = take(x, offsets, axis=d)
    return x


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = None) -> Any:
    """Resizes an image (any rank) to `shape` by interpolation.

    Args:
      image: the array; every dimension whose size changes is resampled.
      shape: the output shape.
      method: a ResizeMethod or a name: 'nearest', 'linear' ('bilinear', 'trilinear',
        'triangle'), 'lanczos3', 'lanczos5', 'cubic' ('bicubic', 'tricubic'),
        'cubic-pytorch', 'area'.
      antialias: widen the kernel when downsampling (a low-pass filter), as Pillow and
        TensorFlow do.
      precision: Unlike JAX (default lax.Precision.HIGHEST): default None; numbax computes
        in the image's dtype whatever it is.

    Returns:
      The resized image: 'nearest' keeps the image's dtype; the other methods give floating
      images their dtype and, as JAX, float32 for bool and integers up to 32 bits, float64
      for 64-bit integers (float32 without x64).

    >>> import numpy as np
    >>> resize(np.array([0., 1.]), (4,), "linear")
    Array([0.  , 0.25, 0.75, 1.  ], dtype=float64)
    """
    del precision
    shape = _shape("resize", image, shape)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(asarray(image), shape)
    x = _inexact(image)
    dims = [d for d, (m, n) in enumerate(zip(get_aval(x).shape, shape)) if m != n]
    scales = [1.0 if shape[d] == 0 else shape[d] / get_aval(x).shape[d] for d in dims]
    return _contract(x, shape, dims, scales, [0.0] * len(dims), method, bool(antialias))


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True, precision: Any = None) -> Any:
    """Resamples `spatial_dims` of an image under the map output = input * scale +
    translation (pixel centres at half-integers), into an output of `shape`.

    Args:
      image: the array.
      shape: the output shape.
      spatial_dims: the dimensions to resample.
      scale, translation: one value per spatial dim (may be traced: both are
        differentiable).
      method: as in resize, except 'nearest'.
      antialias: as in resize.
      precision: as in resize.

    Returns:
      The resampled image (floating).

    >>> import numpy as np
    >>> scale_and_translate(np.array([0., 1., 2.]), (3,), (0,), np.array([1.]),
    ...                     np.array([1.]), "linear")
    Array([0., 0., 1.], dtype=float64)
    """
    del precision
    shape = _shape("scale_and_translate", image, shape)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise NumbaxValueError(
            "numbax.image.scale_and_translate: method is NEAREST, which is not supported here "
            "(nor in JAX). Use resize for nearest-neighbour resampling.")
    x = _inexact(image)
    ndim = get_aval(x).ndim
    dims = [operator.index(d) for d in spatial_dims]
    if any(not -ndim <= d < ndim for d in dims):
        raise NumbaxValueError(
            f"numbax.image.scale_and_translate: spatial_dims has {tuple(dims)}, out of bounds "
            f"for an image of rank {ndim}.")
    dims = [d % ndim for d in dims]
    fixed = [d for d in range(ndim) if d not in dims and shape[d] != get_aval(x).shape[d]]
    if fixed:
        raise NumbaxValueError(
            f"numbax.image.scale_and_translate: shape {shape} changes dims {tuple(fixed)} of "
            f"the image of shape {get_aval(x).shape}, which are not in spatial_dims.")
    scale, translation = ufuncs.promote_dtypes_inexact("image.scale_and_translate",
                                                       asarray(scale), asarray(translation))
    for name, v in (("scale", scale), ("translation", translation)):
        if get_aval(v).shape != (len(dims),):
            raise NumbaxValueError(
                f"numbax.image.scale_and_translate: {name} has shape {get_aval(v).shape}, "
                f"expected ({len(dims)},) (one per spatial dim).")
    scales = [scale[i] for i in range(len(dims))]
    translations = [translation[i] for i in range(len(dims))]
    return _contract(x, shape, dims, scales, translations, method, bool(antialias))

