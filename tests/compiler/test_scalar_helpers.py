"""The scalar helpers both backends compile (compiler/scalar_helpers.py) give what eager gives
at the edges (issue 21 item 9): MIN // -1 and MIN % -1, and NaN, inf and out-of-range floats
converted to every integer dtype, fused in loop nests and inside compiled control flow."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

_INTS = [np.int8, np.int16, np.int32, np.int64]
_ALL_INTS = [*_INTS, np.uint8, np.uint16, np.uint32, np.uint64]
_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, -1.0, -1.5, 0.5, 3.7, 1e20, -1e20, 2.0**31,
            -2.0**31 - 1, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 3e9, -3e9, 65535.9, -129.5]


def _eager_and_jit(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        args = [jnp.asarray(a) for a in args]  # numbax's methods, not numpy's
        return np.asarray(fn(*args)), np.asarray(numbax.jit(fn)(*args))


@pytest.mark.parametrize("dtype", _INTS)
def test_min_divided_by_minus_one(dtype):
    lo = np.iinfo(dtype).min
    a = np.array([lo, lo, 7, -7, lo + 1], dtype)
    b = np.array([-1, 1, -1, 2, -1], dtype)
    for fn in (jnp.floor_divide, jnp.remainder, lax.div, lax.rem, jnp.fmod,
               lambda x, y: x // y, lambda x, y: x % y):
        eager, compiled = _eager_and_jit(fn, a, b)
        np.testing.assert_array_equal(compiled, eager)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.asarray(jnp.floor_divide(a, b)), a // b)  # numpy
    np.testing.assert_array_equal(np.asarray(jnp.remainder(a, b)), a % b)


def _saturated(v: float, dst) -> int:
    """JAX's float -> integer conversion of one value, in Python's exact integers: truncated,
    saturated at the type's range, NaN to 0 (jax 0.10.2 measured so for every pair of float
    and integer types, 2026-12-04)."""
    info = np.iinfo(dst)
    if v != v:
        return 0
    if v >= info.max + 1:
        return int(info.max)
    if v <= info.min - 1:
        return int(info.min)
    return int(v)


@pytest.mark.parametrize("src", [np.float64, np.float32, np.float16, np.complex128])
@pytest.mark.parametrize("dst", _ALL_INTS)
def test_float_to_int_special_values(src, dst):
    x = np.array(_SPECIAL * 3, np.float64).astype(src)  # long enough for vectorised loops
    eager, compiled = _eager_and_jit(lambda v: v.astype(dst), x)
    np.testing.assert_array_equal(compiled, eager)
    want = np.array([_saturated(float(np.real(v)), dst) for v in x], dst)
    np.testing.assert_array_equal(eager, want)
    assert eager.dtype == compiled.dtype == np.dtype(dst)


def test_images_cast_to_uint8_saturate():
    img = jnp.array([0.5, 1.01, -0.2, np.nan, 1.0])

    def to_bytes(v):
        return (v * 255).astype(jnp.uint8)

    for got in (to_bytes(img), numbax.jit(to_bytes)(img)):
        np.testing.assert_array_equal(np.asarray(got), [127, 255, 0, 0, 255])


@pytest.mark.parametrize("dst", _ALL_INTS)
def test_float_to_int_inside_compiled_control_flow(dst):
    """The array form (sc.float_array_to_int) and the 0-d scalar form inside loops."""
    x = np.array(_SPECIAL)

    def f(v):
        def body(i, c):
            return c + v.astype(dst).astype(np.float64) * 0 + v[i % 3].astype(dst)
        return lax.fori_loop(0, 3, body, np.zeros(v.shape))

    eager, compiled = _eager_and_jit(f, x)
    np.testing.assert_array_equal(compiled, eager)
    total = 0.0
    for v in _SPECIAL[:3]:  # each step adds the saturated v[i] in float64
        total += float(np.array(_saturated(v, dst), dst))
    np.testing.assert_array_equal(eager, np.full(len(_SPECIAL), total))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.int64, np.uint32])
def test_sign_matches_numpy(dtype):
    """np.sign gives +0.0 for -0.0; Numba's np.sign kept -0.0 (found by the fuzzer)."""
    x = np.array([-0.0, 0.0, np.nan, -2.0, 3.0, np.inf, -np.inf] if np.dtype(dtype).kind == "f"
                 else [0, 1, 5, 7], dtype)
    want = np.sign(x)
    for got in (lax.sign(x), numbax.jit(lax.sign)(x), numbax.jit(lambda v: lax.sign(v) * 1)(x),
                numbax.jit(lambda v: lax.fori_loop(0, 1, lambda i, c: lax.sign(c), v))(x)):
        got = np.asarray(got)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_python_and_numpy_scalars_cast_as_arrays_do():
    """lax.convert_element_type of a scalar (and numbax's internal constants) saturates as
    the primitive does; a float past float16's range is inf without numpy's warning."""
    from numbax import lax

    assert int(lax.convert_element_type(3e9, jnp.int32)) == 2**31 - 1
    assert int(lax.convert_element_type(np.float32(-1.5), jnp.uint8)) == 0
    assert int(lax.convert_element_type(300, jnp.uint8)) == 44  # ints wrap, as in JAX
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = jnp.nan_to_num(jnp.array([np.inf, 1.0], jnp.float16), posinf=1e10)
    np.testing.assert_array_equal(np.asarray(got), np.array([np.inf, 1.0], np.float16))
