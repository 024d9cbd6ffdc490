"""Linear algebra primitives, part five: the singular value decomposition (LAPACK gesdd, as
JAX on CPU) and the QDWH polar iteration composed from qr, cholesky and triangular_solve."""
from __future__ import annotations

import enum
from typing import Any

import numpy as np
from scipy.linalg import lapack

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import linalg_blas, reductions, shape_ops
from numbax._src.lax.control_flow.loops import while_loop
from numbax._src.lax.linalg import (
    _H,
    _bcast,
    _check_matrix,
    _col_vec,
    _diag_part,
    _each_matrix,
    _eye_like,
    _mm,
    _real_dtype,
    _row_vec,
    _to,
    _unary_batch,
    cholesky_p,
    triangular_solve,
)
from numbax._src.lax.linalg_blas import optimal_lwork
from numbax._src.lax.linalg_eig import _check_subset
from numbax._src.lax.linalg_qr import qr_p


class SvdAlgorithm(enum.Enum):
    """SVD algorithms in JAX; numbax always calls LAPACK's gesdd (divide and conquer)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True)


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool):
    _check_matrix("svd", x, square=False)
    *batch, m, n = x.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, ku), x.dtype), ShapedArray((*batch, kv, n), x.dtype)]


def _svd_impl(x: np.ndarray, *, full_matrices: bool, compute_uv: bool) -> list[np.ndarray]:
    *batch, m, n = x.shape
    real = _real_dtype(x.dtype)
    if 0 in x.shape:
        k = min(m, n)
        ku, kv = (m, n) if full_matrices else (k, k)
        s = np.zeros((*batch, k), real)
        u = np.broadcast_to(np.eye(m, ku, dtype=x.dtype), (*batch, m, ku)).copy()
        vt = np.broadcast_to(np.eye(kv, n, dtype=x.dtype), (*batch, kv, n)).copy()
        return [s, u, vt] if compute_uv else [s]

    def one(a: np.ndarray):
        if a.ndim == 2 and a.dtype in linalg_blas.LAPACK_DTYPES:
            return _svd_one(a, full_matrices, compute_uv)
        if not compute_uv:
            return (np.linalg.svd(a, compute_uv=False),)
        u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
        return s, u, vt

    try:
        outs = one(x)
    except np.linalg.LinAlgError:  # LAPACK did not converge for some matrix: NaNs there
        def safe(a):
            try:
                return one(a)
            except np.linalg.LinAlgError:
                return tuple(np.full_like(o, np.nan) for o in one(np.eye(m, n, dtype=a.dtype)))

        outs = safe(x) if x.ndim == 2 else _each_matrix(safe, x, 1 + 2 * compute_uv)
    return [outs[0].astype(real)] + [o.astype(x.dtype) for o in outs[1:]]


def _svd_one(a: np.ndarray, full_matrices: bool, compute_uv: bool) -> tuple:
    """One matrix's (s,) or (s, u, vt) by LAPACK's gesdd with its optimal workspace, on a
    blocked column-major copy (`linalg_blas.relaid`), as JAX calls it: jax.jit's bits in every
    dtype on the 2-core VM, where numpy's svd (its own LAPACK build) differed in single
    precision, and 6 ms for a 512 x 256 float32's singular values where numpy's took 23 (jax.jit
    5.8). Raises numpy's LinAlgError where LAPACK does not converge (the caller's NaNs)."""
    m, n = a.shape
    gesdd, query = lapack.get_lapack_funcs(("gesdd", "gesdd_lwork"), (a,))
    flags = {"compute_uv": int(compute_uv), "full_matrices": int(full_matrices)}
    work, info = query(m, n, **flags)
    u, s, vt, info = gesdd(linalg_blas.relaid(a, "F"), lwork=optimal_lwork(work),
                           overwrite_a=1, **flags)
    if info > 0:
        raise np.linalg.LinAlgError("SVD did not converge")
    return (s,) if not compute_uv else (s, u, vt)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    """JAX's rule (real and complex); singular vectors need distinct nonzero singular values."""
    (x,), (dx,) = primals, tangents
    if compute_uv and full_matrices and get_aval(x).shape[-1] != get_aval(x).shape[-2]:
        raise NotImplementedError(
            f"lax.linalg.svd: x has shape {get_aval(x).shape}; the derivative of u and vt is "
            "not implemented for full_matrices=True with non-square x (as in JAX). Use "
            "full_matrices=False.")
    s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True)
    dx = ad.instantiate_zeros(dx)
    dtype = get_aval(x).dtype
    v = _H(vt)
    ds_mat = _mm(_mm(_H(u), dx), v)
    ds = _diag_part(ds_mat)
    ds = ew.real(ds) if kind_of(dtype) == "c" else ds
    if not compute_uv:
        return [s], [ds]
    sc = _to(s, dtype)
    s_row = _row_vec(sc, ds_mat)  # s_j
    s_col = _col_vec(sc, ds_mat)  # s_i
    eye = _eye_like(ds_mat)
    s_diffs = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))
    f_mat = ew.sub(ew.integer_pow(ew.add(s_diffs, eye), -1), eye)
    dss = ew.mul(s_row, ds_mat)
    sds = ew.mul(s_col, ds_mat)
    du = _mm(u, ew.mul(f_mat, ew.add(dss, _H(dss))))
    dv = _mm(v, ew.mul(f_mat, ew.add(sds, _H(sds))))
    if kind_of(dtype) == "c":  # the phase freedom: diag(uᴴ du) = -diag(vᴴ dv) = i Im(ds_mat)/s
        zero = ew.convert_element_type(ew.eq(s, _bcast(np.zeros(()), s)), get_aval(s).dtype)
        s_inv = _to(ew.sub(ew.integer_pow(ew.add(s, zero), -1), zero), dtype)
        skew = ew.mul(ew.sub(ds_mat, _H(ds_mat)), _bcast(np.array(0.5), ds_mat))
        du = ew.add(du, _mm(u, ew.mul(skew, ew.mul(_row_vec(s_inv, eye), eye))))
    *_, m, n = get_aval(x).shape
    if m > n:
        dxv = _mm(dx, v)
        proj = ew.sub(dxv, _mm(u, _mm(_H(u), dxv)))
        du = ew.add(du, ew.div(proj, _row_vec(sc, proj)))
    if n > m:
        dxhu = _mm(_H(dx), u)
        proj = ew.sub(dxhu, _mm(v, _mm(vt, dxhu)))
        dv = ew.add(dv, ew.div(proj, _row_vec(sc, proj)))
    return [s, u, vt], [ds, du, _H(dv)]


