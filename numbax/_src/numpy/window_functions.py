"""numpy's window functions (bartlett, blackman, hamming, hanning, kaiser) and the modified
Bessel function i0 that kaiser needs, composed from lax ops so they trace and differentiate.

I_nu(x) for nu = 0, 1: for |x| <= 20 the power series sum_k (x^2/4)^k / (k! (k + nu)!) (times
(x/2)^nu), whose terms are all positive, so Horner's rule keeps a few-ulp relative error; past
20 the asymptotic series e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k, with
a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k) (Abramowitz & Stegun 9.7.1).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import static_int, where
from numbax._src.numpy.weak import weak_out

__all__ = ["i0", "bartlett", "blackman", "hamming", "hanning", "kaiser"]

_SWITCH = 20.0
_SERIES_TERMS = 52
_ASYMPTOTIC_TERMS = 24


def _series_coefs(nu: int) -> list[float]:
    return [1.0 / (math.factorial(k) * math.factorial(k + nu)) for k in range(_SERIES_TERMS)]


def _asymptotic_coefs(nu: int) -> list[float]:
    coefs, a = [1.0], 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        a *= -(4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        coefs.append(a)
    return coefs


_COEFS = {nu: (_series_coefs(nu), _asymptotic_coefs(nu)) for nu in (0, 1)}


def _horner(coefs: list[float], y: Any) -> Any:
    dtype = get_aval(y).dtype
    acc = shape_ops.full(get_aval(y).shape, coefs[-1], dtype)
    for c in coefs[-2::-1]:
        acc = lax.add(lax.mul(acc, y), lax.convert_element_type(c, dtype))
    return acc


def _bessel_i(nu: int, ax: Any) -> Any:
    """I_nu(ax) for ax >= 0 (nu = 0 or 1)."""
    dtype = get_aval(ax).dtype
    series_c, asym_c = _COEFS[nu]
    switch = lax.convert_element_type(_SWITCH, dtype)
    near = lax.le(ax, switch)
    xs = lax.min(ax, switch)
    half = lax.mul(xs, lax.convert_element_type(0.5, dtype))
    series = _horner(series_c, lax.mul(half, half))
    if nu == 1:
        series = lax.mul(series, half)
    xl = lax.max(ax, switch)
    inv = lax.div(lax.convert_element_type(1, dtype), xl)
    scale = lax.rsqrt(lax.mul(xl, lax.convert_element_type(2 * np.pi, dtype)))
    # e^x * scale * sum, with e^x split in two so it overflows only when the result does.
    half_exp = lax.exp(lax.mul(xl, lax.convert_element_type(0.5, dtype)))
    far = lax.mul(lax.mul(half_exp, lax.mul(scale, _horner(asym_c, inv))), half_exp)
    return where(near, series, far)


def _i1(x: Any) -> Any:
    return lax.mul(_bessel_i(1, lax.abs(x)), lax.sign(x))


@custom_jvp
def _i0(x: Any) -> Any:
    return _bessel_i(0, lax.abs(x))


@_i0.defjvp
def _i0_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return _i0(x), lax.mul(_i1(x), t)


@weak_out
def i0(x: Any) -> Any:
    """numpy.i0: the modified Bessel function of the first kind, order 0 (real input).

    Its derivative is i1 (the order-1 function), as in JAX.

    >>> i0(np.array([0.0, 1.0]))
    Array([1.        , 1.26606588], dtype=float64)
    """
    (x,) = ufuncs.promote_dtypes_inexact("i0", x)
    ufuncs.refuse_complex("i0", x)
    return _i0(x)


# ----------------------------------------------------------------------------- windows


def _length(M: Any, api: str) -> int:  # noqa: N803
    return static_int(M, api, "M")


def _centred(M: int) -> Any:  # noqa: N803
    """n = 1 - M, 3 - M, ..., M - 1 (numpy's symmetric window grid), as floats."""
    dtype = dtypes.default_float_dtype()
    return lax.convert_element_type(np.arange(1 - M, M, 2), dtype)


def _cosine_window(api: str, M: Any, coefs: tuple[float, ...]) -> Any:  # noqa: N803
    M = _length(M, api)  # noqa: N806
    dtype = dtypes.default_float_dtype()
    if M < 1:
        return shape_ops.full((0,), 0, dtype)
    if M == 1:
        return shape_ops.full((1,), 1, dtype)
    angle = lax.mul(_centred(M), lax.convert_element_type(np.pi / (M - 1), dtype))
    out = shape_ops.full((M,), coefs[0], dtype)
    for k, c in enumerate(coefs[1:], start=1):
        out = lax.add(out, lax.mul(lax.convert_element_type(c, dtype),
                                   lax.cos(lax.mul(lax.convert_element_type(k, dtype), angle))))
    return out


def bartlett(M: int) -> Any:  # noqa: N803
    """numpy.bartlett: the triangular window of length M.

    >>> bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float64)
    """
    M = _length(M, "bartlett")  # noqa: N806
    dtype = dtypes.default_float_dtype()
    if M < 1:
        return shape_ops.full((0,), 0, dtype)
    if M == 1:
        return shape_ops.full((1,), 1, dtype)
    n = _centred(M)
    ramp = lax.div(n, lax.convert_element_type(M - 1, dtype))
    one = lax.convert_element_type(1, dtype)
    return where(lax.le(n, lax.convert_element_type(0, dtype)), lax.add(one, ramp),
                 lax.sub(one, ramp))


def blackman(M: int) -> Any:  # noqa: N803
    """numpy.blackman: 0.42 + 0.5 cos(pi n / (M-1)) + 0.08 cos(2 pi n / (M-1)),
    n = 1-M, 3-M, ..., M-1.

    Args:
      M: the window length (a static int; M < 1 gives an empty window).

    Returns:
      The window, in the default float dtype.
    """
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M: int) -> Any:  # noqa: N803
    """numpy.hamming: 0.54 + 0.46 cos(pi n / (M-1)), n = 1-M, 3-M, ..., M-1.

    Args:
      M: the window length (a static int; M < 1 gives an empty window).

    Returns:
      The window, in the default float dtype.
    """
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M: int) -> Any:  # noqa: N803
    """numpy.hanning: 0.5 + 0.5 cos(pi n / (M-1)), n = 1-M, 3-M, ..., M-1.

    Args:
      M: the window length (a static int; M < 1 gives an empty window).

    Returns:
      The window, in the default float dtype.
    """
    return _cosine_window("hanning", M, (0.5, 0.5))


def kaiser(M: int, beta: Any) -> Any:  # noqa: N803
    """numpy.kaiser: i0(beta sqrt(1 - (2n/(M-1) - 1)**2)) / i0(beta); beta may be traced.

    >>> kaiser(3, 5.0)
    Array([0.03671089, 1.        , 0.03671089], dtype=float64)
    """
    M = _length(M, "kaiser")  # noqa: N806
    dtype = dtypes.default_float_dtype()
    if M < 1:
        return shape_ops.full((0,), 0, dtype)
    if M == 1:
        return shape_ops.full((1,), 1, dtype)
    (beta,) = ufuncs.promote_dtypes_inexact("kaiser", beta)
    beta = lax.convert_element_type(beta, dtype)
    alpha = (M - 1) / 2.0
    r = lax.convert_element_type((np.arange(M) - alpha) / alpha, dtype)
    arg = lax.mul(beta, lax.sqrt(lax.max(lax.sub(lax.convert_element_type(1, dtype),
                                                 lax.mul(r, r)),
                                         lax.convert_element_type(0, dtype))))
    return lax.div(_i0(arg), _i0(beta))
