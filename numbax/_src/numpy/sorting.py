"""numpy's sorting, searching and differencing (sort, argsort, searchsorted, unique, diff)."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import asarray_value
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import refuses_keys
from numbax._src.numpy import indexing, ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis, concrete_value

__all__ = [
    "sort", "argsort", "searchsorted", "nonzero", "argwhere", "flatnonzero", "diff",
    "ediff1d", "lexsort", "interp", "sort_complex",
]


def _lax_sort(operands: tuple, dimension: int, num_keys: int = 1) -> tuple:
    from numbax._src.lax import sort as lax_sort

    return tuple(lax_sort.sort(operands, dimension=dimension, is_stable=True, num_keys=num_keys))


def _prepare(api: str, a: Any, axis: int | None) -> tuple[Any, int]:
    a = asarray(a)
    if axis is None:
        return shape_ops.reshape(a, (get_aval(a).size,)), 0
    if get_aval(a).ndim == 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: a has shape (), expected at least 1 "
                               "dimension (or axis=None).")
    return a, canonicalize_axis(axis, get_aval(a).ndim, api)


@refuses_keys("a")
def sort(a: Any, axis: int | None = -1, *, kind: str | None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
    """numpy.sort (always stable; NaNs sort last, as in numpy)."""
    a, ax = _prepare("sort", a, axis)
    if descending:
        from numbax._src.numpy.flips import flip

        return flip(sort(flip(a, ax), ax), ax)
    (out,) = _lax_sort((a,), ax)
    return out


@refuses_keys("a")
def argsort(a: Any, axis: int | None = -1, *, kind: str | None = None, order: None = None,
            stable: bool = True, descending: bool = False) -> Any:
    """numpy.argsort (stable): a multi-operand sort that carries an iota along.

    Args:
      a: the array. axis: the axis to sort along (None sorts the flattened array).
      kind, order, stable: accepted for numpy compatibility; the sort is always stable.
      descending: sort from largest to smallest, keeping ties in input order.

    Returns:
      Indices (default int dtype) that sort `a` along `axis`.

    >>> argsort([3, 1, 2])
    Array([1, 2, 0], dtype=int64)
    """
    from numbax._src.numpy.creation import iota

    a, ax = _prepare("argsort", a, axis)
    shape = get_aval(a).shape
    idx = iota(dtypes.default_int_dtype(), shape, ax)
    if descending:
        from numbax._src.numpy.flips import flip

        n = shape[ax]
        _, perm = _lax_sort((flip(a, ax), flip(idx, ax)), ax)
        # Reversing a stable ascending sort of the reversed input keeps ties in input order.
        return flip(perm, ax) if n else perm
    _, perm = _lax_sort((a, idx), ax)
    return perm


@refuses_keys("keys")
def lexsort(keys: Any, axis: int = -1) -> Any:
    """numpy.lexsort: sorts by the last key first."""
    from numbax._src.numpy.creation import iota

    keys = [asarray(k) for k in keys]
    if not keys:
        raise NumbaxValueError("numbax.numpy.lexsort: keys is empty, expected at least one key.")
    keys = [ufuncs.broadcast_to_shape(k, get_aval(keys[0]).shape) for k in keys]
    shape = get_aval(keys[0]).shape
    ax = canonicalize_axis(axis, len(shape), "lexsort")
    idx = iota(dtypes.default_int_dtype(), shape, ax)
    outs = _lax_sort((*reversed(keys), idx), ax, num_keys=len(keys))
    return outs[-1]


def _lt_nan_last(x: Any, y: Any) -> Any:
    """x < y in numpy's sort order, where NaN is larger than everything; complex values by
    real part, then imaginary part (lax.lt takes no complex values)."""
    kind = kind_of(get_aval(x).dtype)
    if kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        same_real = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(lax.ne(xr, xr), lax.ne(yr, yr)))
        return lax.bitwise_or(_lt_nan_last(xr, yr), lax.bitwise_and(
            same_real, _lt_nan_last(lax.imag(x), lax.imag(y))))
    if kind != "f":
        return lax.lt(x, y)
    return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(lax.eq(x, x), lax.ne(y, y)))


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """numpy.searchsorted on a sorted 1-d `a`: for each v, the count of entries of `a` before
    it (side "left": less than v; "right": not greater), NaN sorting last as in numpy.

    `method` is JAX's choice of algorithm; every method gives the same indices. Real values
    take a binary search per value (compiled: runtime/search.py), "compare_all" and complex
    values count every entry of `a` for every value (O(len(a)) each, as JAX's compare_all).
    """
    if side not in ("left", "right"):
        raise NumbaxValueError(f"numbax.numpy.searchsorted: side {side!r} is invalid, expected "
                               "'left' or 'right'.")
    if method not in _SEARCH_METHODS:
        raise NumbaxValueError(f"numbax.numpy.searchsorted: method {method!r} is invalid, "
                               f"expected one of {list(_SEARCH_METHODS)}.")
    a, v = ufuncs.promote_dtypes("searchsorted", a, v)
    if get_aval(a).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.searchsorted: a has shape {get_aval(a).shape}, "
                               "expected a 1-d sorted array.")
    if sorter is not None:  # the positions in a sorted by `sorter`, as numpy and JAX give
        a = indexing.take(a, sorter, mode="clip")
    n = get_aval(a).shape[0]
    index_dtype = dtypes.index_dtype(n)
    if method == "compare_all" or kind_of(get_aval(a).dtype) == "c":
        return count_before(a, v, side == "right", index_dtype)
    from numbax._src.lax import sort as lax_sort

    return lax_sort.searchsorted_p.bind(a, v, right=side == "right",
                                        index_dtype=np.dtype(index_dtype))


def count_before(a: Any, v: Any, right: bool, index_dtype: Any) -> Any:
    """searchsorted by counting (JAX's compare_all): a 1-d `a`: for each value, the entries of
    `a` before it."""
    v_shape = get_aval(v).shape
    out_shape = (*v_shape, get_aval(a).shape[0])
    ab = shape_ops.broadcast_in_dim(a, out_shape, (len(v_shape),))
    vb = shape_ops.broadcast_in_dim(v, out_shape, tuple(range(len(v_shape))))
    before = lax.bitwise_not(_lt_nan_last(vb, ab)) if right else _lt_nan_last(ab, vb)
    counts = lax.convert_element_type(before, index_dtype)
    return lax_reductions.reduce_sum(counts, (len(v_shape),))


# ----------------------------------------------------------------------------- concrete-only


def _concrete(a: Any, api: str) -> np.ndarray:
    value = concrete_value(asarray(a), f"numbax.numpy.{api}")
    return np.asarray(value)


def _index_array(x: np.ndarray) -> Any:
    return asarray_value(np.asarray(x, dtype=np.int64))


def compact(mask: Any, size: int, fills: tuple, *values: Any) -> list:
    """The entries of each 1-d `values` where the 1-d `mask` holds, in order, in an array of
    length `size` padded with the matching entry of `fills` (traceable: a scatter to ranks)."""
    from numbax._src.numpy.reductions import cumsum

    n = get_aval(mask).shape[0]
    rank = ufuncs.subtract(cumsum(mask), 1)
    target = lax.select(mask, rank, shape_ops.full((n,), size, get_aval(rank).dtype))
    outs = []
    for v, fill in zip(values, fills):
        dtype = get_aval(v).dtype
        base = ufuncs.add(shape_ops.full((size,), 0, dtype), lax.convert_element_type(
            asarray(fill), dtype))
        outs.append(base.at[target].set(v, mode="drop") if n else base)
    return outs


def _is_abstract(a: Any) -> bool:
    from numbax._src import core

    return isinstance(a, core.Tracer) and a.to_concrete_value() is None


@refuses_keys("a")
def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """numpy.nonzero: the indices of the nonzero entries, one array per axis.

    The output size depends on the values, so a traced `a` needs a static `size` (as in
    JAX): the first `size` indices, padded with `fill_value` (0 by default; a tuple gives one
    per axis).
    """
    a = asarray(a)
    if get_aval(a).ndim == 0:
        raise NumbaxValueError("numbax.numpy.nonzero: a has shape (), expected at least 1 "
                               "dimension. Use atleast_1d first.")
    fill = 0 if fill_value is None else fill_value
    fills = tuple(fill) if isinstance(fill, (tuple, list)) else (fill,) * get_aval(a).ndim
    if len(fills) != get_aval(a).ndim:
        raise NumbaxValueError(f"numbax.numpy.nonzero: fill_value has {len(fills)} entries, "
                               f"expected one per axis ({get_aval(a).ndim}).")
    if size is None or not _is_abstract(a):
        value = _concrete(a, "nonzero")
        idx = np.nonzero(value)
        if size is not None:
            size = operator.index(size)
            idx = tuple(np.concatenate([i[:size], np.full(max(size - len(i), 0), f, np.int64)])
                        for i, f in zip(idx, fills))
        return tuple(_index_array(i) for i in idx)
    from numbax._src.numpy.index_tricks import unravel_index
    from numbax._src.numpy.shapes import ravel

    size = operator.index(size)
    shape = get_aval(a).shape
    flat = ufuncs.asbool(ravel(a))
    positions = asarray_value(np.arange(get_aval(flat).size, dtype=np.int64))
    (first,) = compact(flat, size, (-1,), positions)
    coords = unravel_index(lax.max(first, np.int64(0)), shape)
    padding = lax.lt(first, np.int64(0))
    return tuple(lax.select(padding, shape_ops.full((size,), f, np.int64), c)
                 for c, f in zip(coords, [np.int64(f) for f in fills]))


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    from numbax._src.numpy.shapes import ravel

    return nonzero(ravel(asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """numpy.argwhere: the (count, ndim) indices of the nonzero entries (size= as nonzero)."""
    from numbax._src.numpy.shapes import atleast_1d, stack

    a = asarray(a)
    if get_aval(a).ndim == 0:
        a = atleast_1d(a)
        cols = nonzero(a, size=size, fill_value=fill_value)
        return shape_ops.full((get_aval(cols[0]).shape[0], 0), 0, np.int64)
    cols = nonzero(a, size=size, fill_value=fill_value)
    return stack(cols, axis=-1)


# ----------------------------------------------------------------------------- differences


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """numpy.diff: n-th discrete difference along `axis` (not_equal for booleans)."""
    from numbax._src.numpy.shapes import _slice_axis, concatenate

    a = asarray(a)
    n = operator.index(n)
    if n < 0:
        raise NumbaxValueError(f"numbax.numpy.diff: order n={n} must be non-negative.")
    if get_aval(a).ndim == 0:
        raise NumbaxValueError("numbax.numpy.diff: a has shape (), expected at least 1 "
                               "dimension.")
    ax = canonicalize_axis(axis, get_aval(a).ndim, "diff")
    if n == 0:
        return a  # numpy ignores prepend/append for n=0
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = asarray(extra)
        if get_aval(extra).ndim == 0:
            shape = list(get_aval(a).shape)
            shape[ax] = 1
            extra = ufuncs.broadcast_to_shape(extra, tuple(shape))
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], ax)
    for _ in range(n):
        length = get_aval(a).shape[ax]
        if length == 0:
            break
        hi = _slice_axis(a, ax, 1, length)
        lo = _slice_axis(a, ax, 0, length - 1)
        a = ufuncs.not_equal(hi, lo) if get_aval(a).dtype == dtypes.bool_ else \
            ufuncs.subtract(hi, lo)
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    from numbax._src.numpy.shapes import concatenate, ravel

    ary = ravel(asarray(ary))
    if get_aval(ary).dtype == dtypes.bool_:  # numpy and JAX subtract, which bools lack
        raise NumbaxTypeError("numbax.numpy.ediff1d: ary has dtype bool, which has no "
                              "subtraction. Convert it first, e.g. ary.astype(int).")
    out = diff(ary)
    parts = []
    if to_begin is not None:
        parts.append(ravel(asarray(to_begin, get_aval(out).dtype)))
    parts.append(out)
    if to_end is not None:
        parts.append(ravel(asarray(to_end, get_aval(out).dtype)))
    return concatenate(parts) if len(parts) > 1 else out


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """numpy.interp: piecewise-linear interpolation on increasing 1-d xp (real x and xp; a
    complex fp gives a complex result). With `period`, xp is taken modulo period and the ends
    wrap around (left and right are ignored). Computed, as in JAX, in the float dtype of x's,
    xp's and fp's promoted dtype (float32 for int32 inputs; numpy: float64)."""
    from numbax._src.numpy.dtypes_api import result_type
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.lax_numpy import clip, where

    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    for v in (x, xp):  # (only fp may be complex)
        ufuncs.refuse_complex("interp", v)
    f_dtype = dtypes.to_inexact(result_type(x, xp, fp))
    dtype = dtypes.finfo_of(f_dtype).dtype  # x and xp are real
    x, xp = (lax.convert_element_type(v, dtype) for v in (x, xp))
    fp = lax.convert_element_type(fp, f_dtype)
    if get_aval(xp).ndim != 1 or get_aval(fp).shape != get_aval(xp).shape or \
            get_aval(xp).shape[0] == 0:
        raise NumbaxValueError(
            f"numbax.numpy.interp: xp has shape {get_aval(xp).shape} and fp has shape "
            f"{get_aval(fp).shape}, expected two non-empty 1-d arrays of one length."
        )
    if period is not None:
        x, xp, fp = _periodic_points(x, xp, fp, period)
        left = right = None
    n = get_aval(xp).shape[0]
    if n == 1:
        y = ufuncs.add(ufuncs.multiply(x, 0.0), take(fp, 0))
    else:
        i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
        x0, x1 = take(xp, ufuncs.subtract(i, 1)), take(xp, i)
        y0, y1 = take(fp, ufuncs.subtract(i, 1)), take(fp, i)
        dx = ufuncs.subtract(x1, x0)
        safe_dx = where(lax.eq(dx, lax.convert_element_type(0, dtype)), 1.0, dx)
        t = ufuncs.divide(ufuncs.subtract(x, x0), safe_dx)
        y = ufuncs.add(y0, ufuncs.multiply(t, ufuncs.subtract(y1, y0)))
    lo = take(fp, 0) if left is None else left
    hi = take(fp, n - 1) if right is None else right
    y = where(ufuncs.less(x, take(xp, 0)), lo, y)
    return lax.convert_element_type(where(ufuncs.greater(x, take(xp, n - 1)), hi, y), f_dtype)


def _periodic_points(x: Any, xp: Any, fp: Any, period: Any) -> tuple[Any, Any, Any]:
    """numpy.interp's period: x and xp reduced modulo |period|, xp sorted, and one point added
    at each end from the other end, shifted by a period."""
    from numbax._src.numpy.shapes import concatenate

    if not isinstance(period, core.Tracer) and np.any(np.asarray(period) == 0):
        raise NumbaxValueError("numbax.numpy.interp: period is 0, expected a non-zero period.")
    period = ufuncs.absolute(asarray(period))
    x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
    n = get_aval(xp).shape[0]
    xp, fp = _lax_sort((xp, fp), 0, num_keys=1) if n else (xp, fp)
    first, last = shape_ops.slice(xp, (0,), (1,)), shape_ops.slice(xp, (n - 1,), (n,))
    xp = concatenate([ufuncs.subtract(last, period), xp, ufuncs.add(first, period)])
    fp = concatenate([shape_ops.slice(fp, (n - 1,), (n,)), fp, shape_ops.slice(fp, (0,), (1,))])
    return x, xp, fp


@refuses_keys("a")
def sort_complex(a: Any) -> Any:
    """numpy.sort_complex: sorted along the last axis by real part, then imaginary part,
    returned as complex.

    >>> sort_complex(asarray([1 + 2j, 1 - 1j, 0 + 5j]))
    Array([0.+5.j, 1.-1.j, 1.+2.j], dtype=complex128)
    """
    a = asarray(a)
    dtype = get_aval(a).dtype
    real = dtypes.to_inexact(dtype)  # JAX's: int32 sorts as complex64, int64 as complex128
    out_dtype = real if kind_of(real) == "c" else dtypes.canonicalize_dtype(
        np.complex128 if real.itemsize == 8 else np.complex64)
    if get_aval(a).ndim == 0:
        return lax.convert_element_type(a, out_dtype)
    if kind_of(dtype) != "c":
        return lax.convert_element_type(sort(a, axis=-1), out_dtype)
    ax = get_aval(a).ndim - 1
    re, im = _lax_sort((lax.real(a), lax.imag(a)), ax, num_keys=2)
    return lax.convert_element_type(lax.complex_(re, im), out_dtype)
