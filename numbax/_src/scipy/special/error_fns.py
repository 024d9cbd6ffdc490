"""numbax.scipy.special's error-function family: erf, erfc, erfinv, erfcx, dawsn, wofz."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.custom_derivatives import custom_jvp
from numbax._src.lax import elementwise as lax
from numbax._src.numpy.lax_numpy import round as round_
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import exp, sign
from numbax._src.scipy.special.args import const, dtype_of, inexact, real_float

__all__ = ["dawsn", "erf", "erfc", "erfcx", "erfinv", "wofz"]

_SQRT_PI = float(np.sqrt(np.pi))


def erf(x: Any) -> Any:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt.

    Args:
      x: real array.

    Returns:
      erf(x).

    >>> float(erf(0.0))
    0.0
    """
    return lax.erf(*real_float("special.erf", x))


def erfc(x: Any) -> Any:
    """1 - erf(x), accurate for large x.

    Args:
      x: real array.

    Returns:
      erfc(x).

    >>> float(erfc(0.0))
    1.0
    """
    return lax.erfc(*real_float("special.erfc", x))


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1) (+-inf at +-1, nan outside).

    Args:
      x: real array.

    Returns:
      erfinv(x).

    >>> float(erfinv(0.0))
    0.0
    """
    return lax.erf_inv(*real_float("special.erfinv", x))


# ----------------------------------------------------------------------------- erfcx


def _exp_square(x: Any) -> Any:
    """exp(x^2) without the rounding of x^2: x = hi + lo with hi^2 exact (Dekker's split)."""
    split = const(x, 134217729.0 if dtype_of(x) == np.float64 else 4097.0)
    c = x * split
    hi = c - (c - x)
    return exp(hi * hi) * exp((x - hi) * (x + hi))


@custom_jvp
def _erfcx(x: Any) -> Any:
    huge = const(x, -27.0 if dtype_of(x) == np.float64 else -9.5)  # exp(x^2) overflows
    inside = (x < 2) & (x > huge)
    scaled = _exp_square(where(inside, x, const(x, 0))) * lax.erfc(x)
    scaled = where(x > huge, scaled, const(x, np.inf))
    safe = where(x < 2, const(x, 2), x)
    tail = const(x, 0)
    for k in range(60, 0, -1):  # Laplace's continued fraction, evaluated from the bottom
        tail = (k / 2) / (safe + tail)
    return where(x < 2, scaled, 1 / (_SQRT_PI * (safe + tail)))


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - 2 / _SQRT_PI))


def erfcx(x: Any) -> Any:
    """The scaled complementary error function exp(x^2) * erfc(x).

    Computed as exp(x^2) erfc(x) with x^2 split so that its rounding does not enter below
    x = 2, by Laplace's continued fraction (60 levels) above. jvp: 2 x erfcx(x) - 2/sqrt(pi).

    Args:
      x: real array.

    Returns:
      erfcx(x).

    >>> float(erfcx(0.0))
    1.0
    """
    return _erfcx(*real_float("special.erfcx", x))


# ----------------------------------------------------------------------------- dawsn

_RYBICKI_H = 0.25
_RYBICKI_TERMS = 16


def _dawsn_taylor(x: Any) -> Any:
    """sum_k (-2)^k x^(2k+1) / (2k+1)!!, for |x| < 0.2."""
    total, term = x, x
    for k in range(14):
        term = term * (-2 * x * x) / (2 * k + 3)
        total = total + term
    return total


def _dawsn_rybicki(ax: Any) -> Any:
    """Rybicki's sampling formula F(x) ~ 1/sqrt(pi) sum_(n odd) exp(-(x - n h)^2) / n,
    centred on the even multiple n0 h nearest to x (Rybicki 1989, Computers in Physics 3)."""
    h = _RYBICKI_H
    n0 = 2 * round_(ax / (2 * h))
    xi = ax - n0 * h
    total = None
    for k in range(-2 * _RYBICKI_TERMS + 1, 2 * _RYBICKI_TERMS, 2):
        term = exp(-(xi - k * h) ** 2) / (n0 + k)
        total = term if total is None else total + term
    return total / _SQRT_PI


