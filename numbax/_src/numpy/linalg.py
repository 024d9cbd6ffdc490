"""numbax.numpy.linalg: numpy.linalg on the lax.linalg decompositions (solve, inv, det, eig...),
real and complex; the norms and products live in linalg_norms.py."""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any, NamedTuple

import numpy as np

from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import finfo_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg as lax_base
from numbax._src.lax import linalg_eig, linalg_lu, linalg_qr, linalg_svd, shape_ops
from numbax._src.lax import sort as lax_sort
from numbax._src.numpy import creation, ufuncs
from numbax._src.numpy import reductions as jred
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.indexing import take_along_axis
from numbax._src.numpy.lax_numpy import asarray, where
from numbax._src.numpy.linalg_det import SlogdetResult, det, slogdet  # noqa: F401
from numbax._src.numpy.linalg_norms import (  # noqa: F401  (numbax.numpy.linalg's names)
    as_inexact,
    cross,
    diagonal,
    matmul,
    matrix_norm,
    matrix_transpose,
    multi_dot,
    norm,
    outer,
    tensordot,
    trace,
    vecdot,
    vector_norm,
)

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
           "inv", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve",
           "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
           "vector_norm", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# ----------------------------------------------------------------------------- helpers


def _inexact(api: str, a: Any, square: bool = True, min_ndim: int = 2) -> Any:
    """a as a float or complex array (integers promote like JAX), checked to be (..., n, n)."""
    a = as_inexact(api, a)
    aval = get_aval(a)
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


def _H(x: Any) -> Any:
    return lax_base._H(x)


def _eps(x: Any) -> float:
    return float(finfo_of(get_aval(x).dtype).eps)


def _mm(a: Any, b: Any) -> Any:
    return lax_base._mm(a, b)


# ----------------------------------------------------------------------------- decompositions


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """Cholesky factor of Hermitian positive definite a: L with a = L Lᴴ (or U = Lᴴ if upper).

    Unlike numpy (and as JAX): a matrix that is not positive definite gives NaNs.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 5.]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    a = _inexact("cholesky", a)
    L = lax_base.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors (columns) of square matrices, complex, in LAPACK's
    order (JAX's); eigenvector derivatives are not defined (as JAX: only the eigenvalues').

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.eig(jnp.array([[2., 0.], [0., 1.]])).eigenvalues
    Array([2.+0.j, 1.+0.j], dtype=complex128)
    """
    a = _inexact("eig", a)
    w, v = linalg_eig.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: Any) -> Any:
    """Eigenvalues of square matrices (complex, LAPACK's order); differentiable."""
    a = _inexact("eigvals", a)
    return linalg_eig.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of Hermitian matrices.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.eigh(jnp.array([[2., 1.], [1., 2.]])).eigenvalues
    Array([1., 3.], dtype=float64)
    """
    if UPLO not in (None, "L", "U"):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.eigh: UPLO has {UPLO!r}, expected None, 'L' or 'U'.")
    a = _inexact("eigh", a)
    v, w = linalg_eig.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """Eigenvalues (ascending, real) of Hermitian matrices."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def _hermitian_svd(a: Any, compute_uv: bool, subset_by_index: Any) -> Any:
    """JAX's svd(hermitian=True): |eigenvalues| sorted descending, u from the eigenvectors."""
    v, w = linalg_eig.eigh(a, subset_by_index=subset_by_index)
    s = ufuncs.abs(w)
    nd = get_aval(s).ndim
    if not compute_uv:
        return shape_ops.rev(lax_sort.sort(s, dimension=nd - 1), (nd - 1,))
    idx = shape_ops.broadcasted_iota(np.int32, get_aval(s).shape, nd - 1)
    sign = ufuncs.sign(w)
    s, idx, sign = (shape_ops.rev(x, (nd - 1,))
                    for x in lax_sort.sort((s, idx, sign), dimension=nd - 1, num_keys=1))
    u = take_along_axis(v, jshapes.expand_dims(idx, -2), axis=-1)
    vh = _H(ufuncs.multiply(u, jshapes.expand_dims(sign, -2).astype(get_aval(u).dtype)))
    return SVDResult(u, s, vh)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None) -> Any:
    """Singular value decomposition a = U diag(S) Vh; S real, descending. With hermitian=True
    the decomposition comes from eigh (as JAX).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.svd(jnp.array([[3., 0.], [0., 4.]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    a = _inexact("svd", a, square=bool(hermitian))
    if hermitian:
        return _hermitian_svd(a, compute_uv, subset_by_index)
    if not compute_uv:
        return linalg_svd.svd(a, full_matrices=full_matrices, compute_uv=False,
                              subset_by_index=subset_by_index)
    u, s, vh = linalg_svd.svd(a, full_matrices=full_matrices, subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)


def svdvals(x: Any, /) -> Any:
    """Singular values, descending."""
    return svd(x, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition; mode 'reduced' (or 'full'), 'complete', 'r', or 'raw' (LAPACK's
    Householder form, (h, tau) with h transposed as numpy's).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.qr(jnp.eye(2), mode="r").shape
    (2, 2)
    """
    a = _inexact("qr", a, square=False)
    if mode not in ("reduced", "complete", "r", "raw", "full"):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.qr: mode has {mode!r}, expected 'reduced', 'complete', 'r' "
            "or 'raw'.")
    if mode == "raw":
        h, taus = linalg_qr.geqrf(a)
        return QRResult(jshapes.swapaxes(h, -1, -2), taus)
    q, r = linalg_qr.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


