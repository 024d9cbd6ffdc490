"""sparse.sparsify and sparse.grad (numbax/_src/sparse/sparsify.py, rules.py, transforms.py):
JAX's documented example and the result kinds (sparse or dense, nse) JAX 0.10.2 gives for the
common operations; jit/grad/vmap around sparsify; NotImplementedError where the result
would be dense."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.experimental import sparse

M = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)
X = (np.arange(12.).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0)).astype(np.float32)


def test_docs_example_matches_jax():
    def f(m, v):
        return 2 * jnp.dot(jnp.log1p(m.T), v) + 1

    y = np.array([3., 6., 5.], np.float32)
    m = sparse.BCOO.fromdense(M)
    out = sparse.sparsify(f)(m, y)
    np.testing.assert_allclose(out, [17.635532, 5.158883, 17.09438, 7.591674], rtol=1e-6)
    np.testing.assert_allclose(out, f(M, y), rtol=1e-6)


# (function, JAX 0.10.2's result: ("dense", value) or ("sparse", nse, todense))
CASES = {
    "sum": (lambda m: m.sum(), ("dense", 18.0)),
    "sum0": (lambda m: jnp.sum(m, 0), ("sparse", 3, X.sum(0))),
    "mean": (lambda m: m.mean(), ("dense", 1.5)),
    "div scalar": (lambda m: m / 2., ("sparse", 3, X / 2)),
    "mul dense": (lambda m: m * jnp.arange(4., dtype=jnp.float32),
                  ("sparse", 3, X * np.arange(4.))),
    "square": (lambda m: m ** 2, ("sparse", 3, X ** 2)),
    "add sparse": (lambda m: m + m.T.T, ("sparse", 6, 2 * X)),
    "sub self": (lambda m: m - m, ("sparse", 3, 0 * X)),
    "div dense": (lambda m: m / jnp.arange(1., 5., dtype=jnp.float32),
                  ("sparse", 3, X / np.arange(1., 5.))),
    "add dense": (lambda m: m + jnp.ones((3, 4), jnp.float32), ("dense", X + 1)),
    "abs": (lambda m: jnp.abs(m), ("sparse", 3, X)),
    "reshape": (lambda m: m.reshape(2, 6), ("sparse", 3, X.reshape(2, 6))),
    "spdot": (lambda m: jnp.dot(m, m.T), ("sparse", 9, X @ X.T)),
    "mul self": (lambda m: m * m, ("sparse", 3, X * X)),
    "neg": (lambda m: -m, ("sparse", 3, -X)),
    "sqrt": (lambda m: jnp.sqrt(m), ("sparse", 3, np.sqrt(X))),
    "tanh": (lambda m: jnp.tanh(m), ("sparse", 3, np.tanh(X))),
    "astype": (lambda m: m.astype(jnp.int32), ("sparse", 3, X.astype(np.int32))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_result_kinds_match_jax(name):
    f, expected = CASES[name]
    out = sparse.sparsify(f)(sparse.BCOO.fromdense(X))
    if expected[0] == "dense":
        assert not isinstance(out, sparse.BCOO)
        np.testing.assert_allclose(out, expected[1], rtol=1e-6)
    else:
        assert isinstance(out, sparse.BCOO) and out.nse == expected[1]
        np.testing.assert_allclose(out.todense(), expected[2], rtol=1e-6)


@pytest.mark.parametrize("f,match", [
    (lambda m: jnp.exp(m), "sparse rule for exp"),
    (lambda m: 1. / m, "Division by a sparse array"),
    (lambda m: m + 1., "dense"),
    (lambda m: m ** -1, "integer_pow"),
])
def test_dense_results_raise_not_implemented(f, match):
    with pytest.raises(NotImplementedError, match=match):
        sparse.sparsify(f)(sparse.BCOO.fromdense(X))


def test_duplicates_are_summed_before_a_nonlinear_map():
    m = sparse.BCOO((np.array([1., 3.]), np.array([[0], [0]])), shape=(2,))
    out = sparse.sparsify(jnp.sqrt)(m)
    np.testing.assert_allclose(out.todense(), [2.0, 0.0])
    out = sparse.sparsify(jnp.negative)(m)
    np.testing.assert_allclose(out.todense(), [-4.0, 0.0])


def test_dense_arguments_and_pytrees_pass_through():
    def f(params, m):
        w, b = params["w"], params["b"]
        return jnp.tanh(m @ w + b)

    params = {"w": np.arange(4.), "b": np.ones(3)}
    out = sparse.sparsify(f)(params, sparse.BCOO.fromdense(X))
    np.testing.assert_allclose(out, np.tanh(X @ np.arange(4.) + 1), rtol=1e-6)
    out = sparse.sparsify(f)(params, X)  # no sparse argument at all
    np.testing.assert_allclose(out, np.tanh(X @ np.arange(4.) + 1), rtol=1e-6)


def test_transforms_compose_with_sparsify():
    m = sparse.BCOO.fromdense(X)
    f = sparse.sparsify(lambda m, v: jnp.sin(m) @ v)
    v = np.linspace(0., 1., 4)
    np.testing.assert_allclose(numbax.jit(f)(m, v), np.sin(X) @ v, rtol=1e-6)
    g = numbax.grad(lambda v: f(m, v).sum())(v)
    np.testing.assert_allclose(g, np.sin(X).sum(0), rtol=1e-6)
    vs = np.stack([v, 2 * v])
    out = numbax.vmap(f, in_axes=(None, 0))(m, vs)
    np.testing.assert_allclose(out, np.stack([np.sin(X) @ w for w in vs]), rtol=1e-6)
    gd = numbax.grad(lambda d: f(sparse.BCOO((d, m.indices), shape=m.shape), v).sum())(m.data)
    np.testing.assert_allclose(gd, np.cos(m.data) * v[np.asarray(m.indices)[:, 1]],
                               rtol=1e-6)


def test_closed_over_tracers_under_jit():
    m = sparse.BCOO.fromdense(X)

    @numbax.jit
    def f(scale, v):
        return sparse.sparsify(lambda m: (m * scale) @ v)(m)

    np.testing.assert_allclose(f(3.0, np.ones(4)), 3 * X.sum(1), rtol=1e-6)


def test_sparse_grad_returns_sparse_gradients():
    m = sparse.BCOO.fromdense(M)
    g = sparse.grad(lambda m: (m @ jnp.ones(4)).sum())(m)
    assert isinstance(g, sparse.BCOO)  # JAX: data [1, 1, 1, 1] at m's indices
    np.testing.assert_array_equal(g.data, [1., 1., 1., 1.])
    np.testing.assert_array_equal(g.indices, m.indices)
    v = np.arange(4., dtype=np.float32)
    value, (gm, gv) = sparse.value_and_grad(lambda m, v: (m @ v).sum(), argnums=(0, 1))(m, v)
    np.testing.assert_allclose(value, (M @ v).sum())
    np.testing.assert_array_equal(gm.data, v[np.asarray(m.indices)[:, 1]])
    np.testing.assert_array_equal(gv, M.sum(0))
    gb = sparse.grad(lambda b: (b @ v).sum())(sparse.BCSR.fromdense(M))
    assert isinstance(gb, sparse.BCSR)
    np.testing.assert_array_equal(gb.todense(), (M != 0) * v)