@custom_jvp
def _dawsn(x: Any) -> Any:
    ax = abs_(x)
    small = ax < 0.2
    large = ax > 1e4
    mid = where(small | large, const(x, 1), ax)
    big = where(large, ax, const(x, 1e4))
    u = 1 / (2 * big * big)
    asymptotic = (1 + u * (1 + 3 * u * (1 + 5 * u))) / (2 * big)
    value = where(large, asymptotic, _dawsn_rybicki(mid))
    return where(small, _dawsn_taylor(where(small, x, const(x, 0))), sign(x) * value)


_dawsn.defjvps(lambda g, ans, x: g * (1 - 2 * x * ans))


def dawsn(x: Any) -> Any:
    """Dawson's integral F(x) = exp(-x^2) * integral_0^x exp(t^2) dt.

    A Taylor series below |x| = 0.2, Rybicki's exponentially convergent sampling formula
    (h = 1/4, 32 terms) up to 1e4, the asymptotic series beyond. jvp: 1 - 2 x F(x).

    Args:
      x: real array.

    Returns:
      dawsn(x).

    >>> round(float(dawsn(1.0)), 12)
    0.538079506913
    """
    return _dawsn(*real_float("special.dawsn", x))


# ----------------------------------------------------------------------------- wofz

_WEIDEMAN_N = 40


def _weideman_coefficients(n: int) -> tuple[float, np.ndarray]:
    """Weideman's (1994, SIAM J. Numer. Anal. 31) expansion of the Faddeeva function in
    powers of (L + iz) / (L - iz): the coefficients are a discrete Fourier transform of
    exp(-t^2) (L^2 + t^2) sampled at t = L tan(theta / 2)."""
    m = 2 * n
    scale = np.sqrt(n / np.sqrt(2.0))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = scale * np.tan(theta / 2)
    samples = np.concatenate([[0.0], np.exp(-t * t) * (scale * scale + t * t)])
    coefficients = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
    return float(scale), coefficients[1:n + 1][::-1]


_WEIDEMAN_L, _WEIDEMAN_A = _weideman_coefficients(_WEIDEMAN_N)


def _wofz_upper(z: Any) -> Any:
    """w(z) for Im z >= 0 by Weideman's rational series."""
    denom = _WEIDEMAN_L - 1j * z
    ratio = (_WEIDEMAN_L + 1j * z) / denom
    poly = const(z, _WEIDEMAN_A[0])
    for coefficient in _WEIDEMAN_A[1:]:
        poly = poly * ratio + complex(coefficient)
    return 2 * poly / (denom * denom) + (1 / _SQRT_PI) / denom


@custom_jvp
def _wofz(z: Any) -> Any:
    upper = lax.imag(z) >= 0
    flipped = where(upper, z, -z)
    w = _wofz_upper(flipped)
    return where(upper, w, 2 * exp(-z * z) - w)


_wofz.defjvps(lambda g, ans, z: g * (-2 * z * ans + 2j / _SQRT_PI))


def wofz(z: Any) -> Any:
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz).

    Weideman's rational expansion (40 terms, relative error about 2e-14) in the upper half
    plane and w(z) = 2 exp(-z^2) - w(-z) below it. jvp: -2 z w(z) + 2i/sqrt(pi).

    Args:
      z: real or complex array (real inputs are promoted to complex).

    Returns:
      A complex array.

    >>> complex(wofz(0.0))
    (1+0j)
    """
    (z,) = inexact("special.wofz", z)
    complex_dtype = np.result_type(dtype_of(z), np.complex64)
    return _wofz(lax.convert_element_type(z, complex_dtype))
