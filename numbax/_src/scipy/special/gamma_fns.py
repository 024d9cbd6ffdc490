"""numbax.scipy.special's gamma family: gamma and its logs, beta, incomplete gamma and beta,
factorials, Pochhammer, polygamma, Hurwitz zeta and the Bernoulli numbers."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import special as lax_special
from numbax._src.numpy import lax_numpy
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import (
    cos,
    exp,
    expm1,
    floor,
    isnan,
    log,
    log1p,
    maximum,
    minimum,
    signbit,
    sin,
)
from numbax._src.scipy.special.args import (
    const,
    dtype_of,
    inexact,
    nonnegative_int,
    real_float,
    static_int,
)

__all__ = [
    "bernoulli", "beta", "betainc", "betaln", "comb", "digamma", "factorial", "gamma",
    "gammainc", "gammaincc", "gammaln", "gammasgn", "loggamma", "multigammaln", "poch",
    "polygamma", "zeta",
]


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|.

    Args:
      x: real array.

    Returns:
      log|Gamma(x)| (inf at the poles and at -inf, as in JAX).

    >>> round(float(gammaln(5.0)), 10) == round(math.log(24.0), 10)
    True
    """
    (x,) = real_float("special.gammaln", x)
    return where(x == -np.inf, const(x, np.inf), lax.lgamma(x))


def _gammasgn(x: Any) -> Any:
    floor_x = floor(x)
    negative = x < 0
    nan_at = (negative & (x == floor_x)) | isnan(x)
    minus_at = (negative & (floor_x % 2 != 0)) | ((x == 0) & signbit(x))
    return where(nan_at, const(x, np.nan), where(minus_at, const(x, -1), const(x, 1)))


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x): -1 on (-2k-1, -2k) and at -0.0, nan at the poles and nan.

    Args:
      x: real array.

    Returns:
      +1, -1 or nan.

    >>> float(gammasgn(-0.5))
    -1.0
    """
    return _gammasgn(*real_float("special.gammasgn", x))


def gamma(x: Any) -> Any:
    """The gamma function: gammasgn(x) * exp(gammaln(x)) for real x (nan at the poles, as
    JAX); exp(loggamma(z)) for complex z (nan+nanj at the poles).

    Args:
      x: real or complex array.

    Returns:
      Gamma(x), of x's (inexact) dtype.

    >>> round(float(gamma(5.0)), 9)
    24.0
    """
    (x,) = inexact("special.gamma", x)
    if kind_of(dtype_of(x)) == "c":
        return where(_complex_pole(x), const(x, complex(np.nan, np.nan)),
                     exp(_complex_loggamma(x)))
    return _gammasgn(x) * exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """The principal branch of log Gamma: gammaln for real x > 0 and nan for x <= 0; for
    complex z the analytic continuation cut along the negative real axis (approached from
    above when Im z is +-0, as JAX).

    Args:
      x: real or complex array.

    Returns:
      log Gamma(x).

    >>> float(loggamma(1.0))
    0.0
    """
    (x,) = inexact("special.loggamma", x)
    if kind_of(dtype_of(x)) == "c":
        return where(_complex_pole(x), const(x, complex(np.nan, np.nan)), _complex_loggamma(x))
    return where(x > 0, lax.lgamma(x), const(x, np.nan))


def _complex_pole(z: Any) -> Any:
    """The poles 0, -1, -2, ... and the non-finite points (nan+nanj there, as JAX)."""
    re, im = lax.real(z), lax.imag(z)
    pole = (im == 0) & (re <= 0) & (re == floor(re))
    return pole | ~lax.is_finite(re) | ~lax.is_finite(im)


def _loggamma_right(w: Any) -> Any:
    """loggamma for Re w >= 1/2: Stirling's series at w + 10, then the recurrence
    loggamma(w) = loggamma(w + 10) - sum_k log(w + k) (no branch cut is crossed)."""
    u = w + 10
    bern = lax_special.bernoulli_numbers(16)
    inv = 1 / u
    inv2 = inv * inv
    series = const(u, 0)
    for k in range(8, 0, -1):
        series = series * inv2 + float(bern[2 * k] / (2 * k * (2 * k - 1)))
    value = (u - 0.5) * log(u) - u + 0.5 * math.log(2 * math.pi) + series * inv
    for k in range(10):
        value = value - log(w + k)
    return value


def _complex_loggamma(z: Any) -> Any:
    """Principal loggamma: the upper half plane (Im z >= 0, -0 included) directly, the lower
    by conjugation; left of Re z = 1/2 through the reflection formula with the branch of
    log sin(pi z) = -i pi z + log(i/2) + log(1 - exp(2 i pi z)), continuous in the upper
    half plane (which makes the formula exact there, with no 2 pi i correction)."""
    flip = lax.imag(z) < 0
    z = where(flip, lax.conj(z), z)
    left = lax.real(z) < 0.5
    w = where(left, 1 - z, z)
    right = _loggamma_right(w)
    log_sinpi = (-1j * math.pi * z + complex(-math.log(2), math.pi / 2)
                 + log(_one_minus_exp_2i_pi(z)))
    value = where(left, math.log(math.pi) - log_sinpi - right, right)
    re = lax.real(z)
    positive_real = (lax.imag(z) == 0) & (re > 0)
    value = where(positive_real, lax.complex_(lax.lgamma(where(positive_real, re, 1.0)),
                                              lax.imag(z) * 0), value)
    return where(flip, lax.conj(value), value)


def _one_minus_exp_2i_pi(z: Any) -> Any:
    """1 - exp(2 i pi z), accurate next to the integers: with x = n + f (n = round(x)),
    sin(pi x) = (-1)^n sin(pi f) exactly reduced, and 1 - cos(2 pi x) = 2 sin(pi x)^2."""
    x, y = lax.real(z), lax.imag(z)
    n = lax.round(x)
    parity = 1 - 2 * (n - 2 * floor(n / 2))
    sin_pi = parity * sin(math.pi * (x - n))
    cos_pi = parity * cos(math.pi * (x - n))
    cos_2pi, sin_2pi = 1 - 2 * sin_pi * sin_pi, 2 * sin_pi * cos_pi
    a = -2 * math.pi * y
    return lax.complex_(-expm1(a) * cos_2pi + 2 * sin_pi * sin_pi, -exp(a) * sin_2pi)


def digamma(x: Any) -> Any:
    """d/dx log Gamma(x).

    Args:
      x: real array.

    Returns:
      psi(x); nan at the poles 0, -1, -2, ... (as in JAX).

    >>> round(float(digamma(1.0)), 6)
    -0.577216
    """
    (x,) = real_float("special.digamma", x)
    return lax.digamma(x)  # (nan at its poles, 0 included, as JAX's)


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma, psi^(n)(x).

    Args:
      n: integer-dtype array (the order).
      x: real array, broadcast against n.

    Returns:
      psi^(n)(x), differentiable in x.

    >>> round(float(polygamma(1, 1.0)), 12) == round(math.pi ** 2 / 6, 12)
    True
    """
    n_dtype = (np.dtype(dtypes.python_scalar_dtype(n)) if isinstance(n, (bool, int, float))
               else dtype_of(lax_numpy.asarray(n)))
    if kind_of(n_dtype) not in "iu":
        raise NumbaxValueError(
            f"numbax.scipy.special.polygamma: n has dtype {n_dtype}, expected an integer "
            "dtype. Pass the order as an int array.")
    n, x = real_float("special.polygamma", n, x)
    return lax.polygamma(n, x)


