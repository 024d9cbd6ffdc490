"""Leftover gaps against JAX 0.10.2: n-d polyadd/polysub, size with a tuple axis,
Array.compress, unordered broadcast_dimensions, einsum sublists, weighted nanquantile and
callable pad modes. Expected values are JAX's (as literals) or numpy's."""
import numpy as np
import pytest

import numbax as jax
import numbax.numpy as jnp
from numbax import lax


def test_polyadd_polysub_2d():
    x3 = jnp.array([[2, 3, 1]])
    x4 = jnp.array([[5, 7, 3], [8, 2, 6]])
    np.testing.assert_array_equal(jnp.polyadd(x3, x4), [[5, 7, 3], [10, 5, 7]])
    np.testing.assert_array_equal(jnp.polysub(x3, x4), [[-5, -7, -3], [-6, 1, -5]])
    np.testing.assert_array_equal(jnp.polysub(x4, jnp.array([2])), [[5, 7, 3], [6, 0, 4]])
    np.testing.assert_array_equal(jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0])),
                                  [1, 1, 2])
    with pytest.raises(ValueError):  # JAX: cannot broadcast (2, 3) into the (2,) tail
        jnp.polyadd(jnp.array([1, 3, 5]), x4)


def test_size_tuple_axis():
    a = jnp.ones((2, 3))
    assert jnp.size(a, axis=(1,)) == 3
    assert jnp.size(a, axis=(0, 1)) == 6
    assert jnp.size(a, 1) == 3
    assert jnp.size(a) == 6


def test_array_compress_method():
    a = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(a.compress(jnp.array([True, False, True]), axis=1),
                                  [[0.0, 2.0], [3.0, 5.0]])
    np.testing.assert_array_equal(a.compress(jnp.array([False, True])), [1.0])
    out = jax.jit(lambda x: x.compress(jnp.array([True, False]), axis=0, size=2))(a)
    np.testing.assert_array_equal(out, [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])


def test_broadcast_in_dim_unordered_dims():
    a = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(lax.broadcast_in_dim(a, (3, 2), (1, 0)),
                                  [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]])
    expected = np.broadcast_to(np.arange(6.0).reshape(2, 3).T[:, None, :], (3, 4, 2))
    out = jax.jit(lambda x: lax.broadcast_in_dim(x, (3, 4, 2), (2, 0)))(a)
    np.testing.assert_array_equal(out, expected)
    w = jnp.arange(24.0).reshape(3, 4, 2)
    g = jax.grad(lambda x: (lax.broadcast_in_dim(x, (3, 4, 2), (2, 0)) * w).sum())(a)
    np.testing.assert_array_equal(g, [[12.0, 44.0, 76.0], [16.0, 48.0, 80.0]])
    with pytest.raises(TypeError):  # duplicates stay an error, as in JAX
        lax.broadcast_in_dim(jnp.ones((3, 3)), (3, 3), (1, 1))


def test_einsum_sublist_form():
    a = jnp.arange(6.0).reshape(2, 3)
    b = jnp.ones((3, 2))
    expected = [[3.0, 3.0], [12.0, 12.0]]
    np.testing.assert_allclose(jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), expected)
    np.testing.assert_allclose(jnp.einsum(a, [0, 1], b, [1, 2]), expected)
    np.testing.assert_allclose(jnp.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]),
                               expected)


def test_nanquantile_weights():
    x = jnp.array([1.0, np.nan, 3.0, 4.0, 2.0])
    w = jnp.array([1.0, 2, 3, 1, 2])
    assert float(jnp.nanquantile(x, 0.5, method="inverted_cdf", weights=w)) == 3.0
    np.testing.assert_array_equal(
        jnp.nanpercentile(x, jnp.array([30.0, 70.0]), method="inverted_cdf", weights=w),
        [2.0, 3.0])
    x2 = jnp.array([[np.nan, np.nan, np.nan], [4.0, 2.0, np.nan]])
    w2 = jnp.array([[1.0, 2, 3], [1, 2, 5]])
    out = jnp.nanquantile(x2, jnp.array([0.0, 0.4, 1.0]), axis=1, method="inverted_cdf",
                          weights=w2)
    np.testing.assert_array_equal(out, [[np.nan, 2.0], [np.nan, 2.0], [np.nan, 4.0]])
    x3 = jnp.array([[1.0, np.nan, 3.0], [4.0, 2.0, np.nan]])
    np.testing.assert_array_equal(
        jnp.nanquantile(x3, 0.4, axis=1, method="inverted_cdf", weights=w2),
        np.nanquantile(np.asarray(x3), 0.4, axis=1, method="inverted_cdf",
                       weights=np.asarray(w2)))
    with pytest.raises(ValueError):  # JAX raises NotImplementedError here
        jnp.nanquantile(x, 0.5, weights=w)


def _pad_with(vector, pad_width, iaxis, kwargs):
    value = kwargs.get("val", 9)
    vector = vector.at[:pad_width[0]].set(value)
    return vector.at[vector.shape[0] - pad_width[1]:].set(value)


def test_pad_callable_mode_with_kwargs():
    a = jnp.arange(6.0).reshape(2, 3)
    out = jnp.pad(a, (1, 2), _pad_with, val=7)
    expected = np.full((5, 6), 7.0)
    expected[1:3, 1:4] = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(out, expected)
    out = jnp.pad(a, (1, 2), _pad_with)
    np.testing.assert_array_equal(out, np.where(expected == 7.0, 9.0, expected))
