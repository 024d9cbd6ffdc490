"""dtype promotion (NumPy 2 rules, weak Python scalars) and x64 canonicalisation."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbax
import numbax.numpy as jnp
from numbax._src import dtypes
from numbax.errors import NumbaxTypeError

NUMERIC = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(NUMERIC, 2)))
def test_array_array_promotion_matches_numpy(a, b):
    got, weak = dtypes.result_type((np.dtype(a), False), (np.dtype(b), False))
    assert got == np.result_type(a, b) and not weak


@pytest.mark.parametrize("a", NUMERIC)
@pytest.mark.parametrize("scalar", SCALARS)
def test_weak_scalar_promotion_matches_nep50(a, scalar):
    expected = np.result_type(np.dtype(a), scalar)
    got, weak = dtypes.result_type((np.dtype(a), False),
                                   (dtypes.python_scalar_dtype(scalar), True))
    assert got == expected and not weak


def test_all_weak_stays_weak():
    got, weak = dtypes.result_type((dtypes.python_scalar_dtype(1), True),
                                   (dtypes.python_scalar_dtype(1.0), True))
    assert got == np.float64 and weak


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NUMERIC[1:]), st.sampled_from(NUMERIC[1:]),
       st.lists(st.integers(1, 3), min_size=0, max_size=3),
       st.lists(st.integers(1, 3), min_size=0, max_size=3))
def test_binary_op_dtype_and_values_follow_numpy(a, b, shape_a, shape_b):
    rng = np.random.default_rng(0)
    x = (rng.integers(1, 5, shape_a)).astype(a)
    y = (rng.integers(1, 5, shape_b)).astype(b)
    try:
        expected = np.multiply(x, y)
    except ValueError:
        with pytest.raises(ValueError, match="broadcast"):
            jnp.multiply(x, y)
        return
    got = jnp.multiply(x, y)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_x64_off_narrows_defaults():
    numbax.config.update("jax_enable_x64", False)
    try:
        assert jnp.asarray(1.0).dtype == np.float32
        assert jnp.asarray(np.arange(3)).dtype == np.int32
        assert (jnp.asarray(np.ones(2, np.float32)) * 2.0).dtype == np.float32
    finally:
        numbax.config.update("jax_enable_x64", True)
    assert jnp.asarray(1.0).dtype == np.float64


def test_object_and_string_dtypes_refused():
    with pytest.raises(NumbaxTypeError, match="not numeric"):
        jnp.asarray(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="not supported"):
        dtypes.canonicalize_dtype(object)


def test_weak_type_of_python_scalars():
    out = jnp.asarray(np.ones(3, np.float32)) + 1.0
    assert out.dtype == np.float32 and not out.weak_type
    assert numbax.make_jaxpr(lambda x: x * 2)(1.0).out_avals[0].weak_type
