"""Linear algebra primitives, part four: eigendecompositions (eigh, eig) and the Schur form,
each one LAPACK call per matrix (syevd/heevd, geev, gees: the routines JAX calls on CPU)."""
from __future__ import annotations

import enum
import warnings
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
from numbax._src.lax.linalg import (
    _H,
    _check_matrix,
    _col_vec,
    _complex_dtype,
    _diag_part,
    _each_matrix,
    _eye_like,
    _hermitian_from,
    _mm,
    _no_jvp,
    _real_dtype,
    _row_vec,
    _symmetrize,
    _to,
    _unary_batch,
)
from numbax._src.lax.linalg_blas import optimal_lwork
from numbax._src.lax.linalg_lu import solve
from numbax._src.lazy_module import lazy

lapack = lazy("scipy.linalg.lapack")


class EigImplementation(enum.Enum):
    """Eigendecomposition backends in JAX; numbax always calls LAPACK's geev on the CPU."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Hermitian eigendecomposition algorithms in JAX; numbax runs QR (LAPACK syevd)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


def _nan_on_failure(fn, n_out: int):
    """fn on one matrix; LAPACK's failure to converge gives NaNs (as JAX), not an exception."""

    def one(a: np.ndarray, *rest):
        try:
            return fn(a, *rest)
        except (np.linalg.LinAlgError, ValueError):
            return tuple(np.full(o.shape, np.nan, o.dtype) for o in fn(np.eye(a.shape[-1],
                                                                               dtype=a.dtype)))

    return one


# ----------------------------------------------------------------------------- eigh

eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_abstract_eval(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    _check_matrix("eigh", x)
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-1], _real_dtype(x.dtype))]


def _eigh_impl(x: np.ndarray, *, lower: bool) -> list[np.ndarray]:
    if x.ndim == 2 and x.dtype in linalg_blas.LAPACK_DTYPES:
        return _eigh_one(x, lower)
    # a stack: numpy's batched eigh (one call for all its small matrices; the same LAPACK
    # routine on the same column-major numbers as `_eigh_one`)
    uplo = "L" if lower else "U"
    try:
        w, v = np.linalg.eigh(x, UPLO=uplo)
        return [v.astype(x.dtype), w.astype(_real_dtype(x.dtype))]
    except np.linalg.LinAlgError:
        one = _nan_on_failure(lambda m: np.linalg.eigh(m, UPLO=uplo)[::-1], 2)
        v, w = _each_matrix(one, x, 2)
        return [v.astype(x.dtype), w.astype(_real_dtype(x.dtype))]


def _eigh_one(x: np.ndarray, lower: bool) -> list[np.ndarray]:
    """One matrix's (v, w) by LAPACK's syevd (heevd) with its optimal workspace, on a blocked
    column-major copy (`linalg_blas.relaid`), reading the triangle JAX's call reads (the
    eigenvectors' signs and phases follow from it: jax.jit's, bit for bit, on the 2-core VM in
    every dtype, where numpy's eigh differed in single precision). numpy's eigh, the same
    routine after its own copy, took 712 ms for 2048^2 float64 on 16 Xeon cores where scipy's syevd
    ran 375 and jax.jit 576 (docs/performance.md). A matrix LAPACK does not converge on gives
    NaNs (as numpy's failure does here)."""
    complex_ = kind_of(x.dtype) == "c"
    name = "heevd" if complex_ else "syevd"
    n = x.shape[-1]
    sizes = lapack.get_lapack_funcs(name + "_lwork", (x,))(n, compute_v=1, lower=int(lower))
    work = {"lwork": optimal_lwork(sizes[0]), "liwork": int(sizes[1])}
    if complex_:
        work["lrwork"] = int(sizes[2])
    w, v, info = lapack.get_lapack_funcs(name, (x,))(
        linalg_blas.relaid(x, "F"), compute_v=1, lower=int(lower), overwrite_a=1, **work)
    if info != 0:
        return [np.full(x.shape, np.nan, x.dtype), np.full(n, np.nan, _real_dtype(x.dtype))]
    return [v, w.astype(_real_dtype(x.dtype))]


