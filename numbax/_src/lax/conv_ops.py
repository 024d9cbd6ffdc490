"""The public convolutions on top of conv_general_dilated_p: conv_general_dilated's argument
handling, conv, conv_with_general_padding, conv_transpose, and the patch/local forms."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.config import config
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import dot as lax_dot
from numbax._src.lax import shape_ops
from numbax._src.lax.convolution import (
    _conv_transpose_padding,
    conv_dimension_numbers,
    conv_general_dilated_p,
    dilate_shape,
    padtype_to_pads,
)

_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST", "FASTEST", "BFLOAT16", "TENSORFLOAT32", "FLOAT32")


def _one_precision(api: str, p: Any) -> str:
    name = p.name if hasattr(p, "name") and not isinstance(p, str) else p
    if not isinstance(name, str) or name.upper() not in _PRECISIONS:
        raise NumbaxValueError(
            f"lax.{api}: precision has {p!r}, expected None, a lax.Precision, one of the "
            "strings 'default', 'high', 'highest', 'fastest', or a pair of these.")
    return name.upper()


def canonicalize_precision(api: str, precision: Any) -> tuple[str, str] | None:
    """None, or the (lhs, rhs) precision names; None reads jax_default_matmul_precision, as
    JAX's does (a dot-algorithm preset there leaves convolutions at None). The CPU computes in
    the operands' dtype (or preferred_element_type) whatever the precision; the GPU picks
    cuBLAS's compute type from it (TF32 for float32 unless 'highest')."""
    if precision is None:
        precision = config.jax_default_matmul_precision
        if precision is None or precision.upper() not in _PRECISIONS:
            return None
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise NumbaxValueError(
                f"lax.{api}: precision has {precision!r}, expected a single precision or a "
                "pair (lhs precision, rhs precision).")
        return (_one_precision(api, precision[0]), _one_precision(api, precision[1]))
    name = _one_precision(api, precision)
    return (name, name)


def _int_tuple(api: str, name: str, value: Any, length: int, default: int = 1
               ) -> tuple[int, ...]:
    if value is None:
        return (default,) * length
    try:
        out = tuple(operator.index(v) for v in value)
    except TypeError:
        raise NumbaxTypeError(
            f"lax.{api}: {name} has {value!r}, expected a sequence of {length} ints.") from None
    if len(out) != length:
        raise NumbaxValueError(
            f"lax.{api}: {name} has {len(out)} entries ({out}), expected {length} (one per "
            "spatial dimension).")
    return out