# ----------------------------------------------------------------------------- solve, inv, det


def solve(a: Any, b: Any) -> Any:
    """x with a @ x = b for square a (..., n, n) and b (n,) or (..., n, k); leading dims
    broadcast (as numpy 2 and JAX >= 0.5: b is a vector only when it is 1-d).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 2.]))
    Array([1. , 0.5], dtype=float64)
    """
    a = asarray(a) if isinstance(a, (list, tuple)) else a
    b = asarray(b) if isinstance(b, (list, tuple)) else b
    a, b = ufuncs.promote_dtypes_inexact("linalg.solve", a, b)
    a = _inexact("solve", a)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    vector = len(sb) == 1
    if len(sb) < 1 or (vector and sb[0] != sa[-1]) or (not vector and sb[-2] != sa[-1]):
        hint = (" (b of one dimension fewer than a is no longer a stack of vectors: use "
                "solve(a, b[..., None])[..., 0])" if len(sb) == len(sa) - 1 else "")
        raise NumbaxValueError(
            f"numbax.numpy.linalg.solve: a has shape {sa} and b has shape {sb}, expected b of "
            f"shape ({sa[-1]},) or (..., {sa[-1]}, k){hint}.")
    if vector:
        b = jshapes.expand_dims(b, -1)
    bs = get_aval(b).shape
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], bs[:-2]))
    except ValueError:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.solve: a has shape {sa} and b has shape {sb}; their leading "
            "(batch) dims do not broadcast. Make them match.") from None
    a = jshapes.broadcast_to(a, (*batch, *sa[-2:]))
    b = jshapes.broadcast_to(b, (*batch, *bs[-2:]))
    x = linalg_lu.solve(a, b)
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
    ident = jshapes.broadcast_to(creation.eye(n, dtype=get_aval(a).dtype), get_aval(a).shape)
    return linalg_lu.solve(a, ident)


# ----------------------------------------------------------------------------- svd-based


def _pinv_value(a: Any, rtol: Any, hermitian: bool) -> Any:
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = ufuncs.multiply(jshapes.expand_dims(rtol, -1), s[..., 0:1])
    s_inv = where(ufuncs.greater(s, cutoff), ufuncs.divide(1, where(s > cutoff, s, 1)), 0)
    return _mm(_H(vh), ufuncs.multiply(jshapes.expand_dims(s_inv.astype(get_aval(u).dtype), -1),
                                       _H(u)))


