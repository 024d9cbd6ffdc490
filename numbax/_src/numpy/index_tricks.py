"""numpy's index helpers: the r_/c_/mgrid/ogrid grid objects, ix_, the triangle and diagonal
index builders, and the flat <-> multi-index conversions."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.array import asarray_value
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, clip, concrete_value, static_int, where

__all__ = [
    "r_", "c_", "s_", "index_exp", "mgrid", "ogrid", "ix_", "diag_indices",
    "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "mask_indices", "ravel_multi_index", "unravel_index",
]

# numpy's own slice-builder objects (they only build tuples of slices), as JAX re-exports them.
s_ = np.s_
index_exp = np.index_exp


def _grid_1d(s: slice, api: str) -> Any:
    """arange(start, stop, step), or linspace(start, stop, |step|) for a complex step."""
    from numbax._src.numpy.creation import arange, linspace

    start = 0 if s.start is None else concrete_value(s.start, f"numbax.numpy.{api}: start")
    if s.stop is None:
        raise NumbaxValueError(f"numbax.numpy.{api}: slice {s} has no stop, expected "
                               "start:stop[:step].")
    stop = concrete_value(s.stop, f"numbax.numpy.{api}: stop")
    step = 1 if s.step is None else concrete_value(s.step, f"numbax.numpy.{api}: step")
    if np.iscomplexobj(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Grid:
    """mgrid (dense) and ogrid (open): meshgrids of the 1-d grids the slices describe."""

    def __init__(self, sparse: bool, name: str) -> None:
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        from numbax._src.numpy.creation import meshgrid
        from numbax._src.numpy.shapes import stack

        if isinstance(key, slice):
            return _grid_1d(key, self.name)
        axes = [_grid_1d(k, self.name) for k in key]
        if not axes:
            return [] if self.sparse else asarray_value(np.zeros((0,), np.int64))
        axes = ufuncs.promote_dtypes(self.name, *axes)
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else stack(grids, 0)

    def __repr__(self) -> str:
        return f"numbax.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


class _AxisConcat:
    """r_ and c_: concatenate slices (as ranges), scalars and arrays along an axis, with
    numpy's "axis,ndmin,trans1d" string directive. The matrix directives 'r' and 'c' add a
    leading or trailing axis to a 1-d result (numbax has no matrix type, as in JAX)."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int) -> None:
        self.name = name
        self.defaults = (axis, ndmin, trans1d)

    def _directive(self, directive: str) -> tuple[int, int, int, int]:
        axis, ndmin, trans1d = self.defaults
        if directive in ("r", "c"):
            return axis, ndmin, trans1d, 0 if directive == "r" else 1
        parts = directive.split(",")
        try:
            values = [int(p) for p in parts[:3]]
        except ValueError:
            raise NumbaxValueError(
                f"numbax.numpy.{self.name}: directive {directive!r} is not understood, "
                "expected 'r', 'c' or up to three comma-separated ints 'axis,ndmin,trans1d'."
            ) from None
        axis, ndmin, trans1d = (values + [axis, ndmin, trans1d][len(values):])[:3]
        return axis, ndmin, trans1d, -1

    def __getitem__(self, key: Any) -> Any:
        from numbax._src.numpy.shapes import concatenate, expand_dims

        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.defaults
        matrix = -1
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d, matrix = self._directive(items[0])
            items = items[1:]
        parts = []
        for item in items:
            if isinstance(item, str):
                raise NumbaxValueError(f"numbax.numpy.{self.name}: a string directive must "
                                       "come first.")
            parts.append(self._part(item, ndmin, trans1d))
        if not parts:
            return asarray_value(np.zeros((0,), dtypes.default_float_dtype()))
        out = concatenate(parts, axis=axis)
        if matrix != -1 and get_aval(out).ndim == 1:
            out = expand_dims(out, matrix)
        return out

    def _part(self, item: Any, ndmin: int, trans1d: int) -> Any:
        """One item at rank ndmin: ranges end on axis trans1d, arrays shift their axes."""
        from numbax._src.numpy.shapes import swapaxes, transpose

        if isinstance(item, slice):
            value = _grid_1d(item, self.name)
            if ndmin > 1:
                value = shape_ops.reshape(value, (1,) * (ndmin - 1) + get_aval(value).shape)
                if trans1d != -1:
                    value = swapaxes(value, -1, trans1d)
            return value
        value = asarray(item)
        item_ndim = get_aval(value).ndim
        if item_ndim >= ndmin:
            return value
        value = shape_ops.reshape(value, (1,) * (ndmin - item_ndim) + get_aval(value).shape)
        if trans1d == -1 or isinstance(item, (int, float, complex, bool, np.generic)):
            return value
        k2 = ndmin - item_ndim
        k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
        axes = list(range(ndmin))
        return transpose(value, axes[:k1] + axes[k2:] + axes[k1:k2])

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"numbax.numpy.{self.name}"


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)