def _eigh_jvp(primals, tangents, *, lower):
    """dw = Re diag(Vᴴ dA V), dV = V (F ∘ Vᴴ dA V) with F_ij = 1/(w_j - w_i) off the diagonal.

    dA is read as the Hermitian matrix given by the triangle the impl reads. With repeated
    eigenvalues F is infinite: eigenvalue derivatives stay right, eigenvector ones do not
    (the eigenvectors are not unique there), as in JAX.
    """
    (x,), (x_dot,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower)
    herm = _hermitian_from(ad.instantiate_zeros(x_dot), lower)
    dtype = get_aval(x).dtype
    eye = _eye_like(x)
    wc = _to(w, dtype)
    diffs = ew.sub(_row_vec(wc, x), _col_vec(wc, x))  # w_j - w_i
    f_mat = ew.sub(ew.integer_pow(ew.add(eye, diffs), -1), eye)
    vh_dx_v = _mm(_mm(_H(v), herm), v)
    dv = _mm(v, ew.mul(f_mat, vh_dx_v))
    dw = _diag_part(vh_dx_v)
    return [v, w], [dv, ew.real(dw) if kind_of(dtype) == "c" else dw]


core.abstract_eval_rules[eigh_p] = _eigh_abstract_eval
core.impl_rules[eigh_p] = _eigh_impl
ad.jvp_rules[eigh_p] = _eigh_jvp
batching.batch_rules[eigh_p] = _unary_batch(eigh_p)


def _check_subset(api: str, subset: Any, n: int) -> tuple[int, int] | None:
    if subset is None:
        return None
    try:
        start, end = (int(i) for i in subset)
    except (TypeError, ValueError):
        start, end = -1, -1
    if not 0 <= start < end <= n:
        raise NumbaxValueError(
            f"lax.linalg.{api}: subset_by_index has {subset!r}, expected a pair (start, end) "
            f"with 0 <= start < end <= {n}."
        )
    return None if (start, end) == (0, n) else (start, end)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
    """Eigendecomposition of Hermitian (real symmetric) matrices (..., n, n): x = v diag(w) vᴴ.

    Args:
      x: float or complex Hermitian matrices.
      lower: read the lower (else upper) triangle when not symmetrizing.
      symmetrize_input: use (x + xᴴ)/2.
      sort_eigenvalues: LAPACK always returns them ascending, which this allows.
      subset_by_index: (start, end): only eigenpairs start..end-1 of the ascending order.
      implementation: None or EighImplementation.QR (JACOBI and QDWH are GPU/TPU algorithms
        in JAX and raise NotImplementedError on the CPU, as there).

    Returns:
      (v, w): eigenvectors as columns (x's dtype), eigenvalues ascending (real dtype).

    >>> import numpy as np
    >>> eigh(np.array([[2., 0.], [0., 1.]]))[1]
    Array([1., 2.], dtype=float64)
    """
    if implementation not in (None, EighImplementation.QR):
        if not isinstance(implementation, EighImplementation):
            raise NumbaxTypeError(
                f"lax.linalg.eigh: implementation has {implementation!r}, expected None or an "
                "EighImplementation.")
        raise NotImplementedError(
            f"lax.linalg.eigh: {implementation} runs on GPU/TPU in JAX; the CPU uses QR (LAPACK "
            "syevd). Pass implementation=None.")
    if symmetrize_input:
        x = _symmetrize(x, "eigh")
    _check_matrix("eigh", get_aval(x))
    subset = _check_subset("eigh", subset_by_index, get_aval(x).shape[-1])
    v, w = eigh_p.bind(x, lower=bool(lower))
    if subset is not None:
        v = shape_ops.slice_in_dim(v, *subset, axis=get_aval(v).ndim - 1)
        w = shape_ops.slice_in_dim(w, *subset, axis=get_aval(w).ndim - 1)
    return v, w


# ----------------------------------------------------------------------------- eig

eig_p = Primitive("eig", multiple_results=True)


