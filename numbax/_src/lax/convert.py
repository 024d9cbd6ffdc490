"""Dtype conversions: convert_element_type (a value cast) and bitcast_convert_type (a bit
reinterpretation), the two primitives every dtype change goes through."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters.ad import Zero


def _weak_scalar(value: Any, dtype: np.dtype) -> Any:
    """A Python scalar as a concrete weakly typed value of `dtype` (numpy scalars are strong);
    a Python int wraps to a narrow integer dtype, as in JAX (dtypes.python_scalar_value)."""
    from numbax._src.array import Array  # Array sits above lax

    return Array._from_numpy(dtypes.python_scalar_value(value, dtype), weak_type=True)


convert_element_type_p = Primitive("convert_element_type")


def _convert_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> list:
    return [ShapedArray(x.shape, new_dtype, weak_type)]


def _convert_impl(x, *, new_dtype, weak_type):
    return [host_cast(x, np.dtype(new_dtype))]


def host_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """x (a numpy value) cast as the primitive casts: complex to real keeps the real part,
    floats to integers saturate (`saturating_cast`), the rest as numpy's astype."""
    if kind_of(x.dtype) == "c" and kind_of(dtype) != "c":
        x = x.real
    if kind_of(dtype) in "iu" and kind_of(x.dtype) == "f":
        return saturating_cast(x, dtype)
    with np.errstate(over="ignore"):  # (a float past float16's range is inf, silently as JAX)
        return x.astype(dtype)


def saturating_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Floats x as the integer dtype `dtype` as JAX (XLA) converts them: truncated toward
    zero, saturated at the type's range, NaN to 0 (numpy's cast wraps or gives INT_MIN there:
    `(img * 255).astype(uint8)` of 1.01 gave 1 for 255)."""
    info = np.iinfo(dtype)
    x = np.asarray(x, np.float64)  # (exact for every float dtype; the bounds are powers of two)
    high, low = x >= float(info.max) + 1.0, x <= float(info.min) - 1.0
    inside = np.where(high | low | np.isnan(x), 0.0, x)
    return np.where(high, info.max, np.where(low, info.min, inside.astype(dtype))).astype(dtype)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(new_dtype):
        return [ans], [Zero(ad.tangent_aval(get_aval(ans)))]
    return [ans], [convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)]


def _convert_transpose(cts, x, *, new_dtype, weak_type):
    (ct,) = cts
    aval = x.aval
    return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


core.abstract_eval_rules[convert_element_type_p] = _convert_abstract_eval
core.avals_only.add(convert_element_type_p)
core.impl_rules[convert_element_type_p] = _convert_impl
ad.jvp_rules[convert_element_type_p] = _convert_jvp
ad.transpose_rules[convert_element_type_p] = _convert_transpose
batching.defvectorized(convert_element_type_p)


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_shape(x: ShapedArray, new_dtype: np.dtype) -> tuple[int, ...]:
    """Same width: same shape; narrower: a trailing axis of the ratio; wider: the trailing
    axis (of the ratio) is consumed (JAX's rule)."""
    old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if old == new:
        return x.shape
    if new < old:
        return (*x.shape, old // new)
    if not x.shape or x.shape[-1] * old != new:
        raise NumbaxValueError(
            f"lax.bitcast_convert_type: operand has shape {x.shape} and dtype {x.dtype}; "
            f"casting to the wider {np.dtype(new_dtype)} needs a last dimension of size "
            f"{new // old}.")
    return x.shape[:-1]


def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> list:
    return [ShapedArray(_bitcast_shape(x, new_dtype), new_dtype)]


def _bitcast_impl(x, *, new_dtype):
    shape = _bitcast_shape(ShapedArray(x.shape, x.dtype), new_dtype)
    return [np.ascontiguousarray(x).view(new_dtype).reshape(shape)]


core.abstract_eval_rules[bitcast_convert_type_p] = _bitcast_abstract_eval
core.avals_only.add(bitcast_convert_type_p)
core.impl_rules[bitcast_convert_type_p] = _bitcast_impl
ad.non_differentiable.add(bitcast_convert_type_p)
batching.defvectorized(bitcast_convert_type_p)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterprets the bits of operand as new_dtype. A narrower new_dtype adds a trailing
    axis (f32[n] -> u8[n, 4]); a wider one consumes the trailing axis (u8[n, 4] -> f32[n]).

    >>> bitcast_convert_type(np.float32(1.0), np.int32)
    Array(1065353216, dtype=int32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype, context="lax.bitcast_convert_type")
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Elementwise cast of operand to new_dtype (complex to real keeps the real part).

    >>> convert_element_type(np.array([1.7, -1.7]), np.int32)
    Array([ 1, -1], dtype=int32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype, context="lax.convert_element_type")
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    if isinstance(operand, (bool, int, float, complex)) and not isinstance(operand, np.generic):
        if weak_type:
            return _weak_scalar(operand, new_dtype)
        return host_cast(np.asarray(operand), new_dtype)[()]  # numbax's internal constants
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)


def convert_element_type_api(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """numbax.lax.convert_element_type: as JAX, always an Array (or a tracer), never the
    numpy value the internal convert_element_type gives Python scalars.

    >>> convert_element_type_api(1.7, np.int32)
    Array(1, dtype=int32)
    """
    if isinstance(operand, core.Tracer) or hasattr(operand, "_from_numpy"):
        return convert_element_type(operand, new_dtype, weak_type)
    from numbax._src.array import Array  # Array sits above lax

    new_dtype = dtypes.canonicalize_dtype(new_dtype, context="lax.convert_element_type")
    if isinstance(operand, complex) and kind_of(new_dtype) != "c":
        raise NumbaxTypeError(
            f"numbax.lax.convert_element_type: operand is the Python complex {operand!r} and "
            f"new_dtype {new_dtype} is not complex (JAX refuses it too). Pass operand.real, "
            "or a numpy complex scalar, whose real part is kept.")
    get_aval(operand)  # a clear error for what is not an array
    return Array._from_numpy(host_cast(np.asarray(operand), new_dtype), weak_type=weak_type)


# numbax-only, internal: Numba's CPU target has no float16 or bfloat16, so the CPU compiler
# computes their programs in float32/float64 and rounds each result to float16's (bfloat16's)
# values with these primitives (compiler/narrow_floats.py); they never appear in a traced
# program.
def _rounding_primitive(name: str, narrow: Any, wide: tuple[np.dtype, ...]) -> Primitive:
    """An elementwise primitive rounding its `wide`-dtype operand to `narrow`'s values."""
    prim = Primitive(name)

    def abstract_eval(x: ShapedArray) -> list:
        if x.dtype not in wide:
            raise NumbaxValueError(f"{name}: operand has dtype {x.dtype}, expected one of "
                                   f"{', '.join(map(str, wide))}.")
        return [x]

    core.abstract_eval_rules[prim] = abstract_eval
    core.impl_rules[prim] = lambda x: [x.astype(narrow).astype(x.dtype)]
    ad.deflinear(prim, lambda cts, x: [prim.bind(cts[0])])
    batching.defvectorized(prim)
    return prim


round_to_float16_p = _rounding_primitive(
    "round_to_float16", np.float16, (np.dtype(np.float16), np.dtype(np.float32),
                                     np.dtype(np.float64)))
round_to_bfloat16_p = _rounding_primitive("round_to_bfloat16", dtypes.bfloat16,
                                          (np.dtype(np.float32),))
