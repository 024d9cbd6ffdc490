"""numbax.scipy.special's exponential, sine/cosine and Fresnel integrals and the dilogarithm:
expi, exp1, expn, sici, fresnel, spence (series near 0, continued fractions beyond)."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from numbax._src.custom_derivatives import custom_jvp
from numbax._src.lax import elementwise as lax
from numbax._src.lax import special as lax_special
from numbax._src.lax.control_flow.loops import fori_loop
from numbax._src.numpy.creation import full_like
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import (
    cos,
    exp,
    floor,
    fmod,
    isinf,
    isnan,
    log,
    log1p,
    sign,
    sin,
)
from numbax._src.scipy.special.args import const, dtype_of, real_float

__all__ = ["exp1", "expi", "expn", "fresnel", "sici", "spence"]

_EULER = 0.57721566490153286061
_PI = math.pi


def _backward_fraction(depth: int, level: Any, like: Any, parts: int = 1) -> Any:
    """t_k = level(k, t_(k+1)) for k = depth .. 1 from t_(depth+1) = 0 (a fori_loop); t is
    an array shaped like `like`, or a tuple of `parts` such arrays (complex values)."""
    zero = full_like(like, 0)
    init = zero if parts == 1 else (zero,) * parts

    def body(i, t):
        k = lax.convert_element_type(depth - i, dtype_of(like))
        return level(k, t)

    return fori_loop(0, depth, body, init)


# ----------------------------------------------------------------------------- E1 and Ei


def _e1_series(x: Any) -> Any:
    """E1(x) = -gamma - log x - sum_(k>=1) (-x)^k / (k k!), for 0 < x <= 1."""
    total = const(x, 0)
    term = const(x, 1)
    for k in range(1, 26):
        term = term * (-x) / k
        total = total + term / k
    return -_EULER - log(x) - total


def _e1_fraction(x: Any) -> Any:
    """E1(x) = e^-x / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))), for x >= 1 (120 levels)."""
    tail = _backward_fraction(120, lambda k, t: k * k / (x + 2 * k + 1 - t), x)
    return exp(-x) / (x + 1 - tail)


def _e1(x: Any) -> Any:
    small = x <= 1
    series = _e1_series(where(small & (x > 0), x, const(x, 1)))
    fraction = _e1_fraction(where(small | isinf(x), const(x, 2), x))
    out = where(small, series, fraction)
    out = where(x == 0, const(x, np.inf), where(isinf(x) & (x > 0), const(x, 0), out))
    return where((x < 0) | isnan(x), const(x, np.nan), out)


@custom_jvp
def _exp1(x: Any) -> Any:
    return _e1(x)


_exp1.defjvps(lambda g, ans, x: -g * exp(-x) / x)


def exp1(x: Any) -> Any:
    """The exponential integral E1(x) = integral_x^inf exp(-t) / t dt, for x >= 0.

    A power series up to x = 1, a 120-level continued fraction beyond; inf at 0, nan for
    x < 0. jvp: -exp(-x) / x.

    Args:
      x: real array.

    Returns:
      E1(x).

    >>> round(float(exp1(1.0)), 12)
    0.219383934396
    """
    return _exp1(*real_float("special.exp1", x))


def _ei_series(x: Any) -> Any:
    """Ei(x) = gamma + log x + sum_(k>=1) x^k / (k k!), for 0 < x <= 40 (140 terms)."""
    def body(i, carry):
        total, term = carry
        k = lax.convert_element_type(i + 1, dtype_of(x))
        term = term * x / k
        return total + term / k, term

    total, _ = fori_loop(0, 140, body, (full_like(x, 0), full_like(x, 1)))
    return _EULER + log(x) + total


def _ei_asymptotic(x: Any) -> Any:
    """Ei(x) ~ e^x / x sum_k k! / x^k, for x > 40 (optimally truncated at 40 terms)."""
    total = const(x, 1)
    for k in range(40, 0, -1):
        total = 1 + k / x * total
    return exp(x) / x * total


@custom_jvp
def _expi(x: Any) -> Any:
    negative = x < 0
    mid = (x > 0) & (x <= 40)
    series = _ei_series(where(mid, x, const(x, 1)))
    large = _ei_asymptotic(where(x > 40, x, const(x, 41)))
    minus = -_e1(where(negative, -x, const(x, 1)))
    out = where(negative, minus, where(mid, series, large))
    return where((x == 0) | isinf(x) | isnan(x), const(x, np.nan), out)


_expi.defjvps(lambda g, ans, x: g * exp(x) / x)


def expi(x: Any) -> Any:
    """The exponential integral Ei(x) = -PV integral_(-x)^inf exp(-t) / t dt.

    -E1(-x) for x < 0, a power series up to 40, the asymptotic series beyond; nan at 0 and
    +-inf, as in JAX. jvp: exp(x) / x.

    Args:
      x: real array.

    Returns:
      Ei(x).

    >>> round(float(expi(1.0)), 12)
    1.895117816356
    """
    return _expi(*real_float("special.expi", x))


# ----------------------------------------------------------------------------- En


def _en_series(n: Any, x: Any) -> Any:
    """E_n(x) for 0 < x <= 1, n >= 1 (A&S 5.1.12): (-x)^(n-1)/(n-1)! (psi(n) - log x)
    - sum_(k != n-1) (-x)^k / ((k - n + 1) k!)."""
    total = const(x, 0)
    term = const(x, 1)  # (-x)^k / k!
    for k in range(0, 40):
        if k:
            term = term * (-x) / k
        denom = k - n + 1
        total = total + where(denom == 0, const(x, 0), term / where(denom == 0, 1, denom))
    sign_ = where(fmod(n - 1, 2) == 0, const(x, 1), const(x, -1))
    lead = sign_ * exp((n - 1) * log(x) - lax.lgamma(n)) * (lax.digamma(n) - log(x))
    return lead - total


def _en_fraction(n: Any, x: Any) -> Any:
    """E_n(x) = e^-x / (x + n - 1 n / (x + n + 2 - 2 (n+1) / (x + n + 4 - ...))), x > 1."""
    tail = _backward_fraction(120, lambda k, t: k * (n + k - 1) / (x + n + 2 * k - t), x)
    return exp(-x) / (x + n - tail)


def _en(n: Any, x: Any) -> Any:
    small = x <= 1
    safe_n = where(n >= 1, n, const(n, 1))
    series = _en_series(safe_n, where(small & (x > 0), x, const(x, 0.5)))
    fraction = _en_fraction(safe_n, where(small | isinf(x), const(x, 2), x))
    out = where(small, series, fraction)
    at_zero = where(n <= 1, const(x, np.inf), 1 / where(n <= 1, const(n, 2), n - 1))
    out = where(x == 0, at_zero, where(isinf(x), const(x, 0), out))
    zeroth = exp(-x) / x
    out = where(n == 0, zeroth, out)
    bad = (x < 0) | (n < 0) | (n != floor(n)) | isnan(x) | isnan(n)
    return where(bad, const(x, np.nan), out)


@custom_jvp
def _expn(n: Any, x: Any) -> Any:
    return _en(n, x)


_expn.defjvps(None, lambda g, ans, n, x: -_en(n - 1, x) * g)


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral E_n(x) = integral_1^inf exp(-x t) / t^n dt.

    A series (A&S 5.1.12) up to x = 1, a 120-level continued fraction beyond; nan for
    n < 0, non-integer n or x < 0. d/dx E_n = -E_(n-1); n is not differentiated (as JAX).

    Args:
      n: integer-valued array.
      x: real array, broadcast against n.

    Returns:
      E_n(x).

    >>> round(float(expn(1, 1.0)), 12)
    0.219383934396
    """
    n, x = real_float("special.expn", n, x)
    return _expn(n, x)


