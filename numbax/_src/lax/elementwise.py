"""Elementwise primitives: unary and binary math, comparisons, bitwise ops, select, convert."""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters.ad import Zero, is_undefined_primal, unbroadcast
from numbax._src.lax import extrema, int_arith, params
from numbax._src.lax.convert import (  # noqa: F401 - re-exported: lax's dtype casts live there
    _weak_scalar,
    bitcast_convert_type,
    bitcast_convert_type_p,
    convert_element_type,
    convert_element_type_p,
)
from numbax._src.lax.erf_inv_xla import erf_inv_impl
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.lax.select import (  # noqa: F401 - re-exported: lax.select and clamp live there
    clamp,
    clamp_p,
    select,
    select_n,
    select_n_p,
)
from numbax._src.lazy_module import lazy

sp = lazy("scipy.special")

# Dtype kinds each family accepts.
_FLOAT = "fc"
_REAL_FLOAT = "f"
_NUMERIC = "iufc"
_INT = "iu"
_INT_OR_BOOL = "biu"
_ANY = "biufc"
_ORDERED = "biuf"  # lt/le/gt/ge: complex values have no order in lax
_SIGNED = "ifc"

# ----------------------------------------------------------------------------- helpers


def _const(x: Any, value: Any) -> Any:
    """A rank-0 constant of x's dtype (a literal in jaxprs); a Python scalar for a weak scalar
    x of its Python type's dtype, as JAX's lax._const, so rules keep x's weak type."""
    aval = get_aval(x)
    if aval.weak_type and aval.ndim == 0:
        py = dtypes.scalar_type_of(x)(value)
        if dtypes.python_scalar_dtype(py) == aval.dtype:
            return py
    return np.array(value, dtype=aval.dtype)


def _check_kind(name: str, aval: ShapedArray, kinds: str, position: int = 0) -> None:
    if kind_of(aval.dtype) not in kinds:
        accepted = {"f": "floating", "c": "complex", "i": "signed integer",
                    "u": "unsigned integer", "b": "boolean"}
        what = " or ".join(sorted({accepted[k] for k in kinds}))
        raise NumbaxTypeError(
            f"lax.{name}: argument {position} has dtype {aval.dtype}, expected a {what} dtype. "
            "Convert it first, e.g. with x.astype(numbax.numpy.float32)."
        )


def _to_operand(x: Any, like: Any) -> Any:
    """Python scalars become weakly typed values of the other operand's dtype (as lax does);
    Python bools stay strong, as in JAX."""
    if isinstance(x, bool) and get_aval(like).dtype == np.bool_:
        return np.bool_(x)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(like, (bool, int, float,
                                                                             complex)):
        dtype = get_aval(like).dtype
        if isinstance(x, float) and kind_of(dtype) in "biu":
            return x  # numpy-style promotion will reject this in the shape/dtype rule
        return _weak_scalar(x, dtype)
    return x


