"""numbax.scipy.linalg vs scipy.linalg: decompositions, solvers, matrix functions and special
matrices; derivatives vs finite differences; jit and vmap; bad input for every function."""
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import numbax
import numbax.numpy as jnp
import numbax.scipy.linalg as L
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(31)


def cnormal(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def close(got, want, tol=1e-10):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)


A = RNG.standard_normal((4, 4))
C = cnormal(4, 4)
HERM = C @ C.conj().T + 4 * np.eye(4)
SPD = A @ A.T + 4 * np.eye(4)


# ----------------------------------------------------------------------------- factorizations


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_cho_factor_cho_solve(lower):
    close(L.cholesky(HERM, lower=lower), sl.cholesky(HERM, lower=lower))
    factors = L.cho_factor(HERM, lower=lower, overwrite_a=True, check_finite=False)
    assert factors[1] is lower
    b = cnormal(4, 2)
    close(L.cho_solve(factors, b), sl.cho_solve(sl.cho_factor(HERM, lower=lower), b))
    close(L.cho_solve(factors, b[:, 0]), sl.cho_solve(sl.cho_factor(HERM, lower=lower), b[:, 0]))
    batch = np.stack([SPD, 2 * SPD])
    out = L.cho_solve(L.cho_factor(batch, lower=lower), b.real)  # b broadcasts over the batch
    close(out, np.stack([np.linalg.solve(m, b.real) for m in batch]))
    check_grads(lambda m, y: L.cho_solve(L.cho_factor(m, lower=lower), y), (SPD, b), order=1,
                modes=("rev",))


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_lu_family(shape):
    x = RNG.standard_normal(shape)
    close(L.lu(x), sl.lu(x))
    close(L.lu(x, permute_l=True), sl.lu(x, permute_l=True))
    close(L.lu_factor(x), sl.lu_factor(x))
    check_grads(lambda m: L.lu(m)[1:], (x,), order=1)


def test_lu_solve_trans_and_batched_vectors():
    factors = L.lu_factor(C)
    b = cnormal(4, 3)
    for trans in (0, 1, 2):
        close(L.lu_solve(factors, b, trans=trans), sl.lu_solve(sl.lu_factor(C), b, trans=trans))
    check_grads(lambda m, y: L.lu_solve(L.lu_factor(m), y, trans=1), (C, b), order=1)
    with pytest.warns(FutureWarning, match="batched 1D"):
        out = L.lu_solve(L.lu_factor(np.stack([SPD, SPD])), np.ones((2, 4)))
    close(out, np.linalg.solve(SPD, np.ones(4))[None].repeat(2, 0))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_qr_modes_and_qr_multiply(shape):
    x = cnormal(*shape)
    for mode in ("full", "economic", "r"):
        for pivoting in (False, True):
            close(L.qr(x, mode=mode, pivoting=pivoting), sl.qr(x, mode=mode, pivoting=pivoting))
    k, m = min(shape), shape[0]
    for mode, c_shape in (("left", (k, 2)), ("right", (2, m)), ("left", (k,))):
        for conjugate in (False, True):
            c = cnormal(*c_shape)
            close(L.qr_multiply(x, c, mode=mode, conjugate=conjugate),
                  sl.qr_multiply(x, c, mode=mode, conjugate=conjugate))
    close(L.qr_multiply(x, cnormal(2, m), pivoting=True)[2],
          sl.qr_multiply(x, np.ones((2, m)), pivoting=True)[2])
    check_grads(lambda c: L.qr_multiply(x, c, mode="left")[0], (cnormal(k, 2),), order=1)