core.abstract_eval_rules[svd_p] = _svd_abstract_eval
core.impl_rules[svd_p] = _svd_impl
ad.jvp_rules[svd_p] = _svd_jvp
batching.batch_rules[svd_p] = _unary_batch(svd_p)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
    """Singular value decomposition x = u diag(s) vh of matrices (..., m, n).

    Args:
      x: float or complex matrices.
      full_matrices: u (..., m, m) and vh (..., n, n); else k = min(m, n) columns/rows.
      compute_uv: also return u and vh.
      subset_by_index: (start, end): only singular triplets start..end-1 (descending order);
        needs full_matrices=False unless it is everything (as JAX).
      algorithm: None or an SvdAlgorithm; every choice computes the same decomposition here
        (LAPACK gesdd), so it only selects the algorithm in JAX.

    Returns:
      (u, s, vh) if compute_uv else s; s descending, real. Derivatives of u and vh need
      distinct nonzero singular values and full_matrices=False for non-square x.

    >>> import numpy as np
    >>> svd(np.array([[3., 0.], [0., 4.]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise NumbaxTypeError(
            f"lax.linalg.svd: algorithm has {algorithm!r}, expected None or an SvdAlgorithm.")
    aval = get_aval(x)
    _check_matrix("svd", aval, square=False)
    subset = _check_subset("svd", subset_by_index, min(aval.shape[-2:]))
    if subset is not None and full_matrices:
        raise NumbaxValueError(
            f"lax.linalg.svd: subset_by_index has {subset_by_index!r} with full_matrices=True; "
            "pass full_matrices=False to take a subset (as JAX).")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset is not None:
        outs = [shape_ops.slice_in_dim(outs[0], *subset, axis=aval.ndim - 2)] + [
            shape_ops.slice_in_dim(o, *subset, axis=aval.ndim - (1 if i == 0 else 2))
            for i, o in enumerate(outs[1:])]
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt


# ----------------------------------------------------------------------------- qdwh


def _halley_weights(l0: float, max_iterations: int) -> list[tuple[float, float, float]]:
    """The dynamic weights (a, b, c) of Nakatsukasa, Bai and Gygi (2010), eq. 3.3-3.4, from
    the lower bound l0 on the smallest singular value of the scaled matrix, until l ~ 1."""
    weights, low, tol = [], l0, 10.0 * l0 / 2.0
    while low + tol < 1 and len(weights) < max_iterations:
        l2 = low * low
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = np.sqrt(1.0 + dd)
        a = sqd + np.sqrt(8 - 4 * dd + 8 * (2 - l2) / (l2 * sqd)) / 2
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        low = low * (a + b * l2) / (1 + c * l2)
        weights.append((a, b, c))
    return weights


def _halley_qr(u: Any, a: float, b: float, c: float) -> Any:
    """u ← (b/c) u + (a - b/c)/√c · q1 q2ᴴ with [√c u; I] = [q1; q2] r (no inverse)."""
    n = get_aval(u).shape[-1]
    dtype = get_aval(u).dtype
    stacked = shape_ops.concatenate([ew.mul(u, np.array(np.sqrt(c), dtype)),
                                     np.eye(n, dtype=dtype)], 0)
    q, _ = qr_p.bind(stacked, pivoting=False, full_matrices=False)
    m = get_aval(u).shape[0]
    q1 = shape_ops.slice_in_dim(q, 0, m, axis=0)
    q2 = shape_ops.slice_in_dim(q, m, m + n, axis=0)
    e = b / c
    return ew.add(ew.mul(u, np.array(e, dtype)),
                  ew.mul(_mm(q1, _H(q2)), np.array((a - e) / np.sqrt(c), dtype)))


def _halley_cholesky(u: Any, a: Any, b: Any, c: Any) -> Any:
    """u ← (b/c) u + (a - b/c) u (I + c uᴴu)⁻¹, through the Cholesky factor of I + c uᴴu."""
    uhu = _mm(_H(u), u)
    z = ew.add(ew.mul(uhu, c), _eye_like(uhu))
    low = cholesky_p.bind(z)
    y = triangular_solve(low, u, left_side=False, lower=True, transpose_a=True,
                         conjugate_a=True)  # u L⁻ᴴ
    y = triangular_solve(low, y, left_side=False, lower=True)  # u L⁻ᴴ L⁻¹ = u z⁻¹
    e = ew.div(b, c)
    return ew.add(ew.mul(u, e), ew.mul(y, ew.sub(a, e)))


def _fro(x: Any) -> Any:
    sq = ew.real(ew.mul(x, ew.conj(x))) if kind_of(get_aval(x).dtype) == "c" else ew.square(x)
    return ew.sqrt(reductions.reduce_sum(sq, tuple(range(get_aval(x).ndim))))


def _qdwh(x: Any, max_iterations: int, eps: float) -> tuple[Any, Any, Any, Any]:
    dtype = get_aval(x).dtype
    real = _real_dtype(dtype)
    ax = ew.abs(x)
    one_norm = reductions.reduce_max(reductions.reduce_sum(ax, (0,)), (0,))
    inf_norm = reductions.reduce_max(reductions.reduce_sum(ax, (1,)), (0,))
    scale = ew.mul(ew.rsqrt(one_norm), ew.rsqrt(inf_norm))
    scale = ew.select(ew.eq(one_norm, np.array(0, real)), np.array(1, real), scale)
    u = ew.mul(x, _to(scale, dtype))
    weights = _halley_weights(eps, max_iterations)
    tol_norm = np.cbrt(10.0 * eps / 2.0)
    not_converged: Any = np.bool_(True)
    for a, b, c in weights:
        if c > 100:
            u = _halley_qr(u, a, b, c)
        else:
            u_prev = u
            u = _halley_cholesky(u, *(np.array(v, dtype) for v in (a, b, c)))
            not_converged = ew.gt(_fro(ew.sub(u, u_prev)), np.array(tol_norm, real))
    consts = tuple(np.array(v, dtype) for v in (3, 1, 3))
    int_dtype = dtypes.default_int_dtype()

    def cond(state):
        k, _, going = state
        return ew.bitwise_and(going, ew.lt(k, np.array(max_iterations, int_dtype)))

    def body(state):
        k, u, _ = state
        u_new = _halley_cholesky(u, *consts)
        return (ew.add(k, np.array(1, int_dtype)), u_new,
                ew.gt(_fro(ew.sub(u_new, u)), np.array(tol_norm, real)))

    num_iters, u, not_converged = while_loop(
        cond, body, (np.array(len(weights), int_dtype), u, not_converged))
    uhu = _mm(_H(u), u)
    u = ew.sub(ew.mul(u, np.array(1.5, dtype)), ew.mul(_mm(u, uhu), np.array(0.5, dtype)))
    h = _mm(_H(u), x)
    h = ew.mul(ew.add(h, _H(h)), np.array(0.5, dtype))
    return u, h, num_iters, ew.bitwise_not(not_converged)


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
    """Polar decomposition x = u h by the QR-based dynamically weighted Halley iteration
    (Nakatsukasa, Bai and Gygi 2010), from qr, cholesky and triangular_solve.

    Args:
      x: a full-rank float or complex matrix (m, n) with m >= n.
      is_hermitian: accepted for JAX compatibility; unused (as in JAX).
      max_iterations: at most this many iterations (default 10).
      eps: the convergence target (default the dtype's machine epsilon): iterates stop when
        |u_k - u_{k-1}|_F < (5 eps)^(1/3).
      dynamic_shape: (m', n'): x holds an (m', n') matrix padded with zeros; u and h are
        computed for it and padded back.

    Returns:
      (u, h, num_iters, is_converged): u with orthonormal columns, h Hermitian positive
      semi-definite, the number of iterations, and whether they converged.

    >>> import numpy as np
    >>> u, h, _, ok = qdwh(np.array([[2., 0.], [0., 3.]]))
    >>> np.round(np.asarray(h), 6)
    array([[2., 0.],
           [0., 3.]])
    """
    aval = get_aval(x)
    _check_matrix("qdwh", aval, square=False)
    if aval.ndim != 2 or aval.shape[0] < aval.shape[1]:
        raise NumbaxValueError(
            f"lax.linalg.qdwh: x has shape {aval.shape}, expected one matrix (m, n) with "
            "m >= n. Pass the conjugate transpose of a wide matrix (and transpose back).")
    iters = 10 if max_iterations is None else int(max_iterations)
    eps = float(finfo_of(aval.dtype).eps) if eps is None else float(eps)
    if dynamic_shape is not None and tuple(dynamic_shape) != aval.shape:
        m, n = (int(d) for d in dynamic_shape)
        if not (0 < n <= m <= aval.shape[0] and n <= aval.shape[1]):
            raise NumbaxValueError(
                f"lax.linalg.qdwh: dynamic_shape has {dynamic_shape!r}, expected (m, n) with "
                f"n <= m, m <= {aval.shape[0]} and n <= {aval.shape[1]}.")
        inner = shape_ops.slice(x, (0, 0), (m, n))
        u, h, k, ok = _qdwh(inner, iters, eps)
        zero = np.array(0, aval.dtype)
        u = shape_ops.pad(u, zero, [(0, aval.shape[0] - m, 0), (0, aval.shape[1] - n, 0)])
        h = shape_ops.pad(h, zero, [(0, aval.shape[1] - n, 0), (0, aval.shape[1] - n, 0)])
        return u, h, k, ok
    return _qdwh(x, iters, eps)
