"""Linear algebra primitives, part two: elimination (lu, lu_pivots_to_permutation) and the
banded solve tridiagonal_solve, with the LU-based solves the rest of the library shares."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import linalg_blas, shape_ops
from numbax._src.lax.along_axis import scatter_add_along_axis, take_along_axis
from numbax._src.lax.iota import broadcasted_iota
from numbax._src.lax.linalg import (
    _bcast,
    _check_matrix,
    _each_matrix,
    _front_batch,
    _mm,
    _tril,
    _triu,
    _unary_batch,
    triangular_solve,
)
from numbax._src.lazy_module import lazy

lapack = lazy("scipy.linalg.lapack")

# ----------------------------------------------------------------------------- lu

lu_p = Primitive("lu", multiple_results=True)


def _lu_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("lu", x, square=False)
    *batch, m, n = x.shape
    return [ShapedArray(x.shape, x.dtype), ShapedArray((*batch, min(m, n)), np.dtype(np.int32)),
            ShapedArray((*batch, m), np.dtype(np.int32))]


def _pivots_to_perm(piv: np.ndarray, size: int) -> np.ndarray:
    perm = np.arange(size, dtype=np.int32)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_one(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK's getrf on a column-major copy of m made by blocks (`linalg_blas.relaid`, 3x
    numpy's copy at 1024^2); an exactly singular matrix factors fine (U has a zero)."""
    getrf = lapack.get_lapack_funcs("getrf", (m,))
    lu, piv, info = getrf(linalg_blas.relaid(m, "F"), overwrite_a=1)
    if info < 0:
        raise ValueError(f"lax.linalg.lu: LAPACK's getrf refused argument {-info}")
    return lu, piv.astype(np.int32), _pivots_to_perm(piv, m.shape[0])


def _lu_impl(x: np.ndarray) -> list[np.ndarray]:
    """P a = L U with L unit lower; pivots as LAPACK's getrf (0-based), permutation of rows."""
    *batch, m, n = x.shape
    if 0 in x.shape:
        perm = np.broadcast_to(np.arange(m, dtype=np.int32), (*batch, m)).copy()
        return [x.copy(), np.zeros((*batch, min(m, n)), np.int32), perm]
    if x.ndim == 2:
        return list(_lu_one(x))
    count = x.size // (m * n)
    if x.dtype.kind == "f" and min(m, n) <= linalg_blas.STACKED_MAX and count >= 2 * min(m, n):
        return _lu_stacked(x)
    lu, piv, perm = _each_matrix(_lu_one, x, 3)
    return [lu.astype(x.dtype), piv, perm]


# Stacks of small real matrices (linalg_blas.STACKED_MAX) factor all at once (`_lu_stacked`):
# one LAPACK call a matrix cost ~15 us of Python each (a jitted solve of 10,000 3 x 3 systems
# took 152 ms on the VM, jax.jit 8), where a step of the elimination over the whole stack
# costs about one such call.


def _lu_stacked(x: np.ndarray) -> list[np.ndarray]:
    """LAPACK's unblocked getf2 over every matrix of a stack at once, column by column: the
    pivot is the first largest magnitude (as idamax: a NaN below the diagonal is never
    chosen), whole rows swap, the multipliers scale by the pivot's reciprocal (by division
    under LAPACK's safe minimum), and a zero pivot leaves its column as it is. The stack's
    axis goes last, so each entry of the matrices is one contiguous vector over the stack
    (matrices first, every step's column and row were strided reads: 7 of a jitted 10,000
    3 x 3 solve's 9.6 ms on the 2-core VM)."""
    *batch, m, n = x.shape
    a = np.ascontiguousarray(np.moveaxis(x.reshape(-1, m, n), 0, -1))  # (m, n, count)
    count, steps = a.shape[2], min(m, n)
    each = np.arange(count)
    pivots = np.empty((steps, count), np.int32)
    perm = np.repeat(np.arange(m, dtype=np.int32)[:, None], count, axis=1)
    tiny = np.finfo(a.dtype).tiny
    for k in range(steps):
        size = np.abs(a[k:, k])
        size[1:][np.isnan(size[1:])] = -1.0
        size[0][np.isnan(size[0])] = np.inf
        p = k + np.argmax(size, axis=0)
        pivots[k] = p
        row_k = a[k].T.copy()
        a[k] = a[p, :, each].T
        a[p, :, each] = row_k
        perm_k = perm[k].copy()
        perm[k] = perm[p, each]
        perm[p, each] = perm_k
        pivot, column = a[k, k], a[k + 1:, k]
        with np.errstate(all="ignore"):
            scaled = np.where(np.abs(pivot) >= tiny, column * (1 / pivot), column / pivot)
        a[k + 1:, k] = np.where(pivot != 0, scaled, column)
        a[k + 1:, k + 1:] -= a[k + 1:, k, None] * a[k, None, k + 1:]
    lu = np.ascontiguousarray(np.moveaxis(a, -1, 0))
    return [lu.reshape(x.shape), np.ascontiguousarray(pivots.T).reshape(*batch, steps),
            np.ascontiguousarray(perm.T).reshape(*batch, m)]


