"""Linear algebra primitives, part one: the shared matrix helpers and the triangular family
(cholesky, cholesky_update, triangular_solve, symmetric_product).

Every primitive works on stacks of matrices (leading batch dims), takes float32/float64 and
(where JAX does) complex64/complex128, has a numpy/scipy impl over LAPACK, and a jvp written
with ops that are linear in the tangents (dot_general, triangular_solve in b, elementwise
products with primal values), so reverse mode comes from linearize + transpose. For complex
inputs the jvps are real-linear maps, so derivatives follow JAX's convention (for a real
f(z), grad gives ∂f/∂x - i ∂f/∂y, as jax.grad). The other families live in linalg_lu.py,
linalg_qr.py, linalg_eig.py and linalg_svd.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy  # scipy.linalg: imported at first use (scipy loads subpackages lazily)

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import linalg_blas, reductions, shape_ops
from numbax._src.lax.dot import dot_general

# ----------------------------------------------------------------------------- helpers


def _check_matrix(name: str, aval: ShapedArray, arg: str = "x", square: bool = True,
                  kinds: str = "fc") -> None:
    """Raises JAX's error classes for a non-float (or non-matrix, or non-square) operand."""
    if kind_of(aval.dtype) not in kinds:
        want = "float32 or float64" if kinds == "f" else "a float or complex dtype"
        raise NumbaxTypeError(
            f"lax.linalg.{name}: {arg} has dtype {aval.dtype}, expected {want}. Convert it "
            "first (numbax.numpy.linalg promotes integers to float)."
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


def _is_complex(x: Any) -> bool:
    return kind_of(get_aval(x).dtype) == "c"


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.empty((), dtype).real.dtype


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _T(x: Any) -> Any:
    """Swaps the last two axes."""
    nd = get_aval(x).ndim
    return shape_ops.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _conj(x: Any) -> Any:
    return ew.conj(x) if _is_complex(x) else x


def _H(x: Any) -> Any:
    """Conjugate transpose of the last two axes."""
    return _conj(_T(x))


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


def _eye_like(x: Any) -> Any:
    """Identity matrices shaped (and typed) like x (..., m, n)."""
    m, n = get_aval(x).shape[-2:]
    return _bcast(np.eye(m, n), x)


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
    """The diagonal (..., k) of matrices (..., m, n), k = min(m, n): a masked sum."""
    m, n = get_aval(x).shape[-2:]
    masked = ew.mul(x, _bcast(np.eye(m, n), x))
    axis = get_aval(x).ndim - (2 if m >= n else 1)
    out = reductions.reduce_sum(masked, (axis,))
    return out


def _diag_matrix(v: Any, like: Any) -> Any:
    """The diagonal matrices (..., n, n) with diagonal v (..., n), shaped like `like`."""
    return ew.mul(_row_vec(v, like), _eye_like(like))


def _to(x: Any, dtype: np.dtype) -> Any:
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, dtype)


def _real_part(x: Any) -> Any:
    """Re(x) kept in x's dtype (x itself when real): a real-linear map."""
    if not _is_complex(x):
        return x
    return ew.mul(ew.add(x, ew.conj(x)), np.array(0.5, get_aval(x).dtype))


def _unary_batch(prim: Primitive):
    """Batch dims are leading dims: move the vmapped axis to the front and bind again."""

    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        outs = core.bind(prim, batching.moveaxis(x, d, 0), **params)
        return outs, [0] * len(outs)

    return rule


def _front_batch(prim: Primitive):
    """Batch rule for several operands with leading batch dims: all vmapped axes in front."""

    def rule(axis_size, vals, dims, **params):
        vals = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
        outs = core.bind(prim, *vals, **params)
        return outs, [0] * len(outs)

    return rule


def _each_matrix(fn, a: np.ndarray, n_out: int, *more: np.ndarray) -> list[np.ndarray]:
    """Applies a 2-d routine to every matrix of a stack (and the matching entries of `more`);
    fn returns n_out arrays."""
    batch = a.shape[:-2]
    results = [fn(a[idx], *[m[idx] for m in more]) for idx in np.ndindex(*batch)]
    return [np.stack([r[i] for r in results]).reshape(batch + results[0][i].shape)
            for i in range(n_out)]


def _no_jvp(name: str):
    """The jvp rule of a primitive JAX does not differentiate either: a clear error."""

    def rule(primals, tangents, **params):
        raise NotImplementedError(
            f"Differentiation rule for '{name}' is not implemented (as in JAX). "
            "Differentiate a function built from the differentiable decompositions instead."
        )

    return rule


