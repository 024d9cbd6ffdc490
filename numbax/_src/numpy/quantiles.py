"""numpy's order statistics (quantile, percentile, median and their nan-ignoring forms, and
nanargmax/nanargmin): one sort along the reduced axes, then gathers at (traced) positions."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axes, where
from numbax._src.numpy.reductions import _check_numeric, argmax, argmin

__all__ = [
    "quantile", "percentile", "median", "nanquantile", "nanpercentile", "nanmedian",
    "nanargmax", "nanargmin",
]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _to_last(x: Any, axes: tuple[int, ...]) -> Any:
    """x with the reduced axes merged into one last axis."""
    from numbax._src.numpy.shapes import moveaxis, reshape

    shape = get_aval(x).shape
    rest = [i for i in range(len(shape)) if i not in axes]
    x = moveaxis(x, axes, tuple(range(len(rest), len(shape))))
    n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    return reshape(x, tuple(shape[i] for i in rest) + (n,))


def _take_last(s: Any, idx: Any) -> Any:
    """s[..., idx] for an integer idx of shape q.shape + s.shape[:-1] (gathers on the last
    axis, s broadcast over q's axes)."""
    from numbax._src.numpy.indexing import take_along_axis

    out_shape = get_aval(idx).shape
    n = get_aval(s).shape[-1]
    lead = len(out_shape) - (get_aval(s).ndim - 1)
    sb = shape_ops.broadcast_in_dim(s, (*out_shape, n),
                                    tuple(range(lead, len(out_shape) + 1)))
    idx = shape_ops.reshape(idx, (*out_shape, 1))
    got = take_along_axis(sb, idx, axis=-1, mode="clip")
    return shape_ops.reshape(got, out_shape)


def _lerp(lo: Any, hi: Any, t: Any) -> Any:
    """numpy's interpolation: from the lower value below t = 0.5, from the upper above."""
    diff = lax.sub(hi, lo)
    one = lax.convert_element_type(1, get_aval(t).dtype)
    return where(lax.ge(t, lax.convert_element_type(0.5, get_aval(t).dtype)),
                 lax.sub(hi, lax.mul(diff, lax.sub(one, t))), lax.add(lo, lax.mul(diff, t)))


def _check_q(api: str, q: Any, dtype: np.dtype) -> Any:
    q = asarray(q)
    if kind_of(get_aval(q).dtype) == "c":
        raise NumbaxTypeError(f"numbax.numpy.{api}: q has dtype {get_aval(q).dtype}, expected "
                              "real values.")
    if not isinstance(q, core.Tracer) or q.to_concrete_value() is not None:
        value = np.asarray(q.to_concrete_value() if isinstance(q, core.Tracer) else q)
        if ((value < 0) | (value > 1)).any():
            raise NumbaxValueError(f"numbax.numpy.{api}: q {value.tolist()} must be in [0, 1] "
                                   "(percentiles in [0, 100]).")
    return lax.convert_element_type(q, dtype)


def _quantile(api: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              squash_nans: bool, weights: Any = None) -> Any:
    if method not in _METHODS:
        raise NumbaxValueError(f"numbax.numpy.{api}: method is {method!r}, expected one of "
                               f"{', '.join(repr(m) for m in _METHODS)}.")
    a = _check_numeric(a, api)
    aval = get_aval(a)
    ufuncs.refuse_complex(api, a)  # (quantiles have no order to follow)
    axes = canonicalize_axes(axis, aval.ndim, api)
    out_dtype = dtypes.to_inexact(aval.dtype)  # (JAX's: float32 for integers up to 32 bits)
    # half precision works in float32 (numpy's and JAX's results; positions past 2048 exact)
    acc = np.dtype(np.float32) if out_dtype.itemsize < 4 else out_dtype
    q = _check_q(api, q, acc)
    x = _to_last(lax.convert_element_type(a, acc), axes)
    n = get_aval(x).shape[-1]
    if n == 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: a has shape {aval.shape}; the reduced "
                               "axes are empty, expected at least one element.")
    q_nd = get_aval(q).ndim
    rest_shape = get_aval(x).shape[:-1]
    out_shape = get_aval(q).shape + rest_shape
    qb = shape_ops.broadcast_in_dim(q, out_shape, tuple(range(q_nd)))
    if weights is not None:
        val = _weighted_inverted_cdf(api, a, x, weights, axes, qb, out_shape, squash_nans)
    else:
        val = _positional(x, qb, out_shape, method, squash_nans, acc)
    if not squash_nans and kind_of(acc) == "f":
        has_nan = lax_reductions.reduce_or(ufuncs.isnan(x), (get_aval(x).ndim - 1,))
        has_nan = shape_ops.broadcast_in_dim(has_nan, out_shape,
                                             tuple(range(q_nd, len(out_shape))))
        val = where(has_nan, lax.convert_element_type(np.nan, acc), val)
    val = lax.convert_element_type(val, out_dtype)
    if keepdims:
        kept = tuple(1 if i in axes else d for i, d in enumerate(aval.shape))
        val = shape_ops.reshape(val, get_aval(q).shape + kept)
    return val