def _pinv_jvp(hermitian: bool, primals, tangents):
    """Golub and Pereyra (1973), as JAX: exact also where singular values vanish."""
    a, rtol = primals
    a_dot = tangents[0]
    p = _pinv_value(a, rtol, hermitian)
    if hermitian:
        a = ufuncs.multiply(ufuncs.add(a, _H(a)), 0.5)
        a_dot = ufuncs.multiply(ufuncs.add(a_dot, _H(a_dot)), 0.5)
    m, n = get_aval(a).shape[-2:]
    ad_h = _H(a_dot)
    if m >= n:
        s = _mm(_mm(p, _H(p)), ad_h)
        t = _mm(_mm(ad_h, _H(p)), p)
        p_dot = ufuncs.add(ufuncs.subtract(ufuncs.negative(_mm(_mm(p, a_dot), p)), ufuncs.subtract(
            _mm(_mm(s, a), p), s)), ufuncs.subtract(t, _mm(_mm(p, a), t)))
    else:
        s = _mm(p, _mm(_H(p), ad_h))
        t = _mm(ad_h, _mm(_H(p), p))
        p_dot = ufuncs.add(ufuncs.subtract(ufuncs.negative(_mm(p, _mm(a_dot, p))), ufuncs.subtract(
            _mm(s, _mm(a, p)), s)), ufuncs.subtract(t, _mm(p, _mm(a, t))))
    return p, p_dot


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """Moore-Penrose pseudo-inverse via the SVD; singular values <= rtol * max(s) are dropped
    (default rtol = 10 * max(m, n) * eps, as JAX); derivative as JAX's (Golub-Pereyra).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.pinv(jnp.array([[2., 0.], [0., 0.]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float64)
    """
    if rcond is not None:
        if rtol is not None:
            raise NumbaxValueError(
                "numbax.numpy.linalg.pinv: rtol and rcond are both given, expected one.")
        rtol = rcond
    a = _inexact("pinv", a, square=bool(hermitian))
    m, n = get_aval(a).shape[-2:]
    if m == 0 or n == 0:
        return jshapes.swapaxes(a, -1, -2)
    real = get_aval(ufuncs.abs(a)).dtype
    if rtol is None:
        rtol = 10.0 * builtins.max(m, n) * _eps(a)
    rtol = asarray(rtol).astype(real)
    f = custom_jvp(lambda x, r: _pinv_value(x, r, bool(hermitian)))
    f.defjvp(lambda primals, tangents: _pinv_jvp(bool(hermitian), primals, tangents))
    return f(a, rtol)


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """Number of singular values above the threshold; as JAX, a given rtol (or tol) is that
    threshold itself, and the default is max(s) * max(m, n) * eps."""
    if tol is not None:
        if rtol is not None:
            raise NumbaxValueError(
                "numbax.numpy.linalg.matrix_rank: rtol and tol are both given, expected one.")
        rtol = tol
    M = _inexact("matrix_rank", M, square=False, min_ndim=0)
    if get_aval(M).ndim < 2:
        return jred.any(ufuncs.not_equal(M, 0)).astype(np.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = ufuncs.multiply(jred.max(s, axis=-1), builtins.max(get_aval(M).shape[-2:])
                               * _eps(s))
    rtol = asarray(rtol)
    return jred.sum(ufuncs.greater(s, jshapes.expand_dims(rtol, -1)), axis=-1)


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
    eps = _eps(a)
    rcond = eps * builtins.max(m, n) if rcond is None else where(asarray(rcond) < 0, eps, rcond)
    u, s, vh = linalg_svd.svd(a, full_matrices=False)
    mask = ufuncs.logical_and(ufuncs.greater(s, 0), ufuncs.greater_equal(
        s, ufuncs.multiply(rcond, s[0] if min(m, n) else 0)))
    rank = jred.sum(mask)
    s_inv = where(mask, ufuncs.divide(1, where(mask, s, 1)), 0).astype(get_aval(a).dtype)
    x = _mm(_H(vh), ufuncs.multiply(jshapes.expand_dims(s_inv, -1), _mm(_H(u), b)))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = asarray(np.zeros((0,), get_aval(s).dtype))
    else:
        resid = ufuncs.square(vector_norm(ufuncs.subtract(b, _mm(a, x)), axis=0))
    if vector:
        x = x[:, 0]
    return x, resid, rank, s


def cond(x: Any, p: Any = None) -> Any:
    """Condition number: ratio of extreme singular values (p None/2/-2), else norm(x) norm(x⁻¹)
    (NaN from a singular x becomes inf, as JAX)."""
    x = _inexact("cond", x, square=p not in (None, 2, -2))
    if 0 in get_aval(x).shape[-2:]:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.cond: x has shape {get_aval(x).shape}, expected non-empty "
            "matrices.")
    if p in (None, 2):
        s = svdvals(x)
        return ufuncs.divide(s[..., 0], s[..., -1])
    if p == -2:
        s = svdvals(x)
        r = ufuncs.divide(s[..., -1], s[..., 0])
    else:
        r = ufuncs.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))
    x_nan = jred.any(ufuncs.isnan(x), axis=(-2, -1))
    return where(ufuncs.logical_and(ufuncs.isnan(r), ufuncs.logical_not(x_nan)), np.inf, r)


# ----------------------------------------------------------------------------- tensors, powers


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
        return jshapes.broadcast_to(creation.eye(get_aval(a).shape[-1], dtype=get_aval(a).dtype),
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


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of a as a tensor map: tensordot(tensorinv(a, ind), a, ind) is the identity
    on a.shape[ind:] (the first `ind` axes' sizes multiply to the rest's)."""
    a = as_inexact("tensorinv", a)
    ind = operator.index(ind)
    shape = get_aval(a).shape
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if ind <= 0 or rows != cols:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.tensorinv: a has shape {shape} with ind={ind}, expected "
            "ind > 0 and the product of the first ind dimensions to equal the rest's.")
    out = inv(jshapes.reshape(a, (rows, cols)))
    return jshapes.reshape(out, (*shape[ind:], *shape[:ind]))


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    """x with tensordot(a, x, x.ndim) = b; `axes` of a move to the end first."""
    a = as_inexact("tensorsolve", a)
    b = as_inexact("tensorsolve", b)
    if axes is not None:
        nd = get_aval(a).ndim
        a = jshapes.moveaxis(a, axes, tuple(range(nd - len(axes), nd)))
    sa, sb = get_aval(a).shape, get_aval(b).shape
    out_shape = sa[len(sb):]
    if sa[:len(sb)] != sb or math.prod(sb) != math.prod(out_shape):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.tensorsolve: a has shape {sa} and b has shape {sb}, expected "
            "a's leading dims to equal b's shape and the rest to hold as many elements.")
    x = solve(jshapes.reshape(a, (math.prod(sb), math.prod(out_shape))), jshapes.ravel(b))
    return jshapes.reshape(x, out_shape)