# ----------------------------------------------------------------------------- beta


def _lgamma_correction(x: Any) -> Any:
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2) for x >= 10, by Stirling's series."""
    bern = lax_special.bernoulli_numbers(14)
    inv = 1 / x
    inv2 = inv * inv
    total = const(x, 0)
    for k in range(7, 0, -1):
        total = total * inv2 + float(bern[2 * k] / (2 * k * (2 * k - 1)))
    return total * inv


def _betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)|; when the larger argument is >= 10, lgamma(hi) - lgamma(lo + hi) comes
    from Stirling's series, so the large terms cancel analytically instead of in rounding."""
    lo, hi = minimum(a, b), maximum(a, b)
    direct = lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)
    large = (hi >= 10) & (lo > 0)
    safe_hi = where(large, hi, const(hi, 10))
    safe_lo = where(large, lo, const(lo, 1))
    total = safe_lo + safe_hi
    ratio = (-(safe_hi - 0.5) * log1p(safe_lo / safe_hi) - safe_lo * log(total) + safe_lo
             + _lgamma_correction(safe_hi) - _lgamma_correction(total))
    return where(large, lax.lgamma(safe_lo) + ratio, direct)


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = log|Gamma(a) Gamma(b) / Gamma(a + b)|.

    Args:
      a, b: real arrays, broadcast together.

    Returns:
      log|B(a, b)|.

    >>> round(float(betaln(1.0, 1.0)), 12)
    0.0
    """
    return _betaln(*real_float("special.betaln", a, b))


def beta(a: Any, b: Any) -> Any:
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b).

    Args:
      a, b: real arrays, broadcast together.

    Returns:
      B(a, b).

    >>> round(float(beta(2.0, 3.0)), 12)
    0.083333333333
    """
    a, b = real_float("special.beta", a, b)
    sign = _gammasgn(a) * _gammasgn(b) * _gammasgn(a + b)
    return sign * exp(_betaln(a, b))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b).

    Args:
      a, b: positive real arrays; x: real array in [0, 1]; all broadcast together.

    Returns:
      I_x(a, b); differentiable in x (d/da, d/db raise ValueError as in JAX).

    >>> float(betainc(1.0, 1.0, 0.25))
    0.25
    """
    return lax_special.betainc(*real_float("special.betainc", a, b, x))


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x).

    Args:
      a: positive real array; x: non-negative real array, broadcast together.

    Returns:
      P(a, x), differentiable in both arguments.

    >>> round(float(gammainc(1.0, 1.0)), 12) == round(1 - math.exp(-1), 12)
    True
    """
    return lax_special.igamma(*real_float("special.gammainc", a, x))


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    Args:
      a: positive real array; x: non-negative real array, broadcast together.

    Returns:
      Q(a, x), differentiable in both arguments.

    >>> round(float(gammaincc(1.0, 1.0)), 12) == round(math.exp(-1), 12)
    True
    """
    return lax_special.igammac(*real_float("special.gammaincc", a, x))


# ----------------------------------------------------------------------------- factorials


def factorial(n: Any, exact: bool = False) -> Any:
    """n! = Gamma(n + 1) as a float (0 for n < 0).

    Args:
      n: real array.
      exact: only False is supported (NotImplementedError otherwise, as in JAX).

    Returns:
      The factorials.

    >>> round(float(factorial(5)), 9)
    120.0
    """
    if exact:
        raise NotImplementedError("numbax.scipy.special.factorial: exact=True is not "
                                  "supported (as in JAX); use exact=False.")
    (n,) = real_float("special.factorial", n)
    return where(n < 0, const(n, 0), exp(lax.lgamma(n + 1)))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803 (scipy's name)
    """N choose k as a float, 0 outside 0 <= k <= N (with repetition: N + k - 1 choose k).

    Args:
      N: real array, the number of things.
      k: real array, the number taken.
      repetition: count combinations with repetition.

    Returns:
      The binomial coefficients.

    >>> round(float(comb(5, 2)), 9)
    10.0
    """
    N, k = real_float("special.comb", N, k)
    return _comb(N, k, repetition)


def _comb(N: Any, k: Any, repetition: bool) -> Any:  # noqa: N803
    if repetition:
        return where((k == 0) & (N >= 0), const(N, 1), _comb(N + k - 1, k, False))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = where(ok, N, const(N, 0)), where(ok, k, const(k, 0))
    value = exp(lax.lgamma(safe_n + 1) - lax.lgamma(safe_k + 1) - lax.lgamma(safe_n + 1 - safe_k))
    return where(ok, value, const(N, 0))


@custom_jvp
def _poch(z: Any, m: Any) -> Any:
    sign = _gammasgn(z + m) * _gammasgn(z)
    ratio = sign * exp(lax.lgamma(z + m) - lax.lgamma(z))
    return where(m == 0, const(z, 1), ratio)


_poch.defjvps(
    lambda g, ans, z, m: g * (lax.digamma(z + m) - lax.digamma(z)) * ans,
    lambda g, ans, z, m: g * lax.digamma(z + m) * ans,
)


def poch(z: Any, m: Any) -> Any:
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z), 1 at m == 0.

    Computed as a ratio of exp(gammaln) with the signs of both gammas, so it stays finite
    where Gamma(z + m) alone overflows; nan where z or z + m is a pole (as JAX).

    Args:
      z: real array.
      m: real array, broadcast against z.

    Returns:
      (z)_m, with JAX's derivatives (digamma differences times the value).

    >>> round(float(poch(3.0, 2.0)), 9)
    12.0
    """
    return _poch(*real_float("special.poch", z, m))


