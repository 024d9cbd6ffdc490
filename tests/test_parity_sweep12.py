"""JAX-parity fixes of sweep 12. The expected values are JAX 0.10.2's recorded results (x64 on,
as numbax's default), measured with the installed jax; jax itself is not imported here."""
import numpy as np
import pytest

import numbax as jax
import numbax.numpy as jnp
from numbax import lax
from numbax.experimental import checkify


def _both(f):
    """f eagerly and under jit."""
    return [f, jax.jit(f)]


# ----------------------------------------------------------------------------- take_along_axis

@pytest.mark.parametrize("run", [0, 1])
def test_take_along_axis_clip_counts_negative_indices_from_the_end(run):
    a = jnp.arange(20).reshape(4, 5)
    f = _both(lambda a, i: jnp.take_along_axis(a, i, axis=1, mode="clip"))[run]
    np.testing.assert_array_equal(f(a, jnp.array([[-1]] * 4)).ravel(), [4, 9, 14, 19])
    # JAX: -7 -> -2 -> 0, -6 -> -1 -> 0, -5 -> 0, -1 -> 4, 5 and 6 clamp to 4 (a short line
    # and a long one take different paths)
    row = [-7, -6, -5, -1, 0, 5, 6]
    expect = np.array([[0, 0, 0, 4, 0, 4, 4]]) + 5 * np.arange(4)[:, None]
    np.testing.assert_array_equal(f(a, jnp.array([row] * 4)), expect)
    long_row = row * 2
    np.testing.assert_array_equal(f(a, jnp.array([long_row] * 4)),
                                  np.concatenate([expect, expect], axis=1))
    g = _both(lambda a, i: jnp.take_along_axis(a, i, axis=0, mode="clip"))[run]
    got = g(a, jnp.array([[-7], [-1], [3], [9]]))  # broadcast along axis 1
    np.testing.assert_array_equal(got, np.arange(20).reshape(4, 5)[[0, 3, 3, 3]])


def test_take_clip_still_clamps_negative_indices():
    # JAX's jnp.take(mode="clip") does not wrap negative indices (unlike take_along_axis)
    got = jnp.take(jnp.arange(5), jnp.array([-7, -6, -5, -1, 0, 5, 6]), mode="clip")
    np.testing.assert_array_equal(got, [0, 0, 0, 0, 0, 4, 4])


# ----------------------------------------------------------------------------- round()

@pytest.mark.parametrize("x, expect", [
    (jnp.float32(2.5), 2), (jnp.float32(3.5), 4), (jnp.array(-2.5, jnp.float16), -2),
    (jnp.bfloat16(2.5), 2), (jnp.int32(3), 3), (jnp.uint8(3), 3), (jnp.array(2.5), 2),
])
def test_round_without_ndigits_gives_the_default_int(x, expect):
    got = round(x)
    assert got.dtype == np.int64 and not got.weak_type and got.shape == ()
    assert int(got) == expect
    assert round(x, None).dtype == np.int64


def test_round_of_arrays_and_with_ndigits():
    got = round(jnp.array([[2.5, 3.5]]))
    assert got.dtype == np.int64 and got.shape == (1, 2)
    np.testing.assert_array_equal(got, [[2, 4]])
    for x in (jnp.float32(2.5), jnp.int32(3)):
        assert round(x, 1).dtype == x.dtype
    assert float(round(jnp.float32(2.5), 1)) == 2.5
    out = jax.jit(lambda x: round(x))(2.5)
    assert out.dtype == np.int64 and int(out) == 2
    out = jax.jit(lambda x: round(x))(jnp.float32(3.5))
    assert out.dtype == np.int64 and int(out) == 4


# ----------------------------------------------------------------------------- item() in jit

