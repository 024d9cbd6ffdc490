"""numbax.numpy.pad (numpy/padding.py) against numpy: reflect_type='odd' over pads wider than
the array, and keyword arguments a mode does not take."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxValueError

M = np.array([[1.0, 5.0, 2.0, 8.0], [3.0, -1.0, 4.0, 0.0], [2.0, 2.0, 7.0, 1.0]])


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("width", [(2, 1), (0, 3), (6, 7), (13, 21)])
@pytest.mark.parametrize("x", [np.arange(1.0, 6.0), np.array([3.0, -1.0]), np.array([4.0]),
                               np.array([1, 7, 2])], ids=["5", "2", "1", "int"])
def test_odd_reflection_matches_numpy(mode, width, x):
    want = np.pad(x, width, mode=mode, reflect_type="odd")
    got = jnp.pad(x, width, mode=mode, reflect_type="odd")
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_odd_reflection_2d_under_jit_and_grad(mode):
    widths = ((2, 5), (7, 3))
    want = np.pad(M, widths, mode=mode, reflect_type="odd")
    got = numbax.jit(lambda a: jnp.pad(a, widths, mode=mode, reflect_type="odd"))(M)
    np.testing.assert_array_equal(got, want)
    # pad is affine in the array: the gradient of <pad(a), w> is its transpose applied to w.
    w = np.random.default_rng(0).normal(size=want.shape)
    g = numbax.grad(lambda a: jnp.sum(jnp.pad(a, widths, mode=mode, reflect_type="odd") * w))(M)
    basis = np.eye(M.size).reshape(M.size, *M.shape)
    lin = [np.sum((np.pad(e, widths, mode=mode, reflect_type="odd")
                   - np.pad(0 * e, widths, mode=mode, reflect_type="odd")) * w) for e in basis]
    np.testing.assert_allclose(np.asarray(g).ravel(), lin, rtol=1e-12, atol=1e-12)


def test_keywords_a_mode_does_not_take_are_refused():
    with pytest.raises(NumbaxValueError, match="reflect_type"):
        jnp.pad(M, 1, mode="edge", reflect_type="odd")
    with pytest.raises(NumbaxValueError, match="end_values"):
        jnp.pad(M, 1, end_values=3)
    with pytest.raises(NumbaxValueError, match="reflect_type has 'bad'"):
        jnp.pad(M, 1, mode="reflect", reflect_type="bad")