def ix_(*args: Any) -> tuple:
    """numpy.ix_: open-mesh index arrays, the i-th reshaped to (1, ..., n_i, ..., 1).

    Boolean sequences become the indices of their True entries (they must be concrete).

    >>> [a.shape for a in ix_(asarray([0, 1]), asarray([2, 4, 5]))]
    [(2, 1), (1, 3)]
    """
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = asarray(a)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise NumbaxValueError(f"numbax.numpy.ix_: argument {i} has shape {aval.shape}, "
                                   "expected a 1-d sequence.")
        if aval.dtype == np.bool_:
            a = asarray_value(np.nonzero(concrete_value(a, "numbax.numpy.ix_"))[0])
        elif kind_of(aval.dtype) not in "iu":
            raise NumbaxTypeError(f"numbax.numpy.ix_: argument {i} has dtype {aval.dtype}, "
                                  "expected integers or booleans.")
        size = get_aval(a).shape[0]
        out.append(shape_ops.reshape(a, (1,) * i + (size,) + (1,) * (n - i - 1)))
    return tuple(out)


def _index_arrays(cols: Sequence[np.ndarray]) -> tuple:
    return tuple(asarray_value(np.asarray(c, dtypes.default_int_dtype())) for c in cols)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """numpy.diag_indices: the index arrays of the main diagonal of an (n,) * ndim array.

    Args:
      n: the side length. ndim: the number of dimensions (static ints).

    Returns:
      A tuple of ndim copies of arange(n).
    """
    n = static_int(n, "diag_indices", "n")
    ndim = static_int(ndim, "diag_indices", "ndim")
    if n < 0 or ndim < 0:
        raise NumbaxValueError(f"numbax.numpy.diag_indices: n={n}, ndim={ndim}; expected "
                               "both >= 0.")
    return _index_arrays([np.arange(n)] * ndim)


def diag_indices_from(arr: Any) -> tuple:
    """numpy.diag_indices_from: diag_indices for `arr`, whose sides must all be equal.

    Args:
      arr: an array of rank >= 2 with equal sides.

    Returns:
      A tuple of arr.ndim index arrays.
    """
    shape = get_aval(asarray(arr)).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise NumbaxValueError(f"numbax.numpy.diag_indices_from: arr has shape {shape}, "
                               "expected at least 2 dimensions, all of equal length.")
    return diag_indices(shape[0], len(shape))


def _tri_indices(api: str, n: Any, k: Any, m: Any, lower: bool) -> tuple:
    n = static_int(n, api, "n")
    k = static_int(k, api, "k")
    m = n if m is None else static_int(m, api, "m")
    if n < 0 or m < 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: n={n}, m={m}; expected sizes >= 0.")
    rows, cols = np.indices((n, m))
    mask = cols <= rows + k if lower else cols >= rows + k
    return _index_arrays(np.nonzero(mask))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """numpy.tril_indices: (rows, cols) of the entries on or below the k-th diagonal.

    >>> tril_indices(3)
    (Array([0, 1, 1, 2, 2, 2], dtype=int64), Array([0, 0, 1, 0, 1, 2], dtype=int64))
    """
    return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """numpy.triu_indices: (rows, cols) of the entries on or above the k-th diagonal.

    Args:
      n, m: the (static) matrix shape (m defaults to n). k: the diagonal offset.

    Returns:
      (rows, cols) in row-major order.
    """
    return _tri_indices("triu_indices", n, k, m, False)


