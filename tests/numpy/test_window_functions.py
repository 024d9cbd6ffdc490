"""jnp's window functions against numpy, and i0 (with its derivative i1) against scipy's
Cephes implementations (within 1 ulp of mpmath at these points)."""
import numpy as np
import pytest
import scipy.special as sp

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError

X = np.concatenate([np.linspace(0.0, 60.0, 241), [19.999, 20.0, 20.001, 100.0, 700.0]])


def _bessel(nu, x):
    return (sp.i0 if nu == 0 else sp.i1)(np.asarray(x, np.float64))


def test_i0_and_its_derivative_match_scipy():
    for sign in (1, -1):
        np.testing.assert_allclose(jnp.i0(sign * X), _bessel(0, X), rtol=4e-15)
    grads = numbax.vmap(numbax.grad(jnp.i0))(np.concatenate([X[1:], -X[1:]]))
    i1 = _bessel(1, X[1:])
    np.testing.assert_allclose(grads, np.concatenate([i1, -i1]), rtol=4e-15)
    x32 = np.float32([0.5, 3.0, 15.0, 25.0, 80.0])
    got = jnp.i0(x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _bessel(0, x32.astype(np.float64)), rtol=2e-6)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(jnp.i0(np.array([np.inf, np.nan])),
                                      np.i0([np.inf, np.nan]))
    np.testing.assert_allclose(jnp.i0(np.arange(3)), np.i0(np.arange(3)), rtol=1e-15)


@pytest.mark.parametrize("M", [-1, 0, 1, 2, 5, 12, 51])
def test_windows_match_numpy(M):
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        got = getattr(jnp, name)(M)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, getattr(np, name)(M), rtol=1e-14, atol=1e-15)
    for beta in (0.0, 5.0, 14.0):
        np.testing.assert_allclose(jnp.kaiser(M, beta), np.kaiser(M, beta), rtol=1e-13)


def test_kaiser_traces_in_beta():
    f = numbax.jit(lambda b: jnp.kaiser(6, b))
    np.testing.assert_allclose(f(8.6), np.kaiser(6, 8.6), rtol=1e-13)
    eps = 1e-6
    fd = (np.kaiser(6, 3.0 + eps) - np.kaiser(6, 3.0 - eps)) / (2 * eps)
    jac = numbax.jacfwd(lambda b: jnp.kaiser(6, b))(3.0)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-9)


def test_window_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="M is 4.5 of type float"):
        jnp.hanning(4.5)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(jnp.bartlett)(4)
    with pytest.raises(NumbaxTypeError, match="not well defined for complex"):
        jnp.i0(np.array([1j]))
