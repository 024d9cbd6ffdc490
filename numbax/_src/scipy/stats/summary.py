"""numbax.scipy.stats' sample summaries: mode, rankdata and sem."""
from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from numbax._src import api, core, dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import sort as lax_sort
from numbax._src.numpy import lax_numpy, reductions, shapes
from numbax._src.numpy.creation import full_like
from numbax._src.numpy.indexing import take_along_axis
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import isnan, sqrt
from numbax._src.scipy.special.args import const, dtype_of, inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
    """mode's result: the most common values and their counts."""

    mode: Any
    count: Any


def _check_nan_policy(api: str, nan_policy: str, allowed: tuple[str, ...]) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise NumbaxValueError(
            f"numbax.scipy.stats.{api}: nan_policy is {nan_policy!r}, expected one of "
            "'propagate', 'omit', 'raise'.")
    if nan_policy not in allowed:
        raise NotImplementedError(
            f"numbax.scipy.stats.{api}: nan_policy={nan_policy!r} is not implemented (as in "
            "JAX); check for nans before the call.")


def _axis(api: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"numbax.scipy.stats.{api}: axis {axis} is out of bounds for an array of "
            f"dimension {ndim}.")
    return axis % ndim


def _as_array(api: str, a: Any) -> Any:
    if not (isinstance(a, (list, tuple)) or core.is_array_like(a)):
        raise NumbaxTypeError(
            f"numbax.scipy.stats.{api}: a has type {type(a).__name__}, expected an array. "
            "Pass a numbax/numpy array.")
    return lax_numpy.asarray(a)


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most common value along `axis` (the smallest among ties) and its count.

    Args:
      a: array.
      axis: the axis to reduce, or None for the flattened array.
      nan_policy: only 'propagate' is supported (as in JAX).
      keepdims: keep the reduced axis with size 1.

    Returns:
      ModeResult(mode, count).

    >>> [float(v) for v in mode(np.array([3.0, 1.0, 3.0, 2.0]))]
    [3.0, 2.0]
    """
    _check_nan_policy("mode", nan_policy, ("propagate",))
    x = shapes.atleast_1d(_as_array("mode", a))
    if axis is None:
        out_shape = (1,) * x.ndim if keepdims else ()
        x = x.reshape(-1)
        axis = 0
    else:
        axis = _axis("mode", axis, x.ndim)
        out_shape = tuple((1 if keepdims else None) if i == axis else s
                          for i, s in enumerate(x.shape))
        out_shape = tuple(s for s in out_shape if s is not None)
    if x.shape[axis] == 0:
        fill = np.zeros(out_shape, dtypes.default_float_dtype())
        return ModeResult(lax_numpy.asarray(fill + np.nan), lax_numpy.asarray(fill))
    x = shapes.moveaxis(x, axis, -1)
    ordered = lax_sort.sort(x, dimension=x.ndim - 1)
    counts = reductions.sum(ordered[..., :, None] == ordered[..., None, :], axis=-1)
    best = reductions.argmax(counts, axis=-1)
    values = take_along_axis(ordered, best[..., None], axis=-1)[..., 0]
    count = reductions.max(counts, axis=-1)
    return ModeResult(values.reshape(out_shape), count.reshape(out_shape))


def _rank_1d(a: Any, method: str) -> Any:
    out_dtype = dtypes.default_float_dtype()
    n = a.shape[0]
    index = lax_numpy.asarray(np.arange(n, dtype=dtypes.default_int_dtype()))
    ordered, sorter = lax_sort.sort((a, index), dimension=0, num_keys=1)
    inverse = _invert_permutation(sorter)
    if method == "ordinal":
        return lax.convert_element_type(inverse + 1, out_dtype)
    new_group = shapes.concatenate([lax_numpy.asarray(np.array([True])),
                                    ordered[1:] != ordered[:-1]])
    dense = reductions.cumsum(new_group.astype(out_dtype))
    if method == "dense":
        return dense[inverse]
    # first and last sorted position of each element's group of ties
    starts = lax_reductions.cummax(where(new_group, index, const(index, 0)), axis=0)
    ends_next = shapes.concatenate([new_group[1:], lax_numpy.asarray(np.array([True]))])
    ends = lax_reductions.cummin(where(ends_next, index, const(index, n - 1)), axis=0,
                                 reverse=True)
    lo = lax.convert_element_type(starts, out_dtype) + 1
    hi = lax.convert_element_type(ends, out_dtype) + 1
    ranks = {"min": lo, "max": hi, "average": 0.5 * (lo + hi)}[method]
    return ranks[inverse]


def _invert_permutation(perm: Any) -> Any:
    n = perm.shape[0]
    index = lax_numpy.asarray(np.arange(n, dtype=dtype_of(perm)))
    _, inverse = lax_sort.sort((perm, index), dimension=0, num_keys=1)
    return inverse


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Any:
    """Ranks 1..n of the data, ties resolved by `method` ('average', 'min', 'max', 'dense',
    'ordinal'); all nan when the (flattened or per-slice) data has a nan.

    Args:
      a: array.
      method: how ties are ranked.
      axis: rank along this axis; None ranks the flattened array.
      nan_policy: only 'propagate' is supported (as in JAX).

    Returns:
      Float ranks (the default float dtype), a's shape (flattened when axis is None).

    >>> [float(v) for v in rankdata(np.array([10.0, 30.0, 20.0, 20.0]))]
    [1.0, 4.0, 2.5, 2.5]
    """
    _check_nan_policy("rankdata", nan_policy, ("propagate",))
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise NumbaxValueError(
            f"numbax.scipy.stats.rankdata: method is {method!r}, expected 'average', 'min', "
            "'max', 'dense' or 'ordinal'.")
    a = _as_array("rankdata", a)
    if axis is not None:
        axis = _axis("rankdata", axis, max(a.ndim, 1))
        moved = shapes.moveaxis(a, axis, -1)
        flat = moved.reshape((-1, moved.shape[-1]))
        ranked = api.vmap(lambda row: rankdata(row, method))(flat)
        return shapes.moveaxis(ranked.reshape(moved.shape), -1, axis)
    a = a.reshape(-1)
    ranks = _rank_1d(a, method)
    has_nan = reductions.any(isnan(a)) if kind_of(dtype_of(a)) in "fc" else False
    return where(has_nan, full_like(ranks, np.nan), ranks)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
    """The standard error of the mean, std(a, ddof) / sqrt(n), along `axis`.

    Args:
      a: array.
      axis: the axis to reduce, or None for all.
      ddof: delta degrees of freedom of the standard deviation.
      nan_policy: 'propagate', or 'omit' to ignore nans (n counts the rest).
      keepdims: keep reduced axes with size 1.

    Returns:
      The standard errors.

    >>> round(float(sem(np.array([1.0, 2.0, 3.0, 4.0]))), 12)
    0.645497224368
    """
    if nan_policy not in ("propagate", "omit"):
        raise NumbaxValueError(
            f"numbax.scipy.stats.sem: nan_policy is {nan_policy!r}, expected 'propagate' or "
            "'omit'.")
    (b,) = inexact("stats.sem", a)
    if nan_policy == "propagate":
        size = get_aval(b).size if axis is None else b.shape[_axis("sem", axis, b.ndim)]
        std = reductions.std(b, axis, ddof=ddof, keepdims=keepdims)
        return std / sqrt(const(std, size))
    count = reductions.sum(~isnan(b), axis, keepdims=keepdims)
    std = reductions.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
    return std / sqrt(lax.convert_element_type(count, dtype_of(std)))
