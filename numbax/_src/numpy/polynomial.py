"""numpy's polynomial functions (coefficients highest power first): arithmetic, calculus,
evaluation, fitting, roots, and vander/trim_zeros. Results are inexact, as in JAX."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.array import asarray_value
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
from numbax._src.numpy.lax_numpy import asarray, concrete_value, static_int, where
from numbax._src.numpy.operands import broadcast_shapes

__all__ = [
    "poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyval",
    "polyfit", "roots", "vander", "trim_zeros",
]


def _coeffs(api: str, p: Any, arg: str = "p", inexact: bool = True) -> Any:
    p = asarray(p)
    if get_aval(p).ndim > 1:
        raise NumbaxValueError(f"numbax.numpy.{api}: {arg} has shape {get_aval(p).shape}, "
                               "expected a 1-d array of coefficients.")
    p = shape_ops.reshape(p, (get_aval(p).size,))
    return ufuncs.promote_dtypes_inexact(api, p)[0] if inexact else p


def _pad_front(p: Any, n: int) -> Any:
    k = get_aval(p).shape[0]
    return shape_ops.pad(p, lax.convert_element_type(0, get_aval(p).dtype), ((n - k, 0, 0),))


def _static_order(api: str, m: Any, arg: str = "m") -> int:
    m = static_int(m, api, arg)
    if m < 0:
        raise NumbaxValueError(f"numbax.numpy.{api}: {arg} is {m}, expected an order >= 0.")
    return m


# ----------------------------------------------------------------------------- shaping


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """numpy.trim_zeros: drops the leading ('f') and/or trailing ('b') zeros.

    The output size depends on the values, so `filt` must be concrete. With axis, the
    all-zero edges of every listed axis are trimmed (numpy 2.2).

    >>> trim_zeros(asarray([0, 0, 1, 0, 2, 0]))
    Array([1, 0, 2], dtype=int64)
    """
    from numbax._src.numpy.lax_numpy import canonicalize_axes

    filt = asarray(filt)
    trim = trim.lower() if isinstance(trim, str) else trim
    if not isinstance(trim, str) or set(trim) - {"f", "b"}:
        raise NumbaxValueError(f"numbax.numpy.trim_zeros: trim is {trim!r}, expected a string "
                               "of 'f' and/or 'b'.")
    value = np.asarray(concrete_value(filt, "numbax.numpy.trim_zeros"))
    if value.ndim == 0:
        raise NumbaxValueError("numbax.numpy.trim_zeros: filt has shape (), expected at least "
                               "1 dimension.")
    axes = canonicalize_axes(axis, value.ndim, "trim_zeros")
    starts, stops = [0] * value.ndim, list(value.shape)
    for ax in axes:
        others = tuple(i for i in range(value.ndim) if i != ax)
        nz = np.flatnonzero(np.any(value != 0, axis=others))
        lo, hi = (nz[0], nz[-1] + 1) if nz.size else (0, 0)
        starts[ax] = lo if "f" in trim else 0
        stops[ax] = hi if "b" in trim else value.shape[ax]
        if not nz.size:
            starts[ax] = stops[ax] = 0
    stops = [max(s, t) for s, t in zip(starts, stops)]
    return shape_ops.slice(filt, tuple(starts), tuple(stops))


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803
    """numpy.vander: columns x**(N-1), ..., x, 1 (or increasing powers), by repeated
    multiplication as numpy does (so integer inputs are exact).

    >>> vander(asarray([1, 2, 3]), 3)
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int64)
    """
    from numbax._src.lax import reductions as lax_reductions
    from numbax._src.numpy.flips import flip

    x = asarray(x)
    if get_aval(x).ndim != 1:
        raise NumbaxValueError(f"numbax.numpy.vander: x has shape {get_aval(x).shape}, expected "
                               "a 1-d array.")
    n = get_aval(x).shape[0]
    N = n if N is None else static_int(N, "vander", "N")  # noqa: N806
    if N < 0:
        raise NumbaxValueError(f"numbax.numpy.vander: N is {N}, expected N >= 0.")
    (x,) = ufuncs.promote_dtypes("vander", x)
    dtype = get_aval(x).dtype
    if N == 0:
        return shape_ops.full((n, 0), 0, dtype)
    ones = shape_ops.full((n, 1), 1, dtype)
    cols = shape_ops.broadcast_in_dim(x, (n, N - 1), (0,))
    out = lax_reductions.cumprod(shape_ops.concatenate([ones, cols], 1), axis=1)
    return out if increasing else flip(out, 1)


# ----------------------------------------------------------------------------- arithmetic


def _poly_plus(api: str, a1: Any, a2: Any) -> Any:
    """a1 + a2 aligned at the end of axis 0, as JAX's `a1.at[-n2:].add(a2)` (shorter first)."""
    from numbax._src.numpy.shapes import broadcast_to

    a1, a2 = asarray(a1), asarray(a2)
    a1, a2 = (shape_ops.reshape(p, (1,)) if get_aval(p).ndim == 0 else p for p in (a1, a2))
    a1, a2 = ufuncs.promote_dtypes(api, a1, a2)
    first = get_aval(a2).shape[0] <= get_aval(a1).shape[0]
    long, short, arg = (a1, a2, "a2") if first else (a2, a1, "a1")
    n, tail = get_aval(short).shape[0], get_aval(long).shape[1:]
    if len(get_aval(short).shape) > 1 + len(tail):
        raise NumbaxValueError(f"numbax.numpy.{api}: {arg} has shape {get_aval(short).shape}, "
                               f"expected one that broadcasts to {(n,) + tail}, the trailing "
                               "rows of the longer polynomial.")
    short = broadcast_to(short, (n,) + tail)
    zero = lax.convert_element_type(0, get_aval(short).dtype)
    pads = ((get_aval(long).shape[0] - n, 0, 0),) + ((0, 0, 0),) * len(tail)
    return lax.add(long, shape_ops.pad(short, zero, pads))


