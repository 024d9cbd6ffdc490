"""numbax.numpy's dtype surface: scalar types, predicates, finfo/iinfo, constants, namespace."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError

SCALAR_TYPES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types(name):
    t = getattr(jnp, name)
    np_t = getattr(np, name)
    assert np.dtype(t) == np.dtype(np_t)
    assert jnp.dtype(t) == np.dtype(np_t)
    assert t == np_t and hash(t) == hash(np_t)
    x = t(1)
    assert isinstance(x, numbax.Array) and x.dtype == np.dtype(np_t)
    assert np.asarray(jnp.zeros(2, t)).dtype == np.dtype(np_t)
    assert isinstance(np_t(1), t)


def test_scalar_type_call_and_x64_off():
    np.testing.assert_array_equal(np.asarray(jnp.float32([1, 2])), np.array([1, 2], np.float32))
    numbax.config.update("jax_enable_x64", False)
    try:
        assert jnp.float64(1.0).dtype == np.float32
        assert jnp.dtype("int64") == np.int32
        assert jnp.iinfo(jnp.int64).bits == 32
    finally:
        numbax.config.update("jax_enable_x64", True)


@pytest.mark.parametrize("a,b", [
    (jnp.float32, jnp.floating), (jnp.float32, jnp.inexact), (jnp.int8, jnp.signedinteger),
    (jnp.uint8, jnp.unsignedinteger), (jnp.uint8, jnp.integer), (jnp.complex64, jnp.floating),
    (jnp.complex64, jnp.complexfloating), (jnp.bool_, jnp.number), (jnp.int32, jnp.number),
    (np.float64, jnp.floating), ("float32", jnp.inexact), (jnp.int16, jnp.int16),
    (jnp.int16, jnp.int32), (jnp.bool_, jnp.bool_), (jnp.float16, jnp.generic),
])
def test_issubdtype_matches_numpy(a, b):
    def np_form(t):
        return np.dtype(t).type if hasattr(t, "dtype") and isinstance(t.dtype, np.dtype) else t
    assert jnp.issubdtype(a, b) == np.issubdtype(np_form(a), np_form(b))


def test_result_type_with_arrays_and_scalars():
    assert jnp.result_type(np.ones(2, np.int8), 2) == np.int8
    assert jnp.result_type(np.ones(2, np.int8), 2.0) == np.result_type(np.ones(2, np.int8), 2.0)
    assert jnp.result_type(np.ones(2, np.float32), np.float64) == np.float64
    assert jnp.result_type(1, 1.0) == np.float64
    assert jnp.result_type(jnp.asarray(np.ones(2, np.uint8)), True) == np.uint8
    assert jnp.can_cast(np.int8, np.int16) and not jnp.can_cast(np.float64, np.int8)
    assert jnp.isdtype(jnp.float32, "real floating")
    assert jnp.iscomplexobj(np.ones(2, np.complex64)) and jnp.isrealobj(np.ones(2))


def test_finfo_iinfo():
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.finfo(np.float64).max == np.finfo(np.float64).max
    assert jnp.finfo(jnp.complex64).bits == 32
    assert jnp.finfo(jnp.ones(2, jnp.float16)).bits == 16
    assert jnp.iinfo(jnp.int8).min == -128
    assert jnp.iinfo(np.uint16).max == 65535
    assert jnp.iinfo(np.ones(2, np.int32)).max == 2**31 - 1
    with pytest.raises(NumbaxTypeError, match="not inexact"):
        jnp.finfo(jnp.int32)
    with pytest.raises(NumbaxTypeError, match="not an integer"):
        jnp.iinfo(jnp.float32)


def test_constants_and_aliases():
    assert jnp.pi == np.pi and jnp.e == np.e and jnp.inf == np.inf and np.isnan(jnp.nan)
    assert jnp.newaxis is None
    assert jnp.ndarray is numbax.Array
    assert isinstance(jnp.ones(2), jnp.ndarray)
    assert jnp.bool is jnp.bool_
    assert jnp.asarray(np.ones((2, 3)))[:, jnp.newaxis].shape == (2, 1, 3)


def test_namespace_exports_only_numpy_names():
    public = {n for n in dir(jnp) if not n.startswith("_")}
    for leaked in ("np", "core", "lax", "dtypes", "ufuncs", "shape_ops", "Any", "builtins",
                   "operator", "annotations", "get_aval", "promote_dtypes", "asbool",
                   "broadcast_to_shape", "canonicalize_axis", "concrete_value", "iota",
                   "NumbaxTypeError", "Sequence", "Array"):
        assert leaked not in public, leaked
    for name in ("sum", "einsum", "float32", "where", "take", "linspace", "sort", "pi"):
        assert name in public
    # Every exported callable that numpy also has shares numpy's name.
    unknown = sorted(n for n in public if not hasattr(np, n) and n not in {
        "ndarray", "concat", "permute_dims", "matrix_transpose", "pow", "vecdot",
        "cumulative_sum", "cumulative_prod", "bitwise_invert", "bitwise_left_shift",
        "bitwise_right_shift", "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2",
        "isdtype", "astype", "float_", "complex_", "round_", "product", "row_stack",
        "issubsctype", "ComplexWarning", "bfloat16"})  # np.exceptions, ml_dtypes have them
    assert unknown == []


def test_bad_dtype_inputs():
    with pytest.raises(TypeError, match="not supported"):
        jnp.dtype(object)
    with pytest.raises(TypeError, match="not supported"):
        jnp.dtype("U4")
    with pytest.raises(NumbaxTypeError, match="neither an array nor a dtype"):
        jnp.result_type(object())
    with pytest.raises(NumbaxTypeError, match="no arguments"):
        jnp.result_type()


def test_numpy_type_names_and_scalar_predicates():
    import numbax.numpy as jnp2

    assert jnp2.character is np.character and jnp2.flexible is np.flexible
    assert jnp2.object_ is np.object_ and jnp2.ComplexWarning is np.exceptions.ComplexWarning
    assert jnp2.iterable([1]) and not jnp2.iterable(3)
    for value, want in [(1.0, True), (1 + 1j, True), (np.int32(1), True), (np.array(2.0), True),
                        (jnp2.asarray(1), True), (jnp2.ones(2), False), ([1], False),
                        (None, False)]:
        assert jnp2.isscalar(value) is want, value
    import numbax

    seen = []
    numbax.jit(lambda x: seen.append(jnp2.isscalar(x)) or x)(2.0)
    assert seen == [True]
