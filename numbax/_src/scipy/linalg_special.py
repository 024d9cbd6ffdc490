"""scipy.linalg's special matrices (toeplitz, hankel, circulant, companion, block_diag, dft,
pascal, hilbert, hadamard, helmert...): index arithmetic on their defining vectors, batched
over leading dims as JAX does."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import creation, flips, padding, ufuncs
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.indexing import take
from numbax._src.numpy.lax_numpy import asarray, where

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _vec(api: str, x: Any, name: str) -> Any:
    """x as an array of rank >= 1 (scalars become length-1 vectors, as scipy's)."""
    if x is None or isinstance(x, (str, bytes)):
        raise NumbaxTypeError(f"numbax.scipy.linalg.{api}: {name} has type "
                              f"{type(x).__name__}, expected an array.")
    return jshapes.atleast_1d(asarray(x))


def _common_batch(*xs: Any) -> list[Any]:
    """Vectors (..., k) broadcast to one leading shape."""
    batch = np.broadcast_shapes(*(get_aval(x).shape[:-1] for x in xs))
    return [jshapes.broadcast_to(x, (*batch, get_aval(x).shape[-1])) for x in xs]


def _gather(v: Any, index: np.ndarray) -> Any:
    """out[..., i, j] = v[..., index[i, j]]."""
    if index.size == 0:
        return creation.zeros((*get_aval(v).shape[:-1], *index.shape), get_aval(v).dtype)
    return take(v, index, axis=-1)


def _default_float() -> np.dtype:
    return dtypes.canonicalize_dtype(np.float64)


def _size(api: str, n: Any, minimum: int = 0) -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise NumbaxTypeError(f"numbax.scipy.linalg.{api}: n has type {type(n).__name__}, "
                              "expected a Python int.") from None
    if n < minimum:
        raise NumbaxValueError(f"numbax.scipy.linalg.{api}: n has {n}, expected n >= "
                               f"{minimum}.")
    return n


# ----------------------------------------------------------------------------- from vectors


def toeplitz(c: Any, r: Any = None) -> Any:
    """Toeplitz matrix: first column c, first row r (r[0] ignored; conj(c) when None).

    >>> toeplitz([1, 2, 3], [1, 4])
    Array([[1, 4],
           [2, 1],
           [3, 2]], dtype=int64)
    """
    c = _vec("toeplitz", c, "c")
    r = ufuncs.conj(c) if r is None else _vec("toeplitz", r, "r")
    c, r = ufuncs.promote_dtypes("scipy.linalg.toeplitz", c, r)
    c, r = _common_batch(c, r)
    m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
    if m == 0 or n == 0:
        return creation.zeros((*get_aval(c).shape[:-1], m, n), get_aval(c).dtype)
    v = jshapes.concatenate([flips.flip(c, -1), r[..., 1:]], axis=-1)
    return _gather(v, (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :])


def hankel(c: Any, r: Any = None) -> Any:
    """Hankel matrix: first column c, last row r (r[0] ignored; zeros when None).

    >>> hankel([1, 2, 3], [3, 4])
    Array([[1, 2],
           [2, 3],
           [3, 4]], dtype=int64)
    """
    c = _vec("hankel", c, "c")
    r = creation.zeros_like(c) if r is None else _vec("hankel", r, "r")
    c, r = ufuncs.promote_dtypes("scipy.linalg.hankel", c, r)
    c, r = _common_batch(c, r)
    m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
    if m == 0 or n == 0:
        return creation.zeros((*get_aval(c).shape[:-1], m, n), get_aval(c).dtype)
    v = jshapes.concatenate([c, r[..., 1:]], axis=-1)
    return _gather(v, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c: Any) -> Any:
    """Circulant matrix with first column c: C[i, j] = c[(i - j) mod n]."""
    c = _vec("circulant", c, "c")
    n = get_aval(c).shape[-1]
    return _gather(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1))


def fiedler(a: Any) -> Any:
    """Fiedler matrix F[i, j] = |a[i] - a[j]|."""
    a = _vec("fiedler", a, "a")
    return ufuncs.abs(ufuncs.subtract(jshapes.expand_dims(a, -1), jshapes.expand_dims(a, -2)))


