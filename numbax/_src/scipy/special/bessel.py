"""numbax.scipy.special's Bessel and spherical functions: i0, i0e, i1, i1e (on lax's scaled
Bessel primitives), bessel_jn (Miller's backward recurrence) and sph_harm_y."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import special as lax_special
from numbax._src.lax.control_flow.loops import scan
from numbax._src.numpy import lax_numpy, shapes
from numbax._src.numpy.creation import full_like
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import cos, exp, sin, sqrt
from numbax._src.scipy.special.args import (
    const,
    dtype_of,
    nonnegative_int,
    real_float,
    static_int,
)

__all__ = ["bessel_jn", "i0", "i0e", "i1", "i1e", "sph_harm_y"]


def i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x).

    Args:
      x: real array.

    Returns:
      i0e(x).

    >>> float(i0e(0.0))
    1.0
    """
    return lax_special.bessel_i0e(*real_float("special.i0e", x))


def i0(x: Any) -> Any:
    """The modified Bessel function of order 0, exp(|x|) i0e(x).

    Args:
      x: real array.

    Returns:
      I0(x).

    >>> float(i0(0.0))
    1.0
    """
    (x,) = real_float("special.i0", x)
    return exp(abs_(x)) * lax_special.bessel_i0e(x)


def i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x).

    Args:
      x: real array.

    Returns:
      i1e(x).

    >>> float(i1e(0.0))
    0.0
    """
    return lax_special.bessel_i1e(*real_float("special.i1e", x))


def i1(x: Any) -> Any:
    """The modified Bessel function of order 1, exp(|x|) i1e(x).

    Args:
      x: real array.

    Returns:
      I1(x).

    >>> float(i1(0.0))
    0.0
    """
    (x,) = real_float("special.i1", x)
    return exp(abs_(x)) * lax_special.bessel_i1e(x)


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """Bessel functions of the first kind J_0(z) .. J_v(z) by Miller's backward recurrence
    f_k = 2 (k + 1) / z f_(k+1) - f_(k+2) from k = n_iter, normalised by
    J_0 + 2 sum_k J_(2k) = 1 (Zhang & Jin, Computation of Special Functions, 1996).

    Args:
      z: real array.
      v: the highest order, a concrete non-negative int.
      n_iter: the recurrence's starting order; the result is accurate when
        0.5 log10(6.28 + n_iter) - n_iter log10(1.36 + |z| / n_iter) > 20.

    Returns:
      An array of shape (v + 1, *z.shape).

    >>> round(float(bessel_jn(1.0, v=0)[0]), 12)
    0.765197686558
    """
    v = nonnegative_int("special.bessel_jn", "v", v)
    n_iter = nonnegative_int("special.bessel_jn", "n_iter", n_iter)
    if v > n_iter:
        raise NumbaxValueError(
            f"numbax.scipy.special.bessel_jn: v is {v}, larger than n_iter = {n_iter}. "
            "Raise n_iter above v.")
    (z,) = real_float("special.bessel_jn", z)
    dtype = dtype_of(z)

    def step(carry, k):
        f_next2, f_next, total = carry
        f = 2 * (k + 1) * f_next / z - f_next2
        even = lax.convert_element_type(lax_numpy.asarray(k % 2 == 0), dtype)
        return (f_next, f, total + 2 * even * f), f

    init = (full_like(z, 0), full_like(z, 1e-16), full_like(z, 0))
    ks = lax_numpy.asarray(np.arange(n_iter + 1, dtype=dtype))
    (_, _, total), values = scan(step, init, ks, reverse=True)
    return values[:v + 1] / (total - values[0])


# ----------------------------------------------------------------------------- sph_harm_y


def _normalized_legendre(n: Any, m_abs: Any, x: Any, n_max: int) -> Any:
    """The orthonormal associated Legendre function sqrt((2n+1)/(4 pi) (n-m)!/(n+m)!)
    P_n^m(x), with the Condon-Shortley phase, by the standard stable recurrences in the
    degree: first along the diagonal P_m^m, then upwards in n at fixed m."""
    sin_theta = sqrt(1 - x * x)
    diagonal = full_like(x, 1 / math.sqrt(4 * math.pi))
    p_mm = where(m_abs == 0, diagonal, const(x, 0))
    for k in range(1, n_max + 1):
        diagonal = -math.sqrt((2 * k + 1) / (2 * k)) * sin_theta * diagonal
        p_mm = where(m_abs == k, diagonal, p_mm)
    # P_(m+1)^m = sqrt(2m + 3) x P_m^m, then the three-term recurrence in the degree
    m = lax.convert_element_type(m_abs, dtype_of(x))
    prev, cur = const(x, 0), p_mm
    result = where(n == m_abs, p_mm, const(x, 0))
    for degree in range(1, n_max + 1):
        d = float(degree)
        active = m_abs < degree
        safe_den = where(active, d * d - m * m, const(x, 1))
        a = sqrt((4 * d * d - 1) / safe_den)
        prev_den = where(m_abs < degree - 1, (d - 1) * (d - 1) - m * m, const(x, 1))
        b = where(m_abs < degree - 1, sqrt(prev_den / (4 * (d - 1) * (d - 1) - 1)), const(x, 0))
        new = a * (x * cur - b * prev)
        prev, cur = where(active, cur, prev), where(active, new, cur)
        result = where(active & (n == degree), cur, result)
    return result


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None,
               n_max: int | None = None) -> Any:
    """Spherical harmonics Y_n^m(theta, phi) = N P_n^|m|(cos theta) exp(i m phi), with
    Y_n^-m = (-1)^m conj(Y_n^m); theta is the polar angle, phi the azimuth (scipy's order).

    Args:
      n: integer array, the degree (>= 0).
      m: integer array, the order (|m| <= n; other values give 0).
      theta: real array, the colatitude in [0, pi].
      phi: real array, the longitude.
      diff_n: not supported (NotImplementedError, as in JAX).
      n_max: the largest degree, a concrete int; max(n) when not given (n must then be
        concrete). Degrees above n_max give 0.

    Returns:
      A complex array of the broadcast shape (1-D when theta is a scalar, as in JAX).

    >>> round(float(sph_harm_y(0, 0, 0.3, 0.1).real[0]), 12)
    0.282094791774
    """
    if diff_n is not None:
        raise NotImplementedError(
            "numbax.scipy.special.sph_harm_y: diff_n is not supported (as in JAX).")
    for name, value in (("n", n), ("m", m)):
        kind = kind_of(np.dtype(type(value))) if isinstance(value, (int, float)) else None
        dt = np.dtype(kind) if kind else dtype_of(lax_numpy.asarray(value))
        if kind_of(dt) not in "iu":
            raise NumbaxTypeError(
                f"numbax.scipy.special.sph_harm_y: {name} has dtype {dt}, expected an "
                "integer dtype. Pass integer degrees and orders.")
    if n_max is None:
        if isinstance(n, core.Tracer):
            raise NumbaxValueError(
                "numbax.scipy.special.sph_harm_y: n is traced, so n_max must be given (a "
                "concrete int bounding n).")
        n_max = int(np.max(np.asarray(n)))
    n_max = static_int("special.sph_harm_y", "n_max", n_max)
    if np.ndim(theta) == 0 and not isinstance(theta, core.Tracer):
        theta = lax_numpy.asarray(theta)[None]
    theta, phi = real_float("special.sph_harm_y", theta, phi)
    n, m = lax_numpy.asarray(n), lax_numpy.asarray(m)
    n, m, theta, phi = shapes.broadcast_arrays(n, m, theta, phi)
    m_abs = abs_(m)
    legendre = _normalized_legendre(n, m_abs, cos(theta), n_max)
    legendre = where(n <= n_max, legendre, const(theta, 0))
    angle = lax.convert_element_type(m_abs, dtype_of(theta)) * phi
    real, imag = legendre * cos(angle), legendre * sin(angle)
    odd = (m_abs % 2) == 1
    flip = m < 0
    real = where(flip & odd, -real, real)
    imag = where(flip & ~odd, -imag, imag)
    return lax.complex_(real, imag)

