"""floor_divide, remainder, divmod and fmod (numpy/division.py) against numpy bit for bit,
eagerly and under jit, over signed zeros, infinities, NaN, subnormals and random values
(the differential fuzzer found floor(a / b) and +0.0 remainders where numpy differs)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp

_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.0, -1.0, 0.1, -0.1,
                     3.0, 1e300, -2.5, 7.0, -7.0])


def _operands(dtype):
    rng = np.random.default_rng(0)
    a = np.concatenate([np.repeat(_SPECIAL, len(_SPECIAL)), rng.normal(size=300) * 10])
    b = np.concatenate([np.tile(_SPECIAL, len(_SPECIAL)), rng.normal(size=300)])
    return a.astype(dtype), b.astype(dtype)


def _assert_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_float_division_matches_numpy_bits(name, dtype):
    a, b = _operands(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(np, name)(a, b)
        _assert_bits(getattr(jnp, name)(a, b), want)
        _assert_bits(numbax.jit(getattr(jnp, name))(a, b), want)
        q, r = jnp.divmod(a, b)
    if name != "fmod":
        _assert_bits(q if name == "floor_divide" else r, want)


def test_floor_divide_is_not_floor_of_the_quotient():
    assert float(jnp.floor_divide(1.0, 0.1)) == 9.0 == 1.0 // 0.1
    assert float(jnp.remainder(1.0, 0.1)) == pytest.approx(1.0 % 0.1, abs=0)
    assert np.signbit(jnp.remainder(0.25, -5e-324)) and np.signbit(jnp.floor_divide(0.0, -1.0))


def test_integer_division_and_gradients_unchanged():
    a, b = np.arange(-7, 8), np.array([3, -3, 2, -2, 5] * 3)
    np.testing.assert_array_equal(np.asarray(jnp.floor_divide(a, b)), a // b)
    np.testing.assert_array_equal(np.asarray(jnp.remainder(a, b)), a % b)
    g = numbax.grad(lambda x: jnp.sum(jnp.remainder(x, 0.7)))(np.array([1.0, -2.5]))
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0])
    g = numbax.grad(lambda y: jnp.remainder(2.3, y))(0.7)
    np.testing.assert_allclose(float(g), -np.floor(2.3 / 0.7))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_remainder_gradient_where_the_remainder_is_zero(dtype):
    # x mod y = x - floor(x / y) * y has slope 1 in x on both sides of each jump, and
    # -floor(x / y) in y (JAX's rule); the signed-zero fix-up once cut both to 0 at exact zeros.
    x = np.array([-2.5, 1.0, 6.0, -6.0, 3.0, 1.3], dtype)
    y = np.array([2.5, 1.0, 2.0, -2.0, -1.5, 0.5], dtype)
    grad = numbax.vmap(numbax.grad(jnp.remainder, argnums=(0, 1)))
    for gx, gy in (grad(x, y), numbax.jit(grad)(x, y)):
        np.testing.assert_array_equal(np.asarray(gx), np.ones_like(x))
        np.testing.assert_allclose(np.asarray(gy), -np.floor(x.astype(np.float64) / y), rtol=1e-6)
    _assert_bits(jnp.remainder(x, y), np.remainder(x, y))  # signs of the zeros kept