def test_svd_schur_hessenberg():
    close(L.svd(C), sl.svd(C))
    close(L.svd(C, compute_uv=False, lapack_driver="gesvd"), sl.svd(C, compute_uv=False))
    close(L.schur(A), sl.schur(A))
    close(L.schur(A, output="complex"), sl.schur(A, output="complex"))
    close(L.schur(C), sl.schur(C))
    for x in (A, C):
        close(L.hessenberg(x), sl.hessenberg(x))
        close(L.hessenberg(x, calc_q=True), sl.hessenberg(x, calc_q=True))
    h, q = L.hessenberg(np.stack([A, 2 * A]), calc_q=True)
    close(h[1], sl.hessenberg(2 * A))


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_eigh_standard_and_generalized(kind):
    close(L.eigh(HERM, eigvals_only=True), sl.eigh(HERM, eigvals_only=True))
    close(L.eigh(HERM, eigvals=(1, 2), eigvals_only=True),
          sl.eigh(HERM, subset_by_index=(1, 2), eigvals_only=True))
    w, v = L.eigh(HERM, SPD, type=kind)
    w_s, v_s = sl.eigh(HERM, SPD, type=kind)
    close(w, w_s)
    close(np.abs(np.asarray(v)), np.abs(v_s), 1e-9)  # columns agree up to phase
    check_grads(lambda a, b: L.eigh(a, b, eigvals_only=True, type=kind), (HERM, SPD), order=1)


def test_eigh_tridiagonal():
    d, e = RNG.standard_normal(6), RNG.standard_normal(5)
    close(L.eigh_tridiagonal(d, e, eigvals_only=True), sl.eigh_tridiagonal(d, e,
                                                                           eigvals_only=True))
    w, v = L.eigh_tridiagonal(d, e, select="i", select_range=(2, 4))
    w_s, v_s = sl.eigh_tridiagonal(d, e, select="i", select_range=(2, 4))
    close(w, w_s)
    close(np.abs(np.asarray(v)), np.abs(v_s))
    ce = cnormal(5)  # complex off-diagonal: Hermitian with e above and conj(e) below
    t = np.diag(d) + np.diag(ce, 1) + np.diag(ce.conj(), -1)
    close(L.eigh_tridiagonal(d.astype(complex), ce, eigvals_only=True), np.linalg.eigvalsh(t))


# ----------------------------------------------------------------------------- solvers


def test_solve_assume_a_and_solve_triangular():
    b = RNG.standard_normal((4, 2))
    for assume_a in ("gen", "sym", "her", "pos"):
        close(L.solve(SPD, b, assume_a=assume_a), sl.solve(SPD, b, assume_a=assume_a))
    close(L.solve(SPD, b[:, 0], assume_a="pos", lower=True), np.linalg.solve(SPD, b[:, 0]))
    # 'pos' reads one triangle but differentiates like the general solve (JAX's rule)
    g_pos = numbax.grad(lambda m: jnp.sum(L.solve(m, b, assume_a="pos")))(SPD)
    g_gen = numbax.grad(lambda m: jnp.sum(jnp.linalg.solve(m, b)))(SPD)
    close(g_pos, np.asarray(g_gen))
    check_grads(lambda m, y: L.solve((m + m.T) / 2, y, assume_a="pos"), (SPD, b), order=1)
    tri = np.triu(C) + 3 * np.eye(4)
    cb = cnormal(4, 3)
    for trans in (0, 1, 2, "N", "T", "C"):
        close(L.solve_triangular(tri, cb, trans=trans), sl.solve_triangular(tri, cb, trans=trans))
    close(L.solve_triangular(tri.T, cb[:, 0], lower=True, unit_diagonal=True),
          sl.solve_triangular(tri.T, cb[:, 0], lower=True, unit_diagonal=True))
    check_grads(lambda m, y: L.solve_triangular(m, y, trans=2), (tri, cb), order=1)
    close(L.det(C), np.linalg.det(C))
    close(L.inv(C), np.linalg.inv(C))


@pytest.mark.parametrize("shape,side", [((5, 3), "right"), ((3, 5), "left"), ((4, 4), "right")])
def test_polar(shape, side):
    x = cnormal(*shape)
    for method in ("qdwh", "svd"):
        close(L.polar(x, side, method=method), sl.polar(x, side), 1e-9)
    with pytest.raises(NotImplementedError, match="method='svd'"):
        L.polar(x, "left" if side == "right" else "right")


# ----------------------------------------------------------------------------- matrix functions


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_expm_across_scales(scale):
    for x in (scale * A, scale * C):
        close(L.expm(x), sl.expm(x), 1e-10 * max(1.0, np.abs(sl.expm(x)).max()))


