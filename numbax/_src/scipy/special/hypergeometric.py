"""numbax.scipy.special's confluent and Gauss hypergeometric functions, hyp1f1 and hyp2f1:
power series summed to convergence in while loops, with Kummer's, Pfaff's and the 1 - x
transformations to keep them convergent and free of cancellation."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import finfo_of
from numbax._src.lax import elementwise as lax
from numbax._src.lax.control_flow.loops import while_loop
from numbax._src.numpy.creation import full_like
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.reductions import any as any_
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import exp, floor, isinf, log, logical_not, power
from numbax._src.scipy.special.args import const, dtype_of, real_float
from numbax._src.scipy.special.gamma_fns import _gammasgn

__all__ = ["hyp1f1", "hyp2f1"]


def _eps(x: Any) -> float:
    return float(finfo_of(dtype_of(x)).eps)


def _sum_series(ratio: Any, first: Any, weight: Any = None, max_terms: int = 2000) -> Any:
    """sum_(k>=0) t_k w_k with t_0 = `first`, t_(k+1) = t_k ratio(k), w_k = weight(k) (1 by
    default), until every term is below eps times the sum or max_terms is reached."""
    eps = _eps(first)

    def w(k):
        return const(first, 1) if weight is None else weight(k)

    def cond(state):
        k, term, total = state
        live = abs_(term * w(k)) > eps * abs_(total)
        # at least two terms: a weight may vanish at k = 0 (the parameter derivatives)
        return (k < max_terms) & ((k < 2) | any_(live & logical_not(isinf(total))))

    def body(state):
        k, term, total = state
        term = term * ratio(k)
        k = k + 1
        return k, term, total + term * w(k)

    k0 = const(first, 0)
    _, _, total = while_loop(cond, body, (k0, first, first * w(k0)))
    return total


def _is_nonpositive_int(a: Any) -> Any:
    return (a <= 0) & (a == floor(a))


def _log_abs_gamma(x: Any) -> Any:
    return lax.lgamma(x)


def _rgamma(x: Any) -> Any:
    """1 / Gamma(x), 0 at the poles."""
    pole = _is_nonpositive_int(x)
    safe = where(pole, const(x, 1), x)
    return where(pole, const(x, 0), _gammasgn(safe) * exp(-lax.lgamma(safe)))


# ----------------------------------------------------------------------------- hyp1f1


def _m_series(a: Any, b: Any, x: Any) -> Any:
    return _sum_series(lambda k: (a + k) / (b + k) * x / (k + 1), full_like(x, 1))


def _m_asymptotic_log(a: Any, b: Any, x: Any) -> tuple[Any, Any]:
    """M(a, b, x) ~ Gamma(b)/Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k), x >> 1;
    returned as (sign * series, log of the prefactor without e^x)."""
    series = _sum_series(lambda k: (b - a + k) * (1 - a + k) / ((k + 1) * x), full_like(x, 1),
                         max_terms=200)
    sign = _gammasgn(b) * _gammasgn(a)
    return sign * series, lax.lgamma(b) - lax.lgamma(a) + (a - b) * log(x)


def _hyp1f1_value(a: Any, b: Any, x: Any) -> Any:
    negative = x < 0
    a1 = where(negative, b - a, a)  # Kummer: M(a, b, x) = e^x M(b - a, b, -x)
    x1 = abs_(x)
    use_asymptotic = (x1 >= 100) & logical_not(_is_nonpositive_int(a1))
    series = _m_series(a1, b, where(use_asymptotic, const(x, 0), x1))
    series = where(negative, exp(x) * series, series)
    scaled, log_prefactor = _m_asymptotic_log(a1, b, where(use_asymptotic, x1, const(x, 100)))
    asymptotic = scaled * exp(log_prefactor + where(negative, const(x, 0), x1))
    value = where(use_asymptotic, asymptotic, series)
    value = where(b == 0, const(x, np.inf), value)
    value = where((a == b) & (a != 0), exp(x), value)
    return where(a == 0, const(x, 1), value)


def _hyp1f1_param_derivative(a: Any, b: Any, x: Any, shift: Any) -> Any:
    """sum_k (a)_k / (b)_k x^k / k! * shift(k): JAX's series for d/da and d/db."""
    return _sum_series(lambda k: (a + k) / (b + k) * x / (k + 1), full_like(x, 1), shift)


@custom_jvp
def _hyp1f1(a: Any, b: Any, x: Any) -> Any:
    return _hyp1f1_value(a, b, x)


