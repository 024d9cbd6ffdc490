"""numbax.scipy.special's normal-distribution functions: ndtr, ndtri, log_ndtr, owens_t."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src.custom_derivatives import custom_jvp
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import arctan, exp, isnan, log, log1p, maximum, minimum, sign, sqrt
from numbax._src.scipy.special.args import const, dtype_of, real_float

__all__ = ["log_ndtr", "ndtr", "ndtri", "owens_t"]

_LOG_SQRT_2PI = float(0.5 * np.log(2.0 * np.pi))
_SQRT_2 = math.sqrt(2.0)


def _ndtr(x: Any) -> Any:
    """0.5 (1 + erf(x / sqrt 2)) near 0, erfc in the tails (no cancellation there)."""
    half_sqrt_2 = const(x, 0.5 * _SQRT_2)
    w = x * half_sqrt_2
    z = abs_(w)
    y = where(z < half_sqrt_2, 1 + lax.erf(w), where(w > 0, 2 - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def ndtr(x: Any) -> Any:
    """The standard normal CDF, via erf near 0 and erfc in the tails.

    Args:
      x: real array.

    Returns:
      P[Z <= x] for a standard normal Z.

    >>> float(ndtr(0.0))
    0.5
    """
    return _ndtr(*real_float("special.ndtr", x))


# ----------------------------------------------------------------------------- log_ndtr


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """The asymptotic series of log(ndtr(x)) for x << -1."""
    x_2 = x * x
    log_scale = -0.5 * x_2 - log(-x) - _LOG_SQRT_2PI
    series = const(x, 1)
    x_2n = x_2
    for n in range(1, series_order + 1):
        term = float(np.prod(np.arange(2 * n - 1, 1, -2))) / x_2n
        series = series - term if n % 2 else series + term
        x_2n = x_2n * x_2
    return log_scale + log(series)


def _log_ndtr_impl(x: Any, series_order: int) -> Any:
    lower, upper = (-20.0, 8.0) if dtype_of(x) == np.float64 else (-10.0, 5.0)
    positive = x > 0
    ndtr_res = _ndtr(where(positive, -x, maximum(x, const(x, lower))))
    tail = _log_ndtr_lower(minimum(x, const(x, lower)), series_order)
    return where(x > upper, -ndtr_res,
                 where(positive, log1p(-ndtr_res), where(x > lower, log(ndtr_res), tail)))


def _make_log_ndtr(series_order: int):
    @custom_jvp
    def fun(x):
        return _log_ndtr_impl(x, series_order)

    @fun.defjvp
    def fun_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        ans = fun(x)
        return ans, t * exp(-0.5 * x * x - _LOG_SQRT_2PI - ans)

    return fun


_LOG_NDTR = {}


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log(ndtr(x)), accurate far into both tails (an asymptotic series below -20).

    Unlike JAX: for 0 < x <= 8 it computes log1p(-ndtr(-x)) instead of log(ndtr(x)), which
    keeps full relative precision as the result approaches 0.

    Its jvp is exp(norm.logpdf(x) - log_ndtr(x)), finite everywhere.

    Args:
      x: float32 or float64 array.
      series_order: terms of the asymptotic series used below -20 (-10 in float32).

    Returns:
      log(ndtr(x)).

    >>> round(float(log_ndtr(-40.0)), 4)
    -804.6084
    """
    if not isinstance(series_order, (int, np.integer)) or not 0 <= series_order <= 30:
        raise NumbaxValueError(
            f"numbax.scipy.special.log_ndtr: series_order is {series_order!r}, expected an "
            "int in [0, 30].")
    (x,) = real_float("special.log_ndtr", x)
    if dtype_of(x) not in (np.float32, np.float64):
        raise NumbaxTypeError(
            f"numbax.scipy.special.log_ndtr: x has dtype {dtype_of(x)}, expected float32 or "
            "float64.")
    series_order = int(series_order)
    if series_order not in _LOG_NDTR:
        _LOG_NDTR[series_order] = _make_log_ndtr(series_order)
    return _LOG_NDTR[series_order](x)


# ----------------------------------------------------------------------------- ndtri


def _ndtri_lower(p: Any) -> Any:
    """ndtri for p <= 1/2: Abramowitz & Stegun 26.2.23 as the start (error < 4.5e-4), then
    Newton's method on log(ndtr(x)) = log(p), which converges quadratically (log ndtr is
    concave) and keeps relative accuracy down to the smallest p."""
    t = sqrt(-2 * log(p))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    log_p = log(p)
    for _ in range(4):
        log_cdf = _log_ndtr_impl(x, 12)
        x = x - (log_cdf - log_p) * exp(log_cdf + 0.5 * x * x + _LOG_SQRT_2PI)
    return x


