"""Linear algebra primitives, part three: Householder reductions (qr, geqrf,
householder_product, ormqr, hessenberg, tridiagonal), each one LAPACK call per matrix."""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy  # scipy.linalg: imported at first use (scipy loads subpackages lazily)

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import linalg_blas, shape_ops
from numbax._src.lax.linalg import (
    _H,
    _T,
    _check_matrix,
    _each_matrix,
    _eye_like,
    _front_batch,
    _mm,
    _no_jvp,
    _real_dtype,
    _real_part,
    _tril,
    _unary_batch,
    triangular_solve,
)
from numbax._src.lax.linalg_blas import optimal_lwork
from numbax._src.lax.linalg_lu import lu_p, lu_solve, permutation_matrix
from numbax._src.lazy_module import lazy

lapack = lazy("scipy.linalg.lapack")


def _lapack(name: str, *arrays: np.ndarray):
    return lapack.get_lapack_funcs(name, arrays)



def _cols(x: Any, start: int, stop: int) -> Any:
    return shape_ops.slice_in_dim(x, start, stop, axis=get_aval(x).ndim - 1)


def _rows(x: Any, start: int, stop: int) -> Any:
    return shape_ops.slice_in_dim(x, start, stop, axis=get_aval(x).ndim - 2)


# ----------------------------------------------------------------------------- qr

qr_p = Primitive("qr", multiple_results=True)


def _qr_abstract_eval(x: ShapedArray, *, pivoting: bool, full_matrices: bool):
    _check_matrix("qr", x, square=False)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    outs = [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]
    if pivoting:
        outs.append(ShapedArray((*batch, n), np.dtype(np.int32)))
    return outs


def _qr_pivoted_one(x: np.ndarray, full_matrices: bool):
    q, r, p = scipy.linalg.qr(x, mode="full" if full_matrices else "economic", pivoting=True,
                              check_finite=False)
    return q, r, p.astype(np.int32)


def _qr_impl(x: np.ndarray, *, pivoting: bool, full_matrices: bool) -> list[np.ndarray]:
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    if 0 in x.shape:
        q = np.broadcast_to(np.eye(m, k, dtype=x.dtype), (*batch, m, k)).copy()
        outs = [q, np.zeros((*batch, k, n), x.dtype)]
        return outs + [np.zeros((*batch, n), np.int32)] if pivoting else outs
    if pivoting:
        outs = _each_matrix(lambda a: _qr_pivoted_one(a, full_matrices), x, 3)
        return [outs[0].astype(x.dtype), outs[1].astype(x.dtype), outs[2]]
    if x.ndim == 2 and x.dtype in linalg_blas.LAPACK_DTYPES:
        return _qr_one(x, full_matrices)
    # a stack: numpy's batched QR (one call for all, where a Python loop of LAPACK calls per
    # matrix would cost more for the many small matrices stacks usually hold)
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype), r.astype(x.dtype)]


def _qr_one(x: np.ndarray, full_matrices: bool) -> list[np.ndarray]:
    """One matrix's (q, r): geqrf on a column-major copy, r its upper triangle, q from orgqr
    (ungqr) on the reflectors, both with LAPACK's optimal workspace (numpy's qr: 1.5x the
    time at 1024^2, its layout copies on one thread)."""
    m, n = x.shape
    k = min(m, n)
    h, tau = _geqrf_of_copy(x)
    r = _upper(h, m if full_matrices else k)
    if full_matrices and m > n:  # Q is m x m: the n reflectors in the first columns of m
        reflectors = np.zeros((m, m), x.dtype, order="F")
        reflectors[:, :n] = h
    else:
        reflectors = h[:, :k]
    return [_orgqr_one(reflectors, tau, overwrite=True)[0], r]


def _geqrf_of_copy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """geqrf of one matrix, on a blocked column-major copy it overwrites."""
    return _geqrf_one(linalg_blas.relaid(x, "F"), overwrite=True)


def _upper(h: np.ndarray, rows: int) -> np.ndarray:
    """R from geqrf's column-major result: its first `rows` rows, upper triangle, row-major."""
    r = linalg_blas.relaid(h[:rows], "C")
    for i in range(1, rows):  # below the diagonal: the reflectors
        r[i, :min(i, h.shape[1])] = 0
    return r


# R of a QR whose Q nothing reads: what the CPU backend runs for such a qr
# (compiler/passes.py `qr_without_q`): geqrf alone, without the orgqr that would form Q, half
# of a square QR's work (XLA drops it too, as dead code of its expansion). Internal: the
# jaxprs users see hold qr.
qr_r_p = Primitive("qr_r")


