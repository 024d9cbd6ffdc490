"""numpy's bit-level functions: float decomposition (frexp, ldexp, spacing), bit counting and
bit packing, written with integer views (bitcast_convert_type) of the float's fields."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axis, where

__all__ = ["frexp", "ldexp", "spacing", "bitwise_count", "packbits", "unpackbits"]


def _real_float(api: str, x: Any) -> Any:
    """x as a real float; a complex x raises ShapeDtypeError (JAX's ValueError or TypeError)."""
    (x,) = ufuncs.promote_dtypes_inexact(api, x)
    if kind_of(get_aval(x).dtype) == "c":
        raise ShapeDtypeError(f"numbax.numpy.{api}: x has dtype {get_aval(x).dtype}, expected a "
                              "real dtype. Apply it to x.real and x.imag separately.")
    return x


def _const(value: Any, like: Any) -> Any:
    return lax.convert_element_type(value, get_aval(like).dtype)


def _int_view_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"i{dtype.itemsize}")


def frexp(x: Any, /) -> tuple[Any, Any]:
    """numpy.frexp: x = mantissa * 2**exponent with 0.5 <= |mantissa| < 1 (int32 exponent).

    Zeros, infinities and NaN come back unchanged with exponent 0; subnormals are exact
    (unlike JAX on XLA:CPU, which flushes them).

    Args:
      x: a real array (integers are converted to the default float dtype).

    Returns:
      (mantissa, exponent).

    >>> frexp(asarray([8.0, 0.3]))
    (Array([0.5, 0.6], dtype=float64), Array([ 4, -1], dtype=int32))
    """
    x = _real_float("frexp", x)
    dtype = get_aval(x).dtype
    info = finfo_of(dtype)
    nmant, bias = info.nmant, -int(info.minexp) + 1
    int_dtype = _int_view_dtype(dtype)
    subnormal = lax.bitwise_and(lax.lt(lax.abs(x), _const(info.smallest_normal, x)),
                                lax.ne(x, _const(0, x)))
    scale = where(subnormal, _const(2.0 ** (nmant + 1), x), _const(1.0, x))
    scaled = lax.mul(x, scale)  # subnormals made normal; nothing else changes (or overflows)
    bits = lax.bitcast_convert_type(scaled, int_dtype)
    exp_mask = (1 << (dtype.itemsize * 8 - 1 - nmant)) - 1
    field = lax.bitwise_and(lax.shift_right_logical(bits, _const(nmant, bits)),
                            _const(exp_mask, bits))
    exponent = lax.sub(field, _const(bias - 1, field))
    exponent = where(subnormal, lax.sub(exponent, _const(nmant + 1, exponent)), exponent)
    keep = ~(exp_mask << nmant) & ((1 << (dtype.itemsize * 8)) - 1)
    keep = int(np.array(keep, dtype=np.uint64).astype(np.dtype(f"u{dtype.itemsize}"))
               .view(int_dtype))
    mant_bits = lax.bitwise_or(lax.bitwise_and(bits, _const(keep, bits)),
                               _const((bias - 1) << nmant, bits))
    mantissa = lax.bitcast_convert_type(mant_bits, dtype)
    special = lax.bitwise_or(lax.eq(x, _const(0, x)), lax.bitwise_not(lax.is_finite(x)))
    mantissa = where(special, x, mantissa)
    exponent = where(special, _const(0, exponent), exponent)
    return mantissa, lax.convert_element_type(exponent, np.int32)


