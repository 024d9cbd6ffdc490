"""numbax.numpy.linalg: numpy.linalg on the lax.linalg decompositions (inv, solve, det, norm...)."""
from __future__ import annotations

import builtins
import operator
from typing import Any, NamedTuple

import numpy as np

from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg as lax_linalg
from numbax._src.numpy import creation, linalg_ops, ufuncs
from numbax._src.numpy import reductions as jred
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.creation import eye
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axes, canonicalize_axis, where
from numbax._src.numpy.linalg_ops import matmul

__all__ = ["cholesky", "cond", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "trace", "vector_norm", "outer", "matmul",
           "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

outer = linalg_ops.outer


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# ----------------------------------------------------------------------------- helpers


def _inexact(api: str, a: Any, square: bool = True, min_ndim: int = 2) -> Any:
    """a as an array of float dtype (integers promote like JAX), checked to be (..., n, n)."""
    a = asarray(a) if isinstance(a, (list, tuple)) else a
    (a,) = ufuncs.promote_dtypes_inexact(f"linalg.{api}", a)
    aval = get_aval(a)
    if aval.dtype.kind != "f":
        raise NumbaxTypeError(
            f"numbax.numpy.linalg.{api}: a has dtype {aval.dtype}, expected a real dtype "
            "(bool, integer or float). Complex matrices are not supported yet."
        )
    if aval.ndim < min_ndim:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.{api}: a has shape {aval.shape}, expected an array of rank "
            f">= {min_ndim} (..., m, n). Reshape it."
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.{api}: a has shape {aval.shape}, expected square matrices "
            "(..., n, n). Use lstsq or pinv for non-square matrices."
        )
    return a


def _T(x: Any) -> Any:
    return jshapes.swapaxes(x, -1, -2)


def _eps(x: Any) -> float:
    return float(np.finfo(get_aval(x).dtype).eps)


