"""logaddexp's derivatives (numpy/ufuncs._real_logaddexp, a custom_jvp as JAX's): the second
derivative where both operands are equal (softplus and log-sigmoid at 0, a Newton step from
zero weights) against the closed form and finite differences; infinities and NaNs as JAX
gives them."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.test_util import check_grads


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@pytest.mark.parametrize("a,z", [(0.0, 0.0), (1.5, 1.5), (-3.0, -3.0), (0.0, 2.0), (4.0, -1.0)])
def test_curvature_matches_the_closed_form(a, z):
    """d2/dz2 log(e^a + e^z) = s (1 - s), s = sigmoid(z - a): 1/4 where a == z."""
    f = lambda z: jnp.logaddexp(a, z)  # noqa: E731
    s = _sigmoid(z - a)
    for g in (numbax.grad(numbax.grad(f)), numbax.jit(numbax.grad(numbax.grad(f)))):
        np.testing.assert_allclose(float(g(np.float64(z))), s * (1 - s), rtol=1e-12)
    np.testing.assert_allclose(float(numbax.grad(f)(np.float64(z))), s, rtol=1e-12)


def test_second_derivatives_at_equal_operands_match_finite_differences():
    x = np.array([0.0, 2.0, -1.25, 7.0])
    check_grads(lambda u: jnp.logaddexp(u, x), (x,), order=2, modes=("fwd", "rev"))
    check_grads(lambda u: jnp.logaddexp2(u, u), (x,), order=2, modes=("fwd", "rev"))


def test_softplus_and_log_sigmoid_curvature_at_zero():
    assert float(numbax.grad(numbax.grad(numbax.nn.softplus))(0.0)) == pytest.approx(0.25)
    assert float(numbax.grad(numbax.grad(numbax.nn.log_sigmoid))(0.0)) == pytest.approx(-0.25)


def test_newton_from_zero_weights_converges():
    """L2 logistic regression by Newton steps from w = 0 (X @ w is exactly 0 there): the loss
    falls at every step, as numpy's own Newton iteration's does."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 5))
    y = (X @ rng.standard_normal(5) + 0.5 * rng.standard_normal(400) > 0).astype(np.float64)

    def loss(w):
        z = X @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 1e-3 * jnp.sum(w * w)

    w = np.zeros(5)
    want = np.zeros(5)
    for _ in range(4):
        hess_w, grad_w = numbax.hessian(loss)(w), numbax.grad(loss)(w)
        step = np.linalg.solve(np.asarray(hess_w), np.asarray(grad_w))
        w = w - step
        p = _sigmoid(X @ want)
        grad = X.T @ (p - y) / len(y) + 2e-3 * want
        hess = (X * (p * (1 - p))[:, None]).T @ X / len(y) + 2e-3 * np.eye(5)
        want = want - np.linalg.solve(hess, grad)
    np.testing.assert_allclose(w, want, rtol=1e-9, atol=1e-12)


def test_infinities_and_nans():
    inf = np.inf
    a = np.array([inf, -inf, inf, -inf, np.nan, 3.0])
    b = np.array([2.0, 2.0, inf, -inf, 1.0, -inf])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.asarray(jnp.logaddexp(a, b)), np.logaddexp(a, b))
    g = numbax.vmap(numbax.grad(lambda u, v: jnp.logaddexp(u, v), argnums=(0, 1)))(a, b)
    # JAX's rule: t1 exp(x1 - out) + t2 exp(x2 - out), with +inf read as 0
    np.testing.assert_array_equal(np.asarray(g[0]), [1.0, 0.0, 1.0, np.nan, np.nan, 1.0])
    np.testing.assert_allclose(np.asarray(g[1]), [np.exp(2.0), 1.0, 1.0, np.nan, np.nan, 0.0])
