"""numbax.scipy.special: scipy.special's functions on traced arrays, built from the lax
erf/lgamma/digamma/logistic primitives, with JAX's custom derivatives (xlogy, log_ndtr)."""
from __future__ import annotations

from typing import Any

import numpy as np

import numbax.numpy as jnp
from numbax._src import core
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.numpy import special as _special
from numbax._src.numpy import ufuncs

__all__ = [
    "digamma", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr", "logit", "logsumexp",
    "ndtr", "ndtri", "xlog1py", "xlogy",
]


def _real_float(api: str, *args: Any) -> list[Any]:
    """args promoted to one real floating dtype (ints to the default float) and broadcast."""
    for i, x in enumerate(args):
        if not (isinstance(x, (list, tuple)) or core.is_array_like(x)):
            raise NumbaxTypeError(
                f"numbax.scipy.special.{api}: argument {i} has type {type(x).__name__}, "
                "expected an array or a number. Pass a numbax/numpy array or a scalar.")
    promoted = ufuncs.promote_dtypes_inexact(api, *[
        jnp.asarray(x) if isinstance(x, (list, tuple)) else x for x in args])
    dtype = core.get_aval(promoted[0]).dtype
    if dtype.kind == "c":
        raise NumbaxTypeError(
            f"numbax.scipy.special.{api}: arguments have dtype {dtype}, expected a real dtype. "
            "Pass real-valued arrays.")
    if len(promoted) > 1:
        return list(jnp.broadcast_arrays(*promoted))
    return promoted


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a), axis)), stable, with the softmax gradient (scipy's signature).

    >>> float(logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    """
    return _special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                              where=where)


def erf(x: Any) -> Any:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt.

    >>> float(erf(0.0))
    0.0
    """
    return lax.erf(*_real_float("erf", x))


def erfc(x: Any) -> Any:
    """1 - erf(x), accurate for large x.

    >>> float(erfc(0.0))
    1.0
    """
    return lax.erfc(*_real_float("erfc", x))


def erfinv(y: Any) -> Any:
    """The inverse of erf on (-1, 1).

    >>> float(erfinv(0.0))
    0.0
    """
    return lax.erf_inv(*_real_float("erfinv", y))


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|.

    >>> round(float(gammaln(5.0)), 10) == round(float(np.log(24.0)), 10)
    True
    """
    return lax.lgamma(*_real_float("gammaln", x))


def digamma(x: Any) -> Any:
    """d/dx log Gamma(x).

    >>> round(float(digamma(1.0)), 6)
    -0.577216
    """
    return lax.digamma(*_real_float("digamma", x))


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x)).

    >>> float(expit(0.0))
    0.5
    """
    return lax.logistic(*_real_float("expit", x))


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit.

    >>> float(logit(0.5))
    0.0
    """
    (x,) = _real_float("logit", x)
    return jnp.log(x / (1 - x))


@custom_jvp
def _xlogy(x: Any, y: Any) -> Any:
    return jnp.where(x != 0, x * jnp.log(y), jnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlogy(x, y), x_dot * jnp.log(y) + y_dot * x / y


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), defined as 0 where x == 0 (also at y == 0).

    The jvp is JAX's: x_dot * log(y) + y_dot * x / y, so the y-derivative is 0 where x == 0.

    >>> float(xlogy(0.0, 0.0))
    0.0
    """
    return _xlogy(*_real_float("xlogy", x, y))


@custom_jvp
def _xlog1py(x: Any, y: Any) -> Any:
    return jnp.where(x != 0, x * jnp.log1p(y), jnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlog1py(x, y), x_dot * jnp.log1p(y) + y_dot * x / (1 + y)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), defined as 0 where x == 0 (also at y == -1).

    >>> float(xlog1py(0.0, -1.0))
    0.0
    """
    return _xlog1py(*_real_float("xlog1py", x, y))


def _ndtr(x: Any) -> Any:
    dtype = core.get_aval(x).dtype.type
    half_sqrt_2 = dtype(0.5) * np.sqrt(dtype(2.0))
    w = x * half_sqrt_2
    z = jnp.abs(w)
    y = jnp.where(z < half_sqrt_2, dtype(1.0) + lax.erf(w),
                  jnp.where(w > 0, dtype(2.0) - lax.erfc(z), lax.erfc(z)))
    return dtype(0.5) * y


def ndtr(x: Any) -> Any:
    """The standard normal CDF, via erf near 0 and erfc in the tails.

    >>> float(ndtr(0.0))
    0.5
    """
    return _ndtr(*_real_float("ndtr", x))


def ndtri(p: Any) -> Any:
    """The inverse of ndtr: sqrt(2) * erfinv(2p - 1).

    Unlike JAX: computed through erf_inv rather than a rational approximation, so p below
    ~1e-16 (where 2p - 1 rounds to -1) gives -inf.

    >>> float(ndtri(0.5))
    0.0
    """
    (p,) = _real_float("ndtri", p)
    dtype = core.get_aval(p).dtype.type
    return dtype(np.sqrt(2.0)) * lax.erf_inv(dtype(2.0) * p - dtype(1.0))


_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """The asymptotic series of log(ndtr(x)) for x << -1."""
    dtype = core.get_aval(x).dtype.type
    x_2 = jnp.square(x)
    log_scale = -dtype(0.5) * x_2 - jnp.log(-x) - dtype(_LOG_SQRT_2PI)
    series = jnp.ones_like(x)
    x_2n = x_2
    for n in range(1, series_order + 1):
        term = dtype(np.prod(np.arange(2 * n - 1, 1, -2))) / x_2n
        series = series - term if n % 2 else series + term
        x_2n = x_2n * x_2
    return log_scale + jnp.log(series)


def _log_ndtr_impl(x: Any, series_order: int) -> Any:
    dtype = core.get_aval(x).dtype
    lower, upper = (-20.0, 8.0) if dtype == np.float64 else (-10.0, 5.0)
    above = x > upper
    positive = x > 0
    ndtr_res = _ndtr(jnp.where(positive, -x, jnp.maximum(x, lower)))
    return jnp.where(above, -ndtr_res,
                     jnp.where(positive, jnp.log1p(-ndtr_res),
                               jnp.where(x > lower, jnp.log(ndtr_res),
                                         _log_ndtr_lower(jnp.minimum(x, lower), series_order))))


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log(ndtr(x)), accurate far into both tails (an asymptotic series below -20).

    Unlike JAX: for 0 < x <= 8 it computes log1p(-ndtr(-x)) instead of log(ndtr(x)), which
    keeps full relative precision as the result approaches 0.

    Its jvp is exp(norm.logpdf(x) - log_ndtr(x)), finite everywhere.

    >>> round(float(log_ndtr(-40.0)), 4)
    -804.6084
    """
    if not isinstance(series_order, (int, np.integer)) or not 0 <= series_order <= 30:
        raise NumbaxValueError(
            f"numbax.scipy.special.log_ndtr: series_order is {series_order!r}, expected an "
            "int in [0, 30].")
    (x,) = _real_float("log_ndtr", x)
    if core.get_aval(x).dtype not in (np.float32, np.float64):
        raise NumbaxTypeError(
            f"numbax.scipy.special.log_ndtr: x has dtype {core.get_aval(x).dtype}, expected "
            "float32 or float64.")

    @custom_jvp
    def fun(x):
        return _log_ndtr_impl(x, series_order)

    @fun.defjvp
    def fun_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        ans = fun(x)
        dtype = core.get_aval(x).dtype.type
        logpdf = -dtype(0.5) * jnp.square(x) - dtype(_LOG_SQRT_2PI)
        return ans, t * jnp.exp(logpdf - ans)

    return fun(x)
