"""Special-function primitives JAX keeps in lax (incomplete gamma and beta, Hurwitz zeta,
scaled Bessel I0/I1): scipy evaluates them eagerly; their derivatives are closed forms or
series written as compositions of elementwise primitives."""
from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, get_aval
from numbax._src.dtypes import finfo_of
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax.elementwise import (
    _broadcast_tangent,
    _const,
    _to_operand,
    abs,
    add,
    div,
    exp,
    gt,
    lgamma,
    log,
    log1p,
    mul,
    neg,
    select,
    sign,
    sub,
)
from numbax._src.lazy_module import lazy

sp = lazy("scipy.special")

__all__ = [
    "betainc", "bessel_i0e", "bessel_i1e", "igamma", "igamma_grad_a", "igammac",
    "random_gamma_grad", "zeta", "bessel_i0e_p", "bessel_i1e_p", "igamma_grad_a_p", "igamma_p",
    "igammac_p", "regularized_incomplete_beta_p", "zeta_p",
]


@cache
def bernoulli_numbers(n: int) -> tuple[Fraction, ...]:
    """B_0 .. B_n exactly (Akiyama-Tanigawa), with scipy's sign convention B_1 = -1/2."""
    table = [Fraction(0)] * (n + 1)
    out = []
    for m in range(n + 1):
        table[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            table[j - 1] = j * (table[j - 1] - table[j])
        out.append(table[0])
    if n >= 1:
        out[1] = Fraction(-1, 2)
    return tuple(out)


def _float64_args(*arrays: np.ndarray) -> tuple[np.dtype, list[np.ndarray]]:
    dtype = arrays[0].dtype
    return dtype, [np.asarray(a, np.float64) for a in np.broadcast_arrays(*arrays)]


def _nary(name: str, impl: Any, arity: int) -> Primitive:
    """An elementwise floating primitive of `arity` operands of one dtype (rank 0 broadcasts)."""
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = ew._binary_abstract_eval(name, ew._REAL_FLOAT, None)
    core.avals_only.add(prim)
    core.impl_rules[prim] = lambda *xs: [impl(*xs)]
    if arity == 1:
        batching.defvectorized(prim)
    else:
        batching.defbroadcasting(prim)
    return prim


def _bind(prim: Primitive, *args: Any) -> Any:
    """Python scalars take the dtype of an array operand, as lax's binary wrappers do."""
    like = next((x for x in args if not isinstance(x, (bool, int, float))), None)
    if like is not None:
        args = tuple(_to_operand(x, like) for x in args)
    return prim.bind(*args)


def _tangent(t: Any, ans: Any, factor: Any) -> Any:
    return mul(_broadcast_tangent(t, get_aval(ans)), factor)


# ----------------------------------------------------------------------------- igamma


def _igamma_impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype, (a64, x64) = _float64_args(a, x)
    out = sp.gammainc(a64, x64)
    return np.where(np.isinf(a64), np.nan, out).astype(dtype)


def _igammac_impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype, (a64, x64) = _float64_args(a, x)
    out = sp.gammaincc(a64, x64)
    return np.where(np.isinf(a64), np.nan, out).astype(dtype)


def _igamma_density(a: Any, x: Any) -> Any:
    """d/dx igamma(a, x) = x^(a-1) e^(-x) / Gamma(a)."""
    return exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a)))


igamma_p = _nary("igamma", _igamma_impl, 2)
igammac_p = _nary("igammac", _igammac_impl, 2)


def _igamma_series_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP/da from P = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n)), term by term."""
    total = np.ones_like(a)
    dtotal = np.zeros_like(a)
    term = np.ones_like(a)
    dterm = np.zeros_like(a)
    active = np.ones(a.shape, bool)
    for n in range(1, 100_000):
        if not active.any():
            break
        ratio = x / (a + n)
        term = np.where(active, term * ratio, 0.0)
        dterm = np.where(active, dterm * ratio - term / (a + n), 0.0)
        total += term
        dtotal += dterm
        active &= (np.abs(term) > 1e-17 * np.abs(total)) | (np.abs(dterm) > 1e-17 * np.abs(dtotal))
    log_prefix = a * np.log(x) - x - sp.gammaln(a + 1)
    return np.exp(log_prefix) * ((np.log(x) - sp.digamma(a + 1)) * total + dtotal)


def _igammac_fraction_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dQ/da from Q = x^a e^-x / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))),
    differentiating the Wallis recurrences A_n, B_n of the fraction alongside them."""
    a_prev, a_cur = np.zeros_like(a), np.ones_like(a)
    b_prev, b_cur = np.ones_like(a), x + 1 - a
    da_prev, da_cur = np.zeros_like(a), np.zeros_like(a)
    db_prev, db_cur = np.zeros_like(a), -np.ones_like(a)
    value, dvalue = a_cur / b_cur, np.zeros_like(a)
    active = np.ones(a.shape, bool)
    for n in range(2, 100_000):
        if not active.any():
            break
        alpha, dalpha = -(n - 1) * (n - 1 - a), (n - 1) * np.ones_like(a)
        beta = x + 2 * n - 1 - a
        a_new = beta * a_cur + alpha * a_prev
        b_new = beta * b_cur + alpha * b_prev
        da_new = -a_cur + beta * da_cur + dalpha * a_prev + alpha * da_prev
        db_new = -b_cur + beta * db_cur + dalpha * b_prev + alpha * db_prev
        scale = np.where(b_new != 0, 1 / b_new, 1.0)
        a_prev, a_cur = a_cur * scale, a_new * scale
        b_prev, b_cur = b_cur * scale, b_new * scale
        da_prev, da_cur = da_cur * scale, da_new * scale
        db_prev, db_cur = db_cur * scale, db_new * scale
        new = a_cur / b_cur
        dnew = (da_cur * b_cur - a_cur * db_cur) / (b_cur * b_cur)
        # both the fraction and its derivative must settle (for integer a the fraction
        # terminates while its derivative does not)
        active &= ((np.abs(new - value) > 1e-17 * np.abs(new))
                   | (np.abs(dnew - dvalue) > 1e-17 * np.abs(dnew)))
        value, dvalue = new, dnew
    fraction, dfraction = value, dvalue
    log_prefix = a * np.log(x) - x - sp.gammaln(a)
    return np.exp(log_prefix) * ((np.log(x) - sp.digamma(a)) * fraction + dfraction)