def _broadcast_shapes(name: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """Elementwise operands share one shape, except rank-0 operands which broadcast."""
    full = [s for s in shapes if s != ()]
    if not full:
        return ()
    if any(s != full[0] for s in full):
        listed = ", ".join(str(s) for s in shapes)
        raise ShapeDtypeError(
            f"lax.{name}: operands have incompatible shapes {listed}; lax ops need equal "
            "shapes (or rank-0 operands). Use numbax.numpy functions for numpy broadcasting, "
            "or broadcast explicitly with lax.broadcast_in_dim."
        )
    return full[0]


def _weak(*avals: ShapedArray) -> bool:
    return all(a.weak_type for a in avals)


# ----------------------------------------------------------------------------- unary ops


def _unary_abstract_eval(name: str, kinds: str, out_dtype: Callable | None):
    def rule(x: ShapedArray, **params) -> list[ShapedArray]:
        _check_kind(name, x, kinds)
        dtype = x.dtype if out_dtype is None else out_dtype(x.dtype)
        return [ShapedArray(x.shape, dtype, x.weak_type)]  # JAX: weak in, weak out

    return rule


def unop(name: str, impl: Callable, kinds: str = _FLOAT,
         out_dtype: Callable | None = None) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = _unary_abstract_eval(name, kinds, out_dtype)
    core.avals_only.add(prim)
    core.impl_rules[prim] = lambda x, **params: [_quiet(impl, x, **params)]
    LOUD_IMPLS[prim] = lambda x, **params: [impl(x, **params)]
    batching.defvectorized(prim)
    return prim


# The impls without their error-state context, for callers that hold one around many calls
# (host_eval's eager loop steps: the context cost ~1.5 us of an equation's ~4).
LOUD_IMPLS: dict[Primitive, Callable] = {}


def _quiet(impl: Callable, *args: Any, **params: Any) -> Any:
    """impl without numpy's floating-point warnings (JAX gives inf/nan silently)."""
    with np.errstate(all="ignore"):
        return impl(*args, **params)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.empty((), dtype).real.dtype


def _bool_dtype(_: np.dtype) -> np.dtype:
    return dtypes.bool_


neg_p = unop("neg", np.negative, _NUMERIC)
sign_p = unop("sign", lambda x: _sign(x), _NUMERIC)
floor_p = unop("floor", np.floor, _REAL_FLOAT)
ceil_p = unop("ceil", np.ceil, _REAL_FLOAT)
is_finite_p = unop("is_finite", np.isfinite, _REAL_FLOAT, _bool_dtype)
exp_p = unop("exp", np.exp)
exp2_p = unop("exp2", np.exp2)
log_p = unop("log", np.log)
log1p_p = unop("log1p", np.log1p)
expm1_p = unop("expm1", np.expm1)
tanh_p = unop("tanh", np.tanh)
logistic_p = unop("logistic", lambda x: (  # (scipy's expit has no complex loop)
    sp.expit(x) if x.dtype.kind != "c" else 1 / (1 + np.exp(-x))).astype(x.dtype))
sin_p = unop("sin", np.sin)
cos_p = unop("cos", np.cos)
tan_p = unop("tan", np.tan)
asin_p = unop("asin", np.arcsin)
acos_p = unop("acos", np.arccos)
atan_p = unop("atan", np.arctan)
sinh_p = unop("sinh", np.sinh)
cosh_p = unop("cosh", np.cosh)
asinh_p = unop("asinh", np.arcsinh)
acosh_p = unop("acosh", np.arccosh)
atanh_p = unop("atanh", np.arctanh)
sqrt_p = unop("sqrt", np.sqrt)
rsqrt_p = unop("rsqrt", lambda x: (1 / np.sqrt(x)).astype(x.dtype))
cbrt_p = unop("cbrt", np.cbrt, _REAL_FLOAT)
abs_p = unop("abs", np.abs, _SIGNED, _real_dtype)  # JAX: no unsigned
erf_p = unop("erf", lambda x: sp.erf(x).astype(x.dtype), _REAL_FLOAT)
erfc_p = unop("erfc", lambda x: sp.erfc(x).astype(x.dtype), _REAL_FLOAT)
erf_inv_p = unop("erf_inv", erf_inv_impl, _REAL_FLOAT)  # XLA:CPU float32 algorithm
lgamma_p = unop("lgamma", lambda x: sp.gammaln(x).astype(x.dtype), _REAL_FLOAT)
digamma_p = unop("digamma", lambda x: np.where(  # its poles (0 too) are nan, as JAX's
    (x <= 0) & (x == np.floor(x)), np.nan, sp.digamma(x)).astype(x.dtype), _REAL_FLOAT)
real_p = unop("real", np.real, "c", _real_dtype)
imag_p = unop("imag", np.imag, "c", _real_dtype)
conj_p = unop("conj", np.conj, "c")  # real inputs: `conj`
not_p = unop("not", np.invert, _INT_OR_BOOL)


def _population_count_impl(x: np.ndarray) -> np.ndarray:
    """Set bits of the two's-complement pattern (np.bitwise_count counts those of |x|)."""
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return np.bitwise_count(x.view(unsigned)).astype(x.dtype)


def _round_impl(x: np.ndarray, rounding_method: int = 0) -> np.ndarray:
    """Halves to even (1) or away from zero (0). The latter from trunc, not floor(x + 0.5):
    x + 0.5 rounds up for 0.49999999999999994 and for odd integers above 2**52."""
    if rounding_method == 1:
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


population_count_p = unop("population_count", _population_count_impl, _INT)
square_p = unop("square", np.square, _NUMERIC)
round_p = unop("round", _round_impl, _REAL_FLOAT)


def _integer_pow_impl(x: np.ndarray, *, y: int) -> np.ndarray:
    if y == 0:
        return np.ones_like(x)
    if y < 0:
        return (1 / np.power(x, -y)).astype(x.dtype)
    if kind_of(x.dtype) in "iu" and y > np.iinfo(x.dtype).max:
        # numpy refuses an exponent past x's dtype (uint8 ** 300); the power wraps the same
        # computed 64 bits wide and truncated
        wide = np.dtype(np.uint64 if kind_of(x.dtype) == "u" else np.int64)
        return np.power(x.astype(wide), wide.type(y)).astype(x.dtype)
    return np.power(x, y)


integer_pow_p = unop("integer_pow", _integer_pow_impl, _NUMERIC)


def _integer_pow_abstract_eval(x: ShapedArray, *, y: int) -> list[ShapedArray]:
    if y < 0 and kind_of(x.dtype) in "iub":
        raise NumbaxTypeError(
            f"Integers cannot be raised to negative powers, got integer_pow({x.str_short()}, "
            f"{y}). Convert the base to a float dtype first.")
    return _unary_abstract_eval("integer_pow", _NUMERIC, None)(x, y=y)


core.abstract_eval_rules[integer_pow_p] = _integer_pow_abstract_eval

# ----------------------------------------------------------------------------- binary ops


def _binary_abstract_eval(name: str, kinds: str, out_dtype: Callable | None):
    def rule(*avals: ShapedArray, **params) -> list[ShapedArray]:
        for i, a in enumerate(avals):
            _check_kind(name, a, kinds, i)
        dts = {a.dtype for a in avals}
        if len(dts) > 1:
            listed = ", ".join(str(a.dtype) for a in avals)
            raise ShapeDtypeError(
                f"lax.{name}: operands have different dtypes {listed}; lax ops need equal "
                "dtypes. Use numbax.numpy functions for numpy promotion, or convert with "
                "lax.convert_element_type."
            )
        shape = _broadcast_shapes(name, [a.shape for a in avals])
        dtype = avals[0].dtype if out_dtype is None else out_dtype(avals[0].dtype)
        return [ShapedArray(shape, dtype, _weak(*avals))]

    return rule


def binop(name: str, impl: Callable, kinds: str = _NUMERIC,
          out_dtype: Callable | None = None) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = _binary_abstract_eval(name, kinds, out_dtype)
    core.avals_only.add(prim)
    core.impl_rules[prim] = lambda x, y, **params: [_quiet(impl, x, y, **params)]
    LOUD_IMPLS[prim] = lambda x, y, **params: [impl(x, y, **params)]
    batching.defbroadcasting(prim)
    return prim


add_p = binop("add", np.add)
sub_p = binop("sub", np.subtract)
mul_p = binop("mul", np.multiply)
div_p = binop("div", int_arith.div)
rem_p = binop("rem", int_arith.rem, "iuf")
pow_p = binop("pow", np.power, _FLOAT)
max_p = binop("max", extrema.maximum, _ANY)
min_p = binop("min", extrema.minimum, _ANY)
atan2_p = binop("atan2", np.arctan2, _REAL_FLOAT)
nextafter_p = binop("nextafter", np.nextafter, _REAL_FLOAT)


def _polygamma_impl(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """scipy's polygamma, with JAX's values at the poles (x = 0, -1, ...): inf for odd m, where
    both sides tend to +inf, and nan for even m, where they tend to opposite infinities."""
    poles = (x <= 0) & (x == np.floor(x))
    pole_value = np.where(np.mod(m, 2) == 1, np.inf, np.nan)
    return np.where(poles, pole_value, sp.polygamma(m, x)).astype(x.dtype)


polygamma_p = binop("polygamma", _polygamma_impl, _REAL_FLOAT)


def _complex_of(dtype: np.dtype) -> np.dtype:
    if dtype not in (np.float32, np.float64):  # JAX's lax.complex: no complex of 16-bit floats
        raise NumbaxTypeError(f"lax.complex: operands have dtype {dtype}, expected float32 or "
                              "float64. Convert them first, e.g. with x.astype(float32).")
    return np.result_type(dtype, np.complex64)


complex_p = binop("complex", lambda x, y: x + 1j * y, _REAL_FLOAT, _complex_of)
and_p = binop("and", np.bitwise_and, _INT_OR_BOOL)
or_p = binop("or", np.bitwise_or, _INT_OR_BOOL)
xor_p = binop("xor", np.bitwise_xor, _INT_OR_BOOL)
shift_left_p = binop("shift_left", np.left_shift, _INT)
shift_right_arithmetic_p = binop("shift_right_arithmetic", int_arith.shift_right_arithmetic,
                                  _INT)
shift_right_logical_p = binop(
    "shift_right_logical",
    lambda x, y: (x.view(f"u{x.dtype.itemsize}") >> y.astype(f"u{x.dtype.itemsize}")).view(
        x.dtype),
    _INT,
)
eq_p = binop("eq", np.equal, _ANY, _bool_dtype)
ne_p = binop("ne", np.not_equal, _ANY, _bool_dtype)
lt_p = binop("lt", np.less, _ORDERED, _bool_dtype)
le_p = binop("le", np.less_equal, _ORDERED, _bool_dtype)
gt_p = binop("gt", np.greater, _ORDERED, _bool_dtype)
ge_p = binop("ge", np.greater_equal, _ORDERED, _bool_dtype)


def _sign(x: np.ndarray) -> np.ndarray:
    """lax.sign: a complex z gives z / |z| part by part, as XLA computes it (inf + 1j gives
    nan + 0j, where numpy's sign gives 1), and 0 for 0."""
    if kind_of(x.dtype) != "c":
        return np.sign(x)
    r = np.abs(x)
    safe = np.where(r == 0, np.ones((), r.dtype), r)
    out = np.empty_like(x)
    out.real = np.where(r == 0, 0, x.real / safe)
    out.imag = np.where(r == 0, 0, x.imag / safe)
    return out


for _p in (nextafter_p, and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p,
           shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    ad.non_differentiable.add(_p)


def _add_transpose(cts, x, y):
    (ct,) = cts
    return [unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
            unbroadcast(ct, y.aval) if is_undefined_primal(y) else None]


def _sub_transpose(cts, x, y):
    (ct,) = cts
    return [unbroadcast(ct, x.aval) if is_undefined_primal(x) else None,
            unbroadcast(neg(ct), y.aval) if is_undefined_primal(y) else None]


def _linear_jvp(prim, signs):
    def rule(primals, tangents):
        ans = prim.bind(*primals)
        out: Any = Zero(ad.tangent_aval(get_aval(ans)))
        for t, sign in zip(tangents, signs, strict=True):
            if type(t) is not Zero:
                t = _broadcast_tangent(t, get_aval(ans))
                out = ad.add_tangents(out, t if sign > 0 else neg(t))
        return [ans], [out]

    return rule


def _broadcast_tangent(t, aval):
    from numbax._src.lax import shape_ops

    if get_aval(t).shape != aval.shape:
        return shape_ops.broadcast_in_dim(t, aval.shape, ())
    return t


ad.jvp_rules[add_p] = _linear_jvp(add_p, (1, 1))
ad.jvp_rules[sub_p] = _linear_jvp(sub_p, (1, -1))
ad.transpose_rules[add_p] = _add_transpose
ad.transpose_rules[sub_p] = _sub_transpose
ad.defbilinear(
    mul_p,
    lambda ct, x, y: unbroadcast(mul(ct, y), x.aval),
    lambda ct, x, y: unbroadcast(mul(x, ct), y.aval),
)


def _div_transpose(cts, x, y):
    (ct,) = cts
    assert is_undefined_primal(x) and not is_undefined_primal(y)
    return [unbroadcast(div(ct, y), x.aval), None]


def _div_jvp_divisor(t, ans, x, y):
    """JAX's -t * x * y**-2 (rounding as JAX's: d/dx sum(x / sum(x)) is exactly 0), or where
    y**-2 under/overflows (JAX's 0 or inf) the equal -t * (x / y) / y. Each side's factor is
    finite where the other is taken, so no NaN leaks into reverse mode."""
    out = get_aval(ans)
    inv2 = integer_pow(y, -2)
    if kind_of(get_aval(y).dtype) != "f":
        return _broadcast_tangent(mul(mul(neg(t), x), inv2), out)
    ok = bitwise_and(is_finite(inv2), ne(inv2, _const(inv2, 0)))
    safe_inv2 = select_n(ok, _zeros_like(inv2), inv2)
    jax_form = _broadcast_tangent(mul(mul(neg(t), x), safe_inv2), out)
    factor = select_n(ok, neg(div(ans, y)), _ones_like(ans))
    return select_n(ok, _broadcast_tangent(mul(t, factor), out), jax_form)


ad.defjvp(
    div_p,
    lambda t, ans, x, y: _broadcast_tangent(div(t, y), get_aval(ans)),
    _div_jvp_divisor,
)
ad.transpose_rules[div_p] = _div_transpose
ad.defjvp(
    rem_p,
    lambda t, ans, x, y: _broadcast_tangent(t, get_aval(ans)),
    lambda t, ans, x, y: _broadcast_tangent(
        mul(neg(t), mul(sign(div(x, y)), floor(abs(div(x, y))))), get_aval(ans)),
)


def _pow_jvp_base(t, ans, x, y):
    # y * x**(y-1) of strong x and y, as JAX (a weak x gives a strong tangent; 0**0. is nan).
    x, y = (convert_element_type(v, get_aval(v).dtype, False) for v in (x, y))
    return mul(_broadcast_tangent(t, get_aval(ans)), mul(y, pow(x, sub(y, _const(y, 1)))))


def _pow_jvp_exponent(t, ans, x, y):
    # log(x) * x**y, with log(0) replaced by 0 so that 0**y has derivative 0 in y.
    zero = _const(x, 0)
    safe_x = select_n(eq(x, zero), x, _ones_like(x))
    return mul(_broadcast_tangent(t, get_aval(ans)), mul(log(safe_x), ans))


ad.defjvp(pow_p, _pow_jvp_base, _pow_jvp_exponent)


def _balanced_eq(x, z, y):
    """1 where x alone attains the extremum z, 0.5 where x and y tie, 0 elsewhere (JAX)."""
    one, half, zero = _const(z, 1), _const(z, 0.5), _const(z, 0)
    x_hit = select_n(eq(x, z), _full_like(z, zero), _full_like(z, one))
    both = select_n(eq(y, z), _full_like(z, one), _full_like(z, half))
    return mul(x_hit, both)


ad.defjvp(max_p,
          lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)), _balanced_eq(x, ans, y)),
          lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)), _balanced_eq(y, ans, x)))