def permutation_matrix(perm: Any, dtype: np.dtype) -> Any:
    """P with P[..., i, j] = (perm[..., i] == j), so P @ a = a[perm]."""
    shape = (*get_aval(perm).shape, get_aval(perm).shape[-1])
    nd = len(shape)
    rows = shape_ops.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    cols = shape_ops.broadcasted_iota(np.int32, shape, nd - 1)
    return ew.convert_element_type(ew.eq(rows, cols), dtype)


def permute_rows(x: Any, perm: Any) -> Any:
    """P @ x for P = permutation_matrix(perm), as a gather of rows: x[..., perm[..., i], :]
    (perm has x's batch dims), as JAX applies it. As a product with P it cost an n x n matrix
    and n^2 k multiply-adds: a whole n^3 product more in an inverse (the 2-core VM, jitted,
    1000^2: solve 36-50 -> 28-30 ms, inv 127-160 -> 114-116, grad of a solve 255-293 ->
    195-227)."""
    return take_along_axis(x, shape_ops.expand_dims(perm, (-1,)), get_aval(x).ndim - 2)


def unpermute_rows(y: Any, perm: Any) -> Any:
    """Pᵀ @ y: row i of y to row perm[i], gathered through the inverse permutation (as JAX's
    lu_solve does), which a scatter of 0..n-1 to perm gives exactly."""
    shape = get_aval(perm).shape
    axis = len(shape) - 1
    inverse = scatter_add_along_axis(broadcasted_iota(np.int32, shape, axis), perm, axis,
                                     shape[-1])
    return permute_rows(y, inverse)


def _pad_to(x: Any, rows: int, cols: int) -> Any:
    """x (..., r, c) zero-padded at the bottom/right to (..., rows, cols)."""
    *batch, r, c = get_aval(x).shape
    config = [(0, 0, 0)] * len(batch) + [(0, rows - r, 0), (0, cols - c, 0)]
    return shape_ops.pad(x, np.array(0, get_aval(x).dtype), config)


def lu_factors(lu: Any) -> tuple[Any, Any]:
    """L (..., m, m) unit lower and U (..., n, n) upper from packed (..., m, n) factors, both
    square: L's columns past k = min(m, n) and U's rows past k are those of the identity."""
    *_, m, n = get_aval(lu).shape
    k = min(m, n)
    dtype = get_aval(lu).dtype
    low = _pad_to(_tril(shape_ops.slice_in_dim(lu, 0, k, axis=get_aval(lu).ndim - 1), -1), m, m)
    up = _pad_to(_triu(shape_ops.slice_in_dim(lu, 0, k, axis=get_aval(lu).ndim - 2)), n, n)
    eye_u = np.zeros((n, n), dtype)
    eye_u[k:, k:] = np.eye(n - k)
    return ew.add(low, _bcast(np.eye(m), low)), ew.add(up, _bcast(eye_u, up))


def _lu_jvp(primals, tangents):
    """JAX's rule: with X = L⁻¹ P dA U⁻¹, d(lu) = L tril(X, -1) + triu(X) U (square L, U)."""
    (x,), (x_dot,) = primals, tangents
    lu, pivots, perm = lu_p.bind(x)
    x_dot = ad.instantiate_zeros(x_dot)
    l_mat, u_mat = lu_factors(lu)
    pa = permute_rows(x_dot, perm)
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
    """LU decomposition with partial pivoting, P x = L U, of matrices (..., m, n).

    Returns:
      (lu, pivots, permutation): L (unit diagonal, strictly below) and U (on and above) packed
      in one (..., m, n) matrix; int32 LAPACK pivots (..., min(m, n)); int32 permutation
      (..., m) with x[perm] = L @ U.

    >>> import numpy as np
    >>> lu(np.array([[1., 2.], [3., 4.]]))[2]
    Array([1, 0], dtype=int32)
    """
    return tuple(lu_p.bind(x))


def lu_solve(lu: Any, perm: Any, b: Any, trans: int = 0) -> Any:
    """x with op(a) x = b from a's square LU factors; b is (..., n, k) with lu's batch dims.

    trans 0 solves a x = b, 1 aᵀ x = b, 2 aᴴ x = b."""
    if trans == 0:
        y = triangular_solve(lu, permute_rows(b, perm), left_side=True, lower=True,
                             unit_diagonal=True)
        return triangular_solve(lu, y, left_side=True, lower=False)
    conj = trans == 2
    y = triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    y = triangular_solve(lu, y, left_side=True, lower=True, unit_diagonal=True,
                         transpose_a=True, conjugate_a=conj)
    return unpermute_rows(y, perm)