def polyadd(a1: Any, a2: Any) -> Any:
    """numpy.polyadd: the sum of two polynomials (the shorter padded in front).

    As in JAX, n-d inputs hold coefficients along axis 0: the shorter one is broadcast to the
    trailing rows of the longer one and added there.

    Args:
      a1, a2: coefficient arrays, highest power first along axis 0.

    Returns:
      The coefficients of a1 + a2.

    >>> polyadd(asarray([1, 2]), asarray([1, 0, 0]))
    Array([1, 1, 2], dtype=int64)
    """
    return _poly_plus("polyadd", a1, a2)


def polysub(a1: Any, a2: Any) -> Any:
    """numpy.polysub: a1 - a2 as polynomials (n-d inputs as in polyadd).

    Args:
      a1, a2: coefficient arrays, highest power first along axis 0.

    Returns:
      The coefficients of a1 - a2.
    """
    a1, a2 = ufuncs.promote_dtypes("polysub", asarray(a1), asarray(a2))
    return _poly_plus("polysub", a1, lax.neg(a2))


def _trim_leading(p: Any) -> Any:
    return trim_zeros(p, "f") if get_aval(p).shape[0] else p


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """numpy.polymul: the product (the full convolution of the coefficients).

    trim_leading_zeros (concrete inputs only) drops leading zeros first, as numpy does; JAX
    keeps them by default so the output shape depends only on the input shapes.

    >>> polymul(asarray([1.0, 2.0]), asarray([1.0, 2.0, 3.0]))
    Array([1., 4., 7., 6.], dtype=float64)
    """
    a1, a2 = _coeffs("polymul", a1, "a1"), _coeffs("polymul", a2, "a2")
    a1, a2 = ufuncs.promote_dtypes("polymul", a1, a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading(a1), _trim_leading(a2)
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    if n1 == 0 or n2 == 0:
        return shape_ops.full((max(n1 + n2 - 1, 0),), 0, get_aval(a1).dtype)
    # out[k] = sum_j a1[k - j] * a2[j]: a (n1 + n2 - 1, n2) Toeplitz gather of a1, times a2.
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.linalg_ops import matmul

    k, j = np.indices((n1 + n2 - 1, n2))
    idx = k - j
    inside = (idx >= 0) & (idx < n1)
    band = take(a1, asarray_value(np.where(inside, idx, 0)), mode="clip")
    band = where(asarray_value(inside), band, lax.convert_element_type(0, get_aval(a1).dtype))
    return matmul(band, a2)


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """numpy.polydiv: (quotient, remainder) of u / v by long division.

    As in JAX, the remainder keeps u's length (leading zeros included) unless
    trim_leading_zeros=True, which needs concrete inputs and drops leading entries within
    sqrt(eps) of zero.

    >>> polydiv(asarray([1.0, 2.0, 3.0, 4.0]), asarray([1.0, 2.0]))
    (Array([1., 0., 3.], dtype=float64), Array([ 0.,  0.,  0., -2.], dtype=float64))
    """
    u, v = _coeffs("polydiv", u, "u"), _coeffs("polydiv", v, "v")
    u, v = ufuncs.promote_dtypes("polydiv", u, v)
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    if n < 0:
        raise NumbaxValueError("numbax.numpy.polydiv: v is empty, expected a divisor with at "
                               "least one coefficient.")
    dtype = get_aval(u).dtype
    scale = lax.div(lax.convert_element_type(1, dtype), shape_ops.reshape(
        shape_ops.slice(v, (0,), (1,)), ()))
    q = shape_ops.full((max(m - n + 1, 1),), 0, dtype)
    r = u
    for k in range(m - n + 1):
        d = lax.mul(scale, shape_ops.reshape(shape_ops.slice(r, (k,), (k + 1,)), ()))
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(lax.neg(lax.mul(d, v)))
    if trim_leading_zeros:
        value = np.asarray(concrete_value(r, "numbax.numpy.polydiv with trim_leading_zeros"))
        tol = np.sqrt(finfo_of(dtype).eps)
        big = np.flatnonzero(np.abs(value) > tol)
        r = shape_ops.slice(r, (int(big[0]) if big.size else value.size,), (value.size,))
    return q, r


# ----------------------------------------------------------------------------- calculus


def polyder(p: Any, m: int = 1) -> Any:
    """numpy.polyder: the m-th derivative.

    >>> polyder(asarray([3.0, 0.0, 2.0, 5.0]))
    Array([9., 0., 2.], dtype=float64)
    """
    p = _coeffs("polyder", p)
    m = _static_order("polyder", m)
    n = get_aval(p).shape[0]
    if m == 0:
        return p
    if m >= n:
        return shape_ops.full((0,), 0, get_aval(p).dtype)
    powers = np.arange(n - 1, m - 1, -1)  # the surviving terms' powers
    factor = np.prod([powers - i for i in range(m)], axis=0).astype(np.float64)
    return lax.mul(shape_ops.slice(p, (0,), (n - m,)),
                   lax.convert_element_type(asarray_value(factor), get_aval(p).dtype))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """numpy.polyint: the m-th antiderivative; k gives the integration constants (a scalar
    for all, or m of them, the first for the innermost integral).

    >>> polyint(asarray([3.0, 0.0, 2.0]), k=1.0)
    Array([1., 0., 2., 1.], dtype=float64)
    """
    p = _coeffs("polyint", p)
    m = _static_order("polyint", m)
    dtype = get_aval(p).dtype
    if m == 0:
        return p
    k = asarray(0 if k is None else k)
    if get_aval(k).ndim == 0:
        k = shape_ops.broadcast_in_dim(k, (m,), ())
    if get_aval(k).shape != (m,):
        raise NumbaxValueError(f"numbax.numpy.polyint: k has shape {get_aval(k).shape}, "
                               f"expected a scalar or ({m},) integration constants.")
    k = lax.convert_element_type(k, dtype)
    for i in range(m):
        n = get_aval(p).shape[0]
        divisors = lax.convert_element_type(asarray_value(np.arange(n, 0, -1)), dtype)
        const = shape_ops.slice(k, (i,), (i + 1,))
        p = shape_ops.concatenate([lax.div(p, divisors), const], 0)
    return p


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """numpy.polyval: p evaluated at x by Horner's rule (one lax.scan over p's first axis,
    unrolled by `unroll` as in JAX). A p of several dimensions holds one polynomial per
    trailing index (polyfit's coefficients for a 2-d y): the result has the broadcast shape
    of p.shape[1:] and x.shape.

    >>> polyval(asarray([1.0, 2.0, 3.0]), asarray([2.0, 3.0]))
    Array([11., 18.], dtype=float64)
    """
    from numbax._src.lax.control_flow.loops import scan

    p = asarray(p)
    if get_aval(p).ndim == 0:
        p = shape_ops.reshape(p, (1,))
    p, x = ufuncs.promote_dtypes("polyval", p, asarray(x))
    shape = broadcast_shapes("polyval", get_aval(p).shape[1:], get_aval(x).shape)
    zero = shape_ops.full(shape, 0, get_aval(x).dtype)
    if get_aval(p).shape[0] == 0:
        return zero
    unroll = operator.index(unroll)

    def step(y: Any, c: Any) -> tuple[Any, None]:
        return ufuncs.add(ufuncs.multiply(y, x), c), None

    y, _ = scan(step, zero, p, unroll=unroll)
    return y


# ----------------------------------------------------------------------------- roots and fits


def poly(seq_of_zeros: Any) -> Any:
    """numpy.poly: the monic polynomial with the given roots (or the characteristic
    polynomial of a square matrix). Unlike numpy, and as in JAX, complex roots give complex
    coefficients even when they pair up into a real polynomial.

    >>> poly(asarray([1.0, 2.0, 3.0]))
    Array([ 1., -6., 11., -6.], dtype=float64)
    """
    z = asarray(seq_of_zeros)
    shape = get_aval(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        from numbax._src.numpy import linalg

        z = linalg.eigvals(z)
    elif len(shape) > 1:
        raise NumbaxValueError(f"numbax.numpy.poly: seq_of_zeros has shape {shape}, expected a "
                               "1-d array of roots or a non-empty square matrix.")
    z = _coeffs("poly", z, "seq_of_zeros")
    dtype = get_aval(z).dtype
    a = shape_ops.full((1,), 1, dtype)
    for i in range(get_aval(z).shape[0]):
        root = shape_ops.slice(z, (i,), (i + 1,))
        a = polymul(a, shape_ops.concatenate([shape_ops.full((1,), 1, dtype),
                                              lax.neg(root)], 0))
    return a if get_aval(z).shape[0] else shape_ops.full((), 1, dtype)


def _companion_roots(p: Any) -> Any:
    from numbax._src.numpy import linalg

    n = get_aval(p).shape[0]
    cdt = dtypes.canonicalize_dtype(np.result_type(get_aval(p).dtype, np.complex64))
    if n < 2:
        return shape_ops.full((0,), 0, cdt)
    lead = shape_ops.reshape(shape_ops.slice(p, (0,), (1,)), ())
    top = lax.neg(lax.div(shape_ops.slice(p, (1,), (n,)), lead))
    # The companion matrix: -p[1:] / p[0] on the first row, ones on the subdiagonal.
    sub = lax.convert_element_type(asarray_value(np.eye(n - 2, n - 1)), get_aval(p).dtype)
    a = shape_ops.concatenate([shape_ops.reshape(top, (1, n - 1)), sub], 0)
    return lax.convert_element_type(linalg.eigvals(a), cdt)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """numpy.roots: the roots of p, the eigenvalues of its companion matrix (complex).

    strip_zeros=True (default) drops leading zeros, which needs a concrete p; with False, as
    in JAX, p may be traced and each leading zero gives a NaN root instead.
    """
    p = _coeffs("roots", p)
    n = get_aval(p).shape[0]
    if strip_zeros:
        value = np.asarray(concrete_value(p, "numbax.numpy.roots (pass strip_zeros=False to "
                                             "trace it)"))
        nz = np.flatnonzero(value)
        p = shape_ops.slice(p, (int(nz[0]) if nz.size else n,), (n,))
        return _companion_roots(p)
    leading = _leading_zeros(p)
    if n < 2:
        return _companion_roots(p)
    rolled = _roll_dynamic(p, leading)
    r = _companion_roots(rolled)
    nan = lax.convert_element_type(complex(np.nan, np.nan), get_aval(r).dtype)
    keep = ufuncs.less(asarray_value(np.arange(n - 1)), ufuncs.subtract(n - 1, leading))
    return where(keep, r, nan)


def _leading_zeros(p: Any) -> Any:
    from numbax._src.numpy.reductions import argmax
    from numbax._src.numpy.reductions import sum as sum_

    zero = lax.eq(p, lax.convert_element_type(0, get_aval(p).dtype))
    n = get_aval(p).shape[0]
    all_zero = lax.eq(sum_(zero), np.int64(n))
    first = argmax(lax.bitwise_not(zero))
    return where(all_zero, n, first)


def _roll_dynamic(p: Any, shift: Any) -> Any:
    """p rotated left by a traced shift (a gather at (i + shift) mod n)."""
    from numbax._src.numpy.indexing import take

    n = get_aval(p).shape[0]
    idx = ufuncs.remainder(ufuncs.add(asarray_value(np.arange(n)), shift), n)
    return take(p, idx, mode="clip")


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: Any = False) -> Any:
    """numpy.polyfit: least-squares fit of a degree-`deg` polynomial (columns scaled to unit
    norm, as numpy), with numpy's full= and cov= outputs.

    >>> polyfit(asarray([0.0, 1.0, 2.0]), asarray([1.0, 3.0, 5.0]), 1)
    Array([2., 1.], dtype=float64)
    """
    from numbax._src.numpy import linalg
    from numbax._src.numpy.reductions import sum as sum_

    deg = _static_order("polyfit", deg, "deg")
    x, y = ufuncs.promote_dtypes_inexact("polyfit", asarray(x), asarray(y))
    if get_aval(x).ndim != 1 or get_aval(x).shape[0] == 0:
        raise NumbaxValueError(f"numbax.numpy.polyfit: x has shape {get_aval(x).shape}, "
                               "expected a non-empty 1-d array.")
    if get_aval(y).ndim not in (1, 2) or get_aval(y).shape[0] != get_aval(x).shape[0]:
        raise NumbaxValueError(f"numbax.numpy.polyfit: y has shape {get_aval(y).shape}, "
                               f"expected ({get_aval(x).shape[0]},) or "
                               f"({get_aval(x).shape[0]}, K) to match x.")
    n, order = get_aval(x).shape[0], deg + 1
    dtype = get_aval(x).dtype
    rcond = n * float(finfo_of(dtype).eps) if rcond is None else rcond
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = lax.convert_element_type(asarray(w), dtype)
        if get_aval(w).shape != (n,):
            raise NumbaxValueError(f"numbax.numpy.polyfit: w has shape {get_aval(w).shape}, "
                                   f"expected ({n},).")
        lhs = lax.mul(lhs, shape_ops.broadcast_in_dim(w, (n, order), (0,)))
        rhs = lax.mul(rhs, ufuncs.broadcast_to_shape(
            shape_ops.reshape(w, (n,) + (1,) * (get_aval(y).ndim - 1)), get_aval(y).shape))
    scale = lax.sqrt(sum_(lax.mul(lhs, lhs), axis=0))
    lhs = lax.div(lhs, shape_ops.broadcast_in_dim(scale, (n, order), (1,)))
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    col_scale = scale if get_aval(c).ndim == 1 else shape_ops.broadcast_in_dim(
        scale, get_aval(c).shape, (0,))
    c = lax.div(c, col_scale)
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        from numbax._src.numpy.linalg_ops import matmul, outer

        vbase = lax.div(linalg.inv(matmul(lhs.T, lhs)), outer(scale, scale))
        if cov == "unscaled":
            fac = lax.convert_element_type(1, dtype)
        else:
            if n <= order:
                raise NumbaxValueError("numbax.numpy.polyfit: the fit needs more points than "
                                       "the degree + 1 to scale the covariance; pass "
                                       "cov='unscaled'.")
            fac = lax.div(resids, lax.convert_element_type(n - order, dtype))
        if get_aval(y).ndim == 1:
            return c, ufuncs.multiply(vbase, fac)
        if cov == "unscaled":  # numpy: one trailing axis of size 1
            return c, shape_ops.reshape(vbase, (order, order, 1))
        k = get_aval(y).shape[1]
        return c, lax.mul(shape_ops.broadcast_in_dim(vbase, (order, order, k), (0, 1)),
                          shape_ops.broadcast_in_dim(fac, (order, order, k), (2,)))
    return c

