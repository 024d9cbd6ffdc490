"""linalg_qr.py: qr (complex, pivoting), geqrf, householder_product, ormqr, hessenberg and
tridiagonal vs numpy/scipy's LAPACK calls; derivatives where JAX has them, errors where not."""
import numpy as np
import pytest
import scipy.linalg

import numbax
from numbax._src.compiler.cpu.runtime import blas
from numbax._src.lax.linalg_qr import geqrf
from numbax.errors import NumbaxValueError
from numbax.lax import linalg as ll
from numbax.test_util import check_grads

RNG = np.random.default_rng(12)


def cnormal(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_complex_matches_numpy(shape, full):
    a = cnormal(*shape)
    q, r = (np.asarray(o) for o in ll.qr(a, full_matrices=full))
    q_np, r_np = np.linalg.qr(a, mode="complete" if full else "reduced")
    np.testing.assert_allclose(q, q_np, atol=1e-12)
    np.testing.assert_allclose(r, r_np, atol=1e-12)


@pytest.mark.parametrize("shape", [(130, 70), (70, 130), (96, 96), (1, 9), (9, 1)])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_qr_of_one_matrix_through_lapack_matches_numpy(shape, full, dtype):
    """One matrix goes through geqrf and orgqr with LAPACK's optimal workspace (blocked: the
    same reflectors, so numpy's signs): q, r as numpy's, q orthonormal, r upper, and jitted
    equal to eager on one thread."""
    x = RNG.standard_normal(shape).astype(dtype)
    if np.iscomplexobj(x):
        x = x + 1j * RNG.standard_normal(shape).astype(dtype)
    tol = 2e-4 if dtype in (np.float32, np.complex64) else 1e-11
    q, r = (np.asarray(o) for o in ll.qr(x, full_matrices=full))
    q_np, r_np = np.linalg.qr(x, mode="complete" if full else "reduced")
    assert q.dtype == r.dtype == dtype and q.shape == q_np.shape and r.shape == r_np.shape
    np.testing.assert_allclose(q, q_np, atol=tol)
    np.testing.assert_allclose(r, r_np, atol=tol * np.abs(x).max())
    np.testing.assert_array_equal(r, np.triu(r))
    np.testing.assert_allclose(q.conj().T @ q, np.eye(q.shape[1]), atol=tol)
    # (bits: eager on one BLAS thread, as the jitted call below LAPACK_THREADED_MACS runs)
    one_thread = blas.blas_call(lambda x: ll.qr(x, full_matrices=full), 1, x)
    jitted = numbax.jit(lambda x: ll.qr(x, full_matrices=full))(x)
    for got, want in zip(jitted, one_thread, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_lapack_workspace_rounds_up():
    """A workspace LAPACK reports in float32 (2^24 + 1 is not one) is rounded up, never down
    (a short workspace would make LAPACK refuse the call or block less)."""
    from numbax._src.lax.linalg_blas import optimal_lwork as _lwork

    for want in (1, 640, 2 ** 24 + 1, 2 ** 27 + 3):
        assert _lwork(np.array([np.float32(want)])) >= want
        assert _lwork(np.array([np.complex64(want)])) >= want
        assert _lwork(np.array([float(want)])) <= want + 1 + want // 2 ** 19
    assert _lwork(np.array([0.0])) == 1


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_complex_derivatives(shape, full):
    # LAPACK's complex Householder QR makes diag(r) real: the gauge JAX's rule differentiates.
    # Its own seed per case: with the module's generator the matrix depended on which tests
    # ran before in the worker, and a nearly rank-deficient draw failed finite differences.
    rng = np.random.default_rng([*shape, int(full)])
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    assert np.linalg.cond(x) < 50  # a well-conditioned draw: finite differences are exact
    check_grads(lambda x: ll.qr(x, full_matrices=full), (x,), order=1)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_qr_pivoting_matches_scipy(shape):
    # Its own seed per case (the module's generator made the matrix depend on which tests ran
    # before in the worker): finite differences need a draw whose pivot order no step of
    # theirs flips, checked below, or the derivative of a discontinuous choice is compared.
    rng = np.random.default_rng([*shape, 43])
    a = rng.standard_normal((2, *shape))
    for _ in range(8):
        nudged = a[0] + 1e-3 * rng.standard_normal(shape)
        assert (scipy.linalg.qr(nudged, mode="economic", pivoting=True)[2]
                == scipy.linalg.qr(a[0], mode="economic", pivoting=True)[2]).all()
    q, r, p = (np.asarray(o) for o in ll.qr(a, pivoting=True, full_matrices=False))
    assert p.dtype == np.int32
    for i in range(2):
        q_s, r_s, p_s = scipy.linalg.qr(a[i], mode="economic", pivoting=True)
        np.testing.assert_array_equal(p[i], p_s)
        np.testing.assert_allclose(q[i], q_s, atol=1e-12)
        np.testing.assert_allclose(r[i], r_s, atol=1e-12)
        np.testing.assert_allclose(q[i] @ r[i], a[i][:, p[i]], atol=1e-12)
    check_grads(lambda x: ll.qr(x, pivoting=True, full_matrices=False)[:2], (a[0],), order=1)


def test_qr_empty_gives_identity_q():
    q, r = ll.qr(np.zeros((3, 0)))
    np.testing.assert_array_equal(np.asarray(q), np.eye(3))
    assert np.shape(r) == (3, 0)


def test_geqrf_householder_product_ormqr_match_lapack():
    for a in [RNG.standard_normal((5, 3)), cnormal(5, 3)]:
        h, taus = (np.asarray(o) for o in geqrf(a))
        (h_s, taus_s), _ = scipy.linalg.qr(a, mode="raw")
        np.testing.assert_allclose(h, h_s, atol=1e-12)
        np.testing.assert_allclose(taus, taus_s, atol=1e-12)
        q = np.asarray(ll.householder_product(h, taus))
        np.testing.assert_allclose(q, np.linalg.qr(a)[0], atol=1e-12)
        q_full = np.linalg.qr(a, mode="complete")[0]
        c = cnormal(5, 2) if a.dtype.kind == "c" else RNG.standard_normal((5, 2))
        np.testing.assert_allclose(np.asarray(ll.ormqr(h, taus, c)), q_full @ c, atol=1e-12)
        np.testing.assert_allclose(np.asarray(ll.ormqr(h, taus, c, transpose=True)),
                                   q_full.conj().T @ c, atol=1e-12)
        np.testing.assert_allclose(np.asarray(ll.ormqr(h, taus, c.T, left=False)),
                                   c.T @ q_full, atol=1e-12)
        check_grads(lambda y, h=h, t=taus: ll.ormqr(h, t, y, transpose=True), (c,), order=1)
    batch = RNG.standard_normal((3, 4, 4))
    h, taus = geqrf(batch)
    out = numbax.vmap(ll.householder_product)(h, taus)
    np.testing.assert_allclose(np.abs(np.asarray(out)), np.abs(np.linalg.qr(batch)[0]),
                               atol=1e-12)


def test_hessenberg_matches_scipy():
    for a in [RNG.standard_normal((5, 5)), cnormal(5, 5)]:
        h, taus = (np.asarray(o) for o in ll.hessenberg(a))
        assert taus.shape == (4,)
        h_s, q_s = scipy.linalg.hessenberg(a, calc_q=True)
        np.testing.assert_allclose(np.triu(h, -1), h_s, atol=1e-12)
        q = np.asarray(ll.householder_product(h[1:, :-1], taus))
        np.testing.assert_allclose(q, q_s[1:, 1:], atol=1e-12)


@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_lapack(lower):
    for a in [RNG.standard_normal((5, 5)), cnormal(5, 5)]:
        herm = a + a.conj().T
        arr, d, e, taus = (np.asarray(o) for o in ll.tridiagonal(herm, lower=lower))
        assert d.dtype == e.dtype == np.float64 and taus.dtype == a.dtype
        t = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
        np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(herm), atol=1e-12)
        fn = "hetrd" if a.dtype.kind == "c" else "sytrd"
        c, d_l, e_l, tau_l, _ = scipy.linalg.get_lapack_funcs(fn, (herm,))(herm,
                                                                           lower=int(lower))
        np.testing.assert_allclose(arr, c, atol=1e-12)
        np.testing.assert_allclose(taus, tau_l, atol=1e-12)


def test_no_derivative_where_jax_has_none():
    a = RNG.standard_normal((3, 3))
    for fn in [lambda x: ll.hessenberg(x)[0], lambda x: ll.tridiagonal(x)[1],
               lambda x: geqrf(x)[0], lambda x: ll.householder_product(x, np.ones(2))]:
        with pytest.raises(NotImplementedError, match="Differentiation rule"):
            numbax.jvp(fn, (a,), (a,))


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"householder_product: a has shape \(2, 3\)"):
        ll.householder_product(np.ones((2, 3)), np.ones(2))
    with pytest.raises(NumbaxValueError, match=r"ormqr: .*c \(3, 2\)"):
        ll.ormqr(np.ones((4, 2)), np.ones(2), np.ones((3, 2)))
    with pytest.raises(NumbaxValueError, match=r"hessenberg: a has shape \(2, 3\)"):
        ll.hessenberg(np.ones((2, 3)))
    with pytest.raises(NumbaxValueError, match=r"tridiagonal: a has shape \(0, 0\)"):
        ll.tridiagonal(np.ones((0, 0)))


