"""sparse.BCOO (numbax/_src/sparse/bcoo.py, bcoo_ops.py): layouts, fromdense/todense against
numpy, JAX's recorded buffers for fromdense, sum_duplicates, sort_indices, reduce_sum, eye,
empty and random_bcoo; jit == eager, vmap over batch dims == a loop; bad inputs rejected by
name with JAX's error classes."""
import numpy as np
import pytest
import scipy.sparse

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError
from numbax.experimental import sparse

RNG = np.random.default_rng(0)
M = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)
LAYOUTS = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)]


def _rand(shape, density=0.4):
    x = RNG.standard_normal(shape).astype(np.float32)
    return x * (RNG.random(shape) < density)


def test_docs_example_buffers_and_attributes():
    # JAX 0.10.2's jax.experimental.sparse module docstring
    m = sparse.BCOO.fromdense(M)
    assert repr(m) == "BCOO(float32[3, 4], nse=4)"
    np.testing.assert_array_equal(m.data, [1., 2., 3., 4.])
    np.testing.assert_array_equal(m.indices, [[0, 1], [0, 3], [1, 0], [2, 2]])
    assert m.indices.dtype == np.int32 and m.dtype == np.float32
    assert (m.ndim, m.shape, m.nse, m.n_batch, m.n_sparse, m.n_dense) == (2, (3, 4), 4, 0, 2, 0)
    np.testing.assert_array_equal(m.todense(), M)
    y = np.array([3., 6., 5.], np.float32)
    np.testing.assert_array_equal(m.T @ y, [18., 3., 20., 6.])
    np.testing.assert_array_equal(numbax.jit(numbax.grad(lambda y: (m.T @ y).sum()))(y),
                                  [3., 3., 4.])


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_round_trip(n_batch, n_dense):
    x = _rand((2, 3, 4))
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    assert (m.n_batch, m.n_dense, m.shape) == (n_batch, n_dense, x.shape)
    np.testing.assert_array_equal(m.todense(), x)
    np.testing.assert_array_equal(sparse.bcoo_todense(m), x)
    padded = sparse.bcoo_fromdense(x, nse=m.nse + 2, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(padded.todense(), x)


def test_fromdense_layout_buffers_match_jax():
    # recorded from JAX 0.10.2: padding is data 0 at the index `shape` (out of bounds)
    m = sparse.BCOO.fromdense(M, n_batch=1)
    assert repr(m) == "BCOO(float32[3, 4], nse=2, n_batch=1)"
    np.testing.assert_array_equal(m.data, [[1., 2.], [3., 0.], [4., 0.]])
    np.testing.assert_array_equal(m.indices, [[[1], [3]], [[0], [4]], [[2], [4]]])
    assert repr(sparse.BCOO.fromdense(M, n_dense=1)) == "BCOO(float32[3, 4], nse=3, n_dense=1)"
    x = (np.arange(12.).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0))
    np.testing.assert_array_equal(sparse.BCOO.fromdense(x, nse=6).indices,
                                  [[0, 3], [1, 2], [2, 1], [3, 4], [3, 4], [3, 4]])


def test_fromdense_under_jit_needs_a_static_nse():
    with pytest.raises(ConcretizationTypeError, match="nse argument of bcoo_fromdense"):
        numbax.jit(lambda x: sparse.BCOO.fromdense(x))(M)
    m = numbax.jit(lambda x: sparse.BCOO.fromdense(x, nse=5))(M)
    assert m.nse == 5
    np.testing.assert_array_equal(m.todense(), M)
    # under grad the value is concrete, so nse may be left out (as in JAX)
    g = numbax.grad(lambda x: (sparse.BCOO.fromdense(x) @ jnp.arange(4.)).sum())(M)
    np.testing.assert_array_equal(g, (M != 0) * np.arange(4.))