ad.defjvp(min_p,
          lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)), _balanced_eq(x, ans, y)),
          lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)), _balanced_eq(y, ans, x)))
ad.defjvp(
    atan2_p,
    lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)),
                             div(y, add(square(x), square(y)))),
    lambda t, ans, x, y: mul(_broadcast_tangent(t, get_aval(ans)),
                             div(neg(x), add(square(x), square(y)))),
)
ad.transpose_rules[complex_p] = lambda cts, x, y: [
    unbroadcast(real(cts[0]), x.aval) if is_undefined_primal(x) else None,
    unbroadcast(imag(neg(cts[0])), y.aval) if is_undefined_primal(y) else None,
]
ad.defjvp(polygamma_p, None,  # the order m is an integer-valued float: no derivative
          lambda t, ans, m, x: mul(_broadcast_tangent(t, get_aval(ans)),
                                   polygamma(add(m, _const(m, 1)), x)))
ad.defjvp(
    complex_p,
    lambda t, ans, x, y: complex_(_broadcast_tangent(t, get_aval(x)), _zeros_like(x)),
    lambda t, ans, x, y: complex_(_zeros_like(y), _broadcast_tangent(t, get_aval(y))),
)


def _add_any_batch(axis_size, vals, dims):
    """add_any's operands share one aval (its abstract eval is the first's), so an unbatched
    operand is broadcast to the batched shape, never left to numpy's rank-0 broadcasting."""
    x, y = [batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims, strict=True)]
    return [ad.add_any_p.bind(x, y)], [0]