def _eig_abstract_eval(x: ShapedArray, *, compute_left_eigenvectors: bool,
                       compute_right_eigenvectors: bool, enable_eigvec_derivs: bool):
    _check_matrix("eig", x)
    cdt = _complex_dtype(x.dtype)
    outs = [ShapedArray(x.shape[:-1], cdt)]
    outs += [ShapedArray(x.shape, cdt)] * (int(compute_left_eigenvectors)
                                           + int(compute_right_eigenvectors))
    return outs


def _eig_impl(x: np.ndarray, *, compute_left_eigenvectors: bool,
              compute_right_eigenvectors: bool, enable_eigvec_derivs: bool):
    """LAPACK geev through scipy: unit-norm eigenvectors with a real largest component."""
    cdt = _complex_dtype(x.dtype)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors

    def one(a: np.ndarray):
        res = scipy.linalg.eig(a, left=left, right=right, check_finite=False)
        res = res if isinstance(res, tuple) else (res,)
        return tuple(np.asarray(r).astype(cdt) for r in res)

    n_out = 1 + int(left) + int(right)
    if x.shape[-1] == 0 or 0 in x.shape[:-2]:
        return [np.zeros(x.shape[:-1], cdt)] + [np.zeros(x.shape, cdt)] * (n_out - 1)
    if x.ndim == 2:
        return list(_nan_on_failure(one, n_out)(x))
    return _each_matrix(_nan_on_failure(one, n_out), x, n_out)