def _positional(x: Any, qb: Any, out_shape: tuple, method: str, squash_nans: bool,
                acc: np.dtype) -> Any:
    from numbax._src.numpy.sorting import sort

    n = get_aval(x).shape[-1]
    s = sort(x, axis=-1)
    q_nd = len(out_shape) - (get_aval(x).ndim - 1)
    if squash_nans and kind_of(acc) == "f":
        valid = lax.convert_element_type(lax.bitwise_not(ufuncs.isnan(x)), acc)
        counts = lax_reductions.reduce_sum(valid, (get_aval(x).ndim - 1,))
        counts = shape_ops.broadcast_in_dim(counts, out_shape, tuple(range(q_nd,
                                                                            len(out_shape))))
    else:
        counts = shape_ops.full(out_shape, n, acc)
    one = lax.convert_element_type(1, acc)
    last = lax.max(lax.sub(counts, one), lax.convert_element_type(0, acc))
    if method == "inverted_cdf":
        pos = lax.sub(lax.ceil(lax.mul(qb, counts)), one)
        pos = lax.max(lax.min(pos, last), lax.convert_element_type(0, acc))
        val = _take_last(s, lax.convert_element_type(pos, np.int64))
    else:
        pos = lax.mul(qb, last)
        lo_i, hi_i = lax.floor(pos), lax.min(lax.ceil(pos), last)
        if method == "nearest":
            # a tie goes to the lower neighbour, as JAX's (numpy rounds half to even)
            half = lax.convert_element_type(0.5, acc)
            lo_i = hi_i = lax.select(lax.le(lax.sub(pos, lo_i), half), lo_i, hi_i)
        lo = _take_last(s, lax.convert_element_type(lo_i, np.int64))
        hi = _take_last(s, lax.convert_element_type(hi_i, np.int64))
        if method in ("lower", "nearest"):
            val = lo
        elif method == "higher":
            val = hi
        elif method == "midpoint":
            val = lax.div(lax.add(lo, hi), lax.convert_element_type(2, acc))
        else:
            val = _lerp(lo, hi, lax.sub(pos, lo_i))
    if squash_nans and kind_of(acc) == "f":
        val = where(lax.eq(counts, lax.convert_element_type(0, acc)),
                    lax.convert_element_type(np.nan, acc), val)
    return val


