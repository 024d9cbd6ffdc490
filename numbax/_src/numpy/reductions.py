"""numpy's reductions (sum, mean, var, max, argmax, all, cumsum, nan*, average) on lax."""
from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import Array
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import refuse_key
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import (
    asarray,
    canonicalize_axes,
    canonicalize_axis,
    where,
)

__all__ = [
    "sum", "prod", "product", "mean", "var", "std", "max", "min", "amax", "amin", "argmax",
    "argmin", "all", "any", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
    "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nancumsum",
    "nancumprod", "ptp", "average", "count_nonzero",
]


def _check_numeric(a: Any, api: str) -> Any:
    if type(a) is Array:  # (the common case: not a key array, already an array)
        return a
    refuse_key(f"numbax.numpy.{api}", a, "a")
    if not core.is_array_like(a) and not isinstance(a, (list, tuple)):
        raise NumbaxTypeError(
            f"numbax.numpy.{api}: a has type {type(a).__name__}, expected an array. "
            "Pass an array, a Python scalar or a list of numbers."
        )
    return asarray(a)


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's accumulator for sum/prod/cumsum: small ints and bool widen to the default int."""
    if kind_of(dtype) in "bi" and dtype.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if kind_of(dtype) == "u" and dtype.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.canonicalize_dtype(np.uint64)
    return dtype


def _keep(out: Any, in_shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims:
        return out
    kept = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return shape_ops.reshape(out, kept)


def _reduce(api: str, reducer: Callable, a: Any, axis: Any, dtype: Any, keepdims: bool,
            upcast: bool, identity: bool | None = True) -> Any:
    """identity: True (sum-like), False (max-like, refuses empty axes), None (initial given)."""
    a = _check_numeric(a, api)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim, api)
    if dtype is not None:
        target = dtypes.canonicalize_dtype(dtype, context=f"numbax.numpy.{api}")
    else:
        target = _sum_dtype(aval.dtype) if upcast else aval.dtype
    if target != aval.dtype:
        a = lax.convert_element_type(a, target, aval.weak_type)
    if identity is False and builtins.any(aval.shape[i] == 0 for i in axes):
        raise NumbaxValueError(
            f"numbax.numpy.{api}: a has shape {aval.shape} and reducing axes {axes} includes a "
            "zero-size axis; this reduction has no identity. Pass initial= or a non-empty array."
        )
    if identity is None and builtins.any(aval.shape[i] == 0 for i in axes):
        # An empty max/min with initial= is just the initial value, in the output's shape.
        shape = tuple(d for i, d in enumerate(aval.shape) if i not in axes)
        return _keep(shape_ops.full(shape, 0, target), aval.shape, axes, keepdims)
    out = reducer(a, axes) if axes else a
    return _keep(out, aval.shape, axes, keepdims)


