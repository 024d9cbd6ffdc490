"""Matrix decompositions (cholesky, lu, qr, eigh, svd) and triangular_solve: one LAPACK call each.

Every primitive works on stacks of matrices (leading batch dims), takes float32/float64, has a
numpy/scipy impl that maps onto one numpy.linalg (or scipy.linalg) call, and a jvp written with
ops that are linear in the tangents (dot_general, triangular_solve in b, elementwise products
with primal values), so reverse mode comes from linearize + transpose.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.linalg

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import reductions, shape_ops
from numbax._src.lax.dot import dot_general

# ----------------------------------------------------------------------------- helpers


def _check_matrix(name: str, aval: ShapedArray, arg: str = "x", square: bool = True) -> None:
    if aval.dtype.kind != "f":
        raise NumbaxTypeError(
            f"lax.linalg.{name}: {arg} has dtype {aval.dtype}, expected float32 or float64. "
            "Convert it first (numbax.numpy.linalg promotes integers to float); complex "
            "matrices are not supported yet."
        )
    if aval.ndim < 2:
        raise NumbaxValueError(
            f"lax.linalg.{name}: {arg} has shape {aval.shape}, expected a matrix or a stack of "
            "matrices (rank >= 2). Reshape it to (..., m, n)."
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise NumbaxValueError(
            f"lax.linalg.{name}: {arg} has shape {aval.shape}, expected square matrices "
            "(..., n, n). Pass a square matrix (for least squares use numbax.numpy.linalg.lstsq)."
        )


def _T(x: Any) -> Any:
    """Swaps the last two axes."""
    nd = get_aval(x).ndim
    return shape_ops.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _mm(a: Any, b: Any) -> Any:
    """Batched matrix product (..., m, k) @ (..., k, n)."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _bcast(const: np.ndarray, like: Any) -> Any:
    """A (trailing-dims) numpy constant broadcast to the shape of `like`, in its dtype."""
    aval = get_aval(like)
    const = np.asarray(const, dtype=aval.dtype)
    if const.shape == aval.shape:
        return const
    dims = tuple(range(aval.ndim - const.ndim, aval.ndim))
    return shape_ops.broadcast_in_dim(const, aval.shape, dims)


def _tri_mask(n: int, m: int, k: int, lower: bool, diag: float = 1.0) -> np.ndarray:
    """1 inside the triangle (offset k), `diag` on the main diagonal if it is inside."""
    mask = np.tril(np.ones((n, m)), k) if lower else np.triu(np.ones((n, m)), k)
    if (lower and k >= 0) or (not lower and k <= 0):
        idx = np.arange(min(n, m))
        mask[idx, idx] = diag
    return mask


def _tril(x: Any, k: int = 0, diag: float = 1.0) -> Any:
    n, m = get_aval(x).shape[-2:]
    return ew.mul(x, _bcast(_tri_mask(n, m, k, True, diag), x))


def _triu(x: Any, k: int = 0) -> Any:
    n, m = get_aval(x).shape[-2:]
    return ew.mul(x, _bcast(_tri_mask(n, m, k, False), x))


def _row_vec(v: Any, like: Any) -> Any:
    """v (..., n) broadcast to (..., m, n): every row is v."""
    shape = get_aval(like).shape
    nd = len(shape)
    return shape_ops.broadcast_in_dim(v, shape, (*range(nd - 2), nd - 1))


def _col_vec(v: Any, like: Any) -> Any:
    """v (..., m) broadcast to (..., m, n): every column is v."""
    shape = get_aval(like).shape
    nd = len(shape)
    return shape_ops.broadcast_in_dim(v, shape, tuple(range(nd - 1)))


def _diag_part(x: Any) -> Any:
    """The diagonal (..., n) of square matrices (..., n, n): a masked column sum."""
    n = get_aval(x).shape[-1]
    return reductions.reduce_sum(ew.mul(x, _bcast(np.eye(n), x)), (get_aval(x).ndim - 2,))


def _unary_batch(prim: Primitive):
    """Batch dims are leading dims: move the vmapped axis to the front and bind again."""

    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        outs = core.bind(prim, batching.moveaxis(x, d, 0), **params)
        return outs, [0] * len(outs)

    return rule


def _each_matrix(fn, a: np.ndarray, n_out: int) -> list[np.ndarray]:
    """Applies a 2-d routine to every matrix of a stack; fn returns n_out arrays."""
    batch = a.shape[:-2]
    results = [fn(a[idx]) for idx in np.ndindex(*batch)]
    return [np.stack([r[i] for r in results]).reshape(batch + results[0][i].shape)
            if results else None for i in range(n_out)]


