"""numpy's array creation and shape functions on top of lax."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import Array, asarray_value
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions, shape_ops
from numbax._src.numpy import ufuncs


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None):
    """numpy.asarray: an Array (or, under a transform, a traced value) of `a`."""
    if isinstance(a, core.Tracer) or (isinstance(a, Array) and not copy):
        if dtype is None:
            return a
        return lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype,
                                                                     context="numbax.numpy.asarray"))
    if isinstance(a, (list, tuple)) and any(isinstance(x, core.Tracer)
                                            for x in _flat_items(a)):
        from numbax._src.numpy import shapes

        return shapes.stack([asarray(x, dtype) for x in a])
    return asarray_value(a, dtype)


def _flat_items(a: Any):
    for x in a:
        if isinstance(x, (list, tuple)):
            yield from _flat_items(x)
        else:
            yield x


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None,  # noqa: A002
          ndmin: int = 0) -> Any:
    out = asarray(object, dtype, copy=copy)
    if ndmin > get_aval(out).ndim:
        out = shape_ops.reshape(out, (1,) * (ndmin - get_aval(out).ndim) + get_aval(out).shape)
    return out


def reshape(a: Any, shape: int | Sequence[int] = None, order: str = "C", *,
            newshape: Any = None) -> Any:
    if shape is None:
        shape = newshape
    a = asarray(a)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    size = get_aval(a).size
    if shape.count(-1) > 1:
        raise ValueError(f"numbax.numpy.reshape: can only specify one unknown dimension, "
                         f"got shape {shape}.")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise NumbaxTypeError(
                f"reshape: cannot reshape an array of shape {get_aval(a).shape} (size {size}) "
                f"into shape {shape}."
            )
        shape = tuple(size // known if d == -1 else d for d in shape)
    if order == "F":
        ndim = get_aval(a).ndim
        a = shape_ops.transpose(a, tuple(reversed(range(ndim))))
        out = shape_ops.reshape(a, tuple(reversed(shape)))
        return shape_ops.transpose(out, tuple(reversed(range(len(shape)))))
    return shape_ops.reshape(a, shape)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    a = asarray(a)
    ndim = get_aval(a).ndim
    axes = tuple(reversed(range(ndim))) if axes is None else tuple(int(x) % ndim for x in axes)
    return shape_ops.transpose(a, axes)


def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,  # noqa: A001
        keepdims: bool = False) -> Any:
    a = asarray(a)
    aval = get_aval(a)
    if dtype is None and aval.dtype.kind in "bi" and aval.dtype.itemsize < 8:
        dtype = dtypes.default_int_dtype()
    if dtype is None and aval.dtype.kind == "u" and aval.dtype.itemsize < 8:
        dtype = dtypes.canonicalize_dtype(np.uint64)
    if dtype is not None:
        a = lax.convert_element_type(a, dtypes.canonicalize_dtype(dtype))
    axes = tuple(range(aval.ndim)) if axis is None else (
        (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis))
    out_val = reductions.reduce_sum(a, axes)
    if keepdims:
        kept = [1 if i in {x % max(aval.ndim, 1) for x in axes} else d
                for i, d in enumerate(aval.shape)]
        out_val = shape_ops.reshape(out_val, tuple(kept))
    return out_val


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        raise NotImplementedError("where(condition) with one argument is not traceable")
    condition = ufuncs.asbool(condition)
    x, y = ufuncs.promote_dtypes("where", x, y)
    condition, x, y = ufuncs.broadcast_arrays("where", condition, x, y)
    return lax.select(condition, x, y)