@custom_jvp
def _ndtri(p: Any) -> Any:
    central = (p >= 0.05) & (p <= 0.95)
    middle = _SQRT_2 * lax.erf_inv(2 * where(central, p, const(p, 0.5)) - 1)
    q = where(p > 0.5, 1 - p, p)
    tail = _ndtri_lower(where(central | (q <= 0) | isnan(q), const(p, 0.01), q))
    tail = where(p > 0.5, -tail, tail)
    out = where(central, middle, tail)
    out = where(p == 0, const(p, -np.inf), where(p == 1, const(p, np.inf), out))
    return where((p < 0) | (p > 1) | isnan(p), const(p, np.nan), out)


_ndtri.defjvps(lambda g, ans, p: g * math.sqrt(2 * math.pi) * exp(0.5 * ans * ans))


def ndtri(p: Any) -> Any:
    """The inverse of ndtr.

    sqrt(2) erfinv(2p - 1) for p in [0.05, 0.95]; in the tails, Newton's method on
    log(ndtr(x)) = log(p) from Abramowitz & Stegun's 26.2.23, accurate to the smallest p.
    -inf at 0, inf at 1, nan outside [0, 1]. jvp: sqrt(2 pi) exp(x^2 / 2).

    Args:
      p: real array of probabilities.

    Returns:
      x with ndtr(x) = p.

    >>> float(ndtri(0.5))
    0.0
    """
    return _ndtri(*real_float("special.ndtri", p))


# ----------------------------------------------------------------------------- owens_t

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)
_GL_NODES = (_GL_NODES + 1) / 2
_GL_WEIGHTS = _GL_WEIGHTS / (4 * np.pi)  # the 1/(2 pi) of T and the half-interval Jacobian


def _owens_t_quadrature(h: Any, a: Any) -> Any:
    """T(h, a) for 0 <= a <= 1, h >= 0 by 24-point Gauss-Legendre on [0, a * t_max]: the
    integrand exp(-h^2 (1 + u^2) / 2) / (1 + u^2) is negligible past u = 9 / h."""
    ha = h * a
    t_max = where(ha > 9, 9 / where(ha > 9, ha, const(h, 9)), const(h, 1))
    total = None
    for node, weight in zip(_GL_NODES, _GL_WEIGHTS, strict=True):
        u2 = (a * t_max * float(node)) ** 2
        term = float(weight) * exp(-0.5 * h * h * (1 + u2)) / (1 + u2)
        total = term if total is None else total + term
    return a * t_max * total


@custom_jvp
def _owens_t(h: Any, a: Any) -> Any:
    h_abs, a_abs = abs_(h), abs_(a)
    reciprocal = a_abs > 1
    small_a = where(reciprocal, 1 / where(reciprocal, a_abs, const(a, 1)), a_abs)
    small_h = where(reciprocal, a_abs * h_abs, h_abs)
    value = _owens_t_quadrature(small_h, small_a)
    value = where(small_h == 0, arctan(small_a) / (2 * np.pi), value)
    # T(h, a) + T(ah, 1/a) = (q1 + q2) / 2 - q1 q2, q1 = ndtr(-h), q2 = ndtr(-ah), h >= 0
    root_2 = const(h, _SQRT_2)
    q1, q2 = lax.erfc(h_abs / root_2), lax.erfc(a_abs * h_abs / root_2)
    near = 0.25 - 0.25 * lax.erf(h_abs / root_2) * lax.erf(a_abs * h_abs / root_2)
    far = 0.25 * (q1 + q2 - q1 * q2)
    value = where(reciprocal, where(a_abs * h_abs <= 0.67, near, far) - value, value)
    return where(isnan(h) | isnan(a), const(h, np.nan), sign(a) * value)


def _owens_t_jvp(primals, tangents):
    (h, a), (h_dot, a_dot) = primals, tangents
    d_h = -exp(-0.5 * h * h) * lax.erf(a * h / _SQRT_2) / (2 * math.sqrt(2 * math.pi))
    d_a = exp(-0.5 * (a * a + 1) * h * h) / (2 * math.pi * (a * a + 1))
    return _owens_t(h, a), d_h * h_dot + d_a * a_dot


_owens_t.defjvp(_owens_t_jvp)


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function (1/2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx.

    For |a| <= 1 a 24-point Gauss-Legendre rule on the part of [0, a] where the integrand
    is not negligible; for |a| > 1 the identity T(h, a) = (ndtr(-h) + ndtr(-ah)) / 2 -
    ndtr(-h) ndtr(-ah) - T(ah, 1/a). The jvp uses the closed-form partial derivatives.

    Args:
      h: real array.
      a: real array, broadcast against h.

    Returns:
      T(h, a).

    >>> round(float(owens_t(0.0, 1.0)), 12)
    0.125
    """
    return _owens_t(*real_float("special.owens_t", h, a))
