"""jnp's bincount, digitize, histogram family, cov and corrcoef against numpy; gradient,
trapezoid and unwrap against numpy; each under jit/vmap/grad."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(11)
A = np.array([0.1, 0.5, 0.5, 1.0, 2.0, -0.3, 1.7])
S = RNG.normal(size=(40, 3))


def _same(got, want, rtol=1e-12):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, rtol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-13)


def _as_jax(result, dtype):
    """numpy's (counts, edges...) with the counts in JAX's dtype (test_leftovers_s34 checks
    it against JAX): float for histogram, the default int for unweighted histogramdd."""
    return (np.asarray(result[0]).astype(dtype), *result[1:])


def test_bincount_and_digitize_match_numpy():
    x = np.array([0, 1, 1, 3, 7, 3])
    _same(jnp.bincount(x), np.bincount(x))
    _same(jnp.bincount(x, minlength=10), np.bincount(x, minlength=10))
    _same(jnp.bincount(x, weights=A[:6]), np.bincount(x, weights=A[:6]))
    _same(jnp.bincount(x, length=4), np.bincount(x)[:4])  # JAX: values >= length dropped
    f = numbax.jit(lambda x: jnp.bincount(x, length=9))
    _same(f(x), np.bincount(x, minlength=9))
    for bins in (np.array([0.0, 0.5, 1.0, 1.5]), np.array([1.5, 1.0, 0.5, 0.0])):
        for right in (False, True):
            _same(jnp.digitize(A, bins, right=right),  # int32, as JAX
                  np.digitize(A, bins, right=right).astype(np.int32))


@pytest.mark.parametrize("bins,range_,weights,density", [
    (10, None, None, None), (3, (0.2, 1.0), None, None), (4, None, A, None),
    (5, None, None, True), (np.array([-1.0, 0.0, 0.5, 3.0]), None, A, True),
])
def test_histogram_matches_numpy(bins, range_, weights, density):
    _same(jnp.histogram(A, bins, range_, weights, density),
          _as_jax(np.histogram(A, bins, range_, weights=weights, density=density), A.dtype))
    _same(jnp.histogram_bin_edges(A, bins, range_), np.histogram_bin_edges(A, bins, range_))


def test_histogramdd_and_2d_match_numpy():
    w = RNG.uniform(size=40)
    for bins in (3, (2, 3, 4), [np.array([-3.0, 0.0, 3.0]), 2, 3]):
        for density in (None, True):
            _same(jnp.histogramdd(S, bins, weights=w, density=density),
                  np.histogramdd(S, bins, weights=w, density=density))
    rng = [(-1, 1), (0, 2), (-2, 0)]
    _same(jnp.histogramdd(S, 3, range=rng), _as_jax(np.histogramdd(S, 3, range=rng), np.int64))
    for bins in (4, [2, 5], np.array([-2.0, 0.0, 2.0])):
        _same(jnp.histogram2d(S[:, 0], S[:, 1], bins),
              _as_jax(np.histogram2d(S[:, 0], S[:, 1], bins), np.int64))
    _same(jnp.histogram_bin_edges(np.array([2.0, 2.0]), 2),
          np.histogram_bin_edges(np.array([2.0, 2.0]), 2))


def test_cov_and_corrcoef_match_numpy():
    x = RNG.normal(size=(3, 6))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), RNG.uniform(size=6)
    for kwargs in ({}, {"bias": True}, {"ddof": 2}, {"fweights": fw}, {"aweights": aw},
                   {"fweights": fw, "aweights": aw, "ddof": 2}):
        _same(jnp.cov(x, **kwargs), np.cov(x, **kwargs))
    _same(jnp.cov(x.T, rowvar=False), np.cov(x.T, rowvar=False))
    _same(jnp.cov(x[0], x[1]), np.cov(x[0], x[1]))
    _same(jnp.cov(x[0]), np.cov(x[0]))
    _same(jnp.cov(x + 1j * x[::-1]), np.cov(x + 1j * x[::-1]))
    _same(jnp.corrcoef(x), np.corrcoef(x))
    _same(jnp.corrcoef(x[0], x[2]), np.corrcoef(x[0], x[2]))
    _same(jnp.corrcoef(x.T, rowvar=False), np.corrcoef(x.T, rowvar=False))


def test_statistics_trace_and_differentiate():
    f = numbax.jit(lambda a: jnp.histogram(a, 4, range=(-1.0, 2.0)))
    _same(f(A), _as_jax(np.histogram(A, 4, range=(-1.0, 2.0)), A.dtype))
    g = numbax.grad(lambda x: jnp.cov(x)[0, 1])(S[:5].T)
    eps = 1e-6
    base = S[:5].T
    fd = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        d = np.zeros_like(base)
        d[i] = eps
        fd[i] = (np.cov(base + d)[0, 1] - np.cov(base - d)[0, 1]) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    rows = numbax.vmap(lambda r: jnp.digitize(r, np.array([0.0, 1.0])))(S)
    _same(rows, np.stack([np.digitize(r, [0.0, 1.0]) for r in S]).astype(np.int32))


def test_gradient_trapezoid_unwrap_match_numpy():
    f = RNG.normal(size=(5, 6))
    xc = np.cumsum(RNG.uniform(0.1, 1, size=6))
    yc = np.cumsum(RNG.uniform(0.1, 1, size=5))
    for edge_order in (1, 2):
        for args in ((), (0.5,), (yc, xc), (2.0, xc)):
            _same(jnp.gradient(f, *args, edge_order=edge_order),
                  np.gradient(f, *args, edge_order=edge_order))
        _same(jnp.gradient(f, xc, axis=1, edge_order=edge_order),
              np.gradient(f, xc, axis=1, edge_order=edge_order))
    _same(jnp.gradient(np.arange(5) ** 2), np.gradient(np.arange(5) ** 2))
    _same(jnp.trapezoid(f, xc), np.trapezoid(f, xc))
    _same(jnp.trapezoid(f, dx=0.3, axis=0), np.trapezoid(f, dx=0.3, axis=0))
    xs = np.tile(xc, (5, 1))
    _same(jnp.trapezoid(f, xs), np.trapezoid(f, xs))
    phase = np.mod(np.cumsum(RNG.normal(size=20)) * 2, 2 * np.pi)
    _same(jnp.unwrap(phase), np.unwrap(phase))
    _same(jnp.unwrap(phase, discont=4.0), np.unwrap(phase, discont=4.0))
    for period in (7, 8):
        ints = np.array([0, 3, 7, 13, 1, -20])
        _same(jnp.unwrap(ints, period=period), np.unwrap(ints, period=period))
    grid = np.mod(np.cumsum(RNG.normal(size=(3, 8)), axis=0) * 3, 2 * np.pi)
    _same(jnp.unwrap(grid, axis=0), np.unwrap(grid, axis=0))


def test_calculus_under_transforms():
    x = np.linspace(0.0, 1.0, 9)
    g = numbax.grad(lambda y: jnp.trapezoid(y, x))(np.sin(x))
    np.testing.assert_allclose(g, np.r_[0.0625, np.full(7, 0.125), 0.0625])
    d = numbax.jit(lambda y: jnp.gradient(y, x, edge_order=2))(x ** 2)
    np.testing.assert_allclose(d, 2 * x, atol=1e-12)
    u = numbax.vmap(jnp.unwrap)(np.mod(np.outer([1.0, 2.0], np.arange(8.0)), 2 * np.pi))
    np.testing.assert_allclose(u, np.outer([1.0, 2.0], np.arange(8.0)), atol=1e-12)


def test_statistics_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="non-negative integers"):
        jnp.bincount(A)
    # negative values count in bin 0, as in JAX (numpy raises)
    np.testing.assert_array_equal(jnp.bincount(np.array([1, -1])), [1, 1])
    np.testing.assert_array_equal(jnp.bincount(np.array([-3])), [1])
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(jnp.bincount)(np.array([1, 2]))
    with pytest.raises(NumbaxValueError, match="weights has shape"):
        jnp.bincount(np.array([1, 2]), weights=np.ones(3))
    with pytest.raises(NumbaxValueError, match="string bin rules"):
        jnp.histogram(A, "auto")
    with pytest.raises(NumbaxValueError, match="bins is 0"):
        jnp.histogram(A, 0)
    with pytest.raises(NumbaxValueError, match="one per dimension"):
        jnp.histogramdd(S, bins=(2, 3))
    with pytest.raises(NumbaxValueError, match="1-d monotonic"):
        jnp.digitize(A, np.ones((2, 2)))
    with pytest.raises(NumbaxValueError, match="at most 2"):
        jnp.cov(np.ones((2, 2, 2)))
    with pytest.raises(NumbaxValueError, match="fweights has shape"):
        jnp.cov(S.T, fweights=np.ones(3, int))
    with pytest.raises(NumbaxValueError, match="edge_order is 3"):
        jnp.gradient(A, edge_order=3)
    with pytest.raises(NumbaxValueError, match="spacings"):
        jnp.gradient(S, 1.0, 2.0, 3.0)
    with pytest.raises(NumbaxValueError, match="x has shape"):
        jnp.trapezoid(A, np.ones(3))