# ----------------------------------------------------------------------------- Si, Ci


def _sici_series(x: Any) -> tuple[Any, Any]:
    """Si and Ci - log|x| - gamma by their power series, for |x| <= 4."""
    x2 = x * x
    si, ci = x, const(x, 0)
    term = x  # (-1)^k x^(2k+1) / (2k+1)!
    for k in range(1, 18):
        term = term * (-x2) / ((2 * k) * (2 * k + 1))
        si = si + term / (2 * k + 1)
        ci = ci + term * (2 * k + 1) / (x * 2 * k)
    return si, ci


def _sici_fraction(x: Any) -> tuple[Any, Any]:
    """E1(ix) = exp(-ix) / (ix + 1 - 1 / (ix + 3 - 4 / (ix + 5 - ...))) for x >= 4 in real
    pairs (60 levels); then Si = pi/2 + Im E1(ix), Ci = -Re E1(ix)."""
    def level(k, t):
        tr, ti = t
        a, b = 2 * k + 1 - tr, x - ti
        scale = k * k / (a * a + b * b)
        return scale * a, -scale * b

    tr, ti = _backward_fraction(60, level, x, parts=2)
    a, b = 1 - tr, x - ti  # E1(ix) = exp(-ix) / (a + ib)
    norm = a * a + b * b
    qr, qi = a / norm, -b / norm
    c, s = cos(x), sin(x)
    er, ei = c * qr + s * qi, c * qi - s * qr
    return _PI / 2 + ei, -er