def _masked(api: str, a: Any, where_: Any, fill: Any) -> Any:
    """a with the entries outside the `where` mask replaced by `fill` (the identity)."""
    a = _check_numeric(a, api)
    if where_ is None:
        return a
    mask = ufuncs.asbool(asarray(where_))
    shape = get_aval(a).shape
    try:
        ok = np.broadcast_shapes(get_aval(mask).shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise NumbaxValueError(f"numbax.numpy.{api}: where has shape {get_aval(mask).shape}, "
                               f"expected one that broadcasts to a's shape {shape}.")
    fill = lax.convert_element_type(asarray(fill), get_aval(a).dtype)
    return where(ufuncs.broadcast_to_shape(mask, shape), a, fill)


def _need_initial(api: str, where_: Any, initial: Any) -> None:
    if where_ is not None and initial is None:
        raise NumbaxValueError(f"numbax.numpy.{api}: the reduction has no identity, so a where "
                               "mask needs initial= (the value of fully masked-out slices).")


def _where_count(a: Any, where_: Any, axes: tuple, keepdims: bool, dtype: np.dtype) -> Any:
    """The number of unmasked entries reduced into each output, as `dtype`."""
    shape = get_aval(a).shape
    if where_ is None:
        return lax.convert_element_type(_count(shape, axes), dtype)
    mask = ufuncs.broadcast_to_shape(ufuncs.asbool(asarray(where_)), shape)
    return lax.convert_element_type(sum(mask, axes, keepdims=keepdims), dtype)


def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,  # noqa: A001
        keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """numpy.sum: bool and small integer inputs accumulate in the default integer type;
    where= (JAX and numpy) leaves the masked-out entries out."""
    a = _masked("sum", a, where, 0)
    out_ = _reduce("sum", lax_reductions.reduce_sum, a, axis, dtype, keepdims, upcast=True)
    return out_ if initial is None else ufuncs.add(out_, initial)


def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    a = _masked("prod", a, where, 1)
    out_ = _reduce("prod", lambda x, ax: lax_reductions.reduce_prod(x, ax), a, axis, dtype,
                   keepdims, upcast=True)
    return out_ if initial is None else ufuncs.multiply(out_, initial)


product = prod


def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    _need_initial("max", where, initial)
    a = _masked("max", a, where, initial)
    out_ = _reduce("max", lax_reductions.reduce_max, a, axis, None, keepdims, upcast=False,
                   identity=None if initial is not None else False)
    return out_ if initial is None else _fill_empty(ufuncs.maximum, out_, a, axis, initial)


def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    _need_initial("min", where, initial)
    a = _masked("min", a, where, initial)
    out_ = _reduce("min", lax_reductions.reduce_min, a, axis, None, keepdims, upcast=False,
                   identity=None if initial is not None else False)
    return out_ if initial is None else _fill_empty(ufuncs.minimum, out_, a, axis, initial)


def _fill_empty(combine: Callable, out: Any, a: Any, axis: Any, initial: Any) -> Any:
    aval = get_aval(asarray(a))
    axes = canonicalize_axes(axis, aval.ndim, "max")
    if builtins.any(aval.shape[i] == 0 for i in axes):
        return ufuncs.add(ufuncs.multiply(out, 0), initial)
    return combine(out, initial)


amax, amin = max, min


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    a = _masked("all", ufuncs.asbool(_check_numeric(a, "all")), where, True)
    return _reduce("all", lambda x, ax: lax_reductions.reduce_and(x, ax), a, axis, None,
                   keepdims, upcast=False)


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    a = _masked("any", ufuncs.asbool(_check_numeric(a, "any")), where, False)
    return _reduce("any", lambda x, ax: lax_reductions.reduce_or(x, ax), a, axis, None,
                   keepdims, upcast=False)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def _mean_dtypes(aval: core.ShapedArray, dtype: Any, api: str) -> tuple[np.dtype, np.dtype]:
    """(dtype to accumulate in, dtype to return) for mean/var: integers and bools give
    float32, 64-bit integers float64, as in JAX (numpy: float64); float16 accumulates in
    float32."""
    if dtype is not None:
        out = dtypes.canonicalize_dtype(dtype, context=f"numbax.numpy.{api}")
    else:
        out = dtypes.to_inexact(aval.dtype)
    acc = dtypes.canonicalize_dtype(np.float32) if out == dtypes.float16 else out
    return acc, out


@compiled_when_eager(compile_large=False)
def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
    """numpy.mean: integer inputs average in the default float type.

    Args:
      a: the array.
      axis: None (all axes), an int or a tuple of ints.
      dtype: the output dtype; float16 inputs accumulate in float32, as numpy does.
      keepdims: keep reduced axes with size 1.
      where: a boolean mask (broadcast to a's shape) of the entries to average.

    Returns:
      The mean (NaN where the mask leaves nothing).

    >>> mean([1, 2, 3, 4])
    Array(2.5, dtype=float64)
    """
    a = _check_numeric(a, "mean")
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim, "mean")
    acc, out_dtype = _mean_dtypes(aval, dtype, "mean")
    total = sum(lax.convert_element_type(a, acc, aval.weak_type), axes, keepdims=keepdims,
                where=where)
    n = _where_count(a, where, axes, keepdims, acc)
    return lax.convert_element_type(lax.div(total, n), out_dtype, aval.weak_type)