def multigammaln(a: Any, d: Any) -> Any:
    """log of the multivariate gamma function: d(d-1)/4 log(pi) + sum_j gammaln(a - j/2).

    Args:
      a: real array.
      d: the dimension, a concrete positive int.

    Returns:
      log Gamma_d(a).

    >>> round(float(multigammaln(2.0, 1)), 12)
    0.0
    """
    d = static_int("special.multigammaln", "d", d)
    if d < 1:
        raise NumbaxValueError(
            f"numbax.scipy.special.multigammaln: d is {d}, expected a positive integer.")
    (a,) = real_float("special.multigammaln", a)
    total = const(a, 0.25 * d * (d - 1) * math.log(math.pi))
    for j in range(d):
        total = total + lax.lgamma(a - 0.5 * j)
    return total


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function sum_n (n + q)^-x.

    Args:
      x: real array, the exponent.
      q: real array, the shift; None (the Riemann zeta) raises NotImplementedError, as
        in JAX.

    Returns:
      zeta(x, q), differentiable in both arguments.

    >>> round(float(zeta(2.0, 1.0)), 12) == round(math.pi ** 2 / 6, 12)
    True
    """
    if q is None:
        raise NotImplementedError(
            "numbax.scipy.special.zeta: the Riemann zeta function (q=None) is not "
            "implemented, as in JAX; pass q=1.0 for it.")
    return lax_special.zeta(*real_float("special.zeta", x, q))


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), exact up to the float's rounding.

    Unlike JAX: computed exactly (rational arithmetic) rather than from a truncated series.

    Args:
      n: a concrete non-negative int.

    Returns:
      A float array of length n + 1.

    >>> [float(b) for b in bernoulli(2)]
    [1.0, -0.5, 0.16666666666666666]
    """
    n = nonnegative_int("special.bernoulli", "n", n)
    values = [float(b) for b in lax_special.bernoulli_numbers(n)]
    return lax_numpy.asarray(np.array(values, dtype=dtypes.default_float_dtype()))