# ----------------------------------------------------------------------------- decompositions


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """Cholesky factor of symmetric positive definite a: L with a = L Lᵀ (or U = Lᵀ if upper).

    Unlike numpy (and as JAX): a matrix that is not positive definite gives NaNs.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 5.]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    a = _inexact("cholesky", a)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _T(L) if upper else L


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.eigh(jnp.array([[2., 1.], [1., 2.]])).eigenvalues
    Array([1., 3.], dtype=float64)
    """
    a = _inexact("eigh", a)
    if UPLO not in (None, "L", "U"):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.eigh: UPLO has {UPLO!r}, expected 'L' or 'U'.")
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """Eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: None = None) -> Any:
    """Singular value decomposition a = U diag(S) Vh; S descending. ``hermitian`` is ignored.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.svd(jnp.array([[3., 0.], [0., 4.]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    a = _inexact("svd", a, square=False)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False)
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> Any:
    """Singular values, descending."""
    return svd(x, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition; mode 'reduced', 'complete' or 'r' (numpy's modes, less 'raw').

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.qr(jnp.eye(2), mode="r").shape
    (2, 2)
    """
    a = _inexact("qr", a, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.qr: mode has {mode!r}, expected 'reduced', 'complete' or 'r'.")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


# ----------------------------------------------------------------------------- solve, inv, det


def _lu_solve(lu: Any, perm: Any, b: Any) -> Any:
    """x with a x = b from a's LU factors (b is (..., n, k))."""
    p = lax_linalg._permutation_matrix(perm, get_aval(lu).dtype)
    pb = matmul(p, b)
    y = lax_linalg.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a: Any, b: Any) -> Any:
    """x with a @ x = b for square a (..., n, n); b is (..., n) or (..., n, k) (JAX's rule:
    b is a stack of vectors when b.ndim == 1 or a.ndim == b.ndim + 1). Batch dims broadcast.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 2.]))
    Array([1. , 0.5], dtype=float64)
    """
    a = asarray(a) if isinstance(a, (list, tuple)) else a
    b = asarray(b) if isinstance(b, (list, tuple)) else b
    a, b = ufuncs.promote_dtypes_inexact("linalg.solve", a, b)
    a = _inexact("solve", a)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    vector = len(sb) == 1 or len(sa) == len(sb) + 1
    if len(sb) < 1 or (vector and sb[-1] != sa[-1]) or (not vector and sb[-2] != sa[-1]):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.solve: a has shape {sa} and b has shape {sb}, expected b of "
            f"shape (..., {sa[-1]}) or (..., {sa[-1]}, k). Make b's rows match a's columns."
        )
    if vector:
        b = jshapes.expand_dims(b, -1)
    bs = get_aval(b).shape
    try:
        batch = np.broadcast_shapes(sa[:-2], bs[:-2])
    except ValueError as err:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.solve: a has shape {sa} and b has shape {sb}; their batch "
            "dims do not broadcast. Make the leading dims match."
        ) from err
    a = jshapes.broadcast_to(a, (*batch, *sa[-2:]))
    b = jshapes.broadcast_to(b, (*batch, *bs[-2:]))
    lu, _, perm = lax_linalg.lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vector else x


def inv(a: Any) -> Any:
    """Inverse of square matrices (..., n, n) (via LU; singular matrices give inf/NaN).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.inv(jnp.array([[2., 0.], [0., 4.]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float64)
    """
    a = _inexact("inv", a)
    n = get_aval(a).shape[-1]
    ident = jshapes.broadcast_to(eye(n, dtype=get_aval(a).dtype), get_aval(a).shape)
    return solve(a, ident)


def _lu_sign_and_diag(a: Any) -> tuple[Any, Any]:
    lu, pivots, _ = lax_linalg.lu(a)
    n = get_aval(a).shape[-1]
    swaps = jred.sum(ufuncs.not_equal(pivots, np.arange(n, dtype=np.int32)), axis=-1)
    parity = ufuncs.subtract(1.0, ufuncs.multiply(2.0, ufuncs.remainder(swaps, 2)))
    parity = parity.astype(get_aval(a).dtype)
    return parity, creation.diagonal(lu, axis1=-2, axis2=-1)


def det(a: Any) -> Any:
    """Determinant of square matrices (..., n, n), from the LU factors.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))
    Array(-2., dtype=float64)
    """
    a = _inexact("det", a)
    parity, diag = _lu_sign_and_diag(a)
    return ufuncs.multiply(parity, jred.prod(diag, axis=-1))


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """(sign, log|det|) of square matrices; sign is 0 and logabsdet -inf for singular ones.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.slogdet(jnp.array([[1., 2.], [3., 4.]])).sign
    Array(-1., dtype=float64)
    """
    a = _inexact("slogdet", a)
    parity, diag = _lu_sign_and_diag(a)
    sign = ufuncs.multiply(parity, jred.prod(ufuncs.sign(diag), axis=-1))
    logabsdet = jred.sum(ufuncs.log(ufuncs.abs(diag)), axis=-1)
    return SlogdetResult(sign, logabsdet)


# ----------------------------------------------------------------------------- svd-based


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse via the SVD; singular values <= rtol * max(s) are dropped
    (default rtol = 10 * max(m, n) * eps, as JAX).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.pinv(jnp.array([[2., 0.], [0., 0.]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float64)
    """
    a = _inexact("pinv", a, square=False)
    m, n = get_aval(a).shape[-2:]
    if rtol is None:
        rtol = rcond
    if rtol is None:
        rtol = 10.0 * builtins.max(m, n) * _eps(a)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    cutoff = ufuncs.multiply(rtol, jred.max(s, axis=-1, keepdims=True))
    keep = ufuncs.greater(s, cutoff)
    s_inv = where(keep, ufuncs.divide(1.0, where(keep, s, 1.0)), 0.0).astype(get_aval(a).dtype)
    return matmul(ufuncs.multiply(_T(vh), jshapes.expand_dims(s_inv, -2)), _T(u))


def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Any:
    """Number of singular values above tol (default max(s) * max(m, n) * eps, as numpy)."""
    M = _inexact("matrix_rank", M, square=False, min_ndim=1)
    if get_aval(M).ndim < 2:
        return jred.any(ufuncs.not_equal(M, 0)).astype(np.int32)
    s = svd(M, compute_uv=False)
    m, n = get_aval(M).shape[-2:]
    smax = jred.max(s, axis=-1, keepdims=True)
    if tol is None:
        if rtol is None:
            rtol = builtins.max(m, n) * _eps(M)
        tol = ufuncs.multiply(smax, rtol)
    else:
        tol = ufuncs.multiply(jshapes.expand_dims(asarray(tol), -1), 1.0)
    return jred.sum(ufuncs.greater(s, tol), axis=-1).astype(np.int32)


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False):
    """Least-squares solution of a @ x = b via the SVD: (x, residuals, rank, s).

    As JAX: residuals are |b - a x|² per column, always computed (numpy returns an empty
    array when rank < n or m <= n; pass numpy_resid=True for that, which needs a concrete a).
    """
    a = asarray(a) if isinstance(a, (list, tuple)) else a
    b = asarray(b) if isinstance(b, (list, tuple)) else b
    a, b = ufuncs.promote_dtypes_inexact("linalg.lstsq", a, b)
    a = _inexact("lstsq", a, square=False)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) != 2 or len(sb) not in (1, 2) or sb[0] != sa[0]:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.lstsq: a has shape {sa} and b has shape {sb}, expected a "
            f"2-d a and b of shape ({sa[0]},) or ({sa[0]}, k). Make b's rows match a's rows."
        )
    vector = len(sb) == 1
    if vector:
        b = jshapes.expand_dims(b, -1)
    m, n = sa
    if rcond is None:
        rcond = _eps(a) * builtins.max(m, n)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    mask = ufuncs.greater(s, ufuncs.multiply(rcond, jred.max(s)))
    rank = jred.sum(mask).astype(np.int32)
    s_inv = where(mask, ufuncs.divide(1.0, where(mask, s, 1.0)), 0.0).astype(get_aval(a).dtype)
    uTb = matmul(_T(u), b)
    x = matmul(_T(vh), ufuncs.multiply(jshapes.expand_dims(s_inv, -1), uTb))
    resid = jred.sum(ufuncs.square(ufuncs.subtract(b, matmul(a, x))), axis=0)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = asarray(np.zeros((0,), get_aval(a).dtype))
    if vector:
        x = x[:, 0]
        if get_aval(resid).shape != (0,):
            resid = resid[0:1]
    return x, resid, rank, s


# ----------------------------------------------------------------------------- norms


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The vector p-norm of x over axis (all axes when None): ord = inf, -inf, 0 or any p."""
    x = _inexact("vector_norm", x, square=False, min_ndim=0)
    if axis is None:
        out = vector_norm(jshapes.ravel(x), axis=0, ord=ord)
        return jshapes.reshape(out, (1,) * get_aval(x).ndim) if keepdims else out
    axes = canonicalize_axes(axis, get_aval(x).ndim, "linalg.vector_norm")
    ax = ufuncs.abs(x)
    if ord is None or ord == 2:
        return ufuncs.sqrt(jred.sum(ufuncs.square(ax), axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return jred.max(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return jred.min(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return jred.sum(ufuncs.not_equal(x, 0), axis=axes, keepdims=keepdims).astype(
            get_aval(x).dtype)
    if ord == 1:
        return jred.sum(ax, axis=axes, keepdims=keepdims)
    p = float(ord)
    return ufuncs.power(jred.sum(ufuncs.power(ax, p), axis=axes, keepdims=keepdims), 1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:
    r, c = axes
    ax = ufuncs.abs(x)
    if ord in (None, "fro", "f"):
        return ufuncs.sqrt(jred.sum(ufuncs.square(ax), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis, red_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = jred.sum(ax, axis=sum_axis, keepdims=True)
        pick = jred.max if ord in (1, np.inf) else jred.min
        out = pick(sums, axis=red_axis, keepdims=True)
        return out if keepdims else jshapes.squeeze(out, axis=axes)
    if ord in (2, -2, "nuc"):
        moved = jshapes.moveaxis(x, axes, (-2, -1))
        s = svd(moved, compute_uv=False)
        out = {2: jred.max, -2: jred.min, "nuc": jred.sum}[ord](s, axis=-1)
        if keepdims:
            out = jshapes.expand_dims(out, builtins.sorted(axes))
        return out
    raise NumbaxValueError(
        f"numbax.numpy.linalg.norm: ord has {ord!r}, expected None, 'fro', 'nuc', 1, -1, 2, -2, "
        "inf or -inf for a matrix norm."
    )


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """numpy.linalg.norm: vector norms over one axis, matrix norms over two.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.norm(jnp.array([3., 4.]))
    Array(5., dtype=float64)
    """
    x = _inexact("norm", x, square=False, min_ndim=0)
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            out = ufuncs.sqrt(jred.sum(ufuncs.square(ufuncs.abs(x))))
            return jshapes.reshape(out, (1,) * nd) if keepdims else out
        if nd not in (1, 2):
            raise NumbaxValueError(
                f"numbax.numpy.linalg.norm: x has shape {get_aval(x).shape} with ord={ord!r} "
                "and axis=None, expected a 1-d or 2-d x. Pass axis.")
        axis = tuple(range(nd))
    axis = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(a, nd, "linalg.norm") for a in axis)  # order matters
    if len(set(axes)) != len(axes):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.norm: axis has {axis!r}, expected distinct axes.")
    if len(axes) == 1:
        if isinstance(ord, str):
            raise NumbaxValueError(
                f"numbax.numpy.linalg.norm: ord has {ord!r} for a vector norm (one axis), "
                "expected a number. Use two axes for matrix norms.")
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise NumbaxValueError(
        f"numbax.numpy.linalg.norm: axis has {axis!r}, expected one or two axes.")


def cond(x: Any, p: Any = None) -> Any:
    """Condition number: ratio of extreme singular values (p None/2/-2), else norm(x) norm(x⁻¹)."""
    x = _inexact("cond", x, square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        big, small = s[..., 0], s[..., -1]
        return ufuncs.divide(big, small) if p != -2 else ufuncs.divide(small, big)
    return ufuncs.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))


# ----------------------------------------------------------------------------- products


def matrix_power(a: Any, n: int) -> Any:
    """a raised to the integer n (static) by repeated squaring; negative n inverts first."""
    a = _inexact("matrix_power", a)
    try:
        n = operator.index(n)
    except TypeError as err:
        raise NumbaxTypeError(
            f"numbax.numpy.linalg.matrix_power: n has type {type(n).__name__}, expected a "
            "Python int. Pass a concrete integer exponent.") from err
    if n == 0:
        return jshapes.broadcast_to(eye(get_aval(a).shape[-1], dtype=get_aval(a).dtype),
                                    get_aval(a).shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    power = a
    while n:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if n:
            power = matmul(power, power)
    return result


def multi_dot(arrays: Any, *, precision: Any = None) -> Any:
    """Chained matrix product, left to right (the first/last may be 1-d, as numpy)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.multi_dot: arrays has {len(arrays)} arrays, expected at "
            "least 2.")
    out = arrays[0]
    for x in arrays[1:]:
        out = linalg_ops.dot(out, x)
    return out


def matrix_transpose(x: Any, /) -> Any:
    """Swaps the last two axes."""
    return _T(x)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the diagonals of the last two axes (array API's linalg.trace)."""
    return creation.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)
