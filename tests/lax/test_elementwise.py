"""lax elementwise primitives (lax/elementwise.py) whose eager impl once left the bit-level
definition: round away from zero near .5, population_count of negative integers."""
import numpy as np
import pytest

import numbax
from numbax import lax


def _both(fn, *args):
    return np.asarray(fn(*args)), np.asarray(numbax.jit(fn)(*args))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_round_away_from_zero_is_exact(dtype):
    # floor(x + 0.5) rounds 0.49999999999999994 and 2**52 + 1 up: x + 0.5 itself rounds.
    below_half = np.nextafter(dtype(0.5), dtype(0))
    big_odd = dtype(2 ** (np.finfo(dtype).nmant) + 1)
    x = np.array([below_half, -below_half, big_odd, -big_odd, 0.5, -0.5, 1.5, 2.5, -2.5, -0.25,
                  -0.0, np.inf, -np.inf, np.nan], dtype)
    want = np.array([0.0, -0.0, big_odd, -big_odd, 1.0, -1.0, 2.0, 3.0, -3.0, -0.0, -0.0,
                     np.inf, -np.inf, np.nan], dtype)
    for got in _both(lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO), x):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.25 -> -0.0


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64])
def test_population_count_counts_twos_complement_bits(dtype):
    bits = 8 * np.dtype(dtype).itemsize
    values = [0, 1, -1, 5, -6, int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)]
    patterns = [v % (1 << bits) for v in values]  # two's complement, as Python ints
    x = np.array(patterns, np.dtype(f"u{bits // 8}")).view(dtype)
    want = np.array([bin(p).count("1") for p in patterns], dtype)
    assert want[2] == bits  # -1 has every bit set
    for got in _both(lax.population_count, x):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_complex_abs_derivative_at_zero_is_zero(dtype):
    # d|a + ib| = (a da + b db) / |z|; at z = 0 JAX's rule divides by 1 instead of 0, giving 0.
    f = numbax.grad(lambda a, b: lax.abs(lax.complex(a, b)), argnums=(0, 1))
    for fn in (f, numbax.jit(f)):
        np.testing.assert_allclose(np.asarray(fn(dtype(3), dtype(-4))), [0.6, -0.8], rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(fn(dtype(0), dtype(0))), [0.0, 0.0])


@pytest.mark.parametrize("dtype, complex_dtype", [(np.float32, np.complex64),
                                                  (np.float64, np.complex128)])
def test_conj_of_a_real_float_is_complex(dtype, complex_dtype):
    """lax.conj of float32/float64 gives their complex dtype with +0 imaginary parts (JAX's
    lax.conj); its derivative moves the real part through and nothing from the imaginary."""
    x = np.array([1.5, -2.0, 0.0], dtype)
    for got in _both(lax.conj, x):
        assert got.dtype == complex_dtype
        np.testing.assert_array_equal(got.real, x)
        assert not np.signbit(got.imag).any()
    assert numbax.grad(lambda v: lax.real(lax.conj(v)) * 3.0)(2.0) == 3.0
    assert numbax.grad(lambda v: lax.imag(lax.conj(v)) * 3.0)(2.0) == 0.0


@pytest.mark.parametrize("call", [
    lambda: lax.conj(np.int32(1)), lambda: lax.conj(np.float16(1)),
    lambda: lax.abs(np.uint8(3)), lambda: lax.add(np.bool_(True), np.bool_(True)),
    lambda: lax.mul(np.bool_(True), np.bool_(False)), lambda: lax.lt(np.complex64(1), 1j),
    lambda: lax.is_finite(np.complex64(1)), lambda: lax.reduce_sum(np.ones(3, bool), (0,)),
    lambda: lax.complex(np.float16(1), np.float16(2))])
def test_refuses_the_dtypes_jax_refuses(call):
    with pytest.raises(TypeError):
        call()


def test_polygamma_at_its_poles():
    """At x = 0, -1, -2, ...: inf for odd m, whose two sides both tend to +inf, and nan for
    even m, whose sides tend to opposite infinities (JAX's values; scipy gives -inf there);
    between the poles scipy's values."""
    import scipy.special as sp

    m = np.array([0.0, 1.0, 2.0, 3.0, 1.0, 2.0, 4.0])
    x = np.array([0.0, 0.0, -1.0, -2.0, -3.5, 2.5, -7.0])
    poles = (x <= 0) & (x == np.floor(x))
    want = np.where(poles, np.where(m % 2 == 1, np.inf, np.nan), sp.polygamma(m, x))
    for got in _both(lax.polygamma, m, x):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_max_and_min_over_middle_axes_keep_lax_rules():
    """A reduction over middle axes (2 x 2 pooling by reshape) updates its output element by
    element through sc.fmax/fmin (llvm.maximum/minimum for floats): NaN wins, +0 beats -0 in
    max and -0 beats +0 in min, as lax.max/min; checked against a Python loop."""
    import numbax.numpy as jnp

    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 2, 10, 2)).astype(np.float32)
    x[0, 1, 3, 0] = np.nan
    x[2, :, 5, :] = np.array([[0.0, -0.0], [-0.0, 0.0]], np.float32)
    x[4, :, 7, :] = -0.0
    got_max, got_min = numbax.jit(lambda v: (jnp.max(v, (1, 3)), jnp.min(v, (1, 3))))(x)

    def pick(values, larger):
        best = values[0]
        for v in values[1:]:
            if np.isnan(best) or np.isnan(v):
                best = np.float32(np.nan)
            elif v == best:  # a tie of zeros: the sign the rule prefers
                best = v if np.signbit(v) != larger else best
            elif (v > best) == larger:
                best = v
        return best

    for got, larger in ((got_max, True), (got_min, False)):
        want = np.array([[pick(x[i, :, j, :].ravel(), larger) for j in range(10)]
                         for i in range(6)], np.float32)
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
