"""linalg_eig.py: eigh (complex, subsets), eig (left/right vectors, derivatives) and schur vs
numpy/scipy's LAPACK calls, derivatives vs finite differences, errors."""
import numpy as np
import pytest
import scipy.linalg

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.lax import linalg as ll
from numbax.test_util import check_grads

RNG = np.random.default_rng(13)


def cnormal(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def hermitian(n):
    a = cnormal(n, n)
    return a + a.conj().T


def separated(n, complex_=False):
    """A dense matrix with eigenvalues 1, 3, 6, ... (far apart: smooth eigenvectors)."""
    basis = (cnormal(n, n) if complex_ else RNG.standard_normal((n, n))) + 3 * np.eye(n)
    return basis @ np.diag(np.cumsum(np.arange(1.0, n + 1) * 1.5)) @ np.linalg.inv(basis)


def projectors(v):
    return jnp.einsum("...ik,...jk->...kij", v, jnp.conj(v))


# ----------------------------------------------------------------------------- eigh


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_eigh_complex_matches_numpy(dtype):
    a = np.stack([hermitian(4), hermitian(4)]).astype(dtype)
    v, w = ll.eigh(a)
    assert np.asarray(w).dtype == np.finfo(dtype).dtype and np.asarray(v).dtype == dtype
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a), rtol=tol, atol=tol)
    v = np.asarray(v)
    recon = v @ (np.asarray(w)[..., None] * np.conj(np.swapaxes(v, -1, -2)))
    np.testing.assert_allclose(recon, a, atol=tol * 10)


def test_eigh_complex_derivatives_and_upper_triangle():
    a = hermitian(4)
    check_grads(lambda x: ll.eigh(x)[1], (a,), order=2)
    check_grads(lambda x: projectors(ll.eigh(x)[0]), (a,), order=1)
    junk = np.triu(a) + np.tril(cnormal(4, 4), -1)  # lower=False reads the upper triangle
    w = np.asarray(ll.eigh(junk, lower=False, symmetrize_input=False)[1])
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=1e-12)
    check_grads(lambda x: ll.eigh(x, lower=False, symmetrize_input=False)[1], (junk,), order=1)


def test_eigh_subset_sort_and_implementation():
    a = hermitian(5)
    v, w = ll.eigh(a, subset_by_index=(1, 3), sort_eigenvalues=False)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a)[1:3], atol=1e-12)
    assert np.shape(v) == (5, 2)
    check_grads(lambda x: ll.eigh(x, subset_by_index=(3, 5))[1], (a,), order=1)
    ll.eigh(a, implementation=ll.EighImplementation.QR)
    with pytest.raises(NotImplementedError, match="QDWH"):
        ll.eigh(a, implementation=ll.EighImplementation.QDWH)
    with pytest.raises(NumbaxValueError, match=r"subset_by_index has \(3, 9\)"):
        ll.eigh(a, subset_by_index=(3, 9))
    with pytest.raises(NumbaxTypeError, match="implementation has 'qr'"):
        ll.eigh(a, implementation="qr")


# ----------------------------------------------------------------------------- eig


@pytest.mark.parametrize("complex_", [False, True])
def test_eig_matches_scipy_geev(complex_):
    a = cnormal(4, 4) if complex_ else RNG.standard_normal((4, 4))
    w, vl, vr = (np.asarray(o) for o in ll.eig(a))
    w_s, vl_s, vr_s = scipy.linalg.eig(a, left=True)
    assert w.dtype == vl.dtype == vr.dtype == np.complex128
    np.testing.assert_allclose(w, w_s, atol=1e-12)  # LAPACK's order, as JAX on CPU
    np.testing.assert_allclose(vr, vr_s, atol=1e-12)
    np.testing.assert_allclose(vl, vl_s, atol=1e-12)
    np.testing.assert_allclose(a @ vr, vr * w, atol=1e-10)
    np.testing.assert_allclose(vl.conj().T @ a, w[:, None] * vl.conj().T, atol=1e-10)
    (w_only,) = ll.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(w_only), w, atol=1e-12)


def test_eig_float32_batch_and_vmap():
    a = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    w, v = ll.eig(a, compute_left_eigenvectors=False)
    assert np.asarray(w).dtype == np.complex64
    # eigenvalues in no defined order (float32 geev and numpy's may list them differently)
    np.testing.assert_allclose(np.sort_complex(np.asarray(w)),
                               [np.sort_complex(np.linalg.eigvals(m)) for m in a], atol=1e-4)
    w2, _ = numbax.vmap(lambda m: ll.eig(m, compute_left_eigenvectors=False))(a)
    np.testing.assert_allclose(np.asarray(w2), np.asarray(w), atol=1e-6)


@pytest.mark.parametrize("complex_", [False, True])
def test_eig_derivatives(complex_):
    a = separated(4, complex_)
    check_grads(lambda x: ll.eig(x, compute_left_eigenvectors=False,
                                 compute_right_eigenvectors=False)[0], (a,), order=2)
    # eigenvectors under geev's normalisation (unit norm, real largest component), opt-in
    check_grads(lambda x: ll.eig(x, enable_eigvec_derivs=True), (a,), order=1)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        numbax.jvp(lambda x: ll.eig(x)[2], (a,), (a,))