def _pow2(e: Any, dtype: np.dtype) -> Any:
    """2.0**e exactly, for integer e in the normal exponent range of `dtype`."""
    info = finfo_of(dtype)
    bias = -int(info.minexp) + 1
    int_dtype = _int_view_dtype(dtype)
    e = lax.convert_element_type(e, int_dtype)
    bits = lax.shift_left(lax.add(e, _const(bias, e)), _const(info.nmant, e))
    return lax.bitcast_convert_type(bits, dtype)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """numpy.ldexp: x1 * 2**x2 for an integer x2, exactly (overflow to inf, underflow to 0).

    >>> ldexp(asarray([1.5, 3.0]), asarray([2, -1]))
    Array([6. , 1.5], dtype=float64)
    """
    x2 = asarray(x2) if not isinstance(x2, (int, np.integer)) else x2
    x2_dtype = get_aval(x2).dtype
    if kind_of(x2_dtype) not in "iub":
        raise ShapeDtypeError(f"numbax.numpy.ldexp: x2 has dtype {x2_dtype}, expected an "
                              "integer dtype (the power of two).")
    x1 = _real_float("ldexp", x1)
    dtype = get_aval(x1).dtype
    info = finfo_of(dtype)
    limit = 2 * (int(info.maxexp) - int(info.minexp)) + info.nmant + 2
    step = int(info.maxexp) - 1
    x2 = lax.convert_element_type(x2, np.int64)
    shape = ufuncs.broadcast_shapes("ldexp", get_aval(x1).shape, get_aval(x2).shape)
    x1 = ufuncs.broadcast_to_shape(x1, shape)
    n = ufuncs.broadcast_to_shape(lax.clamp(np.int64(-limit), x2, np.int64(limit)), shape)
    out = x1
    for _ in range(-(-limit // step)):  # apply 2**n in steps that each stay in range
        part = lax.clamp(np.int64(-step + 1), n, np.int64(step))
        out = lax.mul(out, _pow2(part, dtype))
        n = lax.sub(n, part)
    return out


def spacing(x: Any, /) -> Any:
    """numpy.spacing: the distance from x to the next float away from zero (signed like x).

    >>> spacing(asarray([1.0, -1.0]))
    Array([ 2.22044605e-16, -2.22044605e-16], dtype=float64)
    """
    x = _real_float("spacing", x)
    dtype = get_aval(x).dtype
    inf = _const(np.inf, x)
    negative = ufuncs.signbit(x)
    toward = where(lax.bitwise_and(negative, lax.ne(x, _const(0, x))), lax.neg(inf), inf)
    step = lax.sub(lax.nextafter(x, toward), x)
    nan = shape_ops.full(get_aval(x).shape, np.nan, dtype)
    return where(lax.is_finite(x), step, nan)


def bitwise_count(x: Any, /) -> Any:
    """numpy.bitwise_count: the number of 1 bits in |x|, as uint8.

    >>> bitwise_count(asarray([7, -1, 0]))
    Array([3, 1, 0], dtype=uint8)
    """
    (x,) = ufuncs.promote_dtypes("bitwise_count", x)
    dtype = get_aval(x).dtype
    if kind_of(dtype) not in "biu":
        raise NumbaxTypeError(f"numbax.numpy.bitwise_count: x has dtype {dtype}, expected an "
                              "integer or boolean dtype.")
    if kind_of(dtype) == "b":
        return lax.convert_element_type(x, np.uint8)
    if kind_of(dtype) == "i":
        x = lax.bitcast_convert_type(lax.abs(x), np.dtype(f"u{dtype.itemsize}"))
    return lax.convert_element_type(lax.population_count(x), np.uint8)


def _check_bitorder(api: str, bitorder: str) -> None:
    if bitorder not in ("big", "little"):
        raise NumbaxValueError(f"numbax.numpy.{api}: bitorder is {bitorder!r}, expected 'big' "
                               "or 'little'.")


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """numpy.packbits: each run of 8 truth values along `axis` becomes one uint8 (zero-padded).

    >>> packbits(asarray([1, 0, 1, 1, 0, 0, 0, 1, 1]))
    Array([177, 128], dtype=uint8)
    """
    from numbax._src.numpy.shapes import moveaxis, ravel

    a = asarray(a)
    if kind_of(get_aval(a).dtype) not in "biu":
        raise NumbaxTypeError(f"numbax.numpy.packbits: a has dtype {get_aval(a).dtype}, "
                              "expected an integer or boolean dtype.")
    _check_bitorder("packbits", bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim, "packbits")
    bits = lax.convert_element_type(ufuncs.asbool(a), np.uint8)
    bits = moveaxis(bits, axis, -1)
    *lead, n = get_aval(bits).shape
    groups = -(-n // 8)
    pad = ((0, 0, 0),) * len(lead) + ((0, groups * 8 - n, 0),)
    bits = shape_ops.pad(bits, np.uint8(0), pad)
    bits = shape_ops.reshape(bits, (*lead, groups, 8))
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    weights = shape_ops.broadcast_in_dim(asarray((1 << shifts).astype(np.uint8)),
                                         get_aval(bits).shape, (len(lead) + 1,))
    packed = lax_reductions.reduce_sum(lax.mul(bits, weights), (len(lead) + 1,))
    return moveaxis(packed, -1, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    """numpy.unpackbits: each uint8 becomes 8 bits along `axis`; `count` keeps the first
    count bits (a negative count drops bits from the end; a larger one pads with zeros).

    >>> unpackbits(asarray([5], dtype=np.uint8), count=4, bitorder="little")
    Array([1, 0, 1, 0], dtype=uint8)
    """
    from numbax._src.numpy.shapes import _slice_axis, moveaxis, ravel

    a = asarray(a)
    if get_aval(a).dtype != np.uint8:
        raise NumbaxTypeError(f"numbax.numpy.unpackbits: a has dtype {get_aval(a).dtype}, "
                              "expected uint8. Convert it with .astype(numbax.numpy.uint8).")
    _check_bitorder("unpackbits", bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim, "unpackbits")
    a = moveaxis(a, axis, -1)
    *lead, n = get_aval(a).shape
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    wide = shape_ops.broadcast_in_dim(a, (*lead, n, 8), tuple(range(len(lead) + 1)))
    shift_arr = shape_ops.broadcast_in_dim(asarray(shifts.astype(np.uint8)), (*lead, n, 8),
                                           (len(lead) + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(wide, shift_arr), np.uint8(1))
    bits = shape_ops.reshape(bits, (*lead, n * 8))
    if count is not None:
        count = operator.index(count)
        keep = count if count >= 0 else max(n * 8 + count, 0)
        if keep <= n * 8:
            bits = _slice_axis(bits, len(lead), 0, keep)
        else:
            pad = ((0, 0, 0),) * len(lead) + ((0, keep - n * 8, 0),)
            bits = shape_ops.pad(bits, np.uint8(0), pad)
    return moveaxis(bits, -1, axis)

