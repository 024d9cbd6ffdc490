"""lax.linalg on complex and non-square inputs, the triangular family's new members
(cholesky_update, symmetric_product) and linalg_lu.py (lu, lu_pivots_to_permutation,
tridiagonal_solve): values vs numpy/scipy, derivatives vs finite differences, vmap, errors."""
import warnings

import numpy as np
import pytest
import scipy.linalg

import numbax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.lax import linalg as ll
from numbax.test_util import check_grads

RNG = np.random.default_rng(11)


def cnormal(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def hermitian(n, batch=()):
    a = cnormal(*batch, n, n)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


# ----------------------------------------------------------------------------- complex inputs


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_cholesky_complex_hermitian(dtype):
    a = hermitian(4, (2,)).astype(dtype)
    out = np.asarray(ll.cholesky(a))
    assert out.dtype == dtype
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(out, np.linalg.cholesky(a), rtol=tol, atol=tol)
    # only the lower triangle is read without symmetrization (the upper is junk here)
    junk = np.tril(a[0]) + np.triu(cnormal(4, 4), 1).astype(dtype)
    np.testing.assert_allclose(np.asarray(ll.cholesky(junk, symmetrize_input=False)),
                               np.linalg.cholesky(a[0]), rtol=tol, atol=tol)


def test_cholesky_complex_derivatives():
    a = hermitian(3)
    check_grads(ll.cholesky, (a,), order=2)
    check_grads(lambda x: ll.cholesky(x, symmetrize_input=False), (a,), order=1)


def test_triangular_solve_complex_conjugate_and_vector_b():
    a = np.tril(cnormal(4, 4)) + 4 * np.eye(4)
    b = cnormal(4, 2)
    for transpose_a, conj in [(False, True), (True, True), (True, False)]:
        x = np.asarray(ll.triangular_solve(a, b, left_side=True, lower=True,
                                           transpose_a=transpose_a, conjugate_a=conj))
        op = np.conj(a) if conj else a
        op = op.T if transpose_a else op
        np.testing.assert_allclose(op @ x, b, atol=1e-12)
        check_grads(lambda m, y, t=transpose_a, c=conj: ll.triangular_solve(
            m, y, left_side=True, lower=True, transpose_a=t, conjugate_a=c), (a, b), order=1)
    # b with one dimension fewer than a is one vector (JAX's rule)
    v = cnormal(4)
    np.testing.assert_allclose(np.asarray(ll.triangular_solve(a, v, left_side=True, lower=True)),
                               np.linalg.solve(a, v), atol=1e-12)
    # conjugate_a has no effect on real matrices
    r = np.triu(RNG.standard_normal((3, 3))) + 3 * np.eye(3)
    np.testing.assert_array_equal(np.asarray(ll.triangular_solve(r, r, conjugate_a=True)),
                                  np.asarray(ll.triangular_solve(r, r)))


# ----------------------------------------------------------------------------- lu


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 6), (2, 6, 4), (0, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_non_square_matches_scipy(shape, complex_):
    a = cnormal(*shape) if complex_ else RNG.standard_normal(shape)
    lu, piv, perm = (np.asarray(o) for o in ll.lu(a))
    m, n = shape[-2:]
    assert lu.shape == shape and piv.shape == (*shape[:-2], min(m, n))
    assert perm.shape == (*shape[:-1],) and piv.dtype == perm.dtype == np.int32
    for idx in np.ndindex(*shape[:-2]):
        if 0 in shape:
            continue
        lu_s, piv_s = scipy.linalg.lu_factor(a[idx])
        np.testing.assert_allclose(lu[idx], lu_s, atol=1e-12)
        np.testing.assert_array_equal(piv[idx], piv_s)
        k = min(m, n)
        low = np.tril(lu[idx], -1)[:, :k] + np.eye(m, k)
        np.testing.assert_allclose(a[idx][perm[idx]], low @ np.triu(lu[idx])[:k], atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 3)])
def test_lu_derivatives_non_square_and_complex(shape):
    check_grads(lambda x: ll.lu(x)[0], (RNG.standard_normal(shape),), order=2)
    check_grads(lambda x: ll.lu(x)[0], (cnormal(*shape),), order=1)


