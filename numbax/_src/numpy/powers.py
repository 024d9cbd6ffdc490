"""numpy's powers: power (x ** y), float_power and reciprocal, with JAX's dtypes and numpy's
refusal of integers to negative integer powers."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy.operands import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to_shape,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from numbax._src.numpy.weak import weak_out


def power(x1: Any, x2: Any, /) -> Any:
    """numpy.power: x1 ** x2 elementwise; integer powers by repeated multiplication when the
    exponent is a literal.

    Integers raised to negative integer powers raise ValueError (numpy's error) when the
    exponent is known: a Python int or a concrete array. A traced negative exponent cannot
    be checked; there the result is the integer part of x1 ** x2 (1 for x1 = 1, +-1 for
    x1 = -1, 0 otherwise, x1 = 0 included), where JAX leaves it undefined.
    """
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, bool):
        (x1,) = promote_dtypes_numeric("power", x1)
        if int(x2) < 0 and kind_of(get_aval(x1).dtype) in "iu":
            raise _negative_power_error()
        return lax.integer_pow(x1, int(x2))
    x1, x2 = promote_dtypes_numeric("power", x1, x2)
    dtype = get_aval(x1).dtype
    if kind_of(dtype) in "iu":
        if kind_of(dtype) == "i" and not _is_abstract(x2):
            value = np.asarray(x2.to_concrete_value() if isinstance(x2, core.Tracer) else x2)
            if (value < 0).any():
                raise _negative_power_error()
        return _integer_power(x1, x2)
    x1, x2 = broadcast_arrays("power", x1, x2)
    return lax.pow(x1, x2)


class NegativeIntegerPowerError(NumbaxTypeError, ValueError):
    """Integer ** negative integer: JAX raises TypeError there and numpy ValueError, so the
    error is both and either user's ``except`` catches it."""


def _negative_power_error() -> NegativeIntegerPowerError:
    return NegativeIntegerPowerError(
        "numbax.numpy.power: integers cannot be raised to negative powers (integers to "
        "negative integer powers are not allowed, as in numpy and JAX). Convert the base to a "
        "float first, e.g. x.astype(float) ** -1."
    )


def _is_abstract(x: Any) -> bool:
    return isinstance(x, core.Tracer) and x.to_concrete_value() is None


def _integer_power(x1: Any, x2: Any) -> Any:
    """Integer ** integer array: square-and-multiply over the bits of |exponent|; negative
    exponents give the integer part of the true power."""
    x1, x2 = broadcast_arrays("power", x1, x2)
    shape = broadcast_shapes("power", get_aval(x1).shape, get_aval(x2).shape)
    x1 = broadcast_to_shape(x1, shape) if get_aval(x1).shape != shape else x1
    dtype, edtype = get_aval(x1).dtype, get_aval(x2).dtype
    one = lax.convert_element_type(1, dtype)
    ezero, eone = lax.convert_element_type(0, edtype), lax.convert_element_type(1, edtype)
    negative = lax.lt(x2, ezero) if kind_of(edtype) == "i" else None
    exponent = lax.select(negative, lax.neg(x2), x2) if negative is not None else x2
    acc = shape_ops.full(shape, one)
    base = x1
    for _ in range(edtype.itemsize * 8):
        odd = lax.ne(lax.bitwise_and(exponent, eone), ezero)
        acc = lax.select(odd, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        exponent = lax.shift_right_logical(exponent, eone)
    if negative is None:
        return acc
    # 1 / x1**|n| truncated: only +-1 survive (acc is then +-1 already), the rest give 0.
    unit = lax.bitwise_or(lax.eq(x1, one), lax.eq(x1, lax.convert_element_type(-1, dtype)))
    zero = shape_ops.full(shape, 0, dtype)
    return lax.select(negative, lax.select(unit, acc, zero), acc)


@weak_out
def float_power(x1: Any, x2: Any, /) -> Any:
    """numpy.float_power with JAX's dtypes: the operands' promoted float (float32 for int32 or
    float32 operands, complex64 kept), where numpy always computes in float64/complex128."""
    x1, x2 = promote_dtypes_inexact("float_power", x1, x2)
    return lax.pow(*broadcast_arrays("float_power", x1, x2))


def reciprocal(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)  # as JAX: keeps a weak x weak


pow = power  # noqa: A001