@custom_jvp
def _sici(x: Any) -> tuple[Any, Any]:
    ax = abs_(x)
    small = ax <= 4
    safe_small = where(small & (ax > 0), ax, const(x, 1))
    si_s, ci_s = _sici_series(safe_small)
    ci_s = ci_s + _EULER + log(safe_small)
    si_f, ci_f = _sici_fraction(where(small | isinf(ax), const(x, 5), ax))
    si = where(small, si_s, si_f)
    ci = where(small, ci_s, ci_f)
    si = where(ax == 0, const(x, 0), where(isinf(ax), const(x, _PI / 2), si))
    ci = where(ax == 0, const(x, -np.inf), where(isinf(ax), const(x, 0), ci))
    ci = where(x == -np.inf, const(x, np.nan), ci)
    return sign(x) * si, ci


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    si, ci = _sici(x)
    safe = where(x == 0, const(x, 1), x)
    return (si, ci), (where(x == 0, const(x, 1), sin(x) / safe) * x_dot, cos(x) / x * x_dot)


def sici(x: Any) -> tuple[Any, Any]:
    """The sine and cosine integrals Si(x) = integral_0^x sin t / t dt and
    Ci(x) = gamma + log|x| + integral_0^x (cos t - 1) / t dt (scipy's real Ci for x < 0).

    Power series up to |x| = 4, the continued fraction of E1(ix) beyond.
    jvp: (sin x / x, cos x / x).

    Args:
      x: real array.

    Returns:
      (Si(x), Ci(x)).

    >>> [round(float(v), 12) for v in sici(1.0)]
    [0.946083070367, 0.337403922901]
    """
    return _sici(*real_float("special.sici", x))


# ----------------------------------------------------------------------------- Fresnel


def _half_pi_square_phase(x: Any) -> tuple[Any, Any]:
    """cos and sin of pi x^2 / 2 with x^2 reduced mod 4 exactly (Dekker's product)."""
    split = const(x, 134217729.0 if dtype_of(x) == np.float64 else 4097.0)
    c = x * split
    hi_x = c - (c - x)
    lo_x = x - hi_x
    square = x * x
    error = ((hi_x * hi_x - square) + 2 * hi_x * lo_x) + lo_x * lo_x
    phase = (fmod(square, const(x, 4)) + error) * (_PI / 2)
    return cos(phase), sin(phase)


def _fresnel_series(x: Any) -> tuple[Any, Any]:
    """S and C by their power series, for |x| <= 1.8."""
    t = (_PI / 2) * x * x
    term = x  # (-1)^k t^(2k) x / (2k)! for C, then t^(2k+1) x / (2k+1)! for S
    c_sum, s_sum = const(x, 0), const(x, 0)
    for k in range(0, 18):
        c_sum = c_sum + term / (4 * k + 1)
        term = term * t / (2 * k + 1)
        s_sum = s_sum + term / (4 * k + 3)
        term = -term * t / (2 * k + 2)
    return s_sum, c_sum


def _fresnel_fraction(x: Any) -> tuple[Any, Any]:
    """C + iS = (1 + i)/2 (1 - erfc(z)), z = sqrt(pi)/2 (1 - i) x, with erfc(z) =
    exp(-z^2) / sqrt(pi) / (z + 1/2 / (z + 1 / (z + 3/2 / ...))) (80 levels), x >= 1.8."""
    u = x * (math.sqrt(_PI) / 2)

    def level(k, t):
        tr, ti = t
        a, b = u + tr, -u + ti
        scale = (k / 2) / (a * a + b * b)
        return scale * a, -scale * b

    tr, ti = _backward_fraction(80, level, x, parts=2)
    a, b = u + tr, -u + ti
    norm = math.sqrt(_PI) * (a * a + b * b)
    qr, qi = a / norm, -b / norm
    c, s = _half_pi_square_phase(x)
    er, ei = c * qr - s * qi, c * qi + s * qr
    return 0.5 * (1 - er - ei), 0.5 * (1 - er + ei)


