"""numbax.scipy.sparse.linalg (jax.scipy.sparse.linalg): cg, bicgstab and gmres (both solve
methods) against SciPy's iterates at a fixed number of steps (gmres: of restarts) and numpy's
direct solves, on matrices, functions and pytrees, preconditioned, under jit, vmap and grad;
bad arguments rejected by name."""
import functools

import numpy as np
import pytest
import scipy.sparse.linalg as scipy_sparse

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.scipy.sparse import linalg as sl

RNG = np.random.default_rng(0)
N = 24
_Q = RNG.standard_normal((N, N))
SPD = _Q @ _Q.T / N + np.eye(N)  # hermitian positive definite
GENERAL = np.eye(N) * 3 + RNG.standard_normal((N, N)) / np.sqrt(N)  # nonsymmetric
B = RNG.standard_normal(N)
SOLVERS = {
    "cg": (sl.cg, scipy_sparse.cg, SPD),
    "bicgstab": (sl.bicgstab, scipy_sparse.bicgstab, GENERAL),
    # maxiter counts restarts, of up to 20 vectors (restart=20 in both libraries)
    "gmres": (functools.partial(sl.gmres, solve_method="batched"), scipy_sparse.gmres, GENERAL),
    "gmres incremental": (functools.partial(sl.gmres, solve_method="incremental"),
                          scipy_sparse.gmres, GENERAL),
}


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("steps", [1, 3, 6])
def test_fixed_steps_give_scipys_iterates(name, steps):
    ours, theirs, a = SOLVERS[name]
    x, info = ours(a, B, tol=0.0, maxiter=steps)
    expect, _ = theirs(a, B, rtol=0.0, atol=0.0, maxiter=steps)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), expect, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_converged_solution_and_stopping_rule(name):
    ours, _, a = SOLVERS[name]
    x, _ = ours(a, B, tol=1e-10)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, B), rtol=1e-8, atol=1e-10)
    loose, _ = ours(a, B, tol=1e-2)  # stops once norm(b - A x) <= tol * norm(b)
    residual = np.linalg.norm(B - a @ np.asarray(loose))
    assert residual <= 1e-2 * np.linalg.norm(B)
    if name != "gmres":  # (batched gmres builds its whole first restart before it checks)
        assert residual > 1e-10 * np.linalg.norm(B)  # and not later
    absolute, _ = ours(a, B, tol=0.0, atol=1e-3)
    assert np.linalg.norm(B - a @ np.asarray(absolute)) <= 1e-3


@pytest.mark.parametrize("name", SOLVERS)
def test_functions_pytrees_and_a_starting_guess(name):
    ours, _, a = SOLVERS[name]
    small = a[:4, :4] + (np.eye(4) if name != "cg" else 0)

    def operator(tree):  # block diagonal: a on "u", small on "v"
        return {"u": a @ tree["u"], "v": small @ tree["v"]}

    b = {"u": B, "v": np.arange(1.0, 5.0)}
    x0 = {"u": np.ones(N), "v": np.zeros(4)}
    x, _ = ours(operator, b, x0, tol=1e-11)
    np.testing.assert_allclose(np.asarray(x["u"]), np.linalg.solve(a, B), rtol=1e-8)
    np.testing.assert_allclose(np.asarray(x["v"]), np.linalg.solve(small, b["v"]), rtol=1e-8)


@pytest.mark.parametrize("name", SOLVERS)
def test_a_jacobi_preconditioner_needs_fewer_steps(name):
    ours, _, _ = SOLVERS[name]
    scales = np.logspace(0, 4, N)
    a = np.diag(scales) + 0.01 * (SPD - np.diag(np.diag(SPD)))
    if name == "bicgstab":
        a = a + 0.01 * np.triu(GENERAL, 1)
    jacobi = np.diag(1 / np.diag(a))
    if name.startswith("gmres"):  # two restarts of three vectors
        ours = functools.partial(ours, restart=3)
        a = a + 0.01 * np.triu(GENERAL, 1)
    steps = 2 if name.startswith("gmres") else 8
    plain, _ = ours(a, B, tol=1e-8, maxiter=steps)
    preconditioned, _ = ours(a, B, tol=1e-8, maxiter=steps, M=lambda r: jacobi @ r)
    error = lambda x: np.linalg.norm(np.asarray(x) - np.linalg.solve(a, B))  # noqa: E731
    assert error(preconditioned) < 1e-6 < error(plain)
    as_matrix, _ = ours(a, B, tol=1e-8, maxiter=steps, M=jacobi)
    np.testing.assert_allclose(np.asarray(as_matrix), np.asarray(preconditioned), rtol=1e-12)


