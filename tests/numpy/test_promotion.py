"""Property tests: broadcasting and dtype promotion of binary ufuncs against numpy, the
operands cast as JAX promotes them (its lattice joins an integer and a float at the float's
width; numpy widens)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxValueError
from tests.jax_promotion import jax_float, jax_promoted, jax_result

ARRAY_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
PY_SCALARS = [True, 2, -3, 1.5, -0.25, 2 - 1j]
UFUNCS = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "less", "greater_equal",
          "true_divide", "logical_and", "bitwise_xor"]
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, size=shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return x > 0
    if dt.kind == "u":
        return np.abs(x).astype(dt)
    if dt.kind == "c":
        return (x + 1j * rng.uniform(-4, 4, size=shape)).astype(dt)
    return x.astype(dt)


def _numpy_result(name, x, y):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return getattr(np, name)(x, y)
        except (TypeError, np._core._exceptions._UFuncNoLoopError):  # noqa: SLF001
            return TypeError


def _compare(name, x, y):
    operands = jax_promoted((x, y))
    want = _numpy_result(name, *operands)
    joined = np.result_type(*operands)
    if name == "true_divide" and joined.kind in "biu":  # JAX's float, numpy's quotient
        want = np.true_divide(*(np.asarray(o, np.float64) for o in operands)).astype(
            jax_float(joined))
    if want is TypeError:
        with pytest.raises(TypeError):
            getattr(jnp, name)(x, y)
        return
    got = getattr(jnp, name)(x, y)
    want = np.asarray(want)
    assert np.asarray(got).dtype == want.dtype, (name, x, y, np.asarray(got).dtype, want.dtype)
    assert np.shape(got) == want.shape
    tol = 1e-2 if want.dtype in (np.float16, np.complex64, np.float32) else 1e-12
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol, equal_nan=True)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(UFUNCS), shapes=hnp.mutually_broadcastable_shapes(num_shapes=2,
                                                                                 max_dims=3),
       d1=st.sampled_from(ARRAY_DTYPES), d2=st.sampled_from(ARRAY_DTYPES),
       seed=st.integers(0, 2**16))
def test_array_array_broadcasting_and_promotion(name, shapes, d1, d2, seed):
    s1, s2 = shapes.input_shapes
    _compare(name, _values(s1, d1, seed), _values(s2, d2, seed + 1))


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(UFUNCS), shape=hnp.array_shapes(min_dims=0, max_dims=3),
       dtype=st.sampled_from(ARRAY_DTYPES), scalar=st.sampled_from(PY_SCALARS),
       scalar_first=st.booleans(), seed=st.integers(0, 2**16))
def test_python_scalars_are_weak(name, shape, dtype, scalar, scalar_first, seed):
    if isinstance(scalar, int) and scalar < 0 and np.dtype(dtype).kind == "u":
        scalar = 3  # numpy 2 raises OverflowError for negative ints with unsigned arrays
    x = _values(shape, dtype, seed)
    args = (scalar, x) if scalar_first else (x, scalar)
    _compare(name, *args)


@settings(max_examples=40, deadline=None)
@given(a=st.sampled_from(PY_SCALARS), b=st.sampled_from(PY_SCALARS))
def test_two_python_scalars(a, b):
    got = jnp.add(a, b)
    want = np.add(a, b)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    # weak, as in JAX, except that JAX's Python bools are strong (True + True is bool)
    assert got.weak_type == (not (type(a) is bool and type(b) is bool))
    np.testing.assert_allclose(np.asarray(got), want)


@settings(max_examples=60, deadline=None)
@given(d1=st.sampled_from(ARRAY_DTYPES), d2=st.sampled_from(ARRAY_DTYPES))
def test_result_type_and_promote_types_match_jax(d1, d2):
    want = jax_result([np.dtype(d1).name, np.dtype(d2).name])[0]
    assert jnp.promote_types(d1, d2) == want
    assert jnp.result_type(d1, d2) == want
    assert jnp.result_type(np.ones(2, d1), 1.0) == np.result_type(np.ones(2, d1), 1.0)
    assert jnp.can_cast(d1, d2) == np.can_cast(d1, d2)


def test_promote_types_treats_builtin_scalar_types_as_weak():
    """JAX's documented examples (jnp.promote_types docstring): int, float and complex keep a
    typed counterpart's width, where numpy.promote_types treats them as 64-bit."""
    assert jnp.promote_types("uint8", int) == np.uint8
    assert jnp.promote_types("float16", float) == np.float16
    assert jnp.promote_types(int, np.int16) == np.int16
    assert jnp.promote_types(np.float32, complex) == np.complex64
    assert jnp.promote_types(np.int8, float) == jnp.result_type(np.ones(2, np.int8), 1.0)
    assert jnp.promote_types(int, float) == jnp.result_type(1, 1.0)
    assert jnp.promote_types(np.dtype("int64"), np.int8) == jnp.result_type(np.int64, np.int8)


def test_promotion_under_tracing_matches_eager():
    x = np.ones(3, np.float32)
    jaxpr = numbax.make_jaxpr(lambda a, b: jnp.add(a, b) * 2)(x, np.int16(3))
    assert jaxpr.out_avals[0].dtype == np.float32
    out = numbax.vmap(lambda a: jnp.maximum(a, 1))(np.arange(6, dtype=np.uint8).reshape(2, 3))
    assert out.dtype == np.uint8


def test_x64_off_narrows_promotion():
    numbax.config.update("jax_enable_x64", False)
    try:
        assert jnp.add(np.ones(2, np.int32), np.ones(2, np.int64)).dtype == np.int32
        assert jnp.multiply(np.ones(2, np.int32), 1.5).dtype == np.float32
        assert jnp.result_type(np.float64, np.int8) == np.float32
    finally:
        numbax.config.update("jax_enable_x64", True)


def test_mismatched_shapes_name_both():
    with pytest.raises(NumbaxValueError, match=r"\(2, 3\) \(4,\)"):
        jnp.add(np.ones((2, 3)), np.ones(4))
    with pytest.raises(NumbaxValueError, match=r"\(5,\) \(3,\)"):
        jnp.where(np.ones(5) > 0, np.ones(3), 0.0)


def test_object_and_string_dtypes_refused():
    with pytest.raises(TypeError, match="not numeric|not supported"):
        jnp.add(np.array(["a"]), 1)
    with pytest.raises(TypeError):
        jnp.multiply(np.array([object()]), 2)
    with pytest.raises(TypeError, match="not supported"):
        jnp.asarray([1, 2], dtype=object)
    with pytest.raises(TypeError, match="not supported"):
        jnp.asarray([1, 2], dtype="U3")