def companion(a: Any) -> Any:
    """Companion matrix of the polynomial with coefficients a (highest degree first).

    >>> companion([1., -3., 2.])
    Array([[ 3., -2.],
           [ 1.,  0.]], dtype=float64)
    """
    a = _vec("companion", a, "a")
    (a,) = ufuncs.promote_dtypes_inexact("scipy.linalg.companion", a)
    n = get_aval(a).shape[-1]
    if n < 2:
        raise NumbaxValueError(f"numbax.scipy.linalg.companion: a has shape {get_aval(a).shape}, "
                               "expected at least 2 coefficients along the last axis.")
    first = ufuncs.negative(ufuncs.divide(a[..., 1:], a[..., :1]))
    m = n - 1
    rows = np.arange(m)[:, None]
    sub = jshapes.broadcast_to(creation.eye(m, k=-1, dtype=get_aval(a).dtype),
                               (*get_aval(a).shape[:-1], m, m))
    return where(rows == 0, jshapes.expand_dims(first, -2), sub)


def leslie(f: Any, s: Any) -> Any:
    """Leslie matrix: fecundities f (n,) in the first row, survival rates s (n - 1,) below the
    diagonal."""
    f, s = _vec("leslie", f, "f"), _vec("leslie", s, "s")
    n = get_aval(f).shape[-1]
    if n < 2 or get_aval(s).shape[-1] != n - 1:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.leslie: f has shape {get_aval(f).shape} and s has shape "
            f"{get_aval(s).shape}, expected n >= 2 fecundities and n - 1 survival rates.")
    f, s = ufuncs.promote_dtypes("scipy.linalg.leslie", f, s)
    f, s = _common_batch(f, s)
    pad = creation.zeros((*get_aval(s).shape[:-1], 1), get_aval(s).dtype)
    sub = _gather(jshapes.concatenate([s, pad], axis=-1),
                  np.where(np.eye(n, k=-1, dtype=bool), np.arange(n)[None, :], n - 1))
    return where(np.arange(n)[:, None] == 0, jshapes.expand_dims(f, -2), sub)


def fiedler_companion(a: Any) -> Any:
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients a."""
    a = _vec("fiedler_companion", a, "a")
    (a,) = ufuncs.promote_dtypes_inexact("scipy.linalg.fiedler_companion", a)
    if get_aval(a).shape[-1] == 0:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.fiedler_companion: a has shape {get_aval(a).shape}, expected "
            "at least one coefficient along the last axis.")
    n = get_aval(a).shape[-1] - 1
    batch = get_aval(a).shape[:-1]
    if n == 0:
        return creation.zeros((*batch, 0, 0), get_aval(a).dtype)
    a = ufuncs.divide(a, a[..., :1])
    if n == 1:
        return jshapes.reshape(ufuncs.negative(a[..., 1:]), (*batch, 1, 1))
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    # positions in values = [0, 1, -a[1], ..., -a[n]]: -a[k] sits at k + 1
    index = np.select([(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even,
                       (j == i + 2) & even, (j == i - 1) & even & (i >= 2),
                       (j == i - 2) & odd & (i >= 3)],
                      [2, 1, i + 3, 1, i + 2, 1], default=0)
    values = jshapes.concatenate([creation.zeros((*batch, 1), get_aval(a).dtype),
                                  creation.ones((*batch, 1), get_aval(a).dtype),
                                  ufuncs.negative(a[..., 1:])], axis=-1)
    return _gather(values, index)


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The Toeplitz matrix A with A @ v = numpy.convolve(a, v, mode) for v of length n."""
    n = _size("convolution_matrix", n, 1)
    a = asarray(a)
    if get_aval(a).ndim == 0 or get_aval(a).shape[-1] < 1:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.convolution_matrix: a has shape {get_aval(a).shape}, expected "
            "at least one element along the last axis.")
    if mode not in ("full", "valid", "same"):
        raise NumbaxValueError(f"numbax.scipy.linalg.convolution_matrix: mode has {mode!r}, "
                               "expected 'full', 'valid' or 'same'.")
    m = get_aval(a).shape[-1]
    zeros = creation.zeros((*get_aval(a).shape[:-1], n - 1), get_aval(a).dtype)
    az = jshapes.concatenate([a, zeros], axis=-1)
    raz = jshapes.concatenate([flips.flip(a, -1), zeros], axis=-1)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb:length - te], raz[..., length - n - tb:length - tb])