def test_expm_squarings_jitted_and_batched():
    """The squarings are a cond per step (as JAX's): jitted, a matrix of small norm takes none
    and one of large norm its own number; batched under vmap with different norms the
    predicate is batched and each matrix still gets its own count."""
    f = numbax.jit(L.expm)
    for x in (1e-3 * A, 30.0 * A, 30.0 * C):
        close(f(x), sl.expm(x), 1e-10 * max(1.0, np.abs(sl.expm(x)).max()))
    stack = np.stack([1e-3 * A, 3.0 * A, 30.0 * A])
    want = np.stack([sl.expm(m) for m in stack])
    close(f(stack), want, 1e-10 * np.abs(want).max())
    assert np.isnan(np.asarray(f(1e6 * A))).all()  # needs more than max_squarings


def test_expm_frechet_derivatives_and_jit():
    e = RNG.standard_normal((4, 4))
    close(L.expm_frechet(A, e), sl.expm_frechet(A, e))
    close(L.expm_frechet(A, e, compute_expm=False), sl.expm_frechet(A, e, compute_expm=False))
    close(L.expm(np.triu(A), upper_triangular=True), sl.expm(np.triu(A)))
    close(L.expm(np.stack([A, 2 * A])), sl.expm(np.stack([A, 2 * A])))
    check_grads(L.expm, (A,), order=2)
    check_grads(L.expm, (0.5 * C,), order=1)
    assert np.isnan(np.asarray(L.expm(1e6 * A, max_squarings=4))).all()
    close(numbax.jit(L.expm)(A), sl.expm(A))


def test_sqrtm_funm_rsf2csf():
    close(L.sqrtm(SPD), sl.sqrtm(SPD))
    close(L.sqrtm(C), sl.sqrtm(C))
    assert np.asarray(L.sqrtm(SPD)).dtype == np.complex128  # as JAX: always complex
    check_grads(L.sqrtm, (SPD,), order=1)
    check_grads(L.sqrtm, (C,), order=1)
    t, z = sl.schur(A)
    close(L.rsf2csf(t, z), sl.rsf2csf(t, z))
    close(L.funm(A, jnp.sin), sl.funm(A, np.sin), 1e-9)
    f, err = L.funm(A, jnp.exp, disp=False)
    f_s, err_s = sl.funm(A, np.exp, disp=False)
    close(f, f_s, 1e-9)
    assert float(err) == pytest.approx(err_s, rel=1e-6)
    with pytest.raises(NotImplementedError, match="blocksize"):
        L.sqrtm(SPD, blocksize=2)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(method):
    b, c = RNG.standard_normal((3, 3)) + 3 * np.eye(3), RNG.standard_normal((4, 3))
    close(L.solve_sylvester(A + 3 * np.eye(4), b, c, method=method),
          sl.solve_sylvester(A + 3 * np.eye(4), b, c))
    x = np.asarray(L.solve_sylvester(C, b, c + 0j, method=method))
    close(C @ x + x @ b, c)  # scipy 1.17 gets this mixed complex/real case wrong
    check_grads(lambda x, y, z: L.solve_sylvester(x, y, z, method=method),
                (A + 3 * np.eye(4), b, c), order=1)
    with np.errstate(all="ignore"):  # singular: NaNs (as JAX)
        out = L.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)), method=method)
    assert np.isnan(np.asarray(out)).all()


# ----------------------------------------------------------------------------- special matrices