@pytest.mark.parametrize("name", SOLVERS)
def test_jit_and_vmap_give_the_eager_solutions(name):
    ours, _, a = SOLVERS[name]
    bs = RNG.standard_normal((3, N))
    solve = lambda b: ours(a, b, tol=1e-11)[0]  # noqa: E731
    # (the compiled dot products round their sums in another order; the iterations amplify it)
    np.testing.assert_allclose(np.asarray(numbax.jit(solve)(B)), np.asarray(solve(B)),
                               rtol=1e-9, atol=1e-12)
    batched = np.asarray(numbax.vmap(solve)(bs))
    np.testing.assert_allclose(batched, np.linalg.solve(a, bs.T).T, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", SOLVERS)
def test_gradients_by_implicit_differentiation(name):
    """d/db of w . x(b) is A⁻ᵀ w; d/dθ of w . x for A + θ I is -w . A⁻¹ x (closed forms)."""
    ours, _, a = SOLVERS[name]
    w = RNG.standard_normal(N)
    grad_b = numbax.grad(lambda b: jnp.dot(w, ours(a, b, tol=1e-12)[0]))(B)
    np.testing.assert_allclose(np.asarray(grad_b), np.linalg.solve(a.T, w), rtol=1e-7,
                               atol=1e-10)

    def loss(theta):
        x, _ = ours(lambda v: a @ v + theta * v, B, tol=1e-12)
        return jnp.dot(w, x)

    x = np.linalg.solve(a, B)
    np.testing.assert_allclose(float(numbax.grad(loss)(0.0)),
                               -w @ np.linalg.solve(a, x), rtol=1e-7)


def test_bad_arguments_are_named():
    with pytest.raises(NumbaxTypeError, match="A is a str"):
        sl.cg("matrix", B)
    with pytest.raises(NumbaxValueError, match="A has shape"):
        sl.bicgstab(np.ones((2, 2, 2)), np.ones(2))
    with pytest.raises(NumbaxValueError, match="x0 has structure"):
        sl.cg(SPD, B, x0=np.ones(N + 1))
    with pytest.raises(NumbaxTypeError, match="M is a int"):
        sl.cg(SPD, B, M=3)


def test_complex_hermitian_systems():
    q = RNG.standard_normal((10, 10)) + 1j * RNG.standard_normal((10, 10))
    h = q @ q.conj().T / 10 + np.eye(10)
    b = RNG.standard_normal(10) + 1j * RNG.standard_normal(10)
    x, _ = sl.cg(h, b, tol=0.0, maxiter=4)
    expect, _ = scipy_sparse.cg(h, b, rtol=0.0, atol=0.0, maxiter=4)
    np.testing.assert_allclose(np.asarray(x), expect, rtol=1e-10, atol=1e-13)
    x, _ = sl.bicgstab(h, b, tol=1e-11)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(h, b), rtol=1e-8)


@pytest.mark.parametrize("method", ["batched", "incremental"])
@pytest.mark.parametrize("restarts", [1, 3])
def test_gmres_restarts_give_scipys_iterates_preconditioned_too(method, restarts):
    jacobi = np.diag(1 / np.diag(GENERAL))
    for m in (None, jacobi):
        x, info = sl.gmres(GENERAL, B, tol=0.0, restart=5, maxiter=restarts, M=m,
                           solve_method=method)
        expect, _ = scipy_sparse.gmres(GENERAL, B, rtol=0.0, atol=0.0, restart=5,
                                       maxiter=restarts, M=m)
        assert info is None
        np.testing.assert_allclose(np.asarray(x), expect, rtol=1e-9, atol=1e-12)


def test_gmres_incremental_ends_a_restart_early():
    """With the tolerance reached after a few vectors, the incremental method stops within the
    restart: its residual is within the bound but not far below it, while the batched method
    builds all twenty and lands far lower."""
    x_inc, _ = sl.gmres(GENERAL, B, tol=1e-3, solve_method="incremental")
    x_bat, _ = sl.gmres(GENERAL, B, tol=1e-3, solve_method="batched")
    res = lambda x: np.linalg.norm(B - GENERAL @ np.asarray(x)) / np.linalg.norm(B)  # noqa: E731
    assert 1e-6 < res(x_inc) <= 1e-3
    assert res(x_bat) < res(x_inc) / 10


def test_gmres_bad_options_are_named():
    with pytest.raises(NumbaxValueError, match="solve_method is 'qr'"):
        sl.gmres(GENERAL, B, solve_method="qr")
    with pytest.raises(NumbaxValueError, match="restart is 0"):
        sl.gmres(GENERAL, B, restart=0)