def _igamma_grad_a_impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype, (a64, x64) = _float64_args(a, x)
    out = np.full(a64.shape, np.nan)
    ok = (a64 > 0) & (x64 >= 0) & np.isfinite(a64) & ~np.isnan(x64)
    out[ok & ((x64 == 0) | np.isinf(x64))] = 0.0
    work = ok & (x64 > 0) & np.isfinite(x64)
    fraction = work & (x64 > 1) & (x64 > a64)
    series = work & ~fraction
    with np.errstate(all="ignore"):
        if series.any():
            out[series] = _igamma_series_da(a64[series], x64[series])
        if fraction.any():
            out[fraction] = -_igammac_fraction_da(a64[fraction], x64[fraction])
    return out.astype(dtype)


igamma_grad_a_p = _nary("igamma_grad_a", _igamma_grad_a_impl, 2)
ad.non_differentiable.add(igamma_grad_a_p)  # as in JAX, which has no rule for it either

ad.defjvp(igamma_p,
          lambda t, ans, a, x: _tangent(t, ans, igamma_grad_a(a, x)),
          lambda t, ans, a, x: _tangent(t, ans, _igamma_density(a, x)))
ad.defjvp(igammac_p,
          lambda t, ans, a, x: _tangent(t, ans, neg(igamma_grad_a(a, x))),
          lambda t, ans, a, x: _tangent(t, ans, neg(_igamma_density(a, x))))