batching.batch_rules[ad.add_any_p] = _add_any_batch

# ----------------------------------------------------------------------------- wrappers


# JAX's functions that take an `accuracy=` request (lax.Tolerance or lax.AccuracyMode).
_WITH_ACCURACY = frozenset({"exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin",
                            "cos", "tan", "sqrt", "rsqrt", "cbrt"})


def _unary(prim: Primitive) -> Callable:
    if prim.name in _WITH_ACCURACY:
        def fn(x: Any, *, accuracy: Any = None) -> Any:
            params.check_accuracy(accuracy)  # one implementation per function on CPU
            return prim.bind(x)

        doc = (f"Elementwise {prim.name} (lax.{prim.name}_p). `accuracy` (a lax.Tolerance or "
               "lax.AccuracyMode) is accepted; numbax has one implementation, as JAX on CPU.")
    else:
        def fn(x: Any) -> Any:
            return prim.bind(x)

        doc = f"Elementwise {prim.name} (lax.{prim.name}_p)."
    fn.__name__ = prim.name
    fn.__doc__ = doc
    fn.primitive = prim
    return fn


def _binary(prim: Primitive) -> Callable:
    def fn(x: Any, y: Any) -> Any:
        return prim.bind(_to_operand(x, y), _to_operand(y, x))

    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise {prim.name} (lax.{prim.name}_p); operands share dtype and shape."
    fn.primitive = prim
    return fn


