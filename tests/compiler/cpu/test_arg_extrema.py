"""argmax/argmin along the last axis on Numba's threads (cpu/runtime/arg_extrema.py): numpy's
indices on every row length around the vector width, with NaNs, signed zeros, infinities and
ties anywhere in a row, serial and on two threads, and under jit."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import arg_extrema

RNG = np.random.default_rng(11)
LENGTHS = (1, 3, 15, 16, 17, 31, 64, 65, 100, 129, 1000)


def _rows(dtype, length: int) -> np.ndarray:
    """Enough rows of `length` that the input is over MIN_SIZE, values drawn from few levels
    (ties), with specials planted in some rows."""
    rows = -(-arg_extrema.MIN_SIZE // length) + 7
    if np.dtype(dtype).kind == "f":
        x = RNG.integers(-3, 4, (rows, length)).astype(dtype)
        x[0] = np.nan
        x[1, -1] = np.nan  # in the last partial vector (or the last whole one)
        x[2, length // 2] = np.nan
        x[2, length - 1] = np.nan  # a second NaN: the first wins
        x[3] = -0.0
        x[3, -1] = 0.0
        x[4] = 0.0
        x[4, 0] = -0.0
        x[5, :] = np.inf
        x[6, length // 3] = -np.inf
        x[6, length // 3 + 1:] = np.inf if length > 2 else x[6, length // 3 + 1:]
        return x
    info = np.iinfo(dtype)
    x = RNG.integers(max(info.min, -3), min(info.max, 4), (rows, length)).astype(dtype)
    x[0] = info.max
    x[1] = info.min
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "int8"])
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("threads", [1, 2])
def test_indices_are_numpys(dtype, length, threads):
    x = _rows(dtype, length)
    with numbax.config.override("cpu_threads", threads):
        for larger, fn in ((True, np.argmax), (False, np.argmin)):
            got = arg_extrema.along_last(x, larger, np.int32)
            assert got is not None and got.dtype == np.int32
            np.testing.assert_array_equal(got, fn(x, -1), err_msg=f"{fn.__name__} {dtype}")


def test_layouts_and_leading_axes():
    base = RNG.standard_normal((40, 30, 70)).astype(np.float32)
    for x in (base, base[:, ::2], base.transpose(1, 0, 2), base[..., ::-1]):
        np.testing.assert_array_equal(arg_extrema.along_last(x, True, np.int64),
                                      np.argmax(x, -1))


def test_numpy_keeps_what_the_kernel_does_not_take():
    assert arg_extrema.along_last(np.zeros((10, 10), np.float32), True, np.int32) is None
    assert arg_extrema.along_last(np.zeros((9000, 0), np.float32), True, np.int32) is None
    assert arg_extrema.along_last(np.zeros((100, 100), np.complex64), True, np.int32) is None
    assert arg_extrema.along_last(np.zeros((100, 100), bool), True, np.int32) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_jitted_argmax_and_argmin_over_rows(threads):
    x = RNG.standard_normal((300, 250)).astype(np.float32)
    x[7, 40] = np.nan
    x[8, :] = 1.5
    run = numbax.jit(lambda v: (jnp.argmax(v, -1), jnp.argmin(v, axis=1), jnp.argmax(v, 0)))
    with numbax.config.override("cpu_threads", threads):
        top, bottom, down = map(np.asarray, run(x))
    np.testing.assert_array_equal(top, np.argmax(x, -1))
    np.testing.assert_array_equal(bottom, np.argmin(x, 1))
    np.testing.assert_array_equal(down, np.argmax(x, 0))
