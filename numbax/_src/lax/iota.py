"""iota: the index ramp 0, 1, ..., n-1 along one dimension of a shape (never materialised in
compiled code, where it becomes the loop index)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching

iota_p = Primitive("iota")


def _iota_abstract_eval(*, dtype, shape, dimension) -> list:
    if not 0 <= dimension < len(shape):
        raise NumbaxValueError(
            f"lax.iota: dimension is {dimension}, expected an axis of shape {shape}."
        )
    if kind_of(np.dtype(dtype)) not in "iuf":
        raise NumbaxTypeError(f"lax.iota: dtype is {dtype}, expected an integer or float dtype.")
    return [ShapedArray(shape, dtype)]


def _iota_impl(*, dtype, shape, dimension):
    ramp = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return [np.broadcast_to(ramp.reshape(view), shape)]


core.abstract_eval_rules[iota_p] = _iota_abstract_eval
core.avals_only.add(iota_p)
core.impl_rules[iota_p] = _iota_impl
ad.non_differentiable.add(iota_p)
batching.batch_rules[iota_p] = lambda axis_size, vals, dims, **params: (
    [iota_p.bind(**params)], [None])


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """lax.broadcasted_iota: 0, 1, ... along `dimension`, broadcast to `shape`."""
    dtype = dtypes.canonicalize_dtype(dtype, context="lax.broadcasted_iota")
    shape = tuple(int(d) for d in shape)
    ndim = len(shape)
    if not -ndim <= int(dimension) < ndim:
        raise NumbaxValueError(
            f"lax.broadcasted_iota: axis is {dimension}, expected an axis of an array of rank "
            f"{ndim}. Pass -{ndim} <= axis < {ndim}.")
    dimension = int(dimension) % ndim
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def iota(dtype: Any, size: int) -> Any:
    """lax.iota: the vector 0, 1, ..., size-1."""
    return broadcasted_iota(dtype, (int(size),), 0)
