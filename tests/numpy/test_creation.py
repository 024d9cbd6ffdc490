"""numbax.numpy constructors against numpy: values, dtypes, x64-off narrowing, tracing, errors."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(3)
M = RNG.normal(size=(4, 5))


def _check(got, want, exact=True):
    if isinstance(want, (list, tuple)):
        for g, w in zip(got, want):
            _check(g, w, exact)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CASES = [
    ("zeros", ((2, 3),), {}), ("zeros", (4,), {"dtype": np.int32}), ("ones", ((0, 2),), {}),
    ("ones", (3,), {"dtype": bool}), ("full", ((2, 2), 7), {}), ("full", (3, 1.5), {}),
    ("full", ((2, 3), [1, 2, 3]), {}), ("full", (2, 3), {"dtype": np.float32}),
    ("zeros_like", (M,), {}), ("ones_like", (M,), {"dtype": np.int16}),
    ("full_like", (M, 2), {}), ("full_like", (np.arange(3), 2.7), {}),
    ("empty", ((2,),), {}), ("arange", (5,), {}), ("arange", (2, 11, 3), {}),
    ("arange", (10, 2, -2), {}), ("arange", (0.5, 3), {}), ("arange", (0, 1, 0.1), {}),
    ("arange", (5,), {"dtype": np.float32}), ("arange", (3, 1), {}),
    ("eye", (3,), {}), ("eye", (3, 5, 2), {}), ("eye", (4, 3, -1), {"dtype": int}),
    ("identity", (3,), {"dtype": np.int8}), ("tri", (3, 4, 1), {}), ("tri", (4,), {"dtype": int}),
    ("tril", (M,), {}), ("tril", (M, -1), {}), ("triu", (M, 2), {}),
    ("triu", (np.ones((2, 3, 3)),), {}), ("diag", (M,), {}), ("diag", (M, -2), {}),
    ("diag", (np.arange(3),), {}), ("diag", (np.arange(3), 2), {}),
    ("diag", (np.arange(3), -1), {}), ("diagflat", ([[1, 2], [3, 4]],), {}),
    ("diagonal", (M,), {}), ("diagonal", (M, 1), {}), ("diagonal", (M, -3), {}),
    ("diagonal", (M, 7), {}), ("diagonal", (np.arange(60).reshape(3, 4, 5), 1, 2, 0), {}),
    ("trace", (M,), {}), ("trace", (np.arange(60).reshape(3, 4, 5), -1, 1, 2), {}),
    ("meshgrid", (np.arange(3), np.arange(4.0)), {}),
    ("meshgrid", (np.arange(3), np.arange(4), np.arange(2)), {"indexing": "ij"}),
    ("meshgrid", (np.arange(3), np.arange(4)), {"sparse": True}),
    ("indices", ((2, 3),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=lambda c: str(c)[:30])
def test_matches_numpy(name, args, kwargs):
    # empty: numpy's values are whatever the memory held; numbax's, like JAX's, are zeros
    want = getattr(np, "zeros" if name == "empty" else name)(*args, **kwargs)
    jargs = [np.asarray(a) if isinstance(a, list) else a for a in args]  # JAX refuses lists
    _check(getattr(jnp, name)(*jargs, **kwargs), want)


@pytest.mark.parametrize("args,kwargs", [
    ((0, 1), {}), ((0, 1, 7), {}), ((2.0, 3.0, 5), {"endpoint": False}), ((-1, 1, 1), {}),
    ((0, 10, 4), {"dtype": int}), ((-5, 5, 4), {"dtype": int}), ((1, 2, 0), {}),
    (([0, 1], [2, 5], 4), {}), (([0, 1], [2, 5], 4), {"axis": 1}),
    ((0, 1, 5), {"retstep": True}),
])
def test_linspace(args, kwargs):
    jargs = [np.asarray(a) if isinstance(a, list) else a for a in args]  # JAX refuses lists
    _check(jnp.linspace(*jargs, **kwargs), np.linspace(*args, **kwargs), exact=False)


def test_logspace_geomspace():
    _check(jnp.logspace(0, 3, 4), np.logspace(0, 3, 4), exact=False)
    _check(jnp.logspace(0, 3, 4, base=2.0), np.logspace(0, 3, 4, base=2.0), exact=False)
    np.testing.assert_allclose(np.asarray(jnp.geomspace(1, 1000, 4)), np.geomspace(1, 1000, 4))


def test_array_and_asarray():
    _check(jnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    _check(jnp.array(3, ndmin=2), np.array(3, ndmin=2))
    _check(jnp.asarray([1.0, 2], dtype=jnp.float32), np.asarray([1.0, 2], dtype=np.float32))
    _check(jnp.asarray(np.arange(3), dtype="int8"), np.arange(3, dtype=np.int8))
    assert jnp.asarray(2.0).weak_type and not jnp.array(np.float64(2)).weak_type
    # Lists that hold traced values are stacked.
    jaxpr = numbax.make_jaxpr(lambda a, b: jnp.array([a, b, 1.0]))(1.0, 2.0)
    assert jaxpr.out_avals[0].shape == (3,)
    _check(numbax.vmap(lambda a: jnp.asarray([a, 2 * a]))(np.arange(3.0)),
           np.stack([np.arange(3.0), 2 * np.arange(3.0)], 1))


def test_x64_off_narrows_defaults():
    numbax.config.update("jax_enable_x64", False)
    try:
        assert jnp.zeros(2).dtype == np.float32
        assert jnp.arange(3).dtype == np.int32
        assert jnp.linspace(0, 1, 3).dtype == np.float32
        assert jnp.eye(2, dtype=np.float64).dtype == np.float32
        assert jnp.array([1, 2]).dtype == np.int32
    finally:
        numbax.config.update("jax_enable_x64", True)


def test_traceable_constructors():
    def f(x):
        n = x.shape[0]
        return (jnp.eye(n) * x + jnp.tril(jnp.outer(x, x)) + jnp.diag(x)
                + jnp.linspace(x[0], x[1], n) + jnp.trace(jnp.diag(x)))

    x = RNG.normal(size=(4,))
    want = (np.eye(4) * x + np.tril(np.outer(x, x)) + np.diag(x) + np.linspace(x[0], x[1], 4)
            + np.trace(np.diag(x)))
    np.testing.assert_allclose(np.asarray(f(x)), want)
    jaxpr = numbax.make_jaxpr(f)(x)
    assert "iota" in str(jaxpr)
    xs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(xs)),
                               np.stack([np.asarray(f(r)) for r in xs]))
    g = numbax.grad(lambda x: jnp.sum(jnp.diagonal(jnp.outer(x, x)) * jnp.arange(4.0)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x * np.arange(4.0))


def test_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="not a tuple of ints"):
        jnp.zeros((2.5,))
    with pytest.raises(NumbaxValueError, match="negative"):
        jnp.ones((-1, 2))
    with pytest.raises(TypeError, match="not supported|not a dtype|not numeric"):
        jnp.zeros(3, dtype=object)
    with pytest.raises(TypeError, match="not supported|not numeric"):
        jnp.array(["a", "b"])
    with pytest.raises(TypeError):
        jnp.full(2, "x")
    with pytest.raises(NumbaxValueError, match="step is 0"):
        jnp.arange(0, 5, 0)
    with pytest.raises(TypeError, match="concrete"):
        numbax.make_jaxpr(lambda n: jnp.arange(n))(3)
    with pytest.raises(NumbaxValueError, match="num is -1"):
        jnp.linspace(0, 1, -1)
    with pytest.raises(NumbaxValueError, match=r"m has shape \(5,\)"):
        jnp.tril(np.ones(5))
    with pytest.raises(NumbaxValueError, match=r"v has shape \(2, 2, 2\)"):
        jnp.diag(np.ones((2, 2, 2)))
    with pytest.raises(NumbaxValueError, match="different axes"):
        jnp.diagonal(M, 0, 1, 1)
    with pytest.raises(NumbaxValueError, match="indexing 'xx'"):
        jnp.meshgrid(np.arange(2), indexing="xx")
    with pytest.raises(NumbaxTypeError, match="not array-like"):
        jnp.asarray(object())
