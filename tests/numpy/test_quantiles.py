"""jnp's order statistics (quantile family with every method, nan forms, weights,
nanargmax/nanargmin) against numpy, traced q, gradients; var with ddof >= count."""
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(9)
X = RNG.normal(size=(3, 4, 5))
NANS = np.array([[np.nan, 1.0, 3.0, 7.0], [np.nan] * 4, [1.0, 5.0, 2.0, 2.0]])
METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"]
QS = np.array([0.0, 0.05, 0.1, 0.33, 0.5, 0.9, 1.0])  # an array: JAX refuses a list q


def _np(fn, x, q, method, **kw):
    """numpy's quantile, with 'nearest' breaking ties low as JAX does (numpy: half to even)."""
    if method == "nearest":
        q = np.maximum(np.nextafter(q, -1.0), 0.0)
    return fn(x, q, method=method, **kw)


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
def test_quantile_methods_match_numpy(method, axis):
    for q in (QS, 0.37):
        _close(jnp.quantile(X, q, axis=axis, method=method),
               _np(np.quantile, X, q, method, axis=axis))
        _close(jnp.percentile(X, np.multiply(q, 100), axis=axis, method=method,
                              keepdims=True),
               _np(np.percentile, X, np.multiply(q, 100), method, axis=axis, keepdims=True))
    ints = np.arange(10)
    _close(jnp.quantile(ints, QS, method=method), _np(np.quantile, ints, QS, method))


@pytest.mark.parametrize("method", METHODS)
def test_nan_quantiles_match_numpy(method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy warns on the all-NaN row
        _close(jnp.nanquantile(NANS, QS, axis=1, method=method),
               _np(np.nanquantile, NANS, QS, method, axis=1))
        _close(jnp.nanpercentile(NANS, 40, axis=1, method=method, keepdims=True),
               _np(np.nanpercentile, NANS, 40, method, axis=1, keepdims=True))
        _close(jnp.nanmedian(NANS, axis=1), np.nanmedian(NANS, axis=1))
    _close(jnp.quantile(NANS, 0.5, axis=1), np.quantile(NANS, 0.5, axis=1))
    _close(jnp.nanmedian(NANS[0]), np.nanmedian(NANS[0]))


def test_weighted_inverted_cdf_matches_numpy():
    w = RNG.uniform(size=5)
    for q in (0.0, 0.1, 0.5, 0.77, 1.0):
        _close(jnp.quantile(X, q, axis=-1, method="inverted_cdf", weights=w),
               np.quantile(X, q, axis=-1, method="inverted_cdf", weights=w))
    w_full = RNG.integers(1, 4, size=X.shape).astype(float)
    _close(jnp.quantile(X, np.array([0.2, 0.6]), axis=1, method="inverted_cdf", weights=w_full),
           np.quantile(X, [0.2, 0.6], axis=1, method="inverted_cdf", weights=w_full))


def test_nanargmax_nanargmin():
    data = np.array([[np.nan, 1.0, 3.0], [2.0, np.nan, -1.0], [4.0, 4.0, 0.0]])
    _close(jnp.nanargmax(data, axis=1), np.nanargmax(data, axis=1))
    _close(jnp.nanargmin(data, axis=0, keepdims=True), np.nanargmin(data, axis=0, keepdims=True))
    _close(jnp.nanargmax(data), np.nanargmax(data))
    _close(jnp.nanargmin(np.arange(4)), np.nanargmin(np.arange(4)))
    # an all-NaN slice gives -1 as in JAX (numpy raises ValueError)
    _close(jnp.nanargmax(NANS, axis=1), np.array([3, -1, 1]))


def test_quantiles_trace_and_differentiate():
    f = numbax.jit(lambda x, q: jnp.quantile(x, q, axis=0))
    q = np.array([0.2, 0.8])
    _close(f(X[:, 0], q), np.quantile(X[:, 0], q, axis=0))
    v = np.array([1.0, np.nan, 3.0, 2.0, 5.0])
    g = numbax.grad(lambda v: jnp.nanquantile(v, 0.25))(v)
    _close(g, [0.25, 0.0, 0.0, 0.75, 0.0])  # 1 + 0.75 * (2 - 1) over the sorted [1, 2, 3, 5]
    g = numbax.grad(lambda v: jnp.quantile(v, 0.6))(np.array([4.0, 1.0, 3.0, 2.0]))
    _close(g, [0.0, 0.0, 0.8, 0.2])  # 2 + 0.8 * (3 - 2)
    rows = numbax.vmap(lambda r: jnp.nanmedian(r))(NANS[[0, 2]])
    _close(rows, np.nanmedian(NANS[[0, 2]], axis=1))


def test_var_with_ddof_at_least_count_is_nan():
    x = np.arange(3.0)
    for ddof in (3, 5):
        assert np.isnan(jnp.var(x, ddof=ddof)) and np.isnan(jnp.std(x, ddof=ddof))
    assert np.isnan(jnp.var(x + 1j, ddof=3))
    assert np.isnan(jnp.nanvar(np.array([1.0, np.nan]), ddof=1))
    _close(jnp.var(x, ddof=2), np.var(x, ddof=2))
    _close(jnp.var(np.ones((2, 3)), axis=0, ddof=2), np.full(3, np.nan))


def test_quantile_bad_inputs():
    with pytest.raises(NumbaxValueError, match="method is 'cubic'"):
        jnp.quantile(X, 0.5, method="cubic")
    with pytest.raises(NumbaxValueError, match=r"must be in \[0, 1\]"):
        jnp.nanquantile(X, np.array([0.5, 1.5]))
    with pytest.raises(NumbaxValueError, match=r"must be in \[0, 1\]"):
        jnp.percentile(X, 101)
    with pytest.raises(NumbaxTypeError, match="complex"):
        jnp.median(np.array([1j, 2j]))
    with pytest.raises(NumbaxValueError, match="empty"):
        jnp.median(np.zeros((0, 2)), axis=0)
    with pytest.raises(NumbaxValueError, match="only method='inverted_cdf'"):
        jnp.quantile(X, 0.5, weights=np.ones(X.shape))
    with pytest.raises(NumbaxValueError, match="weights has shape"):
        jnp.quantile(X, 0.5, axis=1, method="inverted_cdf", weights=np.ones(3))
    with pytest.raises(NumbaxValueError, match="only method='inverted_cdf'"):
        jnp.nanquantile(X, 0.5, weights=np.ones(X.shape))
    with pytest.raises(NumbaxValueError, match="out of bounds"):
        jnp.nanargmax(X, axis=3)


def test_half_precision_medians_are_numpys():
    """float16 quantiles work in float32 and round once (numpy's median, JAX's quantile):
    averaging the middle pair in float16 was off by up to 16 ulp."""
    rng = np.random.default_rng(21)
    for _ in range(200):
        x = (rng.normal(size=(rng.integers(1, 8), rng.integers(1, 8))) * 5).astype(np.float16)
        for axis in (0, 1, None):
            got = np.asarray(jnp.median(x, axis=axis))
            want = np.median(x, axis=axis)
            assert got.dtype == np.float16
            np.testing.assert_array_equal(got, want)
    big = np.arange(5000, dtype=np.float16)  # positions past float16's integer range
    assert float(jnp.quantile(big, 0.7)) == float(np.quantile(big.astype(np.float32), 0.7)
                                                  .astype(np.float16))