@compiled_when_eager(compile_large=False)
def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, correction: Any = None) -> Any:
    """numpy.var: mean of |x - mean(x)|**2 over N - ddof.

    Args:
      a: the array. axis, dtype, keepdims: as in mean.
      ddof: delta degrees of freedom (correction is its array-API name).
      where: a boolean mask of the entries to include.

    Returns:
      The variance (real for complex input).

    >>> var([1.0, 2.0, 3.0, 4.0], ddof=1)
    Array(1.66666667, dtype=float64)
    """
    a = _check_numeric(a, "var")
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim, "var")
    if correction is not None:
        ddof = correction
    acc, out_dtype = _mean_dtypes(aval, dtype, "var")
    x = lax.convert_element_type(a, acc, aval.weak_type)
    centered = lax.sub(x, ufuncs.broadcast_to_shape(mean(x, axes, keepdims=True, where=where),
                                                    aval.shape))
    if kind_of(acc) == "c":
        sq = lax.add(lax.square(lax.real(centered)), lax.square(lax.imag(centered)))
    else:
        sq = lax.mul(centered, centered)
    total = sum(sq, axes, keepdims=keepdims, where=where)
    real_out = finfo_of(out_dtype).dtype if kind_of(out_dtype) == "c" else out_dtype
    count = _count(aval.shape, axes) if where is None else _where_count(
        a, where, axes, keepdims, dtypes.default_int_dtype())
    out = _over_dof(total, ufuncs.subtract(count, ddof))
    return lax.convert_element_type(out, real_out, aval.weak_type)


def _over_dof(total: Any, dof: Any) -> Any:
    """total / dof, NaN where dof <= 0 (ddof >= the count), as in JAX; numpy gives inf there,
    or a negative variance."""
    dtype = get_aval(total).dtype
    none = ufuncs.less_equal(dof, 0)
    safe = lax.convert_element_type(where(none, 1, dof), dtype)
    return where(none, lax.convert_element_type(np.nan, dtype), lax.div(total, safe))


@compiled_when_eager(compile_large=False)
def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, correction: Any = None) -> Any:
    return lax.sqrt(var(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where,
                        correction=correction))


def _arg_reduce(api: str, a: Any, axis: Any, keepdims: bool) -> Any:
    a = _check_numeric(a, api)
    aval = get_aval(a)
    if axis is None:
        a = shape_ops.reshape(a, (aval.size,))
        ax = 0
    else:
        ax = canonicalize_axis(axis, aval.ndim, api)
    if get_aval(a).shape[ax] == 0:
        raise NumbaxValueError(
            f"numbax.numpy.{api}: a has shape {aval.shape}, and the reduced axis is empty; "
            "expected a non-empty axis (an empty sequence has no arg-extremum)."
        )
    prim = lax_reductions.argmax if api == "argmax" else lax_reductions.argmin
    out = prim(a, ax, dtypes.default_int_dtype())
    if keepdims:
        axes = tuple(range(aval.ndim)) if axis is None else (ax,)
        out = _keep(out, aval.shape, axes, True)
    return out


def argmax(a: Any, axis: int | None = None, out: None = None, *,
           keepdims: bool = False) -> Any:
    """numpy.argmax: the first index of the maximum (of the first NaN, where there is one)."""
    return _arg_reduce("argmax", a, axis, keepdims)


def argmin(a: Any, axis: int | None = None, out: None = None, *,
           keepdims: bool = False) -> Any:
    return _arg_reduce("argmin", a, axis, keepdims)


