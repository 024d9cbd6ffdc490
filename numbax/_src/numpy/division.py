"""numpy's division family: floor_divide, remainder (mod), fmod, divmod, gcd and lcm.

Integers divide as C does and step the quotient down where numpy floors. Floats follow numpy's
npy_divmod (which JAX's _float_divmod follows too): fmod first, then the remainder moved to
the divisor's sign (a zero remainder takes the divisor's sign) and the quotient (a - mod) / b
snapped to an integer (a zero quotient takes the sign of a / b); floor(a / b) differs from it
(1.0 // 0.1 is 9.0, not 10.0). float16 runs the float32 algorithm, as numpy's half loops do."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.custom_derivatives import stop_gradient
from numbax._src.dtypes import kind_of
from numbax._src.errors import ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy.ufuncs import (
    absolute,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to_shape,
    multiply,
    promote_dtypes,
    promote_dtypes_numeric,
    signbit,
)
from numbax._src.numpy.weak import weak_out


def _const(value: float, dtype: np.dtype) -> Any:
    return lax.convert_element_type(value, dtype)


def _int_floor_divide(x1: Any, x2: Any, dtype: np.dtype) -> Any:
    quotient = lax.div(x1, x2)
    if kind_of(dtype) == "u":
        return quotient
    zero, one = _const(0, dtype), _const(1, dtype)
    # C division truncates; numpy floors: step down where signs differ and it is inexact.
    # JAX compares signs, so x // 0 (lax.div's -1) steps down to -2 for a nonzero x.
    fix = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), zero))
    return lax.select(fix, lax.sub(quotient, one), quotient)


def _nonzero_divisor(x2: Any, dtype: np.dtype) -> Any:
    """x2 with its zeros replaced by ones: JAX's integer x % 0 and fmod(x, 0) are 0."""
    return lax.select(lax.eq(x2, _const(0, dtype)), _const(1, dtype), x2)


def _int_remainder(x1: Any, x2: Any, dtype: np.dtype) -> Any:
    x2 = _nonzero_divisor(x2, dtype)
    r = lax.rem(x1, x2)
    if kind_of(dtype) == "u":
        return r
    zero = _const(0, dtype)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(x2, zero)))
    return lax.select(fix, lax.add(r, x2), r)


def _zero_signed_as(x: Any, zero: Any) -> Any:
    """copysign(0, x)."""
    return lax.select(signbit(x), lax.neg(zero), zero)


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    """(floor_divide, remainder) of floats, step for step numpy's npy_divmod."""
    dtype = get_aval(x1).dtype
    if dtype == np.float16:
        wide = [lax.convert_element_type(x, np.float32) for x in (x1, x2)]
        return tuple(lax.convert_element_type(r, dtype) for r in _float_divmod(*wide))
    zero, one, half = _const(0, dtype), _const(1, dtype), _const(0.5, dtype)
    mod = lax.rem(x1, x2)
    div = lax.div(lax.sub(x1, mod), x2)
    nonzero = lax.ne(mod, zero)
    adjust = lax.bitwise_and(nonzero, lax.ne(lax.lt(x2, zero), lax.lt(mod, zero)))
    # A zero remainder takes the divisor's sign; subtracting the +0 of (mod - mod) keeps that
    # sign while the derivative still flows through mod (d/dx1 is 1 on both sides of a jump).
    carry = lax.sub(stop_gradient(mod), mod)
    mod = lax.select(adjust, lax.add(mod, x2),
                     lax.select(nonzero, mod, lax.sub(_zero_signed_as(x2, zero), carry)))
    div = lax.select(adjust, lax.sub(div, one), div)
    floor = lax.floor(div)
    floor = lax.select(lax.gt(lax.sub(div, floor), half), lax.add(floor, one), floor)
    quotient = lax.div(x1, x2)
    floor = lax.select(lax.ne(div, zero), floor, _zero_signed_as(quotient, zero))
    return lax.select(lax.eq(x2, zero), quotient, floor), mod


def floor_divide(x1: Any, x2: Any, /) -> Any:
    x1, x2 = broadcast_arrays("floor_divide", *promote_dtypes_numeric("floor_divide", x1, x2))
    dtype = get_aval(x1).dtype
    if kind_of(dtype) in "iu":
        return _int_floor_divide(x1, x2, dtype)
    if kind_of(dtype) == "f":
        return _float_divmod(x1, x2)[0]
    return lax.floor(lax.div(x1, x2))


def remainder(x1: Any, x2: Any, /) -> Any:
    """numpy.remainder: the result has the sign of the divisor."""
    x1, x2 = broadcast_arrays("remainder", *promote_dtypes_numeric("remainder", x1, x2))
    dtype = get_aval(x1).dtype
    if kind_of(dtype) == "f":
        return _float_divmod(x1, x2)[1]
    return _int_remainder(x1, x2, dtype)


mod = remainder


def fmod(x1: Any, x2: Any, /) -> Any:
    x1, x2 = broadcast_arrays("fmod", *promote_dtypes_numeric("fmod", x1, x2))
    dtype = get_aval(x1).dtype
    if kind_of(dtype) in "iu":
        x2 = _nonzero_divisor(x2, dtype)
    return lax.rem(x1, x2)


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:  # noqa: A001
    x1, x2 = broadcast_arrays("divmod", *promote_dtypes_numeric("divmod", x1, x2))
    dtype = get_aval(x1).dtype
    if kind_of(dtype) == "f":
        return _float_divmod(x1, x2)
    return floor_divide(x1, x2), remainder(x1, x2)


def _integers(fun_name: str, x: Any) -> np.dtype:
    """x's dtype, which must be an integer one (ShapeDtypeError: JAX raises ValueError here,
    numpy TypeError)."""
    dtype = get_aval(x).dtype
    if kind_of(dtype) not in "iu":
        raise ShapeDtypeError(f"numbax.numpy.{fun_name}: arguments have dtype {dtype}; they "
                              "must be integers.")
    return dtype


def gcd(x1: Any, x2: Any, /) -> Any:
    """numpy.gcd for integers: Euclid's algorithm, unrolled to the dtype's bit width."""
    x1, x2 = broadcast_arrays("gcd", *promote_dtypes("gcd", x1, x2))
    dtype = _integers("gcd", x1)
    shape = broadcast_shapes("gcd", get_aval(x1).shape, get_aval(x2).shape)
    a = broadcast_to_shape(absolute(x1), shape)
    b = broadcast_to_shape(absolute(x2), shape)
    zero = lax.convert_element_type(0, dtype)
    one = lax.convert_element_type(1, dtype)
    for _ in range(int(dtype.itemsize * 8 * 1.5) + 2):  # Euclid needs < 1.5 * bits steps
        nonzero = lax.ne(b, zero)
        safe_b = lax.select(nonzero, b, shape_ops.full(shape, one))
        a, b = lax.select(nonzero, b, a), lax.select(nonzero, lax.rem(a, safe_b), b)
    return a


def lcm(x1: Any, x2: Any, /) -> Any:
    x1, x2 = broadcast_arrays("lcm", *promote_dtypes("lcm", x1, x2))
    _integers("lcm", x1)
    g = gcd(x1, x2)
    dtype = get_aval(g).dtype
    zero = lax.convert_element_type(0, dtype)
    safe_g = lax.select(lax.eq(g, zero), shape_ops.full(get_aval(g).shape, 1, dtype), g)
    return absolute(multiply(floor_divide(x1, safe_g), x2))


floor_divide, remainder, divmod, gcd, lcm = map(  # noqa: A001
    weak_out, (floor_divide, remainder, divmod, gcd, lcm))
mod = remainder
