"""numpy's counting and second-moment statistics: bincount, digitize, the histogram family,
cov and corrcoef. Counting is a scatter-add into static-length bins, so it traces."""
from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, static_int, where

__all__ = [
    "bincount", "digitize", "histogram_bin_edges", "histogram", "histogram2d", "histogramdd",
    "cov", "corrcoef",
]

_INT = np.int64


def _jax_inexact(dtype: Any) -> np.dtype:
    """JAX's dtypes.to_inexact_dtype: floats and complexes stay; 64-bit integers give float64
    (float32 without x64), every other integer and bool gives float32 (numpy's rules give
    float16 for int8 and float64 for int32)."""
    dt = np.dtype(dtype)
    if kind_of(dt) in "fc":
        return dt
    wide = dt.itemsize >= 8 and kind_of(dt) in "iu"
    return dtypes.canonicalize_dtype(np.float64 if wide else np.float32)


def _inexact_operands(api: str, *args: Any) -> list:
    """JAX's promote_dtypes_inexact for histogram's operands: one promoted inexact dtype."""
    args = ufuncs.promote_dtypes(api, *args)
    dtype = _jax_inexact(get_aval(args[0]).dtype)
    return [lax.convert_element_type(x, dtype) for x in args]


def _is_abstract(x: Any) -> bool:
    return isinstance(x, core.Tracer) and x.to_concrete_value() is None


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding: Any = None) -> Any:
    """numpy.bincount: how often each non-negative int occurs (or the sum of its weights).

    length (JAX) fixes the output size so x can be traced: larger values are dropped. Without
    length, x must be concrete (the size is max(x) + 1). Unlike numpy, negative values count in
    bin 0, as in JAX.

    >>> bincount(asarray([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int64)
    """
    if out_sharding is not None:
        raise NumbaxValueError(f"numbax.numpy.bincount: out_sharding is {out_sharding!r}; only "
                               "None is supported.")
    x = asarray(x)
    if kind_of(get_aval(x).dtype) not in "biu":
        raise NumbaxTypeError(f"numbax.numpy.bincount: x has dtype {get_aval(x).dtype}, "
                              "expected non-negative integers.")
    if get_aval(x).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.bincount: x has shape {get_aval(x).shape}, "
                               "expected a 1-d array.")
    minlength = static_int(minlength, "bincount", "minlength")
    if minlength < 0:
        raise NumbaxValueError(f"numbax.numpy.bincount: minlength is {minlength}, expected >= 0.")
    if not _is_abstract(x):
        value = np.asarray(x.to_concrete_value() if isinstance(x, core.Tracer) else x)
        if length is None:
            top = builtins.max(0, int(value.max())) + 1 if value.size else 0
            length = builtins.max(minlength, top)
    elif length is None:
        core.concrete_or_error(x, "numbax.numpy.bincount (pass a static length= to trace it)")
    length = static_int(length, "bincount", "length")
    if weights is None:
        w = shape_ops.full(get_aval(x).shape, 1, _INT)
    else:
        w = asarray(weights)
        if get_aval(w).shape != get_aval(x).shape:
            raise NumbaxValueError(f"numbax.numpy.bincount: weights has shape "
                                   f"{get_aval(w).shape}, expected x's shape {get_aval(x).shape}.")
        (w,) = ufuncs.promote_dtypes("bincount", w)
        if kind_of(get_aval(w).dtype) == "b":
            raise NumbaxTypeError("numbax.numpy.bincount: weights has dtype bool, expected "
                                  "integer, floating or complex weights (as JAX: add does not "
                                  "accept bool). Pass weights.astype(int).")
    idx = lax.max(lax.convert_element_type(x, _INT), _INT(0))
    return shape_ops.full((length,), 0, get_aval(w).dtype).at[idx].add(w, mode="drop")


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """numpy.digitize: the index of the bin holding each x, for increasing or decreasing bins
    (which is decided from the values, so bins may be traced).

    >>> digitize(asarray([0.2, 6.4, 3.0]), asarray([0.0, 1.0, 2.5, 4.0]))
    Array([1, 4, 3], dtype=int32)
    """
    from numbax._src.numpy.sorting import searchsorted

    x, bins = asarray(x), asarray(bins)
    if get_aval(bins).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.digitize: bins has shape {get_aval(bins).shape}, "
                               "expected a 1-d monotonic array.")
    if method not in (None, "scan", "sort", "compare_all", "scan_unrolled"):
        raise NumbaxValueError(f"numbax.numpy.digitize: method is {method!r}, expected None, "
                               "'scan', 'scan_unrolled', 'sort' or 'compare_all'.")
    n = get_aval(bins).shape[0]
    if n == 0:
        return shape_ops.full(get_aval(x).shape, 0, _INT)
    side = "left" if right else "right"
    flipped = shape_ops.rev(bins, (0,))
    up = searchsorted(bins, x, side=side)
    down = ufuncs.subtract(n, searchsorted(flipped, x, side=side))
    first = shape_ops.reshape(shape_ops.slice(bins, (0,), (1,)), ())
    last = shape_ops.reshape(shape_ops.slice(bins, (n - 1,), (n,)), ())
    return where(ufuncs.greater_equal(last, first), up, down)


