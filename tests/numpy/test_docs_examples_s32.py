"""Docstring examples of jax.numpy that numbax got wrong, with JAX 0.10.2's printed values as
literals (jax/_src/numpy/*.py `Examples:` sections)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


@pytest.fixture(autouse=True)
def _x32():
    x64 = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", False)
    yield
    numbax.config.update("jax_enable_x64", x64)


def test_sinc_higher_derivatives_at_zero():
    # jnp.sinc docstring: every derivative at 0 comes from the Maclaurin series
    f = jnp.sinc
    got = []
    for _ in range(5):
        f = numbax.grad(f)
        got.append(float(f(0.0)))
    np.testing.assert_allclose(got, [0.0, -3.2898684, 0.0, 19.481821, 0.0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(numbax.jit(numbax.grad(numbax.grad(jnp.sinc)))(0.0), -3.2898684,
                               rtol=1e-6)
    np.testing.assert_allclose(numbax.vmap(numbax.grad(numbax.grad(jnp.sinc)))(
        jnp.array([0.0, 1.0])), [-3.2898684, 2.0000002], rtol=1e-6)


def test_percentile_nearest_ties_go_low():
    # jnp.percentile docstring: numpy rounds half to even, JAX takes the lower neighbour
    x = jnp.array([0, 1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(jnp.percentile(x, jnp.array([25, 50, 75]), method="nearest"),
                                  [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(
        jnp.quantile(jnp.arange(6.0), jnp.array([0.1, 0.3, 0.5, 0.7, 0.9]), method="nearest"),
        [0.0, 1.0, 2.0, 3.0, 4.0])


def test_bincount_negative_values_count_in_bin_zero():
    x = jnp.array([-1, -1, 1, 3, 10])
    np.testing.assert_array_equal(jnp.bincount(x, length=5), [2, 1, 0, 1, 0])
    np.testing.assert_array_equal(jnp.bincount(x), [2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(jnp.bincount(jnp.array([-3])), [1])


def test_math_of_bools_and_small_ints_gives_jax_float32():
    # JAX's jnp.fabs docstring: bools give float32 (numpy: float16); the other functions'
    # dtypes are checked against JAX's recorded ones in tests/test_dtypes.py
    out = jnp.fabs(jnp.array([True, False]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1.0, 0.0])
    for fn, ref in ((jnp.sin, np.sin), (jnp.sqrt, np.sqrt), (jnp.exp2, np.exp2),
                    (jnp.arctan2, np.arctan2)):
        n = 2 if fn is jnp.arctan2 else 1
        for dt in (np.int8, np.int16, np.int32):
            args = (np.array([1], dt),) * n
            got = fn(*args)
            assert got.dtype == np.float32, (fn, dt)
            np.testing.assert_allclose(got, ref(*(a.astype(np.float64) for a in args)), rtol=1e-6)


def test_rounding_keeps_integers_and_rounds_complex():
    for fn in (jnp.floor, jnp.ceil, jnp.trunc):
        assert fn(jnp.array([True])).dtype == np.bool_
        out = fn(jnp.array([3], jnp.uint8))
        assert out.dtype == np.uint8 and int(out[0]) == 3
    assert jnp.square(jnp.array([True])).dtype == np.int32
    # jnp.rint docstring
    np.testing.assert_array_equal(jnp.rint(jnp.array([-1.5 + 4.5j, 3.5 - 0.2j])),
                                  np.array([-2 + 4j, 4 + 0j], np.complex64))


def test_linspace_rounds_as_jax():
    # jnp.arctan2 docstring: JAX's samples are start * (1 - t) + stop * t, not start + i * step
    # (XLA may contract that into an FMA, so only the unfused entries are compared)
    theta = jnp.linspace(-jnp.pi, jnp.pi, 9)
    assert float(theta[2]) == -1.570796251296997
    np.testing.assert_array_equal(jnp.linspace(0.0, 1.0, 5), [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(jnp.linspace(0, 10, 4, dtype=int), [0, 3, 6, 10])
    out, step = jnp.linspace(2.0, 3.0, 1, endpoint=False, retstep=True)
    np.testing.assert_array_equal(out, [2.0])
    assert float(step) == 1.0
