"""numbax.numpy.linalg on complex inputs and its newer names (eig, eigvals, cross, diagonal,
tensordot, tensorinv, tensorsolve, vecdot, qr 'raw', svd hermitian...), vs numpy; complex
derivatives vs finite differences on real and imaginary parts."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(21)


def cnormal(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def hpd(n, batch=()):
    a = cnormal(*batch, n, n)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


def close(x, y, tol=1e-10):
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_solvers_and_determinants(dtype):
    tol = 2e-4 if dtype == np.complex64 else 1e-10
    a = (cnormal(2, 4, 4) + 4 * np.eye(4)).astype(dtype)
    b = cnormal(2, 4, 3, dtype=dtype)
    close(jnp.linalg.inv(a), np.linalg.inv(a), tol)
    close(jnp.linalg.solve(a, b), np.linalg.solve(a, b), tol)
    close(jnp.linalg.det(a), np.linalg.det(a), tol)
    for n in (1, 2, 3, 5):  # closed forms up to 3x3, LU beyond
        m = cnormal(n, n, dtype=dtype)
        close(jnp.linalg.det(m), np.linalg.det(m), tol)
    sign, logdet = jnp.linalg.slogdet(a)
    sign_np, logdet_np = np.linalg.slogdet(a)
    close(sign, sign_np, tol)
    close(logdet, logdet_np, tol)
    assert np.asarray(logdet).dtype == np.finfo(dtype).dtype
    close(jnp.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, 3), tol * 10)
    close(jnp.linalg.matrix_power(a, -2), np.linalg.matrix_power(a, -2), tol * 10)


def test_decompositions():
    h = hpd(4, (2,))
    close(jnp.linalg.cholesky(h), np.linalg.cholesky(h))
    close(jnp.linalg.cholesky(h, upper=True), np.linalg.cholesky(h, upper=True))
    close(jnp.linalg.eigvalsh(h), np.linalg.eigvalsh(h))
    w, v = jnp.linalg.eigh(h)
    close(np.asarray(v) @ (np.asarray(w)[..., None] * np.conj(np.swapaxes(v, -1, -2))), h)
    a = cnormal(5, 3)
    close(jnp.linalg.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False))
    close(jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False))
    for mode in ("reduced", "complete", "r"):
        want = np.linalg.qr(a, mode=mode)
        got = jnp.linalg.qr(a, mode=mode)
        for g, w_ in zip(got if mode != "r" else [got], want if mode != "r" else [want]):
            close(g, w_)
    for g, w_ in zip(jnp.linalg.qr(a, mode="raw"), np.linalg.qr(a, mode="raw")):
        close(g, w_)
    close(jnp.linalg.qr(a, mode="full")[1], np.linalg.qr(a)[1])  # JAX: 'full' is 'reduced'


def test_eig_and_eigvals():
    for a in (RNG.standard_normal((2, 4, 4)), cnormal(4, 4)):
        w, v = jnp.linalg.eig(a)
        w_np, v_np = np.linalg.eig(a)
        close(w, w_np)
        close(v, v_np)  # both are LAPACK geev: the same order and normalisation
        close(jnp.linalg.eigvals(a), np.linalg.eigvals(a))
        assert np.asarray(w).dtype == np.complex128


def test_pinv_rank_lstsq_norms_cond():
    a = cnormal(5, 3)
    close(jnp.linalg.pinv(a), np.linalg.pinv(a))
    h = hpd(4)
    close(jnp.linalg.pinv(h, hermitian=True), np.linalg.pinv(h, hermitian=True))
    low = cnormal(5, 2) @ cnormal(2, 4)
    assert int(jnp.linalg.matrix_rank(low)) == np.linalg.matrix_rank(low) == 2
    assert int(jnp.linalg.matrix_rank(low, tol=1e-8)) == 2
    b = cnormal(5, 2)
    for got, want in zip(jnp.linalg.lstsq(a, b), np.linalg.lstsq(a, b)):
        close(got, want)
    for ord in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(jnp.linalg.norm(a, ord), np.linalg.norm(a, ord))
    for ord in (None, 0, 1, 2, 3, np.inf, -np.inf):
        close(jnp.linalg.norm(a[:, 0], ord), np.linalg.norm(a[:, 0], ord))
    close(jnp.linalg.vector_norm(a, axis=0), np.linalg.vector_norm(a, axis=0))
    close(jnp.linalg.matrix_norm(a, ord="nuc"), np.linalg.matrix_norm(a, ord="nuc"))
    for p in (None, 1, 2, -2, "fro", np.inf):
        close(jnp.linalg.cond(h, p), np.linalg.cond(h, p), 1e-8)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert float(jnp.linalg.cond(sing, 1)) == np.inf  # NaN from the inverse becomes inf


def test_svd_hermitian_matches_numpy():
    h = hpd(4) - 6 * np.eye(4)  # indefinite: singular values are |eigenvalues|
    u, s, vh = jnp.linalg.svd(h, hermitian=True)
    close(s, np.linalg.svd(h, compute_uv=False, hermitian=True))
    close(np.asarray(u) @ (np.asarray(s)[:, None] * np.asarray(vh)), h)
    close(jnp.linalg.svd(h, hermitian=True, compute_uv=False), np.asarray(s))


def test_slogdet_qr_method_and_singular():
    a = RNG.standard_normal((3, 5, 5))
    sign, logdet = jnp.linalg.slogdet(a, method="qr")
    close(sign, np.linalg.slogdet(a)[0])
    close(logdet, np.linalg.slogdet(a)[1])
    with pytest.raises(NotImplementedError, match="complex"):
        jnp.linalg.slogdet(cnormal(3, 3), method="qr")
    with pytest.raises(NumbaxValueError, match="method has 'svd'"):
        jnp.linalg.slogdet(a, method="svd")
    sign, logdet = jnp.linalg.slogdet(np.zeros((4, 4), complex))
    assert complex(sign) == 0 and float(logdet) == -np.inf


def test_new_names_match_numpy():
    x, y = cnormal(2, 3), cnormal(2, 3)
    close(jnp.linalg.cross(x, y), np.linalg.cross(x, y))
    close(jnp.linalg.cross(x.T, y.T, axis=0), np.cross(x.T, y.T, axis=0))
    m = cnormal(2, 3, 4)
    close(jnp.linalg.diagonal(m, offset=1), np.linalg.diagonal(m, offset=1))
    close(jnp.linalg.trace(m, offset=-1), np.linalg.trace(m, offset=-1))
    close(jnp.linalg.vecdot(x, y), np.linalg.vecdot(x, y))
    close(jnp.linalg.vecdot(x, y, axis=0), np.linalg.vecdot(x, y, axis=0))
    t, k = cnormal(3, 4), cnormal(4, 5)
    close(jnp.linalg.tensordot(t, k, axes=1), np.linalg.tensordot(t, k, axes=1))
    r = cnormal(3, 4, 2)
    close(jnp.linalg.tensordot(m, r, axes=2), np.linalg.tensordot(m, r, axes=2))
    close(jnp.linalg.outer(x[0], y[0]), np.linalg.outer(x[0], y[0]))
    close(jnp.linalg.matrix_transpose(m), np.linalg.matrix_transpose(m))
    mid = cnormal(3, 3)
    close(jnp.linalg.multi_dot([x[0], mid, y[0]]), np.linalg.multi_dot([x[0], mid, y[0]]))
    a = (cnormal(6, 6) + 6 * np.eye(6)).reshape(6, 2, 3)
    close(jnp.linalg.tensorinv(a, ind=1), np.linalg.tensorinv(a, ind=1))
    a2 = (cnormal(6, 6) + 6 * np.eye(6)).reshape(2, 3, 2, 3)
    bb = cnormal(2, 3)
    close(jnp.linalg.tensorsolve(a2, bb), np.linalg.tensorsolve(a2, bb))
    a3 = np.moveaxis(a2, 3, 2)  # axes=(2,) moves it back to the end
    close(jnp.linalg.tensorsolve(a3, bb, axes=(2,)), np.linalg.tensorsolve(a3, bb, axes=(2,)))


# ----------------------------------------------------------------------------- derivatives


def test_complex_derivatives():
    a = cnormal(4, 4) + 4 * np.eye(4)
    b = cnormal(4, 2)
    check_grads(lambda m: jnp.linalg.det(m)[None], (a,), order=2)
    check_grads(lambda m: jnp.linalg.det(m[:3, :3])[None], (a,), order=2)
    check_grads(lambda m: jnp.linalg.slogdet(m)[1], (a,), order=1)
    check_grads(lambda m: jnp.linalg.slogdet(m)[0][None], (a,), order=1)
    check_grads(jnp.linalg.inv, (a,), order=2)
    check_grads(jnp.linalg.solve, (a, b), order=1)
    check_grads(jnp.linalg.pinv, (a[:, :3],), order=1)
    check_grads(lambda m: jnp.linalg.cholesky(m @ jnp.conj(m.T)), (a,), order=1)
    check_grads(jnp.linalg.eigvalsh, (a + a.conj().T,), order=1)
    check_grads(jnp.linalg.svdvals, (a[:, :3],), order=1)
    check_grads(lambda m: jnp.linalg.norm(m, "nuc"), (a,), order=1)
    check_grads(lambda m: jnp.linalg.norm(m, 3), (a[0],), order=1)
    check_grads(lambda m: jnp.linalg.lstsq(m, b)[0], (cnormal(5, 4)[:4],), order=1)


def test_eigvals_derivative():
    basis = cnormal(4, 4) + 3 * np.eye(4)
    a = basis @ np.diag([1.0, 3.0, 6.0, 10.0]) @ np.linalg.inv(basis)
    check_grads(jnp.linalg.eigvals, (a,), order=1)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        numbax.jvp(lambda m: jnp.linalg.eig(m)[1], (a,), (a,))


@pytest.mark.parametrize("rank", [3, 2, 1])
@pytest.mark.parametrize("seed", [0, 3, 34, 38])  # 3, 34, 38: rank 2 has an exact zero pivot
def test_det_gradient_of_singular_matrix_is_adjugate(rank, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, rank)) @ rng.standard_normal((rank, 4))
    g = np.asarray(numbax.grad(jnp.linalg.det)(a))
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                     for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(g, cof, atol=1e-10)  # zero when rank < n - 1 (it was NaN)


def test_pinv_derivative_rank_deficient():
    # pinv jumps where the rank changes; along a rank-2 curve b(t) c(t) it is smooth, and the
    # jvp (Golub-Pereyra, as JAX) matches finite differences there.
    b, c = RNG.standard_normal((5, 2)), RNG.standard_normal((2, 4))
    db, dc = RNG.standard_normal((5, 2)), RNG.standard_normal((2, 4))
    _, tangent = numbax.jvp(jnp.linalg.pinv, (b @ c,), (db @ c + b @ dc,))
    eps = 1e-6
    fd = (np.linalg.pinv((b + eps * db) @ (c + eps * dc))
          - np.linalg.pinv((b - eps * db) @ (c - eps * dc))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), fd, atol=1e-6)


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs_of_new_names():
    with pytest.raises(NumbaxValueError, match="3-vectors"):
        jnp.linalg.cross(np.ones(2), np.ones(2))
    with pytest.raises(NumbaxValueError, match="at least 2"):
        jnp.linalg.diagonal(np.ones(3))
    with pytest.raises(NumbaxValueError, match="two 1-d arrays"):
        jnp.linalg.outer(np.ones((2, 2)), np.ones(2))
    with pytest.raises(NumbaxValueError, match="ind=2"):
        jnp.linalg.tensorinv(np.ones((2, 3, 4)))
    with pytest.raises(NumbaxValueError, match=r"a has shape \(2, 3\) and b has shape \(3,\)"):
        jnp.linalg.tensorsolve(np.ones((2, 3)), np.ones(3))
    with pytest.raises(NumbaxValueError, match=r"eig: a has shape \(2, 3\)"):
        jnp.linalg.eig(np.ones((2, 3)))
    with pytest.raises(NumbaxValueError, match="rtol and rcond"):
        jnp.linalg.pinv(np.eye(2), rtol=1e-3, rcond=1e-3)
    with pytest.raises(NumbaxValueError, match="rtol and tol"):
        jnp.linalg.matrix_rank(np.eye(2), rtol=1e-3, tol=1e-3)
    with pytest.raises(NumbaxValueError, match="non-empty"):
        jnp.linalg.cond(np.ones((0, 0)))
    with pytest.raises(NumbaxValueError, match="ord has 'inf'"):
        jnp.linalg.vector_norm(np.ones(3), ord="inf")
    with pytest.raises(NumbaxValueError, match=r"eigvals: a has shape \(2, 3\)"):
        jnp.linalg.eigvals(np.ones((2, 3)))
    with pytest.raises(NumbaxValueError, match="at least 2"):
        jnp.linalg.trace(np.ones(3))
    with pytest.raises(NumbaxValueError, match="at least 2"):
        jnp.linalg.matrix_transpose(np.ones(3))
    with pytest.raises(NumbaxValueError, match="svd: a has shape"):
        jnp.linalg.svdvals(np.ones(3))
    with pytest.raises(NumbaxValueError, match="ord has 'max'"):
        jnp.linalg.matrix_norm(np.eye(2), ord="max")
    with pytest.raises(NumbaxValueError, match="shapes"):
        jnp.linalg.multi_dot([np.ones((2, 3)), np.ones((2, 3))])
    with pytest.raises(NumbaxValueError, match="broadcast"):
        jnp.linalg.vecdot(np.ones(3), np.ones(4))
    with pytest.raises(NumbaxValueError, match="differ in size"):
        jnp.linalg.tensordot(np.ones((2, 3)), np.ones((2, 3)), axes=1)


def test_empty_matrices():
    z = np.zeros((0, 0))
    assert float(jnp.linalg.det(z)) == 1.0
    assert [np.shape(x) for x in jnp.linalg.eigh(np.zeros((2, 0, 0)))] == [(2, 0), (2, 0, 0)]
    assert np.shape(jnp.linalg.inv(z)) == (0, 0)
    assert np.shape(jnp.linalg.pinv(np.zeros((0, 3)))) == (3, 0)
    for ord in (1, 2, np.inf, "fro", "nuc"):  # reductions over nothing give 0, as JAX's
        assert float(jnp.linalg.norm(np.zeros((0, 3)), ord)) == 0.0
    assert float(jnp.linalg.vector_norm(np.zeros(0), ord=np.inf)) == 0.0