@pytest.mark.parametrize("shape", [(90, 40), (40, 90), (64, 64), (3, 9, 5), (0, 4)])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_jitted_qr_whose_q_is_unread_runs_geqrf_alone(shape, full, dtype):
    """Under jit on the CPU, a qr whose Q nothing reads becomes qr_r (geqrf without orgqr):
    its R is eager qr's R, bit for bit on one BLAS thread; a program that reads Q keeps qr."""
    x = RNG.standard_normal(shape).astype(dtype)
    r_only = numbax.jit(lambda x: ll.qr(x, full_matrices=full)[1])
    text = r_only.lower(x).compile().as_text()
    assert "qr_r[" in text and " qr[" not in text
    want = blas.blas_call(lambda x: ll.qr(x, full_matrices=full)[1], 1, x)
    np.testing.assert_array_equal(np.asarray(r_only(x)), np.asarray(want))
    both = numbax.jit(lambda x: ll.qr(x, full_matrices=full)[0].sum() + ll.qr(
        x, full_matrices=full)[1])
    assert "qr_r[" not in both.lower(x).compile().as_text()
    q, r = (np.asarray(o) for o in ll.qr(x, full_matrices=full))
    np.testing.assert_allclose(np.asarray(both(x)), q.sum() + r, rtol=1e-5, atol=1e-5)
