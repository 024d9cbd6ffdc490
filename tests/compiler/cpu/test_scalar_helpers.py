"""runtime/scalars.py's helpers in fused CPU kernels. lax.max/min/clamp (fmax/fmin): integer
and bool operands compare plainly, floats propagate NaN and order signed zeros, and a kernel
with several clamps compiles without Numba's warnings (two inlined conditional expressions
made its SSA check warn of variables not in scope). complex64's abs (abs_c64): the float64
hypot rounded to float32, infinities beside NaN giving inf."""
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_integer_clamps_and_extrema_in_one_kernel_match_numpy_without_warnings(dtype):
    info = np.iinfo(dtype)
    x = np.linspace(max(info.min, -300), min(info.max, 300), 4096).astype(dtype)

    def f(c):
        return (lax.clamp(dtype(0), c, dtype(99)) + lax.clamp(dtype(3), c, dtype(9)),
                jnp.clip(c, 5, 50) - jnp.maximum(c, dtype(7)) + jnp.minimum(c, dtype(2)),
                jnp.maximum(c > 3, c > 5) & jnp.minimum(c > 1, c < 40))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numbax.jit(f)(x)
    want = (np.clip(x, 0, 99) + np.clip(x, 3, 9),
            np.clip(x, 5, 50) - np.maximum(x, dtype(7)) + np.minimum(x, dtype(2)),
            np.maximum(x > 3, x > 5) & np.minimum(x > 1, x < 40))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w.astype(np.asarray(g).dtype))


def test_float_clamps_keep_nan_and_signed_zeros():
    x = np.array([np.nan, -0.0, 0.0, -2.0, 0.5, 3.0, np.inf, -np.inf], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numbax.jit(lambda c: (lax.clamp(np.float32(-1), c, np.float32(1)),
                                    lax.max(c, np.float32(0)), lax.min(c, np.float32(-0.0))))(x)
    clamped, larger, smaller = (np.asarray(g) for g in got)
    np.testing.assert_array_equal(clamped, np.clip(x, -1, 1))
    np.testing.assert_array_equal(larger, np.maximum(x, np.float32(0)))
    np.testing.assert_array_equal(smaller, np.minimum(x, np.float32(-0.0)))
    assert np.signbit(larger[1]) == np.signbit(np.maximum(np.float32(-0.0), np.float32(0)))
    assert np.signbit(smaller[2])  # min(+0.0, -0.0) is -0.0, as lax.min


def test_complex64_abs_is_the_rounded_float64_hypot():
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000)
         + 1j * rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000))
    z = z.astype(np.complex64)
    specials = [complex(np.inf, np.nan), complex(np.nan, -np.inf), complex(np.nan, 1.0),
                complex(0.0, -0.0), complex(-np.inf, 2.0), complex(3e38, 3e38),
                complex(1e-45, 1e-45)]
    z[:len(specials)] = specials
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(numbax.jit(lambda z: (jnp.abs(z), jnp.abs(z * 2).sum()))(z)[0])
    with np.errstate(over="ignore"):  # |3e38 + 3e38j| is past float32's range: inf
        want = np.hypot(z.real.astype(np.float64), z.imag.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:3], [np.inf, np.inf, np.nan])
