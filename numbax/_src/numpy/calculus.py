"""numpy's discrete calculus along an axis: gradient (finite differences on uniform or
coordinate grids), trapezoid (integration) and unwrap (phase unwrapping)."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axes, canonicalize_axis, where

__all__ = ["gradient", "trapezoid", "unwrap"]


def _along(x: Any, axis: int, start: int, stop: int) -> Any:
    from numbax._src.numpy.shapes import _slice_axis

    n = get_aval(x).shape[axis]
    return _slice_axis(x, axis, start % (n + 1) if start < 0 else start,
                       stop % (n + 1) if stop < 0 else stop)


def _on_axis(v: Any, ndim: int, axis: int) -> Any:
    """A 1-d v shaped to broadcast along `axis` of a rank-ndim array."""
    shape = [1] * ndim
    shape[axis] = get_aval(v).shape[0]
    return shape_ops.reshape(v, tuple(shape))


def _gradient_axis(f: Any, h: Any, axis: int, edge_order: int) -> Any:
    """numpy's second-order interior differences and first/second-order edges."""
    from numbax._src.numpy.shapes import concatenate

    n = get_aval(f).shape[axis]
    if n < edge_order + 1:
        raise NumbaxValueError(f"numbax.numpy.gradient: axis {axis} has {n} points, expected "
                               f"at least edge_order + 1 = {edge_order + 1}.")
    sl = lambda a, b: _along(f, axis, a, b)  # noqa: E731
    nd = get_aval(f).ndim
    if get_aval(h).ndim == 0:  # uniform spacing
        two_h = ufuncs.multiply(2, h)
        interior = ufuncs.true_divide(ufuncs.subtract(sl(2, n), sl(0, n - 2)), two_h)
        if edge_order == 1:
            first = ufuncs.true_divide(ufuncs.subtract(sl(1, 2), sl(0, 1)), h)
            last = ufuncs.true_divide(ufuncs.subtract(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            first = ufuncs.true_divide(ufuncs.add(ufuncs.add(
                ufuncs.multiply(-1.5, sl(0, 1)), ufuncs.multiply(2.0, sl(1, 2))),
                ufuncs.multiply(-0.5, sl(2, 3))), h)
            last = ufuncs.true_divide(ufuncs.add(ufuncs.add(
                ufuncs.multiply(0.5, sl(n - 3, n - 2)), ufuncs.multiply(-2.0, sl(n - 2, n - 1))),
                ufuncs.multiply(1.5, sl(n - 1, n))), h)
        return concatenate([first, interior, last], axis)
    dx = ufuncs.subtract(_along(h, 0, 1, n), _along(h, 0, 0, n - 1))  # coordinate spacings
    dx1 = _on_axis(_along(dx, 0, 0, n - 2), nd, axis)
    dx2 = _on_axis(_along(dx, 0, 1, n - 1), nd, axis)
    s = ufuncs.multiply(dx1, ufuncs.add(dx1, dx2))
    a = ufuncs.true_divide(ufuncs.negative(dx2), s)
    b = ufuncs.true_divide(ufuncs.subtract(dx2, dx1), ufuncs.multiply(dx1, dx2))
    c = ufuncs.true_divide(dx1, ufuncs.multiply(dx2, ufuncs.add(dx1, dx2)))
    interior = ufuncs.add(ufuncs.add(ufuncs.multiply(a, sl(0, n - 2)),
                                     ufuncs.multiply(b, sl(1, n - 1))),
                          ufuncs.multiply(c, sl(2, n)))
    d = [_on_axis(_along(dx, 0, i, i + 1), nd, axis) for i in (0, 1, n - 3, n - 2)] \
        if n > 2 else None
    if edge_order == 1:
        first = ufuncs.true_divide(ufuncs.subtract(sl(1, 2), sl(0, 1)),
                                   _on_axis(_along(dx, 0, 0, 1), nd, axis))
        last = ufuncs.true_divide(ufuncs.subtract(sl(n - 1, n), sl(n - 2, n - 1)),
                                  _on_axis(_along(dx, 0, n - 2, n - 1), nd, axis))
    else:
        d1, d2 = d[0], d[1]
        first = ufuncs.add(ufuncs.add(
            ufuncs.multiply(ufuncs.true_divide(ufuncs.negative(ufuncs.add(ufuncs.multiply(2, d1),
                                                                          d2)),
                                               ufuncs.multiply(d1, ufuncs.add(d1, d2))),
                            sl(0, 1)),
            ufuncs.multiply(ufuncs.true_divide(ufuncs.add(d1, d2), ufuncs.multiply(d1, d2)),
                            sl(1, 2))),
            ufuncs.multiply(ufuncs.true_divide(ufuncs.negative(d1),
                                               ufuncs.multiply(d2, ufuncs.add(d1, d2))),
                            sl(2, 3)))
        d1, d2 = d[3], d[2]
        last = ufuncs.add(ufuncs.add(
            ufuncs.multiply(ufuncs.true_divide(d1, ufuncs.multiply(d2, ufuncs.add(d1, d2))),
                            sl(n - 3, n - 2)),
            ufuncs.multiply(ufuncs.true_divide(ufuncs.negative(ufuncs.add(d2, d1)),
                                               ufuncs.multiply(d2, d1)),
                            sl(n - 2, n - 1))),
            ufuncs.multiply(ufuncs.true_divide(ufuncs.add(ufuncs.multiply(2, d1), d2),
                                               ufuncs.multiply(d1, ufuncs.add(d1, d2))),
                            sl(n - 1, n)))
    return concatenate([first, interior, last], axis)


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None) -> Any:
    """numpy.gradient: central differences inside, one-sided at the edges.

    Args:
      f: the sampled values.
      *varargs: none (unit spacing), one scalar spacing for all axes, or one scalar spacing
        or 1-d coordinate array per differentiated axis.
      axis: the axes to differentiate (all by default).
      edge_order: 1 (default) or 2, the accuracy order at the edges. Unlike JAX, which
        refuses edge_order, numbax computes numpy's second-order edges.

    Returns:
      One array per axis (a single array when one axis is differentiated).

    >>> gradient(asarray([1.0, 2.0, 4.0, 7.0, 11.0]))
    Array([1. , 1.5, 2.5, 3.5, 4. ], dtype=float64)
    """
    f = asarray(f)
    (f,) = ufuncs.promote_dtypes_inexact("gradient", f)
    nd = get_aval(f).ndim
    axes = canonicalize_axes(axis, nd, "gradient") if axis is not None else tuple(range(nd))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (canonicalize_axis(axis, nd, "gradient"),)
    edge_order = 1 if edge_order is None else operator.index(edge_order)
    if edge_order not in (1, 2):
        raise NumbaxValueError(f"numbax.numpy.gradient: edge_order is {edge_order}, expected 1 "
                               "or 2.")
    if not varargs:
        spacings = [asarray(1.0)] * len(axes)
    elif len(varargs) == 1 and get_aval(asarray(varargs[0])).ndim == 0:
        spacings = [asarray(varargs[0])] * len(axes)
    elif len(varargs) == len(axes):
        spacings = [asarray(v) for v in varargs]
    else:
        raise NumbaxValueError(f"numbax.numpy.gradient: got {len(varargs)} spacings for "
                               f"{len(axes)} axes; expected none, one scalar, or one per axis.")
    outs = []
    for ax, h in zip(axes, spacings):
        if get_aval(h).ndim == 1:
            if get_aval(h).shape[0] != get_aval(f).shape[ax]:
                raise NumbaxValueError(f"numbax.numpy.gradient: the coordinates for axis {ax} "
                                       f"have length {get_aval(h).shape[0]}, expected "
                                       f"{get_aval(f).shape[ax]}.")
            h = lax.convert_element_type(h, get_aval(f).dtype)
        elif get_aval(h).ndim != 0:
            raise NumbaxValueError(f"numbax.numpy.gradient: a spacing has shape "
                                   f"{get_aval(h).shape}, expected a scalar or 1-d coordinates.")
        outs.append(_gradient_axis(f, h, ax, edge_order))
    return outs[0] if len(outs) == 1 else outs


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """numpy.trapezoid: the integral of y by the trapezoidal rule along `axis`.

    >>> trapezoid(asarray([1.0, 2.0, 3.0]), dx=0.5)
    Array(2., dtype=float64)
    """
    from numbax._src.numpy.reductions import sum as sum_

    y = asarray(y)
    (y,) = ufuncs.promote_dtypes_inexact("trapezoid", y)
    ax = canonicalize_axis(axis, get_aval(y).ndim, "trapezoid")
    n = get_aval(y).shape[ax]
    if x is None:
        d = asarray(dx)
    else:
        x = asarray(x)
        if get_aval(x).ndim == 1:
            if get_aval(x).shape[0] != n:
                raise NumbaxValueError(f"numbax.numpy.trapezoid: x has shape "
                                       f"{get_aval(x).shape}, expected ({n},) to match axis "
                                       f"{ax} of y.")
            d = _on_axis(ufuncs.subtract(_along(x, 0, 1, n), _along(x, 0, 0, n - 1)),
                         get_aval(y).ndim, ax) if n > 1 else asarray(0.0)
        else:
            d = ufuncs.subtract(_along(x, ax, 1, n), _along(x, ax, 0, n - 1))
    if n < 2:
        return sum_(ufuncs.multiply(_along(y, ax, 0, 0), 0.0), axis=ax)
    mid = ufuncs.multiply(ufuncs.add(_along(y, ax, 1, n), _along(y, ax, 0, n - 1)), 0.5)
    return sum_(ufuncs.multiply(d, mid), axis=ax)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """numpy.unwrap: removes jumps larger than max(discont, period/2) by adding multiples of
    `period` (integer arrays with an integer period stay integers, as numpy).

    >>> unwrap(asarray([0.0, 3.0, 6.5, 0.2]), period=4.0)
    Array([ 0. , -1. , -1.5,  0.2], dtype=float64)
    """
    from numbax._src.numpy.reductions import cumsum
    from numbax._src.numpy.shapes import concatenate
    from numbax._src.numpy.sorting import diff

    p = asarray(p)
    ufuncs.refuse_complex("unwrap", p)
    ax = canonicalize_axis(axis, get_aval(p).ndim, "unwrap")
    period = asarray(period)
    p, period = ufuncs.promote_dtypes("unwrap", p, period)
    dtype = get_aval(p).dtype
    integral = kind_of(dtype) in "biu"
    if integral:
        half, rem = ufuncs.divmod(period, 2)
        ambiguous = ufuncs.equal(rem, 0)
    else:
        half = ufuncs.true_divide(period, 2)
        ambiguous = asarray(True)
    discont = half if discont is None else ufuncs.maximum(asarray(discont), half)
    dd = diff(p, axis=ax)
    low = ufuncs.negative(half)
    ddmod = ufuncs.add(ufuncs.remainder(ufuncs.subtract(dd, low), period), low)
    fix = ufuncs.logical_and(ambiguous, ufuncs.logical_and(ufuncs.equal(ddmod, low),
                                                           ufuncs.greater(dd, 0)))
    ddmod = where(fix, half, ddmod)
    correction = ufuncs.subtract(ddmod, dd)
    correction = where(ufuncs.less(ufuncs.absolute(dd), discont),
                       lax.convert_element_type(0, get_aval(correction).dtype), correction)
    n = get_aval(p).shape[ax]
    if n < 2:
        return p
    shifted = ufuncs.add(_along(p, ax, 1, n), cumsum(correction, axis=ax))
    out = concatenate([_along(p, ax, 0, 1), shifted], ax)
    return out if integral else lax.convert_element_type(out, dtypes.to_inexact(dtype))
