"""numpy's element selection by index, mask or condition: choose, compress, extract,
piecewise, partition and argpartition."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import key_array_op, refuses_keys
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import (
    asarray,
    canonicalize_axis,
    concrete_value,
    static_int,
    where,
)

__all__ = ["choose", "compress", "extract", "piecewise", "partition", "argpartition"]


@key_array_op("choices")
def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """numpy.choose: out[i] = choices[a[i]][i], with a and the choices broadcast together.

    mode 'raise' checks the indices and so needs a concrete `a`; 'wrap' and 'clip' trace.

    >>> choose(asarray([0, 1, 0]), [asarray([1, 2, 3]), asarray([10, 20, 30])])
    Array([ 1, 20,  3], dtype=int64)
    """
    from numbax._src.numpy.indexing import take_along_axis
    from numbax._src.numpy.shapes import stack

    if out is not None:
        raise NumbaxValueError("numbax.numpy.choose: out is not supported (arrays are "
                               "immutable); use the returned array.")
    a = asarray(a)
    if kind_of(get_aval(a).dtype) not in "biu":
        raise NumbaxTypeError(f"numbax.numpy.choose: a has dtype {get_aval(a).dtype}, expected "
                              "integer indices into choices.")
    choices = [asarray(c) for c in choices]
    n = len(choices)
    if n == 0:
        raise NumbaxValueError("numbax.numpy.choose: choices is empty, expected at least one "
                               "array.")
    if mode == "raise":
        value = concrete_value(a, "numbax.numpy.choose with mode='raise' (use 'wrap' or 'clip' "
                                  "under jit)")
        if ((value < 0) | (value >= n)).any():
            raise NumbaxValueError(f"numbax.numpy.choose: a has entries outside [0, {n}); pass "
                                   "in-range indices or mode='wrap'/'clip'.")
    elif mode == "wrap":
        a = ufuncs.remainder(a, n)
    elif mode == "clip":
        a = lax.clamp(lax.convert_element_type(0, get_aval(a).dtype), a,
                      lax.convert_element_type(n - 1, get_aval(a).dtype))
    else:
        raise NumbaxValueError(f"numbax.numpy.choose: mode is {mode!r}, expected 'raise', "
                               "'wrap' or 'clip'.")
    parts = ufuncs.promote_dtypes("choose", *choices)
    shape = ufuncs.broadcast_shapes("choose", get_aval(a).shape,
                                    *[get_aval(c).shape for c in parts])
    stacked = stack([ufuncs.broadcast_to_shape(c, shape) for c in parts])
    idx = shape_ops.reshape(ufuncs.broadcast_to_shape(a, shape), (1, *shape))
    return shape_ops.reshape(take_along_axis(stacked, idx, axis=0, mode="clip"), shape)


@key_array_op("a")
def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    """numpy.compress: the slices of `a` along `axis` where the 1-d `condition` holds.

    A condition shorter than the axis counts as False past its end (as numpy). With JAX's
    static size=, the result has that many slices (padded with fill_value), so it traces.

    >>> compress(asarray([True, False, True]), asarray([[1, 2], [3, 4], [5, 6]]), axis=0)
    Array([[1, 2],
           [5, 6]], dtype=int64)
    """
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.shapes import ravel
    from numbax._src.numpy.sorting import nonzero

    if out is not None:
        raise NumbaxValueError("numbax.numpy.compress: out is not supported; use the returned "
                               "array.")
    cond = asarray(condition)
    if get_aval(cond).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.compress: condition has shape "
                               f"{get_aval(cond).shape}, expected a 1-d array.")
    arr = asarray(a)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = canonicalize_axis(axis, get_aval(arr).ndim, "compress")
    n = get_aval(arr).shape[axis]
    m = get_aval(cond).shape[0]
    cond = ufuncs.asbool(cond)
    if m > n:
        extra = shape_ops.slice(cond, (n,), (m,))
        if not (isinstance(extra, core.Tracer) and extra.to_concrete_value() is None):
            if np.asarray(concrete_value(extra, "numbax.numpy.compress")).any():
                raise NumbaxValueError(f"numbax.numpy.compress: condition has {m} entries and "
                                       f"True ones past axis {axis}'s length {n}.")
        cond = shape_ops.slice(cond, (0,), (n,))
    elif m < n:
        cond = shape_ops.pad(cond, np.bool_(False), ((0, n - m, 0),))
    (idx,) = nonzero(cond, size=size, fill_value=-1 if size is not None else None)
    picked = take(arr, idx, axis=axis, mode="fill", fill_value=0)
    if size is None:
        return picked
    valid = lax.ge(idx, np.int64(0))
    shape = [1] * get_aval(picked).ndim
    shape[axis] = size
    fill = lax.convert_element_type(asarray(fill_value), get_aval(picked).dtype)
    return where(shape_ops.reshape(valid, tuple(shape)), picked, fill)


@key_array_op("arr")
def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """numpy.extract: the entries of the flattened arr where the flattened condition holds
    (size=/fill_value= as in compress)."""
    from numbax._src.numpy.shapes import ravel

    return compress(ravel(asarray(condition)), ravel(asarray(arr)), size=size,
                    fill_value=fill_value)


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """numpy.piecewise: funclist[i](x) (or a constant) where condlist[i] holds; one extra
    function is the default where no condition holds (else 0). Later conditions win, as in
    numpy. Each function is evaluated on the whole of x, so it must be elementwise.

    >>> piecewise(asarray([-1.0, 0.5, 2.0]), [asarray([True, False, False])], [0.0, 1.0])
    Array([0., 1., 1.], dtype=float64)
    """
    x = asarray(x)
    dtype = get_aval(x).dtype
    if isinstance(condlist, (list, tuple)):
        conds = [ufuncs.asbool(asarray(c)) for c in condlist]
    else:
        c = ufuncs.asbool(asarray(condlist))
        conds = [c] if get_aval(c).shape == get_aval(x).shape or get_aval(c).ndim == 0 else \
            [shape_ops.reshape(shape_ops.slice(c, (i,) + (0,) * (get_aval(c).ndim - 1),
                                               (i + 1,) + get_aval(c).shape[1:]),
                               get_aval(c).shape[1:]) for i in range(get_aval(c).shape[0])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise NumbaxValueError(f"numbax.numpy.piecewise: funclist has {len(funclist)} entries "
                               f"for {n} conditions, expected {n} or {n + 1} (with a default).")
    shape = get_aval(x).shape
    conds = [ufuncs.broadcast_to_shape(c, shape) for c in conds]

    def evaluate(fn: Any) -> Any:
        value = fn(x, *args, **kw) if callable(fn) else fn
        return ufuncs.broadcast_to_shape(lax.convert_element_type(asarray(value), dtype), shape)

    out = shape_ops.full(shape, 0, dtype)
    if len(funclist) == n + 1:
        any_cond = shape_ops.full(shape, False, dtypes.bool_)
        for c in conds:
            any_cond = lax.bitwise_or(any_cond, c)
        out = where(any_cond, out, evaluate(funclist[n]))
    for c, fn in zip(conds, funclist[:n]):
        out = where(c, evaluate(fn), out)
    return out


def _kth(api: str, a: Any, kth: Any, axis: int) -> tuple[Any, int, int]:
    a = asarray(a)
    if kind_of(get_aval(a).dtype) == "c":
        raise NumbaxTypeError(f"numbax.numpy.{api}: a has dtype {get_aval(a).dtype}; complex "
                              "partitions are not supported (as in JAX). Sort instead.")
    if get_aval(a).ndim == 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: a has shape (), expected at least 1 "
                               "dimension.")
    ax = canonicalize_axis(axis, get_aval(a).ndim, api)
    n = get_aval(a).shape[ax]
    k = static_int(kth, api, "kth")
    if not -n <= k < n:
        raise NumbaxValueError(f"numbax.numpy.{api}: kth {k} is out of bounds for an axis of "
                               f"length {n}.")
    return a, ax, k % n


@refuses_keys("a")
def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """numpy.partition: the kth element in its sorted place, smaller ones before it and
    larger ones after. As in JAX, those before are ascending and those after descending.

    >>> partition(asarray([5, 1, 4, 2, 3]), 2)
    Array([1, 2, 3, 5, 4], dtype=int64)
    """
    from numbax._src.numpy.shapes import _slice_axis, concatenate
    from numbax._src.numpy.sorting import sort

    a, ax, k = _kth("partition", a, kth, axis)
    n = get_aval(a).shape[ax]
    s = sort(a, axis=ax)
    return concatenate([_slice_axis(s, ax, 0, k + 1),
                        shape_ops.rev(_slice_axis(s, ax, k + 1, n), (ax,))], ax)


@refuses_keys("a")
def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """numpy.argpartition: indices that partition `a` around its kth element. As in JAX, the
    first kth + 1 index the smallest values in ascending order and the rest follow in
    increasing index order.

    >>> argpartition(asarray([5, 1, 4, 2, 3]), 2)
    Array([1, 3, 4, 0, 2], dtype=int32)
    """
    from numbax._src.numpy.creation import iota
    from numbax._src.numpy.shapes import _slice_axis, concatenate
    from numbax._src.numpy.sorting import _lax_sort, argsort

    a, ax, k = _kth("argpartition", a, kth, axis)
    shape = get_aval(a).shape
    n = shape[ax]
    order = argsort(a, axis=ax)
    idx = iota(dtypes.default_int_dtype(), shape, ax)
    _, rank = _lax_sort((order, idx), ax)  # rank[i]: the sorted position of element i
    bigger = lax.gt(rank, lax.convert_element_type(k, get_aval(rank).dtype))
    key = lax.convert_element_type(lax.bitwise_not(bigger), np.int8)
    _, rest = _lax_sort((key, idx), ax)  # the larger elements first, in index order
    out = concatenate([_slice_axis(order, ax, 0, k + 1), _slice_axis(rest, ax, 0, n - k - 1)],
                      ax)
    return lax.convert_element_type(out, dtypes.index_dtype(n))