def test_eig_eigenvalue_derivative_closed_form():
    a = separated(3)
    da = RNG.standard_normal((3, 3))
    _, dw = numbax.jvp(lambda x: ll.eig(x, compute_left_eigenvectors=False,
                                        compute_right_eigenvectors=False)[0], (a,), (da,))
    w, vl, vr = scipy.linalg.eig(a, left=True)
    want = np.einsum("ik,ij,jk->k", vl.conj(), da, vr) / np.einsum("ik,ik->k", vl.conj(), vr)
    np.testing.assert_allclose(np.asarray(dw), want, atol=1e-10)


def test_eig_errors_and_options():
    with pytest.raises(NumbaxValueError, match=r"eig: x has shape \(2, 3\)"):
        ll.eig(np.ones((2, 3)))
    with pytest.raises(NumbaxTypeError, match="implementation has"):
        ll.eig(np.eye(2), implementation="lapack")
    ll.eig(np.eye(2), implementation=ll.EigImplementation.LAPACK)
    with pytest.warns(DeprecationWarning, match="use_magma"):
        ll.eig(np.eye(2), use_magma=False)


# ----------------------------------------------------------------------------- schur


@pytest.mark.parametrize("complex_", [False, True])
def test_schur_matches_scipy_gees(complex_):
    a = cnormal(5, 5) if complex_ else RNG.standard_normal((2, 5, 5))
    t, z = (np.asarray(o) for o in ll.schur(a))
    for idx in np.ndindex(*a.shape[:-2]):
        t_s, z_s = scipy.linalg.schur(a[idx], output="complex" if complex_ else "real")
        np.testing.assert_allclose(t[idx], t_s, atol=1e-12)
        np.testing.assert_allclose(z[idx], z_s, atol=1e-12)
        np.testing.assert_allclose(z[idx] @ t[idx] @ z[idx].conj().T, a[idx], atol=1e-10)
    t_only = ll.schur(a, compute_schur_vectors=False)
    np.testing.assert_allclose(np.asarray(t_only), t, atol=1e-12)


def test_schur_sorting_and_errors():
    a = RNG.standard_normal((4, 4))
    t, z = ll.schur(a, sort_eig_vals=True, select_callable="lhp")
    t_s, z_s, _ = scipy.linalg.schur(a, sort="lhp")
    np.testing.assert_allclose(np.asarray(t), t_s, atol=1e-12)
    with pytest.raises(NotImplementedError, match="select_callable"):
        ll.schur(a, sort_eig_vals=True)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'schur'"):
        numbax.jvp(lambda x: ll.schur(x)[0], (a,), (a,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n", [1, 5, 140])
def test_eigh_of_one_matrix_through_syevd_matches_numpy(dtype, lower, n):
    """One matrix goes to LAPACK's syevd (heevd) with its optimal workspace on a column-major
    copy, reading the triangle numpy reads: only that triangle read; in double precision
    numpy's eigenvectors (the same signs and phases); in single precision (where numpy's own
    build rounds differently, and near eigenvalues' vectors mix) the eigen-equation,
    orthonormal vectors and float64 eigenvalues; jitted equal to eager on one thread."""
    from numbax._src.compiler.cpu.runtime import blas

    a = RNG.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal((n, n))
    a = a.astype(dtype)
    other = np.triu(a, 1) if lower else np.tril(a, -1)
    junk = a + 1e3 * other  # the triangle not read changes nothing
    v, w = (np.asarray(o) for o in ll.eigh(junk, lower=lower, symmetrize_input=False))
    wide = a.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    w_np, v_np = np.linalg.eigh(wide, UPLO="L" if lower else "U")
    single = dtype in (np.float32, np.complex64)
    tol = 1e-4 if single else 1e-9
    assert v.dtype == dtype and w.dtype == np.finfo(dtype).dtype
    np.testing.assert_allclose(w, w_np, atol=tol * n)
    herm = np.tril(wide) + np.tril(wide, -1).conj().T if lower else \
        np.triu(wide) + np.triu(wide, 1).conj().T
    herm[np.diag_indices(n)] = np.real(np.diag(herm))
    np.testing.assert_allclose(herm @ v, v * w, atol=tol * n)
    np.testing.assert_allclose(v.conj().T @ v, np.eye(n), atol=tol * n)
    if not single:
        np.testing.assert_allclose(v, v_np, atol=tol * n)
    one_thread = blas.blas_call(lambda m: ll.eigh(m, lower=lower, symmetrize_input=False), 1,
                                junk)
    jitted = numbax.jit(lambda m: ll.eigh(m, lower=lower, symmetrize_input=False))(junk)
    for got, want in zip(jitted, one_thread, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_eigh_of_nan_matrix_gives_nan():
    v, w = (np.asarray(o) for o in ll.eigh(np.full((6, 6), np.nan)))
    assert np.isnan(w).all() and np.isnan(v).all()