def test_special_matrices_match_scipy():
    a, poly = RNG.standard_normal(5), np.array([2.0, -1.0, 0.5, 3.0, 1.0])
    for n in (1, 2, 5):
        close(L.hilbert(n), sl.hilbert(n))
        close(L.invhilbert(n), sl.invhilbert(n), 1e-6)
        close(L.helmert(n), sl.helmert(n))
        close(L.helmert(n, full=True), sl.helmert(n, full=True))
        for kind in ("symmetric", "lower", "upper"):
            close(L.pascal(n, kind), sl.pascal(n, kind))
            close(L.invpascal(n, kind), sl.invpascal(n, kind))
        close(L.dft(n), sl.dft(n), 1e-14)
        close(L.dft(n, "n"), sl.dft(n, "n"), 1e-14)
    close(L.hadamard(8), sl.hadamard(8))
    assert np.asarray(L.hadamard(4, dtype=np.float32)).dtype == np.float32
    close(L.companion(poly), sl.companion(poly))
    close(L.fiedler_companion(poly), sl.fiedler_companion(poly))
    close(L.fiedler(a), sl.fiedler(a))
    close(L.circulant(a), sl.circulant(a))
    close(L.leslie(a, a[1:]), sl.leslie(a, a[1:]))
    close(L.toeplitz(a), sl.toeplitz(a))
    close(L.toeplitz(a, poly[:3]), sl.toeplitz(a, poly[:3]))
    ct = cnormal(3)
    close(L.toeplitz(ct), sl.toeplitz(ct))  # r defaults to conj(c)
    close(L.hankel(a), sl.hankel(a))
    close(L.hankel(a, poly), sl.hankel(a, poly))
    for mode in ("full", "same", "valid"):
        close(L.convolution_matrix(poly, 3, mode), sl.convolution_matrix(poly, 3, mode))
    close(L.block_diag([[1, 2]], 3, [4.0, 5.0]), sl.block_diag([[1, 2]], 3, [4.0, 5.0]))
    assert np.shape(L.block_diag()) == (1, 0)


