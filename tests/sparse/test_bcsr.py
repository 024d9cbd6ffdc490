"""sparse.BCSR (numbax/_src/sparse/bcsr.py): fromdense buffers against JAX 0.10.2's recorded
ones and scipy.sparse.csr_matrix, todense, products with dense arrays, jit, vmap over a batch
dimension, the BCOO round trip; bad inputs rejected by name."""
import numpy as np
import pytest
import scipy.sparse

import numbax
from numbax.experimental import sparse

RNG = np.random.default_rng(2)
X = (np.arange(12.).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0)).astype(np.float32)


def test_fromdense_buffers_match_jax():
    b = sparse.BCSR.fromdense(X, nse=5)
    assert repr(b) == "BCSR(float32[3, 4], nse=5)"
    np.testing.assert_array_equal(b.data, [3., 6., 9., 0., 0.])
    np.testing.assert_array_equal(b.indices, [3, 2, 1, 4, 4])
    np.testing.assert_array_equal(b.indptr, [0, 1, 2, 3])
    b = sparse.BCSR.fromdense(np.stack([X, X.T.reshape(3, 4)]), n_batch=1)
    assert repr(b) == "BCSR(float32[2, 3, 4], nse=3, n_batch=1)"
    np.testing.assert_array_equal(b.data, [[3., 6., 9.], [9., 6., 3.]])
    np.testing.assert_array_equal(b.indices, [[3, 2, 1], [1, 3, 1]])
    np.testing.assert_array_equal(b.indptr, [[0, 1, 2, 3], [0, 0, 2, 3]])


def test_against_scipy_csr():
    sp = scipy.sparse.random(7, 6, density=0.3, random_state=3, format="csr")
    b = sparse.BCSR.fromdense(sp.toarray())
    np.testing.assert_array_equal(b.indptr, sp.indptr)
    np.testing.assert_array_equal(b.indices, sp.indices)
    np.testing.assert_allclose(b.data, sp.data)
    np.testing.assert_allclose(b.todense(), sp.toarray())
    np.testing.assert_allclose(sparse.bcsr_todense(b), sp.toarray())
    v, w = RNG.standard_normal(6), RNG.standard_normal((6, 3))
    np.testing.assert_allclose(b @ v, sp @ v, rtol=1e-12)
    np.testing.assert_allclose(b @ w, sp @ w, rtol=1e-12)
    u = RNG.standard_normal(7)
    np.testing.assert_allclose(u @ b, sp.T @ u, rtol=1e-12)
    out = sparse.bcsr_dot_general(b, w, dimension_numbers=(([1], [0]), ([], [])))
    np.testing.assert_allclose(out, sp @ w, rtol=1e-12)


def test_bcoo_round_trip_and_eye():
    coo = sparse.BCOO.fromdense(X)
    b = sparse.BCSR.from_bcoo(coo)
    np.testing.assert_array_equal(b.to_bcoo().indices, coo.indices)
    np.testing.assert_array_equal(b.todense(), X)
    e = sparse.eye(3, k=1, sparse_format="bcsr")
    assert isinstance(e, sparse.BCSR)
    np.testing.assert_array_equal(e.todense(), np.eye(3, k=1))
    np.testing.assert_array_equal(sparse.empty((2, 3), sparse_format="bcsr").todense(),
                                  np.zeros((2, 3)))
    with pytest.raises(ValueError, match="sparse_format"):
        sparse.eye(3, sparse_format="csc")


def test_jit_and_vmap():
    xs = np.stack([X, X[::-1]])
    b = sparse.BCSR.fromdense(xs, n_batch=1)
    np.testing.assert_array_equal(numbax.jit(lambda b: b.todense())(b), xs)
    v = RNG.standard_normal((2, 4))
    out = numbax.vmap(lambda b, v: b @ v)(b, v)
    np.testing.assert_allclose(out, np.stack([xs[i] @ v[i] for i in range(2)]), rtol=1e-6)
    one = sparse.BCSR.fromdense(X)
    np.testing.assert_allclose(numbax.jit(lambda b, v: b @ v)(one, v[0]), X @ v[0], rtol=1e-6)
    m = numbax.jit(lambda x: sparse.BCSR.fromdense(x, nse=4))(X)
    np.testing.assert_array_equal(m.todense(), X)


def test_bad_arguments():
    with pytest.raises(ValueError, match="2 sparse"):
        sparse.BCSR.fromdense(np.ones(3))
    with pytest.raises(ValueError, match="indptr"):
        sparse.BCSR((np.ones(2), np.zeros(2, np.int32), np.zeros(3, np.int32)), shape=(3, 3))
    with pytest.raises(TypeError, match="args"):
        sparse.BCSR((np.ones(2), np.zeros(2, np.int32)), shape=(3, 3))