def _explicit_padding(api: str, padding: Any, length: int) -> tuple[tuple[int, int], ...]:
    try:
        pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise NumbaxValueError(
            f"lax.{api}: padding has {padding!r}, expected 'SAME', 'SAME_LOWER', 'VALID' or "
            "a sequence of (low, high) int pairs.") from None
    if len(pads) != length:
        raise NumbaxValueError(
            f"lax.{api}: padding has {len(pads)} (low, high) pairs, expected {length} (one per "
            "spatial dimension).")
    return pads


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """General n-dimensional convolution with strides, padding and dilation (XLA's Conv).

    Args:
      lhs: the input, rank n + 2.
      rhs: the kernel, rank n + 2, of lhs's dtype.
      window_strides: n ints.
      padding: 'SAME', 'SAME_LOWER', 'VALID', or n (low, high) pairs (negative values crop).
      lhs_dilation: n ints (None: ones): holes between input elements (transposed conv).
      rhs_dilation: n ints (None: ones): holes between kernel elements (atrous conv).
      dimension_numbers: None (('NCHW', 'OIHW', 'NCHW') order), a ConvDimensionNumbers, or
        three strings such as ('NHWC', 'HWIO', 'NHWC'). Strides follow the spatial letters'
        order in the rhs string.
      feature_group_count: split the features into this many independent groups.
      batch_group_count: split the batch into this many groups, one per block of output
        features.
      precision: None, a lax.Precision or string, or a pair; recorded in the jaxpr.
      preferred_element_type: the accumulation and output dtype.
      out_sharding: Unlike JAX: accepted and ignored (results live on one device).

    Returns:
      The convolution, in the layout of dimension_numbers' out spec.

    >>> import numpy as np
    >>> conv_general_dilated(np.ones((1, 1, 4)), np.ones((1, 1, 2)), (1,), "VALID")
    Array([[[2., 2., 2.]]], dtype=float64)
    """
    del out_sharding
    api = "conv_general_dilated"
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise NumbaxValueError(
            f"lax.{api}: lhs has shape {la.shape} and rhs has shape {ra.shape}, expected equal "
            "ranks of at least 2 (batch, feature, spatial dims...).")
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    if any(len(spec) != la.ndim for spec in dnums):
        raise NumbaxValueError(
            f"lax.{api}: dimension_numbers has {dnums}, expected specs of length {la.ndim} "
            "(the rank of lhs and rhs).")
    nsp = la.ndim - 2
    window_strides = _int_tuple(api, "window_strides", window_strides, nsp)
    lhs_dilation = _int_tuple(api, "lhs_dilation", lhs_dilation, nsp)
    rhs_dilation = _int_tuple(api, "rhs_dilation", rhs_dilation, nsp)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise NumbaxValueError(
                f"lax.{api}: padding is {padding!r} with lhs_dilation {lhs_dilation}; string "
                "padding is not defined for transposed convolutions. Give explicit (low, "
                "high) pairs, or use lax.conv_transpose.")
        kernel = dilate_shape(np.take(ra.shape, dnums.rhs_spec)[2:], rhs_dilation)
        pads = padtype_to_pads(np.take(la.shape, dnums.lhs_spec)[2:], kernel, window_strides,
                               padding)
        padding = tuple((int(lo), int(hi)) for lo, hi in pads)
    else:
        padding = _explicit_padding(api, padding, nsp)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type,
                                                           context=f"lax.{api}")
    for name, count in (("feature_group_count", feature_group_count),
                        ("batch_group_count", batch_group_count)):
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise NumbaxTypeError(f"lax.{api}: {name} has {count!r}, expected a positive int.")
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(api, precision),
        preferred_element_type=preferred_element_type)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """conv_general_dilated in NCHW / OIHW / NCHW order without dilation.

    Args:
      lhs: the input (N, C, spatial...).
      rhs: the kernel (O, I, spatial...).
      window_strides: n ints.
      padding: 'SAME', 'SAME_LOWER' or 'VALID' (or explicit (low, high) pairs).
      precision: as in conv_general_dilated.
      preferred_element_type: the accumulation and output dtype.

    Returns:
      The convolution (N, O, spatial...).

    >>> import numpy as np
    >>> conv(np.ones((1, 1, 3)), np.ones((1, 1, 3)), (1,), "SAME")
    Array([[[2., 3., 2.]]], dtype=float64)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """conv_general_dilated in NCHW / OIHW / NCHW order with explicit dilations.

    Args:
      lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision,
      preferred_element_type: as in conv_general_dilated.

    Returns:
      The convolution (N, O, spatial...).

    >>> import numpy as np
    >>> conv_with_general_padding(np.ones((1, 1, 3)), np.ones((1, 1, 2)), (1,), [(0, 0)],
    ...                           (2,), None)
    Array([[[1., 1., 1., 1.]]], dtype=float64)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                       4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """The N-d transposed ("fractionally strided") convolution, computed directly.

    Args:
      lhs: the input, rank n + 2.
      rhs: the kernel, rank n + 2.
      strides: n ints: the fractional strides (lhs dilation of the underlying conv).
      padding: 'SAME' or 'VALID' (the padding of the forward conv this transposes), or
        (low, high) pairs: the transposed conv's own padding, or, with
        use_consistent_padding=True, the forward conv's (as in PyTorch).
      rhs_dilation: n ints (None: ones).
      dimension_numbers: as in conv_general_dilated; default NHWC / HWIO / NHWC (and the
        1-D and 3-D analogues).
      transpose_kernel: flip the kernel's spatial axes and swap its I and O axes, giving
        the gradient of conv (Keras' Conv2DTranspose).
      precision, preferred_element_type: as in conv_general_dilated.
      use_consistent_padding: read explicit padding as the forward conv's padding.

    Returns:
      The transposed convolution.

    >>> import numpy as np
    >>> conv_transpose(np.ones((1, 2, 1)), np.ones((2, 1, 1)), (2,), "VALID")[0, :, 0]
    Array([1., 1., 1., 1.], dtype=float64)
    """
    api = "conv_transpose"
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise NumbaxValueError(
            f"lax.{api}: lhs has shape {la.shape} and rhs has shape {ra.shape}, expected equal "
            "ranks of at least 2.")
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_DEFAULTS:
            raise NumbaxValueError(
                f"lax.{api}: lhs has rank {la.ndim}, which has no default dimension_numbers; "
                "pass dimension_numbers.")
        dimension_numbers = _TRANSPOSE_DEFAULTS[la.ndim]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    strides = _int_tuple(api, "strides", strides, nsp)
    rhs_dilation = _int_tuple(api, "rhs_dilation", rhs_dilation, nsp)
    kernel = dilate_shape(np.take(ra.shape, dn.rhs_spec)[2:], rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = ([padding] * nsp if isinstance(padding, str)
                   else _explicit_padding(api, padding, nsp))
        pads = tuple(_conv_transpose_padding(k, s, p)
                     for k, s, p in zip(kernel, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = shape_ops.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ra.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = shape_ops.transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """The patches (receptive fields) a convolution of `filter_shape` would see.

    Args:
      lhs: the input, rank n + 2.
      filter_shape: the n spatial sizes of the window.
      window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, precision,
      preferred_element_type: as in conv_general_dilated (the rhs spec only orders the
        spatial dimensions).

    Returns:
      An array laid out like the convolution's output whose feature dimension holds
      C * prod(filter_shape) entries, channel-major: feature c * prod(filter_shape) + k is
      channel c at window position k (row-major over the spatial window).

    >>> import numpy as np
    >>> conv_general_dilated_patches(np.arange(4.).reshape(1, 1, 4), (2,), (2,), "VALID")
    Array([[[0., 2.],
            [1., 3.]]], dtype=float64)
    """
    api = "conv_general_dilated_patches"
    la = get_aval(lhs)
    filter_shape = tuple(operator.index(d) for d in filter_shape)
    if len(filter_shape) != la.ndim - 2:
        raise NumbaxValueError(
            f"lax.{api}: filter_shape has {filter_shape}, expected {la.ndim - 2} sizes for lhs "
            f"of shape {la.shape}.")
    dn = conv_dimension_numbers(la.shape, (1, 1, *filter_shape), dimension_numbers)
    size = math.prod(filter_shape)
    channels = la.shape[dn.lhs_spec[1]]
    eye = np.eye(size, dtype=la.dtype)
    kernel = np.broadcast_to(eye, (channels, size, size)).reshape(
        channels * size, 1, *filter_shape)
    kernel = np.ascontiguousarray(np.transpose(kernel, np.argsort(dn.rhs_spec)))
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                                rhs_dilation, dn, feature_group_count=channels,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                               filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: Any = None, precision: Any = None) -> Any:
    """An unshared (locally connected) convolution: each output position has its own kernel.

    Args:
      lhs: the input, rank n + 2.
      rhs: the kernels, rank n + 2: its spatial dims are the output's spatial positions, its
        I dim holds C * prod(filter_shape) entries (channel-major, then the window position in
        the rhs spec's spatial order) and its O dim the output features.
      window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, precision: as in
        conv_general_dilated.
      filter_shape: the n spatial sizes of each kernel's window.

    Returns:
      The locally connected convolution, laid out by dimension_numbers' out spec.

    >>> import numpy as np
    >>> conv_general_dilated_local(np.ones((1, 1, 3)), np.ones((1, 2, 2)), (1,), "VALID",
    ...                            (2,))
    Array([[[2., 2.]]], dtype=float64)
    """
    api = "conv_general_dilated_local"
    lhs_precision = precision[0] if isinstance(precision, (tuple, list)) else precision
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           lhs_precision)
    la, ra = get_aval(lhs), get_aval(rhs)
    if ra.ndim != la.ndim:
        raise NumbaxValueError(
            f"lax.{api}: rhs has shape {ra.shape}, expected rank {la.ndim} like lhs.")
    _, rhs_spec, out_spec = conv_dimension_numbers(la.shape, (1, 1, *tuple(filter_shape)),
                                                   dimension_numbers)
    out_space = out_spec[2:]
    order = sorted(range(len(out_space)), key=lambda k: out_space[k])
    dims = (((out_spec[1],), (rhs_spec[1],)),
            (tuple(out_space[k] for k in order), tuple(rhs_spec[2:][k] for k in order)))
    out = lax_dot.dot_general(patches, rhs, dims, precision=precision)
    # out: (spatial in sorted out-spec order..., batch, features) -> the out spec's layout
    ndim = la.ndim
    batch_axis, feature_axis = ndim - 2, ndim - 1
    positions = [0] * ndim
    positions[out_spec[0]] = batch_axis
    positions[out_spec[1]] = feature_axis
    for i, d in enumerate(sorted(out_space)):
        positions[d] = i
    return shape_ops.transpose(out, tuple(positions))