def _weighted_inverted_cdf(api: str, a: Any, x: Any, weights: Any, axes: tuple, qb: Any,
                           out_shape: tuple, squash_nans: bool = False) -> Any:
    """The smallest value whose weighted CDF reaches q (numpy's inverted_cdf with weights).
    With squash_nans, NaNs get weight 0 (they sort last, so they are never reached)."""
    from numbax._src.numpy.reductions import cumsum
    from numbax._src.numpy.sorting import _lax_sort

    aval = get_aval(a)
    w = asarray(weights)
    if kind_of(get_aval(w).dtype) == "c":
        raise NumbaxTypeError(f"numbax.numpy.{api}: weights has dtype {get_aval(w).dtype}, "
                              "expected real weights.")
    reduced = tuple(aval.shape[i] for i in axes)
    if get_aval(w).shape == reduced and get_aval(w).shape != aval.shape:
        w = shape_ops.broadcast_in_dim(w, aval.shape, axes)
    if get_aval(w).shape != aval.shape:
        raise NumbaxValueError(f"numbax.numpy.{api}: weights has shape {get_aval(w).shape}, "
                               f"expected a's shape {aval.shape} or the reduced axes' "
                               f"{reduced}.")
    w = _to_last(lax.convert_element_type(w, get_aval(x).dtype), axes)
    if squash_nans:
        w = where(ufuncs.isnan(x), lax.convert_element_type(0, get_aval(x).dtype), w)
    s, sw = _lax_sort((x, w), get_aval(x).ndim - 1)
    cw = cumsum(sw, axis=-1)
    n = get_aval(x).shape[-1]
    total = shape_ops.slice(cw, (0,) * (get_aval(cw).ndim - 1) + (n - 1,),
                            get_aval(cw).shape)
    cdf = lax.div(cw, ufuncs.broadcast_to_shape(total, get_aval(cw).shape))
    q_nd = len(out_shape) - (get_aval(x).ndim - 1)
    cdf_b = shape_ops.broadcast_in_dim(cdf, (*out_shape, n), tuple(range(q_nd,
                                                                         len(out_shape) + 1)))
    q_b = shape_ops.broadcast_in_dim(qb, (*out_shape, n), tuple(range(len(out_shape))))
    below = lax.convert_element_type(lax.lt(cdf_b, q_b), np.int64)
    idx = lax.min(lax_reductions.reduce_sum(below, (len(out_shape),)), np.int64(n - 1))
    return _take_last(s, idx)


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """numpy.quantile: the q-th quantiles of `a` along `axis` (NaN where a slice has NaN).

    Args:
      a: real array. q: quantiles in [0, 1] (may be traced).
      axis: None, an int or a tuple of ints. keepdims: keep reduced axes with size 1.
      method: 'linear' (default), 'lower', 'higher', 'midpoint', 'nearest' or
        'inverted_cdf' (the only one taking weights=, as in numpy and JAX).

    Returns:
      An array of shape q.shape + the unreduced shape; always inexact, as in JAX (unlike
      numpy, which keeps integers for 'lower', 'higher' and 'nearest').

    >>> quantile(asarray([1.0, 2.0, 4.0, 8.0]), asarray([0.5, 1.0]))
    Array([3., 8.], dtype=float64)
    """
    if weights is not None and method != "inverted_cdf":
        raise NumbaxValueError(f"numbax.numpy.quantile: method {method!r} takes no weights; "
                               "only method='inverted_cdf' supports weights.")
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    """numpy.nanquantile: quantile ignoring NaNs (an all-NaN slice gives NaN).

    Args:
      a, q, axis, method, keepdims, weights: as in quantile (NaNs get weight 0).

    Returns:
      The quantiles of the non-NaN values.
    """
    if weights is not None and method != "inverted_cdf":
        raise NumbaxValueError(f"numbax.numpy.nanquantile: method {method!r} takes no "
                               "weights; only method='inverted_cdf' supports weights.")
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    """numpy.percentile: quantile with q in [0, 100].

    Args:
      a, axis, method, keepdims, weights: as in quantile. q: percentiles in [0, 100].

    Returns:
      The percentiles, of shape q.shape + the unreduced shape.
    """
    q = ufuncs.true_divide(asarray(q), 100)
    return quantile(a, q, axis, method=method, keepdims=keepdims, weights=weights)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    """numpy.nanpercentile: nanquantile with q in [0, 100].

    Args:
      a, axis, method, keepdims, weights: as in quantile. q: percentiles in [0, 100].

    Returns:
      The percentiles, of shape q.shape + the unreduced shape.
    """
    q = ufuncs.true_divide(asarray(q), 100)
    return nanquantile(a, q, axis, method=method, keepdims=keepdims, weights=weights)


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """numpy.median: the 0.5 quantile (NaN where a slice has NaN).

    Args:
      a: a real array. axis: None, an int or a tuple. keepdims: keep reduced axes.

    Returns:
      The medians.
    """
    return quantile(a, 0.5, axis, keepdims=keepdims)


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """numpy.nanmedian: the median ignoring NaNs (an all-NaN slice gives NaN).

    Args:
      a, axis, keepdims: as in median.

    Returns:
      The medians of the non-NaN values.
    """
    return nanquantile(a, 0.5, axis, keepdims=keepdims)


def _nan_arg(api: str, reducer: Any, fill: float, a: Any, axis: int | None,
             keepdims: bool | None) -> Any:
    from numbax._src.numpy.reductions import all as all_

    a = _check_numeric(a, api)
    keepdims = bool(keepdims)
    if kind_of(get_aval(a).dtype) not in "fc":
        return reducer(a, axis, keepdims=keepdims)
    nans = ufuncs.isnan(a)
    filled = where(nans, lax.convert_element_type(fill, get_aval(a).dtype), a)
    out = reducer(filled, axis, keepdims=keepdims)
    all_nan = all_(nans, axis, keepdims=keepdims)
    return where(all_nan, lax.convert_element_type(-1, get_aval(out).dtype), out)


def nanargmax(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
    """numpy.nanargmax: argmax ignoring NaNs. As in JAX, an all-NaN slice gives -1 (numpy
    raises, which a traced value cannot).

    >>> nanargmax(asarray([1.0, float("nan"), 3.0]))
    Array(2, dtype=int64)
    """
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, keepdims)


def nanargmin(a: Any, axis: int | None = None, out: None = None,
              keepdims: bool | None = None) -> Any:
    """numpy.nanargmin: argmin ignoring NaNs; an all-NaN slice gives -1, as in JAX.

    Args:
      a: the array. axis: None (flattened) or an int. keepdims: keep the reduced axis.

    Returns:
      Indices (the default int dtype).
    """
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, keepdims)

