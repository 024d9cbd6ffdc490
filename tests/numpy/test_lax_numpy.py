"""numbax.numpy where/select/clip/round/closeness/ufunc extras against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.jax_promotion import jax_float

RNG = np.random.default_rng(6)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _check(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, equal_nan=True, rtol=1e-12)


def test_where_broadcasts_and_promotes():
    c = RNG.normal(size=(3, 1)) > 0
    x = np.arange(4, dtype=np.int32)
    _check(jnp.where(c, x, 1.5), np.where(c, x, 1.5))
    _check(jnp.where(c, x, np.int8(2)), np.where(c, x, np.int8(2)))
    _check(jnp.where(True, 1, 2.0), np.where(True, 1, 2.0))
    _check(jnp.where(np.array([1, 0, 2]), np.ones(3), np.zeros(3)),
           np.where(np.array([1, 0, 2]), np.ones(3), np.zeros(3)))


def test_select():
    x = np.arange(-3, 4)
    _check(jnp.select([x < -1, x > 1], [x * 10, x ** 2], -1),
           np.select([x < -1, x > 1], [x * 10, x ** 2], -1))
    _check(jnp.select([x < 0], [x * 1.5]), np.select([x < 0], [x * 1.5]))


@pytest.mark.parametrize("lo,hi", [(0, 2), (None, 1.5), (-1, None), (np.array([0, 1, 2]), 2)])
def test_clip(lo, hi):
    x = np.array([[-2.0, 0.5, 3.0], [1.0, 2.5, -0.5]])
    _check(jnp.clip(x, lo, hi), np.clip(x, lo, hi))
    _check(jnp.clip(x.astype(np.int32), lo, hi if not isinstance(hi, float) else 1),
           np.clip(x.astype(np.int32), lo, hi if not isinstance(hi, float) else 1))
    _check(jnp.clip(x, min=lo, max=hi), np.clip(x, min=lo, max=hi))


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(decimals):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.25, 12.345, 155.0, -35.0])
    _check(jnp.round(x, decimals), np.round(x, decimals))
    _check(jnp.around(x.astype(np.float32), decimals), np.around(x.astype(np.float32), decimals))
    ints = np.array([15, 25, -35, 1234])
    _check(jnp.round(ints, decimals), np.round(ints, decimals))
    _check(jnp.round(x + 1j * x[::-1], decimals), np.round(x + 1j * x[::-1], decimals))


def test_closeness():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 1.0])
    b = np.array([1.0 + 1e-9, np.nan, np.inf, np.inf, 0.0, 1.1])
    _check(jnp.isclose(a, b), np.isclose(a, b))
    _check(jnp.isclose(a, b, equal_nan=True), np.isclose(a, b, equal_nan=True))
    _check(jnp.isclose(a, b, rtol=0.2), np.isclose(a, b, rtol=0.2))
    _check(jnp.isclose(np.arange(3), 1), np.isclose(np.arange(3), 1))
    assert bool(jnp.allclose(np.ones(3), np.ones(3) + 1e-10))
    assert not bool(jnp.allclose(a, b))
    assert bool(jnp.array_equal(np.arange(3), [0, 1, 2]))
    assert not bool(jnp.array_equal(np.arange(3), np.arange(4)))
    assert bool(jnp.array_equal(a, a, equal_nan=True)) and not bool(jnp.array_equal(a, a))
    assert bool(jnp.array_equiv(np.ones((2, 3)), 1.0))
    assert not bool(jnp.array_equiv(np.ones((2, 3)), np.ones(2)))


def test_nan_to_num_and_ufunc_extras():
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    _check(jnp.nan_to_num(x), np.nan_to_num(x))
    _check(jnp.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
           np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0))
    y = np.array([1.0, np.nan, -2.0, 0.5])
    for name in ("fmax", "fmin", "logaddexp", "logaddexp2", "maximum", "minimum"):
        _check(getattr(jnp, name)(x[[3, 3, 0, 3]], y), getattr(np, name)(x[[3, 3, 0, 3]], y))
    _check(jnp.isposinf(x), np.isposinf(x))
    _check(jnp.isneginf(x), np.isneginf(x))
    _check(jnp.angle(np.array([1 + 1j, -1.0 + 0j])), np.angle(np.array([1 + 1j, -1.0 + 0j])))
    _check(jnp.isreal(np.array([1 + 0j, 1j])), np.isreal(np.array([1 + 0j, 1j])))
    a, b = np.array([12, -18, 0, 7]), np.array([8, 12, 5, 0])
    _check(jnp.gcd(a, b), np.gcd(a, b))
    _check(jnp.lcm(a, b), np.lcm(a, b))
    # JAX's float32 for an int8 quotient (numpy: float64)
    _check(jnp.divide(np.arange(4, dtype=np.int8), 2),
           np.divide(np.arange(4, dtype=np.int8), 2).astype(jax_float(np.int8)))


def test_traceable():
    x = RNG.normal(size=(3, 4))
    f = lambda r: jnp.where(r > 0, jnp.clip(r, 0.1, 0.5), jnp.round(r, 1))  # noqa: E731
    jaxpr = numbax.make_jaxpr(f)(x[0])
    assert "select_n" in str(jaxpr)
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(x)),
                               np.where(x > 0, np.clip(x, 0.1, 0.5), np.round(x, 1)))
    g = numbax.grad(lambda r: jnp.sum(jnp.where(r > 0, r ** 2, -r)))(x[0])
    np.testing.assert_allclose(np.asarray(g), np.where(x[0] > 0, 2 * x[0], -1.0))


def test_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="both or neither"):
        jnp.where(np.ones(3) > 0, 1.0)
    with pytest.raises(NumbaxValueError, match=r"\(3,\) \(2,\)"):
        jnp.where(np.ones(3) > 0, np.ones(2), 0.0)
    with pytest.raises(NumbaxValueError, match="2 entries.*1"):
        jnp.select([np.ones(2) > 0, np.ones(2) > 0], [np.ones(2)])
    with pytest.raises(NumbaxTypeError, match=r"condlist\[0\] has dtype int64"):
        jnp.select([np.ones(2, int)], [np.ones(2)])
    with pytest.raises(NumbaxValueError, match=r"\(3,\) \(2,\)"):
        jnp.isclose(np.ones(3), np.ones(2))
    with pytest.raises(NumbaxTypeError, match="gcd.*must be integers"):
        jnp.gcd(1.5, 2.0)
    with pytest.raises(TypeError):
        jnp.clip(np.array(["a"]), 0, 1)
