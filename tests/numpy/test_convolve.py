"""numbax.numpy.convolve / correlate vs numpy in every mode, dtypes, gradients, jit, bad input."""
import doctest

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.numpy import convolve as convolve_module
from numbax.errors import NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(9)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("sizes", [(7, 3), (4, 4), (3, 8), (6, 1), (5, 2)])
def test_matches_numpy(name, mode, sizes):
    a, v = RNG.normal(size=sizes[0]), RNG.normal(size=sizes[1])
    got = getattr(jnp, name)(a, v, mode)
    np.testing.assert_allclose(np.asarray(got), getattr(np, name)(a, v, mode), rtol=1e-12,
                               atol=1e-12)


def test_complex_and_integer_inputs():
    a = RNG.normal(size=6) + 1j * RNG.normal(size=6)
    v = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    for name in ("convolve", "correlate"):
        for mode in ("full", "same", "valid"):
            np.testing.assert_allclose(np.asarray(getattr(jnp, name)(a, v, mode)),
                                       getattr(np, name)(a, v, mode), rtol=1e-12)
    ai, vi = np.arange(5), np.array([1, -2, 1])
    got = jnp.convolve(ai, vi)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), np.convolve(ai, vi))
    exact = jnp.convolve(ai, vi, preferred_element_type=np.int64)
    assert exact.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(exact), np.convolve(ai, vi))


def test_gradients_and_jit():
    a, v = RNG.normal(size=7), RNG.normal(size=3)
    check_grads(lambda x, y: jnp.convolve(x, y, "same"), (a, v), order=2)
    check_grads(lambda x, y: jnp.correlate(x, y, "full"), (v, a), order=2)
    f = numbax.jit(lambda x, y: jnp.correlate(x, y), static_argnums=())
    np.testing.assert_allclose(np.asarray(f(a, v)), np.correlate(a, v), rtol=1e-12)


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match="1-dimensional"):
        jnp.convolve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(NumbaxValueError, match="empty"):
        jnp.correlate(np.ones(3), np.ones(0))
    with pytest.raises(NumbaxValueError, match="mode"):
        jnp.convolve(np.ones(3), np.ones(2), "circular")


def test_doctests():
    result = doctest.testmod(convolve_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
