"""numbax.numpy results that once differed from JAX's, against values JAX 0.10.2 (CPU) gave,
written here as literals, or numpy's where JAX follows it: maximum/minimum/fmax/fmin and max/min
of signed zeros, integer division by zero, >> of unsigned integers, .at[].apply/divide/power
with repeated indices, typeof of key arrays, pad's statistic/ramp/empty modes, roll by a traced
shift and searchsorted with a sorter. jit must give what eager gives."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from tests.lax.test_wrong_results_s32 import NAN, X, Y, _same_bits  # signed zeros and NaN


def _eager_and_jit(f, *args):
    eager = f(*args)
    got = numbax.jit(f)(*args)
    if np.asarray(eager).dtype.kind == "f":
        _same_bits(got, eager)
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))
    return eager


@pytest.mark.parametrize("f, want", [
    (jnp.maximum, [0.0, 0.0, 0.0, -0.0, NAN, NAN, NAN, NAN]),
    (jnp.minimum, [-0.0, -0.0, 0.0, -0.0, NAN, NAN, NAN, NAN]),
    (jnp.fmax, [-0.0, 0.0, 0.0, -0.0, 1.0, 1.0, -0.0, -0.0]),  # a tie gives x2, as in JAX
    (jnp.fmin, [-0.0, 0.0, 0.0, -0.0, 1.0, 1.0, -0.0, -0.0]),
], ids=["maximum", "minimum", "fmax", "fmin"])
def test_maximum_minimum_signed_zeros(f, want):
    _same_bits(_eager_and_jit(f, X, Y), np.array(want, np.float32))


@pytest.mark.parametrize("x, want_max, want_min", [
    ([0.0, -0.0], 0.0, -0.0), ([-0.0, 0.0], 0.0, -0.0), ([-0.0, -0.0], -0.0, -0.0),
    ([0.0, 0.0], 0.0, 0.0),
])
def test_max_min_reductions_signed_zeros(x, want_max, want_min):
    x = np.array(x, np.float32)
    _same_bits(_eager_and_jit(jnp.max, x), np.float32(want_max))
    _same_bits(_eager_and_jit(jnp.min, x), np.float32(want_min))


# JAX: lax.div by 0 is -1, so floor_divide steps nonzero x to -2 (unsigned: all ones); the
# remainders by 0 are 0. INT_MIN // -1 is INT_MIN.
@pytest.mark.parametrize("dtype, x, floor_want", [
    (np.int32, [7, -7, 0, 5], [-2, -2, -1, -2]),
    (np.int8, [7, -7, 0, 5], [-2, -2, -1, -2]),
    (np.uint32, [7, 250, 0, 5], [0xFFFFFFFF] * 4),
])
def test_integer_division_by_zero(dtype, x, floor_want):
    x = np.array(x, dtype)
    z = np.zeros_like(x)
    want = np.array(floor_want, dtype)
    for f in (jnp.floor_divide, lambda a, b: a // b, lambda a, b: jnp.divmod(a, b)[0]):
        np.testing.assert_array_equal(_eager_and_jit(f, jnp.asarray(x), jnp.asarray(z)), want)
    for f in (jnp.remainder, jnp.fmod, lambda a, b: a % b, lambda a, b: jnp.divmod(a, b)[1]):
        np.testing.assert_array_equal(_eager_and_jit(f, jnp.asarray(x), jnp.asarray(z)),
                                      np.zeros_like(x))


def test_integer_division_min_by_minus_one():
    lo = np.iinfo(np.int32).min
    x, y = np.array([lo, lo, -7, 7], np.int32), np.array([-1, 1, 2, -2], np.int32)
    np.testing.assert_array_equal(_eager_and_jit(jnp.floor_divide, x, y),
                                  np.array([lo, lo, -4, -4], np.int32))
    np.testing.assert_array_equal(_eager_and_jit(jnp.remainder, x, y),
                                  np.array([0, 0, 1, -1], np.int32))


def test_right_shift_of_unsigned_is_logical():
    x = np.array([0x80, 0xFF], np.uint8)
    np.testing.assert_array_equal(_eager_and_jit(lambda v: v >> 1, jnp.asarray(x)),
                                  np.array([64, 127], np.uint8))
    np.testing.assert_array_equal(_eager_and_jit(jnp.right_shift, x, np.uint8(1)),
                                  np.array([64, 127], np.uint8))


IDX = np.array([0, 0, 2, 0])


@pytest.mark.parametrize("update, x, want", [
    (lambda r: r.apply(lambda v: v * 2 + 1), [1.0, 2.0, 3.0, 4.0], [15.0, 2.0, 7.0, 4.0]),
    (lambda r: r.divide(2.0), [1.0, 2.0, 3.0, 4.0], [0.125, 2.0, 1.5, 4.0]),
    (lambda r: r.divide(np.array([2.0, 4.0, 8.0, 16.0])), [1.0, 2.0, 3.0, 4.0],
     [0.0078125, 2.0, 0.375, 4.0]),
    (lambda r: r.power(2.0), [2.0, 3.0, 4.0, 5.0], [256.0, 3.0, 16.0, 5.0]),
    (lambda r: r.power(np.array([2.0, 3.0, 1.0, 0.5])), [2.0, 3.0, 4.0, 5.0],
     [8.0, 3.0, 4.0, 5.0]),
], ids=["apply", "divide", "divide-array", "power", "power-array"])
def test_at_updates_repeat_for_each_occurrence(update, x, want):
    x = jnp.asarray(np.array(x))
    np.testing.assert_allclose(np.asarray(update(x.at[IDX])), want)
    np.testing.assert_allclose(np.asarray(numbax.jit(lambda v: update(v.at[IDX]))(x)), want)
    traced = numbax.jit(lambda v, i: update(v.at[i]))(x, IDX)  # a traced index: a while loop
    np.testing.assert_allclose(np.asarray(traced), want)


def test_at_divide_of_integers_is_true_division():
    x = jnp.asarray(np.array([100, 7, 9, 1], np.int32))
    got = x.at[IDX].divide(3)
    assert np.asarray(got).dtype.kind == "f"
    np.testing.assert_allclose(np.asarray(got), [100 / 27, 7.0, 3.0, 1.0])
    np.testing.assert_array_equal(jnp.asarray(np.array([2, 3, 4])).at[np.array([0, 0])].power(2),
                                  [16, 3, 4])


def test_at_apply_drops_out_of_bounds_and_clips():
    x = jnp.asarray(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_allclose(x.at[np.array([1, 9, -1])].apply(lambda v: v * 2 + 1),
                               [1.0, 5.0, 3.0, 9.0])
    np.testing.assert_allclose(x.at[np.array([0, 0, 5])].apply(lambda v: v + 1, mode="clip"),
                               [3.0, 2.0, 3.0, 5.0])
    np.testing.assert_allclose(x.at[1:3].apply(lambda v: v * 10), [1.0, 20.0, 30.0, 4.0])


def test_typeof_of_key_arrays():
    key = numbax.random.key(0)
    keys = numbax.random.split(key, 3)
    assert str(numbax.typeof(key)) == "key<fry>[]"  # JAX: ShapedArray key<fry>[]
    t = numbax.typeof(keys)
    assert str(t) == "key<fry>[3]" and t.shape == (3,) and str(t.dtype) == "key<fry>"
    assert t == numbax.typeof(keys) and t != numbax.typeof(jnp.zeros(3))
    assert str(numbax.typeof(np.ones((2, 3), np.float32))) == "float32[2,3]"
    assert (jnp.shape(keys), jnp.ndim(keys), jnp.size(keys)) == ((3,), 1, 3)


A2 = np.array([[1.0, 5.0, 2.0], [7.0, 3.0, 9.0]])
A1 = np.array([1, 5, 2, 8], np.int32)
W2, W1 = ((1, 2), (2, 1)), (2, 3)


@pytest.mark.parametrize("mode, kwargs", [
    ("linear_ramp", {}), ("linear_ramp", {"end_values": (-1, 4)}),
    ("maximum", {}), ("maximum", {"stat_length": 1}), ("minimum", {"stat_length": 2}),
    ("mean", {}), ("mean", {"stat_length": 2}), ("median", {}), ("median", {"stat_length": 2}),
])
@pytest.mark.parametrize("a, width", [(A2, W2), (A1, W1)], ids=["2d-float", "1d-int"])
def test_pad_value_modes_match_numpy(mode, kwargs, a, width):
    want = np.pad(a, width, mode=mode, **kwargs)
    got = _eager_and_jit(lambda v: jnp.pad(v, width, mode=mode, **kwargs), a)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15)


def test_pad_per_axis_lengths_and_ends_and_integer_rounding():
    for kwargs, mode in (({"stat_length": ((1, 2), (2, 1))}, "maximum"),
                         ({"end_values": ((1, 2), (3, 4))}, "linear_ramp")):
        np.testing.assert_allclose(jnp.pad(A2, W2, mode=mode, **kwargs),
                                   np.pad(A2, W2, mode=mode, **kwargs))
    x = np.array([1, 7, 2], np.int32)  # a falling integer ramp floors, as numpy's linspace
    np.testing.assert_array_equal(jnp.pad(x, 3, mode="linear_ramp", end_values=(-4, -3)),
                                  [-4, -3, -1, 1, 7, 2, 0, -2, -3])
    np.testing.assert_array_equal(jnp.pad(x, 2, mode="mean", stat_length=2), [4, 4, 1, 7, 2, 4, 4])


def test_pad_empty_fills_zeros_as_jax():
    np.testing.assert_array_equal(_eager_and_jit(lambda v: jnp.pad(v, W1, mode="empty"), A1),
                                  [0, 0, 1, 5, 2, 8, 0, 0, 0])


@pytest.mark.parametrize("shift", [3, -2, 13, 0])
def test_roll_by_a_traced_shift(shift):
    x = np.arange(10.0)
    np.testing.assert_array_equal(numbax.jit(jnp.roll)(x, shift), np.roll(x, shift))
    m = np.arange(12.0).reshape(3, 4)
    got = numbax.jit(lambda v, s: jnp.roll(v, s, axis=(0, 1)))(m, np.array([shift, -1]))
    np.testing.assert_array_equal(got, np.roll(m, (shift, -1), axis=(0, 1)))
    np.testing.assert_array_equal(numbax.jit(jnp.roll)(m, shift), np.roll(m, shift))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_with_sorter(side):
    a = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    v = np.array([0.0, 2.0, 2.5, 5.0, 6.0])
    sorter = np.argsort(a)
    want = np.searchsorted(a, v, side=side, sorter=sorter)
    np.testing.assert_array_equal(jnp.searchsorted(a, v, side=side, sorter=sorter), want)
    got = numbax.jit(lambda a, v, s: jnp.searchsorted(a, v, side=side, sorter=s))(a, v, sorter)
    np.testing.assert_array_equal(got, want)
