"""Python ints that do not fit an array's narrow integer dtype wrap around to it (C-style,
modulo 2**bits) where they meet the array, as in JAX; only ints beyond the default integer
type (int64 with x64 on) raise OverflowError.

Expected values are JAX 0.10.2's results (jax_enable_x64=True), measured with the installed
jax; the int8 + 2**40 case is OverflowError in x32 JAX and wraps with x64 on."""
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


def _u8():
    return jnp.array([0, 10, 255], jnp.uint8)


def _i32():
    return jnp.array([1, -5, 7], jnp.int32)


CASES = {  # name: (function of (u8, i32, int8 ones), expected values, expected dtype)
    "where": (lambda u8, i32, i8: jnp.where(u8 > 5, u8, -1), [255, 10, 255], "uint8"),
    "clip": (lambda u8, i32, i8: jnp.clip(u8, -5, 300), [44, 44, 44], "uint8"),
    "equal": (lambda u8, i32, i8: u8 == 300, [False, False, False], "bool"),
    "less": (lambda u8, i32, i8: u8 < -1, [True, True, False], "bool"),
    "subtract": (lambda u8, i32, i8: u8 - 256, [0, 10, 255], "uint8"),
    "maximum": (lambda u8, i32, i8: jnp.maximum(u8, -1), [255, 255, 255], "uint8"),
    "xor": (lambda u8, i32, i8: i32 ^ 0x9E3779B9,
            [-1640531528, 1640531522, -1640531522], "int32"),
    "and": (lambda u8, i32, i8: i32 & 0xFFFFFFFF, [1, -5, 7], "int32"),
    "add_1000": (lambda u8, i32, i8: i8 + 1000, [-23, -23], "int8"),
    "add_300": (lambda u8, i32, i8: u8 + 300, [44, 54, 43], "uint8"),
    "radd_300": (lambda u8, i32, i8: 300 + u8, [44, 54, 43], "uint8"),
    "rsub_300": (lambda u8, i32, i8: 300 - u8, [44, 34, 45], "uint8"),
    "multiply": (lambda u8, i32, i8: u8 * 300, [0, 184, 212], "uint8"),
    "remainder": (lambda u8, i32, i8: u8 % 300, [0, 10, 35], "uint8"),
    "floor_divide": (lambda u8, i32, i8: u8 // 300, [0, 0, 5], "uint8"),
    "right_shift": (lambda u8, i32, i8: u8 >> 300, [0, 0, 0], "uint8"),
    "power": (lambda u8, i32, i8: u8 ** 300, [0, 0, 1], "uint8"),
    "add_2_40": (lambda u8, i32, i8: i8 + 2**40, [1, 1], "int8"),
    "add_int64_min": (lambda u8, i32, i8: i8 + (-2**63), [1, 1], "int8"),
    "where_2_40": (lambda u8, i32, i8: jnp.where(True, i8, 2**40), [1, 1], "int8"),
    "isclose": (lambda u8, i32, i8: jnp.isclose(u8, 300), [False, False, False], "bool"),
    "select": (lambda u8, i32, i8: jnp.select([u8 > 5], [u8], 300), [44, 10, 255], "uint8"),
    "pad": (lambda u8, i32, i8: jnp.pad(u8, 1, constant_values=-1),
            [255, 0, 10, 255, 255], "uint8"),
    # kept as they were
    "at_set": (lambda u8, i32, i8: u8.at[0].set(-1), [255, 10, 255], "uint8"),
    "full": (lambda u8, i32, i8: jnp.full(2, -1, dtype=jnp.uint8), [255, 255], "uint8"),
}


def _check(got, want, dtype):
    assert np.asarray(got).dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(got), np.array(want, dtype))


@pytest.mark.parametrize("name", list(CASES))
def test_eager(name):
    fun, want, dtype = CASES[name]
    _check(fun(_u8(), _i32(), jnp.ones(2, jnp.int8)), want, dtype)


@pytest.mark.parametrize("name", list(CASES))
def test_jit(name):
    fun, want, dtype = CASES[name]
    _check(numbax.jit(fun)(_u8(), _i32(), jnp.ones(2, jnp.int8)), want, dtype)


@pytest.mark.parametrize("name", ["where", "clip", "less", "maximum", "xor", "add_300",
                                  "power", "add_2_40"])
def test_vmap(name):
    fun, want, dtype = CASES[name]
    got = numbax.vmap(fun)(_u8(), _i32(), jnp.ones(3, jnp.int8))
    if name == "add_2_40":
        want = [1, 1, 1]
    _check(got, want, dtype)


def test_jit_of_a_closed_over_constant():
    _check(numbax.jit(lambda x: x + 300)(_u8()), [44, 54, 43], "uint8")


def test_python_int_arguments_of_jit_wrap():
    f = numbax.jit(lambda x, c: x + c)
    for _ in range(2):  # the host-call fast path too
        _check(f(_u8(), 300), [44, 54, 43], "uint8")
        _check(f(_u8(), 2**40), [0, 10, 255], "uint8")


def test_lax_binary_ops_with_python_ints_wrap():
    """numbax's lax takes a Python scalar as a weak value of the other operand's dtype (JAX
    0.10.2's lax refuses any int64 scalar beside a uint8 operand with a TypeError)."""
    _check(numbax.lax.add(_u8(), 300), [44, 54, 43], "uint8")
    _check(numbax.lax.max(_u8(), -1), [255, 255, 255], "uint8")
    _check(numbax.jit(lambda x: numbax.lax.add(x, -1))(_u8()), [255, 9, 254], "uint8")


@pytest.mark.parametrize("fun", [
    lambda: jnp.ones(2, jnp.int8) + 2**70,
    lambda: jnp.maximum(_u8(), -2**70),
    lambda: jnp.ones(2, jnp.uint64) + (2**64 - 1),  # beyond int64, as JAX
    lambda: jnp.ones(2, jnp.float16) + 2**70,
    lambda: numbax.jit(lambda x: x + 2**70)(jnp.ones(2, jnp.int8)),
    lambda: numbax.jit(lambda x, c: x + c)(jnp.ones(2, jnp.int8), 2**70),
    lambda: numbax.lax.add(jnp.ones(2, jnp.int8), 2**70),
])
def test_beyond_int64_is_an_overflow_error(fun):
    with pytest.raises(OverflowError, match=r"Python int -?\d{19,} is too large to convert to "
                                            r"\w+.*must fit int64.*Pass "):
        fun()


def test_overflow_message_names_the_value_the_dtype_and_the_wrapped_value():
    with pytest.raises(OverflowError) as info:
        jnp.ones(2, jnp.int8) + (2**70 + 200)
    message = str(info.value)
    assert str(2**70 + 200) in message and "int8" in message
    assert "Pass -56 instead" in message  # (2**70 + 200) modulo 2**8 read as int8
    with pytest.raises(OverflowError, match=r"np\.uint64\(18446744073709551615\)"):
        jnp.ones(2, jnp.uint64) + (2**64 - 1)


def test_int64_extremes_are_accepted():
    _check(jnp.ones(2, jnp.uint64) + (2**63 - 1), [2**63, 2**63], "uint64")
    _check(jnp.zeros(2, jnp.uint8) + (-2**63), [0, 0], "uint8")


def test_no_overflow_warning_for_large_floats():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _check(jnp.ones(2, jnp.float16) + 100000, [np.inf, np.inf], "float16")
        _check(jnp.ones(2, jnp.float32) + 1e300, [np.inf, np.inf], "float32")
