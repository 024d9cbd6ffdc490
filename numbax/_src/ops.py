"""jax.ops: segment reductions (segment_sum, segment_prod, segment_max, segment_min) as
scatters of the data rows into num_segments rows; segment_prod has its own derivative, since
a scatter-multiply is differentiable in its updates only for unique indices."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import indexing as lax_indexing
from numbax._src.lax import shape_ops
from numbax._src.numpy.lax_numpy import asarray, static_int, where

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

_MODES = {None: "drop", "drop": "drop", "fill": "drop", "promise_in_bounds": "drop",
          "clip": "clip"}


def _mode(api: str, mode: Any) -> str:
    name = getattr(mode, "name", mode)
    name = name.lower() if isinstance(name, str) else name
    if name == "fill_or_drop":
        name = "drop"
    if name not in _MODES:
        raise NumbaxValueError(f"numbax.ops.{api}: mode is {mode!r}, expected None, 'drop', "
                               "'clip' or 'promise_in_bounds'.")
    return _MODES[name]


def _prepare(api: str, data: Any, segment_ids: Any, num_segments: Any, bucket_size: Any,
             out_sharding: Any) -> tuple[Any, Any, int, int | None]:
    if out_sharding is not None:
        raise NumbaxValueError(f"numbax.ops.{api}: out_sharding is {out_sharding!r}; only None "
                               "is supported (the result stays on the data's device).")
    data, ids = asarray(data), asarray(segment_ids)
    if kind_of(get_aval(ids).dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.ops.{api}: segment_ids has dtype {get_aval(ids).dtype}, "
                              "expected integers.")
    if get_aval(ids).ndim != 1:
        raise NumbaxValueError(f"numbax.ops.{api}: segment_ids has shape {get_aval(ids).shape}, "
                               "expected a 1-d array with one id per row of data.")
    if get_aval(data).ndim == 0 or get_aval(data).shape[0] != get_aval(ids).shape[0]:
        raise NumbaxValueError(f"numbax.ops.{api}: data has shape {get_aval(data).shape} and "
                               f"segment_ids has shape {get_aval(ids).shape}, expected data's "
                               "leading axis to match segment_ids.")
    if num_segments is None:
        value = np.asarray(core.concrete_or_error(
            ids, f"numbax.ops.{api}: segment_ids (pass a static num_segments= to trace it)"))
        num_segments = int(value.max()) + 1 if value.size else 0
    num_segments = static_int(num_segments, api, "num_segments", prefix="numbax.ops")
    if num_segments < 0:
        raise NumbaxValueError(f"numbax.ops.{api}: num_segments is {num_segments}, expected "
                               ">= 0.")
    if bucket_size is not None:
        bucket_size = static_int(bucket_size, api, "bucket_size", prefix="numbax.ops")
        if bucket_size < 1:
            raise NumbaxValueError(f"numbax.ops.{api}: bucket_size is {bucket_size}, expected "
                                   ">= 1.")
    return data, lax.convert_element_type(ids, np.int64), num_segments, bucket_size


def _scatter(scatter: Callable, init: Any, data: Any, ids: Any, num_segments: int,
             mode: str, unique: bool) -> Any:
    out = shape_ops.full((num_segments,) + get_aval(data).shape[1:], init, get_aval(data).dtype)
    idx = shape_ops.reshape(ids, (get_aval(ids).shape[0], 1))
    return scatter(out, idx, data, (0,), mode=mode, unique_indices=unique)


def _bucketed(scatter: Callable, combine: Callable, init: Any, data: Any, ids: Any,
              num_segments: int, mode: str, unique: bool, bucket_size: int | None) -> Any:
    """The segment reduction, done per bucket of `bucket_size` rows and then combined (JAX's
    bucket_size, which bounds how many terms each partial sum adds)."""
    n = get_aval(data).shape[0]
    if bucket_size is None or bucket_size >= n:
        return _scatter(scatter, init, data, ids, num_segments, mode, unique)
    buckets = -(-n // bucket_size)
    bucket = asarray(np.arange(n) // bucket_size)
    in_range = lax.bitwise_and(lax.ge(ids, np.int64(0)), lax.lt(ids, np.int64(num_segments)))
    if mode == "clip":
        ids = lax.clamp(np.int64(0), ids, np.int64(max(num_segments - 1, 0)))
        in_range = lax.ge(ids, np.int64(0))
    flat = where(in_range, lax.add(lax.mul(bucket, np.int64(num_segments)), ids),
                 np.int64(buckets * num_segments))
    parts = _scatter(scatter, init, data, flat, buckets * num_segments, "drop", unique)
    parts = shape_ops.reshape(parts, (buckets, num_segments) + get_aval(data).shape[1:])
    out = shape_ops.reshape(shape_ops.slice(parts, (0,) * get_aval(parts).ndim,
                                            (1,) + get_aval(parts).shape[1:]),
                            get_aval(parts).shape[1:])
    for b in range(1, buckets):
        start = (b,) + (0,) * (get_aval(parts).ndim - 1)
        row = shape_ops.slice(parts, start, (b + 1,) + get_aval(parts).shape[1:])
        out = combine(out, shape_ops.reshape(row, get_aval(parts).shape[1:]))
    return out


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """jax.ops.segment_sum: out[s] = the sum of the rows of data whose segment id is s.

    Args:
      data: an array whose leading axis is indexed by segment_ids.
      segment_ids: int ids, one per row; ids outside [0, num_segments) are dropped
        (mode='clip' clamps them instead).
      num_segments: the static number of segments (default: max(segment_ids) + 1, which
        needs concrete ids).
      indices_are_sorted: a promise the ids are sorted (it changes nothing here).
      unique_indices: a promise the ids do not repeat.
      bucket_size: add in buckets of this many rows, then add the buckets.
      mode: None/'drop'/'promise_in_bounds' or 'clip'.

    Returns:
      An array of shape (num_segments,) + data.shape[1:].

    >>> segment_sum(asarray([1, 2, 3, 4]), asarray([0, 0, 1, 3]), num_segments=4)
    Array([3, 3, 0, 4], dtype=int64)
    """
    data, ids, n, bucket = _prepare("segment_sum", data, segment_ids, num_segments, bucket_size,
                                      out_sharding)
    return _bucketed(lax_indexing.scatter_add, lax.add, 0, data, ids, n,
                     _mode("segment_sum", mode), unique_indices, bucket)


def _extreme_init(dtype: np.dtype, is_max: bool) -> Any:
    if kind_of(dtype) == "f":
        return -np.inf if is_max else np.inf
    if kind_of(dtype) == "b":
        return not is_max
    info = np.iinfo(dtype)
    return info.min if is_max else info.max


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """jax.ops.segment_max: the row-wise maximum per segment; empty segments hold -inf (or
    the dtype's smallest value), as in JAX. Arguments as in segment_sum."""
    data, ids, n, bucket = _prepare("segment_max", data, segment_ids, num_segments, bucket_size,
                                      out_sharding)
    if kind_of(get_aval(data).dtype) == "c":
        raise NumbaxTypeError(f"numbax.ops.segment_max: data has dtype {get_aval(data).dtype}, "
                              "expected a real dtype.")
    init = _extreme_init(get_aval(data).dtype, True)
    return _bucketed(lax_indexing.scatter_max, lax.max, init, data, ids, n,
                     _mode("segment_max", mode), unique_indices, bucket)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """jax.ops.segment_min: the row-wise minimum per segment; empty segments hold +inf (or
    the dtype's largest value), as in JAX. Arguments as in segment_sum."""
    data, ids, n, bucket = _prepare("segment_min", data, segment_ids, num_segments, bucket_size,
                                      out_sharding)
    if kind_of(get_aval(data).dtype) == "c":
        raise NumbaxTypeError(f"numbax.ops.segment_min: data has dtype {get_aval(data).dtype}, "
                              "expected a real dtype.")
    init = _extreme_init(get_aval(data).dtype, False)
    return _bucketed(lax_indexing.scatter_min, lax.min, init, data, ids, n,
                     _mode("segment_min", mode), unique_indices, bucket)


def _prod(data: Any, ids: Any, num_segments: int, mode: str, bucket: int | None) -> Any:
    return _bucketed(lax_indexing.scatter_mul, lax.mul, 1, data, ids, num_segments, mode, False,
                     bucket)


def _segment_prod_primal(data: Any, ids: Any, num_segments: int, mode: str,
                         bucket: Any) -> Any:
    return _prod(data, ids, num_segments, mode, bucket)


def _segment_prod_jvp(num_segments: int, mode: str, bucket: Any, primals: tuple,
                      tangents: tuple) -> tuple:
    """d prod_s = sum_{i in s} t_i * (product of the other rows of s), with the product of
    the others found without dividing by zero: by the segment's count of zeros."""
    from numbax._src.numpy.indexing import take

    data, ids = primals
    t = tangents[0]
    # Products go through _segment_prod itself, so higher derivatives use this rule again.
    out = _segment_prod(data, ids, num_segments, mode, bucket)
    dtype = get_aval(data).dtype
    zero, one = lax.convert_element_type(0, dtype), lax.convert_element_type(1, dtype)
    is_zero = lax.eq(data, zero)
    zeros_per = _scatter(lax_indexing.scatter_add, 0, lax.convert_element_type(is_zero, np.int64),
                         ids, num_segments, mode, False)
    nonzero_prod = _segment_prod(where(is_zero, one, data), ids, num_segments, mode, None)
    gather_ids = lax.clamp(np.int64(0), ids, np.int64(max(num_segments - 1, 0)))
    if num_segments == 0:
        return out, _scatter(lax_indexing.scatter_add, 0, t, ids, num_segments, mode, False)
    zc = take(zeros_per, gather_ids, axis=0, mode="clip")
    full = take(out, gather_ids, axis=0, mode="clip")
    partial = take(nonzero_prod, gather_ids, axis=0, mode="clip")
    safe = where(is_zero, one, data)
    others = where(lax.eq(zc, np.int64(0)), lax.div(full, safe),
                   where(lax.bitwise_and(lax.eq(zc, np.int64(1)), is_zero), partial,
                         lax.convert_element_type(0, dtype)))
    t_out = _scatter(lax_indexing.scatter_add, 0, lax.mul(t, others), ids, num_segments, mode,
                     False)
    return out, t_out


_segment_prod = custom_jvp(_segment_prod_primal, nondiff_argnums=(2, 3, 4))
_segment_prod.defjvp(_segment_prod_jvp)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """jax.ops.segment_prod: the row-wise product per segment (1 for empty segments).
    Arguments as in segment_sum. Unlike JAX, it is differentiable in `data` for repeated ids
    too (JAX's scatter-multiply derivative needs unique indices).

    >>> segment_prod(asarray([1.0, 2.0, 3.0, 4.0]), asarray([0, 0, 1, 1]))
    Array([ 2., 12.], dtype=float64)
    """
    data, ids, n, bucket = _prepare("segment_prod", data, segment_ids, num_segments,
                                    bucket_size, out_sharding)
    mode = _mode("segment_prod", mode)
    if kind_of(get_aval(data).dtype) in "biu":
        return _prod(data, ids, n, mode, bucket)
    return _segment_prod(data, ids, n, mode, bucket)