def _qr_r_abstract_eval(x: ShapedArray, *, full_matrices: bool):
    return [_qr_abstract_eval(x, pivoting=False, full_matrices=full_matrices)[1]]


def _qr_r_impl(x: np.ndarray, *, full_matrices: bool) -> list[np.ndarray]:
    m, n = x.shape[-2:]
    if x.ndim == 2 and x.dtype in linalg_blas.LAPACK_DTYPES and 0 not in x.shape:
        return [_upper(_geqrf_of_copy(x)[0], m if full_matrices else min(m, n))]
    return [_qr_impl(x, pivoting=False, full_matrices=full_matrices)[1]]


core.abstract_eval_rules[qr_r_p] = _qr_r_abstract_eval
core.impl_rules[qr_r_p] = _qr_r_impl


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """j-towns.github.io/papers/qr-derivative.pdf for m >= n (q (..., m, n), r (..., n, n)),
    with the imaginary diagonal correction complex inputs need."""
    dx_rinv = triangular_solve(r, dx)  # dx r⁻¹
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = ew.sub(low, _H(low))  # skew-Hermitian
    imag_diag = ew.sub(qt_dx_rinv, _real_part(qt_dx_rinv))
    do = ew.add(do, ew.mul(_eye_like(do), imag_diag))
    dq = ew.add(_mm(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(ew.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices):
    """JAX's rule: wide x splits as [x1 x2] (x1 = q r1, r2 = qᴴ x2); full_matrices on tall x
    extends dq by arxiv.org/abs/2409.13374, eqs. 32-33; pivoting differentiates x[:, p]."""
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices)
    q, r = outs[0], outs[1]
    dx = ad.instantiate_zeros(dx)
    *_, m, n = get_aval(x).shape
    if pivoting:
        p_t = _T(permutation_matrix(outs[2], get_aval(x).dtype))
        x, dx = _mm(x, p_t), _mm(dx, p_t)  # columns in pivot order
    if m < n:
        dq, dr1 = _thin_qr_jvp(q, _cols(r, 0, m), _cols(dx, 0, m))
        dr2 = ew.add(_mm(_H(dq), _cols(x, m, n)), _mm(_H(q), _cols(dx, m, n)))
        dr = shape_ops.concatenate([dr1, dr2], get_aval(dr1).ndim - 1)
    elif not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, dx)
    else:
        q_mn, q_mp = _cols(q, 0, n), _cols(q, n, m)
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, _rows(r, 0, n), dx)
        q_nn, q_pn = _rows(q_mn, 0, n), _rows(q_mn, n, m)
        dq_nn, dq_pn = _rows(dq_mn, 0, n), _rows(dq_mn, n, m)
        shifted = ew.sub(q_nn, _eye_like(q_nn))
        lu_mat, _, perm = lu_p.bind(shifted)
        z_pn_h = lu_solve(lu_mat, perm, _H(q_pn), trans=2)
        z_pn = _H(z_pn_h)
        dq_mp = ew.sub(_mm(dq_mn, z_pn_h), _mm(ew.add(q_mn, _mm(q_mp, z_pn)),
                                               _H(ew.sub(dq_pn, _mm(z_pn, dq_nn)))))
        dq = shape_ops.concatenate([dq_mn, dq_mp], get_aval(dq_mn).ndim - 1)
        zeros = shape_ops.full((*get_aval(dr_nn).shape[:-2], m - n, n), 0, get_aval(x).dtype)
        dr = shape_ops.concatenate([dr_nn, zeros], get_aval(dr_nn).ndim - 2)
    tangents_out = [dq, dr]
    if pivoting:
        tangents_out.append(ad.Zero.from_primal_value(outs[2]))
    return outs, tangents_out


core.abstract_eval_rules[qr_p] = _qr_abstract_eval
core.impl_rules[qr_p] = _qr_impl
ad.jvp_rules[qr_p] = _qr_jvp
batching.batch_rules[qr_p] = _unary_batch(qr_p)


def _qr_r_jvp(primals, tangents, *, full_matrices):
    """qr's rule, R's part (the rule needs Q)."""
    outs, tangents_out = _qr_jvp(primals, tangents, pivoting=False, full_matrices=full_matrices)
    return [outs[1]], [tangents_out[1]]