@custom_jvp
def _fresnel(x: Any) -> tuple[Any, Any]:
    ax = abs_(x)
    small = ax <= 1.8
    s_s, c_s = _fresnel_series(where(small, ax, const(x, 1)))
    s_f, c_f = _fresnel_fraction(where(small | isinf(ax), const(x, 2), ax))
    s = where(small, s_s, where(isinf(ax), const(x, 0.5), s_f))
    c = where(small, c_s, where(isinf(ax), const(x, 0.5), c_f))
    return sign(x) * s, sign(x) * c


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    c, s = _half_pi_square_phase(x)
    return _fresnel(x), (s * x_dot, c * x_dot)


def fresnel(x: Any) -> tuple[Any, Any]:
    """The Fresnel integrals S(x) = integral_0^x sin(pi t^2 / 2) dt and C(x) (cos), in
    scipy's order (S, C).

    Power series up to |x| = 1.8, the continued fraction of erfc beyond (its phase pi x^2/2
    reduced exactly). jvp: (sin(pi x^2 / 2), cos(pi x^2 / 2)).

    Args:
      x: real array.

    Returns:
      (S(x), C(x)).

    >>> [round(float(v), 12) for v in fresnel(1.0)]
    [0.43825914739, 0.779893400377]
    """
    return _fresnel(*real_float("special.fresnel", x))


# ----------------------------------------------------------------------------- spence


def _li2_coefficients(count: int) -> list[float]:
    """B_n / (n + 1)!: Li2(y) = sum_n B_n u^(n+1) / (n+1)!, u = -log(1 - y)."""
    bern = lax_special.bernoulli_numbers(count)
    return [float(b / Fraction(math.factorial(n + 1))) for n, b in enumerate(bern)]


_LI2 = _li2_coefficients(30)


def _li2_near(u: Any) -> Any:
    """Li2(1 - e^-u) for |u| <= log 2, by the Bernoulli series (Horner form)."""
    total = const(u, 0)
    for coefficient in reversed(_LI2):
        total = total * u + coefficient
    return total * u


@custom_jvp
def _spence(x: Any) -> Any:
    # spence(x) = Li2(1 - x); u-series around y = 1 - x in [-1, 1/2], reflections elsewhere
    mid = (x >= 0.5) & (x <= 2)
    low = x < 0.5
    safe_mid = where(mid, x, const(x, 1))
    value_mid = _li2_near(-log(safe_mid))
    safe_low = where(low & (x > 0), x, const(x, 0.25))
    value_low = (_PI ** 2 / 6 - log(safe_low) * log1p(-safe_low)
                 - _li2_near(-log1p(-safe_low)))
    safe_high = where(x > 2, x, const(x, 3))
    log_y = log(safe_high - 1)
    value_high = -_PI ** 2 / 6 - 0.5 * log_y * log_y - _li2_near(-log1p(1 / (safe_high - 1)))
    out = where(mid, value_mid, where(low, value_low, value_high))
    out = where(x == 0, const(x, _PI ** 2 / 6), out)
    return where((x < 0) | isinf(x) | isnan(x), const(x, np.nan), out)


_spence.defjvps(lambda g, ans, x: g * where(
    x == 1, const(x, -1), log(x) / (1 - where(x == 1, const(x, 0), x))))


def spence(x: Any) -> Any:
    """Spence's function (scipy's convention) integral_1^x log t / (1 - t) dt = Li2(1 - x).

    The Bernoulli series of the dilogarithm in u = -log(1 - y), with the reflection and
    inversion formulas outside y in [-1, 1/2]; nan for x < 0 and x = inf.
    jvp: log(x) / (1 - x).

    Args:
      x: real array.

    Returns:
      spence(x).

    >>> abs(float(spence(1.0)))
    0.0
    """
    return _spence(*real_float("special.spence", x))
