"""numpy's array conversion, axis helpers, where/select/clip/round and closeness tests on lax."""
from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.array import Array, asarray_value
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import ufuncs
from numbax._src.numpy.weak import strong_out

__all__ = [  # concrete_value and the axis helpers stay private to the numpy layer
    "asarray", "array", "astype", "copy", "where", "select", "clip", "round", "around",
    "round_", "isclose", "allclose", "array_equal", "array_equiv", "nan_to_num",
]

# ----------------------------------------------------------------------------- axis helpers


def canonicalize_axis(axis: Any, ndim: int, api: str, arg: str = "axis") -> int:
    """A non-negative axis in range(ndim), or a NumbaxValueError naming the api and the rank."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.numpy.{api}: {arg} has type {type(axis).__name__}, expected an int. "
            "Axes are static: pass Python ints."
        ) from None
    if not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"numbax.numpy.{api}: {arg} {axis} is out of bounds for an array of rank {ndim}, "
            f"expected an axis in [{-ndim}, {ndim})."
        )
    return axis % ndim if ndim else 0


def canonicalize_axes(axis: Any, ndim: int, api: str, arg: str = "axis") -> tuple[int, ...]:
    """None -> all axes; an int or a sequence -> sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = tuple(canonicalize_axis(a, ndim, api, arg) for a in axes)
    if len(set(out)) != len(out):
        raise NumbaxValueError(f"numbax.numpy.{api}: {arg} {axis} has repeated axes, expected "
                               "distinct axes.")
    return tuple(sorted(out))


def static_int(value: Any, api: str, arg: str, prefix: str = "numbax.numpy") -> int:
    """A static (concrete) int argument, or a TypeError naming the argument."""
    if not core.is_array_like(value):
        raise NumbaxTypeError(f"{prefix}.{api}: {arg} is {value!r} of type "
                              f"{type(value).__name__}, expected an int.")
    value = core.concrete_or_error(value, f"{prefix}.{api}: {arg}")
    try:
        return operator.index(value)
    except TypeError:
        raise NumbaxTypeError(f"{prefix}.{api}: {arg} is {value!r} of type "
                              f"{type(value).__name__}, expected an int.") from None


def concrete_value(x: Any, context: str) -> np.ndarray:
    """A static (concrete) numpy value of x, which may be a nested list; tracers raise."""
    if isinstance(x, (list, tuple)):
        return np.asarray([concrete_value(v, context) for v in x])
    return np.asarray(core.concrete_or_error(x, context))


# ----------------------------------------------------------------------------- conversion


def _flat_items(a: Any):
    for x in a:
        if isinstance(x, (list, tuple)):
            yield from _flat_items(x)
        else:
            yield x


@key_array_op("a", allowed={"dtype": (None,)})
def asarray(a: Any, dtype: Any = None, order: str | None = None, *,
            copy: builtins.bool | None = None) -> Any:
    """numpy.asarray: an Array (or, under a transform, a traced value) of `a`."""
    if dtype is not None:
        from numbax._src.numpy.dtypes_api import _np_type

        dtype = dtypes.canonicalize_dtype(_np_type(dtype), context="numbax.numpy.asarray")
    if isinstance(a, core.Tracer) or isinstance(a, Array):
        if copy and isinstance(a, core.Tracer):
            a = shape_ops.copy(a)  # as JAX: a copy equation, then any conversion
        elif copy and dtype is None:
            return a.copy()
        return a if dtype is None else lax.convert_element_type(a, dtype)
    if isinstance(a, (list, tuple)) and builtins.any(
            isinstance(x, (core.Tracer, Array)) for x in _flat_items(a)):
        from numbax._src.numpy import shapes

        if not a:
            return asarray_value(np.asarray(a), dtype)
        if builtins.any(x is None for x in _flat_items(a)):
            raise NumbaxValueError("numbax.numpy.asarray: a holds None, which is not a valid "
                                   "value for an array (JAX raises ValueError too). Replace it "
                                   "with a number, e.g. numbax.numpy.nan.")
        parts = [asarray(x) for x in a]
        parts = ufuncs.promote_dtypes("asarray", *parts)
        out = shapes.stack(parts)
        # as JAX: an array built from a list is strongly typed, whatever its items' weak types
        return lax.convert_element_type(out, get_aval(out).dtype if dtype is None else dtype)
    if not core.is_array_like(a) and not isinstance(a, (list, tuple)):
        raise NumbaxTypeError(
            f"numbax.numpy.asarray: argument of type {type(a).__name__} is not array-like, "
            "expected an array, a Python scalar or a (nested) list of numbers."
        )
    if dtype is None and isinstance(a, builtins.bool):
        dtype = np.dtype(np.bool_)  # Python bools are strongly typed in JAX
    return asarray_value(a, dtype)


