"""numpy's functions that write into arrays (insert, delete, place, put, put_along_axis,
fill_diagonal), as functional updates: each returns an updated copy (JAX asks for
inplace=False where numpy mutates)."""
from __future__ import annotations

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
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import array, asarray, canonicalize_axis, clip, where

__all__ = ["insert", "delete", "place", "put", "put_along_axis", "fill_diagonal"]


def _refuse_inplace(api: str, inplace: bool) -> None:
    if inplace:
        raise NumbaxValueError(
            f"numbax.numpy.{api}: inplace is True, but arrays are immutable. Pass "
            "inplace=False to get the updated array back."
        )


def _is_concrete(x: Any) -> bool:
    return not isinstance(x, core.Tracer) or x.to_concrete_value() is not None


def _concrete_np(x: Any) -> np.ndarray:
    return np.asarray(x.to_concrete_value() if isinstance(x, core.Tracer) else x)


def _tile_to(v: Any, n: int) -> Any:
    """The flattened v repeated cyclically to length n (numpy's rule for too few values)."""
    from numbax._src.numpy.shapes import _slice_axis, ravel, tile

    v = ravel(v)
    size = get_aval(v).size
    if size >= n:
        return _slice_axis(v, 0, 0, n)
    return _slice_axis(tile(v, -(-n // size)), 0, 0, n)


def _axis_index(axis: int, idx: Any) -> tuple:
    return (slice(None),) * axis + (idx,)


# ----------------------------------------------------------------------------- insert / delete


def _insert_indices(obj: Any, n: int) -> Any:
    if isinstance(obj, slice):
        return asarray_value(np.arange(*obj.indices(n)))
    idx = asarray(obj)
    if get_aval(idx).ndim > 1:
        raise NumbaxValueError(f"numbax.numpy.insert: obj has shape {get_aval(idx).shape}, "
                               "expected a slice, an int or a 1-d array of ints.")
    if kind_of(get_aval(idx).dtype) not in "iu":
        if get_aval(idx).size == 0:
            return lax.convert_element_type(idx, dtypes.default_int_dtype())
        raise NumbaxTypeError(f"numbax.numpy.insert: obj has dtype {get_aval(idx).dtype}, "
                              "expected integer indices.")
    if _is_concrete(idx):
        v = _concrete_np(idx)
        if ((v < -n) | (v > n)).any():
            raise IndexError(f"numbax.numpy.insert: obj {v.tolist()} is out of bounds for an "
                             f"axis of size {n}; expected indices in [{-n}, {n}].")
    return idx


@key_array_op("arr", "values")
def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """numpy.insert: `values` inserted before the positions `obj` along `axis`.

    Indices may be traced (the output size depends only on their count); traced indices out
    of range are clipped (as in JAX), concrete ones raise IndexError (as in numpy).

    >>> insert(asarray([1, 2, 3]), 1, asarray([8, 9]))
    Array([1, 8, 9, 2, 3], dtype=int64)
    """
    from numbax._src.numpy.shapes import moveaxis, ravel
    from numbax._src.numpy.sorting import argsort, searchsorted, sort

    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim, "insert")
    n = get_aval(a).shape[axis]
    idx = _insert_indices(obj, n)
    vals = array(values, dtype=get_aval(a).dtype, ndmin=get_aval(a).ndim)
    if get_aval(idx).size == 1:
        if get_aval(idx).ndim == 0:
            vals = moveaxis(vals, 0, axis)
        idx = shape_ops.full((get_aval(vals).shape[axis],), shape_ops.reshape(idx, ()))
    count = get_aval(idx).shape[0]
    target = list(get_aval(a).shape)
    target[axis] = count
    try:
        vals = ufuncs.broadcast_to_shape(vals, tuple(np.broadcast_shapes(
            get_aval(vals).shape, tuple(target))))
    except ValueError:
        raise NumbaxValueError(f"numbax.numpy.insert: values has shape {get_aval(vals).shape}, "
                               f"expected one that broadcasts to {tuple(target)}.") from None
    idx = where(ufuncs.less(idx, 0), ufuncs.add(idx, n), idx)
    idx = lax.convert_element_type(clip(idx, 0, n), dtypes.default_int_dtype())
    rank = argsort(argsort(idx))  # stable: equal indices keep their order
    values_pos = ufuncs.add(idx, rank)
    shift = searchsorted(sort(idx), asarray_value(np.arange(n)), side="right")
    arr_pos = ufuncs.add(asarray_value(np.arange(n)), shift)
    out_shape = list(get_aval(a).shape)
    out_shape[axis] = n + count
    out = shape_ops.full(tuple(out_shape), 0, get_aval(a).dtype)
    out = out.at[_axis_index(axis, arr_pos)].set(a)
    return out.at[_axis_index(axis, values_pos)].set(vals)


@key_array_op("arr")
def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    """numpy.delete: `arr` without the entries `obj` (int, slice, index array or boolean mask)
    along `axis`.

    `obj` must be concrete (the output size depends on it), unless assume_unique_indices=True
    promises that a traced index array has no repeats (as in JAX).

    >>> delete(asarray([1, 2, 3, 4]), asarray([0, 2]))
    Array([2, 4], dtype=int64)
    """
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.shapes import ravel
    from numbax._src.numpy.sorting import sort

    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim, "delete")
    n = get_aval(a).shape[axis]
    if isinstance(obj, slice):
        keep = np.ones(n, bool)
        keep[np.arange(*obj.indices(n))] = False
        return take(a, asarray_value(np.nonzero(keep)[0]), axis=axis)
    idx = asarray(obj)
    if kind_of(get_aval(idx).dtype) not in "biu" and get_aval(idx).size:
        raise NumbaxTypeError(f"numbax.numpy.delete: obj has dtype {get_aval(idx).dtype}, "
                              "expected integer indices or a boolean mask.")
    if not _is_concrete(idx):
        if not assume_unique_indices or kind_of(get_aval(idx).dtype) == "b":
            core.concrete_or_error(idx, "numbax.numpy.delete: obj (pass concrete indices, or "
                                        "assume_unique_indices=True for unique traced ones)")
        d = ravel(idx)
        d = where(ufuncs.less(d, 0), ufuncs.add(d, n), d)
        d = sort(lax.convert_element_type(d, dtypes.default_int_dtype()))
        m = get_aval(d).shape[0]
        thresholds = ufuncs.subtract(d, asarray_value(np.arange(m)))  # kept entries before d_j
        k = asarray_value(np.arange(n - m))
        ge = ufuncs.greater_equal(shape_ops.broadcast_in_dim(k, (m, n - m), (1,)),
                                  shape_ops.broadcast_in_dim(thresholds, (m, n - m), (0,)))
        k = ufuncs.add(k, lax_reductions.reduce_sum(
            lax.convert_element_type(ge, dtypes.default_int_dtype()), (0,)))
        return take(a, k, axis=axis)
    v = _concrete_np(idx)
    v = v.astype(np.int64) if v.size == 0 else v
    keep = np.ones(n, bool)
    if v.dtype == np.bool_:
        if v.shape != (n,):
            raise NumbaxValueError(f"numbax.numpy.delete: boolean obj has shape {v.shape}, "
                                   f"expected ({n},) to match axis {axis}.")
        keep = ~v
    else:
        if ((v < -n) | (v >= n)).any():
            raise IndexError(f"numbax.numpy.delete: obj {v.tolist()} is out of bounds for "
                             f"axis {axis} with size {n}.")
        keep[v] = False
    return take(a, asarray_value(np.nonzero(keep)[0]), axis=axis)


# ----------------------------------------------------------------------------- writes


@key_array_op("arr", "vals")
def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """numpy.place: the True positions of `mask` take the values `vals`, in order and
    repeated cyclically. Works with a traced mask. Unlike numpy, pass inplace=False.

    >>> place(asarray([0, 0, 0, 0]), asarray([True, False, True, True]), asarray([7, 8]),
    ...       inplace=False)
    Array([7, 0, 8, 7], dtype=int64)
    """
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.reductions import cumsum
    from numbax._src.numpy.shapes import ravel, reshape

    _refuse_inplace("place", inplace)
    a, m = asarray(arr), ufuncs.asbool(asarray(mask))
    v = ravel(asarray(vals))
    if get_aval(a).size != get_aval(m).size:
        raise NumbaxValueError(f"numbax.numpy.place: mask has size {get_aval(m).size} and arr "
                               f"has size {get_aval(a).size}, expected equal sizes.")
    if get_aval(v).size == 0:
        raise NumbaxValueError("numbax.numpy.place: vals is empty, expected at least one value.")
    flat_m = ravel(m)
    rank = ufuncs.subtract(cumsum(flat_m), 1)
    picked = take(v, ufuncs.remainder(rank, get_aval(v).size), mode="clip")
    picked = lax.convert_element_type(picked, get_aval(a).dtype)
    return reshape(where(flat_m, picked, ravel(a)), get_aval(a).shape)


@key_array_op("a", "v")
def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """numpy.put: a.flat[ind] = v (v repeated cyclically). Unlike numpy, pass inplace=False.

    mode: None (JAX's default: negative indices count from the end, others are clamped),
    'clip', 'wrap', or 'raise' (concrete indices only: out-of-range raises IndexError).

    >>> put(asarray([0, 0, 0]), asarray([0, 2]), asarray([5, 6]), inplace=False)
    Array([5, 0, 6], dtype=int64)
    """
    from numbax._src.numpy.index_tricks import unravel_index
    from numbax._src.numpy.lax_numpy import concrete_value
    from numbax._src.numpy.shapes import ravel, reshape

    _refuse_inplace("put", inplace)
    a = asarray(a)
    idx = ravel(asarray(ind))
    if kind_of(get_aval(idx).dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.put: ind has dtype {get_aval(idx).dtype}, "
                              "expected integers.")
    values = ravel(asarray(v))
    size = get_aval(a).size
    if not size or not get_aval(idx).size or not get_aval(values).size:
        return a
    values = lax.convert_element_type(_tile_to(values, get_aval(idx).size), get_aval(a).dtype)
    if mode is None:
        (flat_idx,) = unravel_index(idx, (size,))
    elif mode == "clip":
        flat_idx = clip(idx, 0, size - 1)
    elif mode == "wrap":
        flat_idx = ufuncs.remainder(idx, size)
    elif mode == "raise":
        c = concrete_value(idx, "numbax.numpy.put with mode='raise' (use 'clip' or 'wrap' "
                                "under jit)")
        if ((c < -size) | (c >= size)).any():
            raise IndexError(f"numbax.numpy.put: ind {c.tolist()} is out of bounds for an array "
                             f"of size {size}.")
        flat_idx = asarray_value(np.where(c < 0, c + size, c))
    else:
        raise NumbaxValueError(f"numbax.numpy.put: mode is {mode!r}, expected None, 'clip', "
                               "'wrap' or 'raise'.")
    return reshape(ravel(a).at[flat_idx].set(values), get_aval(a).shape)


@key_array_op("arr", "values")
def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: str | None = None) -> Any:
    """numpy.put_along_axis: the inverse of take_along_axis. Unlike numpy, pass inplace=False.

    >>> put_along_axis(asarray([[1, 2], [3, 4]]), asarray([[1], [0]]), 9, 1, inplace=False)
    Array([[1, 9],
           [9, 4]], dtype=int64)
    """
    from numbax._src.numpy.shapes import ravel, reshape

    _refuse_inplace("put_along_axis", inplace)
    a, idx = asarray(arr), asarray(indices)
    shape = get_aval(a).shape
    if axis is None:
        a, idx, axis = ravel(a), ravel(idx), 0
    if kind_of(get_aval(idx).dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.put_along_axis: indices has dtype "
                              f"{get_aval(idx).dtype}, expected integers.")
    if get_aval(a).ndim != get_aval(idx).ndim:
        raise NumbaxValueError(f"numbax.numpy.put_along_axis: indices has shape "
                               f"{get_aval(idx).shape}, expected as many dimensions as arr of "
                               f"shape {get_aval(a).shape}.")
    axis = canonicalize_axis(axis, get_aval(a).ndim, "put_along_axis")
    i_shape = get_aval(idx).shape
    vals = asarray(values)
    try:
        vals = ufuncs.broadcast_to_shape(vals, i_shape) if np.broadcast_shapes(
            get_aval(vals).shape, i_shape) == i_shape else None
    except ValueError:
        vals = None
    if vals is None:
        raise NumbaxValueError(f"numbax.numpy.put_along_axis: values has shape "
                               f"{get_aval(asarray(values)).shape}, expected one that broadcasts "
                               f"to the indices' shape {i_shape}.")
    full_index = []
    for d in range(get_aval(a).ndim):
        if d == axis:
            full_index.append(idx)
        else:
            line = asarray_value(np.arange(i_shape[d]))
            full_index.append(shape_ops.broadcast_in_dim(line, i_shape, (d,)))
    out = a.at[tuple(full_index)].set(vals, mode=mode)
    return reshape(out, shape)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """numpy.fill_diagonal: a copy of `a` whose main diagonal holds `val` (repeated).

    wrap=True continues the diagonal of a tall 2-d matrix past its last column, as numpy
    does (JAX does not support it). Unlike numpy, pass inplace=False.

    >>> fill_diagonal(np.zeros((2, 3), np.int64), 7, inplace=False)
    Array([[7, 0, 0],
           [0, 7, 0]], dtype=int64)
    """
    from numbax._src.numpy.shapes import ravel, reshape

    _refuse_inplace("fill_diagonal", inplace)
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise NumbaxValueError(f"numbax.numpy.fill_diagonal: a has shape {shape}, expected at "
                               "least 2 dimensions.")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise NumbaxValueError(f"numbax.numpy.fill_diagonal: a has shape {shape}, expected "
                               "all dimensions of equal length when a has more than 2.")
    size = int(np.prod(shape))
    if len(shape) == 2:
        step = shape[1] + 1
        end = size if wrap else min(size, shape[1] * shape[1])
    else:
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = size
    flat_idx = np.arange(0, end, step)
    if not flat_idx.size:
        return a
    v = lax.convert_element_type(asarray(val), get_aval(a).dtype)
    v = _tile_to(v, flat_idx.size) if get_aval(v).ndim else v
    out = ravel(a).at[asarray_value(flat_idx)].set(v)
    return reshape(out, shape)

