"""lax.linalg primitives: vs numpy/scipy, jvp/vjp vs finite differences, transposition, vmap."""
import numpy as np
import pytest
import scipy.linalg

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.lax import linalg as ll
from tests.lax._checks import check_ad

RNG = np.random.default_rng(1)


def spd(shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def well(shape, dtype=np.float64):
    return (RNG.standard_normal(shape) + 2 * shape[-1] * np.eye(shape[-1])).astype(dtype)


def sym_dir(n):
    v = RNG.standard_normal((n, n))
    return v + v.T


SHAPES = [(1, 1), (3, 3), (5, 5), (2, 4, 4), (2, 3, 3, 3)]
TOL = {np.float32: 2e-4, np.float64: 1e-10}


# ----------------------------------------------------------------------------- forward values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky_matches_numpy(shape, dtype):
    a = spd(shape, dtype)
    out = np.asarray(ll.cholesky(a))
    assert out.dtype == dtype
    np.testing.assert_allclose(out, np.linalg.cholesky(a), rtol=TOL[dtype], atol=TOL[dtype])


def test_cholesky_not_positive_definite_gives_nan():
    a = np.stack([spd((3, 3)), -np.eye(3)])
    out = np.asarray(lax.linalg.cholesky(a))
    np.testing.assert_allclose(out[0], np.linalg.cholesky(a[0]))
    assert np.isnan(out[1]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_eigh_matches_numpy(shape, dtype):
    a = spd(shape, dtype)
    v, w = ll.eigh(a)
    assert np.asarray(v).dtype == dtype and np.asarray(w).dtype == dtype
    w_np = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(np.asarray(w), w_np, rtol=TOL[dtype] * 10)
    recon = np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2))
    np.testing.assert_allclose(recon, a, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 100)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 2), (2, 2, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_matches_numpy(shape, dtype, full):
    a = RNG.standard_normal(shape).astype(dtype)
    u, s, vt = ll.svd(a, full_matrices=full)
    u_np, s_np, vt_np = np.linalg.svd(a, full_matrices=full)
    assert np.shape(u) == u_np.shape and np.shape(vt) == vt_np.shape
    np.testing.assert_allclose(np.asarray(s), s_np, rtol=TOL[dtype] * 10, atol=TOL[dtype])
    k = min(shape[-2:])
    recon = (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vt)[..., :k, :]
    np.testing.assert_allclose(recon, a, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    s_only = ll.svd(a, compute_uv=False)
    np.testing.assert_allclose(np.asarray(s_only), s_np, rtol=TOL[dtype] * 10, atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_matches_numpy(shape, dtype, full):
    a = RNG.standard_normal(shape).astype(dtype)
    q, r = ll.qr(a, full_matrices=full)
    q_np, r_np = np.linalg.qr(a, mode="complete" if full else "reduced")
    np.testing.assert_allclose(np.asarray(q), q_np, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    np.testing.assert_allclose(np.asarray(r), r_np, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_lu_matches_scipy(shape, dtype):
    a = RNG.standard_normal(shape).astype(dtype)
    lu, piv, perm = ll.lu(a)
    assert np.asarray(piv).dtype == np.int32 and np.asarray(perm).dtype == np.int32
    for idx in np.ndindex(*shape[:-2]):
        lu_s, piv_s = scipy.linalg.lu_factor(a[idx])
        np.testing.assert_allclose(np.asarray(lu)[idx], lu_s, rtol=TOL[dtype], atol=TOL[dtype])
        np.testing.assert_array_equal(np.asarray(piv)[idx], piv_s)
        n = shape[-1]
        low = np.tril(np.asarray(lu)[idx], -1) + np.eye(n)
        np.testing.assert_allclose(a[idx][np.asarray(perm)[idx]], low @ np.triu(lu_s),
                                   rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_triangular_solve_matches_dense(left_side, lower, transpose_a, unit_diagonal, batch):
    a = well((*batch, 4, 4))
    b = RNG.standard_normal((*batch, 4, 3) if left_side else (*batch, 3, 4))
    x = np.asarray(lax.linalg.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        unit_diagonal=unit_diagonal))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t[..., np.arange(4), np.arange(4)] = 1
    op = np.swapaxes(t, -1, -2) if transpose_a else t
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, rtol=1e-10, atol=1e-10)


def _substituted(op, b, lower):
    """op x = b by substitution in a Python loop (the independent truth for a zero pivot)."""
    x = np.zeros_like(b)
    with np.errstate(all="ignore"):
        for i in (range(len(op)) if lower else range(len(op) - 1, -1, -1)):
            done = slice(0, i) if lower else slice(i + 1, len(op))
            x[i] = (b[i] - op[i, done] @ x[done]) / op[i, i]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_triangular_solve_reads_any_layout_and_one_triangle(dtype, layout):
    """One 2D real matrix goes to BLAS's trsm on its own memory, whichever way it is laid out
    (linalg_blas.py): every flag gives the dense solve's numbers, eager and jitted, the other
    triangle (and a unit diagonal) never read, the result C-contiguous."""
    full = well((9, 9))
    a = {"C": full, "F": np.asfortranarray(full), "strided": np.tile(full, (1, 2))[:, ::2]}[
        layout].astype(dtype)
    for left_side, lower, transpose_a, unit in np.ndindex(2, 2, 2, 2):
        kw = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                  unit_diagonal=bool(unit))
        b = RNG.standard_normal((9, 4) if left_side else (4, 9)).astype(dtype)
        t = np.tril(a) if lower else np.triu(a)
        if unit:
            np.fill_diagonal(t, 1)
        op = t.T if transpose_a else t
        want = np.linalg.solve(op.astype(np.float64), b) if left_side \
            else np.linalg.solve(op.T.astype(np.float64), b.T).T
        for x in (lax.linalg.triangular_solve(a, b, **kw),
                  numbax.jit(lambda a, b, kw=kw: lax.linalg.triangular_solve(a, b, **kw))(a, b)):
            x = np.asarray(x)
            assert x.dtype == dtype and x.flags.c_contiguous
            np.testing.assert_allclose(x, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_triangular_solve_of_a_stack_of_small_matrices(dtype):
    """Many small systems substitute row by row over the whole stack (linalg_blas.py): every
    flag gives numpy's batched dense solve, eager and jitted, the other triangle never read,
    and a zero pivot in one system leaves the others' solutions as they are."""
    a = well((12, 4, 4), dtype)
    for left_side, lower, transpose_a, unit in np.ndindex(2, 2, 2, 2):
        kw = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                  unit_diagonal=bool(unit))
        b = RNG.standard_normal((12, 4, 3) if left_side else (12, 3, 4)).astype(dtype)
        t = np.tril(a) if lower else np.triu(a)
        if unit:
            t[:, np.arange(4), np.arange(4)] = 1
        op = np.swapaxes(t, -1, -2) if transpose_a else t
        want = np.linalg.solve(op.astype(np.float64), b) if left_side else np.swapaxes(
            np.linalg.solve(np.swapaxes(op, -1, -2).astype(np.float64),
                            np.swapaxes(b, -1, -2)), -1, -2)
        for x in (lax.linalg.triangular_solve(a, b, **kw),
                  numbax.jit(lambda a, b, kw=kw: lax.linalg.triangular_solve(a, b, **kw))(a, b)):
            x = np.asarray(x)
            assert x.dtype == dtype and x.flags.c_contiguous
            np.testing.assert_allclose(x, want, rtol=TOL[dtype], atol=TOL[dtype])
    low = np.tril(well((10, 3, 3)))
    low[4, 1, 1] = 0.0
    rhs = RNG.standard_normal((10, 3, 2))
    got = np.asarray(lax.linalg.triangular_solve(low, rhs, left_side=True, lower=True))
    for i in range(10):
        want = _substituted(low[i], rhs[i], lower=True)
        np.testing.assert_array_equal(np.isfinite(got[i]), np.isfinite(want))
        np.testing.assert_allclose(got[i][np.isfinite(want)], want[np.isfinite(want)])
    assert not np.isfinite(got[4, 1:]).any()


def test_triangular_solve_zero_pivot_gives_infinities_as_substitution():
    """An exactly zero pivot divides by zero, as JAX's solve does (trtrs would refuse)."""
    a = np.tril(well((4, 4)))
    a[1, 1] = 0.0
    b = RNG.standard_normal((4, 2))
    got = np.asarray(lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
    want = _substituted(a, b, lower=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert np.isinf(got[1]).all() and not np.isfinite(got[2:]).any()
    np.testing.assert_allclose(got[0], want[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_of_one_matrix_reads_its_lower_triangle(dtype):
    """potrf on the row-major matrix's own memory (its column-major view's upper triangle):
    whatever the upper triangle holds, the factor is numpy's of the symmetric matrix."""
    s = spd((7, 7), dtype)
    junk = np.tril(s) + np.triu(np.full((7, 7), 1e3, dtype), 1)
    for a in (junk, np.asfortranarray(junk)):
        lower_only = lambda a: ll.cholesky(a, symmetrize_input=False)  # noqa: E731
        for out in (lower_only(a), numbax.jit(lower_only)(a)):
            out = np.asarray(out)
            assert out.dtype == dtype and out.flags.c_contiguous
            np.testing.assert_allclose(out, np.linalg.cholesky(s), rtol=TOL[dtype],
                                       atol=TOL[dtype])
    assert np.isnan(np.asarray(numbax.jit(ll.cholesky)(-s))).all()


# ----------------------------------------------------------------------------- derivatives


def test_cholesky_jvp_vjp():
    a = spd((4, 4))
    sym = lambda x: ll.cholesky(x)  # noqa: E731  (symmetrizes: any direction is fine)
    check_ad(sym, a)


def test_triangular_solve_ad_in_a_and_b():
    a = well((4, 4))
    b = RNG.standard_normal((4, 2))
    for kw in [dict(left_side=True, lower=True), dict(left_side=False, lower=False),
               dict(left_side=True, lower=False, transpose_a=True, unit_diagonal=True)]:
        rhs = b if kw["left_side"] else b.T
        check_ad(lambda x, kw=kw, rhs=rhs: lax.linalg.triangular_solve(x, rhs, **kw), a)
        check_ad(lambda y, kw=kw: lax.linalg.triangular_solve(a, y, **kw), rhs)


def test_triangular_solve_transpose_is_adjoint():
    a = well((2, 4, 4))
    b = RNG.standard_normal((2, 4, 3))
    u = RNG.standard_normal((2, 4, 3))
    f = lambda y: lax.linalg.triangular_solve(a, y, left_side=True, lower=True)  # noqa: E731
    y, pull = numbax.vjp(f, b)
    (g,) = pull(u)
    np.testing.assert_allclose(np.sum(np.asarray(g) * b), np.sum(u * np.asarray(y)), rtol=1e-12)
    # the cotangent is op(a)^-T u
    expected = np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), u)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-10)


def test_lu_jvp_vjp():
    a = well((4, 4))
    check_ad(lambda x: lax.linalg.lu(x)[0], a)


def test_qr_jvp_vjp():
    for shape in [(4, 4), (5, 3)]:
        a = RNG.standard_normal(shape)
        check_ad(lambda x: lax.linalg.qr(x, full_matrices=False)[0], a)
        check_ad(lambda x: lax.linalg.qr(x, full_matrices=False)[1], a)


def test_qr_jvp_wide_and_full():
    # JAX 0.10 differentiates wide matrices and full_matrices=True on tall ones too.
    for shape, full in [((3, 5), False), ((3, 5), True), ((5, 3), True)]:
        a = RNG.standard_normal(shape)
        check_ad(lambda x, full=full: lax.linalg.qr(x, full_matrices=full)[0], a)
        check_ad(lambda x, full=full: lax.linalg.qr(x, full_matrices=full)[1], a)


def _sign_fixed(v):
    """Eigen/singular vectors are defined up to sign: make each column's largest entry > 0."""
    idx = numbax.numpy.argmax(numbax.numpy.abs(v), axis=-2)
    pick = numbax.numpy.take_along_axis(v, idx[..., None, :], axis=-2)
    return v * numbax.numpy.sign(pick)


def test_eigh_jvp_vjp():
    a = spd((4, 4))
    check_ad(lambda x: lax.linalg.eigh(x)[1], a)
    check_ad(lambda x: _sign_fixed(lax.linalg.eigh(x)[0]), a, rtol=1e-5, atol=1e-6)


def test_eigh_jvp_matches_closed_form_eigenvalues():
    a = spd((5, 5))
    da = sym_dir(5)
    _, dw = numbax.jvp(lambda x: lax.linalg.eigh(x)[1], (a,), (da,))
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(np.asarray(dw), np.einsum("ij,ik,kj->j", v, da, v), rtol=1e-10)


def test_svd_jvp_vjp():
    for shape in [(4, 4), (5, 3), (3, 5)]:
        a = RNG.standard_normal(shape)
        check_ad(lambda x: lax.linalg.svd(x, compute_uv=False), a)
        check_ad(lambda x: _sign_fixed(lax.linalg.svd(x, full_matrices=False)[0]), a,
                 rtol=1e-5, atol=1e-6)
        check_ad(lambda x: _sign_fixed(lax.linalg.svd(x, full_matrices=False)[2].T), a,
                 rtol=1e-5, atol=1e-6)


def test_svd_reconstruction_grad():
    a = RNG.standard_normal((4, 3))

    def recon(x):
        u, s, vt = lax.linalg.svd(x, full_matrices=False)
        return numbax.numpy.matmul(u * s[None, :], vt)

    check_ad(recon, a)


# ----------------------------------------------------------------------------- vmap


def _loop(f, x):
    return [f(x[i]) for i in range(x.shape[0])]


@pytest.mark.parametrize("name", ["cholesky", "eigh", "qr", "svd", "lu"])
def test_vmap_matches_loop(name):
    x = spd((3, 4, 4))
    fns = {"cholesky": lambda m: (lax.linalg.cholesky(m),),
           "eigh": lambda m: lax.linalg.eigh(m),
           "qr": lambda m: lax.linalg.qr(m),
           "svd": lambda m: lax.linalg.svd(m),
           "lu": lambda m: lax.linalg.lu(m)}
    f = fns[name]
    xt = np.moveaxis(x, 0, 2)  # the vmapped axis sits in the middle
    out = numbax.vmap(f, in_axes=2)(xt)
    expected = _loop(f, x)
    for i, o in enumerate(out):
        np.testing.assert_allclose(np.asarray(o), np.stack([np.asarray(e[i]) for e in expected]),
                                   rtol=1e-10, atol=1e-10)


def test_triangular_solve_vmap_one_side_batched():
    a = well((3, 4, 4))
    b = RNG.standard_normal((4, 2))
    f = lambda m, y: lax.linalg.triangular_solve(m, y, left_side=True, lower=True)  # noqa: E731
    out = numbax.vmap(f, in_axes=(0, None))(a, b)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(f(m, b)) for m in a]),
                               rtol=1e-12)
    bs = RNG.standard_normal((4, 3, 2))
    out = numbax.vmap(f, in_axes=(None, 1))(a[0], bs)
    np.testing.assert_allclose(np.asarray(out),
                               np.stack([np.asarray(f(a[0], bs[:, i])) for i in range(3)]),
                               rtol=1e-12)


def test_jaxpr_names_primitives():
    text = str(numbax.make_jaxpr(lambda x: lax.linalg.eigh(x))(spd((3, 3))))
    assert "eigh[lower=True]" in text


# ----------------------------------------------------------------------------- bad input


def test_non_square_named():
    with pytest.raises(NumbaxValueError, match=r"cholesky: x has shape \(3, 4\)"):
        lax.linalg.cholesky(np.ones((3, 4)))
    with pytest.raises(NumbaxValueError, match=r"eigh: x has shape \(2, 3\)"):
        lax.linalg.eigh(np.ones((2, 3)))
    with pytest.raises(NumbaxValueError, match=r"schur: x has shape \(2, 3\)"):
        lax.linalg.schur(np.ones((2, 3)))


def test_rank_and_dtype_errors():
    with pytest.raises(NumbaxValueError, match=r"qr: x has shape \(3,\)"):
        lax.linalg.qr(np.ones(3))
    with pytest.raises(NumbaxValueError, match=r"svd: x has shape \(\)"):
        lax.linalg.svd(np.ones(()))
    with pytest.raises(NumbaxTypeError, match="int64"):
        lax.linalg.svd(np.ones((2, 2), np.int64))
    with pytest.raises(NumbaxValueError, match=r"lu: x has shape \(4,\)"):
        lax.linalg.lu(np.ones(4))


def test_triangular_solve_mismatch_names_both():
    with pytest.raises(NumbaxValueError, match=r"a has shape \(3, 3\).*b has shape \(4, 2\)"):
        lax.linalg.triangular_solve(np.eye(3), np.ones((4, 2)), left_side=True)
    with pytest.raises(NumbaxValueError, match="dtype|float32"):
        lax.linalg.triangular_solve(np.eye(3), np.ones((3, 3), np.float32))


@pytest.mark.parametrize("name", ["linalg", "linalg_lu", "linalg_qr", "linalg_eig",
                                  "linalg_svd"])
def test_doctests(name):
    import doctest
    import importlib

    module = importlib.import_module(f"numbax._src.lax.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_eigh_degenerate_eigenvalues_keep_eigenvalue_tangents():
    # Repeated eigenvalues: eigenvalue derivatives stay finite and right (dA diagonal in V's
    # basis); eigenvector derivatives are undefined there (documented in _eigh_jvp).
    a = np.diag([1.0, 1.0, 3.0])
    da = np.diag([0.5, 0.2, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        _, dw = numbax.jvp(lambda x: lax.linalg.eigh(x)[1], (a,), (da,))
    np.testing.assert_allclose(np.sort(np.asarray(dw)[:2]), [0.2, 0.5])
    np.testing.assert_allclose(np.asarray(dw)[2], -1.0)