neg, sign, floor, ceil, is_finite = map(_unary, (neg_p, sign_p, floor_p, ceil_p, is_finite_p))
exp, exp2, log, log1p, expm1 = map(_unary, (exp_p, exp2_p, log_p, log1p_p, expm1_p))
tanh, logistic, sin, cos, tan = map(_unary, (tanh_p, logistic_p, sin_p, cos_p, tan_p))
asin, acos, atan, sinh, cosh = map(_unary, (asin_p, acos_p, atan_p, sinh_p, cosh_p))
asinh, acosh, atanh, sqrt, rsqrt = map(_unary, (asinh_p, acosh_p, atanh_p, sqrt_p, rsqrt_p))
cbrt, abs, erf, erfc, erf_inv = map(_unary, (cbrt_p, abs_p, erf_p, erfc_p, erf_inv_p))  # noqa: A001
lgamma, digamma, real, imag = map(_unary, (lgamma_p, digamma_p, real_p, imag_p))
bitwise_not, population_count, square = map(_unary, (not_p, population_count_p, square_p))
add, sub, mul, div, rem, pow = map(_binary, (add_p, sub_p, mul_p, div_p, rem_p, pow_p))  # noqa: A001
max, min, atan2, nextafter = map(_binary, (max_p, min_p, atan2_p, nextafter_p))  # noqa: A001
polygamma, complex_ = _binary(polygamma_p), _binary(complex_p)
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (and_p, or_p, xor_p))
shift_left, shift_right_arithmetic, shift_right_logical = map(
    _binary, (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p))
