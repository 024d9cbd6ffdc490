"""Operands of numpy-style functions: dtype promotion (JAX's lattice, Python scalars weak),
numpy broadcasting, and results that come back unchanged."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import (
    Array,
    as_result,  # noqa: F401 - numpy's functions take it from here
    asarray_value,
)
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import refuse_key


def _scalar_or_array(x: Any, fun_name: str) -> Any:
    if core.is_array_like(x):
        return x
    if isinstance(x, (list, tuple)):
        return asarray_value(x)
    refuse_key(f"numbax.numpy.{fun_name}", x)
    raise core.NumbaxTypeError(
        f"numbax.numpy.{fun_name}: argument of type {type(x).__name__} is not an array. "
        "Pass arrays, Python scalars, or lists of numbers."
    )


# The dtype of each kind that all-weak operands keep (the others the lattice widens to these).
_WEAK_DEFAULTS = {"i": lambda: dtypes.python_scalar_dtype(0),
                  "f": lambda: dtypes.python_scalar_dtype(0.0),
                  "c": lambda: dtypes.python_scalar_dtype(0j)}


def _one_dtype(args: tuple) -> tuple[np.dtype, bool] | None:
    """(dtype, weak) when each Array or tracer among args has that one dtype and that one weak
    flag, and the rest are Python scalars that take it (ints everywhere but bool, floats in
    floating and complex dtypes): operands promotion leaves as they are, or turns a scalar
    into that dtype. (JAX's lattice: one dtype, all strong, stays; all weak, the bound of the
    strong dtypes, the same one, stays weak.) The common case, answered without the lattice
    (which cost 8-17 us of an eager call's 25-45); else None."""
    dtype = weak = None
    scalars = False
    for x in args:
        if type(x) is Array:
            x_dtype, x_weak = x._value.dtype, x._weak_type
        elif isinstance(x, core.Tracer):
            aval = x.aval
            x_dtype, x_weak = aval.dtype, aval.weak_type
        elif type(x) is int or type(x) is float:
            scalars = True
            continue
        else:
            return None
        if dtype is None:
            dtype, weak = x_dtype, x_weak
        elif x_dtype != dtype or x_weak != weak:
            return None
    if dtype is None:
        return None
    kind = kind_of(dtype)
    if kind not in "iufc" if scalars else kind not in "biufc":
        return None
    if weak and dtype != _WEAK_DEFAULTS.get(kind, lambda: None)():
        return None  # (the lattice widens weak operands of another dtype; it has no weak bool)
    if scalars and kind in "iu" and any(type(x) is float for x in args):
        return None  # (an int array and a Python float give a float)
    return dtype, weak


def _fast_promotion(args: tuple) -> list | None:
    """promote_dtypes' result where _one_dtype answers, else None."""
    found = _one_dtype(args)
    return None if found is None else _scalars_as(args, *found)


def _scalars_as(args: tuple, dtype: np.dtype, weak: bool) -> list:
    """args with their Python scalars made Arrays of `dtype` and `weak` (as _convert makes
    them)."""
    return [Array._from_numpy(dtypes.python_scalar_value(x, dtype), weak_type=weak)
            if type(x) is int or type(x) is float else x for x in args]


def promote_dtypes(fun_name: str, *args: Any) -> list[Any]:
    """Converts args to their common dtype (NumPy 2 rules, Python scalars weak)."""
    fast = _fast_promotion(args)
    if fast is not None:
        return fast
    args = [_scalar_or_array(x, fun_name) for x in args]
    avals = [get_aval(x) for x in args]
    # JAX's lattice has no weak bool: Python bools (and weak bool results) promote as strong.
    dtype, weak = dtypes.result_type(*[(a.dtype, a.weak_type and kind_of(a.dtype) != "b")
                                       for a in avals])
    return [_convert(x, dtype, weak) for x in args]


def _convert(x: Any, dtype: np.dtype, weak: bool) -> Any:
    """convert_element_type, except that a Python scalar becomes an Array that keeps `weak`
    (a Python int wraps to a narrow integer dtype, as in JAX: dtypes.python_scalar_value)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return Array._from_numpy(dtypes.python_scalar_value(x, dtype), weak_type=weak)
    return lax.convert_element_type(x, dtype, weak)


def promote_dtypes_numeric(fun_name: str, *args: Any) -> list[Any]:
    """Like promote_dtypes, then bools to int32 (JAX's rule for arithmetic that has no bool
    form: floor_divide, remainder, power, shifts; int32 with x64 on too)."""
    args = promote_dtypes(fun_name, *args)
    aval = get_aval(args[0])
    if aval.dtype != dtypes.bool_:
        return args
    return [lax.convert_element_type(x, np.dtype(np.int32), aval.weak_type) for x in args]


def refuse_complex(fun_name: str, x: Any) -> None:
    """Refuses a complex operand where the function has no complex meaning, as JAX does
    (ShapeDtypeError: JAX raises ValueError for some of these and TypeError for others)."""
    dtype = get_aval(x).dtype
    if kind_of(dtype) == "c":
        raise ShapeDtypeError(f"numbax.numpy.{fun_name} is not well defined for complex inputs "
                              f"(got {dtype}), as in JAX. Pass real values, e.g. x.real or "
                              "abs(x).")


def promote_dtypes_inexact(fun_name: str, *args: Any) -> list[Any]:
    """Like promote_dtypes, then to the float dtype numpy's math functions return."""
    found = _one_dtype(args)
    if found is not None and kind_of(found[0]) in "fc" and (
            not found[1] or found[0] == _weak_inexact(found[0])):
        return _scalars_as(args, *found)
    args = promote_dtypes(fun_name, *args)
    aval = get_aval(args[0])
    dtype = _weak_inexact(aval.dtype) if aval.weak_type else dtypes.to_inexact(aval.dtype)
    return [lax.convert_element_type(x, dtype, aval.weak_type) for x in args]


def _weak_inexact(dtype: np.dtype) -> np.dtype:
    """The dtype a weak operand of `dtype` takes in a math function: the default float,
    complex dtypes as they are."""
    return dtype if kind_of(dtype) == "c" else dtypes.python_scalar_dtype(0.0)


def broadcast_shapes(fun_name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " ".join(str(tuple(s)) for s in shapes)
        raise ShapeDtypeError(
            f"numbax.numpy.{fun_name}: operands could not be broadcast together with shapes "
            f"{listed}. Reshape or expand_dims one of them so that trailing dimensions are "
            "equal or 1."
        ) from None


def broadcast_to_shape(x: Any, shape: tuple[int, ...]) -> Any:
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    lead = len(shape) - aval.ndim
    squeeze_dims = [i for i, d in enumerate(aval.shape) if d == 1 and shape[lead + i] != 1]
    if squeeze_dims:
        x = shape_ops.squeeze(x, squeeze_dims)
    kept = [lead + i for i, d in enumerate(aval.shape) if i not in squeeze_dims]
    return shape_ops.broadcast_in_dim(x, shape, tuple(kept))


def broadcast_arrays(fun_name: str, *args: Any) -> list[Any]:
    """numpy broadcasting; rank-0 operands stay scalars (lax ops broadcast those for free)."""
    shapes = [get_aval(x).shape for x in args]
    if all(s == shapes[0] or s == () for s in shapes):
        return list(args)
    dtypes.check_rank_promotion(fun_name, shapes)
    shape = broadcast_shapes(fun_name, *shapes)
    return [x if get_aval(x).shape == () else broadcast_to_shape(x, shape) for x in args]