def solve(a: Any, b: Any) -> Any:
    """x with a x = b for square a (..., n, n) and b (..., n, k) with the same batch dims."""
    lu_mat, _, perm = lu_p.bind(a)
    return lu_solve(lu_mat, perm, b)


# ----------------------------------------------------------------------------- pivots

lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _lu_pivots_to_permutation_abstract_eval(pivots: ShapedArray, *, permutation_size: int):
    if pivots.dtype != np.int32 or pivots.ndim < 1:
        raise NumbaxTypeError(
            f"lax.linalg.lu_pivots_to_permutation: pivots has shape {pivots.shape} and dtype "
            f"{pivots.dtype}, expected int32 pivots of rank >= 1 (as lu returns them)."
        )
    if permutation_size < pivots.shape[-1]:
        raise NumbaxValueError(
            f"lax.linalg.lu_pivots_to_permutation: permutation_size has {permutation_size}, "
            f"expected at least the number of pivots ({pivots.shape[-1]})."
        )
    return [ShapedArray((*pivots.shape[:-1], permutation_size), np.dtype(np.int32))]


def _lu_pivots_to_permutation_impl(pivots: np.ndarray, *, permutation_size: int):
    batch = pivots.shape[:-1]
    out = np.empty((*batch, permutation_size), np.int32)
    for idx in np.ndindex(*batch):
        out[idx] = _pivots_to_perm(pivots[idx], permutation_size)
    return [out]


