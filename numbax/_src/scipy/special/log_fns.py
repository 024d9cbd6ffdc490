"""numbax.scipy.special's log-domain functions: xlogy, entropies, Box-Cox, logistic, softmax."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax import elementwise as lax
from numbax._src.nn import functions as nn_functions
from numbax._src.numpy import special as numpy_special
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import expm1, isnan, log, log1p
from numbax._src.scipy.special.args import const, dtype_of, inexact, real_float

__all__ = [
    "boxcox", "boxcox1p", "entr", "expit", "kl_div", "log_softmax", "logit", "logsumexp",
    "rel_entr", "softmax", "xlog1py", "xlogy",
]


@custom_jvp
def _xlogy(x: Any, y: Any) -> Any:
    return where((x != 0) | isnan(y), x * log(y), const(x, 0))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlogy(x, y), x_dot * log(y) + y_dot * x / y


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), defined as 0 where x == 0 (also at y == 0); nan in y propagates.

    The jvp is JAX's: x_dot * log(y) + y_dot * x / y, so the y-derivative is 0 where x == 0.

    Args:
      x: real array.
      y: real array, broadcast against x.

    Returns:
      x * log(y).

    >>> float(xlogy(0.0, 0.0))
    0.0
    """
    return _xlogy(*real_float("special.xlogy", x, y))


@custom_jvp
def _xlog1py(x: Any, y: Any) -> Any:
    return where((x != 0) | isnan(y), x * log1p(y), const(x, 0))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return _xlog1py(x, y), x_dot * log1p(y) + y_dot * x / (1 + y)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), defined as 0 where x == 0 (also at y == -1); nan in y propagates.

    Args:
      x: real array.
      y: real array, broadcast against x.

    Returns:
      x * log(1 + y).

    >>> float(xlog1py(0.0, -1.0))
    0.0
    """
    return _xlog1py(*real_float("special.xlog1py", x, y))


@custom_jvp
def _xlogx(x: Any) -> Any:
    return _xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (log(x) + 1)


def entr(x: Any) -> Any:
    """The elementwise entropy -x log x: 0 at x == 0, -inf for x < 0.

    Args:
      x: real array.

    Returns:
      -x * log(x).

    >>> float(entr(1.0))
    -0.0
    """
    (x,) = real_float("special.entr", x)
    return where(x < 0, const(x, -np.inf), -_xlogx(x))


def rel_entr(p: Any, q: Any) -> Any:
    """The relative entropy p log(p / q): 0 where p == 0 and q >= 0, inf where undefined.

    Args:
      p: real array.
      q: real array, broadcast against p.

    Returns:
      The elementwise relative entropy.

    >>> float(rel_entr(1.0, 1.0))
    0.0
    """
    p, q = real_float("special.rel_entr", p, q)
    both_positive = (p > 0) & (q > 0)
    safe_p = where(both_positive, p, const(p, 1))
    safe_q = where(both_positive, q, const(q, 1))
    value = _xlogx(safe_p) - _xlogy(safe_p, safe_q)
    edge = where((p == 0) & (q >= 0), const(p, 0), const(p, np.inf))
    return where(both_positive, value, edge)


def kl_div(p: Any, q: Any) -> Any:
    """The elementwise Kullback-Leibler term p log(p / q) - p + q (scipy's kl_div).

    Args:
      p: real array.
      q: real array, broadcast against p.

    Returns:
      rel_entr(p, q) - p + q.

    >>> float(kl_div(1.0, 1.0))
    0.0
    """
    p, q = real_float("special.kl_div", p, q)
    return rel_entr(p, q) - p + q


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0.

    Args:
      x: positive real array (x < 0 gives nan).
      lmbda: real array, broadcast against x.

    Returns:
      The transformed values.

    >>> float(boxcox(np.e, 0.0))
    1.0
    """
    x, lmbda = real_float("special.boxcox", x, lmbda)
    return _boxcox(log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda == 0.

    Args:
      x: real array, > -1.
      lmbda: real array, broadcast against x.

    Returns:
      The transformed values.

    >>> float(boxcox1p(0.0, 2.0))
    0.0
    """
    x, lmbda = real_float("special.boxcox1p", x, lmbda)
    return _boxcox(log1p(x), lmbda)


def _boxcox(log_x: Any, lmbda: Any) -> Any:
    zero = lmbda == 0
    safe = where(zero, const(lmbda, 1), lmbda)
    return where(zero, log_x, expm1(safe * log_x) / safe)


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x)).

    Args:
      x: real or complex array.

    Returns:
      expit(x).

    >>> float(expit(0.0))
    0.5
    """
    (x,) = inexact("special.expit", x)  # complex too, as JAX
    return lax.logistic(x)


@custom_jvp
def _logit(x: Any) -> Any:
    # lax ops, not operators: run eagerly, a custom_jvp function gets numpy inputs as they are
    return log(lax.div(x, lax.sub(const(x, 1), x)))


_logit.defjvps(lambda g, ans, x: g / (x * (1 - x)))


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit, with derivative 1 / (x (1 - x)).

    Args:
      x: real array in [0, 1].

    Returns:
      logit(x).

    >>> float(logit(0.5))
    0.0
    """
    (x,) = inexact("special.logit", x)  # complex too, as JAX
    return _logit(x)


@compiled_when_eager(compile_large=False)
def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a), axis)), stable, with the softmax gradient (scipy's signature).

    Args:
      a: the input array.
      axis: the axis or axes to reduce (None: all).
      b: scaling factors for exp(a), broadcast against a (negative ones allowed with
        return_sign; without it a negative sum gives nan).
      keepdims: keep reduced axes with size 1.
      return_sign: also return the sign of the sum (the value is then log|sum|).
      where: entries to include.

    Returns:
      The reduced array, or (array, sign) when return_sign is set.

    >>> float(logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    """
    return numpy_special.logsumexp(a, axis=axis, b=b, keepdims=keepdims,
                                   return_sign=return_sign, where=where)


def _check_softmax_input(api: str, x: Any) -> Any:
    (x,) = inexact(f"special.{api}", x)
    if kind_of(dtype_of(x)) == "c":
        raise NumbaxTypeError(
            f"numbax.scipy.special.{api}: x has dtype {dtype_of(x)}, expected a real dtype. "
            "Pass a real-valued array.")
    return x


def softmax(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """exp(x) / sum(exp(x)) over `axis` (all axes by default, as scipy).

    Args:
      x: real array.
      axis: the axis or axes to normalise over; None means all.

    Returns:
      An array of x's shape summing to 1 over `axis` (nan everywhere if any x is +inf).

    >>> [float(v) for v in softmax(np.array([0.0, 0.0]))]
    [0.5, 0.5]
    """
    return nn_functions.softmax(_check_softmax_input("softmax", x), axis=axis)


def log_softmax(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """x - logsumexp(x) over `axis` (all axes by default, as scipy).

    Args:
      x: real array.
      axis: the axis or axes to normalise over; None means all.

    Returns:
      An array of x's shape.

    >>> [round(float(v), 4) for v in log_softmax(np.array([0.0, 0.0]))]
    [-0.6931, -0.6931]
    """
    return nn_functions.log_softmax(_check_softmax_input("log_softmax", x), axis=axis)
