"""cumsum and cumprod under jit (cpu/runtime/scans.py): numpy's sequential order, so the eager
impl's bits, on every axis, direction, dtype and thread count."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import scans

RNG = np.random.default_rng(11)
SHAPES = [(40_000,), (300, 200), (70, 3, 600), (5000, 4), (2, 20_000)]


def _data(shape, dtype, multiply):
    x = RNG.standard_normal(shape)
    if multiply:  # products near 1, so they neither vanish nor overflow over 40,000 steps
        x = 1 + x * 1e-4
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        x = RNG.integers(0, 1 << 20, shape) if not multiply else RNG.integers(1, 4, shape)
    return x.astype(dtype)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("multiply, dtype", [
    *((False, d) for d in ("float32", "float64", "int32", "uint32", "complex64")),
    *((True, d) for d in ("float32", "float64", "int32", "uint32"))])  # (scans.PRODUCTS)
def test_scans_give_numpys_bits(multiply, dtype, shape, threads):
    x = _data(shape, dtype, multiply)
    accumulate = np.multiply.accumulate if multiply else np.add.accumulate
    for axis in range(len(shape)):
        for reverse in (False, True):
            want = accumulate(np.flip(x, axis) if reverse else x, axis=axis, dtype=x.dtype)
            want = np.flip(want, axis) if reverse else want
            with numbax.config.override("cpu_threads", threads):
                got = scans.cumulative(x, multiply, axis, reverse)
            assert got is not None and got.dtype == x.dtype
            np.testing.assert_array_equal(got, want)


def test_small_and_narrow_scans_stay_numpys():
    assert scans.cumulative(np.ones(100, np.float32), False, 0, False) is None
    assert scans.cumulative(np.ones(1 << 15, np.float16), False, 0, False) is None
    assert scans.cumulative(np.ones(1 << 15, np.complex64), True, 0, False) is None


@pytest.mark.parametrize("fn", [
    lambda a: jnp.cumsum(a, 0), lambda a: jnp.cumsum(a, 1), lambda a: jnp.cumprod(a, 1),
    lambda a: lax.cumsum(a, 0, reverse=True), lambda a: jnp.cumsum(a),
    lambda a: jnp.cumsum(a.astype(jnp.int32), 0)])
def test_jitted_scans_give_what_eager_gives(fn):
    a = (1 + RNG.standard_normal((400, 300)) * 1e-3).astype(np.float32)
    with numbax.disable_jit():
        want = np.asarray(fn(a))
    np.testing.assert_array_equal(np.asarray(numbax.jit(fn)(a)), want)