def _from_shape(api: str, arr: Any) -> tuple[int, int]:
    shape = arr.shape if hasattr(arr, "shape") else get_aval(asarray(arr)).shape
    if len(shape) != 2:
        raise NumbaxValueError(f"numbax.numpy.{api}: arr has shape {tuple(shape)}, expected a "
                               "2-d array.")
    return int(shape[0]), int(shape[1])


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    """numpy.tril_indices_from: tril_indices for the shape of the 2-d `arr`.

    Args:
      arr: a 2-d array (only its shape is used). k: the diagonal offset.

    Returns:
      (rows, cols) of the lower triangle.
    """
    n, m = _from_shape("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    """numpy.triu_indices_from: triu_indices for the shape of the 2-d `arr`.

    Args:
      arr: a 2-d array (only its shape is used). k: the diagonal offset.

    Returns:
      (rows, cols) of the upper triangle.
    """
    n, m = _from_shape("triu_indices_from", arr)
    return triu_indices(n, k, m)


def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None) -> tuple:
    """numpy.mask_indices: the indices where mask_func(ones((n, n)), k) is nonzero.

    mask_func is e.g. numbax.numpy.triu; with size= the result has that many entries (padded
    with zeros), as in JAX, so it can be traced.
    """
    from numbax._src.numpy.sorting import nonzero

    n = static_int(n, "mask_indices", "n")
    if not callable(mask_func):
        raise NumbaxTypeError(f"numbax.numpy.mask_indices: mask_func has type "
                              f"{type(mask_func).__name__}, expected a callable such as "
                              "numbax.numpy.triu.")
    ones = shape_ops.full((n, n), 1, dtypes.default_int_dtype())
    return nonzero(mask_func(ones, k), size=size)


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    """numpy.ravel_multi_index: flat indices of the index tuple `multi_index` into `dims`.

    mode 'raise' checks the bounds and so needs concrete indices; 'wrap' and 'clip' work under
    jit; 'ignore' (JAX) trusts the indices.

    >>> ravel_multi_index((asarray([0, 1]), asarray([2, 0])), (2, 3))
    Array([2, 3], dtype=int64)
    """
    dims = tuple(static_int(d, "ravel_multi_index", "dims") for d in dims)
    if len(multi_index) != len(dims):
        raise NumbaxValueError(f"numbax.numpy.ravel_multi_index: multi_index has "
                               f"{len(multi_index)} arrays and dims has {len(dims)} sizes, "
                               "expected one index array per dimension.")
    if mode not in ("raise", "wrap", "clip", "ignore"):
        raise NumbaxValueError(f"numbax.numpy.ravel_multi_index: mode is {mode!r}, expected "
                               "'raise', 'wrap', 'clip' or 'ignore'.")
    if order not in ("C", "F"):
        raise NumbaxValueError(f"numbax.numpy.ravel_multi_index: order is {order!r}, expected "
                               "'C' or 'F'.")
    indices = [asarray(i) for i in multi_index]
    for i, idx in enumerate(indices):
        if kind_of(get_aval(idx).dtype) not in "iu":
            raise NumbaxTypeError(f"numbax.numpy.ravel_multi_index: multi_index[{i}] has dtype "
                                  f"{get_aval(idx).dtype}, expected integers.")
    out_dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="numbax.numpy.ravel_multi_index")
    if kind_of(out_dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.ravel_multi_index: dtype {out_dtype} is not an "
                              "integer dtype.")
    if mode == "raise":
        for idx, d in zip(indices, dims):
            v = concrete_value(idx, "numbax.numpy.ravel_multi_index with mode='raise' (use "
                                    "mode='wrap' or 'clip' under jit)")
            if ((v < 0) | (v >= d)).any():
                raise NumbaxValueError(f"numbax.numpy.ravel_multi_index: multi_index has "
                                       f"entries outside dims {dims}. Pass in-range indices or "
                                       "mode='wrap'/'clip'.")
    elif mode == "clip":
        indices = [clip(i, 0, d - 1) for i, d in zip(indices, dims)]
    elif mode == "wrap":
        indices = [ufuncs.remainder(i, d) for i, d in zip(indices, dims)]
    if order == "C":
        strides = [int(np.prod(dims[i + 1:], dtype=np.int64)) for i in range(len(dims))]
    else:
        strides = [int(np.prod(dims[:i], dtype=np.int64)) for i in range(len(dims))]
    out = asarray_value(np.zeros((), out_dtype))
    for idx, s in zip(indices, strides):
        out = ufuncs.add(out, ufuncs.multiply(lax.convert_element_type(idx, out_dtype), s))
    return out


def unravel_index(indices: Any, shape: Any) -> tuple:
    """numpy.unravel_index: the coordinates in `shape` of flat `indices`.

    As in JAX, out-of-range indices are clamped (to the first or last element) instead of
    raising, so it can be traced.

    >>> unravel_index(asarray([5, 1]), (2, 3))
    (Array([1, 0], dtype=int64), Array([2, 1], dtype=int64))
    """
    indices = asarray(indices)
    if kind_of(get_aval(indices).dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.unravel_index: indices has dtype "
                              f"{get_aval(indices).dtype}, expected integers.")
    try:
        sizes = [static_int(d, "unravel_index", "shape") for d in shape]
    except TypeError:
        sizes = [static_int(shape, "unravel_index", "shape")]
    if any(d < 0 for d in sizes):
        raise NumbaxValueError(f"numbax.numpy.unravel_index: shape {tuple(sizes)} has negative "
                               "sizes.")
    rest = indices
    out: list[Any] = [None] * len(sizes)
    for i in reversed(range(len(sizes))):
        rest, out[i] = ufuncs.divmod(rest, max(sizes[i], 1))
    too_high = ufuncs.greater(rest, 0)
    too_low = ufuncs.less(rest, lax.convert_element_type(-1, get_aval(rest).dtype))
    return tuple(where(too_high, s - 1, where(too_low, 0, c)) for s, c in zip(sizes, out))