def test_bad_arguments_raise_jax_classes():
    with pytest.raises(ValueError, match="n_batch"):
        sparse.BCOO.fromdense(M, n_batch=2, n_dense=1)
    with pytest.raises(TypeError, match="nse"):
        sparse.BCOO.fromdense(M, nse=2.5)
    with pytest.raises(ValueError, match="nse"):
        sparse.BCOO((np.ones(3), np.zeros((4, 2), np.int32)), shape=(3, 4))
    with pytest.raises(TypeError, match="indices"):
        sparse.BCOO((np.ones(3), np.zeros((3, 2), np.float32)), shape=(3, 4))
    with pytest.raises(TypeError, match="args"):
        sparse.BCOO(np.ones(3), shape=(3,))
    with pytest.raises(TypeError, match="mat"):
        sparse.bcoo_todense(M)
    m = sparse.BCOO.fromdense(M)
    with pytest.raises(ValueError, match="axes"):
        sparse.bcoo_reduce_sum(m, axes=(2,))
    with pytest.raises(TypeError, match="new_sizes"):
        m.reshape(5, 3)
    with pytest.raises(ValueError, match="v has shape"):
        sparse.bcoo_multiply_dense(m, np.ones(3))
    with pytest.raises(NotImplementedError, match="permutation"):
        sparse.bcoo_transpose(sparse.BCOO.fromdense(M, n_batch=1), permutation=(1, 0))


def test_sum_duplicates_and_sort_indices_match_jax():
    data = np.array([1., 2., 3., 4., 0.], np.float32)
    idx = np.array([[2, 1], [0, 3], [2, 1], [0, 0], [3, 4]], np.int32)
    m = sparse.BCOO((data, idx), shape=(3, 4))
    expected = {  # JAX 0.10.2's outputs
        None: ([4., 2., 4.], [[0, 0], [0, 3], [2, 1]]),
        5: ([4., 2., 4., 0., 0.], [[0, 0], [0, 3], [2, 1], [3, 4], [3, 4]]),
        2: ([4., 2.], [[0, 0], [0, 3]]),
    }
    for nse, (d, i) in expected.items():
        s = sparse.bcoo_sum_duplicates(m, nse=nse)
        np.testing.assert_array_equal(s.data, d)
        np.testing.assert_array_equal(s.indices, i)
        assert s.indices_sorted and s.unique_indices
    s = numbax.jit(lambda m: m.sum_duplicates(nse=2))(m)
    np.testing.assert_array_equal(s.indices, [[0, 0], [0, 3]])
    with pytest.raises(ValueError, match="nse must be specified"):
        numbax.jit(lambda m: m.sum_duplicates())(m)
    s = m.sort_indices()
    np.testing.assert_array_equal(s.data, [4., 2., 1., 3., 0.])
    np.testing.assert_array_equal(s.indices, [[0, 0], [0, 3], [2, 1], [2, 1], [3, 4]])
    zeros = sparse.BCOO((np.array([1., 0., 3.]), np.array([[2, 1], [0, 3], [2, 1]])),
                        shape=(3, 4))
    for kwargs, (d, i) in [({}, ([4.], [[2, 1]])),
                           ({"nse": 3}, ([4., 0., 0.], [[2, 1], [3, 4], [3, 4]])),
                           ({"remove_zeros": False}, ([0., 4.], [[0, 3], [2, 1]]))]:
        s = zeros.sum_duplicates(**kwargs)
        np.testing.assert_array_equal(s.data, d)
        np.testing.assert_array_equal(s.indices, i)


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_batched_sum_duplicates_against_todense(n_batch, n_dense):
    x = _rand((2, 3, 4))
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    doubled = sparse.BCOO((jnp.concatenate([m.data, m.data], axis=n_batch),
                           jnp.concatenate([m.indices, m.indices], axis=n_batch)), shape=x.shape)
    s = doubled.sum_duplicates(nse=m.nse)
    np.testing.assert_allclose(s.todense(), 2 * x)
    np.testing.assert_array_equal(s.indices, m.indices)
    np.testing.assert_allclose(doubled.sort_indices().todense(), 2 * x)


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (0, 1, 2)])
def test_reduce_sum_against_numpy(n_batch, n_dense, axes):
    x = _rand((2, 3, 4))
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    out = sparse.bcoo_reduce_sum(m, axes=axes)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_allclose(out.todense(), x.sum(axis=axes), rtol=1e-6)