# ----------------------------------------------------------------------------- cholesky

cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("cholesky", x)
    return [ShapedArray(x.shape, x.dtype)]


def _cholesky_impl(x: np.ndarray) -> list[np.ndarray]:
    """Reads the lower triangle; matrices that are not positive definite give NaNs (as JAX)."""
    try:
        return [np.linalg.cholesky(np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2))]
    except np.linalg.LinAlgError:
        pass

    def one(m: np.ndarray) -> tuple[np.ndarray]:
        try:
            return (np.linalg.cholesky(np.tril(m) + np.tril(m, -1).T),)
        except np.linalg.LinAlgError:
            return (np.full_like(m, np.nan),)

    if x.ndim == 2:
        return [one(x)[0]]
    return _each_matrix(one, x, 1)


def _cholesky_jvp(primals, tangents):
    """dL = L Φ(L⁻¹ dA L⁻ᵀ), Φ taking the lower triangle with the diagonal halved."""
    (x,), (x_dot,) = primals, tangents
    L = cholesky_p.bind(x)
    x_dot = ad.instantiate_zeros(x_dot)
    # dA is read as a symmetric matrix given by its lower triangle (as the impl reads x).
    sym = ew.add(_tril(x_dot), _T(_tril(x_dot, -1)))
    tmp = triangular_solve(L, sym, left_side=False, lower=True, transpose_a=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    return [L], [_mm(L, _tril(inner, 0, 0.5))]


core.abstract_eval_rules[cholesky_p] = _cholesky_abstract_eval
core.impl_rules[cholesky_p] = _cholesky_impl
ad.jvp_rules[cholesky_p] = _cholesky_jvp
batching.batch_rules[cholesky_p] = _unary_batch(cholesky_p)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """Lower Cholesky factor L (x = L Lᵀ) of symmetric positive definite matrices (..., n, n).

    Args:
      x: float matrices; only the lower triangle is read unless ``symmetrize_input``.
      symmetrize_input: use (x + xᵀ)/2 (then gradients are symmetric, as JAX).

    Returns:
      L, lower triangular; NaNs where x is not positive definite.

    >>> import numpy as np
    >>> cholesky(np.array([[4., 2.], [2., 5.]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    if symmetrize_input:
        x = _symmetrize(x, "cholesky")
    return cholesky_p.bind(x)


def _symmetrize(x: Any, name: str) -> Any:
    _check_matrix(name, get_aval(x))
    return ew.mul(ew.add(x, _T(x)), np.array(0.5, get_aval(x).dtype))


# ----------------------------------------------------------------------------- triangular_solve

triangular_solve_p = Primitive("triangular_solve")


def _triangular_solve_abstract_eval(a: ShapedArray, b: ShapedArray, *, left_side, lower,
                                    transpose_a, conjugate_a, unit_diagonal):
    _check_matrix("triangular_solve", a, "a")
    _check_matrix("triangular_solve", b, "b", square=False)
    m = a.shape[-1]
    side = b.shape[-2] if left_side else b.shape[-1]
    if a.dtype != b.dtype or a.shape[:-2] != b.shape[:-2] or side != m:
        which = "b.shape[-2]" if left_side else "b.shape[-1]"
        raise NumbaxValueError(
            f"lax.linalg.triangular_solve: a has shape {a.shape} ({a.dtype}) and b has shape "
            f"{b.shape} ({b.dtype}), expected equal dtypes, equal batch dims and {which} == "
            f"{m} (left_side={left_side}). Broadcast or transpose b to match."
        )
    return [ShapedArray(b.shape, b.dtype)]


def _effective_a(a: np.ndarray, lower: bool, transpose_a: bool, conjugate_a: bool,
                 unit_diagonal: bool) -> np.ndarray:
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        tri = tri.copy()
        tri[..., np.arange(n), np.arange(n)] = 1
    if conjugate_a:
        tri = np.conj(tri)
    return np.swapaxes(tri, -1, -2) if transpose_a else tri


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """op(a) x = b (left_side) or x op(a) = b, with a's other triangle ignored."""
    op_a = _effective_a(a, lower, transpose_a, conjugate_a, unit_diagonal)
    if a.ndim == 2:
        lower_eff = lower != transpose_a
        if left_side:
            out = scipy.linalg.solve_triangular(op_a, b, lower=lower_eff, check_finite=False)
        else:
            out = scipy.linalg.solve_triangular(op_a.T, b.T, lower=not lower_eff,
                                                check_finite=False).T
        return [np.ascontiguousarray(out, dtype=b.dtype)]
    with np.errstate(all="ignore"):
        if left_side:
            out = np.linalg.solve(op_a, b)
        else:
            out = np.swapaxes(np.linalg.solve(np.swapaxes(op_a, -1, -2),
                                              np.swapaxes(b, -1, -2)), -1, -2)
    return [np.ascontiguousarray(out, dtype=b.dtype)]


def _triangular_solve_jvp(primals, tangents, **params):
    """Linear in b; in a: d(op(a)⁻¹ b) = -op(a)⁻¹ op(da) x (left), -x op(da) op(a)⁻¹ (right)."""
    a, b = primals
    a_dot, b_dot = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    t_out: Any = ad.Zero(get_aval(ans))
    if type(b_dot) is not ad.Zero:
        t_out = ad.add_tangents(t_out, triangular_solve_p.bind(a, b_dot, **params))
    if type(a_dot) is not ad.Zero:
        k = 1 if params["unit_diagonal"] else 0
        g = _tril(a_dot, -k) if params["lower"] else _triu(a_dot, k)
        g = ew.neg(_T(g) if params["transpose_a"] else g)
        prod = _mm(g, ans) if params["left_side"] else _mm(ans, g)
        t_out = ad.add_tangents(t_out, triangular_solve_p.bind(a, prod, **params))
    return [ans], [t_out]


def _triangular_solve_transpose(cts, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    (ct,) = cts
    assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


def _triangular_solve_batch(axis_size, vals, dims, **params):
    a, b = (batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True))
    return [triangular_solve_p.bind(a, b, **params)], [0]


core.abstract_eval_rules[triangular_solve_p] = _triangular_solve_abstract_eval
core.impl_rules[triangular_solve_p] = _triangular_solve_impl
ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
ad.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
batching.batch_rules[triangular_solve_p] = _triangular_solve_batch


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solves op(a) x = b (left_side) or x op(a) = b for triangular a (JAX's defaults).

    Args:
      a: triangular matrices (..., m, m); the other triangle is ignored.
      b: right-hand sides (..., m, n) if left_side else (..., n, m).
      left_side, lower, transpose_a, conjugate_a, unit_diagonal: as in JAX.

    Returns:
      x, shaped like b.

    >>> import numpy as np
    >>> triangular_solve(np.array([[2., 0.], [1., 1.]]), np.array([[2.], [3.]]),
    ...                  left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float64)
    """
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


# ----------------------------------------------------------------------------- lu

lu_p = Primitive("lu", multiple_results=True)


def _lu_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lu", x)
    vec = ShapedArray(x.shape[:-1], np.dtype(np.int32))
    return [ShapedArray(x.shape, x.dtype), vec, vec]


def _lu_one(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exactly singular matrices factor fine (U has a 0)
        lu, piv = scipy.linalg.lu_factor(m, check_finite=False)
    perm = np.arange(m.shape[0])
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return lu, piv.astype(np.int32), perm.astype(np.int32)


def _lu_impl(x: np.ndarray) -> list[np.ndarray]:
    """P a = L U with L unit lower; pivots as LAPACK's getrf (0-based), permutation of rows."""
    if x.shape[-1] == 0:
        vec = np.zeros(x.shape[:-1], np.int32)
        return [x.copy(), vec, vec.copy()]
    if x.ndim == 2:
        return list(_lu_one(x))
    if 0 in x.shape[:-2]:
        vec = np.zeros(x.shape[:-1], np.int32)
        return [x.copy(), vec, vec.copy()]
    lu, piv, perm = _each_matrix(_lu_one, x, 3)
    return [lu.astype(x.dtype), piv, perm]


def _permutation_matrix(perm: Any, dtype: np.dtype) -> Any:
    """P with P[..., i, j] = (perm[..., i] == j), so P @ a = a[perm]."""
    shape = (*get_aval(perm).shape, get_aval(perm).shape[-1])
    nd = len(shape)
    rows = shape_ops.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    cols = shape_ops.broadcasted_iota(np.int32, shape, nd - 1)
    return ew.convert_element_type(ew.eq(rows, cols), dtype)


def _lu_jvp(primals, tangents):
    """JAX's rule: with L⁻¹ P dA U⁻¹ = X, dL = L tril(X, -1) and dU = triu(X) U."""
    (x,), (x_dot,) = primals, tangents
    lu, pivots, perm = lu_p.bind(x)
    x_dot = ad.instantiate_zeros(x_dot)
    n = get_aval(x).shape[-1]
    eye = _bcast(np.eye(n), lu)
    l_mat = ew.add(_tril(lu, -1), eye)
    u_mat = _triu(lu)
    pa = _mm(_permutation_matrix(perm, get_aval(x).dtype), x_dot)
    la = triangular_solve(l_mat, pa, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u_mat, la, left_side=False, lower=False)
    lu_dot = ew.add(_mm(l_mat, _tril(lau, -1)), _mm(_triu(lau), u_mat))
    zeros = [ad.Zero.from_primal_value(pivots), ad.Zero.from_primal_value(perm)]
    return [lu, pivots, perm], [lu_dot, *zeros]


core.abstract_eval_rules[lu_p] = _lu_abstract_eval
core.impl_rules[lu_p] = _lu_impl
ad.jvp_rules[lu_p] = _lu_jvp
batching.batch_rules[lu_p] = _unary_batch(lu_p)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting of square matrices (..., n, n).

    Returns:
      (lu, pivots, permutation): L (unit diagonal, strictly below) and U (on and above) packed
      in one matrix; int32 LAPACK pivots; int32 permutation with x[perm] = L @ U.

    Unlike JAX: only square matrices.

    >>> import numpy as np
    >>> lu(np.array([[1., 2.], [3., 4.]]))[2]
    Array([1, 0], dtype=int32)
    """
    return tuple(lu_p.bind(x))


# ----------------------------------------------------------------------------- qr

qr_p = Primitive("qr", multiple_results=True)


def _qr_abstract_eval(x: ShapedArray, *, full_matrices: bool) -> list[ShapedArray]:
    _check_matrix("qr", x, square=False)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    return [ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype)]


def _qr_impl(x: np.ndarray, *, full_matrices: bool) -> list[np.ndarray]:
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype), r.astype(x.dtype)]


def _qr_jvp(primals, tangents, *, full_matrices):
    """j-towns.github.io/papers/qr-derivative.pdf, as JAX: needs m >= n (and m == n if full)."""
    (x,), (dx,) = primals, tangents
    *_, m, n = get_aval(x).shape
    if m < n or (full_matrices and m != n):
        raise NotImplementedError(
            f"lax.linalg.qr: x has shape {get_aval(x).shape}; the derivative of QR is only "
            "implemented for m >= n with full_matrices=False (or square x). Use "
            "full_matrices=False (mode='reduced'), or differentiate qr of x.T."
        )
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    dx = ad.instantiate_zeros(dx)
    dx_rinv = triangular_solve(r, dx)  # dx r⁻¹
    qt_dx_rinv = _mm(_T(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = ew.sub(low, _T(low))  # skew-symmetric
    dq = ew.add(_mm(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(ew.sub(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


core.abstract_eval_rules[qr_p] = _qr_abstract_eval
core.impl_rules[qr_p] = _qr_impl
ad.jvp_rules[qr_p] = _qr_jvp
batching.batch_rules[qr_p] = _unary_batch(qr_p)


def qr(x: Any, *, full_matrices: bool = True) -> tuple[Any, Any]:
    """QR decomposition x = q r of matrices (..., m, n); r is upper triangular.

    Args:
      x: float matrices.
      full_matrices: q is (..., m, m) and r (..., m, n); else (..., m, k), (..., k, n),
        k = min(m, n).

    Returns:
      (q, r). Derivatives need m >= n (and full_matrices=False unless m == n).

    >>> import numpy as np
    >>> q, r = qr(np.eye(2))
    >>> np.abs(np.asarray(r))
    array([[1., 0.],
           [0., 1.]])
    """
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


# ----------------------------------------------------------------------------- eigh

eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_abstract_eval(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("eigh", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-1], x.dtype)]


def _eigh_impl(x: np.ndarray, *, lower: bool) -> list[np.ndarray]:
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v.astype(x.dtype), w.astype(x.dtype)]


def _eigh_jvp(primals, tangents, *, lower):
    """dw = diag(Vᵀ dA V), dV = V (F ∘ Vᵀ dA V) with F_ij = 1/(w_j - w_i) off the diagonal.

    dA is read as the symmetric matrix given by the triangle the impl reads. With repeated
    eigenvalues F is infinite: eigenvalue derivatives stay right, eigenvector ones do not
    (the eigenvectors are not unique there), as in JAX.
    """
    (x,), (x_dot,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower)
    x_dot = ad.instantiate_zeros(x_dot)
    if lower:
        sym = ew.add(_tril(x_dot), _T(_tril(x_dot, -1)))
    else:
        sym = ew.add(_triu(x_dot), _T(_triu(x_dot, 1)))
    n = get_aval(x).shape[-1]
    eye = _bcast(np.eye(n), x)
    diffs = ew.sub(_row_vec(w, x), _col_vec(w, x))  # w_j - w_i
    f_mat = ew.sub(ew.integer_pow(ew.add(eye, diffs), -1), eye)
    vt_dx_v = _mm(_mm(_T(v), sym), v)
    dv = _mm(v, ew.mul(f_mat, vt_dx_v))
    dw = _diag_part(vt_dx_v)
    return [v, w], [dv, dw]


core.abstract_eval_rules[eigh_p] = _eigh_abstract_eval
core.impl_rules[eigh_p] = _eigh_impl
ad.jvp_rules[eigh_p] = _eigh_jvp
batching.batch_rules[eigh_p] = _unary_batch(eigh_p)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True) -> tuple[Any, Any]:
    """Eigendecomposition of symmetric matrices (..., n, n): x = v diag(w) vᵀ.

    Args:
      x: float symmetric matrices.
      lower: read the lower (else upper) triangle when not symmetrizing.
      symmetrize_input: use (x + xᵀ)/2.

    Returns:
      (v, w): eigenvectors as columns, eigenvalues in ascending order (JAX's order).

    >>> import numpy as np
    >>> eigh(np.array([[2., 0.], [0., 1.]]))[1]
    Array([1., 2.], dtype=float64)
    """
    if symmetrize_input:
        x = _symmetrize(x, "eigh")
    return tuple(eigh_p.bind(x, lower=bool(lower)))


# ----------------------------------------------------------------------------- svd

svd_p = Primitive("svd", multiple_results=True)


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool):
    _check_matrix("svd", x, square=False)
    *batch, m, n = x.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), x.dtype)
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, ku), x.dtype), ShapedArray((*batch, kv, n), x.dtype)]


def _svd_impl(x: np.ndarray, *, full_matrices: bool, compute_uv: bool) -> list[np.ndarray]:
    if not compute_uv:
        return [np.linalg.svd(x, compute_uv=False).astype(x.dtype)]
    u, s, vt = np.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(x.dtype), u.astype(x.dtype), vt.astype(x.dtype)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    """JAX's rule for real matrices; singular vectors need distinct nonzero singular values."""
    (x,), (dx,) = primals, tangents
    if compute_uv and full_matrices and get_aval(x).shape[-1] != get_aval(x).shape[-2]:
        raise NotImplementedError(
            f"lax.linalg.svd: x has shape {get_aval(x).shape}; the derivative of u and vt is "
            "not implemented for full_matrices=True with non-square x. Use full_matrices=False."
        )
    s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True)
    dx = ad.instantiate_zeros(dx)
    v = _T(vt)
    ds_mat = _mm(_mm(_T(u), dx), v)
    ds = _diag_part(ds_mat)
    if not compute_uv:
        return [s], [ds]
    k = get_aval(s).shape[-1]
    s_row = _row_vec(s, ds_mat)  # s_j
    s_col = _col_vec(s, ds_mat)  # s_i
    eye = _bcast(np.eye(k), ds_mat)
    s_diffs = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))
    f_mat = ew.sub(ew.integer_pow(ew.add(s_diffs, eye), -1), eye)
    dss = ew.mul(s_row, ds_mat)
    sds = ew.mul(s_col, ds_mat)
    du = _mm(u, ew.mul(f_mat, ew.add(dss, _T(dss))))
    dv = _mm(v, ew.mul(f_mat, ew.add(sds, _T(sds))))
    *_, m, n = get_aval(x).shape
    if m > n:
        dxv = _mm(dx, v)
        proj = ew.sub(dxv, _mm(u, _mm(_T(u), dxv)))
        du = ew.add(du, ew.div(proj, _row_vec(s, proj)))
    if n > m:
        dxtu = _mm(_T(dx), u)
        proj = ew.sub(dxtu, _mm(v, _mm(vt, dxtu)))
        dv = ew.add(dv, ew.div(proj, _row_vec(s, proj)))
    return [s, u, vt], [ds, du, _T(dv)]


core.abstract_eval_rules[svd_p] = _svd_abstract_eval
core.impl_rules[svd_p] = _svd_impl
ad.jvp_rules[svd_p] = _svd_jvp
batching.batch_rules[svd_p] = _unary_batch(svd_p)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition x = u diag(s) vh of matrices (..., m, n).

    Returns:
      (u, s, vh) if compute_uv else s; s descending. Derivatives of u and vh need distinct
      nonzero singular values and full_matrices=False for non-square x.

    >>> import numpy as np
    >>> svd(np.array([[3., 0.], [0., 4.]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt
