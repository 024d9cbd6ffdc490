"""numpy-style elementwise functions: dtype promotion and broadcasting in front of lax ops."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import eager_elementwise
from numbax._src.numpy.operands import (  # noqa: F401 - the functions' modules import them here
    _scalar_or_array,
    as_result,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to_shape,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
    refuse_complex,
)

__all__ = [
    "abs", "absolute", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "bitwise_and", "bitwise_invert", "bitwise_not", "bitwise_or", "bitwise_xor",
    "cbrt", "ceil", "conj", "conjugate", "copysign", "cos", "cosh", "deg2rad", "degrees",
    "divide", "divmod", "equal", "exp", "exp2", "expm1", "fix", "float_power", "floor",
    "floor_divide", "fmod", "greater", "greater_equal", "heaviside", "hypot", "imag", "invert",
    "isfinite", "isinf", "isnan", "left_shift", "less", "less_equal", "log", "log10", "log1p",
    "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor",
    "maximum", "minimum", "fmax", "fmin", "mod", "multiply", "negative", "nextafter", "not_equal",
    "positive", "power", "pow", "rad2deg", "radians", "real", "reciprocal", "remainder",
    "right_shift", "rint", "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract",
    "tan", "tanh", "true_divide", "trunc", "angle", "isreal", "iscomplex", "isposinf", "isneginf",
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "bitwise_left_shift",
    "bitwise_right_shift", "gcd", "lcm", "fabs", "modf",
]


def _one_to_one_unop(name: str, lax_fn: Callable, inexact: bool) -> Callable:
    primitive = getattr(lax_fn, "primitive", None)  # (eager calls: eager_elementwise)

    def fn(x: Any, /) -> Any:
        if primitive is not None:
            out = eager_elementwise.unary(primitive, x, "f" if inexact else "iuf")
            if out is not None:
                return out
        (x,) = (promote_dtypes_inexact if inexact else promote_dtypes)(name, x)
        return lax_fn(x)

    fn.__name__ = name
    fn.__doc__ = f"numpy.{name}, elementwise."
    return fn


def _rounding_unop(name: str, lax_fn: Callable) -> Callable:
    """floor, ceil: bools and integers come back unchanged, as in JAX (numpy gives floats)."""
    def fn(x: Any, /) -> Any:
        (x,) = promote_dtypes(name, x)
        if kind_of(get_aval(x).dtype) in "biu":
            return as_result(x)
        return lax_fn(x)

    fn.__name__ = name
    fn.__doc__ = f"numpy.{name}, elementwise."
    return fn


def _one_to_one_binop(name: str, lax_fn: Callable,
                      promote: Callable = promote_dtypes) -> Callable:
    # what lax_fn binds for integer and float operands promote_dtypes leaves of one dtype:
    # their eager calls on host arrays skip the layers (eager_elementwise)
    primitive = getattr(lax_fn, "primitive", None) if promote is promote_dtypes else None

    def fn(x1: Any, x2: Any, /) -> Any:
        if primitive is not None:
            out = eager_elementwise.binary(primitive, x1, x2)
            if out is not None:
                return out
        x1, x2 = promote(name, x1, x2)
        x1, x2 = broadcast_arrays(name, x1, x2)
        return lax_fn(x1, x2)

    fn.__name__ = name
    fn.__doc__ = f"numpy.{name}, elementwise with numpy broadcasting and promotion."
    return fn


def _bool_as(lax_fn: Callable, on_bools: Callable) -> Callable:
    """lax_fn, or on_bools where both operands are bool (lax's + and * take no bools; numpy's
    are or and and there, as in JAX)."""
    def fn(x1: Any, x2: Any) -> Any:
        both_bool = get_aval(x1).dtype == dtypes.bool_ and get_aval(x2).dtype == dtypes.bool_
        return (on_bools if both_bool else lax_fn)(x1, x2)

    fn.primitive = lax_fn.primitive  # (for integers and floats)
    return fn


def _comparison(name: str, lax_fn: Callable) -> Callable:
    return _one_to_one_binop(name, lax_fn)


def _ordering(name: str, lax_fn: Callable) -> Callable:
    """<, <=, >, >=: complex values compare by real part, then imaginary part (numpy's order,
    and jnp's); lax's comparisons take no complex values."""
    def lexicographic(x1: Any, x2: Any) -> Any:
        if kind_of(get_aval(x1).dtype) != "c":
            return lax_fn(x1, x2)
        re1, re2, im1, im2 = lax.real(x1), lax.real(x2), lax.imag(x1), lax.imag(x2)
        by_real = lax.lt(re1, re2) if lax_fn in (lax.lt, lax.le) else lax.gt(re1, re2)
        return lax.bitwise_or(by_real, lax.bitwise_and(lax.eq(re1, re2), lax_fn(im1, im2)))

    lexicographic.primitive = lax_fn.primitive  # (for real operands)
    return _one_to_one_binop(name, lexicographic)


def _logical(name: str, lax_fn: Callable) -> Callable:
    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = broadcast_arrays(name, *(asbool(x) for x in (x1, x2)))
        return lax_fn(x1, x2)

    fn.__name__ = name
    return fn


def asbool(x: Any) -> Any:
    x = _scalar_or_array(x, "logical")
    if get_aval(x).dtype == dtypes.bool_:
        return np.bool_(x) if isinstance(x, bool) else x  # Python bools are strong in JAX
    return lax.ne(x, lax.convert_element_type(0, get_aval(x).dtype))


negative = _one_to_one_unop("negative", lax.neg, False)
positive = _one_to_one_unop("positive", as_result, False)
sign = _one_to_one_unop("sign", lax.sign, False)
floor = _rounding_unop("floor", lax.floor)
ceil = _rounding_unop("ceil", lax.ceil)
exp = _one_to_one_unop("exp", lax.exp, True)
exp2 = _one_to_one_unop("exp2", lax.exp2, True)
log = _one_to_one_unop("log", lax.log, True)
log1p = _one_to_one_unop("log1p", lax.log1p, True)
expm1 = _one_to_one_unop("expm1", lax.expm1, True)
tanh = _one_to_one_unop("tanh", lax.tanh, True)
sin = _one_to_one_unop("sin", lax.sin, True)
cos = _one_to_one_unop("cos", lax.cos, True)
tan = _one_to_one_unop("tan", lax.tan, True)
arcsin = _one_to_one_unop("arcsin", lax.asin, True)
arccos = _one_to_one_unop("arccos", lax.acos, True)
arctan = _one_to_one_unop("arctan", lax.atan, True)
sinh = _one_to_one_unop("sinh", lax.sinh, True)
cosh = _one_to_one_unop("cosh", lax.cosh, True)
arcsinh = _one_to_one_unop("arcsinh", lax.asinh, True)
arccosh = _one_to_one_unop("arccosh", lax.acosh, True)
arctanh = _one_to_one_unop("arctanh", lax.atanh, True)
sqrt = _one_to_one_unop("sqrt", lax.sqrt, True)
cbrt = _one_to_one_unop("cbrt", lax.cbrt, True)


def conjugate(x: Any, /) -> Any:
    """numpy.conjugate: real (and bool) inputs come back unchanged, as in JAX."""
    (x,) = promote_dtypes("conjugate", x)
    return lax.conj(x) if kind_of(get_aval(x).dtype) == "c" else as_result(x)


conj = conjugate


def square(x: Any, /) -> Any:
    """numpy.square; a bool squares as an int32, as in JAX (lax.square takes no bools)."""
    (x,) = promote_dtypes_numeric("square", x)
    return lax.square(x)


add = _one_to_one_binop("add", _bool_as(lax.add, lax.bitwise_or))
subtract = _one_to_one_binop("subtract", lax.sub)
multiply = _one_to_one_binop("multiply", _bool_as(lax.mul, lax.bitwise_and))
maximum = _one_to_one_binop("maximum", lax.max)
minimum = _one_to_one_binop("minimum", lax.min)
arctan2 = _one_to_one_binop("arctan2", lax.atan2, promote_dtypes_inexact)
nextafter = _one_to_one_binop("nextafter", lax.nextafter, promote_dtypes_inexact)
bitwise_and = _one_to_one_binop("bitwise_and", lax.bitwise_and)
bitwise_or = _one_to_one_binop("bitwise_or", lax.bitwise_or)
bitwise_xor = _one_to_one_binop("bitwise_xor", lax.bitwise_xor)
left_shift = _one_to_one_binop("left_shift", lax.shift_left, promote_dtypes_numeric)


def _shift_right(x1: Any, x2: Any) -> Any:
    """numpy's >>: logical for unsigned integers (lax's arithmetic shift keeps their top bit)."""
    if kind_of(get_aval(x1).dtype) == "u":
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


right_shift = _one_to_one_binop("right_shift", _shift_right, promote_dtypes_numeric)
equal = key_array_op("x1", "x2", combine="all")(_comparison("equal", lax.eq))
not_equal = key_array_op("x1", "x2", combine="any")(_comparison("not_equal", lax.ne))
less = _ordering("less", lax.lt)
less_equal = _ordering("less_equal", lax.le)
greater = _ordering("greater", lax.gt)
greater_equal = _ordering("greater_equal", lax.ge)
logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x: Any, /) -> Any:
    return lax.bitwise_not(asbool(x))


def invert(x: Any, /) -> Any:
    (x,) = promote_dtypes("invert", x)
    return lax.bitwise_not(x)


bitwise_not = bitwise_invert = invert


def absolute(x: Any, /) -> Any:
    out = eager_elementwise.unary(lax.abs_p, x, "if")
    if out is not None:
        return out
    (x,) = promote_dtypes("absolute", x)
    dtype = get_aval(x).dtype
    if kind_of(dtype) in "ub":
        return as_result(x)
    return lax.abs(x)


abs = absolute  # noqa: A001


def logaddexp(x1: Any, x2: Any, /) -> Any:
    """log(exp(x1) + exp(x2)) without overflow."""
    x1, x2 = broadcast_arrays("logaddexp", *promote_dtypes_inexact("logaddexp", x1, x2))
    if kind_of(get_aval(x1).dtype) == "c":
        return _complex_logaddexp(x1, x2, lax.max(x1, x2))
    return _real_logaddexp(x1, x2)


@custom_jvp
def _real_logaddexp(x1: Any, x2: Any) -> Any:
    """The larger plus log1p(exp(-|x1 - x2|)); where that difference is NaN (a NaN operand,
    infinities of one sign) x1 + x2, as JAX."""
    delta = lax.sub(x1, x2)
    soft = lax.add(lax.max(x1, x2), lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), soft)


@_real_logaddexp.defjvp
def _real_logaddexp_jvp(primals: tuple, tangents: tuple) -> tuple:
    """JAX's rule: t1 exp(x1 - out) + t2 exp(x2 - out), +inf read as 0. Differentiating the
    formula instead saw max's and abs's kinks where x1 == x2, the common case of a
    softplus or log-sigmoid at 0, and lost the curvature there: grad(grad(softplus))(0.)
    gave 0, not 0.25, and a Newton step from zero weights diverged."""
    (x1, x2), (t1, t2) = primals, tangents
    out = _real_logaddexp(x1, x2)

    def finite(x: Any) -> Any:
        aval = get_aval(x)
        return lax.select(lax.eq(x, lax.convert_element_type(np.inf, aval.dtype)),
                          shape_ops.full(aval.shape, 0, aval.dtype), x)

    weight = lambda x: lax.exp(lax.sub(finite(x), finite(out)))  # noqa: E731
    return out, lax.add(lax.mul(t1, weight(x1)), lax.mul(t2, weight(x2)))


def _complex_logaddexp(x1: Any, x2: Any, amax: Any) -> Any:
    """log(exp(x1) + exp(x2)) of complex operands, as JAX: the larger (lax.max's order) plus
    log1p(exp(the smaller minus it)), the imaginary part wrapped into [-pi, pi]."""
    dtype = get_aval(x1).dtype
    smaller_minus_larger = lax.sub(lax.add(x1, x2), lax.mul(amax, lax.convert_element_type(
        2, dtype)))
    out = lax.add(amax, lax.log1p(lax.exp(smaller_minus_larger)))
    angle_, real_dtype = lax.imag(out), get_aval(lax.real(out)).dtype
    pi, two_pi, zero = (lax.convert_element_type(v, real_dtype) for v in (np.pi, 2 * np.pi, 0))
    turns = lax.rem(lax.add(angle_, pi), two_pi)
    turns = lax.select(lax.lt(turns, zero), lax.add(turns, two_pi), turns)
    return lax.complex_(lax.real(out), lax.sub(turns, pi))


@key_array_op("x", combine="all")
def isfinite(x: Any, /) -> Any:
    (x,) = promote_dtypes("isfinite", x)
    kind = kind_of(get_aval(x).dtype)
    if kind not in "fc":
        return shape_ops.full(get_aval(x).shape, True, dtypes.bool_)
    if kind == "c":  # lax.is_finite takes real values only
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


@key_array_op("x", combine="any")
def isnan(x: Any, /) -> Any:
    (x,) = promote_dtypes("isnan", x)
    if kind_of(get_aval(x).dtype) not in "fc":
        return shape_ops.full(get_aval(x).shape, False, dtypes.bool_)
    return lax.ne(x, x)


@key_array_op("x", combine="any")
def isinf(x: Any, /) -> Any:
    (x,) = promote_dtypes("isinf", x)
    if kind_of(get_aval(x).dtype) not in "fc":
        return shape_ops.full(get_aval(x).shape, False, dtypes.bool_)
    return lax.eq(lax.abs(x), lax.convert_element_type(np.inf, get_aval(lax.abs(x)).dtype))


def signbit(x: Any, /) -> Any:
    (x,) = promote_dtypes("signbit", x)
    refuse_complex("signbit", x)
    dtype = get_aval(x).dtype
    if kind_of(dtype) == "f":
        ints = _bitcast_to_int(x)
        return lax.lt(ints, lax.convert_element_type(0, get_aval(ints).dtype))
    return lax.lt(x, lax.convert_element_type(0, dtype))


def _bitcast_to_int(x: Any) -> Any:
    return lax.bitcast_convert_type(x, np.dtype(f"i{get_aval(x).dtype.itemsize}"))


def rint(x: Any, /) -> Any:
    """numpy.rint: integers and bools give the default float (float64 with x64 on), as JAX."""
    (x,) = promote_dtypes("rint", x)
    aval = get_aval(x)
    if kind_of(aval.dtype) in "biu":
        x = lax.convert_element_type(x, dtypes.default_float_dtype(), aval.weak_type)
    if kind_of(get_aval(x).dtype) == "c":  # each part to the nearest even integer, as JAX
        return lax.complex_(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, 1)


def trunc(x: Any, /) -> Any:
    (x,) = promote_dtypes("trunc", x)
    if kind_of(get_aval(x).dtype) in "biu":  # unchanged, as in JAX
        return as_result(x)
    zero = lax.convert_element_type(0, get_aval(x).dtype)
    return lax.select(lax.lt(x, zero), lax.ceil(x), lax.floor(x))


fix = trunc


def deg2rad(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact("deg2rad", x)
    return lax.mul(x, lax.convert_element_type(np.pi / 180, get_aval(x).dtype))


def rad2deg(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact("rad2deg", x)
    return lax.mul(x, lax.convert_element_type(180 / np.pi, get_aval(x).dtype))


radians, degrees = deg2rad, rad2deg


def hypot(x1: Any, x2: Any, /) -> Any:
    """sqrt(x1**2 + x2**2) as big * sqrt(1 + (small/big)**2), so it neither overflows nor
    underflows where the result is representable; an infinite operand gives inf, even with NaN."""
    x1, x2 = broadcast_arrays("hypot", *promote_dtypes_inexact("hypot", x1, x2))
    refuse_complex("hypot", x1)
    x1, x2 = lax.abs(x1), lax.abs(x2)
    aval = get_aval(x1)  # constants of x's weak type, as JAX's, so weak operands stay weak
    inf, zeros, one = (shape_ops.full(aval.shape, v, aval.dtype, aval.weak_type)
                       for v in (np.inf, 0, 1))
    is_inf = lax.bitwise_or(lax.eq(x1, inf), lax.eq(x2, inf))
    big, small = lax.max(x1, x2), lax.min(x1, x2)
    zero = lax.eq(big, zeros)
    ratio = lax.div(small, lax.select(zero, one, big))
    scaled = lax.mul(big, lax.sqrt(lax.add(one, lax.square(ratio))))
    return lax.select(is_inf, inf, lax.select(zero, big, scaled))


def _div_by_log(y: Any, base: float) -> Any:
    """y / log(base), dividing a complex y part by part: a complex divide by log(base) + 0j
    would turn log(inf + 0j) = inf + 0j into inf + nanj."""
    dtype = get_aval(y).dtype
    if kind_of(dtype) != "c":
        return lax.div(y, lax.convert_element_type(np.log(base), dtype))
    re, im = lax.real(y), lax.imag(y)
    c = lax.convert_element_type(np.log(base), get_aval(re).dtype)
    return lax.complex_(lax.div(re, c), lax.div(im, c))


def log2(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact("log2", x)
    return _div_by_log(lax.log(x), 2)


def log10(x: Any, /) -> Any:
    (x,) = promote_dtypes_inexact("log10", x)
    return _div_by_log(lax.log(x), 10)


def real(x: Any, /) -> Any:
    (x,) = promote_dtypes("real", x)
    return lax.real(x) if kind_of(get_aval(x).dtype) == "c" else as_result(x)


def imag(x: Any, /) -> Any:
    (x,) = promote_dtypes("imag", x)
    if kind_of(get_aval(x).dtype) == "c":
        return lax.imag(x)
    return shape_ops.full(get_aval(x).shape, 0, get_aval(x).dtype)


def heaviside(x1: Any, x2: Any, /) -> Any:
    x1, x2 = broadcast_arrays("heaviside", *promote_dtypes_inexact("heaviside", x1, x2))
    refuse_complex("heaviside", x1)
    dtype = get_aval(x1).dtype
    zero = lax.convert_element_type(0, dtype)
    one = lax.convert_element_type(1, dtype)
    pos = lax.select(lax.gt(x1, zero), shape_ops.full(get_aval(x1).shape, one), x2)
    neg = lax.select(lax.lt(x1, zero), shape_ops.full(get_aval(x1).shape, zero), pos)
    return lax.select(lax.ne(x1, x1), x1, neg)  # heaviside(nan, x2) is nan, as in numpy and JAX


def copysign(x1: Any, x2: Any, /) -> Any:
    x1, x2 = broadcast_arrays("copysign", *promote_dtypes_inexact("copysign", x1, x2))
    refuse_complex("copysign", x1)
    magnitude = lax.abs(x1)
    return lax.select(signbit(x2), lax.neg(magnitude), magnitude)


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """log2(2**x1 + 2**x2) without overflow."""
    x1, x2 = promote_dtypes_inexact("logaddexp2", x1, x2)
    ln2 = lax.convert_element_type(np.log(2), get_aval(x1).dtype)
    return lax.div(logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)


def fmax(x1: Any, x2: Any, /) -> Any:
    """numpy.fmax: the maximum, ignoring a NaN operand."""
    x1, x2 = broadcast_arrays("fmax", *promote_dtypes("fmax", x1, x2))
    kind = kind_of(get_aval(x1).dtype)
    if kind not in "fc":
        return lax.max(x1, x2)
    if kind == "f":  # JAX's mask: a tie (+0.0 against -0.0 too) gives x2
        return lax.select(lax.bitwise_or(lax.gt(x1, x2), lax.ne(x2, x2)), x1, x2)
    return lax.select(lax.ne(x2, x2), x1, lax.select(lax.ne(x1, x1), x2, lax.max(x1, x2)))


def fmin(x1: Any, x2: Any, /) -> Any:
    """numpy.fmin: the minimum, ignoring a NaN operand."""
    x1, x2 = broadcast_arrays("fmin", *promote_dtypes("fmin", x1, x2))
    kind = kind_of(get_aval(x1).dtype)
    if kind not in "fc":
        return lax.min(x1, x2)
    if kind == "f":  # JAX's mask: a tie (+0.0 against -0.0 too) gives x2
        return lax.select(lax.bitwise_or(lax.lt(x1, x2), lax.ne(x2, x2)), x1, x2)
    return lax.select(lax.ne(x2, x2), x1, lax.select(lax.ne(x1, x1), x2, lax.min(x1, x2)))


def angle(z: Any, deg: bool = False) -> Any:
    """numpy.angle with JAX's dtypes: an integer, bool or rank-0 real z gives the default float
    dtype (not weak); deg=True multiplies by a constant of the result's type, as JAX."""
    (z,) = promote_dtypes("angle", z)
    if kind_of(get_aval(z).dtype) == "c":
        out = lax.atan2(lax.imag(z), lax.real(z))
    else:
        if kind_of(get_aval(z).dtype) != "f" or get_aval(z).ndim == 0:
            z = lax.convert_element_type(z, dtypes.default_float_dtype())
        out = lax.atan2(lax.convert_element_type(0, get_aval(z).dtype), z)
        out = lax.select(lax.ne(z, z), z, out) if get_aval(z).shape == () else out
    o = get_aval(out)
    return lax.mul(out, lax.convert_element_type(180 / np.pi, o.dtype, o.weak_type)) if deg else out


def isreal(x: Any, /) -> Any:
    (x,) = promote_dtypes("isreal", x)
    if kind_of(get_aval(x).dtype) != "c":
        return shape_ops.full(get_aval(x).shape, True, dtypes.bool_)
    return lax.eq(lax.imag(x), lax.convert_element_type(0, get_aval(lax.imag(x)).dtype))


def iscomplex(x: Any, /) -> Any:
    return logical_not(isreal(x))


def isposinf(x: Any, /) -> Any:
    (x,) = promote_dtypes("isposinf", x)
    refuse_complex("isposinf", x)
    if kind_of(get_aval(x).dtype) != "f":
        return shape_ops.full(get_aval(x).shape, False, dtypes.bool_)
    return lax.eq(x, lax.convert_element_type(np.inf, get_aval(x).dtype))


def isneginf(x: Any, /) -> Any:
    (x,) = promote_dtypes("isneginf", x)
    refuse_complex("isneginf", x)
    if kind_of(get_aval(x).dtype) != "f":
        return shape_ops.full(get_aval(x).shape, False, dtypes.bool_)
    return lax.eq(x, lax.convert_element_type(-np.inf, get_aval(x).dtype))


acos, acosh, asin, asinh = arccos, arccosh, arcsin, arcsinh
atan, atanh, atan2 = arctan, arctanh, arctan2
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def true_divide(x1: Any, x2: Any, /) -> Any:
    """numpy.true_divide: integers and booleans divide in float32, 64-bit integers in float64
    (JAX's dtypes; numpy's float64 throughout)."""
    out = eager_elementwise.binary(lax.div_p, x1, x2, kinds="f")
    if out is not None:
        return out
    x1, x2 = promote_dtypes("divide", x1, x2)
    aval = get_aval(x1)
    if kind_of(aval.dtype) in "biu":
        dtype = dtypes.to_inexact(aval.dtype)
        x1 = lax.convert_element_type(x1, dtype, aval.weak_type)
        x2 = lax.convert_element_type(x2, dtype, aval.weak_type)
    return lax.div(*broadcast_arrays("divide", x1, x2))


divide = true_divide


def fabs(x: Any, /) -> Any:
    """numpy.fabs: |x| as a float (integers convert to the default float; complex refused)."""
    (x,) = promote_dtypes_inexact("fabs", x)
    if kind_of(get_aval(x).dtype) == "c":
        raise core.NumbaxTypeError(f"numbax.numpy.fabs: x has dtype {get_aval(x).dtype}, "
                                   "expected a real dtype. Use numbax.numpy.abs for complex.")
    return lax.abs(x)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """numpy.modf: (fractional part, integral part), both with the sign of x."""
    (x,) = promote_dtypes_inexact("modf", x)
    if kind_of(get_aval(x).dtype) == "c":
        raise core.NumbaxTypeError(f"numbax.numpy.modf: x has dtype {get_aval(x).dtype}, "
                                   "expected a real dtype.")
    whole = trunc(x)
    inf = lax.eq(lax.abs(x), lax.convert_element_type(np.inf, get_aval(x).dtype))
    zeros = shape_ops.full(get_aval(x).shape, 0, get_aval(x).dtype)
    finite = lax.select(inf, zeros, x)  # numpy: modf(+-inf) = (+-0, +-inf)
    flipped = lax.neg(finite)  # the fraction of -x, negated, keeps -0.0 for negative integers
    frac = lax.select(signbit(x), lax.neg(lax.sub(flipped, trunc(flipped))),
                      lax.sub(finite, trunc(finite)))
    return frac, whole


from numbax._src.numpy.division import divmod, floor_divide, fmod, gcd, lcm, mod, remainder  # noqa: E402
from numbax._src.numpy.powers import float_power, pow, power, reciprocal  # noqa: A004, E402
from numbax._src.numpy.weak import strong_out, weak_out  # noqa: E402

imag, heaviside, logaddexp, logaddexp2, modf, isnan, isreal = map(
    weak_out, (imag, heaviside, logaddexp, logaddexp2, modf, isnan, isreal))
logical_and, logical_or, logical_xor, logical_not, iscomplex = map(
    weak_out, (logical_and, logical_or, logical_xor, logical_not, iscomplex))
isinf, isposinf, isneginf = map(strong_out, (isinf, isposinf, isneginf))
