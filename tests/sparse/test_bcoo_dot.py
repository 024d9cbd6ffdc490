"""sparse.bcoo_dot_general and BCOO's `@` (numbax/_src/sparse/bcoo_dot.py): every layout, sparse
on either side and on both, against numpy's tensordot/einsum; jit == eager, vmap == a loop,
gradients with respect to data and the dense operand against finite differences."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.experimental import sparse
from numbax.test_util import check_grads

RNG = np.random.default_rng(1)
LAYOUTS = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)]


def _rand(shape, density=0.4):
    x = RNG.standard_normal(shape)
    return x * (RNG.random(shape) < density)


def _dense_dot(lhs, rhs, dn):
    return np.asarray(numbax.lax.dot_general(jnp.asarray(lhs), jnp.asarray(rhs), dn))


# (dimension numbers, rhs shape) for an lhs of shape (2, 3, 4)
CASES = [
    ((([2], [0]), ([], [])), (4, 5)),
    ((([1], [1]), ([], [])), (2, 3)),
    ((([2], [1]), ([0], [0])), (2, 4, 5)),
    ((([0, 2], [0, 1]), ([], [])), (2, 4)),
    ((([1, 2], [0, 1]), ([0], [2])), (3, 4, 2)),
]


@pytest.mark.parametrize("n_batch,n_dense", LAYOUTS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_sparse_dense_against_numpy(n_batch, n_dense, case):
    dn, rhs_shape = CASES[case]
    x = _rand((2, 3, 4))
    rhs = RNG.standard_normal(rhs_shape)
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    out = sparse.bcoo_dot_general(m, rhs, dimension_numbers=dn)
    np.testing.assert_allclose(out, _dense_dot(x, rhs, dn), rtol=1e-12, atol=1e-12)
    # the same contraction with the sparse operand on the right
    (lc, rc), (lb, rb) = dn
    flipped = sparse.bcoo_dot_general(rhs, m, dimension_numbers=((rc, lc), (rb, lb)))
    np.testing.assert_allclose(flipped, _dense_dot(rhs, x, ((rc, lc), (rb, lb))),
                               rtol=1e-12, atol=1e-12)


def test_padding_reads_no_values_even_where_they_are_inf():
    x = _rand((3, 4))
    v = np.full(4, np.inf)
    v[1] = 2.0
    x[:, [0, 2, 3]] = 0.0
    m = sparse.BCOO.fromdense(x, nse=9)  # padding entries point past the last column
    np.testing.assert_array_equal(m @ v, x[:, 1] * 2.0)
    np.testing.assert_array_equal(sparse.bcoo_dot_general(
        sparse.BCOO.fromdense(x[0], nse=4), v, dimension_numbers=(([0], [0]), ([], []))),
        x[0, 1] * 2.0)


def test_matmul_operators_and_ranks():
    x = _rand((3, 4))
    m = sparse.BCOO.fromdense(x)
    v, w = RNG.standard_normal(4), RNG.standard_normal((4, 2))
    np.testing.assert_allclose(m @ v, x @ v, rtol=1e-12)
    np.testing.assert_allclose(m @ w, x @ w, rtol=1e-12)
    u = RNG.standard_normal(3)
    np.testing.assert_allclose(u @ m, u @ x, rtol=1e-12)
    w2 = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(w2 @ m, w2 @ x, rtol=1e-12)  # numpy defers to BCOO
    xb = _rand((2, 3, 4))
    mb = sparse.BCOO.fromdense(xb, n_batch=1)
    wb = RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(mb @ wb, xb @ wb, rtol=1e-12)
    with pytest.raises(TypeError, match="dot_general"):
        m @ RNG.standard_normal(3)


def test_sparse_sparse_product_matches_jax_structure():
    x = (np.arange(12.).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0))
    m = sparse.BCOO.fromdense(x)
    out = m @ m.T
    assert isinstance(out, sparse.BCOO) and out.nse == 9 and out.shape == (3, 3)  # as JAX
    np.testing.assert_array_equal(out.todense(), np.diag([9., 36., 81.]))
    a, b = _rand((2, 3, 4)), _rand((2, 4, 5))
    dn = (([2], [1]), ([0], [0]))
    sa, sb = sparse.BCOO.fromdense(a, n_batch=1), sparse.BCOO.fromdense(b)
    np.testing.assert_allclose(sparse.bcoo_dot_general(sa, sb, dimension_numbers=dn).todense(),
                               a @ b, rtol=1e-12)


def test_jit_matches_eager():
    x = _rand((4, 6))
    m = sparse.BCOO.fromdense(x, nse=10)
    v = RNG.standard_normal((6, 3))

    def f(m, v):
        return m @ v, v.T @ m.T, (m @ m.T).todense()

    for a, b in zip(numbax.jit(f)(m, v), f(m, v)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_vmap_equals_a_loop():
    x = _rand((3, 4, 5))
    mb = sparse.BCOO.fromdense(x, n_batch=1)
    v = RNG.standard_normal((3, 5))
    out = numbax.vmap(lambda m, v: m @ v)(mb, v)
    np.testing.assert_allclose(out, np.stack([x[i] @ v[i] for i in range(3)]), rtol=1e-12)
    m0 = sparse.BCOO.fromdense(x[0])
    out = numbax.vmap(lambda v: m0 @ v)(v)
    np.testing.assert_allclose(out, np.stack([x[0] @ v[i] for i in range(3)]), rtol=1e-12)
    out = numbax.vmap(lambda d: sparse.BCOO((d, m0.indices), shape=m0.shape) @ v[0])(
        np.stack([m0.data, 2 * m0.data]))
    np.testing.assert_allclose(out, np.stack([x[0] @ v[0], 2 * x[0] @ v[0]]), rtol=1e-12)


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 0), (0, 1)])
def test_grads_against_finite_differences(n_batch, n_dense):
    x = _rand((2, 3, 4), density=0.6)
    m = sparse.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    w = RNG.standard_normal((4, 2))

    def f(data, w):
        mat = sparse.BCOO((data, m.indices), shape=m.shape)
        return jnp.tanh(sparse.bcoo_dot_general(mat, w, dimension_numbers=(([2], [0]),
                                                                              ([], []))))

    check_grads(f, (m.data, w), order=2, modes=("fwd", "rev"))
    g_data, g_w = numbax.grad(lambda d, w: f(d, w).sum(), argnums=(0, 1))(m.data, w)
    dense_gw = numbax.grad(lambda w: jnp.tanh(jnp.asarray(x) @ w).sum())(w)
    np.testing.assert_allclose(g_w, dense_gw, rtol=1e-10)
    assert g_data.shape == m.data.shape