def test_special_matrices_batch_and_grad():
    cs = RNG.standard_normal((2, 3))
    out = np.asarray(L.toeplitz(cs, cs[0]))
    for i in range(2):
        np.testing.assert_array_equal(out[i], sl.toeplitz(cs[i], cs[0]))
    close(L.circulant(cs)[1], sl.circulant(cs[1]))
    close(L.companion(np.stack([poly := np.array([1.0, 2.0, 3.0]), 2 * poly]))[1],
          sl.companion(2 * poly))
    check_grads(L.toeplitz, (cs[0], cs[1]), order=1)
    check_grads(L.companion, (poly,), order=1)


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs():
    bad = [
        (lambda: L.cholesky(np.ones((2, 3))), NumbaxValueError, r"a has shape \(2, 3\)"),
        (lambda: L.cho_factor(np.ones((2, 3))), NumbaxValueError, r"a has shape \(2, 3\)"),
        (lambda: L.cho_solve(np.eye(3), np.ones(3)), NumbaxTypeError, "pair"),
        (lambda: L.cho_solve((np.eye(2), True), np.ones(3)), NumbaxValueError, "b has shape"),
        (lambda: L.lu_factor(np.ones(3)), NumbaxValueError, r"a has shape \(3,\)"),
        (lambda: L.lu_solve(L.lu_factor(np.eye(2)), np.ones(2), trans=3), NumbaxValueError,
         "trans has 3"),
        (lambda: L.lu(np.ones(2)), NumbaxValueError, "a has shape"),
        (lambda: L.qr(np.eye(2), mode="raw"), NumbaxValueError, "mode has 'raw'"),
        (lambda: L.qr_multiply(np.eye(3), np.ones((2, 2))), NumbaxValueError, "3 columns"),
        (lambda: L.qr_multiply(np.eye(2), np.ones(2), mode="up"), NumbaxValueError, "mode"),
        (lambda: L.svd(np.eye(2), lapack_driver="x"), NumbaxValueError, "lapack_driver"),
        (lambda: L.eigh(np.eye(2), type=4), NumbaxValueError, "type has 4"),
        (lambda: L.eigh(np.eye(2), np.eye(3)), NumbaxValueError, "one size"),
        (lambda: L.eigh_tridiagonal(np.ones(3), np.ones(3)), NumbaxValueError, "n - 1"),
        (lambda: L.eigh_tridiagonal(np.ones(3), np.ones(2, np.float32)), NumbaxTypeError,
         "same"),
        (lambda: L.eigh_tridiagonal(np.ones(3), np.ones(2), select="v"), NotImplementedError,
         "select='v'"),
        (lambda: L.eigh_tridiagonal(np.ones(3), np.ones(2), select="i"), NumbaxValueError,
         "select_range"),
        (lambda: L.schur(np.eye(2), output="x"), NumbaxValueError, "output has 'x'"),
        (lambda: L.hessenberg(np.ones((2, 3))), NumbaxValueError, "a has shape"),
        (lambda: L.det(np.ones((2, 3))), NumbaxValueError, "square"),
        (lambda: L.inv(np.ones(3)), NumbaxValueError, "a has shape"),
        (lambda: L.solve(np.eye(2), np.ones(2), assume_a="banded"), NumbaxValueError,
         "assume_a"),
        (lambda: L.solve_triangular(np.eye(2), np.ones(2), trans=5), NumbaxValueError,
         "trans has 5"),
        (lambda: L.polar(np.eye(2), side="up"), NumbaxValueError, "side has 'up'"),
        (lambda: L.polar(np.eye(2), method="newton"), NumbaxValueError, "method has"),
        (lambda: L.expm(np.ones((2, 3))), NumbaxValueError, r"A has shape \(2, 3\)"),
        (lambda: L.expm_frechet(np.eye(2), np.eye(3)), NumbaxValueError, "equal shapes"),
        (lambda: L.sqrtm(np.ones(3)), NumbaxValueError, "A has shape"),
        (lambda: L.funm(np.eye(2), "sin"), NumbaxTypeError, "callable"),
        (lambda: L.funm(np.ones((2, 3)), jnp.sin), NumbaxValueError, "square"),
        (lambda: L.rsf2csf(np.eye(2), np.eye(3)), NumbaxValueError, "one size"),
        (lambda: L.solve_sylvester(np.eye(2), np.eye(3), np.ones((3, 3))), NumbaxValueError,
         "C"),
        (lambda: L.solve_sylvester(np.eye(2), np.eye(2), np.eye(2), method="x"),
         NumbaxValueError, "method has 'x'"),
        (lambda: L.toeplitz(None), NumbaxTypeError, "c has type NoneType"),
        (lambda: L.hankel(np.ones(2), "r"), NumbaxTypeError, "r has type str"),
        (lambda: L.circulant("c"), NumbaxTypeError, "c has type"),
        (lambda: L.fiedler(None), NumbaxTypeError, "a has type"),
        (lambda: L.companion([1.0]), NumbaxValueError, "at least 2"),
        (lambda: L.fiedler_companion([]), NumbaxValueError, "at least one"),
        (lambda: L.leslie([1.0, 2.0], [1.0, 2.0]), NumbaxValueError, "n - 1"),
        (lambda: L.convolution_matrix([1.0], 0), NumbaxValueError, "n has 0"),
        (lambda: L.convolution_matrix([1.0], 2, mode="x"), NumbaxValueError, "mode"),
        (lambda: L.block_diag(np.ones((2, 2, 2))), NumbaxValueError, "argument 0"),
        (lambda: L.dft(3, scale="x"), NumbaxValueError, "scale"),
        (lambda: L.dft(3, dtype=np.float64), NumbaxValueError, "complex"),
        (lambda: L.hadamard(3), NumbaxValueError, "power of 2"),
        (lambda: L.helmert(0), NumbaxValueError, "n has 0"),
        (lambda: L.hilbert(2.5), NumbaxTypeError, "n has type float"),
        (lambda: L.invhilbert(-1), NumbaxValueError, "n has -1"),
        (lambda: L.pascal(3, kind="x"), NumbaxValueError, "kind"),
        (lambda: L.invpascal(3, kind="x"), NumbaxValueError, "kind"),
    ]
    for fn, cls, match in bad:
        with pytest.raises(cls, match=match):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                fn()


def test_vmap_and_jit_compose():
    xs = np.stack([SPD, 2 * SPD, 3 * SPD])
    out = numbax.vmap(L.sqrtm)(xs)
    close(out, np.stack([sl.sqrtm(m) for m in xs]))
    b = RNG.standard_normal(4)
    out = numbax.jit(lambda m, y: L.cho_solve(L.cho_factor(m), y))(SPD, b)
    close(out, np.linalg.solve(SPD, b))


@pytest.mark.parametrize("name", ["linalg", "linalg_special", "linalg_functions"])
def test_doctests(name):
    import doctest
    import importlib

    module = importlib.import_module(f"numbax._src.scipy.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_empty_matrices():
    z = np.zeros((0, 0))
    for fn in (L.expm, L.sqrtm, L.hessenberg, lambda m: L.schur(m)[0], lambda m: L.lu(m)[0]):
        assert np.shape(fn(z)) == (0, 0)
    assert np.shape(L.eigh_tridiagonal(np.zeros(0), np.zeros(0), eigvals_only=True)) == (0,)