eq, ne, lt, le, gt, ge = map(_binary, (eq_p, ne_p, lt_p, le_p, gt_p, ge_p))
eq = key_array_op("x", "y", combine="all")(eq)  # keys compare word by word, as in JAX
ne = key_array_op("x", "y", combine="any")(ne)
and_ = bitwise_and


def conj(x: Any) -> Any:
    """lax.conj: a float32 or float64 x gives its complex dtype (imaginary parts +0), as JAX's."""
    dtype = get_aval(x).dtype
    if dtype in (np.float32, np.float64):
        return complex_(x, _zeros_like(x))
    if kind_of(dtype) != "c":
        raise NumbaxTypeError(f"lax.conj: x has dtype {dtype}, expected float32, float64 or a "
                              "complex dtype. Convert it first, e.g. with x.astype(float32).")
    return conj_p.bind(x)


def round(x: Any,  # noqa: A001
          rounding_method: params.RoundingMethod = params.RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """lax.round: RoundingMethod.AWAY_FROM_ZERO (0, JAX's default) rounds halves away from
    zero, TO_NEAREST_EVEN (1) to the even neighbour.

    >>> round(np.array([0.5, 1.5, -2.5]), 1)
    Array([ 0.,  2., -2.], dtype=float64)
    """
    try:
        method = params.RoundingMethod(int(rounding_method))
    except (TypeError, ValueError) as err:
        raise NumbaxValueError(
            f"lax.round: rounding_method has {rounding_method!r}, expected "
            "lax.RoundingMethod.AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1).") from err
    return round_p.bind(x, rounding_method=int(method))


def integer_pow(x: Any, y: int) -> Any:
    """x ** y for a static integer y (negative y: integer x is refused, as in JAX).

    >>> integer_pow(np.array([2.0, 3.0]), -1)
    Array([0.5       , 0.33333333], dtype=float64)
    """
    return integer_pow_p.bind(x, y=operator.index(y))


def _zeros_like(x: Any) -> Any:
    from numbax._src.lax import shape_ops

    aval = get_aval(x)  # keeps x's weak type, as JAX's full_like
    return shape_ops.full(aval.shape, 0, aval.dtype, weak_type=aval.weak_type)


def _ones_like(x: Any) -> Any:
    from numbax._src.lax import shape_ops

    aval = get_aval(x)  # keeps x's weak type, as JAX's full_like
    return shape_ops.full(aval.shape, 1, aval.dtype, weak_type=aval.weak_type)


def _full_like(x: Any, value: np.ndarray) -> Any:
    from numbax._src.lax import shape_ops

    aval = get_aval(x)  # keeps x's weak type, as JAX's full_like
    return shape_ops.full(aval.shape, value, aval.dtype, weak_type=aval.weak_type)


# The unary primitives' derivative rules, which use the wrappers above.
from numbax._src.lax import unary_derivatives  # noqa: E402, F401
