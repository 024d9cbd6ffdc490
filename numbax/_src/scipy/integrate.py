"""numbax.scipy.integrate: the trapezoidal rule over an axis of sampled values."""
from __future__ import annotations

import operator
from typing import Any

from numbax._src import core
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import lax_numpy, reductions, shapes, ufuncs

__all__ = ["trapezoid"]


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of samples y along `axis` by the trapezoidal rule.

    Args:
      y: the sampled values.
      x: the sample points: 1-D of length y.shape[axis], or an array broadcasting against y;
        None means evenly spaced by dx.
      dx: the spacing when x is None.
      axis: the axis to integrate along.

    Returns:
      y reduced along axis.

    >>> import numpy as np
    >>> float(trapezoid(np.array([1.0, 2.0, 3.0])))
    4.0
    """
    for name, value in (("y", y), ("x", x), ("dx", dx)):
        if value is not None and not (isinstance(value, (list, tuple))
                                      or core.is_array_like(value)):
            raise NumbaxTypeError(
                f"numbax.scipy.integrate.trapezoid: {name} has type {type(value).__name__}, "
                "expected an array.")
    (y,) = ufuncs.promote_dtypes_inexact("scipy.integrate.trapezoid", lax_numpy.asarray(y))
    axis = operator.index(axis)
    if not -y.ndim <= axis < y.ndim:
        raise NumbaxValueError(
            f"numbax.scipy.integrate.trapezoid: axis {axis} is out of bounds for y of "
            f"dimension {y.ndim}.")
    y = shapes.moveaxis(y, axis, -1)
    if x is None:
        widths = dx
    else:
        x = lax_numpy.asarray(x)
        if x.ndim == 1:
            if x.shape[0] != y.shape[-1]:
                raise NumbaxValueError(
                    f"numbax.scipy.integrate.trapezoid: x has {x.shape[0]} points but y has "
                    f"{y.shape[-1]} along axis {axis}; they must match.")
            widths = x[1:] - x[:-1]
        else:
            x = shapes.moveaxis(x, axis, -1)
            widths = x[..., 1:] - x[..., :-1]
    return reductions.sum(widths * (y[..., 1:] + y[..., :-1]) * 0.5, axis=-1)
