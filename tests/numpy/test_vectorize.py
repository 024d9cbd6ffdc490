"""jnp.vectorize (signature=, excluded=), apply_along_axis, apply_over_axes, fromfunction
against numpy, under jit and grad."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(4)
A = RNG.normal(size=(4, 2, 3))
V = RNG.normal(size=(5, 1, 3))


def test_vectorize_scalar_and_signature_match_numpy():
    f = lambda a, b: a * b + 1  # noqa: E731
    x, y = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(jnp.vectorize(f)(x, y), np.vectorize(f)(x, y))
    mv = jnp.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")
    want = np.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")(A, V)
    np.testing.assert_allclose(mv(A, V), want, rtol=1e-13)
    two = jnp.vectorize(lambda v: (v.sum(), v * 2), signature="(n)->(),(n)")
    s, d = two(A)
    np.testing.assert_allclose(s, A.sum(-1), rtol=1e-13)
    np.testing.assert_allclose(d, 2 * A)
    ex = jnp.vectorize(lambda x, p, *, scale: scale * x ** p, excluded={1})
    np.testing.assert_allclose(ex(x, 2, scale=3.0), 3.0 * x ** 2)
    np.testing.assert_allclose(jnp.vectorize(lambda s: s + 1)(2.0), 3.0)


def test_apply_helpers_and_fromfunction_match_numpy():
    m = np.arange(24.0).reshape(2, 3, 4)
    for axis in (0, 1, 2, -1):
        for fn in (lambda v: v.max() - v.min(), lambda v: v[::-1] * 2,
                   lambda v: np.outer(v, v) if isinstance(v, np.ndarray) else jnp.outer(v, v)):
            np.testing.assert_allclose(jnp.apply_along_axis(fn, axis, m),
                                       np.apply_along_axis(fn, axis, m))
    np.testing.assert_allclose(jnp.apply_along_axis(lambda v, p: (v ** p).sum(), 1, m, 2),
                               np.apply_along_axis(lambda v, p: (v ** p).sum(), 1, m, 2))
    np.testing.assert_allclose(jnp.apply_over_axes(jnp.sum, m, [0, 2]),
                               np.apply_over_axes(np.sum, m, [0, 2]))
    np.testing.assert_allclose(jnp.fromfunction(lambda i, j: i * 10 + j, (3, 4)),
                               np.fromfunction(lambda i, j: i * 10 + j, (3, 4)))
    got = jnp.fromfunction(lambda i, j: i - j, (2, 3), dtype=int)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.fromfunction(lambda i, j: i - j, (2, 3), dtype=int))


def test_vectorize_under_transforms():
    norm = jnp.vectorize(lambda v: jnp.sqrt((v * v).sum()), signature="(n)->()")
    np.testing.assert_allclose(numbax.jit(norm)(A), np.linalg.norm(A, axis=-1), rtol=1e-13)
    g = numbax.grad(lambda a: norm(a).sum())(A)
    np.testing.assert_allclose(g, A / np.linalg.norm(A, axis=-1, keepdims=True), rtol=1e-12)
    h = numbax.jit(lambda m: jnp.apply_along_axis(jnp.cumsum, 1, m))
    np.testing.assert_allclose(h(A), np.cumsum(A, axis=1), rtol=1e-13)


def test_vectorize_bad_inputs():
    with pytest.raises(NumbaxValueError, match="not a valid gufunc signature"):
        jnp.vectorize(lambda v: v, signature="(n)->")(A)
    with pytest.raises(NumbaxValueError, match="core dimension 'n'"):
        jnp.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")(A, np.ones(4))
    with pytest.raises(NumbaxValueError, match="output 0 has shape"):
        jnp.vectorize(lambda v: v, signature="(n)->()")(A)
    with pytest.raises(NumbaxTypeError, match="2 outputs"):
        jnp.vectorize(lambda v: v.sum(), signature="(n)->(),()")(A)
    with pytest.raises(NumbaxTypeError, match="excluded"):
        jnp.vectorize(lambda v: v, excluded={-1})
    with pytest.raises(NumbaxTypeError, match="callable"):
        jnp.vectorize(3)
    with pytest.raises(NumbaxValueError, match="shape \\(\\)"):
        jnp.apply_along_axis(jnp.sum, 0, 3.0)
    with pytest.raises(NumbaxValueError, match="same rank or one less"):
        jnp.apply_over_axes(lambda x, ax: x.sum(), A, [0])
    with pytest.raises(NumbaxTypeError, match="callable"):
        jnp.fromfunction(3, (2, 2))
