"""Special functions shared by jnp, nn and scipy.special: logsumexp with a stable gradient."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp, stop_gradient
from numbax._src.dtypes import kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions, shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.weak import weak_out


def _reduction_axes(fun_name: str, ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise NumbaxValueError(
                f"numbax.numpy.{fun_name}: axis {a} is out of bounds for an array of "
                f"dimension {ndim}. Pass an axis in [-{ndim}, {ndim}).")
        out.append(a % max(ndim, 1))
    if len(set(out)) != len(out):
        raise NumbaxValueError(f"numbax.numpy.{fun_name}: axis {axis} repeats an axis.")
    return tuple(sorted(out)) if ndim else ()


def _keep_dims(x: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return shape_ops.reshape(x, kept)


@compiled_when_eager(compile_large=False)
def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) over `axis`, computed stably (the max is shifted out).

    The shift goes through stop_gradient, so the gradient is the softmax weights, finite
    even for huge inputs; where every entry is -inf the value is -inf (gradient nan, as JAX).

    Args:
      a: the input array.
      axis: the axis or axes to reduce (None: all).
      b: scaling factors for exp(a), broadcast against a.
      keepdims: keep reduced axes with size 1.
      return_sign: also return the sign of the sum (the value is then log|sum|).
      where: entries to include.

    Returns:
      The reduced array, or (array, sign) when return_sign is set.

    >>> import numpy as np
    >>> float(logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    """
    if b is not None:
        a, b = ufuncs.promote_dtypes_inexact("logsumexp", a, b)
        a, b = ufuncs.broadcast_arrays("logsumexp", a, b)
    else:
        (a,) = ufuncs.promote_dtypes_inexact("logsumexp", a)
    aval = get_aval(a)
    axes = _reduction_axes("logsumexp", aval.ndim, axis)
    neg_inf = np.array(-np.inf, aval.dtype)
    if where is not None:
        (where,) = ufuncs.broadcast_arrays("logsumexp", ufuncs.asbool(where))
        mask = ufuncs.broadcast_to_shape(where, aval.shape)
        a = lax.select(mask, a, shape_ops.full(aval.shape, neg_inf, aval.dtype))
    if b is not None:
        zero = shape_ops.full(aval.shape, 0, aval.dtype)
        a = lax.select(lax.ne(b, zero), a, shape_ops.full(aval.shape, neg_inf, aval.dtype))
    real_a = lax.real(a) if kind_of(aval.dtype) == "c" else a
    amax = reductions.reduce_max(stop_gradient(real_a), axes)
    amax_aval = get_aval(amax)
    amax = lax.select(lax.is_finite(amax), amax,
                      shape_ops.full(amax_aval.shape, 0, amax_aval.dtype))
    amax_kept = _keep_dims(amax, aval.shape, axes)
    shift = shape_ops.broadcast_in_dim(amax_kept, aval.shape, tuple(range(aval.ndim)))
    shift = lax.convert_element_type(shift, aval.dtype)
    exp_a = lax.exp(lax.sub(a, shift))
    if b is not None:
        exp_a = lax.mul(exp_a, b)
    sumexp = reductions.reduce_sum(exp_a, axes)
    if keepdims:
        sumexp = _keep_dims(sumexp, aval.shape, axes)
        amax = amax_kept
    sign = lax.sign(sumexp)
    if return_sign or kind_of(aval.dtype) != "c":
        sumexp = lax.abs(sumexp)
    out = lax.add(lax.log(sumexp), lax.convert_element_type(amax, get_aval(sumexp).dtype))
    if return_sign:
        return out, sign
    if b is not None and kind_of(aval.dtype) != "c":
        out_aval = get_aval(out)
        nan = shape_ops.full(out_aval.shape, np.nan, out_aval.dtype)
        out = lax.select(lax.lt(sign, 0.0), nan, out)
    return out


@weak_out
def sinc(x: Any, /) -> Any:
    """numpy.sinc, sin(pi x) / (pi x), with every derivative at 0 from its Maclaurin series, as
    JAX's (a plain `where` would give zero second and higher derivatives there)."""
    (x,) = ufuncs.promote_dtypes_inexact("sinc", x)
    dtype = get_aval(x).dtype
    zero = lax.eq(x, lax.convert_element_type(0, dtype))
    pix = lax.mul(lax.convert_element_type(np.pi, dtype), x)
    ones = shape_ops.full(get_aval(x).shape, 1, dtype)
    safe = lax.select(zero, ones, pix)  # keeps 0/0 out of the unselected branch (and its grad)
    return lax.select(zero, _sinc_maclaurin(0, pix), lax.div(lax.sin(safe), safe))


def _sinc_maclaurin(k: int, x: Any) -> Any:
    """The k-th derivative of sin(x)/x at 0, shaped like x; its jvp is the (k+1)-th."""
    return _sinc_maclaurin_fn(k)(x)


def _sinc_maclaurin_fn(k: int) -> custom_jvp:
    def value(x: Any) -> Any:
        zero = lax.mul(x, lax.convert_element_type(0, get_aval(x).dtype))
        if k % 2:
            return zero
        return lax.add(zero, lax.convert_element_type((-1) ** (k // 2) / (k + 1),
                                                      get_aval(x).dtype))

    f = custom_jvp(value)
    f.defjvp(lambda primals, tangents: (_sinc_maclaurin(k, primals[0]),
                                        lax.mul(_sinc_maclaurin(k + 1, primals[0]),
                                                tangents[0])))
    return f