def _symmetrize(x: Any, name: str) -> Any:
    """(x + xᴴ) / 2."""
    _check_matrix(name, get_aval(x))
    return ew.mul(ew.add(x, _H(x)), np.array(0.5, get_aval(x).dtype))


def _hermitian_from(x: Any, lower: bool) -> Any:
    """The Hermitian matrix that the triangle `lower` of x (real part of its diagonal) gives:
    a real-linear map, so it reads tangents the way LAPACK reads the primal."""
    strict = _tril(x, -1) if lower else _triu(x, 1)
    diag = _real_part(ew.mul(x, _eye_like(x)))
    return ew.add(ew.add(strict, _H(strict)), diag)


def _hermitian_np(x: np.ndarray, lower: bool) -> np.ndarray:
    strict = np.tril(x, -1) if lower else np.triu(x, 1)
    diag = np.real(np.diagonal(x, axis1=-2, axis2=-1))
    out = strict + np.conj(np.swapaxes(strict, -1, -2))
    idx = np.arange(x.shape[-1])
    out[..., idx, idx] = diag
    return out


# ----------------------------------------------------------------------------- cholesky

cholesky_p = Primitive("cholesky")


def _cholesky_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    _check_matrix("cholesky", x)
    return [ShapedArray(x.shape, x.dtype)]


def _cholesky_impl(x: np.ndarray) -> list[np.ndarray]:
    """Reads the lower triangle; matrices that are not positive definite give NaNs (as JAX).
    One real matrix goes to potrf on its own memory (linalg_blas.py), a stack to numpy's
    loop; a complex one is made Hermitian first."""
    if linalg_blas.takes(x):
        return [linalg_blas.cholesky(x)]
    herm = _hermitian_np(x, lower=True) if np.iscomplexobj(x) else x
    try:
        return [np.linalg.cholesky(herm)]
    except np.linalg.LinAlgError:
        pass

    def one(m: np.ndarray) -> tuple[np.ndarray]:
        try:
            return (np.linalg.cholesky(m),)
        except np.linalg.LinAlgError:
            return (np.full_like(m, np.nan),)

    return [one(herm)[0]] if x.ndim == 2 else _each_matrix(one, herm, 1)