ad.jvp_rules[qr_r_p] = _qr_r_jvp
batching.batch_rules[qr_r_p] = _unary_batch(qr_r_p)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Any, ...]:
    """QR decomposition x = q r (x[..., p] = q r with pivoting) of matrices (..., m, n).

    Args:
      x: float or complex matrices.
      pivoting: column pivoting (LAPACK geqp3): |diag(r)| non-increasing; adds p (int32).
      full_matrices: q is (..., m, m) and r (..., m, n); else (..., m, k), (..., k, n),
        k = min(m, n).
      use_magma: accepted for JAX compatibility (a GPU option); no effect.

    Returns:
      (q, r), or (q, r, p) with pivoting. Differentiable for every shape (as JAX 0.10).

    >>> import numpy as np
    >>> q, r = qr(np.eye(2))
    >>> np.abs(np.asarray(r))
    array([[1., 0.],
           [0., 1.]])
    """
    return tuple(qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices)))


# ----------------------------------------------------------------------------- geqrf

geqrf_p = Primitive("geqrf", multiple_results=True)


def _geqrf_abstract_eval(a: ShapedArray) -> list[ShapedArray]:
    _check_matrix("geqrf", a, "a", square=False)
    *batch, m, n = a.shape
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, min(m, n)), a.dtype)]


def _geqrf_one(a: np.ndarray, overwrite: bool = False):
    work, _ = _lapack("geqrf_lwork", a)(*a.shape)
    qr, tau, _, _ = _lapack("geqrf", a)(a, lwork=optimal_lwork(work),
                                        overwrite_a=int(overwrite))
    return qr, tau


def _geqrf_impl(a: np.ndarray) -> list[np.ndarray]:
    *batch, m, n = a.shape
    if 0 in a.shape:
        return [a.copy(), np.zeros((*batch, min(m, n)), a.dtype)]
    return _each_matrix(_geqrf_one, a, 2)


core.abstract_eval_rules[geqrf_p] = _geqrf_abstract_eval
core.impl_rules[geqrf_p] = _geqrf_impl
ad.jvp_rules[geqrf_p] = _no_jvp("geqrf")
batching.batch_rules[geqrf_p] = _unary_batch(geqrf_p)


def geqrf(a: Any) -> tuple[Any, Any]:
    """LAPACK's geqrf: (r with the Householder vectors below its diagonal, taus)."""
    return tuple(geqrf_p.bind(a))


# ----------------------------------------------------------------------------- householder_product

householder_product_p = Primitive("householder_product")


def _householder_product_abstract_eval(a: ShapedArray, taus: ShapedArray):
    _check_matrix("householder_product", a, "a", square=False)
    *batch, m, n = a.shape
    if (m < n or taus.dtype != a.dtype or taus.ndim != a.ndim - 1
            or tuple(taus.shape[:-1]) != tuple(batch) or taus.shape[-1] > n):
        raise NumbaxValueError(
            f"lax.linalg.householder_product: a has shape {a.shape} ({a.dtype}) and taus has "
            f"shape {taus.shape} ({taus.dtype}), expected m >= n and taus of shape "
            f"(..., k), k <= {n}, with a's batch dims and dtype."
        )
    return [ShapedArray(a.shape, a.dtype)]


def _orgqr_one(a: np.ndarray, taus: np.ndarray, overwrite: bool = False):
    if a.shape[-1] == 0:
        return (a.copy(),)
    fn = _lapack("ungqr" if kind_of(a.dtype) == "c" else "orgqr", a)
    _, work, _ = fn(a, taus, lwork=-1)
    q, _, _ = fn(a, taus, lwork=optimal_lwork(work), overwrite_a=int(overwrite))
    return (q,)


def _householder_product_impl(a: np.ndarray, taus: np.ndarray) -> list[np.ndarray]:
    if a.ndim == 2:
        return [_orgqr_one(a, taus)[0]]
    if 0 in a.shape[:-2]:
        return [a.copy()]
    return _each_matrix(_orgqr_one, a, 1, taus)


core.abstract_eval_rules[householder_product_p] = _householder_product_abstract_eval
core.impl_rules[householder_product_p] = _householder_product_impl
ad.jvp_rules[householder_product_p] = _no_jvp("householder_product")
batching.batch_rules[householder_product_p] = _front_batch(householder_product_p)


def householder_product(a: Any, taus: Any) -> Any:
    """The product Q = H₁ ⋯ H_k of elementary reflectors Hᵢ = I - τᵢ vᵢ vᵢᴴ (LAPACK orgqr).

    Args:
      a: (..., m, n), m >= n, with vᵢ below the diagonal of column i (unit leading entry).
      taus: (..., k), k <= n, the scalar factors.

    Returns:
      The first n columns of Q, shaped like a.

    >>> import numpy as np
    >>> householder_product(np.array([[1.], [1.]]), np.array([1.]))
    Array([[ 0.],
           [-1.]], dtype=float64)
    """
    return householder_product_p.bind(a, taus)