_hyp1f1.defjvps(
    lambda g, ans, a, b, x: g * _hyp1f1_param_derivative(
        a, b, x, lambda k: lax.digamma(a + k) - lax.digamma(a)),
    lambda g, ans, a, b, x: g * _hyp1f1_param_derivative(
        a, b, x, lambda k: lax.digamma(b) - lax.digamma(b + k)),
    lambda g, ans, a, b, x: g * a / b * _hyp1f1(a + 1, b + 1, x),
)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!.

    The power series for |x| < 100 (negative x through Kummer's transformation
    e^x 1F1(b - a; b; -x), so the series never cancels), the asymptotic series beyond.
    As JAX: 1 at a = 0 (also a = b = 0), exp(x) at a = b, inf at b = 0; derivatives by the
    series of d/da and d/db, and a/b 1F1(a + 1; b + 1; x) in x.

    Args:
      a, b, x: real arrays, broadcast together.

    Returns:
      1F1(a; b; x).

    >>> round(float(hyp1f1(1.0, 2.0, 1.0)), 12)
    1.718281828459
    """
    return _hyp1f1(*real_float("special.hyp1f1", a, b, x))


# ----------------------------------------------------------------------------- hyp2f1


def _f_series(a: Any, b: Any, c: Any, z: Any, max_terms: int = 20000) -> Any:
    return _sum_series(lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * z,
                       full_like(z, 1), max_terms=max_terms)


def _f_unit_interval(a: Any, b: Any, c: Any, z: Any) -> Any:
    """2F1 for 0 <= z < 1: the series up to 0.9; beyond, A&S 15.3.6 in 1 - z, or 15.3.10-11
    (their logarithmic forms) when c - a - b is an integer; the series again when a or b is
    a non-positive integer (it terminates)."""
    d = c - a - b
    integer_d = abs_(d - lax.round(d)) < 1e-9
    polynomial = _is_nonpositive_int(a) | _is_nonpositive_int(b)
    near_one = (z > 0.9) & logical_not(polynomial)
    logarithmic = near_one & integer_d & (abs_(d) <= _MAX_INTEGER_D)
    near_one = near_one & logical_not(integer_d)
    direct = _f_series(a, b, c, where(near_one | logarithmic, const(z, 0), z))
    w = where(near_one, 1 - z, const(z, 0.05))
    safe_d = where(near_one, d, const(z, 0.5))
    first = (lax.lgamma(c) + lax.lgamma(safe_d) - lax.lgamma(c - a) - lax.lgamma(c - b))
    sign1 = _gammasgn(c) * _gammasgn(safe_d) * _gammasgn(c - a) * _gammasgn(c - b)
    second = (lax.lgamma(c) + lax.lgamma(-safe_d) - lax.lgamma(a) - lax.lgamma(b))
    sign2 = _gammasgn(c) * _gammasgn(-safe_d) * _gammasgn(a) * _gammasgn(b)
    term1 = sign1 * exp(first) * _f_series(a, b, 1 - safe_d, w, 400)
    term2 = (sign2 * exp(second) * power(w, safe_d)
             * _f_series(c - a, c - b, 1 + safe_d, w, 400))
    term1 = where(_is_nonpositive_int(c - a) | _is_nonpositive_int(c - b), const(z, 0), term1)
    term2 = where(_is_nonpositive_int(a) | _is_nonpositive_int(b), const(z, 0), term2)
    log_form = _f_integer_d(where(logarithmic, a, const(a, 0.5)),
                            where(logarithmic, b, const(b, 0.5)),
                            where(logarithmic, c, const(c, 1.0)),
                            where(logarithmic, z, const(z, 0.95)))
    return where(logarithmic, log_form, where(near_one, term1 + term2, direct))


_MAX_INTEGER_D = 64


def _f_integer_d(a: Any, b: Any, c: Any, z: Any) -> Any:
    """2F1 near z = 1 when c - a - b = m is an integer (A&S 15.3.10, 15.3.11; m < 0 goes
    through Euler's transformation (1 - z)^m 2F1(c - a, c - b; c; z) first):
      Gamma(m) Gamma(a+b+m) / (Gamma(a+m) Gamma(b+m)) sum_(n<m) (a)_n (b)_n / (n! (1-m)_n) w^n
      - (-1)^m Gamma(a+b+m) / (Gamma(a) Gamma(b)) sum_n (a+m)_n (b+m)_n / (n! (n+m)!)
        w^(n+m) [log w - psi(n+1) - psi(n+m+1) + psi(a+n+m) + psi(b+n+m)],  w = 1 - z."""
    d = lax.round(c - a - b)
    euler = d < 0
    a, b = where(euler, c - a, a), where(euler, c - b, b)
    m = abs_(d)
    w = 1 - z
    log_w = log(w)
    # the finite sum, n = 0 .. m - 1 (masked up to the largest m allowed)
    finite = const(z, 0)
    term = const(z, 1)
    for n in range(_MAX_INTEGER_D):
        finite = finite + where(n < m, term, const(z, 0))
        step = (a + n) * (b + n) / ((n + 1) * where(n + 1 < m, 1 - m + n, const(z, 1))) * w
        term = term * step
    finite = finite * (exp(lax.lgamma(where(m > 0, m, const(m, 1))) + lax.lgamma(a + b + m))
                       * _rgamma(a + m) * _rgamma(b + m)
                       * _gammasgn(where(m > 0, m, const(m, 1))) * _gammasgn(a + b + m))
    finite = where(m > 0, finite, const(z, 0))
    first = exp(m * log_w - lax.lgamma(m + 1))
    infinite = _sum_series(
        lambda k: (a + m + k) * (b + m + k) / ((k + 1) * (k + m + 1)) * w, first,
        lambda k: (log_w - lax.digamma(k + 1) - lax.digamma(k + m + 1)
                   + lax.digamma(a + k + m) + lax.digamma(b + k + m)), max_terms=400)
    parity = 1 - 2 * (m - 2 * floor(m / 2))
    infinite = (-parity * _gammasgn(a + b + m) * exp(lax.lgamma(a + b + m))
                * _rgamma(a) * _rgamma(b) * infinite)
    value = finite + infinite
    return where(euler, power(w, d) * value, value)


def _f_below_one(a: Any, b: Any, c: Any, x: Any) -> Any:
    """2F1 for x < 1: Pfaff's transformation (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)) maps
    x < 0 into (0, 1) (on b instead of a when b alone is a non-positive integer)."""
    negative = x < 0
    use_b = _is_nonpositive_int(b) & logical_not(_is_nonpositive_int(a))
    p, q = where(use_b, b, a), where(use_b, a, b)
    z = where(negative, x / (x - 1), x)
    first = where(negative, p, a)
    second = where(negative, c - q, b)
    value = _f_unit_interval(first, second, c, z)
    return where(negative, power(1 - x, -p) * value, value)


def _hyp2f1_value(a: Any, b: Any, c: Any, x: Any) -> Any:
    d = c - a - b
    s = 1 - x
    inf = const(x, np.inf)
    general = _f_below_one(a, b, c, where(x < 1, x, const(x, 0)))
    at_one = exp(lax.lgamma(c) + lax.lgamma(where(d > 0, d, const(d, 1)))
                 - lax.lgamma(c - a) - lax.lgamma(c - b)) * (
        _gammasgn(c) * _gammasgn(d) * _gammasgn(c - a) * _gammasgn(c - b))
    value = where(x < 1, general, where((x == 1) & (d > 0), at_one, inf))
    value = where((x < 1) & (a == c), power(s, -b), value)
    value = where((x < 1) & (b == c), power(s, -a), value)
    value = where(_is_nonpositive_int(c), inf, value)
    ones = (x == 0) | (((a == 0) | (b == 0)) & (c != 0))
    return where(ones, const(x, 1), value)


def _hyp2f1_param_derivative(a, b, c, x, shift):
    return _sum_series(lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * x,
                       full_like(x, 1), shift)


@custom_jvp
def _hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    return _hyp2f1_value(a, b, c, x)


_hyp2f1.defjvps(
    lambda g, ans, a, b, c, x: g * _hyp2f1_param_derivative(
        a, b, c, x, lambda k: lax.digamma(a + k) - lax.digamma(a)),
    lambda g, ans, a, b, c, x: g * _hyp2f1_param_derivative(
        a, b, c, x, lambda k: lax.digamma(b + k) - lax.digamma(b)),
    lambda g, ans, a, b, c, x: g * _hyp2f1_param_derivative(
        a, b, c, x, lambda k: lax.digamma(c) - lax.digamma(c + k)),
    lambda g, ans, a, b, c, x: g * a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x),
)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss's hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k!.

    For x < 1: the series (Pfaff's transformation for x < 0; for x > 0.9 the 1 - x
    transformation A&S 15.3.6, or its logarithmic forms 15.3.10-11 when c - a - b is an
    integer, |c - a - b| <= 64). Gauss's sum at x = 1 when
    c - a - b > 0; inf for x > 1 and at non-positive integer c, as in JAX. Derivatives in
    a, b, c by their series (valid for |x| < 1, as JAX's), in x by ab/c 2F1(a+1, b+1; c+1; x).

    Args:
      a, b, c, x: real arrays, broadcast together.

    Returns:
      2F1(a, b; c; x).

    >>> round(float(hyp2f1(1.0, 1.0, 2.0, 0.5)), 12)
    1.38629436112
    """
    return _hyp2f1(*real_float("special.hyp2f1", a, b, c, x))