def _cholesky_jvp(primals, tangents):
    """dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ taking the lower triangle with the diagonal halved."""
    (x,), (x_dot,) = primals, tangents
    L = cholesky_p.bind(x)
    herm = _hermitian_from(ad.instantiate_zeros(x_dot), lower=True)
    tmp = triangular_solve(L, herm, left_side=False, lower=True, transpose_a=True,
                           conjugate_a=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    return [L], [_mm(L, _tril(inner, 0, 0.5))]


core.abstract_eval_rules[cholesky_p] = _cholesky_abstract_eval
core.impl_rules[cholesky_p] = _cholesky_impl
ad.jvp_rules[cholesky_p] = _cholesky_jvp
batching.batch_rules[cholesky_p] = _unary_batch(cholesky_p)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """Lower Cholesky factor L (x = L Lᴴ) of Hermitian positive definite matrices (..., n, n).

    Args:
      x: float or complex matrices; only the lower triangle is read unless
        ``symmetrize_input``.
      symmetrize_input: use (x + xᴴ)/2 (then gradients are Hermitian, as JAX).

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


# ----------------------------------------------------------------------------- cholesky_update

cholesky_update_p = Primitive("cholesky_update")


def _cholesky_update_abstract_eval(r: ShapedArray, w: ShapedArray) -> list[ShapedArray]:
    _check_matrix("cholesky_update", r, "r_matrix", kinds="f")
    if w.dtype != r.dtype or w.shape != r.shape[:-1]:
        raise NumbaxValueError(
            f"lax.linalg.cholesky_update: r_matrix has shape {r.shape} ({r.dtype}) and "
            f"w_vector has shape {w.shape} ({w.dtype}), expected w_vector of shape "
            f"{r.shape[:-1]} and dtype {r.dtype}. Pass one vector per matrix."
        )
    return [ShapedArray(r.shape, r.dtype)]


def _givens_update(r: np.ndarray, w: np.ndarray) -> tuple[np.ndarray]:
    """LINPACK's rank-one update by Givens rotations, on the upper triangle of r."""
    r = np.triu(r).astype(np.result_type(r, w))
    z = w.astype(r.dtype)
    for k in range(r.shape[0]):
        x, y = r[k, k], z[k]
        if y == 0:
            c, s = 1.0, 0.0
        else:
            scale = max(abs(x), abs(y))
            x, y = x / scale, y / scale
            rh = 1.0 / np.sqrt(x * x + y * y)
            c, s = x * rh, -y * rh
        row = c * r[k] - s * z
        z = c * z + s * r[k]
        r[k] = row
    return (r,)


def _cholesky_update_impl(r: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    if r.ndim == 2:
        return list(_givens_update(r, w))
    if 0 in r.shape[:-2]:
        return [np.zeros_like(r)]
    return _each_matrix(_givens_update, r, 1, w)


def _cholesky_update_jvp(primals, tangents):
    """With A = RᵀR + wwᵀ and R' its Cholesky factor: dR' = Φ(R'⁻ᵀ dA R'⁻¹)ᵀ R'."""
    r, w = primals
    r_dot, w_dot = (ad.instantiate_zeros(t) for t in tangents)
    out = cholesky_update_p.bind(r, w)
    r_up, dr_up = _triu(r), _triu(r_dot)
    da = ew.add(_mm(_T(dr_up), r_up), _mm(_T(r_up), dr_up))
    wd = ew.mul(_col_vec(w, da), _row_vec(w_dot, da))
    da = ew.add(da, ew.add(wd, _T(wd)))
    left = triangular_solve(out, da, left_side=True, lower=False, transpose_a=True)
    inner = triangular_solve(out, left, left_side=False, lower=False)
    return [out], [_mm(_T(_tril(inner, 0, 0.5)), out)]


core.abstract_eval_rules[cholesky_update_p] = _cholesky_update_abstract_eval
core.impl_rules[cholesky_update_p] = _cholesky_update_impl
ad.jvp_rules[cholesky_update_p] = _cholesky_update_jvp
batching.batch_rules[cholesky_update_p] = _front_batch(cholesky_update_p)


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """Cholesky rank-1 update: the upper factor R' of RᵀR + w wᵀ, in O(n²) (Givens rotations).

    Args:
      r_matrix: upper-triangular float matrices R (..., n, n) with A = RᵀR (the strictly lower
        triangle is ignored).
      w_vector: vectors w (..., n).

    Returns:
      The upper-triangular R' with R'ᵀR' = A + w wᵀ (positive diagonal).

    Unlike JAX: leading batch dims are accepted, and the function is differentiable.

    >>> import numpy as np
    >>> cholesky_update(np.eye(2), np.array([0., 1.]))
    Array([[1.        , 0.        ],
           [0.        , 1.41421356]], dtype=float64)
    """
    return cholesky_update_p.bind(r_matrix, w_vector)


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


def _substitute(tri: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Forward (back) substitution on one triangular matrix: a zero pivot gives inf/NaN
    (as JAX) where LAPACK's trtrs refuses."""
    n = tri.shape[-1]
    x = np.zeros(np.broadcast_shapes(b.shape), np.result_type(tri, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            x[i] = (b[i] - tri[i, done] @ x[done]) / tri[i, i]
    return x


def _solve_left(op_a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """op_a x = b for triangular op_a (..., m, m), b (..., m, n)."""
    try:
        with np.errstate(all="ignore"):
            if op_a.ndim == 2:
                return scipy.linalg.solve_triangular(op_a, b, lower=lower, check_finite=False)
            return np.linalg.solve(op_a, b)
    except np.linalg.LinAlgError:  # an exactly singular matrix
        out = np.empty(b.shape, np.result_type(op_a, b))
        for idx in np.ndindex(*op_a.shape[:-2]):
            out[idx] = _substitute(op_a[idx], b[idx], lower)
        return out


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """op(a) x = b (left_side) or x op(a) = b, with a's other triangle ignored."""
    if linalg_blas.takes(a, b):  # one BLAS trsm on the operands' own memory
        return [linalg_blas.solve_triangular(a, b, left_side, lower, transpose_a, unit_diagonal)]
    if linalg_blas.takes_stack(a, b):  # many small systems, substituted all at once
        return [linalg_blas.solve_stacked(a, b, left_side, lower, transpose_a, unit_diagonal)]
    op_a = _effective_a(a, lower, transpose_a, conjugate_a, unit_diagonal)
    lower_eff = lower != transpose_a
    out = _solve_left(op_a, b, lower_eff) if left_side else np.swapaxes(_solve_left(
        np.swapaxes(op_a, -1, -2), np.swapaxes(b, -1, -2), not lower_eff), -1, -2)
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
        g = ew.conj(g) if params["conjugate_a"] else g
        prod = _mm(g, ans) if params["left_side"] else _mm(ans, g)
        t_out = ad.add_tangents(t_out, triangular_solve_p.bind(a, prod, **params))
    return [ans], [t_out]


def _triangular_solve_transpose(cts, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    (ct,) = cts
    assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
    if type(ct) is ad.Zero:
        return [None, ad.Zero(b.aval)]
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


core.abstract_eval_rules[triangular_solve_p] = _triangular_solve_abstract_eval
core.impl_rules[triangular_solve_p] = _triangular_solve_impl
ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
ad.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
batching.batch_rules[triangular_solve_p] = _front_batch(triangular_solve_p)


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solves op(a) x = b (left_side) or x op(a) = b for triangular a (JAX's defaults).

    Args:
      a: triangular matrices (..., m, m); the other triangle is ignored.
      b: right-hand sides (..., m, n) if left_side else (..., n, m); a b with one dimension
        fewer than a is a stack of vectors (as JAX).
      left_side, lower, transpose_a, unit_diagonal: as in JAX.
      conjugate_a: use conj(a) (no effect for real a).

    Returns:
      x, shaped like b.

    >>> import numpy as np
    >>> triangular_solve(np.array([[2., 0.], [1., 1.]]), np.array([[2.], [3.]]),
    ...                  left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float64)
    """
    conjugate_a = bool(conjugate_a) and _is_complex(a)
    singleton = get_aval(b).ndim == get_aval(a).ndim - 1
    if singleton:
        b = shape_ops.expand_dims(b, (get_aval(b).ndim if left_side else get_aval(b).ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = get_aval(out).ndim
        out = shape_ops.squeeze(out, (nd - 1 if left_side else nd - 2,))
    return out


# ----------------------------------------------------------------------------- symmetric_product

symmetric_product_p = Primitive("symmetric_product")


def _symmetric_product_abstract_eval(a: ShapedArray, c: ShapedArray, *, alpha, beta):
    _check_matrix("symmetric_product", a, "a_matrix", square=False, kinds="f")
    _check_matrix("symmetric_product", c, "c_matrix", kinds="f")
    if a.dtype != c.dtype or a.shape[:-2] != c.shape[:-2] or a.shape[-2] != c.shape[-1]:
        raise NumbaxValueError(
            f"lax.linalg.symmetric_product: a_matrix has shape {a.shape} ({a.dtype}) and "
            f"c_matrix has shape {c.shape} ({c.dtype}), expected c_matrix of shape "
            f"{(*a.shape[:-2], a.shape[-2], a.shape[-2])} and the same dtype."
        )
    return [ShapedArray(c.shape, c.dtype)]


def _symmetric_product_impl(a, c, *, alpha, beta):
    prod = np.matmul(a, np.swapaxes(a, -1, -2))
    return [(alpha * prod + beta * c).astype(c.dtype)]


def _symmetric_product_jvp(primals, tangents, *, alpha, beta):
    """alpha (da aᵀ + a daᵀ) + beta dc."""
    a, c = primals
    a_dot, c_dot = tangents
    out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
    t_out: Any = ad.Zero(get_aval(out))
    dtype = get_aval(c).dtype
    if type(a_dot) is not ad.Zero:
        half = _mm(a_dot, _T(a))
        t_out = ew.mul(ew.add(half, _T(half)), np.array(alpha, dtype))
    if type(c_dot) is not ad.Zero:
        t_out = ad.add_tangents(t_out, ew.mul(c_dot, np.array(beta, dtype)))
    return [out], [t_out]


core.abstract_eval_rules[symmetric_product_p] = _symmetric_product_abstract_eval
core.impl_rules[symmetric_product_p] = _symmetric_product_impl
ad.jvp_rules[symmetric_product_p] = _symmetric_product_jvp
batching.batch_rules[symmetric_product_p] = _front_batch(symmetric_product_p)


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """alpha · A Aᵀ + beta · C for float matrices A (..., m, n) and symmetric C (..., m, m).

    Args:
      a_matrix, c_matrix: as above.
      alpha, beta: Python scalars.
      symmetrize_output: copy the lower triangle onto the upper one.

    Returns:
      (..., m, m). numbax computes the whole matrix (JAX guarantees only the lower triangle).

    >>> import numpy as np
    >>> symmetric_product(np.array([[1.], [2.]]), np.eye(2), alpha=1.0, beta=2.0)
    Array([[3., 2.],
           [2., 6.]], dtype=float64)
    """
    out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
    if symmetrize_output:
        out = ew.add(_tril(out), _T(_tril(out, -1)))
    return out
