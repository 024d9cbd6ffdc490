"""numbax.numpy ufuncs (numpy/ufuncs.py) at hostile inputs, eagerly and under jit, against numpy:
hypot without overflow, log2/log10 of complex infinities, heaviside of NaN."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


def _both(fn, *args):
    """fn eagerly and under jit, as numpy arrays."""
    return np.asarray(fn(*args)), np.asarray(numbax.jit(fn)(*args))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_hypot_scales_instead_of_squaring(dtype):
    big = float(np.finfo(dtype).max) / 4
    tiny = float(np.finfo(dtype).smallest_subnormal) * 3
    a = np.array([big, 3.0, -tiny, 0.0, -0.0, np.inf, np.nan, -np.inf, 5.0, np.nan], dtype)
    b = np.array([big, -4.0, tiny, 0.0, 0.0, np.nan, np.inf, 1.0, 0.0, 1.0], dtype)
    want = np.hypot(a, b)  # numpy's float16 loop computes in float32: 200, 250 -> 320
    for got in _both(jnp.hypot, a, b):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2 * float(np.finfo(dtype).eps))
    f16 = np.float16  # 200**2 overflows float16: the squaring form gave inf
    np.testing.assert_allclose(jnp.hypot(f16(200), f16(250)), np.hypot(f16(200), f16(250)),
                               rtol=1e-3)


def test_hypot_gradient():
    # d/dx hypot(x, y) = x / hypot(x, y); at (0, 0) JAX's subgradient splits 0.5 / 0.5.
    grad = numbax.grad(jnp.hypot, argnums=(0, 1))
    gx, gy = grad(-3.0, 4.0)
    np.testing.assert_allclose([float(gx), float(gy)], [-0.6, 0.8])
    gx, gy = grad(1e200, 1e200)
    np.testing.assert_allclose([float(gx), float(gy)], [0.5 ** 0.5] * 2)
    assert float(numbax.grad(jnp.hypot)(0.0, 0.0)) == 0.5


@pytest.mark.parametrize("name", ["log2", "log10"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_log2_log10_at_infinity_and_zero(name, dtype):
    # Dividing log(z) by log(base) + 0j made inf + 0j into inf + nanj.
    z = np.array([complex(np.inf, 0), complex(-np.inf, -1), complex(1, np.inf), 0j,
                  complex(-0.0, 0.0), 1e300 + 1e300j, 3 - 4j, -1 + 0j], dtype)
    want = getattr(np, name)(z)
    for got in _both(getattr(jnp, name), z):
        assert got.dtype == want.dtype
        for part in ("real", "imag"):  # part by part: inf - inf is NaN in a complex difference
            np.testing.assert_allclose(getattr(got, part), getattr(want, part),
                                       rtol=float(np.finfo(dtype).eps) * 4)


def test_heaviside_of_nan_is_nan():
    x1 = np.array([np.nan, -np.inf, -1.0, -0.0, 0.0, 2.0, np.nan])
    x2 = np.array([0.5, 0.5, 0.5, 0.5, 0.25, 0.5, np.nan])
    want = np.heaviside(x1, x2)
    for got in _both(jnp.heaviside, x1, x2):
        np.testing.assert_array_equal(got, want)