def test_lu_pivots_to_permutation_matches_loop():
    piv = np.array([[2, 2, 3], [0, 4, 2]], np.int32)
    out = np.asarray(ll.lu_pivots_to_permutation(piv, 5))
    for row, p in zip(out, piv):
        perm = list(range(5))
        for i, j in enumerate(p):
            perm[i], perm[j] = perm[j], perm[i]
        np.testing.assert_array_equal(row, perm)
    lu, pivots, perm = ll.lu(RNG.standard_normal((4, 4)))
    np.testing.assert_array_equal(np.asarray(ll.lu_pivots_to_permutation(pivots, 4)),
                                  np.asarray(perm))
    vm = numbax.vmap(lambda p: ll.lu_pivots_to_permutation(p, 5))(piv)
    np.testing.assert_array_equal(np.asarray(vm), out)
    with pytest.raises(NumbaxValueError, match="permutation_size has 2"):
        ll.lu_pivots_to_permutation(piv, 2)
    with pytest.raises(NumbaxTypeError, match="int32"):
        ll.lu_pivots_to_permutation(piv.astype(np.int64), 5)


# ----------------------------------------------------------------------------- tridiagonal_solve


def _dense(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


@pytest.mark.parametrize("complex_", [False, True])
def test_tridiagonal_solve_matches_dense(complex_):
    gen = cnormal if complex_ else (lambda *s: RNG.standard_normal(s))
    dl, d, du, b = gen(3, 6), gen(3, 6) + 4, gen(3, 6), gen(3, 6, 2)
    x = np.asarray(ll.tridiagonal_solve(dl, d, du, b))
    for i in range(3):
        np.testing.assert_allclose(x[i], np.linalg.solve(_dense(dl[i], d[i], du[i]), b[i]),
                                   atol=1e-10)
    check_grads(ll.tridiagonal_solve, (dl[0], d[0], du[0], b[0]), order=2)


def test_tridiagonal_solve_singular_and_perturbed():
    dl, d, du = np.array([0., 1., 0.]), np.array([1., 1., 1.]), np.array([1., 0., 0.])
    b = np.array([[1.], [2.], [1.]])  # rows 0 and 1 of A are equal: singular
    assert np.isnan(np.asarray(ll.tridiagonal_solve(dl, d, du, b))).all()
    x = np.asarray(ll.tridiagonal_solve(dl, d, du, b, perturb_singular=True))
    assert np.isfinite(x).all() and np.abs(x).max() > 1e10  # a near-null vector, scaled up


def test_tridiagonal_solve_transpose_and_vmap():
    dl, d, du = RNG.standard_normal(5), RNG.standard_normal(5) + 3, RNG.standard_normal(5)
    b, u = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 2))
    y, pull = numbax.vjp(lambda v: ll.tridiagonal_solve(dl, d, du, v), b)
    (g,) = pull(u)
    np.testing.assert_allclose(np.asarray(g), np.linalg.solve(_dense(dl, d, du).T, u),
                               atol=1e-12)
    bs = RNG.standard_normal((3, 5, 2))
    out = numbax.vmap(lambda v: ll.tridiagonal_solve(dl, d, du, v))(bs)
    np.testing.assert_allclose(np.asarray(out), [np.linalg.solve(_dense(dl, d, du), v)
                                                 for v in bs], atol=1e-12)
    with pytest.raises(NumbaxValueError, match=r"b has shape \(4, 2\)"):
        ll.tridiagonal_solve(dl, d, du, np.ones((4, 2)))
    with pytest.raises(NumbaxTypeError, match="dl has dtype int64"):
        ll.tridiagonal_solve(np.ones(5, np.int64), d, du, b)


# ----------------------------------------------------------------------------- update, product


def test_cholesky_update_is_factor_of_rank_one_update():
    a = RNG.standard_normal((2, 4, 4))
    r = np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)).swapaxes(-1, -2)
    w = RNG.standard_normal((2, 4))
    out = np.asarray(ll.cholesky_update(r, w))
    for i in range(2):
        want = np.linalg.cholesky(r[i].T @ r[i] + np.outer(w[i], w[i])).T
        np.testing.assert_allclose(out[i], want, atol=1e-12)
    check_grads(ll.cholesky_update, (r[0], w[0]), order=1)
    with pytest.raises(NumbaxValueError, match=r"w_vector has shape \(3,\)"):
        ll.cholesky_update(r[0], np.ones(3))
    with pytest.raises(NumbaxTypeError, match="complex128"):
        ll.cholesky_update(r[0].astype(complex), w[0].astype(complex))


