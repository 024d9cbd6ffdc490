"""jnp's polynomial functions against numpy (and JAX's documented differences), under jit,
vmap and grad."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.numpy import linalg as jlinalg
from numbax.errors import ConcretizationTypeError, NumbaxValueError

P = np.array([3.0, 0.0, 2.0, 5.0])
Q = np.array([1.0, -2.0])
X = np.linspace(0.0, 1.0, 7)
Y = X ** 2 + 0.1 * np.sin(9 * X)


def _close(got, want, rtol=1e-13):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14)


def test_arithmetic_and_calculus_match_numpy():
    _close(jnp.polyadd(P, Q), np.polyadd(P, Q))
    _close(jnp.polysub(Q, P), np.polysub(Q, P))
    _close(jnp.polymul(P, Q), np.polymul(P, Q))
    _close(jnp.polymul(np.array([0, 1, 2]), np.array([1, 2, 3]), trim_leading_zeros=True),
           np.polymul([0, 1, 2], [1, 2, 3]))
    q, r = jnp.polydiv(P, Q)
    want_q, want_r = np.polydiv(P, Q)
    _close(q, want_q)
    _close(r[-len(want_r):], want_r)  # JAX keeps the remainder's leading zeros
    _close(jnp.polydiv(P, Q, trim_leading_zeros=True)[1], want_r)
    for m in (0, 1, 2, 3, 5):
        _close(jnp.polyder(P, m), np.polyder(P, m).astype(float))
        _close(jnp.polyint(P, m), np.polyint(P, m))
    _close(jnp.polyint(P, 2, k=np.array([1.0, 2.0])), np.polyint(P, 2, k=[1.0, 2.0]))
    _close(jnp.polyint(P, k=3.0), np.polyint(P, k=3.0))
    _close(jnp.polyval(P, X), np.polyval(P, X))
    _close(jnp.polyval(np.array([1, 2, 3]), 2), np.polyval([1, 2, 3], 2))
    _close(jnp.poly(np.array([1.0, 2.0, 3.0])), np.poly([1.0, 2.0, 3.0]))
    _close(jnp.poly(np.array([1j, -1j])), np.array([1, 0, 1], complex))  # JAX: stays complex


def test_vander_and_trim_zeros_match_numpy():
    v = np.array([1, 2, 3, -4])
    for n, inc in [(None, False), (3, True), (0, False), (6, False)]:
        got = jnp.vander(v, n, increasing=inc)
        want = np.vander(v, n, increasing=inc)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    z = np.array([0, 0, 1, 0, 2, 0])
    for trim in ("fb", "f", "b", "B"):
        np.testing.assert_array_equal(jnp.trim_zeros(z, trim), np.trim_zeros(z, trim))
    m = np.zeros((3, 4), int)
    m[1, 2] = 5
    for axis in (None, 0, 1, (0, 1)):
        np.testing.assert_array_equal(jnp.trim_zeros(m, axis=axis), np.trim_zeros(m, axis=axis))
    np.testing.assert_array_equal(jnp.trim_zeros(np.zeros(3)), np.trim_zeros(np.zeros(3)))


def test_polyfit_matches_numpy():
    _close(jnp.polyfit(X, Y, 2), np.polyfit(X, Y, 2), rtol=1e-10)
    for got, want in zip(jnp.polyfit(X, Y, 3, full=True), np.polyfit(X, Y, 3, full=True)):
        _close(got, want, rtol=1e-10)
    w = np.arange(7.0) + 1
    _close(jnp.polyfit(X, Y, 2, w=w), np.polyfit(X, Y, 2, w=w), rtol=1e-10)
    two = np.stack([Y, 2 * Y], 1)
    for cov in (True, "unscaled"):
        for got, want in zip(jnp.polyfit(X, two, 2, cov=cov), np.polyfit(X, two, 2, cov=cov)):
            _close(got, want, rtol=1e-10)


def _numpy_eigvals(a):
    return np.linalg.eigvals(np.asarray(a))


def test_roots_from_the_companion_matrix(monkeypatch):
    if not hasattr(jlinalg, "eigvals"):  # the linalg helper's jnp.linalg.eigvals
        monkeypatch.setattr(jlinalg, "eigvals", _numpy_eigvals, raising=False)
    p = np.array([0.0, 0.0, 1.0, -6.0, 11.0, -6.0])
    _close(np.sort_complex(np.asarray(jnp.roots(p))), np.sort_complex(np.roots(p)))
    # JAX: leading zeros rotate to the end (multiplying by x**2) and the last two eigenvalues
    # become NaN, so the rest are roots of x**2 * p(x).
    got = np.asarray(jnp.roots(p, strip_zeros=False))
    assert got.shape == (5,) and np.isnan(got[-2:]).all()
    assert np.allclose(np.polyval(np.roll(p, -2), got[:-2]), 0, atol=1e-9)
    _close(jnp.roots(np.array([2.0])), np.roots([2.0]).astype(complex))
    _close(np.sort_complex(np.asarray(jnp.roots(np.array([1.0, 0.0, 1.0])))),
           np.sort_complex(np.roots([1.0, 0.0, 1.0])))


def test_polynomials_under_transforms():
    f = numbax.jit(lambda p, x: jnp.polyval(jnp.polyder(jnp.polymul(p, p)), x))
    _close(f(P, X), np.polyval(np.polyder(np.polymul(P, P)), X))
    g = numbax.grad(lambda p: jnp.polyval(p, 2.0))(P)
    _close(g, 2.0 ** np.arange(3, -1, -1))
    fits = numbax.vmap(lambda y: jnp.polyfit(X, y, 1))(np.stack([Y, 3 * Y]))
    _close(fits, np.stack([np.polyfit(X, Y, 1), np.polyfit(X, 3 * Y, 1)]), rtol=1e-10)


def test_polyval_of_coefficient_columns_broadcasts_as_numpy():
    """A 2-d p holds one polynomial per column (polyfit's coefficients for a 2-d y): each is
    evaluated at x broadcast against the columns, as numpy's and JAX's polyval do."""
    x = np.linspace(-1.0, 2.0, 7)
    y = np.stack([np.cos(x), x ** 3 - x, np.exp(x)], 1)
    coeffs = np.asarray(jnp.polyfit(x, y, 3))
    _close(coeffs, np.polyfit(x, y, 3), rtol=1e-9)
    for at in (x[:, None], x[:, None, None] * np.ones((1, 2, 1)), 0.5):
        _close(jnp.polyval(coeffs, at), np.polyval(coeffs, at))
        _close(numbax.jit(jnp.polyval)(coeffs, at), np.polyval(coeffs, at))
    assert jnp.polyval(np.ones((4, 3), np.float32), np.float32(2.0)).dtype == np.float32


def test_polynomial_bad_inputs():
    with pytest.raises(NumbaxValueError, match="could not be broadcast"):
        jnp.polyval(np.ones((2, 3)), np.ones(2))
    with pytest.raises(NumbaxValueError, match="m is -1"):
        jnp.polyder(P, -1)
    with pytest.raises(NumbaxValueError, match="k has shape"):
        jnp.polyint(P, 2, k=np.ones(3))
    with pytest.raises(NumbaxValueError, match="v is empty"):
        jnp.polydiv(P, np.zeros(0))
    with pytest.raises(NumbaxValueError, match="trim is 'x'"):
        jnp.trim_zeros(P, "x")
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(jnp.trim_zeros)(P)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(jnp.roots)(P)
    with pytest.raises(NumbaxValueError, match="x has shape"):
        jnp.polyfit(np.ones((2, 2)), np.ones(2), 1)
    with pytest.raises(NumbaxValueError, match="y has shape"):
        jnp.polyfit(X, np.ones(3), 1)
    with pytest.raises(NumbaxValueError, match="N is -1"):
        jnp.vander(X, -1)
    with pytest.raises(NumbaxValueError, match="square matrix"):
        jnp.poly(np.ones((2, 3)))