def test_reduce_sum_structure_matches_jax():
    data = np.array([1., 2., 3., 4., 0.], np.float32)
    idx = np.array([[2, 1], [0, 3], [2, 1], [0, 0], [3, 4]], np.int32)
    r = sparse.bcoo_reduce_sum(sparse.BCOO((data, idx), shape=(3, 4)), axes=(1,))
    assert repr(r) == "BCOO(float32[3], nse=5)"
    np.testing.assert_array_equal(r.indices, [[2], [0], [2], [0], [3]])
    np.testing.assert_array_equal(r.todense(), [6., 0., 4.])
    mb = sparse.BCOO.fromdense(np.array([[[1., 0], [0, 2]], [[0, 3.], [0, 0]]]), n_batch=1)
    s0 = mb.sum(0)
    assert (s0.nse, s0.n_batch) == (4, 0)
    np.testing.assert_array_equal(s0.indices, [[0, 0], [1, 1], [0, 1], [2, 2]])
    s1 = mb.sum(1)
    assert (s1.nse, s1.n_batch) == (2, 1)
    np.testing.assert_array_equal(s1.indices, [[[0], [1]], [[1], [2]]])
    full = sparse.BCOO.fromdense(M).sum()
    assert not isinstance(full, sparse.BCOO) and float(full) == 10.0


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1), (2, 0)])
def test_transpose_against_numpy(n_batch, n_dense):
    x = _rand((2, 3, 4))
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    groups = [list(range(n_batch)), list(range(n_batch, 3 - n_dense)),
              list(range(3 - n_dense, 3))]
    perm = tuple(d for g in groups for d in g[::-1])
    out = sparse.bcoo_transpose(m, permutation=perm)
    np.testing.assert_array_equal(out.todense(), x.transpose(perm))
    assert out.shape == x.transpose(perm).shape
    if n_batch == 0 and n_dense == 0:
        np.testing.assert_array_equal(m.T.todense(), x.T)
        assert not m.T.indices_sorted  # as JAX


def test_reshape_against_numpy_and_jax():
    x = np.arange(12.).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0)
    m = sparse.BCOO.fromdense(x)
    r = m.reshape(4, 3)
    np.testing.assert_array_equal(r.indices, [[1, 0], [2, 0], [3, 0]])  # JAX's
    np.testing.assert_array_equal(r.todense(), x.reshape(4, 3))
    np.testing.assert_array_equal(m.reshape(12).indices, [[3], [6], [9]])
    np.testing.assert_array_equal(m.reshape((2, -1)).todense(), x.reshape(2, 6))
    y = _rand((2, 3, 4, 2))
    mb = sparse.BCOO.fromdense(y, n_batch=1, n_dense=1)
    np.testing.assert_array_equal(mb.reshape(2, 12, 2).todense(), y.reshape(2, 12, 2))
    padded = sparse.BCOO.fromdense(x, nse=5).reshape(6, 2)
    np.testing.assert_array_equal(padded.todense(), x.reshape(6, 2))


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
def test_multiply_dense_and_scalar(n_batch, n_dense):
    x = _rand((2, 3, 4))
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    for v in [RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4),
              RNG.standard_normal((3, 1))]:
        v = v.astype(np.float32)
        prod = m * v
        assert isinstance(prod, sparse.BCOO) and prod.nse == m.nse
        np.testing.assert_allclose(prod.todense(), x * v, rtol=1e-6)
        np.testing.assert_allclose((v * m).todense(), x * v, rtol=1e-6)
        data = sparse.bcoo_multiply_dense(m, v)  # JAX returns the product's data
        np.testing.assert_allclose(data, prod.data, rtol=1e-6)
    np.testing.assert_allclose((m * 2.5).todense(), x * 2.5, rtol=1e-6)
    np.testing.assert_allclose((m / 2.0).todense(), x / 2, rtol=1e-6)


