"""scipy.linalg's decompositions and solvers (cholesky, cho_solve, lu, lu_solve, qr, qr_multiply,
svd, eigh, eigh_tridiagonal, schur, hessenberg, solve, solve_triangular, polar...) on the
lax.linalg primitives; special matrices live in linalg_special.py, matrix functions (expm,
sqrtm, funm, solve_sylvester, rsf2csf) in linalg_functions.py."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg as lax_base
from numbax._src.lax import linalg_eig, linalg_lu, linalg_qr, linalg_svd
from numbax._src.lax.linalg import _H, _mm
from numbax._src.numpy import creation, ufuncs
from numbax._src.numpy import linalg as jnp_linalg
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.indexing import take_along_axis
from numbax._src.numpy.lax_numpy import asarray

__all__ = ["cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigh_tridiagonal",
           "hessenberg", "inv", "lu", "lu_factor", "lu_solve", "polar", "qr", "qr_multiply",
           "schur", "solve", "solve_triangular", "svd"]


def _matrix(api: str, a: Any, square: bool = True, arg: str = "a") -> Any:
    """a as a float/complex array of matrices (..., m, n), integers promoted as JAX does."""
    a = asarray(a) if isinstance(a, (list, tuple)) else a
    (a,) = ufuncs.promote_dtypes_inexact(f"scipy.linalg.{api}", a)
    shape = get_aval(a).shape
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        want = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise NumbaxValueError(
            f"numbax.scipy.linalg.{api}: {arg} has shape {shape}, expected {want}.")
    return a


def _rhs(api: str, a: Any, b: Any) -> tuple[Any, Any, bool]:
    """a and b promoted together and broadcast to common batch dims, b as (..., n, k); the
    flag says b was a vector (JAX's rule, including its deprecated batched-vector case)."""
    b = asarray(b) if isinstance(b, (list, tuple)) else b
    a, b = ufuncs.promote_dtypes_inexact(f"scipy.linalg.{api}", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    vector = len(sb) == 1
    if not vector and len(sa) == len(sb) + 1 and sa[-1] == sb[-1]:
        warnings.warn(
            f"numbax.scipy.linalg.{api}: batched 1D solves with b.ndim > 1 are deprecated (as "
            f"in JAX); use {api}(..., b[..., None])[..., 0].", FutureWarning, stacklevel=3)
        vector = True
    if len(sb) < 1 or sb[-1 if vector else -2] != sa[-1]:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.{api}: a has shape {sa} and b has shape {sb}, expected b of "
            f"shape (..., {sa[-1]}) or (..., {sa[-1]}, k).")
    if vector:
        b = jshapes.expand_dims(b, -1)
    sb = get_aval(b).shape
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.{api}: a has shape {sa} and b has shape {sb}; their leading "
            "(batch) dims do not broadcast.") from None
    return (jshapes.broadcast_to(a, batch + sa[-2:]), jshapes.broadcast_to(b, batch + sb[-2:]),
            vector)


# ----------------------------------------------------------------------------- cholesky


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """Cholesky factor of a Hermitian positive definite a: U with a = Uᴴ U (L with a = L Lᴴ
    if lower), reading only that triangle. overwrite_a and check_finite are accepted and
    ignored (arrays are immutable; values are not inspected, as in JAX).

    >>> import numpy as np
    >>> cholesky(np.array([[4., 2.], [2., 5.]]))
    Array([[2., 1.],
           [0., 2.]], dtype=float64)
    """
    a = _matrix("cholesky", a)
    if lower:
        return lax_base.cholesky(a, symmetrize_input=False)
    return _H(lax_base.cholesky(_H(a), symmetrize_input=False))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """(c, lower) for cho_solve: c = cholesky(a, lower)."""
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """x with a x = b from cho_factor's (c, lower).

    >>> import numpy as np
    >>> cho_solve(cho_factor(np.array([[4., 2.], [2., 5.]])), np.array([6., 7.]))
    Array([1., 1.], dtype=float64)
    """
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise NumbaxTypeError(
            "numbax.scipy.linalg.cho_solve: c_and_lower has to be the pair (c, lower) that "
            "cho_factor returns.") from None
    c = _matrix("cho_solve", c, arg="c")
    c, b, vector = _rhs("cho_solve", c, b)
    y = lax_base.triangular_solve(c, b, left_side=True, lower=bool(lower),
                                  transpose_a=not lower, conjugate_a=not lower)
    x = lax_base.triangular_solve(c, y, left_side=True, lower=bool(lower),
                                  transpose_a=bool(lower), conjugate_a=bool(lower))
    return x[..., 0] if vector else x