def _edges(api: str, a: Any, bins: Any, range_: Any) -> Any:
    """The bin edges of a flat sample `a` for an int count or explicit edges."""
    from numbax._src.numpy.creation import linspace
    from numbax._src.numpy.reductions import max as max_
    from numbax._src.numpy.reductions import min as min_

    if isinstance(bins, str):
        raise NumbaxValueError(f"numbax.numpy.{api}: bins is {bins!r}; string bin rules are not "
                               "supported (as in JAX). Pass an int or the bin edges.")
    if isinstance(bins, (int, np.integer)) or (
            not isinstance(bins, (list, tuple)) and get_aval(asarray(bins)).ndim == 0):
        count = static_int(bins, api, "bins")
        if count < 1:
            raise NumbaxValueError(f"numbax.numpy.{api}: bins is {count}, expected at least 1.")
        dtype = _jax_inexact(get_aval(a).dtype)
        if range_ is None:
            if get_aval(a).size == 0:
                lo, hi = asarray(0.0, dtype), asarray(1.0, dtype)
            else:
                lo, hi = min_(a), max_(a)
        else:
            if len(range_) != 2:
                raise NumbaxValueError(f"numbax.numpy.{api}: range has {len(range_)} entries, "
                                       "expected (min, max).")
            lo, hi = asarray(range_[0]), asarray(range_[1])
        lo, hi = lax.convert_element_type(lo, dtype), lax.convert_element_type(hi, dtype)
        same = lax.eq(lo, hi)
        half = lax.convert_element_type(0.5, dtype)
        lo = where(same, lax.sub(lo, half), lo)
        hi = where(same, lax.add(hi, half), hi)
        return linspace(lo, hi, count + 1)
    edges = lax.convert_element_type(asarray(bins), _jax_inexact(get_aval(a).dtype))
    if get_aval(edges).ndim != 1 or get_aval(edges).shape[0] < 2:
        raise NumbaxValueError(f"numbax.numpy.{api}: bins has shape {get_aval(edges).shape}, "
                               "expected an int or a 1-d array of at least 2 edges.")
    return edges


def histogram_bin_edges(a: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                        weights: Any = None) -> Any:
    """numpy.histogram_bin_edges: the edges histogram would use.

    Args:
      a: the data (flattened). bins: an int count or the edges (string rules are not
        supported, as in JAX). range: (min, max) for an int count; the data's range by
        default. weights: accepted for numpy compatibility (edges do not depend on them).

    Returns:
      The bin edges.
    """
    from numbax._src.numpy.shapes import ravel

    return _edges("histogram_bin_edges", ravel(asarray(a)), bins, range)


def _bin_index(values: Any, edges: Any) -> Any:
    """1..nbins for values inside [edges[0], edges[-1]] (the last bin is closed), 0 or
    nbins + 1 outside."""
    from numbax._src.numpy.sorting import searchsorted

    n = get_aval(edges).shape[0]
    idx = searchsorted(edges, values, side="right")
    last = shape_ops.reshape(shape_ops.slice(edges, (n - 1,), (n,)), ())
    return where(ufuncs.equal(values, last), n - 1, idx)


def histogram(a: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
              weights: Any = None, density: bool | None = None) -> tuple[Any, Any]:
    """numpy.histogram: (counts, bin_edges); traces (the counts are a scatter-add).

    As JAX (unlike numpy), the counts have the float dtype of a and weights promoted together.

    >>> histogram(asarray([0.1, 0.5, 0.5, 1.0, 2.0]), 3)[0]
    Array([3., 1., 1.], dtype=float64)
    """
    from numbax._src.numpy.shapes import ravel

    if weights is None:
        (a,) = _inexact_operands("histogram", asarray(a))
        weights = shape_ops.full(get_aval(a).shape, 1, get_aval(a).dtype)
    else:
        if np.shape(a) != np.shape(weights):
            raise NumbaxValueError(f"numbax.numpy.histogram: weights has shape "
                                   f"{np.shape(weights)} and a has shape {np.shape(a)}, "
                                   "expected the same shape.")
        a, weights = _inexact_operands("histogram", asarray(a), asarray(weights))
    flat = ravel(a)
    edges = _edges("histogram", flat, bins, range)
    counts = _dd_counts("histogram", [flat], [edges], weights, density)
    return counts, edges