@pytest.mark.parametrize("method", ["item", "tolist", "tobytes"])
def test_concretizing_methods_under_jit(method):
    with pytest.raises(jax.errors.ConcretizationTypeError, match=rf"{method}\(\).*static"):
        jax.jit(lambda x: getattr(x, method)())(1.0)
    with pytest.raises(jax.errors.ConcretizationTypeError, match=r"float\(\)"):
        jax.jit(lambda x: float(x))(1.0)


# ----------------------------------------------------------------------------- image.resize

_LINEAR_LIKE = ["linear", "bilinear", "trilinear", "cubic", "bicubic", "lanczos3", "lanczos5"]


@pytest.mark.parametrize("method", ["nearest", *_LINEAR_LIKE])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "uint32", "int64", "bool",
                                   "float16", "bfloat16", "float32", "float64", "complex64"])
def test_resize_dtypes(method, dtype):
    x = jnp.arange(16).reshape(4, 4).astype(dtype)
    got = jax.image.resize(x, (6, 6), method).dtype
    if method == "nearest" or dtype not in ("uint8", "int8", "int32", "uint32", "int64",
                                            "bool"):
        assert got == x.dtype
    else:
        assert got == (np.float64 if dtype == "int64" else np.float32)


def test_resize_integer_values_and_jit():
    x = jnp.arange(16).reshape(4, 4).astype(jnp.uint8) * 15
    got = jax.image.resize(x, (6, 6), "linear")
    # JAX 0.10.2's first 12 values
    np.testing.assert_allclose(np.asarray(got).ravel()[:12],
                               [0.0, 7.5, 17.5, 27.5, 37.5, 45.0, 30.0, 37.5, 47.5, 57.5, 67.5,
                                75.0], rtol=1e-6)
    got = jax.image.resize(x, (6, 6), "cubic")
    np.testing.assert_allclose(np.asarray(got).ravel()[:6],
                               [-4.934210300445557, 2.229102373123169, 13.552631378173828,
                                23.552631378173828, 34.876163482666016, 42.03947448730469],
                               rtol=1e-5)
    np.testing.assert_array_equal(jax.image.resize(x, (6, 6), "nearest").ravel()[:6],
                                  [0, 15, 15, 30, 45, 45])
    f = jax.jit(lambda x: jax.image.resize(x, (6, 6), "linear"))
    assert f(jnp.zeros((4, 4), jnp.uint8)).dtype == np.float32
    st = jax.image.scale_and_translate(jnp.zeros((4, 4), jnp.uint8), (6, 6), (0, 1),
                                       jnp.array([1.5, 1.5]), jnp.array([0., 0.]), "linear")
    assert st.dtype == np.float32


# ----------------------------------------------------------------------------- reduce_precision

@pytest.mark.parametrize("run", [0, 1])
def test_reduce_precision_keeps_scalar_shape(run):
    f = _both(lambda x: lax.reduce_precision(x, 5, 10))[run]
    got = f(jnp.float64(1.0001))
    assert got.shape == () and got.dtype == np.float64 and float(got) == 1.0
    got = f(jnp.float32(70000.0))
    assert got.shape == () and np.isinf(got)
    assert f(jnp.ones((2, 3))).shape == (2, 3)


# ----------------------------------------------------------------------------- exception classes

@pytest.mark.parametrize("arg", [jnp.ones(2), [1, 2], np.ones(2)])
def test_unhashable_static_argument_is_a_value_error(arg):
    with pytest.raises(ValueError, match="static argument 0.*not hashable") as info:
        jax.jit(lambda x: x, static_argnums=0)(arg)
    assert isinstance(info.value, TypeError)  # numbax raised TypeError before
    with pytest.raises(ValueError, match="static argument 'x'"):
        jax.jit(lambda x: 1, static_argnames="x")(x={})