def test_symmetric_product():
    a, c = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 3, 3))
    out = np.asarray(ll.symmetric_product(a, c, alpha=0.5, beta=2.0))
    np.testing.assert_allclose(out, 0.5 * a @ np.swapaxes(a, -1, -2) + 2 * c, atol=1e-12)
    sym = np.asarray(ll.symmetric_product(a, c, symmetrize_output=True))
    low = np.tril(a @ np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(sym, low + np.swapaxes(np.tril(low, -1), -1, -2), atol=1e-12)
    check_grads(lambda x, y: ll.symmetric_product(x, y, alpha=2.0, beta=3.0), (a[0], c[0]),
                order=2)
    with pytest.raises(NumbaxValueError, match=r"c_matrix has shape \(5, 5\)"):
        ll.symmetric_product(a[0], np.eye(5))


@pytest.mark.parametrize("jit", [False, True])
def test_pivoting_moves_rows_exactly_and_as_a_gather(jit):
    """With a permutation matrix a (L = U = I, the pivots alone), a x = b and aᵀ x = b move b's
    rows, exactly (truth: the rows indexed in numpy); the permutation is applied as a gather,
    as JAX applies it, not as a product with an n x n matrix (n^2 k multiply-adds; a whole
    n^3 product more in an inverse)."""
    order = [2, 0, 3, 1]
    a = np.eye(4)[order]  # a[i, order[i]] = 1: (a x)[i] = x[order[i]]
    b = np.arange(8.0).reshape(4, 2) - 2.5
    solve_a = np.empty_like(b)
    solve_a[order] = b  # a x = b: x[order[i]] = b[i]
    solve_at = b[order]  # aᵀ x = b: x = a b
    wrap = numbax.jit if jit else (lambda f: f)
    lu_piv = numbax.scipy.linalg.lu_factor(a)
    calls = {
        "solve": (lambda b: numbax.numpy.linalg.solve(a, b), solve_a),
        "lu_solve": (lambda b: numbax.scipy.linalg.lu_solve(lu_piv, b), solve_a),
        "lu_solve trans": (lambda b: numbax.scipy.linalg.lu_solve(lu_piv, b, trans=1), solve_at),
        "inv": (lambda b: numbax.numpy.linalg.inv(a) @ b, solve_a),
    }
    for name, (call, expect) in calls.items():
        np.testing.assert_array_equal(np.asarray(wrap(call)(b)), expect, err_msg=name)
        if name != "inv":
            jaxpr = str(numbax.make_jaxpr(call)(b))
            assert "dot_general" not in jaxpr, (name, jaxpr)


@pytest.mark.parametrize("shape", [(300, 3, 3), (40, 5, 5), (30, 4, 7), (30, 7, 4),
                                   (3, 5, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stacks_of_small_matrices_factor_as_lapack_does_one_by_one(shape, dtype):
    """A stack of small real matrices factors all at once (`_lu_stacked`): the same pivots
    and permutations as scipy's getrf on each matrix, the factors to rounding; singular and
    NaN matrices among them as LAPACK leaves them. Then a jitted batched solve against
    numpy's."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1, *shape[-2:])
    flat[0] = 0.0  # all-zero: every pivot zero
    flat[1, :, 0] = 0.0  # a zero first column
    flat[2, -1, -1] = np.nan  # NaN in the last row
    lu, piv, perm = ll.lu(x)
    assert lu.shape == shape and piv.shape == (*shape[:-2], min(shape[-2:]))
    tol = 1e-13 if dtype == np.float64 else 1e-5
    for i, matrix in enumerate(flat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the singular ones
            lu_s, piv_s = scipy.linalg.lu_factor(matrix, check_finite=False)
        idx = np.unravel_index(i, shape[:-2])
        np.testing.assert_array_equal(np.asarray(piv)[idx], piv_s)
        np.testing.assert_allclose(np.asarray(lu)[idx], lu_s, rtol=tol * 100, atol=tol)
        order = np.arange(shape[-2])
        for k, p in enumerate(piv_s):
            order[[k, p]] = order[[p, k]]
        np.testing.assert_array_equal(np.asarray(perm)[idx], order)
    if shape[-1] == shape[-2]:
        a = rng.standard_normal(shape).astype(dtype) + 3 * np.eye(shape[-1], dtype=dtype)
        b = rng.standard_normal(shape[:-1]).astype(dtype)
        got = numbax.jit(lambda a, b: numbax.numpy.linalg.solve(a, b[..., None])[..., 0])(a, b)
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(a, b[..., None])[..., 0],
                                   rtol=tol * 1000, atol=tol * 100)