def _eig_vec_jvp(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """Nondegenerate perturbation theory (Giles, NA-08-01, 3.1) under geev's normalisation:
    dv_j = u_j + c_j v_j, c_j fixing unit norm and a real largest component (as JAX)."""
    eye = _eye_like(v)
    diffs = ew.sub(_row_vec(w, v), _col_vec(w, v))
    f_mat = ew.sub(ew.integer_pow(ew.add(eye, diffs), -1), eye)
    p = _mm(solve(v, da), v)
    dw = _diag_part(p)
    u = _mm(v, ew.mul(f_mat, p))
    nd = get_aval(v).ndim
    k = reductions.argmax(ew.abs(v), nd - 2, np.int32)
    rows = shape_ops.broadcasted_iota(np.int32, get_aval(v).shape, nd - 2)
    mask = _to(ew.eq(rows, _row_vec(k, v)), get_aval(v).dtype)
    re = ew.neg(ew.real(reductions.reduce_sum(ew.mul(ew.conj(v), u), (nd - 2,))))
    im = ew.neg(ew.div(ew.imag(reductions.reduce_sum(ew.mul(mask, u), (nd - 2,))),
                       ew.real(reductions.reduce_sum(ew.mul(mask, v), (nd - 2,)))))
    c = ew.complex_(re, im)
    return dw, ew.add(u, ew.mul(v, _row_vec(c, v)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
    (a,), (da,) = primals, tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "lax.linalg.eig: derivatives of non-symmetric eigenvectors are only valid under "
            "assumptions on the input that cannot be checked (distinct eigenvalues, a unique "
            "largest component). Pass enable_eigvec_derivs=True to opt in (as in JAX), or "
            "differentiate the eigenvalues only.")
    # The rule's own eigenvectors may be differentiated (higher orders of the eigenvalues
    # need them, under the same distinct-eigenvalue assumption).
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True, enable_eigvec_derivs=True)
    w, vr = outs[0], outs[-1]
    da = _to(ad.instantiate_zeros(da), get_aval(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        return [w], [_diag_part(_mm(solve(vr, da), vr))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    primals_out, tangents_out = [w], [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(ew.conj(w), outs[1], _H(da))
        primals_out.append(outs[1])
        tangents_out.append(dvl)
    if compute_right_eigenvectors:
        primals_out.append(vr)
        tangents_out.append(dvr)
    return primals_out, tangents_out


core.abstract_eval_rules[eig_p] = _eig_abstract_eval
core.impl_rules[eig_p] = _eig_impl
ad.jvp_rules[eig_p] = _eig_jvp
batching.batch_rules[eig_p] = _unary_batch(eig_p)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: EigImplementation | None = None,
        use_magma: bool | None = None) -> list[Any]:
    """Eigendecomposition of general square matrices (..., n, n) (LAPACK geev).

    Args:
      x: float or complex matrices.
      compute_left_eigenvectors: also return vl, with vl[:, i]ᴴ x = w[i] vl[:, i]ᴴ.
      compute_right_eigenvectors: also return vr, with x vr[:, i] = w[i] vr[:, i].
      enable_eigvec_derivs: allow derivatives of the eigenvectors (valid for distinct
        eigenvalues under geev's normalisation: unit norm, real largest component).
      implementation, use_magma: GPU options in JAX; accepted, no effect (LAPACK runs).

    Returns:
      [w, vl, vr] (vl, vr only when asked for), complex, in LAPACK's order (JAX's on CPU);
      NaNs where LAPACK fails to converge.

    >>> import numpy as np
    >>> eig(np.diag([1., 2.]), compute_left_eigenvectors=False)[0]
    Array([1.+0.j, 2.+0.j], dtype=complex128)
    """
    if use_magma is not None:
        warnings.warn("lax.linalg.eig: use_magma is deprecated (as in JAX); pass implementation "
                      "instead.", DeprecationWarning, stacklevel=2)
    if implementation is not None and not isinstance(implementation, EigImplementation):
        raise NumbaxTypeError(
            f"lax.linalg.eig: implementation has {implementation!r}, expected None or an "
            "EigImplementation.")
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs)))


# ----------------------------------------------------------------------------- schur

schur_p = Primitive("schur", multiple_results=True)


def _schur_abstract_eval(x: ShapedArray, *, compute_schur_vectors: bool, sort_eig_vals: bool,
                         select_callable: Any) -> list[ShapedArray]:
    _check_matrix("schur", x)
    if sort_eig_vals and select_callable is None:
        raise NotImplementedError(
            "lax.linalg.schur: sort_eig_vals=True needs select_callable (as scipy's sort=: a "
            "callable or 'lhp', 'rhp', 'iuc', 'ouc'); JAX does not sort at all.")
    return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


def _schur_impl(x: np.ndarray, *, compute_schur_vectors: bool, sort_eig_vals: bool,
                select_callable: Any) -> list[np.ndarray]:
    """LAPACK gees through scipy: the real Schur form (2x2 blocks) for real x."""
    output = "complex" if kind_of(x.dtype) == "c" else "real"
    sort = select_callable if sort_eig_vals else None

    def one(a: np.ndarray):
        t, z, *_ = scipy.linalg.schur(a, output=output, sort=sort, check_finite=False)
        return t.astype(x.dtype), z.astype(x.dtype)

    if x.shape[-1] == 0 or 0 in x.shape[:-2]:
        outs = [x.copy(), x.copy()]
    elif x.ndim == 2:
        outs = list(_nan_on_failure(one, 2)(x))
    else:
        outs = _each_matrix(_nan_on_failure(one, 2), x, 2)
    return outs if compute_schur_vectors else outs[:1]


core.abstract_eval_rules[schur_p] = _schur_abstract_eval
core.impl_rules[schur_p] = _schur_impl
ad.jvp_rules[schur_p] = _no_jvp("schur")
batching.batch_rules[schur_p] = _unary_batch(schur_p)


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> Any:
    """Schur decomposition x = Q T Qᴴ of square matrices (..., n, n) (LAPACK gees).

    Args:
      x: float or complex matrices; real x gives the real Schur form (1x1 and 2x2 blocks).
      compute_schur_vectors: also return Q.
      sort_eig_vals, select_callable: with both, eigenvalues selected by the callable (as
        scipy.linalg.schur's sort=) come first. Unlike JAX, which raises for
        sort_eig_vals=True.

    Returns:
      (T, Q) if compute_schur_vectors else T.

    >>> import numpy as np
    >>> schur(np.array([[1., 2.], [0., 3.]]))[0]
    Array([[1., 2.],
           [0., 3.]], dtype=float64)
    """
    outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
    return tuple(outs) if compute_schur_vectors else outs[0]

