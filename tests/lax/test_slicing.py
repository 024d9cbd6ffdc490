"""JAX's dimension-number gather and scatter (lax/slicing.py): transformations against
loops and numpy, and bad input. Values against JAX are in test_jax_reference.py."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError

ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
ONE = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
X = np.arange(12.0).reshape(3, 4)


def test_gather_under_vmap_and_jit_matches_numpy_rows():
    idx = np.array([[[2], [0]], [[1], [1]]])
    got = numbax.vmap(lambda i: lax.gather(X, i, ROWS, (1, 4)))(idx)
    np.testing.assert_array_equal(got, X[idx[..., 0]])
    got = numbax.jit(lambda x, i: lax.gather(x, i, ROWS, (1, 4), mode="clip"))(X, idx[0] + 5)
    np.testing.assert_array_equal(got, X[[2, 2]])


def test_scatter_family_under_vmap_and_grad():
    idx = np.array([[1], [1], [4]])
    upd = np.array([1.0, 2.0, 3.0])
    got = numbax.vmap(lambda v: lax.scatter_sub(v, idx, upd, ONE))(np.stack([np.zeros(5),
                                                                            np.ones(5)]))
    np.testing.assert_array_equal(got, [[0, -3, 0, 0, -3], [1, -2, 1, 1, -2]])
    g = numbax.grad(lambda u: lax.scatter_mul(np.arange(1.0, 6.0), idx[1:], u, ONE,
                                              unique_indices=True).sum())(upd[1:])
    np.testing.assert_allclose(g, [2.0, 5.0])


def test_scatter_apply_with_traced_indices_uses_a_loop():
    f = numbax.jit(lambda i: lax.scatter_apply(np.arange(5.0), i, lambda v: v * 2 + 1, ONE,
                                               update_shape=(3,)))
    np.testing.assert_allclose(f(np.array([[1], [1], [3]])), [0, 7, 2, 7, 4])


def test_bad_gather_and_scatter_input():
    with pytest.raises(NumbaxTypeError, match="GatherDimensionNumbers"):
        lax.gather(X, np.array([[1]]), ((1,), (0,), (0,)), (1, 4))
    with pytest.raises(NumbaxTypeError, match="integer"):
        lax.gather(X, np.array([[1.0]]), ROWS, (1, 4))
    with pytest.raises(NumbaxTypeError, match="index vector"):
        lax.gather(X, np.array([[1, 2]]), ROWS, (1, 4))
    with pytest.raises(NumbaxTypeError, match="slice_sizes"):
        lax.gather(X, np.array([[1]]), ROWS, (1, 5))
    with pytest.raises(NotImplementedError, match="ONE_HOT"):
        lax.gather(X, np.array([[1]]), ROWS, (1, 4), mode=lax.GatherScatterMode.ONE_HOT)
    with pytest.raises(NumbaxTypeError, match="ScatterDimensionNumbers"):
        lax.scatter(np.zeros(3), np.array([[1]]), np.ones(1), ((), (0,), (0,)))
    with pytest.raises(NumbaxTypeError, match="update_window_dims"):
        lax.scatter(np.zeros(3), np.array([[1]]), np.ones(1), lax.ScatterDimensionNumbers(
            (0,), (0,), (0,)))
    with pytest.raises(TypeError, match="index arrays"):
        lax.index_take(X, (np.array([0]),), (0, 1))
