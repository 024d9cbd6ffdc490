"""numbax/_src/lax/special.py: the incomplete-gamma derivatives against mpmath and implicit
differentiation, and the primitives' bad input."""
import mpmath as mp
import numpy as np
import pytest
import scipy.special as sp

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError


def test_igamma_grad_a_matches_mpmath():
    mp.mp.dps = 30
    a = np.array([0.5, 2.0, 10.0, 3.0, 0.1, 1e-300, 2.0, 200.0, 1000.0, 1.0])
    x = np.array([0.3, 3.0, 12.0, 20.0, 5.0, 1.0, 1.0, 150.0, 1001.0, 2.0])
    got = np.asarray(lax.igamma_grad_a(a, x))
    for ai, xi, g in zip(a, x, got):
        ref = float(mp.diff(lambda t, xi=xi: mp.gammainc(t, 0, xi, regularized=True), ai))
        assert g == pytest.approx(ref, rel=1e-11), (ai, xi)
    edges = np.asarray(lax.igamma_grad_a(np.array([0.0, 1.0, 1.0, -1.0]),
                                         np.array([1.0, 0.0, np.inf, 1.0])))
    np.testing.assert_array_equal(edges, [np.nan, 0.0, 0.0, np.nan])


def test_random_gamma_grad_is_the_implicit_derivative():
    # x(a) = P^-1(a, u) for fixed u: dx/da = -(dP/da) / (dP/dx)
    a, u, eps = np.array([0.4, 2.0, 9.0]), 0.37, 1e-6
    x = sp.gammaincinv(a, u)
    fd = (sp.gammaincinv(a + eps, u) - sp.gammaincinv(a - eps, u)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), fd, rtol=1e-6)


def test_igamma_jvps_and_betainc():
    g = numbax.grad(lax.igamma, argnums=(0, 1))(2.5, 1.5)
    assert float(g[0]) == pytest.approx(float(lax.igamma_grad_a(2.5, 1.5)))
    assert float(g[1]) == pytest.approx(1.5 ** 1.5 * np.exp(-1.5) / sp.gamma(2.5))
    assert float(numbax.grad(lax.igammac)(2.5, 1.5)) == pytest.approx(-float(g[0]))
    assert float(numbax.grad(lax.betainc, argnums=2)(2.0, 3.0, 0.4)) == pytest.approx(
        12 * 0.4 * 0.6 ** 2)
    with pytest.raises(ValueError, match="Betainc gradient"):
        numbax.grad(lax.betainc)(2.0, 3.0, 0.4)


def test_zeta_derivatives():
    mp.mp.dps = 30
    g = numbax.grad(lax.zeta, argnums=(0, 1))(2.5, 1.5)
    assert float(g[0]) == pytest.approx(float(mp.diff(lambda s: mp.zeta(s, 1.5), 2.5)),
                                        rel=1e-12)
    assert float(g[1]) == pytest.approx(-2.5 * sp.zeta(3.5, 1.5), rel=1e-12)


def test_primitives_reject_bad_dtypes():
    with pytest.raises(NumbaxTypeError, match="igamma: operands have different dtypes"):
        lax.igamma(np.ones(2, np.float32), np.ones(2))
    with pytest.raises(NumbaxTypeError, match="bessel_i0e: argument 0 has dtype int64"):
        lax.bessel_i0e(np.array([1, 2]))
    with pytest.raises(NumbaxTypeError, match="zeta: operands have incompatible shapes"):
        lax.zeta(np.ones(2), np.ones(3))
    with pytest.raises(NumbaxTypeError, match="regularized_incomplete_beta"):
        lax.betainc(np.ones(2), np.ones(2), np.array([1, 0]))
    for f in (lax.igammac, lax.igamma_grad_a, lax.random_gamma_grad, lax.bessel_i1e):
        with pytest.raises(TypeError):
            f(np.array(["a"]), np.array(["b"])) if f is not lax.bessel_i1e else f(
                np.array(["a"]))


# JAX 0.10.2's jax.scipy.special.zeta off the series' domain (recorded 2026-11-30), where
# scipy's differs: poles at integer q <= 0, x < 1, non-integer x with q <= 0, infinities.
ZETA_EDGES_JAX = [
    ((0.0, 0.0), np.inf), ((0.0, -1.0), np.inf), ((0.0, 1.0), np.nan), ((-1.0, 0.0), np.nan),
    ((0.5, 0.0), np.nan), ((1.5, 0.0), np.nan), ((2.0, -2.0), np.inf), ((0.0, -2.5), np.nan),
    ((1.0, 0.0), np.inf), ((3.0, 0.0), np.nan), ((3.0, -1.0), np.nan), ((1.0, 2.0), np.inf),
    ((-2.0, -1.0), np.inf), ((2.0, -1.5), 9.379247), ((4.0, -2.5), 32.457977),
    ((np.inf, 1.0), np.nan), ((2.0, np.inf), np.nan), ((2.0, -np.inf), np.inf),
    ((1.0, np.inf), np.inf), ((np.nan, 1.0), np.nan)]


@pytest.mark.parametrize("jit", [False, True])
def test_zeta_off_its_domain_gives_jaxs_values(jit):
    x = np.array([p[0] for p, _ in ZETA_EDGES_JAX])
    q = np.array([p[1] for p, _ in ZETA_EDGES_JAX])
    want = np.array([v for _, v in ZETA_EDGES_JAX])
    f = numbax.jit(lax.zeta) if jit else lax.zeta
    for dtype in (np.float32, np.float64):
        got = np.asarray(f(x.astype(dtype), q.astype(dtype)))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-6)