# ----------------------------------------------------------------------------- ormqr

ormqr_p = Primitive("ormqr")


def _ormqr_abstract_eval(a: ShapedArray, taus: ShapedArray, c: ShapedArray, *, left: bool,
                         transpose: bool):
    _check_matrix("ormqr", a, "a", square=False)
    _check_matrix("ormqr", c, "c", square=False)
    m = a.shape[-2]
    side = c.shape[-2] if left else c.shape[-1]
    if (side != m or len({a.dtype, taus.dtype, c.dtype}) != 1 or a.shape[:-2] != c.shape[:-2]
            or taus.shape != (*a.shape[:-2], taus.shape[-1]) or taus.shape[-1] > a.shape[-1]):
        raise NumbaxValueError(
            f"lax.linalg.ormqr: a has shape {a.shape}, taus {taus.shape} and c {c.shape} "
            f"(left={left}), expected c with {m} {'rows' if left else 'columns'}, taus of shape "
            f"(..., k), k <= {a.shape[-1]}, equal batch dims and one dtype."
        )
    return [ShapedArray(c.shape, c.dtype)]


def _ormqr_one(a: np.ndarray, taus: np.ndarray, c: np.ndarray, left: bool, transpose: bool):
    k = taus.shape[0]
    if k == 0 or 0 in c.shape:
        return (c.copy(),)
    complex_ = kind_of(a.dtype) == "c"
    fn = _lapack("unmqr" if complex_ else "ormqr", a, c)
    side = "L" if left else "R"
    trans = ("C" if complex_ else "T") if transpose else "N"
    refl = np.ascontiguousarray(a[:, :k])
    _, work, _ = fn(side, trans, refl, taus, c, -1)
    cq, _, info = fn(side, trans, refl, taus, c, max(1, int(np.real(work[0]))))
    return (cq,)


def _ormqr_impl(a, taus, c, *, left, transpose):
    if a.ndim == 2:
        return [_ormqr_one(a, taus, c, left, transpose)[0].astype(c.dtype)]
    out = np.empty_like(c)
    for idx in np.ndindex(*a.shape[:-2]):
        out[idx] = _ormqr_one(a[idx], taus[idx], c[idx], left, transpose)[0]
    return [out]


def _ormqr_jvp(primals, tangents, *, left, transpose):
    """Linear in c; JAX has no derivative in the reflectors either."""
    a, taus, c = primals
    a_dot, taus_dot, c_dot = tangents
    if type(a_dot) is not ad.Zero or type(taus_dot) is not ad.Zero:
        _no_jvp("ormqr")(primals, tangents)
    out = ormqr_p.bind(a, taus, c, left=left, transpose=transpose)
    return [out], [ormqr_p.bind(a, taus, c_dot, left=left, transpose=transpose)]


def _ormqr_transpose(cts, a, taus, c, *, left, transpose):
    """c ↦ op(Q) c has transpose ct ↦ conj(op(Q)ᴴ conj(ct)) (the same on the right)."""
    (ct,) = cts
    assert ad.is_undefined_primal(c) and not ad.is_undefined_primal(a)
    if type(ct) is ad.Zero:
        return [None, None, ad.Zero(c.aval)]
    conj = ew.conj if kind_of(get_aval(ct).dtype) == "c" else (lambda v: v)
    out = ormqr_p.bind(a, taus, conj(ct), left=left, transpose=not transpose)
    return [None, None, conj(out)]


core.abstract_eval_rules[ormqr_p] = _ormqr_abstract_eval
core.impl_rules[ormqr_p] = _ormqr_impl
ad.jvp_rules[ormqr_p] = _ormqr_jvp
ad.transpose_rules[ormqr_p] = _ormqr_transpose
batching.batch_rules[ormqr_p] = _front_batch(ormqr_p)


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """Q c, Qᴴ c, c Q or c Qᴴ for the Q of Householder reflectors (LAPACK ormqr/unmqr),
    without forming Q.

    Args:
      a: the reflectors (..., m, n) as geqrf leaves them.
      taus: their scalar factors (..., k).
      c: the matrix to multiply, (..., m, p) if left else (..., p, m).
      left: Q on the left of c.
      transpose: use Qᵀ (Qᴴ for complex).

    Returns:
      The product, shaped like c (differentiable in c).

    >>> import numpy as np
    >>> ormqr(np.array([[1.], [1.]]), np.array([1.]), np.eye(2))
    Array([[ 0., -1.],
           [-1.,  0.]], dtype=float64)
    """
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