def test_elementwise_operators():
    m = sparse.BCOO.fromdense(M)
    np.testing.assert_array_equal((-m).todense(), -M)
    np.testing.assert_array_equal(abs(-m).todense(), M)
    np.testing.assert_array_equal((m ** 2).todense(), M ** 2)
    s = m + m
    assert isinstance(s, sparse.BCOO) and s.nse == 8  # concatenated entries, as JAX
    np.testing.assert_array_equal(s.todense(), 2 * M)
    np.testing.assert_array_equal((m - m).todense(), 0 * M)
    dense = m + M
    assert not isinstance(dense, sparse.BCOO)
    np.testing.assert_array_equal(dense, 2 * M)
    np.testing.assert_array_equal(M - m, 0 * M)
    with pytest.raises(NotImplementedError, match="dense"):
        m + 1.0
    with pytest.raises(TypeError):  # BCOO has no __rtruediv__, as in JAX
        1.0 / m
    sq = m * m
    assert isinstance(sq, sparse.BCOO)
    np.testing.assert_array_equal(sq.todense(), M * M)
    i = m.astype(np.int32)
    assert i.dtype == np.int32 and i.indices.dtype == np.int32


def test_jit_matches_eager_and_pytree_leaves():
    m = sparse.BCOO.fromdense(_rand((3, 5)))
    leaves, tree = numbax.tree_util.tree_flatten(m)
    assert len(leaves) == 2 and leaves[0] is m.data and leaves[1] is m.indices
    back = numbax.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(back, sparse.BCOO) and back.shape == m.shape

    def f(m, v):
        return (m * v).sum(0).todense(), m.T.todense(), m.reshape(15).todense()

    v = RNG.standard_normal(5).astype(np.float32)
    for a, b in zip(numbax.jit(f)(m, v), f(m, v)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    out = numbax.jit(lambda m: m * 2)(m)
    assert isinstance(out, sparse.BCOO)
    np.testing.assert_array_equal(out.indices, m.indices)


def test_vmap_over_batch_dims_equals_a_loop():
    x = _rand((3, 4, 5))
    mb = sparse.BCOO.fromdense(x, n_batch=1)
    v = RNG.standard_normal((3, 5)).astype(np.float32)

    def f(m, v):
        return m @ v, (m * v).sum(0).todense()

    outs = numbax.vmap(f)(mb, v)
    for i in range(3):
        one = sparse.BCOO.fromdense(x[i])
        for a, b in zip(outs, f(one, v[i])):
            np.testing.assert_allclose(a[i], b, rtol=1e-5)
    stacked = numbax.vmap(lambda s: sparse.BCOO.fromdense(x[0]) * s)(jnp.arange(3.))
    assert isinstance(stacked, sparse.BCOO) and stacked.n_batch == 1
    np.testing.assert_allclose(stacked.todense(), np.arange(3.)[:, None, None] * x[0])
    inner = numbax.vmap(lambda m: m.todense())(mb)
    np.testing.assert_array_equal(inner, x)
    with pytest.raises(ValueError, match="n_batch=0"):
        numbax.vmap(lambda m: m.todense())(sparse.BCOO.fromdense(x[0]))


def test_grads_through_the_sparse_operations():
    from numbax.test_util import check_grads

    data = np.array([1., 2., 3., 4., 0.5])
    idx = np.array([[2, 1], [0, 3], [2, 1], [0, 0], [1, 2]], np.int32)
    w = RNG.standard_normal((4, 3))

    def f(d):
        m = sparse.BCOO((d, idx), shape=(3, 4)).sort_indices().sum_duplicates(nse=5)
        m = (m * w.T).reshape(4, 3).T
        return jnp.sin(sparse.bcoo_reduce_sum(m ** 2, axes=(1,)).todense())

    check_grads(f, (data,), order=2, modes=("fwd", "rev"))
    g = numbax.grad(lambda d: f(d).sum())(data)
    np.testing.assert_allclose(numbax.jit(numbax.grad(lambda d: f(d).sum()))(data), g,
                               rtol=1e-12)


def test_eye_empty_match_jax():
    e = sparse.eye(3, 4, k=1, dtype=np.float32)
    assert repr(e) == "BCOO(float32[3, 4], nse=3)"
    np.testing.assert_array_equal(e.indices, [[0, 1], [1, 2], [2, 3]])
    e = sparse.eye(3, k=-1, dtype=np.int32)
    assert repr(e) == "BCOO(int32[3, 3], nse=2)"
    np.testing.assert_array_equal(e.indices, [[1, 0], [2, 1]])
    np.testing.assert_array_equal(sparse.eye(4, 2, k=-1).todense(), np.eye(4, 2, k=-1))
    e = sparse.empty((2, 3, 4), dtype=np.float32, n_batch=1, n_dense=1)
    assert repr(e) == "BCOO(float32[2, 3, 4], nse=0, n_batch=1, n_dense=1)"
    assert e.data.shape == (2, 0, 4) and e.indices.shape == (2, 0, 1)
    np.testing.assert_array_equal(e.todense(), np.zeros((2, 3, 4)))


def test_random_bcoo_matches_jax_bits():
    # JAX 0.10.2: sparse.random_bcoo(jax.random.key(0), (3, 4), nse=0.5) (float32)
    r = sparse.random_bcoo(numbax.random.key(0), (3, 4), nse=0.5, dtype=np.float32)
    assert repr(r) == "BCOO(float32[3, 4], nse=6)"
    np.testing.assert_array_equal(r.indices, [[0, 0], [0, 3], [2, 1], [1, 1], [0, 1], [2, 0]])
    np.testing.assert_allclose(r.data, [0.8423141241073608, 0.1823786497116089,
                                        0.22717809677124023, 0.12072563171386719,
                                        0.19181346893310547, 0.7220150232315063], rtol=1e-7)
    r = sparse.random_bcoo(numbax.random.PRNGKey(1), (2, 3, 4), nse=3, n_batch=1,
                           dtype=np.float32)
    np.testing.assert_array_equal(r.indices, [[[2, 3], [0, 3], [2, 2]],
                                              [[1, 3], [2, 3], [0, 1]]])
    np.testing.assert_allclose(r.data, [[0.7026152610778809, 0.2348346710205078,
                                         0.8178645372390747],
                                        [0.17094111442565918, 0.026347756385803223,
                                         0.9226094484329224]], rtol=1e-7)
    s = sparse.random_bcoo(numbax.random.key(2), (5, 6), nse=7, sorted_indices=True)
    keys = [tuple(i) for i in np.asarray(s.indices)]
    assert keys == sorted(keys) and len(set(keys)) == 7
    with pytest.raises(ValueError, match="nse"):
        sparse.random_bcoo(numbax.random.key(0), (2, 2), nse=4)


def test_from_scipy_sparse_matches_scipy():
    sp = scipy.sparse.random(6, 5, density=0.3, random_state=1, format="csr")
    m = sparse.BCOO.from_scipy_sparse(sp)
    np.testing.assert_allclose(m.todense(), sp.toarray())
    v = RNG.standard_normal(5)
    np.testing.assert_allclose(m @ v, sp @ v, rtol=1e-12)
    w = RNG.standard_normal((3, 6))
    np.testing.assert_allclose(w @ m, (sp.T @ w.T).T, rtol=1e-12)