def block_diag(*arrs: Any) -> Any:
    """The block-diagonal matrix of 0-, 1- and 2-d arrays (1-d ones are rows).

    >>> block_diag([[1, 2]], [[3]])
    Array([[1, 2, 0],
           [0, 0, 3]], dtype=int64)
    """
    if not arrs:
        arrs = (creation.zeros((1, 0)),)
    arrs = [asarray(a) for a in arrs]
    for i, a in enumerate(arrs):
        if get_aval(a).ndim > 2:
            raise NumbaxValueError(
                f"numbax.scipy.linalg.block_diag: argument {i} has shape {get_aval(a).shape}, "
                "expected at most 2 dimensions.")
    arrs = [jshapes.atleast_2d(a) for a in ufuncs.promote_dtypes("scipy.linalg.block_diag",
                                                                 *arrs)]
    total = sum(get_aval(a).shape[1] for a in arrs)
    rows, col = [], 0
    for a in arrs:
        width = get_aval(a).shape[1]
        rows.append(padding.pad(a, ((0, 0), (col, total - col - width))))
        col += width
    return jshapes.concatenate(rows, axis=0)


# ----------------------------------------------------------------------------- from a size


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The n-point discrete Fourier transform matrix, exp(-2πi jk/n) (scaled by 1/√n or 1/n).

    >>> import numpy as np
    >>> np.round(np.asarray(dft(2)).real, 12)
    array([[ 1.,  1.],
           [ 1., -1.]])
    """
    n = _size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.dft: scale has {scale!r}, expected None, 'sqrtn' or 'n'.")
    dtype = dtypes.canonicalize_dtype(np.complex128 if dtype is None else np.dtype(dtype))
    if kind_of(dtype) != "c":
        raise NumbaxValueError(
            f"numbax.scipy.linalg.dft: dtype has {dtype}, expected a complex dtype.")
    k = np.arange(n)
    m = np.exp(-2j * np.pi * ((k[:, None] * k[None, :]) % max(n, 1)) / max(n, 1))
    m = m / {None: 1, "sqrtn": math.sqrt(max(n, 1)), "n": max(n, 1)}[scale]
    return asarray(m.astype(dtype))


def hadamard(n: int, dtype: Any = int) -> Any:
    """The Sylvester Hadamard matrix of order n (a power of 2).

    >>> hadamard(2)
    Array([[ 1,  1],
           [ 1, -1]], dtype=int64)
    """
    n = _size("hadamard", n, 1)
    if n & (n - 1):
        raise NumbaxValueError(f"numbax.scipy.linalg.hadamard: n has {n}, expected a power of 2.")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return asarray(h.astype(dtypes.canonicalize_dtype(np.dtype(dtype))))


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix of order n ((n-1, n), or (n, n) with the 1/√n row if full)."""
    n = _size("helmert", n, 1)
    k = np.arange(1, n)[:, None].astype(float)
    j = np.arange(n)[None, :]
    h = np.where(j < k, 1.0, np.where(j == k, -k, 0.0)) / np.sqrt(k * (k + 1))
    if full:
        h = np.concatenate([np.full((1, n), 1 / np.sqrt(n)), h])
    return asarray(h.astype(_default_float()))


def hilbert(n: int) -> Any:
    """The Hilbert matrix H[i, j] = 1 / (i + j + 1)."""
    n = _size("hilbert", n)
    i = np.arange(n)
    return asarray((1.0 / (i[:, None] + i[None, :] + 1)).astype(_default_float()))


def invhilbert(n: int) -> Any:
    """The inverse of hilbert(n), from its exact integer entries."""
    n = _size("invhilbert", n)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2)
    return asarray(out.astype(_default_float()))


def _pascal_kind(api: str, kind: str | None) -> str:
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise NumbaxValueError(f"numbax.scipy.linalg.{api}: kind has {kind!r}, expected "
                               "'symmetric', 'lower' or 'upper'.")
    return kind


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix (binomial coefficients): symmetric, lower or upper.

    Unlike JAX (float32 from exp(lgamma)): exact binomials in the default float dtype.
    """
    n, kind = _size("pascal", n), _pascal_kind("pascal", kind)
    low = np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], float).reshape(n, n)
    out = {"lower": low, "upper": low.T, "symmetric": low @ low.T}[kind]
    return asarray(out.astype(_default_float()))


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of pascal(n, kind), exactly."""
    n, kind = _size("invpascal", n), _pascal_kind("invpascal", kind)
    low = np.array([[(-1) ** (i - j) * math.comb(i, j) for j in range(n)] for i in range(n)],
                   float).reshape(n, n)
    out = {"lower": low, "upper": low.T, "symmetric": low.T @ low}[kind]
    return asarray(out.astype(_default_float()))
