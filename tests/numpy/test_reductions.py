"""numbax.numpy reductions against numpy: axes, keepdims, dtypes, ddof, grads, tracing."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.jax_promotion import jax_float

RNG = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
SHAPES_AXES = [((), None), ((5,), None), ((5,), 0), ((3, 4), None), ((3, 4), 1), ((3, 4), -2),
               ((2, 3, 4), (0, 2)), ((2, 3, 4), 1), ((2, 0, 3), 0)]
DTYPES = [np.float64, np.float32, np.int32, np.int64, np.uint8, np.bool_]


def _data(shape, dtype):
    x = RNG.normal(size=shape) * 5
    if np.dtype(dtype) == np.bool_:
        return x > 0
    if np.dtype(dtype).kind == "u":
        return np.abs(x).astype(dtype)
    return x.astype(dtype)


def _check(got, want, rtol=1e-6):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "prod", "all", "any", "count_nonzero"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_like(name, shape, axis, dtype, keepdims):
    x = _data(shape, dtype)
    if name == "prod":
        x = (x % 3 + 1).astype(dtype) if x.dtype != np.bool_ else x
    _check(getattr(jnp, name)(x, axis=axis, keepdims=keepdims),
           getattr(np, name)(x, axis=axis, keepdims=keepdims), rtol=1e-5)


@pytest.mark.parametrize("shape,axis", SHAPES_AXES[:-1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.float16])
@pytest.mark.parametrize("name", ["mean", "var", "std", "max", "min", "ptp", "median"])
def test_statistics(name, shape, axis, dtype):
    x = _data(shape, dtype)
    tol = 2e-3 if dtype == np.float16 else 1e-5

    def want(**kw):  # numpy's value; for integers in JAX's float (float32 for int32)
        out = getattr(np, name)(x, axis=axis, **kw)
        inexact = name in ("mean", "var", "std", "median") and x.dtype.kind in "biu"
        return np.asarray(out).astype(jax_float(x.dtype)) if inexact else out

    _check(getattr(jnp, name)(x, axis=axis), want(), rtol=tol)
    if name in ("var", "std"):
        _check(getattr(jnp, name)(x, axis=axis, ddof=1, keepdims=True),
               want(ddof=1, keepdims=True), rtol=tol)


def test_dtype_argument_and_accumulators():
    x = np.arange(1, 7, dtype=np.int8).reshape(2, 3)
    _check(jnp.sum(x), np.sum(x))  # int8 accumulates in int64, as numpy
    _check(jnp.sum(x, dtype=np.float32), np.sum(x, dtype=np.float32))
    # cumsum keeps an integer's dtype, as JAX (numpy widens int8 to int64)
    _check(jnp.cumsum(x, axis=1), np.cumsum(x, axis=1, dtype=np.int8))
    _check(jnp.mean(x, dtype=np.float32), np.mean(x, dtype=np.float32))
    _check(jnp.var(np.array([1 + 2j, 3 - 1j])), np.var(np.array([1 + 2j, 3 - 1j])))
    _check(jnp.sum(x, initial=10), np.sum(x, initial=10))
    _check(jnp.max(np.zeros((0, 2)), axis=0, initial=-1.0),
           np.max(np.zeros((0, 2)), axis=0, initial=-1.0))


@pytest.mark.parametrize("shape,axis", [((5,), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1)])
@pytest.mark.parametrize("name", ["argmax", "argmin", "cumsum", "cumprod"])
def test_arg_and_cumulative(name, shape, axis):
    x = _data(shape, np.float64)
    _check(getattr(jnp, name)(x, axis=axis), getattr(np, name)(x, axis=axis))
    if name.startswith("arg"):
        _check(getattr(jnp, name)(x, axis=axis, keepdims=True),
               getattr(np, name)(x, axis=axis, keepdims=True))


def test_argmax_ties_and_nan_follow_numpy():
    x = np.array([1.0, 3.0, 3.0, np.nan, 2.0])
    assert int(jnp.argmax(x)) == np.argmax(x)
    assert int(jnp.argmax(x[:3])) == np.argmax(x[:3]) == 1


def test_cumulative_sum_include_initial():
    x = np.arange(1, 5)
    _check(jnp.cumulative_sum(x, include_initial=True),
           np.concatenate([[0], np.cumsum(x)]))
    _check(jnp.cumulative_prod(x), np.cumprod(x))


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd",
                                  "nanprod", "nancumsum"])
def test_nan_functions(name):
    x = RNG.normal(size=(3, 4))
    x[0, 1] = x[2, 3] = np.nan
    _check(getattr(jnp, name)(x), getattr(np, name)(x))
    axis_kw = {} if name == "nancumsum" else {"keepdims": True}
    _check(getattr(jnp, name)(x, axis=1, **axis_kw), getattr(np, name)(x, axis=1, **axis_kw))


@pytest.mark.parametrize("q", [0.0, 0.3, 0.5, 1.0, np.array([0.1, 0.9])])
@pytest.mark.parametrize("axis", [None, 0, (0, 2)])
def test_quantile_percentile(q, axis):
    x = RNG.normal(size=(3, 4, 5))
    _check(jnp.quantile(x, q, axis=axis), np.quantile(x, q, axis=axis))
    _check(jnp.percentile(x, np.multiply(q, 100), axis=axis),
           np.percentile(x, np.multiply(q, 100), axis=axis))
    _check(jnp.median(x, axis=axis, keepdims=True), np.median(x, axis=axis, keepdims=True))


def test_median_with_nan_is_nan():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])
    _check(jnp.median(x, axis=1), np.median(x, axis=1))


def test_average():
    x = RNG.normal(size=(3, 4))
    w = RNG.uniform(size=(3, 4))
    _check(jnp.average(x), np.average(x))
    _check(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w))
    _check(jnp.average(x, axis=0, weights=w[:, 0]), np.average(x, axis=0, weights=w[:, 0]))
    avg, scl = jnp.average(x, axis=1, weights=w, returned=True)
    want_avg, want_scl = np.average(x, axis=1, weights=w, returned=True)
    _check(avg, want_avg)
    _check(scl, want_scl)


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("fn,ref", [
    (lambda x: jnp.mean(x ** 2), lambda x: np.mean(x ** 2)),
    (lambda x: jnp.std(x, ddof=1), lambda x: np.std(x, ddof=1)),
    (lambda x: jnp.sum(jnp.var(x, axis=0)), lambda x: np.sum(np.var(x, axis=0))),
    (lambda x: jnp.sum(jnp.prod(x, axis=1)), lambda x: np.sum(np.prod(x, axis=1))),
    (lambda x: jnp.sum(jnp.cumsum(x, axis=1) ** 2), lambda x: np.sum(np.cumsum(x, 1) ** 2)),
    (lambda x: jnp.median(x), lambda x: np.median(x)),
])
def test_grads_match_finite_differences(fn, ref):
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(numbax.grad(fn)(x)), _fd_grad(ref, x), rtol=1e-5,
                               atol=1e-6)


def test_traceable_under_make_jaxpr_and_vmap():
    x = RNG.normal(size=(4, 3, 5))
    f = lambda m: jnp.var(m, axis=0) + jnp.max(m, axis=0) + jnp.argmax(m, axis=0)  # noqa: E731
    jaxpr = numbax.make_jaxpr(f)(x[0])
    assert "reduce_sum" in str(jaxpr) and "argmax" in str(jaxpr)
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(x)),
                               np.stack([np.asarray(f(m)) for m in x]))
    g = lambda m: jnp.median(m, axis=1) + jnp.cumsum(m, 1)[:, -1]  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.vmap(g)(x)),
                               np.stack([np.median(m, 1) + m.sum(1) for m in x]))


def test_x64_off_narrows():
    numbax.config.update("jax_enable_x64", False)
    try:
        assert jnp.mean(np.arange(4)).dtype == np.float32
        assert jnp.sum(np.ones(3, np.int8)).dtype == np.int32
        assert jnp.argmax(np.arange(4.0)).dtype == np.int32
    finally:
        numbax.config.update("jax_enable_x64", True)


def test_bad_inputs():
    x = np.ones((2, 3))
    with pytest.raises(NumbaxValueError, match=r"axis 2 is out of bounds.*rank 2"):
        jnp.sum(x, axis=2)
    with pytest.raises(NumbaxValueError, match="repeated"):
        jnp.mean(x, axis=(0, 0))
    with pytest.raises(NumbaxTypeError, match="expected an int"):
        jnp.sum(x, axis=1.5)
    with pytest.raises(NumbaxValueError, match=r"shape \(0,\).*no identity"):
        jnp.max(np.zeros(0))
    with pytest.raises(NumbaxValueError, match="empty"):
        jnp.argmax(np.zeros((2, 0)), axis=1)
    with pytest.raises(NumbaxTypeError, match="expected an array"):
        jnp.sum("abc")
    with pytest.raises(TypeError):
        jnp.mean(np.array(["a", "b"]))
    with pytest.raises(NumbaxValueError, match=r"weights has shape \(2,\).*\(2, 3\)"):
        jnp.average(x, axis=1, weights=np.ones(2))
    with pytest.raises(NumbaxValueError, match="must be in"):
        jnp.quantile(x, 1.5)
    with pytest.raises(NumbaxValueError, match="axis is required"):
        jnp.cumulative_sum(x)
    with pytest.raises(NumbaxValueError, match="method is 'cubic'"):
        jnp.quantile(x, 0.5, method="cubic")


# ----------------------------------------------------------------------------- where=


def test_where_masks_match_numpy():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(3, 4))
    x[0, 1] = np.nan
    mask = rng.uniform(size=(3, 4)) > 0.3
    row_mask = np.array([True, False, True, True])  # broadcasts along the rows
    clean = np.where(np.isnan(x), 0.5, x)
    for m in (mask, row_mask):
        for axis in (None, 0, 1):
            for name in ("sum", "prod", "mean", "var", "std"):
                _check(getattr(jnp, name)(clean, axis=axis, where=m),
                       getattr(np, name)(clean, axis=axis, where=m))
            for name in ("max", "min"):
                _check(getattr(jnp, name)(clean, axis=axis, where=m, initial=0.25),
                       getattr(np, name)(clean, axis=axis, where=m, initial=0.25))
            for name in ("all", "any"):
                _check(getattr(jnp, name)(clean > 0, axis=axis, where=m),
                       getattr(np, name)(clean > 0, axis=axis, where=m))
            for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd"):
                _check(getattr(jnp, name)(x, axis=axis, where=m),
                       getattr(np, name)(x, axis=axis, where=m))
            _check(jnp.nanmax(x, axis=axis, where=m, initial=-5.0),
                   np.nanmax(x, axis=axis, where=m, initial=-5.0))
    _check(jnp.var(clean, axis=1, where=mask, ddof=1), np.var(clean, axis=1, where=mask, ddof=1))
    g = numbax.grad(lambda v: jnp.mean(v, where=row_mask))(np.arange(4.0))
    np.testing.assert_allclose(np.asarray(g), row_mask / row_mask.sum())
    with pytest.raises(NumbaxValueError, match="needs initial"):
        jnp.max(clean, where=mask)
    with pytest.raises(NumbaxValueError, match="where has shape"):
        jnp.sum(clean, where=np.ones(3, bool))