@key_array_op("object", allowed={"dtype": (None,)})
def array(object: Any, dtype: Any = None, copy: builtins.bool = True,  # noqa: A002
          order: str | None = None, ndmin: int = 0) -> Any:
    """numpy.array: like asarray, with at least `ndmin` dimensions."""
    out = asarray(object, dtype, copy=copy)
    ndim = get_aval(out).ndim
    if ndmin > ndim:
        out = shape_ops.reshape(out, (1,) * (ndmin - ndim) + get_aval(out).shape)
    return out


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = False) -> Any:
    return asarray(x, dtype=dtype)


@key_array_op("a")
def copy(a: Any, order: str | None = None) -> Any:  # noqa: A001
    return asarray(a, copy=True)


# ----------------------------------------------------------------------------- selection


@key_array_op("x", "y")
def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """numpy.where: 3-argument selection; the 1-argument form needs a concrete condition."""
    if x is None and y is None:
        from numbax._src.numpy.sorting import nonzero

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise NumbaxTypeError(
            "numbax.numpy.where: got one of x and y, expected both or neither. "
            "Pass where(condition, x, y)."
        )
    condition = ufuncs.asbool(condition)
    x, y = ufuncs.promote_dtypes("where", x, y)
    condition, x, y = ufuncs.broadcast_arrays("where", condition, x, y)
    return lax.select(condition, x, y)


@key_array_op("choicelist", "default")
def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """numpy.select: the first choice whose condition holds, else `default`."""
    if len(condlist) != len(choicelist):
        raise NumbaxValueError(
            f"numbax.numpy.select: condlist has {len(condlist)} entries and choicelist has "
            f"{len(choicelist)}, expected the same number."
        )
    if not condlist:
        raise NumbaxValueError("numbax.numpy.select: condlist is empty, expected at least one "
                               "condition.")
    for i, c in enumerate(condlist):
        if get_aval(asarray(c)).dtype != dtypes.bool_:
            raise NumbaxTypeError(
                f"numbax.numpy.select: condlist[{i}] has dtype {get_aval(asarray(c)).dtype}, "
                "expected bool. Compare explicitly, e.g. x > 0."
            )
    choices = ufuncs.promote_dtypes("select", *choicelist, default)
    out = choices[-1]
    for cond, choice in reversed(list(zip(condlist, choices[:-1]))):
        out = where(cond, choice, out)
    return out


@compiled_when_eager(compile_large=False)
def clip(arr: Any = None, /, min: Any = None, max: Any = None, *,  # noqa: A002
         a: Any = None, a_min: Any = None, a_max: Any = None) -> Any:
    """numpy.clip: min and max are optional; a_min/a_max are accepted as numpy 1 names."""
    arr = a if arr is None else arr
    min = a_min if min is None else min  # noqa: A001
    max = a_max if max is None else max  # noqa: A001
    if arr is None:
        raise NumbaxTypeError("numbax.numpy.clip: missing the array argument.")
    (out,) = ufuncs.promote_dtypes("clip", arr)
    for value in (out, min, max):  # (complex values have no order to clip to)
        if value is not None:
            ufuncs.refuse_complex("clip", value)  # (lists were refused: check_arraylike)
    out = ufuncs.as_result(out)
    if min is not None:
        out = ufuncs.maximum(out, min)
    if max is not None:
        out = ufuncs.minimum(out, max)
    return out