def _cumulative(api: str, a: Any, axis: Any, dtype: Any, reverse: bool = False) -> Any:
    a = _check_numeric(a, api)
    aval = get_aval(a)
    if axis is None:
        a = shape_ops.reshape(a, (aval.size,))
        axis = 0
    ax = canonicalize_axis(axis, get_aval(a).ndim, api)
    # JAX keeps an integer's own dtype here (sum widens it); bools count in the default int
    target = (dtypes.canonicalize_dtype(dtype, context=f"numbax.numpy.{api}") if dtype is not
              None else dtypes.default_int_dtype() if aval.dtype == dtypes.bool_ else
              aval.dtype)
    a = lax.convert_element_type(a, target, aval.weak_type)
    fn = {"cumsum": lax_reductions.cumsum, "cumprod": lax_reductions.cumprod}[api]
    return fn(a, axis=ax, reverse=reverse)


def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return _cumulative("cumsum", a, axis, dtype)


def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return _cumulative("cumprod", a, axis, dtype)


def _with_initial(api: str, out: Any, axis: Any, include_initial: bool, value: int) -> Any:
    if not include_initial:
        return out
    from numbax._src.numpy.shapes import concatenate

    shape = list(get_aval(out).shape)
    shape[axis] = 1
    return concatenate([shape_ops.full(tuple(shape), value, get_aval(out).dtype), out], axis)


def _array_api_cumulative(name: str, cum_fn, initial: int, x: Any, axis: int | None, dtype: Any,
                include_initial: bool) -> Any:
    """The array-API cumulative_sum/prod: axis required above rank 1, optional initial row."""
    x = _check_numeric(x, name)
    if axis is None:
        if get_aval(x).ndim > 1:
            raise NumbaxValueError(
                f"numbax.numpy.{name}: x has shape {get_aval(x).shape}, so axis is "
                "required. Pass axis= for arrays of rank > 1."
            )
        axis = 0
    ax = canonicalize_axis(axis, builtins.max(get_aval(x).ndim, 1), name)
    return _with_initial(name, cum_fn(x, ax, dtype), ax, include_initial, initial)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """The array API's cumulative sum: small integers widen as sum's do (JAX's rule; cumsum
    keeps them)."""
    if dtype is None:
        dtype = _sum_dtype(get_aval(_check_numeric(x, "cumulative_sum")).dtype)
    return _array_api_cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    return _array_api_cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


# ----------------------------------------------------------------------------- nan-aware


def _nan_replaced(a: Any, api: str, value: Any) -> Any:
    a = _check_numeric(a, api)
    if kind_of(get_aval(a).dtype) not in "fc":
        return a
    return where(ufuncs.isnan(a), lax.convert_element_type(value, get_aval(a).dtype), a)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return sum(_nan_replaced(a, "nansum", 0), axis, dtype, keepdims=keepdims, initial=initial,
               where=where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return prod(_nan_replaced(a, "nanprod", 1), axis, dtype, keepdims=keepdims, initial=initial,
                where=where)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return cumsum(_nan_replaced(a, "nancumsum", 0), axis, dtype)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    return cumprod(_nan_replaced(a, "nancumprod", 1), axis, dtype)


def _not_nan(a: Any, where_: Any) -> Any:
    """The mask of entries nan-reductions use: not NaN, and inside `where` when given."""
    keep = ufuncs.logical_not(ufuncs.isnan(a))
    if where_ is not None:
        keep = lax.bitwise_and(keep, ufuncs.broadcast_to_shape(
            ufuncs.asbool(asarray(where_)), get_aval(a).shape))
    return keep


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, where: Any = None) -> Any:
    a = _check_numeric(a, "nanmean")
    acc, out_dtype = _mean_dtypes(get_aval(a), dtype, "nanmean")
    a = lax.convert_element_type(a, acc)
    keep = _not_nan(a, where)
    count = sum(keep, axis, keepdims=keepdims)
    total = sum(a, axis, keepdims=keepdims, where=keep)
    return lax.convert_element_type(
        lax.div(total, lax.convert_element_type(count, get_aval(total).dtype)), out_dtype)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None) -> Any:
    a = _check_numeric(a, "nanvar")
    acc, out_dtype = _mean_dtypes(get_aval(a), dtype, "nanvar")
    a = lax.convert_element_type(a, acc)
    shape = get_aval(a).shape
    keep = _not_nan(a, where)
    centered = lax.sub(a, ufuncs.broadcast_to_shape(nanmean(a, axis, keepdims=True,
                                                            where=where), shape))
    complex_acc = kind_of(acc) == "c"
    sq = lax.mul(centered, lax.conj(centered)) if complex_acc else lax.mul(centered, centered)
    if kind_of(acc) == "c":
        sq = lax.real(sq)
    count = sum(keep, axis, keepdims=keepdims)
    total = sum(sq, axis, keepdims=keepdims, where=keep)
    real_out = finfo_of(out_dtype).dtype if kind_of(out_dtype) == "c" else out_dtype
    return lax.convert_element_type(_over_dof(total, ufuncs.subtract(count, ddof)), real_out)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None) -> Any:
    return lax.sqrt(nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where))