def _dd_counts(api: str, samples: list, edges: list, weights: Any, density: Any) -> Any:
    """Counts (or weights) of the points in each cell of the grid the edges define."""
    from numbax._src.numpy.index_tricks import ravel_multi_index
    from numbax._src.numpy.shapes import ravel, reshape

    n = get_aval(samples[0]).shape[0]
    nbins = [get_aval(e).shape[0] - 1 for e in edges]
    if weights is None:  # JAX's bincount: default-int counts, as float only for density
        dtype = get_aval(samples[0]).dtype if density else dtypes.canonicalize_dtype(_INT)
        w = shape_ops.full((n,), 1, dtype)
    else:  # promoted with the samples (by the caller)
        w = ravel(asarray(weights))
        if get_aval(w).shape != (n,):
            raise NumbaxValueError(f"numbax.numpy.{api}: weights has shape "
                                   f"{get_aval(asarray(weights)).shape}, expected one weight per "
                                   "sample point.")
    cells = [_bin_index(s, e) for s, e in zip(samples, edges)]
    flat = ravel_multi_index(cells, [b + 2 for b in nbins], mode="clip")
    total = int(np.prod([b + 2 for b in nbins]))
    grid = shape_ops.full((total,), 0, get_aval(w).dtype).at[flat].add(w)
    grid = reshape(grid, tuple(b + 2 for b in nbins))
    counts = shape_ops.slice(grid, (1,) * len(nbins), tuple(b + 1 for b in nbins))
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = lax.convert_element_type(lax.sub(shape_ops.slice(e, (1,), (nbins[d] + 1,)),
                                                     shape_ops.slice(e, (0,), (nbins[d],))),
                                             get_aval(counts).dtype)
            width = shape_ops.broadcast_in_dim(width, tuple(nbins), (d,))
            volume = width if volume is None else lax.mul(volume, width)
        from numbax._src.numpy.reductions import sum as sum_

        counts = lax.div(lax.div(counts, volume), sum_(counts))
    return counts


def histogramdd(sample: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple[Any, list]:
    """numpy.histogramdd: counts of the (N, D) sample points in a D-dimensional grid, and the
    per-dimension edges. As JAX, unweighted counts are default ints (floats with density) and
    weighted ones have the float dtype of sample and weights promoted together."""
    if weights is None:
        (s,) = _inexact_operands("histogramdd", asarray(sample))
    else:
        s, weights = _inexact_operands("histogramdd", asarray(sample), asarray(weights))
    if get_aval(s).ndim == 1:
        s = shape_ops.reshape(s, (get_aval(s).shape[0], 1))
    if get_aval(s).ndim != 2:
        raise NumbaxValueError(f"numbax.numpy.histogramdd: sample has shape {get_aval(s).shape}, "
                               "expected (N, D) points.")
    n, d = get_aval(s).shape
    if isinstance(bins, (int, np.integer)) or (not isinstance(bins, (list, tuple))
                                                and get_aval(asarray(bins)).ndim == 0):
        bins = [bins] * d
    if len(bins) != d:
        raise NumbaxValueError(f"numbax.numpy.histogramdd: bins has {len(bins)} entries, "
                               f"expected one per dimension ({d}).")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise NumbaxValueError(f"numbax.numpy.histogramdd: range has {len(ranges)} entries, "
                               f"expected one (min, max) per dimension ({d}).")
    cols = [shape_ops.reshape(shape_ops.slice(s, (0, j), (n, j + 1)), (n,))
            for j in builtins.range(d)]
    edges = [_edges("histogramdd", c, b, r) for c, b, r in zip(cols, bins, ranges)]
    return _dd_counts("histogramdd", cols, edges, weights, density), edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple[Any, Any, Any]:
    """numpy.histogram2d: (counts, x_edges, y_edges); bins is an int, [nx, ny], edges or a
    pair of edge arrays."""
    from numbax._src.numpy.shapes import stack

    x, y = ufuncs.promote_dtypes("histogram2d", asarray(x), asarray(y))
    if get_aval(x).shape != get_aval(y).shape or get_aval(x).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.histogram2d: x has shape {get_aval(x).shape} and "
                               f"y has shape {get_aval(y).shape}, expected two 1-d arrays of "
                               "one length.")
    if not isinstance(bins, (list, tuple)) and get_aval(asarray(bins)).ndim == 1:
        bins = [bins, bins]
    elif isinstance(bins, (list, tuple)) and len(bins) != 2:
        bins = [bins, bins]
    counts, (ex, ey) = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return counts, ex, ey


