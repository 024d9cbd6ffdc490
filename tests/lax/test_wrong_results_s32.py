"""lax results that once differed from JAX's, each against values JAX 0.10.2 (CPU) gave, written
here as literals: max/min of signed zeros and NaN, unsigned arithmetic shifts, integer division
and remainder by zero, and the sign of complex infinities. jit must give what eager gives."""
import numpy as np
import pytest

import numbax
from numbax import lax

NAN = np.nan
# Operands with every pairing of signed zeros and NaN.
X = np.array([0.0, -0.0, 0.0, -0.0, NAN, 1.0, NAN, -0.0], np.float32)
Y = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, NAN, -0.0, NAN], np.float32)


def _same_bits(got, want):
    """Equal values, NaN where want has NaN, and the same sign on every non-NaN value."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


def _eager_and_jit(f, *args):
    eager = f(*args)
    _same_bits(numbax.jit(f)(*args), eager)
    return eager


@pytest.mark.parametrize("f, want", [
    (lax.max, [0.0, 0.0, 0.0, -0.0, NAN, NAN, NAN, NAN]),
    (lax.min, [-0.0, -0.0, 0.0, -0.0, NAN, NAN, NAN, NAN]),
], ids=["max", "min"])
def test_max_min_order_signed_zeros_and_propagate_nan(f, want):
    _same_bits(_eager_and_jit(f, X, Y), np.array(want, np.float32))
    # compiled control flow renders max/min as array expressions
    loop = numbax.jit(lambda a, b: lax.fori_loop(0, 2, lambda i, c: f(a, b), a))
    _same_bits(loop(X, Y), np.array(want, np.float32))


@pytest.mark.parametrize("x, want_max, want_min", [
    ([0.0, -0.0], 0.0, -0.0), ([-0.0, 0.0], 0.0, -0.0), ([-0.0, -0.0], -0.0, -0.0),
    ([NAN, -0.0], NAN, NAN),
])
def test_reduce_max_min_of_signed_zeros(x, want_max, want_min):
    x = np.array(x, np.float64)
    big = np.concatenate([np.full(2000, -0.0), x])  # a row kernel's accumulator
    rows = np.stack([x, x[::-1]])
    for reduce, want in ((lax.reduce_max, want_max), (lax.reduce_min, want_min)):
        f = lambda v, reduce=reduce: reduce(v, (0,))  # noqa: E731
        _same_bits(_eager_and_jit(f, x), np.float64(want))
        _same_bits(numbax.jit(f)(big), np.float64(want))
        whole = numbax.jit(lambda v, f=f: lax.fori_loop(0, 1, lambda i, c: f(v), v[0]))
        _same_bits(whole(x), np.float64(want))
        _same_bits(_eager_and_jit(lambda v, reduce=reduce: reduce(v, (1,)), rows),
                   np.array([want, want]))
        _same_bits(_eager_and_jit(lambda v, reduce=reduce: reduce(v, (0,)), rows.T),
                   np.array([want, want]))


def test_cummax_cummin_and_reduce_window_order_signed_zeros():
    x = np.array([-0.0, 0.0, -0.0, NAN, 0.0], np.float32)
    _same_bits(_eager_and_jit(lax.cummax, x), np.array([-0.0, 0.0, 0.0, NAN, NAN], np.float32))
    _same_bits(_eager_and_jit(lambda v: lax.cummin(-v), x),
               np.array([0.0, -0.0, -0.0, NAN, NAN], np.float32))
    _same_bits(_eager_and_jit(lambda v: lax.cummax(v, reverse=True), x),
               np.array([NAN, NAN, NAN, NAN, 0.0], np.float32))
    z = np.array([-0.0, 0.0, -0.0], np.float32)
    _same_bits(_eager_and_jit(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (1,),
                                                          "VALID"), z),
               np.array([0.0, 0.0], np.float32))
    _same_bits(_eager_and_jit(lambda v: lax.reduce_window(v, np.inf, lax.min, (2,), (1,),
                                                          "VALID"), z),
               np.array([-0.0, -0.0], np.float32))


@pytest.mark.parametrize("lo, x, hi, want", [
    (-0.0, 0.0, 1.0, 0.0), (0.0, -0.0, 1.0, 0.0), (-1.0, -0.0, 1.0, -0.0),
    (-1.0, 1.0, -0.0, -0.0), (-1.0, NAN, 1.0, NAN),
])
def test_clamp_orders_signed_zeros(lo, x, hi, want):
    args = [np.float32(v) for v in (lo, x, hi)]
    _same_bits(_eager_and_jit(lax.clamp, *args), np.float32(want))
    _same_bits(_eager_and_jit(lax.clamp, args[0], np.full(3, args[1]), args[2]),
               np.full(3, want, np.float32))


# JAX: shift_right_arithmetic shifts an unsigned operand's bits as signed (sign fill).
@pytest.mark.parametrize("dtype, x, y, want", [
    (np.uint8, [0x80, 0xFF, 1, 0x7F, 0x40], 1, [192, 255, 0, 63, 32]),
    (np.uint8, [0x80, 0xFF, 1, 0x7F, 0x40], 7, [255, 255, 0, 0, 0]),
    (np.uint8, [0x80, 0xFF, 1, 0x7F, 0x40], 9, [255, 255, 0, 0, 0]),
    (np.uint16, [0x80, 0xFF, 1, 0x7F, 0x40], 1, [64, 127, 0, 63, 32]),
    (np.uint32, [0x80000000, 0xFFFFFFFF], 31, [0xFFFFFFFF, 0xFFFFFFFF]),
    (np.uint32, [0x80000000, 0xFFFFFFFF], 100, [0xFFFFFFFF, 0xFFFFFFFF]),
    (np.int8, [-128, -1, 1, 127], 8, [-1, -1, 0, 0]),
])
def test_shift_right_arithmetic_of_unsigned(dtype, x, y, want):
    x = np.array(x, dtype)
    y = np.full(x.shape, y, dtype)
    got = _eager_and_jit(lax.shift_right_arithmetic, x, y)
    np.testing.assert_array_equal(got, np.array(want, dtype))
    loop = numbax.jit(lambda a, b: lax.fori_loop(0, 1, lambda i, c: lax.shift_right_arithmetic(
        a, b), a))
    np.testing.assert_array_equal(loop(x, y), np.array(want, dtype))


# JAX (XLA): x / 0 is -1 (all bits set), x % 0 is x, MIN / -1 is MIN and MIN % -1 is 0.
@pytest.mark.parametrize("dtype, x, div_want", [
    (np.int32, [7, -7, 0, 5], [-1, -1, -1, -1]),
    (np.int8, [7, -7, 0, 5], [-1, -1, -1, -1]),
    (np.uint32, [7, 250, 0, 5], [0xFFFFFFFF] * 4),
    (np.uint8, [7, 250, 0, 5], [255] * 4),
    (np.uint64, [2**64 - 1, 2**63 + 5, 17, 0], [2**64 - 1] * 4),
])
def test_integer_div_and_rem_by_zero(dtype, x, div_want):
    x = np.array(x, dtype)
    z = np.zeros_like(x)
    np.testing.assert_array_equal(_eager_and_jit(lax.div, x, z), np.array(div_want, dtype))
    np.testing.assert_array_equal(_eager_and_jit(lax.rem, x, z), x)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_min_divided_by_minus_one(dtype):
    lo = np.iinfo(dtype).min
    x, y = np.array([lo, lo], dtype), np.array([-1, 1], dtype)
    np.testing.assert_array_equal(_eager_and_jit(lax.div, x, y), np.array([lo, lo], dtype))
    np.testing.assert_array_equal(_eager_and_jit(lax.rem, x, y), np.array([0, 0], dtype))


def test_sign_of_complex_infinities():
    z = np.array([complex(np.inf, 1), complex(np.inf, np.inf), complex(NAN, 0), complex(NAN, 1),
                  complex(1, NAN), complex(-np.inf, 0), complex(0, np.inf), 0j, 3 + 4j,
                  complex(np.inf, NAN)], np.complex64)
    want = np.array([complex(NAN, 0), complex(NAN, NAN), complex(NAN, NAN), complex(NAN, NAN),
                     complex(NAN, NAN), complex(NAN, 0), complex(0, NAN), 0j, 0.6 + 0.8j,
                     complex(NAN, NAN)], np.complex64)
    for got in (lax.sign(z), numbax.jit(lax.sign)(z),
                numbax.jit(lambda v: lax.fori_loop(0, 1, lambda i, c: lax.sign(v), v))(z)):
        got = np.asarray(got)
        np.testing.assert_allclose(got.real, want.real, rtol=1e-6)
        np.testing.assert_allclose(got.imag, want.imag, rtol=1e-6)