def _nan_extreme(api: str, reducer: Callable, fill: float, a: Any, axis: Any,
                 keepdims: bool, initial: Any, where_: Any) -> Any:
    a = _check_numeric(a, api)
    _need_initial(api, where_, initial)
    if kind_of(get_aval(a).dtype) not in "fc":
        return reducer(a, axis, keepdims=keepdims, initial=initial, where=where_)
    keep = _not_nan(a, where_)
    out = reducer(where(keep, a, lax.convert_element_type(fill, get_aval(a).dtype)), axis,
                  keepdims=keepdims, initial=initial)
    if initial is not None:  # numpy: the initial value stands in for an all-NaN slice
        return out
    nothing = lax.bitwise_not(any(keep, axis, keepdims=keepdims))
    return where(nothing, lax.convert_element_type(np.nan, get_aval(a).dtype), out)


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    return _nan_extreme("nanmax", max, -np.inf, a, axis, keepdims, initial, where)


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    return _nan_extreme("nanmin", min, np.inf, a, axis, keepdims, initial, where)


# ----------------------------------------------------------------------------- others


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    return ufuncs.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """numpy.average: weights of a's shape, or 1-d along a single axis."""
    a = _check_numeric(a, "average")
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        aval = get_aval(a)
        n = _count(aval.shape, canonicalize_axes(axis, aval.ndim, "average"))
        return avg, shape_ops.full(get_aval(avg).shape, n, get_aval(avg).dtype)
    w = _check_numeric(weights, "average")
    a_shape, w_shape = get_aval(a).shape, get_aval(w).shape
    if w_shape != a_shape:
        if axis is None or isinstance(axis, (tuple, list)) or len(w_shape) != 1:
            raise NumbaxValueError(
                f"numbax.numpy.average: weights has shape {w_shape} and a has shape {a_shape}; "
                "expected equal shapes, or 1-d weights along a single axis."
            )
        ax = canonicalize_axis(axis, len(a_shape), "average")
        if w_shape[0] != a_shape[ax]:
            raise NumbaxValueError(
                f"numbax.numpy.average: weights has shape {w_shape}, expected ({a_shape[ax]},) "
                f"to match axis {ax} of a, whose shape is {a_shape}."
            )
        w = shape_ops.broadcast_in_dim(w, a_shape, (ax,))
    a, w = ufuncs.promote_dtypes_inexact("average", a, w)
    scl = sum(w, axis, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, w), axis, keepdims=keepdims), scl)
    return (avg, scl) if returned else avg


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    a = _check_numeric(a, "count_nonzero")
    nz = ufuncs.asbool(a)
    return sum(lax.convert_element_type(nz, dtypes.default_int_dtype()), axis,
               keepdims=keepdims)

