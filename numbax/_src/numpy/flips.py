"""numpy's element reorderings along axes: flip, fliplr, flipud, roll, rot90."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import indexing as lax_indexing
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import (
    asarray,
    canonicalize_axes,
    canonicalize_axis,
    concrete_value,
)
from numbax._src.numpy.shapes import _slice_axis, ravel, reshape, swapaxes

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90"]


@key_array_op("m")
def flip(m: Any, axis: Any = None) -> Any:
    """numpy.flip: m reversed along `axis` (all axes by default).

    >>> flip(asarray([1, 2, 3]))
    Array([3, 2, 1], dtype=int64)
    """
    m = asarray(m)
    axes = canonicalize_axes(axis, get_aval(m).ndim, "flip")
    if not axes:
        return m
    return shape_ops.rev(m, axes)


@key_array_op("m")
def fliplr(m: Any) -> Any:
    """numpy.fliplr: m reversed along axis 1 (m needs 2 or more dimensions)."""
    m = asarray(m)
    if get_aval(m).ndim < 2:
        raise NumbaxValueError(f"numbax.numpy.fliplr: m has shape {get_aval(m).shape}, expected "
                               "at least 2 dimensions.")
    return flip(m, 1)


@key_array_op("m")
def flipud(m: Any) -> Any:
    """numpy.flipud: m reversed along axis 0."""
    m = asarray(m)
    if get_aval(m).ndim < 1:
        raise NumbaxValueError("numbax.numpy.flipud: m has shape (), expected at least 1 "
                               "dimension.")
    return flip(m, 0)


@key_array_op("a")
def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """numpy.roll: elements shifted by `shift` along `axis` (the flattened array if None),
    wrapping around; shifts are static.

    >>> roll(asarray([1, 2, 3, 4]), 1)
    Array([4, 1, 2, 3], dtype=int64)
    """
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    if isinstance(shift, core.Tracer) and shift.to_concrete_value() is None:
        return _roll_traced(a, shift, axis)
    shifts = np.atleast_1d(concrete_value(shift, "numbax.numpy.roll"))
    axes = np.atleast_1d(np.asarray(axis))
    shifts, axes = np.broadcast_arrays(shifts, axes)
    a_shape = get_aval(a).shape
    for s, ax in zip(shifts.tolist(), axes.tolist()):
        ax = canonicalize_axis(ax, len(a_shape), "roll")
        n = a_shape[ax]
        if n == 0:
            continue
        s = s % n
        if s:
            a = shape_ops.concatenate(
                [_slice_axis(a, ax, n - s, n), _slice_axis(a, ax, 0, n - s)], ax)
    return a


def _roll_traced(a: Any, shift: Any, axis: Any) -> Any:
    """roll by traced shifts: a slice of length n at n - (shift mod n) of a twice over."""
    shift = asarray(shift)
    shift = reshape(shift, (get_aval(shift).size,))
    axes = np.atleast_1d(np.asarray(axis))
    count = np.broadcast_shapes(get_aval(shift).shape, axes.shape)[0]
    axes = np.broadcast_to(axes, (count,))
    if get_aval(shift).shape[0] != count:
        shift = shape_ops.broadcast_in_dim(shift, (count,), (0,))
    a_shape = get_aval(a).shape
    for i, ax in enumerate(axes.tolist()):
        ax = canonicalize_axis(ax, len(a_shape), "roll")
        n = a_shape[ax]
        if n == 0:
            continue
        s = ufuncs.remainder(reshape(_slice_axis(shift, 0, i, i + 1), ()), n)
        doubled = shape_ops.concatenate([a, a], ax)
        a = lax_indexing.dynamic_slice_in_dim(doubled, ufuncs.subtract(n, s), n, ax)
    return a


@key_array_op("m")
def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """numpy.rot90: m rotated by k quarter turns in the plane of `axes`.

    >>> rot90(asarray([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int64)
    """
    m = asarray(m)
    ndim_ = get_aval(m).ndim
    if len(axes) != 2 or ndim_ < 2:
        raise NumbaxValueError(
            f"numbax.numpy.rot90: m has shape {get_aval(m).shape} and axes {axes}, expected two "
            "axes of an array of rank >= 2."
        )
    ax0, ax1 = (canonicalize_axis(x, ndim_, "rot90", "axes") for x in axes)
    if ax0 == ax1:
        raise NumbaxValueError(f"numbax.numpy.rot90: axes {axes} must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)
