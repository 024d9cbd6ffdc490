"""custom_linear_solve binds linear_solve_p (lax/control_flow/linear_solve.py), JAX's
`custom_linear_solve` equation: its params as JAX prints them, and its rules against closed
forms (x = A^-1 b, dx = A^-1 (db - dA x), the transposed solve) under jit, grad, jvp, vmap."""
import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax

A = np.array([[2.0, 1.0], [0.5, 3.0]])
B = np.array([1.0, 2.0])


def _solve(m, b):
    return lax.custom_linear_solve(lambda v: m @ v, b, lambda mv, r: jnp.linalg.solve(m, r),
                                   lambda vm, r: jnp.linalg.solve(m.T, r))


def test_equation_is_jaxs():
    eqn = numbax.make_jaxpr(_solve)(A, B).jaxpr.eqns[-1]
    assert eqn.primitive is lax.linear_solve_p and eqn.primitive.name == "custom_linear_solve"
    text = str(numbax.make_jaxpr(_solve)(A, B))
    # JAX 0.10.2 prints const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=1,
    # transpose_solve=1) and jaxprs=_LinearSolveTuple(matvec={ lambda ; ...
    assert ("const_lengths=_LinearSolveTuple(matvec=1, vecmat=1, solve=1, transpose_solve=1)"
            in text)
    assert "jaxprs=_LinearSolveTuple(matvec={ lambda ;" in text


def test_solution_and_derivatives_match_closed_forms():
    x = np.linalg.solve(A, B)
    for f in (_solve, numbax.jit(_solve)):
        np.testing.assert_allclose(f(A, B), x, rtol=1e-12)
    w = np.array([1.0, -2.0])
    u = np.linalg.solve(A.T, w)  # d<w, x>/db = A^-T w, d/dA = -u x^T
    for g in (numbax.grad(lambda m, b: _solve(m, b) @ w, (0, 1)),
              numbax.jit(numbax.grad(lambda m, b: _solve(m, b) @ w, (0, 1)))):
        g_a, g_b = g(A, B)
        np.testing.assert_allclose(g_b, u, rtol=1e-12)
        np.testing.assert_allclose(g_a, -np.outer(u, x), rtol=1e-12)
    da, db = np.array([[0.1, 0.0], [0.2, -0.3]]), np.array([0.5, 0.25])
    _, tangent = numbax.jvp(_solve, (A, B), (da, db))
    np.testing.assert_allclose(tangent, np.linalg.solve(A, db - da @ x), rtol=1e-12)


def test_vmap_over_the_matrix_and_the_right_hand_side():
    ms = np.stack([A, A + np.eye(2)])
    bs = np.stack([B, 2 * B])
    np.testing.assert_allclose(numbax.vmap(_solve)(ms, bs),
                               [np.linalg.solve(m, b) for m, b in zip(ms, bs)], rtol=1e-12)
    np.testing.assert_allclose(numbax.vmap(_solve, (None, 0))(A, bs),
                               [np.linalg.solve(A, b) for b in bs], rtol=1e-12)


def test_aux_outputs_come_after_the_solution():
    def solve(mv, r):
        x = jnp.linalg.solve(A, r)
        return x, jnp.linalg.norm(mv(x) - r)
    x, residual = lax.custom_linear_solve(lambda v: A @ v, B, solve, symmetric=False,
                                          has_aux=True)
    np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-12)
    assert float(residual) < 1e-12