# ----------------------------------------------------------------------------- lu


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """(lu, piv): L and U packed in one matrix and LAPACK's (0-based) int32 row swaps."""
    a = _matrix("lu_factor", a, square=False)
    lu_mat, pivots, _ = linalg_lu.lu(a)
    return lu_mat, pivots


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """x with op(a) x = b from lu_factor's output; trans 0: a, 1: aᵀ, 2: aᴴ.

    >>> import numpy as np
    >>> lu_solve(lu_factor(np.array([[2., 1.], [1., 3.]])), np.array([3., 4.]))
    Array([1., 1.], dtype=float64)
    """
    try:
        lu_mat, piv = lu_and_piv
    except (TypeError, ValueError):
        raise NumbaxTypeError(
            "numbax.scipy.linalg.lu_solve: lu_and_piv has to be the pair (lu, piv) that "
            "lu_factor returns.") from None
    if trans not in (0, 1, 2):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.lu_solve: trans has {trans!r}, expected 0, 1 or 2.")
    lu_mat = _matrix("lu_solve", lu_mat, arg="lu")
    m = get_aval(lu_mat).shape[-1]
    perm = linalg_lu.lu_pivots_to_permutation(asarray(piv).astype(np.int32), m)
    lu_b, b, vector = _rhs("lu_solve", lu_mat, b)
    batch = get_aval(lu_b).shape[:-2]
    perm = jshapes.broadcast_to(perm, (*batch, m))
    x = linalg_lu.lu_solve(lu_b, perm, b, trans=int(trans))
    return x[..., 0] if vector else x


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> tuple[Any, ...]:
    """LU decomposition a = P L U of matrices (..., m, n): P (m, m) a permutation matrix,
    L (m, k) unit lower, U (k, n) upper, k = min(m, n); (P L, U) if permute_l.

    >>> import numpy as np
    >>> p, l, u = lu(np.array([[1., 2.], [3., 4.]]))
    >>> p
    Array([[0., 1.],
           [1., 0.]], dtype=float64)
    """
    a = _matrix("lu", a, square=False)
    lu_mat, _, perm = linalg_lu.lu(a)
    m, n = get_aval(a).shape[-2:]
    k = min(m, n)
    dtype = get_aval(a).dtype
    p = jshapes.swapaxes(linalg_lu.permutation_matrix(perm, dtype), -1, -2)
    low = ufuncs.add(creation.tril(lu_mat, -1)[..., :k], creation.eye(m, k, dtype=dtype))
    up = creation.triu(lu_mat)[..., :k, :]
    if permute_l:
        return _mm(p, low), up
    return p, low, up