def igamma(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x) (scipy's gammainc).

    Args:
      a: shape parameter, a floating array.
      x: upper limit, an array of a's dtype and shape (or rank 0).

    Returns:
      P(a, x); nan outside a > 0, x >= 0 (and for infinite a, as in JAX).
    """
    return _bind(igamma_p, a, x)


def igammac(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    Args:
      a: shape parameter, a floating array.
      x: lower limit, an array of a's dtype and shape (or rank 0).

    Returns:
      Q(a, x).
    """
    return _bind(igammac_p, a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """d/da of igamma(a, x), by the series or continued fraction of P(a, x) differentiated in a.

    Args:
      a: shape parameter, a floating array.
      x: upper limit, an array of a's dtype and shape (or rank 0).

    Returns:
      dP(a, x)/da (not itself differentiable, as in JAX).
    """
    return _bind(igamma_grad_a_p, a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative of a Gamma(a, 1) sample x with respect to a, holding P(a, x) fixed:
    -(dP/da) / (dP/dx).

    Args:
      a: shape parameter, a floating array.
      x: the sample, an array of a's dtype and shape (or rank 0).

    Returns:
      dx/da.
    """
    grad_a = _bind(igamma_grad_a_p, a, x)
    a, x = _to_operand(a, grad_a), _to_operand(x, grad_a)
    log_density = sub(sub(mul(sub(a, _const(grad_a, 1)), log(x)), x), lgamma(a))
    return neg(mul(grad_a, exp(neg(log_density))))


# ----------------------------------------------------------------------------- betainc


def _betainc_impl(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    dtype, (a64, b64, x64) = _float64_args(a, b, x)
    return sp.betainc(a64, b64, x64).astype(dtype)


def _betainc_grad_ab(t, ans, a, b, x):
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_grad_x(t, ans, a, b, x):
    one = _const(x, 1)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    log_density = sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))), log_beta)
    return _tangent(t, ans, exp(log_density))


regularized_incomplete_beta_p = _nary("regularized_incomplete_beta", _betainc_impl, 3)
ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_ab, _betainc_grad_ab, _betainc_grad_x)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b).

    Args:
      a, b: the beta distribution's parameters, floating arrays of one dtype.
      x: the upper limit of integration, in [0, 1].

    Returns:
      I_x(a, b). Differentiable in x only; d/da and d/db raise ValueError, as in JAX.
    """
    return _bind(regularized_incomplete_beta_p, a, b, x)


# ----------------------------------------------------------------------------- zeta


def _zeta_impl(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """scipy's zeta with JAX's (XLA's) values off the series' domain, where scipy differs
    (zeta(0, 0): scipy nan, JAX inf; zeta(1.5, 0): scipy inf, JAX nan), applied in XLA's
    order: infinite arguments and x < 1 are nan; q <= 0 needs an integer x; an integer
    q <= 0 is a pole, +inf for an even integer x and nan otherwise; x == 1 is +inf."""
    dtype, (x64, q64) = _float64_args(x, q)
    with np.errstate(invalid="ignore"):
        out = sp.zeta(x64, q64)
        out = np.where(np.isinf(x64) | np.isinf(q64) | (x64 < 1), np.nan, out)
        x_integer = x64 == np.floor(x64)
        q_nonpositive = q64 <= 0
        out = np.where(q_nonpositive & ~x_integer, np.nan, out)
        even = x_integer & (np.fmod(x64, 2) == 0)
        out = np.where(q_nonpositive & (q64 == np.floor(q64)), np.where(even, np.inf, np.nan),
                       out)
        out = np.where(x64 == 1, np.inf, out)
    return out.astype(dtype)


def _zeta_dx(s: Any, a: Any) -> Any:
    """d/ds zeta(s, a) from the Euler-Maclaurin form of zeta (Johansson 2015, eq. 5) with
    N = M = 16 (8 in float32), differentiated term by term."""
    dtype = get_aval(s).dtype
    n_terms = 8 if dtype == np.float32 else 16
    bern = bernoulli_numbers(2 * n_terms)
    total = None
    for k in range(n_terms):
        ak = add(a, _const(a, k))
        term = mul(neg(log(ak)), exp(mul(neg(s), log(ak))))
        total = term if total is None else add(total, term)
    an = add(a, _const(a, n_terms))
    log_an = log(an)
    one = _const(s, 1)
    tail_integral = div(exp(mul(sub(one, s), log_an)), sub(s, one))
    d_integral = neg(add(mul(log_an, tail_integral), div(tail_integral, sub(s, one))))
    poch, dpoch = s, _const(s, 1)  # (s)_(2j-1) and its derivative, j = 1
    series, dseries = _const(s, 0.5), _const(s, 0)
    inv_an = div(_const(a, 1), an)
    power = inv_an
    for j in range(1, n_terms + 1):
        coef = _const(s, float(bern[2 * j] / math.factorial(2 * j)))
        series = add(series, mul(coef, mul(poch, power)))
        dseries = add(dseries, mul(coef, mul(dpoch, power)))
        lo, hi = add(s, _const(s, 2 * j - 1)), add(s, _const(s, 2 * j))
        dpoch = add(mul(dpoch, mul(lo, hi)), mul(poch, add(lo, hi)))
        poch = mul(poch, mul(lo, hi))
        power = mul(power, mul(inv_an, inv_an))
    an_s = exp(mul(neg(s), log_an))
    d_tail = add(mul(neg(log_an), mul(an_s, series)), mul(an_s, dseries))
    return add(add(total, d_integral), d_tail)


zeta_p = _nary("zeta", _zeta_impl, 2)
ad.defjvp(zeta_p,
          lambda t, ans, x, q: _tangent(t, ans, _zeta_dx(x, q)),
          lambda t, ans, x, q: _tangent(t, ans, neg(mul(x, zeta(add(x, _const(x, 1)), q)))))


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function sum_n (n + q)^-x.

    Args:
      x: the exponent, a floating array (> 1 for a finite value).
      q: the shift, an array of x's dtype.

    Returns:
      zeta(x, q); differentiable in both (d/dx through the Euler-Maclaurin series).
    """
    return _bind(zeta_p, x, q)


# ----------------------------------------------------------------------------- bessel


bessel_i0e_p = _nary("bessel_i0e", lambda x: sp.i0e(x).astype(x.dtype), 1)
bessel_i1e_p = _nary("bessel_i1e", lambda x: sp.i1e(x).astype(x.dtype), 1)


def _bessel_i1e_jvp(t, ans, x):
    eps = _const(x, finfo_of(get_aval(x).dtype).eps)
    not_tiny = gt(abs(x), eps)
    safe_x = select(not_tiny, x, ew._full_like(x, eps))
    slope = sub(bessel_i0e(safe_x), mul(ans, add(sign(safe_x), div(_const(x, 1), safe_x))))
    return mul(t, select(not_tiny, slope, ew._full_like(x, _const(x, 0.5))))


ad.defjvp(bessel_i0e_p, lambda t, ans, x: mul(t, sub(bessel_i1e(x), mul(sign(x), ans))))
ad.defjvp(bessel_i1e_p, _bessel_i1e_jvp)


def bessel_i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x).

    Args:
      x: a floating array.

    Returns:
      i0e(x).
    """
    return bessel_i0e_p.bind(x)


def bessel_i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x).

    Args:
      x: a floating array.

    Returns:
      i1e(x).
    """
    return bessel_i1e_p.bind(x)

