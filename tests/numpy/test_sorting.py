"""numbax.numpy sorting, searching, unique/nonzero and differences against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import ConcretizationTypeError, NumbaxValueError

RNG = np.random.default_rng(5)


def _check(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, equal_nan=True)


ARRAYS = [RNG.normal(size=7), RNG.integers(0, 4, size=(3, 5)), RNG.normal(size=(2, 3, 4)),
          np.array([3.0, np.nan, 1.0, np.nan, -np.inf, 2.0]), np.array([True, False, True]),
          RNG.integers(0, 3, size=(4, 6)).astype(np.uint8), np.zeros((0, 3))]


@pytest.mark.parametrize("x", ARRAYS, ids=range(len(ARRAYS)))
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_argsort(x, axis):
    _check(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    _check(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"))


def test_sort_descending_and_lexsort():
    x = np.array([3, 1, 3, 2, 1])
    _check(jnp.sort(x, descending=True), np.sort(x)[::-1])
    keys = (np.array([1, 0, 1, 0, 1]), np.array([2, 2, 1, 1, 2]))
    _check(jnp.lexsort(keys), np.lexsort(keys))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    a = np.array([-np.inf, 0.0, 1.0, 1.0, 2.5, np.nan])
    v = np.array([[1.0, -5.0, np.nan], [2.5, 100.0, 0.0]])
    # indices are int32, as JAX gives them (numpy: int64)
    _check(jnp.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side).astype(np.int32))
    ints = np.array([1, 3, 3, 7])
    _check(jnp.searchsorted(ints, 3, side=side),
           np.int32(np.searchsorted(ints, 3, side=side)))


@pytest.mark.parametrize("n,axis", [(1, -1), (2, -1), (1, 0), (3, 1), (0, 0)])
def test_diff(n, axis):
    x = RNG.normal(size=(4, 5))
    _check(jnp.diff(x, n, axis), np.diff(x, n, axis))
    _check(jnp.diff(x, n, axis, prepend=0.0, append=x[:1] if axis == 0 else x[:, :1]),
           np.diff(x, n, axis, prepend=0.0, append=x[:1] if axis == 0 else x[:, :1]))


def test_diff_bool_and_ediff1d():
    b = np.array([True, True, False])
    _check(jnp.diff(b), np.diff(b))
    x = np.arange(6.0).reshape(2, 3) ** 2
    _check(jnp.ediff1d(x), np.ediff1d(x))
    _check(jnp.ediff1d(x, to_end=np.array([7, 8]), to_begin=-1),
           np.ediff1d(x, to_end=[7, 8], to_begin=-1))


@pytest.mark.parametrize("kw", [{}, {"left": -1.0, "right": 9.0}])
def test_interp(kw):
    xp = np.array([0.0, 1.0, 1.5, 4.0])
    fp = np.array([1.0, -1.0, 2.0, 0.5])
    x = np.array([[-1.0, 0.0, 0.3, 1.0], [1.2, 3.9, 4.0, 7.0]])
    _check(jnp.interp(x, xp, fp, **kw), np.interp(x, xp, fp, **kw))
    _check(jnp.interp(2, np.array([1, 3]), np.array([0, 10])), np.interp(2, [1, 3], [0, 10]))
    _check(jnp.interp(x, xp[:1], fp[:1]), np.interp(x, xp[:1], fp[:1]))
    out = numbax.vmap(lambda f: jnp.interp(x[0], xp, f))(np.stack([fp, 2 * fp]))
    _check(out, np.stack([np.interp(x[0], xp, fp), np.interp(x[0], xp, 2 * fp)]))
    with pytest.raises(NumbaxValueError, match=r"xp has shape \(4,\) and fp has shape \(3,\)"):
        jnp.interp(x, xp, fp[:3])


def test_concrete_only_functions():
    x = np.array([[0, 2, 0], [3, 0, 3]])
    for got, want in zip(jnp.nonzero(x), np.nonzero(x)):
        _check(got, want)
    _check(jnp.argwhere(x), np.argwhere(x))
    _check(jnp.flatnonzero(x), np.flatnonzero(x))
    for got, want in zip(jnp.where(x > 1), np.where(x > 1)):
        _check(got, want)
    _check(jnp.nonzero(x, size=5, fill_value=-1)[1], np.array([1, 0, 2, -1, -1]))
    _check(jnp.unique(x), np.unique(x))
    for got, want in zip(jnp.unique(x, return_index=True, return_inverse=True,
                                    return_counts=True),
                         np.unique(x, return_index=True, return_inverse=True,
                                   return_counts=True)):
        _check(got, want)


def test_traceable():
    x = RNG.normal(size=(3, 6))
    f = lambda r: jnp.sort(r) + jnp.argsort(r) + jnp.searchsorted(jnp.sort(r), r)  # noqa: E731
    jaxpr = numbax.make_jaxpr(f)(x[0])
    assert "sort" in str(jaxpr)
    want = np.stack([np.sort(r) + np.argsort(r) + np.searchsorted(np.sort(r), r) for r in x])
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(x)), want)
    g = numbax.grad(lambda r: jnp.sum(jnp.sort(r) * jnp.arange(6.0)))(x[0])
    np.testing.assert_allclose(np.asarray(g), np.arange(6.0)[np.argsort(np.argsort(x[0]))])
    d = numbax.grad(lambda r: jnp.sum(jnp.diff(r, 2) ** 2))(x[0])
    eps = 1e-6
    ref = [(np.sum(np.diff(x[0] + eps * e, 2) ** 2) - np.sum(np.diff(x[0] - eps * e, 2) ** 2))
           / (2 * eps) for e in np.eye(6)]
    np.testing.assert_allclose(np.asarray(d), ref, rtol=1e-6, atol=1e-8)


def test_bad_inputs():
    with pytest.raises(ConcretizationTypeError):
        numbax.make_jaxpr(jnp.nonzero)(np.ones(3))
    with pytest.raises(ConcretizationTypeError):
        numbax.make_jaxpr(jnp.unique)(np.ones(3))
    with pytest.raises(ConcretizationTypeError):
        numbax.make_jaxpr(lambda c: jnp.where(c))(np.ones(3))
    with pytest.raises(NumbaxValueError, match=r"a has shape \(\)"):
        jnp.sort(1.0, axis=0)
    with pytest.raises(NumbaxValueError, match="out of bounds"):
        jnp.argsort(np.ones((2, 3)), axis=2)
    with pytest.raises(NumbaxValueError, match=r"a has shape \(2, 2\).*1-d"):
        jnp.searchsorted(np.ones((2, 2)), 1.0)
    with pytest.raises(NumbaxValueError, match="side 'middle'"):
        jnp.searchsorted(np.ones(2), 1.0, side="middle")
    with pytest.raises(NumbaxValueError, match="n=-1"):
        jnp.diff(np.ones(3), -1)
    with pytest.raises(TypeError):
        jnp.sort(np.array(["b", "a"]))


def test_interp_complex_fp_keeps_the_imaginary_part():
    x = np.array([0.0, 1.5, 2.0, 3.0])
    xp = np.array([1.0, 2.0])
    for fp, kw in [(np.array([1j, 2.0]), {}), (np.array([1j, 2.0]), {"left": 5j, "right": -1}),
                   (np.array([1 - 1j, 2 + 3j], np.complex64), {})]:
        want = np.interp(x, xp, fp, **kw)
        _check(jnp.interp(x, xp, fp, **kw), want)
        _check(numbax.jit(lambda a, f, kw=kw: jnp.interp(a, xp, f, **kw))(x, fp), want)


@pytest.mark.parametrize("period", [4.0, -4.0, 2.5, 360.0])
def test_interp_period(period):
    x = np.array([-1.0, 1.0, 1.5, 3.0, 4.0, 9.5, -7.25, 0.0])
    xp = np.array([3.0, 1.0, 5.5, 2.0])  # unsorted, and beyond one period: reduced mod period
    fp = np.array([10.0, 20.0, 5.0, 1.0])
    want = np.interp(x, xp, fp, period=period)
    _check(jnp.interp(x, xp, fp, period=period), want)
    _check(numbax.jit(lambda a, p: jnp.interp(a, xp, fp, period=p))(x, np.float64(period)), want)