# ----------------------------------------------------------------------------- qr, svd, eig


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """QR decomposition; mode 'full' (Q (m, m)), 'economic' (Q (m, k)) or 'r' (R only);
    with pivoting also the column permutation p (a[:, p] = Q R).

    >>> import numpy as np
    >>> [x.shape for x in qr(np.ones((3, 2)), mode="economic")]
    [(3, 2), (2, 2)]
    """
    if mode not in ("full", "r", "economic"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.qr: mode has {mode!r}, expected 'full', 'economic' or 'r' "
            "(as JAX: no 'raw').")
    a = _matrix("qr", a, square=False)
    q, r, *p = linalg_qr.qr(a, pivoting=bool(pivoting), full_matrices=mode != "economic")
    if mode == "r":
        return (r, *p)
    return (q, r, *p)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Any, ...]:
    """Q @ c (mode 'left') or c @ Q (mode 'right') for the QR decomposition of a, with Q never
    formed (LAPACK ormqr); conjugate uses conj(Q). Returns (product, r[, p]).

    >>> import numpy as np
    >>> qr_multiply(np.eye(2), np.ones((1, 2)))[0].shape
    (1, 2)
    """
    if mode not in ("right", "left"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.qr_multiply: mode has {mode!r}, expected 'right' or 'left'.")
    a = _matrix("qr_multiply", a, square=False)
    c = asarray(c) if isinstance(c, (list, tuple)) else c
    a, c = ufuncs.promote_dtypes_inexact("scipy.linalg.qr_multiply", a, c)
    onedim = get_aval(c).ndim == 1
    if onedim:
        c = jshapes.expand_dims(c, -1 if mode == "left" else 0)
    m, n = get_aval(a).shape[-2:]
    k = min(m, n)
    want, got = (k, get_aval(c).shape[-2]) if mode == "left" else (m, get_aval(c).shape[-1])
    if got != want:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.qr_multiply: a has shape {get_aval(a).shape} and c has shape "
            f"{get_aval(c).shape}; mode={mode!r} needs c with {want} "
            f"{'rows' if mode == 'left' else 'columns'}.")
    batch = tuple(np.broadcast_shapes(get_aval(a).shape[:-2], get_aval(c).shape[:-2]))
    a = jshapes.broadcast_to(a, batch + (m, n))
    c = jshapes.broadcast_to(c, batch + get_aval(c).shape[-2:])
    p = None
    if pivoting:
        p = linalg_qr.qr(a, pivoting=True, full_matrices=False)[2]
        a = take_along_axis(a, jshapes.expand_dims(p, -2), axis=-1)  # columns in pivot order
    h, taus = linalg_qr.geqrf(a)
    if m > n and mode == "left":
        zeros = creation.zeros((*batch, m - k, get_aval(c).shape[-1]), get_aval(c).dtype)
        c = jshapes.concatenate([c, zeros], axis=-2)
    if conjugate:
        c = jshapes.swapaxes(c, -1, -2)
    left = (mode == "left") != bool(conjugate)
    cq = linalg_qr.ormqr(h, taus, c, left=left, transpose=bool(conjugate))
    if conjugate:
        cq = jshapes.swapaxes(cq, -1, -2)
    if mode == "right":
        cq = cq[..., :k]
    if onedim:
        cq = jshapes.ravel(cq)
    r = creation.triu(h[..., :k, :])
    return (cq, r) if p is None else (cq, r, p)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """Singular value decomposition (u, s, vh) (s alone without compute_uv); LAPACK gesdd
    whatever lapack_driver says (as JAX)."""
    if lapack_driver not in ("gesdd", "gesvd"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.svd: lapack_driver has {lapack_driver!r}, expected 'gesdd' or "
            "'gesvd'.")
    a = _matrix("svd", a, square=False)
    return linalg_svd.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: tuple[int, int] | None = None, type: int = 1,  # noqa: A002 (scipy's name)
         check_finite: bool = True) -> Any:
    """Eigenvalues (ascending) [and eigenvectors] of Hermitian a, or of the generalized
    problem with Hermitian positive definite b (type 1: a v = w b v, 2: a b v = w v, 3:
    b a v = w v; vectors b-normalised as scipy's). eigvals=(lo, hi): those indices only.

    Unlike JAX, which implements b=None, type=1, eigvals=None only.

    >>> import numpy as np
    >>> eigh(np.diag([2., 1.]), eigvals_only=True)
    Array([1., 2.], dtype=float64)
    """
    a = _matrix("eigh", a)
    if type not in (1, 2, 3):
        raise NumbaxValueError(f"numbax.scipy.linalg.eigh: type has {type!r}, expected 1, 2 "
                               "or 3.")
    n = get_aval(a).shape[-1]
    subset = None
    if eigvals is not None:
        lo, hi = (int(i) for i in eigvals)
        subset = (lo, hi + 1)
    if b is None:
        v, w = linalg_eig.eigh(a, lower=lower, symmetrize_input=False, subset_by_index=subset)
        return w if eigvals_only else (w, v)
    b = _matrix("eigh", b, arg="b")
    a, b = ufuncs.promote_dtypes_inexact("scipy.linalg.eigh", a, b)
    if get_aval(b).shape[-1] != n:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.eigh: a has shape {get_aval(a).shape} and b has shape "
            f"{get_aval(b).shape}, expected matrices of one size.")
    low = lax_base.cholesky(b if lower else _H(b), symmetrize_input=False)
    herm = a if lower else _H(a)
    herm = ufuncs.multiply(ufuncs.add(herm, _H(herm)), 0.5)
    if type == 1:  # L⁻¹ a L⁻ᴴ
        c = lax_base.triangular_solve(low, herm, left_side=True, lower=True)
        c = lax_base.triangular_solve(low, c, left_side=False, lower=True, transpose_a=True,
                                      conjugate_a=True)
    else:  # Lᴴ a L
        c = _mm(_mm(_H(low), herm), low)
    y, w = linalg_eig.eigh(c, subset_by_index=subset)
    if eigvals_only:
        return w
    if type == 3:
        return w, _mm(low, y)
    return w, lax_base.triangular_solve(low, y, left_side=True, lower=True, transpose_a=True,
                                        conjugate_a=True)


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: Any = None) -> Any:
    """Eigenvalues [and eigenvectors] of the Hermitian tridiagonal matrix with diagonal d
    (n,) and superdiagonal e (n - 1,) (subdiagonal conj(e)); select 'a' (all) or 'i'
    (indices select_range[0]..select_range[1]).

    Unlike JAX (bisection and inverse iteration, key seeding the starting vectors): eigh of
    the tridiagonal matrix, so tol and key have no effect; eigenvectors are determined up to
    sign (phase) as anywhere.

    >>> import numpy as np
    >>> eigh_tridiagonal(np.array([2., 2.]), np.array([1.]), eigvals_only=True)
    Array([1., 3.], dtype=float64)
    """
    d, e = asarray(d), asarray(e)
    if get_aval(d).dtype != get_aval(e).dtype:
        raise NumbaxTypeError(
            f"numbax.scipy.linalg.eigh_tridiagonal: d has dtype {get_aval(d).dtype} and e has "
            f"dtype {get_aval(e).dtype}, expected the same float or complex dtype.")
    if kind_of(get_aval(d).dtype) not in "fc":
        raise NumbaxTypeError(
            f"numbax.scipy.linalg.eigh_tridiagonal: d has dtype {get_aval(d).dtype}, expected "
            "float32, float64, complex64 or complex128.")
    n = get_aval(d).shape[0] if get_aval(d).ndim == 1 else -1
    if n < 0 or get_aval(e).shape != (max(n - 1, 0),):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.eigh_tridiagonal: d has shape {get_aval(d).shape} and e has "
            f"shape {get_aval(e).shape}, expected (n,) and (n - 1,).")
    subset = None
    if select == "i":
        if select_range is None:
            raise NumbaxValueError("numbax.scipy.linalg.eigh_tridiagonal: select='i' needs "
                                   "select_range=(lo, hi).")
        lo, hi = (int(i) for i in select_range)
        if lo > hi:
            raise NumbaxValueError("numbax.scipy.linalg.eigh_tridiagonal: select_range has an "
                                   f"empty index range {select_range!r}.")
        subset = (lo, hi + 1)
    elif select == "v":
        raise NotImplementedError("numbax.scipy.linalg.eigh_tridiagonal: select='v' gives a "
                                  "value-dependent shape (not implemented, as in JAX).")
    elif select != "a":
        raise NumbaxValueError(f"numbax.scipy.linalg.eigh_tridiagonal: select has {select!r}, "
                               "expected 'a', 'i' or 'v'.")
    t = ufuncs.add(creation.diag(d), ufuncs.add(creation.diag(e, 1),
                                                creation.diag(ufuncs.conj(e), -1)))
    v, w = linalg_eig.eigh(t, symmetrize_input=False, subset_by_index=subset)
    return w if eigvals_only else (w, v)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """Schur decomposition a = Z T Zᴴ: (T, Z); output 'complex' makes T upper triangular.

    >>> import numpy as np
    >>> schur(np.array([[0., -1.], [1., 0.]]), output="complex")[0].dtype
    dtype('complex128')
    """
    if output not in ("real", "complex"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.schur: output has {output!r}, expected 'real' or 'complex'.")
    a = _matrix("schur", a)
    if output == "complex":
        a = a.astype(np.result_type(get_aval(a).dtype, np.complex64))
    return linalg_eig.schur(a)


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """Upper Hessenberg form H = Qᴴ a Q (LAPACK gehrd): H, or (H, Q) with calc_q."""
    a = _matrix("hessenberg", a)
    n = get_aval(a).shape[-1]
    if n == 0:
        return (a, a) if calc_q else a
    packed, taus = linalg_qr.hessenberg(a)
    h = creation.triu(packed, -1)
    if not calc_q:
        return h
    q = linalg_qr.householder_product(packed[..., 1:, :-1], taus)
    zero_col = creation.zeros((*get_aval(a).shape[:-2], n - 1, 1), get_aval(a).dtype)
    top = jshapes.broadcast_to(creation.eye(1, n, dtype=get_aval(a).dtype),
                               (*get_aval(a).shape[:-2], 1, n))
    bottom = jshapes.concatenate([zero_col, q], axis=-1)
    return h, jshapes.concatenate([top, bottom], axis=-2)


# ----------------------------------------------------------------------------- solvers


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Determinant (numbax.numpy.linalg.det)."""
    return jnp_linalg.det(a)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Inverse (numbax.numpy.linalg.inv)."""
    return jnp_linalg.inv(a)


def _pos_solve(a: Any, b: Any, lower: bool) -> Any:
    """a x = b through a's Cholesky factor; the derivative is the general solve's (JAX's)."""

    @custom_jvp
    def chol_solve(a, b):
        return cho_solve(cho_factor(a, lower=lower), b)

    @chol_solve.defjvp
    def chol_solve_jvp(primals, tangents):
        (a, b), (a_dot, b_dot) = primals, tangents
        factors = cho_factor(a, lower=lower)
        x = cho_solve(factors, b)
        return x, cho_solve(factors, ufuncs.subtract(b_dot, _mm(a_dot, x)))

    return chol_solve(a, b)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """x with a x = b; assume_a 'gen', 'sym', 'her' (LU) or 'pos' (Cholesky of the triangle
    `lower`). overwrite_*, debug and check_finite are accepted and ignored.

    >>> import numpy as np
    >>> solve(np.array([[4., 2.], [2., 5.]]), np.array([6., 7.]), assume_a="pos")
    Array([1., 1.], dtype=float64)
    """
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.solve: assume_a has {assume_a!r}, expected 'gen', 'sym', "
            "'her' or 'pos'.")
    if assume_a != "pos":
        return jnp_linalg.solve(a, b)
    a = _matrix("solve", a)
    a, b, vector = _rhs("solve", a, b)
    x = _pos_solve(a, b, bool(lower))
    return x[..., 0] if vector else x


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
    """x with op(a) x = b for triangular a; trans 0/'N': a, 1/'T': aᵀ, 2/'C': aᴴ.

    >>> import numpy as np
    >>> solve_triangular(np.array([[2., 0.], [1., 1.]]), np.array([2., 3.]), lower=True)
    Array([1., 2.], dtype=float64)
    """
    modes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in modes:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.solve_triangular: trans has {trans!r}, expected 0, 1, 2, "
            "'N', 'T' or 'C'.")
    transpose_a, conjugate_a = modes[trans]
    a = _matrix("solve_triangular", a)
    a, b, vector = _rhs("solve_triangular", a, b)
    x = lax_base.triangular_solve(a, b, left_side=True, lower=bool(lower),
                                  transpose_a=transpose_a, conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    return x[..., 0] if vector else x


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
    """Polar decomposition: a = u p (side 'right') or a = p u ('left'), u with orthonormal
    columns (rows), p Hermitian positive semi-definite. method 'qdwh' (m >= n with 'right',
    m < n with 'left', as JAX) or 'svd' (any shape).

    >>> import numpy as np
    >>> u, p = polar(np.array([[2., 0.], [0., 3.]]), method="svd")
    >>> p
    Array([[2., 0.],
           [0., 3.]], dtype=float64)
    """
    if side not in ("right", "left"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.polar: side has {side!r}, expected 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.polar: method has {method!r}, expected 'qdwh' or 'svd'.")
    a = _matrix("polar", a, square=False)
    m, n = get_aval(a).shape[-2:]
    if method == "svd":
        u_s, s, vh = linalg_svd.svd(a, full_matrices=False)
        s = s.astype(get_aval(a).dtype)
        unitary = _mm(u_s, vh)
        if side == "right":
            return unitary, _mm(ufuncs.multiply(_H(vh), jshapes.expand_dims(s, -2)), vh)
        return unitary, _mm(ufuncs.multiply(u_s, jshapes.expand_dims(s, -2)), _H(u_s))
    if (m >= n) != (side == "right"):
        raise NotImplementedError(
            f"numbax.scipy.linalg.polar: method='qdwh' supports m >= n with side='right' and "
            f"m < n with side='left' (as JAX), got shape {(m, n)} with side={side!r}. Use "
            "method='svd'.")
    from numbax._src.api import vmap

    def one(x):
        if side == "left":
            u, h, _, _ = linalg_svd.qdwh(_H(x), eps=eps, max_iterations=max_iterations)
            return _H(u), _H(h)
        u, h, _, _ = linalg_svd.qdwh(x, eps=eps, max_iterations=max_iterations)
        return u, h

    fn = one
    for _ in get_aval(a).shape[:-2]:
        fn = vmap(fn)
    return fn(a)
