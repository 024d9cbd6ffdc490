"""Derivative rules of lax's unary elementwise primitives (elementwise.py defines them; its
last line imports this module): linear ones transpose, the others have JVPs written with the
primitives themselves, as JAX's."""
from __future__ import annotations

import numpy as np

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.interpreters import ad
from numbax._src.interpreters.ad import Zero
from numbax._src.lax.elementwise import (
    _const,
    _ones_like,
    abs_p,
    acos_p,
    acosh_p,
    add,
    asin_p,
    asinh_p,
    atan_p,
    atanh_p,
    cbrt_p,
    ceil_p,
    complex_,
    conj,
    conj_p,
    convert_element_type,
    cos,
    cos_p,
    cosh,
    cosh_p,
    digamma,
    digamma_p,
    div,
    eq,
    erf_inv_p,
    erf_p,
    erfc_p,
    exp,
    exp2_p,
    exp_p,
    expm1_p,
    floor_p,
    ge,
    imag_p,
    integer_pow,
    integer_pow_p,
    is_finite_p,
    lgamma_p,
    log1p_p,
    log_p,
    logistic_p,
    mul,
    neg,
    neg_p,
    not_p,
    polygamma,
    population_count_p,
    real,
    real_p,
    round_p,
    rsqrt,
    rsqrt_p,
    select_n,
    sign_p,
    sin,
    sin_p,
    sinh,
    sinh_p,
    sqrt_p,
    square,
    square_p,
    sub,
    tan_p,
    tanh_p,
)

for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p):
    ad.non_differentiable.add(_p)

ad.deflinear(neg_p, lambda cts, x: [neg(cts[0])])
ad.deflinear(real_p, lambda cts, x: [complex_(cts[0], _const(cts[0], 0))])
ad.deflinear(imag_p, lambda cts, x: [complex_(_const(cts[0], 0), neg(cts[0]))])
ad.deflinear(conj_p, lambda cts, x: [conj(cts[0])])
ad.defjvp(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp(exp2_p, lambda t, ans, x: mul(t, mul(ans, _const(x, np.log(2)))))
ad.defjvp(log_p, lambda t, ans, x: div(t, x))
ad.defjvp(log1p_p, lambda t, ans, x: div(t, add(x, _const(x, 1))))
ad.defjvp(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(x, 1))))
ad.defjvp(tanh_p, lambda t, ans, x: mul(add(t, mul(t, ans)), sub(_const(x, 1), ans)))  # JAX's
ad.defjvp(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(x, 1), ans))))
ad.defjvp(sin_p, lambda t, ans, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, ans, x: neg(mul(t, sin(x))))
ad.defjvp(tan_p, lambda t, ans, x: mul(t, add(_const(x, 1), square(ans))))
ad.defjvp(asin_p, lambda t, ans, x: mul(t, rsqrt(sub(_const(x, 1), square(x)))))
ad.defjvp(acos_p, lambda t, ans, x: neg(mul(t, rsqrt(sub(_const(x, 1), square(x))))))
ad.defjvp(atan_p, lambda t, ans, x: div(t, add(_const(x, 1), square(x))))
ad.defjvp(sinh_p, lambda t, ans, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, ans, x: mul(t, sinh(x)))
ad.defjvp(asinh_p, lambda t, ans, x: mul(t, rsqrt(add(square(x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda t, ans, x: mul(
    t, rsqrt(mul(sub(x, _const(x, 1)), add(x, _const(x, 1))))))
ad.defjvp(atanh_p, lambda t, ans, x: mul(integer_pow(add(_const(x, 1), x), -1),
                                         div(t, sub(_const(x, 1), x))))
ad.defjvp(sqrt_p, lambda t, ans, x: mul(t, div(_const(x, 0.5), ans)))
ad.defjvp(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))
ad.defjvp(erf_p, lambda t, ans, x: mul(_const(x, 2 / np.sqrt(np.pi)),
                                       mul(t, exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda t, ans, x: mul(t, mul(_const(x, -2 / np.sqrt(np.pi)),
                                                exp(neg(square(x))))))
ad.defjvp(erf_inv_p, lambda t, ans, x: mul(t, mul(_const(x, np.sqrt(np.pi) / 2),
                                                   exp(square(ans)))))
ad.defjvp(lgamma_p, lambda t, ans, x: mul(t, digamma(x)))
ad.defjvp(digamma_p, lambda t, ans, x: mul(t, polygamma(_const(x, 1), x)))
ad.defjvp(square_p, lambda t, ans, x: mul(t, mul(_const(x, 2), x)))


def _abs_jvp(t, ans, x):
    if kind_of(get_aval(x).dtype) == "c":
        # x / |x|, with |x| = 0 replaced by 1 so that |0j| has derivative 0 (as JAX), not NaN.
        safe = select_n(eq(ans, _const(ans, 0)), ans, _ones_like(ans))
        return real(mul(conj(div(x, convert_element_type(safe, get_aval(x).dtype))), t))
    # JAX's convention: d|x|/dx at 0 is 1 (the x >= 0 side).
    return select_n(ge(x, _const(x, 0)), neg(t), t)


ad.defjvp(abs_p, _abs_jvp)


def _integer_pow_jvp(t, ans, x, *, y):
    if y == 0:
        return Zero(get_aval(t))
    if y == 1:
        return t
    return mul(t, mul(_const(x, y), integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)