# ----------------------------------------------------------------------------- hessenberg

hessenberg_p = Primitive("hessenberg", multiple_results=True)


def _hessenberg_abstract_eval(a: ShapedArray) -> list[ShapedArray]:
    _check_matrix("hessenberg", a, "a")
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*a.shape[:-2], max(n - 1, 0)), a.dtype)]


def _gehrd_one(a: np.ndarray):
    work, _ = _lapack("gehrd_lwork", a)(a.shape[-1])
    ht, tau, _ = _lapack("gehrd", a)(a, lwork=optimal_lwork(work))
    return ht, tau[: a.shape[-1] - 1]


def _hessenberg_impl(a: np.ndarray) -> list[np.ndarray]:
    n = a.shape[-1]
    if 0 in a.shape or n == 1:
        return [a.copy(), np.zeros((*a.shape[:-2], max(n - 1, 0)), a.dtype)]
    return _each_matrix(_gehrd_one, a, 2)


core.abstract_eval_rules[hessenberg_p] = _hessenberg_abstract_eval
core.impl_rules[hessenberg_p] = _hessenberg_impl
ad.jvp_rules[hessenberg_p] = _no_jvp("hessenberg")
batching.batch_rules[hessenberg_p] = _unary_batch(hessenberg_p)


def hessenberg(a: Any) -> tuple[Any, Any]:
    """Reduction to upper Hessenberg form by Householder reflectors (LAPACK gehrd).

    Returns:
      (a, taus): the Hessenberg matrix on and above the first subdiagonal, the reflectors
      below it; taus (..., n - 1) their scalar factors.

    >>> import numpy as np
    >>> h, taus = hessenberg(np.eye(3))
    >>> taus.shape
    (2,)
    """
    return tuple(hessenberg_p.bind(a))


# ----------------------------------------------------------------------------- tridiagonal

tridiagonal_p = Primitive("tridiagonal", multiple_results=True)


def _tridiagonal_abstract_eval(a: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("tridiagonal", a, "a")
    n = a.shape[-1]
    if n == 0:
        raise NumbaxValueError(
            f"lax.linalg.tridiagonal: a has shape {a.shape}, expected non-empty square matrices.")
    batch, real = a.shape[:-2], _real_dtype(a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, n), real),
            ShapedArray((*batch, n - 1), real), ShapedArray((*batch, n - 1), a.dtype)]


def _sytrd_one(a: np.ndarray, lower: bool):
    name = "hetrd" if kind_of(a.dtype) == "c" else "sytrd"
    work, _ = _lapack(name + "_lwork", a)(a.shape[-1], lower=int(lower))
    c, d, e, tau, _ = _lapack(name, a)(a, lower=int(lower), lwork=optimal_lwork(work))
    return c, d, e, tau


def _tridiagonal_impl(a: np.ndarray, *, lower: bool) -> list[np.ndarray]:
    if a.shape[-1] == 1 or 0 in a.shape[:-2]:
        batch, real = a.shape[:-2], _real_dtype(a.dtype)
        return [a.copy(), np.real(a[..., 0]).astype(real), np.zeros((*batch, 0), real),
                np.zeros((*batch, 0), a.dtype)]
    return _each_matrix(lambda m: _sytrd_one(m, lower), a, 4)


core.abstract_eval_rules[tridiagonal_p] = _tridiagonal_abstract_eval
core.impl_rules[tridiagonal_p] = _tridiagonal_impl
ad.jvp_rules[tridiagonal_p] = _no_jvp("tridiagonal")
batching.batch_rules[tridiagonal_p] = _unary_batch(tridiagonal_p)


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """Reduction of Hermitian matrices to real symmetric tridiagonal form (LAPACK sytrd/hetrd).

    Args:
      a: float or complex Hermitian matrices (..., n, n); only the triangle `lower` is read.
      lower: which triangle to use.

    Returns:
      (a, d, e, taus): the reflectors packed in a beyond the first sub- (super-) diagonal, the
      real diagonal d (..., n) and off-diagonal e (..., n - 1), and taus (..., n - 1).

    >>> import numpy as np
    >>> tridiagonal(np.array([[2., 1.], [1., 3.]]))[1]
    Array([2., 3.], dtype=float64)
    """
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))