core.abstract_eval_rules[lu_pivots_to_permutation_p] = _lu_pivots_to_permutation_abstract_eval
core.impl_rules[lu_pivots_to_permutation_p] = _lu_pivots_to_permutation_impl
ad.non_differentiable.add(lu_pivots_to_permutation_p)
batching.batch_rules[lu_pivots_to_permutation_p] = _unary_batch(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation (..., permutation_size) that LAPACK's row swaps `pivots` (..., k) make.

    >>> import numpy as np
    >>> lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 3)
    Array([2, 0, 1], dtype=int32)
    """
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


# ----------------------------------------------------------------------------- tridiagonal_solve

tridiagonal_solve_p = Primitive("tridiagonal_solve")


def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    for name, aval in (("dl", dl), ("d", d), ("du", du), ("b", b)):
        if kind_of(aval.dtype) not in "fc":
            raise NumbaxTypeError(
                f"lax.linalg.tridiagonal_solve: {name} has dtype {aval.dtype}, expected a float "
                "or complex dtype.")
    if (dl.shape != d.shape or du.shape != d.shape or b.ndim != d.ndim + 1
            or b.shape[:-1] != d.shape or len({dl.dtype, d.dtype, du.dtype, b.dtype}) != 1):
        raise NumbaxValueError(
            f"lax.linalg.tridiagonal_solve: dl, d, du have shapes {dl.shape}, {d.shape}, "
            f"{du.shape} and b has shape {b.shape}, expected three (..., m) diagonals and b of "
            "shape (..., m, n), all of one dtype."
        )
    return [ShapedArray(b.shape, b.dtype)]


def _perturbed(pivot, tol):
    """A pivot of size at least tol, keeping its sign (phase); 0 becomes +tol."""
    if abs(pivot) >= tol:
        return pivot
    return tol if pivot == 0 else pivot / abs(pivot) * tol


def _gt_solve_perturbed(dl, d, du, b):
    """Gaussian elimination with partial pivoting on one tridiagonal system (LAPACK's gttrf
    order), pivots smaller than eps * max|A| replaced by that size so a singular matrix still
    gives a finite answer (what inverse iteration needs)."""
    m = d.shape[0]
    dtype = np.result_type(d, b)
    tol = finfo_of(dtype).eps * max(np.max(np.abs(np.concatenate([dl, d, du]))), 1e-300)
    u0, u1, u2 = d.astype(dtype).copy(), du.astype(dtype).copy(), np.zeros(m, dtype)
    low, x = dl.astype(dtype).copy(), b.astype(dtype).copy()
    for i in range(m - 1):
        if abs(low[i + 1]) > abs(u0[i]):  # swap rows i and i+1
            row = (u0[i], u1[i], u2[i])
            u0[i], u1[i], u2[i] = low[i + 1], u0[i + 1], u1[i + 1]
            low[i + 1], u0[i + 1], u1[i + 1] = row
            x[[i, i + 1]] = x[[i + 1, i]]
        u0[i] = _perturbed(u0[i], tol)
        f = low[i + 1] / u0[i]
        u0[i + 1] -= f * u1[i]
        u1[i + 1] -= f * u2[i]
        x[i + 1] -= f * x[i]
    u0[m - 1] = _perturbed(u0[m - 1], tol)
    for i in range(m - 1, -1, -1):
        acc = x[i].copy()
        if i + 1 < m:
            acc -= u1[i] * x[i + 1]
        if i + 2 < m:
            acc -= u2[i] * x[i + 2]
        x[i] = acc / u0[i]
    return (x,)


def _gtsv(dl, d, du, b):
    """LAPACK gtsv on one system; a singular matrix gives NaNs (as JAX)."""
    if d.shape[0] == 1:
        with np.errstate(all="ignore"):
            return (b / d[0],)
    fn = lapack.get_lapack_funcs("gtsv", (d, b))
    *_, x, info = fn(dl[1:], d, du[:-1], b)
    return (np.full_like(b, np.nan) if info != 0 else x,)


def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular):
    if 0 in b.shape:
        return [np.zeros_like(b)]
    one = _gt_solve_perturbed if perturb_singular else _gtsv
    if b.ndim == 2:
        return [one(dl, d, du, b)[0].astype(b.dtype)]
    batch = d.shape[:-1]
    out = np.empty_like(b)
    for idx in np.ndindex(*batch):
        out[idx] = one(dl[idx], d[idx], du[idx], b[idx])[0]
    return [out]


def _tridiagonal_product(dl, d, du, x):
    """A x for the tridiagonal A given by its diagonals (x is (..., m, n))."""
    m = get_aval(x).shape[-2]
    nd = get_aval(x).ndim

    def col(v):
        return shape_ops.broadcast_in_dim(v, get_aval(x).shape, tuple(range(nd - 1)))

    def shift(v, down):
        cfg = [(0, 0, 0)] * nd
        cfg[nd - 2] = (1, -1, 0) if down else (-1, 1, 0)
        return shape_ops.pad(v, np.array(0, get_aval(v).dtype), cfg)

    y = ew.mul(col(d), x)
    if m > 1:
        y = ew.add(y, ew.mul(col(dl), shift(x, down=True)))
        y = ew.add(y, ew.mul(col(du), shift(x, down=False)))
    return y


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    """d(A⁻¹ b) = A⁻¹ (db - dA x)."""
    *diags, b = primals
    *diag_dots, b_dot = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = b_dot
    if any(type(t) is not ad.Zero for t in diag_dots):
        prod = _tridiagonal_product(*[ad.instantiate_zeros(t) for t in diag_dots], ans)
        rhs = ad.add_tangents(b_dot, ew.neg(prod))
    if type(rhs) is ad.Zero:
        return [ans], [rhs]
    return [ans], [tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)]


def _tridiagonal_solve_transpose(cts, dl, d, du, b, *, perturb_singular):
    """Aᵀ has sub-diagonal du shifted down one and super-diagonal dl shifted up one."""
    (ct,) = cts
    assert ad.is_undefined_primal(b) and not any(map(ad.is_undefined_primal, (dl, d, du)))
    if type(ct) is ad.Zero:
        return [None, None, None, ad.Zero(b.aval)]
    nd = get_aval(d).ndim
    zero = np.array(0, get_aval(d).dtype)
    cfg_down = [(0, 0, 0)] * (nd - 1) + [(1, -1, 0)]
    cfg_up = [(0, 0, 0)] * (nd - 1) + [(-1, 1, 0)]
    dl_t = shape_ops.pad(du, zero, cfg_down)
    du_t = shape_ops.pad(dl, zero, cfg_up)
    return [None, None, None,
            tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)]


core.abstract_eval_rules[tridiagonal_solve_p] = _tridiagonal_solve_abstract_eval
core.impl_rules[tridiagonal_solve_p] = _tridiagonal_solve_impl
ad.jvp_rules[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.transpose_rules[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batching.batch_rules[tridiagonal_solve_p] = _front_batch(tridiagonal_solve_p)


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *,
                      perturb_singular: bool = False) -> Any:
    """Solves A X = B for the tridiagonal A with diagonals dl, d, du (each (..., m)).

    Args:
      dl: the sub-diagonal, dl[i] = A[i, i-1] (dl[0] is ignored).
      d: the diagonal.
      du: the super-diagonal, du[i] = A[i, i+1] (du[m-1] is ignored).
      b: right-hand sides (..., m, n).
      perturb_singular: replace pivots smaller than about eps·max|A| so singular systems
        give finite answers (else they give NaNs).

    Returns:
      X, shaped like b. Differentiable in all four arguments (linear in b).

    >>> import numpy as np
    >>> tridiagonal_solve(np.array([0., 1.]), np.array([2., 2.]), np.array([1., 0.]),
    ...                   np.array([[3.], [3.]]))
    Array([[1.],
           [1.]], dtype=float64)
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
