"""Argument checks and dtype promotion shared by the numbax.scipy.special families."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import (
    ConcretizationTypeError,
    NumbaxTypeError,
    NumbaxValueError,
    ShapeDtypeError,
)
from numbax._src.numpy import lax_numpy, shapes, ufuncs


def _array_like(api: str, i: int, x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return lax_numpy.asarray(x)
    if not core.is_array_like(x):
        raise NumbaxTypeError(
            f"numbax.scipy.{api}: argument {i} has type {type(x).__name__}, expected an "
            "array or a number. Pass a numbax/numpy array or a scalar.")
    return x


def inexact(api: str, *args: Any) -> list[Any]:
    """args promoted to one inexact dtype (ints to the default float) and broadcast."""
    args = [_array_like(api, i, x) for i, x in enumerate(args)]
    promoted = ufuncs.promote_dtypes_inexact(api, *args)
    if len(promoted) > 1:
        return list(shapes.broadcast_arrays(*promoted))
    return promoted


def real_float(api: str, *args: Any) -> list[Any]:
    """Like inexact, rejecting complex inputs (ShapeDtypeError: JAX raises ValueError for some
    functions and TypeError for others)."""
    promoted = inexact(api, *args)
    dtype = get_aval(promoted[0]).dtype
    if kind_of(dtype) == "c":
        raise ShapeDtypeError(
            f"numbax.scipy.{api}: arguments have dtype {dtype}, expected a real dtype. "
            "Pass real-valued arrays.")
    return promoted


def static_int(api: str, name: str, value: Any) -> int:
    """A Python int from a concrete integer value (an error naming the argument otherwise)."""
    if isinstance(value, core.Tracer):
        raise ConcretizationTypeError(f"the argument {name}", f"numbax.scipy.{api}")
    arr = np.asarray(value)
    if arr.ndim != 0 or kind_of(arr.dtype) not in "biuf" or (
            kind_of(arr.dtype) == "f" and not float(arr).is_integer()):
        raise NumbaxTypeError(
            f"numbax.scipy.{api}: {name} is {value!r}, expected an integer. Pass a Python "
            "int.")
    return int(arr)


def nonnegative_int(api: str, name: str, value: Any) -> int:
    n = static_int(api, name, value)
    if n < 0:
        raise NumbaxValueError(
            f"numbax.scipy.{api}: {name} is {n}, expected a non-negative integer.")
    return n


def dtype_of(x: Any) -> np.dtype:
    return get_aval(x).dtype


def const(x: Any, value: Any) -> np.ndarray:
    """A rank-0 constant of x's dtype."""
    return np.array(value, dtype=get_aval(x).dtype)