@pytest.mark.parametrize("make", [
    lambda: jnp.zeros(-1), lambda: jnp.ones((2, -3)), lambda: jnp.empty(-1),
    lambda: jnp.full((-1,), 2.0), lambda: jnp.zeros_like(jnp.ones(2), shape=(-1,)),
])
def test_negative_shapes_are_type_errors(make):
    with pytest.raises(TypeError, match=r"shape \(.*-[0-9].*\) has negative sizes") as info:
        make()
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("make, number", [
    (lambda: jnp.array(2**70), 2**70), (lambda: jnp.array(-2**70), -2**70),
    (lambda: jnp.array(2**63), 2**63), (lambda: jnp.asarray([1, 2**63]), 2**63),
    (lambda: jnp.array((2**70,)), 2**70), (lambda: jnp.full((2,), 2**70), 2**70),
    (lambda: jnp.array(2**64, jnp.uint64), 2**64), (lambda: jnp.array(300, jnp.int8), 300),
    (lambda: jnp.array([300], jnp.int8), 300), (lambda: jnp.asarray(-1, jnp.uint32), -1),
    (lambda: jnp.array(2**40, jnp.int32), 2**40),
])
def test_python_ints_out_of_range_overflow(make, number):
    with pytest.raises(OverflowError, match=f"Python int {number} is out of bounds") as info:
        make()
    assert isinstance(info.value, TypeError)


def test_python_ints_in_range_and_beside_floats():
    assert jnp.array(-2**63).dtype == np.int64
    assert int(jnp.array(2**63, jnp.uint64)) == 2**63
    got = jnp.array([1.5, 2**70])
    assert got.dtype == np.float64 and float(got[1]) == 2.0**70
    assert jnp.array(2**70, jnp.float32).dtype == np.float32
    assert jnp.array([2**70], float).dtype == np.float64
    assert int(jnp.array(np.int64(300), jnp.int8)) == 44  # numpy scalars wrap, as in JAX
    np.testing.assert_array_equal(jnp.full(2, 300, jnp.int8), [44, 44])


# ----------------------------------------------------------------------------- checkify, no jit

def test_checkify_python_scalar_arguments():
    err, out = checkify.checkify(jnp.log, errors=checkify.float_checks)(-1.)
    assert err.get() == "nan generated by primitive: log."
    assert np.isnan(out)
    err, out = checkify.checkify(lambda x, i: jnp.arange(3)[i] + x,
                                 errors=checkify.index_checks)(1.0, 5)
    assert err.get().startswith("out-of-bounds indexing for array of shape (3,): index 5 is out "
                                "of bounds for axis 0 with size 3.")
    assert float(out) == 3.0
    err, out = checkify.checkify(lambda x, i: jnp.arange(3)[i] + x,
                                 errors=checkify.index_checks)(1.0, 1)
    assert err.get() is None and float(out) == 2.0
    err, out = checkify.checkify(lambda x: x / 0, errors=checkify.float_checks)(jnp.array(1.0))
    assert err.get() == "division by zero"
    # as JAX: Python scalars reach f untouched, so Python's own errors and branches apply
    with pytest.raises(ZeroDivisionError):
        checkify.checkify(lambda x: x / 0, errors=checkify.float_checks)(1.0)
    err, out = checkify.checkify(lambda x: x if x > 0 else -x,
                                 errors=checkify.float_checks)(3.0)
    assert err.get() is None and out == 3.0
    err, _ = checkify.checkify(lambda x: checkify.check(x > 0, "neg") or x)(-1.)
    assert err.get() == "neg (`check` failed)"
    err, out = checkify.checkify(lambda n: jnp.zeros(n), errors=checkify.float_checks)(3)
    assert err.get() is None and out.shape == (3,)


def test_broadcast_to_a_negative_size_is_a_type_error():
    with pytest.raises(TypeError, match="negative sizes"):  # JAX's class
        jnp.broadcast_to(1.0, (-1,))
    with pytest.raises(ValueError, match="negative sizes"):  # numbax's before, and numpy's
        jnp.broadcast_to(jnp.ones(3), (2, -3))
