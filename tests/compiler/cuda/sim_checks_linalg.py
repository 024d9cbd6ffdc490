"""Checks of the GPU linear algebra kernels (compiler/cuda_linalg.py) under the CUDA simulator.

numpy (and the CPU backend, whose eager impls call LAPACK) is the truth. Eigenvectors and
singular vectors are unique only up to sign, so they are checked by reconstruction,
orthonormality and |Vᵀ V_numpy| = I; qr follows LAPACK's Householder convention and is
compared directly. Matrices stay tiny (<= 6x6, batch 2): the simulator runs every thread as a
Python thread. `linalg_few_threads` renders the kernels with 4-thread blocks so the
thread-strided loops run several rounds, as they do on a card with n > threads."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import registry
from numbax._src.compiler.cuda.config import Config
from numbax.lax import linalg as lax_linalg
from tests.compiler.cuda.sim_checks import check, close, gjit, on_host

RNG = np.random.default_rng(11)
L = lax_linalg
DTYPES = (np.float64, np.float32)


def _tol(dt) -> dict:
    return {"rtol": 1e-10, "atol": 1e-10} if dt == np.float64 else {"rtol": 2e-4, "atol": 2e-5}


def _spd(shape, dt) -> np.ndarray:
    a = RNG.normal(size=shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dt)


def _T(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _orthonormal_cols(q: np.ndarray, atol: float) -> None:
    k = q.shape[-1]
    np.testing.assert_allclose(_T(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)),
                               atol=atol)


def _same_up_to_sign(v: np.ndarray, want: np.ndarray, atol: float) -> None:
    """Columns of v equal those of want up to sign: |vᵀ want| = I."""
    k = v.shape[-1]
    np.testing.assert_allclose(np.abs(_T(v) @ want), np.broadcast_to(np.eye(k), v.shape[:-2]
                               + (k, k)), atol=atol)


@check
def linalg_cholesky():
    for dt in DTYPES:
        x = _spd((2, 5, 5), dt)
        f = gjit(lambda a: L.cholesky(a, symmetrize_input=False))
        close(f(x), np.linalg.cholesky(x).astype(dt), **_tol(dt))
        # the upper triangle is never read; the public function symmetrizes first
        junk = x + np.triu(RNG.normal(size=(5, 5)), 1).astype(dt)
        close(f(junk), np.linalg.cholesky(x).astype(dt), **_tol(dt))
        close(gjit(lambda a: jnp.linalg.cholesky(a, upper=True))(x),
              _T(np.linalg.cholesky(x)).astype(dt), **_tol(dt))
        # a matrix that is not positive definite gives NaNs, the other one of the batch not
        bad = x.copy()
        bad[1, 2, 2] = -50.0
        got = np.asarray(f(bad))
        assert np.isnan(got[1]).all(), got[1]
        np.testing.assert_allclose(got[0], np.linalg.cholesky(x[0]), **_tol(dt))
        close(f(bad), np.asarray(L.cholesky(bad, symmetrize_input=False)), **_tol(dt))
    close(gjit(lambda a: L.cholesky(a))(np.full((3, 1, 1), 4.0)), np.full((3, 1, 1), 2.0))


@check
def linalg_triangular_solve():
    for dt in DTYPES:
        # a full matrix: the other triangle is junk the solve must ignore
        a = (RNG.normal(size=(2, 4, 4)) + 4 * np.eye(4)).astype(dt)
        for left in (True, False):
            b = RNG.normal(size=(2, 4, 3) if left else (2, 3, 4)).astype(dt)
            for lower in (True, False):
                for trans in (False, True):
                    for unit in (False, True):
                        kw = dict(left_side=left, lower=lower, transpose_a=trans,
                                  unit_diagonal=unit)
                        want = np.asarray(L.triangular_solve(a, b, **kw))
                        tri = np.tril(a) if lower else np.triu(a)
                        if unit:
                            tri[..., np.arange(4), np.arange(4)] = 1
                        op = _T(tri) if trans else tri
                        resid = op @ want - b if left else want @ op - b
                        assert np.abs(resid).max() < (1e-10 if dt == np.float64 else 1e-4), kw
                        got = gjit(lambda x, y, kw=kw: L.triangular_solve(x, y, **kw))(a, b)
                        try:
                            close(got, want, **_tol(dt))
                        except AssertionError as e:
                            raise AssertionError(f"{kw} {np.dtype(dt).name}: {e}") from None
    # one right-hand side vector per matrix, unbatched
    a = np.tril(RNG.normal(size=(6, 6))) + 6 * np.eye(6)
    b = RNG.normal(size=(6, 1))
    close(gjit(lambda x, y: L.triangular_solve(x, y, left_side=True, lower=True))(a, b),
          np.linalg.solve(a, b), rtol=1e-10)


@check
def linalg_lu():
    for dt in DTYPES:
        x = RNG.normal(size=(2, 5, 5)).astype(dt)
        lu, piv, perm = gjit(L.lu)(x)
        want = L.lu(x)
        close(piv, np.asarray(want[1]), rtol=0)
        close(perm, np.asarray(want[2]), rtol=0)
        close(lu, np.asarray(want[0]), **_tol(dt))
        lu, perm = np.asarray(lu), np.asarray(perm)
        lo = np.tril(lu, -1) + np.eye(5)
        up = np.triu(lu)
        np.testing.assert_allclose(lo @ up, np.take_along_axis(x, perm[..., None], 1),
                                   **_tol(dt))
    # singular: a zero column (zero pivot: LAPACK skips the scaling) and an exactly
    # dependent row; integer-valued so LAPACK and the kernel round alike
    s = np.array([[2.0, 0.0, 1.0, 3.0], [4.0, 0.0, 2.0, 5.0], [1.0, 0.0, 7.0, 1.0],
                  [-3.0, 0.0, 1.0, 2.0]])
    s2 = np.stack([s, s.T])
    got = gjit(L.lu)(s2)
    for g, w in zip(got, L.lu(s2), strict=True):
        close(g, np.asarray(w), rtol=1e-12, atol=1e-12)


@check
def linalg_qr():
    for dt in DTYPES:
        for shape in ((2, 5, 3), (2, 3, 5), (2, 4, 4)):
            x = RNG.normal(size=shape).astype(dt)
            for full in (True, False):
                q, r = gjit(lambda a, full=full: L.qr(a, full_matrices=full))(x)
                wq, wr = np.linalg.qr(x, mode="complete" if full else "reduced")
                close(q, wq.astype(dt), **_tol(dt))  # LAPACK's signs: Householder as geqrf
                close(r, wr.astype(dt), **_tol(dt))
                q, r = np.asarray(q), np.asarray(r)
                np.testing.assert_allclose(q @ r, x, **_tol(dt))
                _orthonormal_cols(q, 1e-12 if dt == np.float64 else 1e-5)
                assert (np.tril(r, -1) == 0).all()
        close(gjit(lambda a: jnp.linalg.qr(a, mode="r"))(x), np.linalg.qr(x, mode="r"),
              **_tol(dt))
    # a zero column below the diagonal (tau = 0) and a rank-deficient matrix
    z = np.array([[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 6.0], [0.0, 0.0, 0.0]])
    z2 = np.stack([z, np.outer(np.arange(1.0, 5.0), [1.0, -2.0, 0.5])])
    for full in (True, False):
        q, r = gjit(lambda a, full=full: jnp.linalg.qr(a, "complete" if full else "reduced"))(z2)
        wq, wr = np.linalg.qr(z2, mode="complete" if full else "reduced")
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), z2, atol=1e-12)
        _orthonormal_cols(np.asarray(q), 1e-12)
        close(r[0], wr[0], rtol=1e-12, atol=1e-12)
        close(q[0], wq[0], rtol=1e-12, atol=1e-12)


@check
def linalg_eigh():
    for dt in DTYPES:
        atol = 1e-10 if dt == np.float64 else 2e-4
        for n in (5, 4):  # odd n: the round-robin order gets a dummy player
            a = RNG.normal(size=(2, n, n))
            sym = ((a + _T(a)) / 2).astype(dt)
            v, w = gjit(lambda x: L.eigh(x, symmetrize_input=False))(sym)
            wn, vn = np.linalg.eigh(sym)
            close(w, wn.astype(dt), **_tol(dt))
            v = np.asarray(v)
            assert v.dtype == dt
            np.testing.assert_allclose(v @ (np.asarray(w)[..., None] * _T(v)), sym, atol=atol)
            _orthonormal_cols(v, atol)
            _same_up_to_sign(v, vn, 10 * atol)  # random spectra: distinct eigenvalues
        # lower=False reads the upper triangle of a non-symmetric input
        a = RNG.normal(size=(2, 4, 4)).astype(dt)
        v, w = gjit(lambda x: L.eigh(x, lower=False, symmetrize_input=False))(a)
        close(w, np.linalg.eigvalsh(a, UPLO="U").astype(dt), **_tol(dt))
        up = np.triu(a) + _T(np.triu(a, 1))
        v = np.asarray(v)
        np.testing.assert_allclose(v @ (np.asarray(w)[..., None] * _T(v)), up, atol=atol)
        close(gjit(jnp.linalg.eigvalsh)(a), np.linalg.eigvalsh((a + _T(a)) / 2).astype(dt),
              **_tol(dt))
    # repeated eigenvalues and an already diagonal matrix: any orthonormal basis will do
    rep = np.stack([np.diag([3.0, 1.0, 2.0, 1.0]), np.ones((4, 4))])
    v, w = gjit(lambda x: L.eigh(x))(rep)
    close(w, np.linalg.eigvalsh(rep), rtol=1e-12, atol=1e-12)
    v = np.asarray(v)
    np.testing.assert_allclose(v @ (np.asarray(w)[..., None] * _T(v)), rep, atol=1e-12)
    _orthonormal_cols(v, 1e-12)


def _svd_case(x: np.ndarray, full: bool, atol: float, distinct: bool) -> None:
    dt = x.dtype
    u, s, vt = gjit(lambda a: L.svd(a, full_matrices=full))(x)
    wu, ws, wvt = np.linalg.svd(x, full_matrices=full)
    close(s, ws.astype(dt), rtol=_tol(dt)["rtol"], atol=atol)
    u, s, vt = np.asarray(u), np.asarray(s), np.asarray(vt)
    assert u.shape == wu.shape and vt.shape == wvt.shape, (u.shape, vt.shape)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vt[..., :k, :], x, atol=atol)
    _orthonormal_cols(u, atol)
    _orthonormal_cols(_T(vt), atol)
    if distinct:
        _same_up_to_sign(u[..., :k], wu[..., :k], 10 * atol)
        _same_up_to_sign(_T(vt[..., :k, :]), _T(wvt[..., :k, :]), 10 * atol)


@check
def linalg_svd():
    for dt in DTYPES:
        atol = 1e-10 if dt == np.float64 else 2e-4
        for shape in ((2, 5, 3), (2, 3, 5), (2, 4, 4)):
            x = RNG.normal(size=shape).astype(dt)
            for full in (True, False):
                _svd_case(x, full, atol, True)
            close(gjit(lambda a: L.svd(a, compute_uv=False))(x),
                  np.linalg.svd(x, compute_uv=False).astype(dt), **_tol(dt))
    # rank 1 and a zero matrix: zero singular values, vectors completed to a basis
    r1 = np.stack([np.outer([1.0, 2.0, -1.0, 0.5, 3.0], [2.0, -1.0, 1.0]), np.zeros((5, 3))])
    for x in (r1, _T(r1).copy()):
        for full in (True, False):
            _svd_case(x, full, 1e-12, False)
    close(gjit(lambda a: jnp.linalg.svd(a, compute_uv=False))(r1),
          np.linalg.svd(r1, compute_uv=False), rtol=1e-12, atol=1e-12)


@check
def linalg_numpy_api():
    """jnp.linalg functions built on these primitives, under gjit, against numpy."""
    for dt in DTYPES:
        tol = _tol(dt)
        a = (RNG.normal(size=(2, 4, 4)) + 2 * np.eye(4)).astype(dt)
        b = RNG.normal(size=(2, 4, 2)).astype(dt)
        close(gjit(jnp.linalg.solve)(a, b), np.linalg.solve(a, b), **tol)
        close(gjit(jnp.linalg.inv)(a), np.linalg.inv(a), **tol)
        close(gjit(jnp.linalg.det)(a), np.linalg.det(a), **tol)
        sign, logdet = gjit(jnp.linalg.slogdet)(a)
        close(sign, np.linalg.slogdet(a)[0], rtol=0)
        close(logdet, np.linalg.slogdet(a)[1], **tol)
        close(gjit(jnp.linalg.pinv)(a[0, :, :3]), np.linalg.pinv(a[0, :, :3]), **tol)
        close(gjit(lambda x: jnp.linalg.norm(x, 2, axis=(-2, -1)))(a),
              np.linalg.norm(a, 2, axis=(-2, -1)), **tol)
        got = gjit(lambda x, y: jnp.linalg.lstsq(x, y)[0])(a[0, :, :3], b[0])
        close(got, np.linalg.lstsq(a[0, :, :3], b[0], rcond=None)[0], **tol)
    # float64 results against the CPU backend's jit of the same function
    a = RNG.normal(size=(3, 4, 4))
    for f in (jnp.linalg.det, jnp.linalg.inv, lambda x: jnp.linalg.svd(x, compute_uv=False)):
        close(gjit(f)(a), np.asarray(numbax.jit(f)(a)), rtol=1e-11, atol=1e-12)


@check
def linalg_permuted_solves():
    """Batched LU solves apply P as a row gather (take_along_axis with a (batch, n, 1) index
    broadcast over b's columns) and Pᵀ through a scatter of iota: solve, inv, lu_solve in
    every trans, and their derivatives (the gather's transpose is a scatter-add), against
    numpy/scipy and the CPU backend."""
    import scipy.linalg

    from numbax.scipy import linalg as nsl

    for dt in DTYPES:
        tol = _tol(dt)
        a = (RNG.normal(size=(2, 4, 4)) + np.eye(4)).astype(dt)  # pivots that permute
        b = RNG.normal(size=(2, 4, 3)).astype(dt)
        close(gjit(jnp.linalg.solve)(a, b), np.linalg.solve(a, b), **tol)
        close(gjit(jnp.linalg.solve)(a, b[0, :, 0]), np.linalg.solve(a, b[0, :, 0]), **tol)
        close(gjit(jnp.linalg.inv)(a), np.linalg.inv(a), **tol)
        for trans in (0, 1, 2):
            got = gjit(lambda x, y, t=trans: nsl.lu_solve(nsl.lu_factor(x), y, trans=t))(a, b)
            want = np.stack([scipy.linalg.lu_solve(scipy.linalg.lu_factor(m), r, trans=trans)
                             for m, r in zip(a, b, strict=True)])
            close(got, want, **tol)
    a, b = RNG.normal(size=(2, 4, 4)) + np.eye(4), RNG.normal(size=(2, 4, 3))
    for f in (lambda x, y: jnp.sum(jnp.linalg.solve(x, y) ** 2),
              lambda x, y: jnp.sum(jnp.linalg.det(x)) + jnp.sum(jnp.linalg.inv(x) * y[..., :1])):
        g = numbax.grad(f, argnums=(0, 1))
        for got, want in zip(gjit(g)(a, b), numbax.jit(g)(a, b), strict=True):
            close(got, np.asarray(want), rtol=1e-10, atol=1e-11)


@check
def linalg_grad():
    """Reverse mode through cholesky and triangular_solve (the backward pass solves with L)."""
    a = RNG.normal(size=(4, 4))
    y = RNG.normal(size=(4,))

    def nll(w):
        s = w @ w.T + 4.0 * jnp.eye(4)
        chol = jnp.linalg.cholesky(s)
        z = L.triangular_solve(chol, y[:, None], left_side=True, lower=True)
        return jnp.sum(z ** 2) / 2 + jnp.sum(jnp.log(jnp.diagonal(chol)))

    close(gjit(numbax.grad(nll))(a), np.asarray(numbax.jit(numbax.grad(nll))(a)), rtol=1e-10,
          atol=1e-12)
    # the closed form: d/dW [yᵀ S⁻¹ y / 2 + log det S / 2] with S = W Wᵀ + 4 I
    s = a @ a.T + 4 * np.eye(4)
    si = np.linalg.inv(s)
    g_s = -si @ np.outer(y, y) @ si / 2 + si / 2
    close(gjit(numbax.grad(nll))(a), 2 * g_s @ a, rtol=1e-9, atol=1e-12)
    f32 = a.astype(np.float32)
    close(gjit(numbax.grad(lambda w: jnp.sum(jnp.linalg.eigvalsh(w @ w.T) ** 2)))(f32),
          (4 * (f32 @ f32.T) @ f32).astype(np.float32), rtol=1e-4, atol=1e-4)


def _run_plan(fn, args, threads: int) -> list[np.ndarray]:
    """Renders fn's one linalg equation with `threads`-thread blocks and launches it."""
    (eqn,) = numbax.make_jaxpr(fn)(*args).jaxpr.eqns
    cfg = Config(sim=True)
    cfg.threads = threads
    kernel = registry.lowering(eqn.primitive, "cuda").library.render(eqn, cfg)
    outs = [np.zeros(v.aval.shape, v.aval.dtype) for v in eqn.outvars]
    scratch = [np.zeros(size, dt) for size, dt in kernel.scratch]
    ns: dict = {}
    exec(compile(kernel.source, "<cuda_linalg>", "exec"), ns)  # noqa: S102 - generated source
    flat = [np.ascontiguousarray(a).reshape(-1) for a in args]
    for step in kernel.launches:
        ns[step.function][step.blocks, step.threads](*flat, *[o.reshape(-1) for o in outs],
                                                     *scratch)
    return outs


@check
def linalg_few_threads():
    x = RNG.normal(size=(2, 6, 6))
    spd = _spd((2, 6, 6), np.float64)
    b = RNG.normal(size=(2, 6, 3))
    cases = [
        (lambda a: L.cholesky(a, symmetrize_input=False), (spd,)),
        (lambda a, y: L.triangular_solve(a, y, left_side=True, lower=False), (spd, b)),
        (lambda a, y: L.triangular_solve(a, y, lower=True, transpose_a=True),
         (spd, _T(b).copy())),
        (L.lu, (x,)),
        (lambda a: L.qr(a, full_matrices=True), (x[:, :, :4],)),
    ]
    for fn, args in cases:
        got = _run_plan(fn, args, 4)
        want = [np.asarray(w) for w in numbax.tree_util.tree_leaves(fn(*args))]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    v, w = _run_plan(lambda a: L.eigh(a, symmetrize_input=False), ((x + _T(x)) / 2,), 4)
    np.testing.assert_allclose(w, np.linalg.eigvalsh((x + _T(x)) / 2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(v @ (w[..., None] * _T(v)), (x + _T(x)) / 2, atol=1e-10)
    for shape in ((2, 6, 4), (2, 4, 6)):
        xs = RNG.normal(size=shape)
        s, u, vt = _run_plan(lambda a: L.svd(a, full_matrices=True), (xs,), 4)
        np.testing.assert_allclose(s, np.linalg.svd(xs, compute_uv=False), rtol=1e-10)
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vt[..., :k, :], xs,
                                   atol=1e-10)
        _orthonormal_cols(u, 1e-10)
        _orthonormal_cols(_T(vt), 1e-10)


@check
def linalg_refused():
    """Empty matrix dims of qr/svd run on the host, with a warning naming the primitive."""
    on_host(lambda a: L.qr(a), np.ones((2, 3, 0)), prim="qr", operand="f64[2,3,0]")
    on_host(lambda a: L.svd(a), np.ones((2, 3, 0)), prim="svd", operand="f64[2,3,0]")
    # empty batches and empty matrices of the other kernels launch nothing
    close(gjit(L.cholesky)(np.ones((0, 3, 3))), np.ones((0, 3, 3)))
    close(gjit(lambda a: L.lu(a)[0])(np.ones((2, 0, 0))), np.ones((2, 0, 0)))