# ----------------------------------------------------------------------------- moments


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """numpy.cov: the covariance matrix of the variables (rows, or columns if not rowvar),
    with frequency and analytic weights.

    >>> cov(asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float64)
    """
    from numbax._src.numpy.linalg_ops import matmul
    from numbax._src.numpy.reductions import sum as sum_
    from numbax._src.numpy.shapes import atleast_2d, concatenate, squeeze

    x = asarray(m)
    if get_aval(x).ndim > 2:
        raise NumbaxValueError(f"numbax.numpy.cov: m has shape {get_aval(x).shape}, expected at "
                               "most 2 dimensions.")
    x = atleast_2d(x)
    if not rowvar and get_aval(x).shape[0] != 1:
        x = x.T
    if y is not None:
        yy = asarray(y)
        if get_aval(yy).ndim > 2:
            raise NumbaxValueError(f"numbax.numpy.cov: y has shape {get_aval(yy).shape}, "
                                   "expected at most 2 dimensions.")
        yy = atleast_2d(yy)
        if not rowvar and get_aval(yy).shape[0] != 1:
            yy = yy.T
        x = concatenate([x, yy], axis=0)
    out_dtype = dtypes.to_inexact(get_aval(x).dtype) if dtype is None else \
        dtypes.canonicalize_dtype(dtype, context="numbax.numpy.cov")
    x = lax.convert_element_type(x, out_dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    n = get_aval(x).shape[1]
    w = None
    for name, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is None:
            continue
        wt = asarray(weights)
        if get_aval(wt).shape != (n,):
            raise NumbaxValueError(f"numbax.numpy.cov: {name} has shape {get_aval(wt).shape}, "
                                   f"expected ({n},), one weight per observation.")
        if name == "fweights" and kind_of(get_aval(wt).dtype) not in "biu":
            raise NumbaxTypeError(f"numbax.numpy.cov: fweights has dtype {get_aval(wt).dtype}, "
                                  "expected integers.")
        wt = lax.convert_element_type(wt, finfo_of(out_dtype).dtype)
        w = wt if w is None else lax.mul(w, wt)
    if w is None:
        avg = ufuncs.true_divide(sum_(x, axis=1), n)
        fact = lax.convert_element_type(n - ddof, finfo_of(out_dtype).dtype)
    else:
        w_sum = sum_(w)
        avg = ufuncs.true_divide(sum_(ufuncs.multiply(x, w), axis=1), w_sum)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = ufuncs.subtract(w_sum, ddof)
        else:
            aw = lax.convert_element_type(asarray(aweights), finfo_of(out_dtype).dtype)
            fact = ufuncs.subtract(w_sum, ufuncs.true_divide(
                ufuncs.multiply(ddof, sum_(ufuncs.multiply(w, aw))), w_sum))
    fact = lax.max(fact, lax.convert_element_type(0, get_aval(fact).dtype))
    xc = ufuncs.subtract(x, shape_ops.reshape(avg, (get_aval(avg).shape[0], 1)))
    xw = xc if w is None else ufuncs.multiply(xc, w)
    c = matmul(xc, lax.conj(xw.T) if kind_of(out_dtype) == "c" else xw.T)
    return squeeze(ufuncs.true_divide(c, fact))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """numpy.corrcoef: Pearson correlation coefficients (real parts clipped to [-1, 1]).

    >>> corrcoef(asarray([[1.0, 2.0, 4.0], [2.0, 4.0, 8.0]]))
    Array([[1., 1.],
           [1., 1.]], dtype=float64)
    """
    from numbax._src.numpy.creation import diagonal
    from numbax._src.numpy.lax_numpy import clip

    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return ufuncs.true_divide(c, c)
    d = diagonal(c)
    std = lax.sqrt(ufuncs.real(d))
    k = get_aval(d).shape[0]
    c = ufuncs.true_divide(c, shape_ops.broadcast_in_dim(std, (k, k), (0,)))
    c = ufuncs.true_divide(c, shape_ops.broadcast_in_dim(std, (k, k), (1,)))
    if kind_of(get_aval(c).dtype) == "c":
        return lax.complex_(clip(lax.real(c), -1, 1), clip(lax.imag(c), -1, 1))
    return clip(c, -1, 1)