def round(a: Any, decimals: int = 0, out: None = None) -> Any:  # noqa: A001
    """numpy.round: half to even, at `decimals` decimal places."""
    (a,) = ufuncs.promote_dtypes("round", a)
    decimals = operator.index(decimals)
    dtype = get_aval(a).dtype
    if dtype == dtypes.bool_:
        raise ShapeDtypeError("numbax.numpy.round: booleans cannot be rounded (as in JAX); "
                               "convert them first, e.g. a.astype(int).")
    if kind_of(dtype) in "iu" and decimals >= 0:
        return ufuncs.as_result(a)
    def _round(x: Any) -> Any:
        if decimals == 0:
            return lax.round(x, 1)
        factor = lax.convert_element_type(10.0 ** decimals, get_aval(x).dtype)
        return lax.div(lax.round(lax.mul(x, factor), 1), factor)

    if kind_of(dtype) == "c":
        return lax.complex_(_round(lax.real(a)), _round(lax.imag(a)))
    if kind_of(dtype) in "biu":
        as_float = lax.convert_element_type(a, dtypes.default_float_dtype())
        return lax.convert_element_type(_round(as_float), dtype)
    return _round(a)


around = round_ = round


# ----------------------------------------------------------------------------- closeness


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: builtins.bool = False) -> Any:
    """numpy.isclose: |a - b| <= atol + rtol * |b|, elementwise."""
    a, b = ufuncs.promote_dtypes("isclose", a, b)
    dtype = get_aval(a).dtype
    if kind_of(dtype) in "biu":
        return ufuncs.equal(a, b)
    a, b = ufuncs.broadcast_arrays("isclose", a, b)
    real_dtype = dtypes.canonicalize_dtype(finfo_of(dtype).dtype)
    rtol = lax.convert_element_type(rtol, real_dtype)
    atol = lax.convert_element_type(atol, real_dtype)
    diff = lax.abs(lax.sub(a, b))
    close = lax.le(diff, lax.add(atol, lax.mul(rtol, lax.abs(b))))
    both_inf = lax.bitwise_and(ufuncs.isinf(a), ufuncs.isinf(b))
    out = lax.select(both_inf, lax.eq(a, b), lax.bitwise_and(close, ufuncs.isfinite(diff)))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(ufuncs.isnan(a), ufuncs.isnan(b)))
    return out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: builtins.bool = False) -> Any:
    from numbax._src.numpy.reductions import all as all_

    return all_(isclose(a, b, rtol, atol, equal_nan))


@key_array_op("a1", "a2", combine="all")
def array_equal(a1: Any, a2: Any, equal_nan: builtins.bool = False) -> Any:
    """numpy.array_equal: same shape and equal elements (a Python-known False on shapes)."""
    from numbax._src.numpy.reductions import all as all_

    a1, a2 = asarray(a1), asarray(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return asarray(False)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return all_(eq)


def array_equiv(a1: Any, a2: Any) -> Any:
    """numpy.array_equiv: equal after broadcasting (False when they do not broadcast)."""
    from numbax._src.numpy.reductions import all as all_

    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return asarray(False)
    return all_(ufuncs.equal(a1, a2))


def nan_to_num(x: Any, copy: builtins.bool = True, nan: float = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    (x,) = ufuncs.promote_dtypes("nan_to_num", x)
    dtype = get_aval(x).dtype
    if kind_of(dtype) not in "fc":
        return ufuncs.as_result(x)
    if kind_of(dtype) == "c":
        re = nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.complex_(re, im)
    info = finfo_of(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(ufuncs.isnan(x), lax.convert_element_type(nan, dtype), x)
    x = where(lax.eq(x, lax.convert_element_type(np.inf, dtype)),
              lax.convert_element_type(posinf, dtype), x)
    return where(lax.eq(x, lax.convert_element_type(-np.inf, dtype)),
                 lax.convert_element_type(neginf, dtype), x)


isclose, allclose, array_equal = map(strong_out, (isclose, allclose, array_equal))
