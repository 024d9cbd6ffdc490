"""dtype promotion (JAX's lattice, weak Python scalars) and x64 canonicalisation."""
import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbax
import numbax.numpy as jnp
import numbax.typing
from numbax._src import dtypes
from numbax._src.core import ShapedArray
from numbax.errors import NumbaxTypeError
from tests import jax_promotion

NUMERIC = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("case", sorted(jax_promotion.TABLES["standard_x64"]))
def test_promotion_matches_jax(case, x64):
    """Every pair of dtypes and weak scalars against JAX's recorded result dtype and weak flag
    (its type promotion lattice, with x64 on and off)."""
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", x64)
    try:
        pairs = [(dtypes.python_scalar_dtype(_SCALAR_SPECS[s]), True) if s in _SCALAR_SPECS
                 else (jnp.zeros(2, s).dtype, False) for s in case.split()]
        got, weak = dtypes.result_type(*pairs)
    finally:
        numbax.config.update("jax_enable_x64", prev)
    assert [str(got), weak] == list(jax_promotion.jax_result(case.split(), x64))


@pytest.mark.parametrize("a", NUMERIC)
@pytest.mark.parametrize("scalar", SCALARS)
def test_weak_scalar_promotion_matches_nep50(a, scalar):
    expected = np.result_type(np.dtype(a), scalar)
    got, weak = dtypes.result_type((np.dtype(a), False),
                                   (dtypes.python_scalar_dtype(scalar), True))
    # JAX's lattice: the result stays weak when the scalar's kind outranks the array's
    # (int32 + 1.0 is a weak float32; float32 + 1j a strong complex64).
    rank = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 2}
    outranks = rank[np.dtype(a).kind] < rank[dtypes.python_scalar_dtype(scalar).kind]
    assert got == expected and weak == outranks


def test_all_weak_stays_weak():
    got, weak = dtypes.result_type((dtypes.python_scalar_dtype(1), True),
                                   (dtypes.python_scalar_dtype(1.0), True))
    assert got == np.float64 and weak


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("case", sorted(jax_promotion.TABLES["inexact_x64"]))
def test_float_results_of_integer_inputs_match_jax(case, x64):
    """Math and statistics of integers and bools give JAX's float dtype (float32 up to 32-bit
    integers, float64 for 64-bit ones; numpy gives float16 for 8-bit and float64 from 32 bits),
    and numpy's values."""
    name, spec = case.split()
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", x64)
    try:
        x = jnp.ones(4, spec)
        args = (x, 50) if name == "percentile" else (x, x) if name in (
            "true_divide", "arctan2") else (x,)
        got = getattr(jnp, name)(*args)
        want = getattr(np, name)(*[np.asarray(a, np.float64) for a in args])  # (exact)
    finally:
        numbax.config.update("jax_enable_x64", prev)
    assert str(got.dtype) == jax_promotion.TABLES[f"inexact_{'x64' if x64 else 'x32'}"][case]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6)


def _operand(spec: str):
    """A weak scalar ("True", "2", "2.0") or an array of 2s of dtype `spec`."""
    if spec in _SCALAR_SPECS:
        return _SCALAR_SPECS[spec]
    if spec[0].isdigit():
        return float(spec) if "." in spec else int(spec)
    return jnp.full(3, 2, spec)


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("case", sorted(jax_promotion.TABLES["mixed_x64"]))
def test_mixed_dtype_calls_match_jax(case, x64):
    """interp, float_power, true_divide, ... of mixed dtypes give JAX's recorded dtype and
    numpy's values."""
    name, *specs = case.split()
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", x64)
    try:
        operands = [_operand(s) for s in specs]
        got = getattr(jnp, name)(*operands)
    finally:
        numbax.config.update("jax_enable_x64", prev)
    assert str(got.dtype) == jax_promotion.TABLES[f"mixed_{'x64' if x64 else 'x32'}"][case]
    want = getattr(np, name)(*[np.asarray(o).astype(np.complex128 if np.iscomplexobj(o) else
                                                     np.float64) for o in operands])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NUMERIC[1:]), st.sampled_from(NUMERIC[1:]),
       st.lists(st.integers(1, 3), min_size=0, max_size=3),
       st.lists(st.integers(1, 3), min_size=0, max_size=3))
def test_binary_op_dtype_and_values_follow_jax_promotion(a, b, shape_a, shape_b):
    """numpy's product of the operands as JAX promotes them (an integer joins a float at the
    float's width)."""
    rng = np.random.default_rng(0)
    x = (rng.integers(1, 5, shape_a)).astype(a)
    y = (rng.integers(1, 5, shape_b)).astype(b)
    try:
        expected = np.multiply(*jax_promotion.jax_promoted((x, y)))
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


# ----------------------------------------------------------------------------- numbax.dtypes

STRICT_REF = json.loads((pathlib.Path(__file__).parent / "data" /
                         "dtypes_jax_reference.json").read_text())
_SCALAR_SPECS = {"True": True, "1": 1, "1.0": 1.0, "1j": 1j}




@pytest.mark.parametrize("case", sorted(STRICT_REF["strict"]))
def test_strict_promotion_allows_what_jax_allows(case):
    want = STRICT_REF["strict"][case]
    ops = [_operand(s) for s in case.split()]
    with numbax.numpy_dtype_promotion("strict"):
        if want == "error":
            with pytest.raises(numbax.dtypes.TypePromotionError, match="strict"):
                jnp.result_type(*ops)
            if not all(isinstance(o, (bool, int, float, complex)) for o in ops):
                with pytest.raises(numbax.dtypes.TypePromotionError):
                    jnp.add(*ops)
        else:
            assert str(jnp.result_type(*ops)) == want
    # the same operands under the standard rules: JAX's recorded result
    assert str(jnp.result_type(*ops)) == jax_promotion.jax_result(case.split())[0]


def test_strict_promotion_retraces_under_jit():
    f = numbax.jit(lambda x, y: x + y)
    x, y = np.ones(2, np.float32), np.ones(2, np.float64)
    assert f(x, y).dtype == np.float64
    with numbax.numpy_dtype_promotion("strict"):
        with pytest.raises(numbax.dtypes.TypePromotionError):
            f(x, y)
    assert f(x, y).dtype == np.float64


def test_rank_promotion_allow_warn_raise():
    a, b = jnp.ones((2, 3)), jnp.ones(3)
    assert (a + b).shape == (2, 3)
    with numbax.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match=r"rank promotion for add on shapes \(2, 3\) \(3,\)"):
            a + b
    with numbax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            jnp.multiply(a, b)
        assert (a + 1.0).shape == (2, 3)  # rank-0 operands never count
        assert (a + jnp.ones((1, 3))).shape == (2, 3)  # equal ranks broadcast
        with pytest.raises(ValueError):
            numbax.jit(lambda x, y: x - y)(a, b)
    assert numbax.jit(lambda x, y: x - y)(a, b).shape == (2, 3)


def test_public_result_type_and_canonicalize():
    d = numbax.dtypes
    assert d.result_type(np.float32, 2.0) == np.float32
    assert d.result_type(jnp.ones(2, np.int8), 3) == np.int8
    assert d.result_type(np.int8, np.uint8) == np.int16
    assert d.result_type(1.0, return_weak_type_flag=True) == (np.float64, True)
    assert d.result_type(None) == np.float64
    assert d.canonicalize_dtype(np.float64) == np.float64
    with numbax.enable_x64(False):
        assert d.canonicalize_dtype(np.float64) == np.float32
        assert d.canonicalize_dtype("int64") == np.int32
        assert d.result_type(1.0) == np.float32
    with pytest.raises(TypeError, match="'foo' is not a dtype"):
        d.canonicalize_dtype("foo")
    with pytest.raises(TypeError, match="neither an array, a scalar nor a dtype"):
        d.result_type(object())
    with pytest.raises(ValueError, match="no arguments"):
        d.result_type()


def test_issubdtype_itemsize_scalar_type_finfo_iinfo():
    d = numbax.dtypes
    assert d.issubdtype(np.float32, np.floating) and d.issubdtype(jnp.int8, jnp.integer)
    assert not d.issubdtype(np.int32, np.floating)
    key = numbax.random.key(0)
    assert d.issubdtype(key.dtype, d.prng_key) and d.issubdtype(key.dtype, d.extended)
    assert not d.issubdtype(np.float32, d.extended) and not d.issubdtype(key.dtype, np.integer)
    assert issubclass(d.prng_key, d.extended) and issubclass(d.extended, np.generic)
    assert d.canonicalize_dtype(key.dtype, allow_extended_dtype=True) == key.dtype
    with pytest.raises(ValueError, match="allow_extended_dtype=True"):
        d.canonicalize_dtype(key.dtype)
    assert [d.itemsize_bits(t) for t in (np.bool_, np.int8, np.float32, "complex128")] == \
        [8, 8, 32, 128]
    with pytest.raises(ValueError, match="extended dtype"):
        d.itemsize_bits(key.dtype)
    assert [d.scalar_type_of(x) for x in (True, 1, 1.0, 1j, np.uint8(3), jnp.ones(2, bool),
                                          np.float32(1))] == \
        [bool, int, float, complex, int, bool, float]
    with pytest.raises(TypeError, match="no numeric dtype"):
        d.scalar_type_of("a")
    assert d.finfo(np.float64).eps == np.finfo(np.float64).eps
    assert d.finfo(jnp.ones(2, np.float16)).max == np.finfo(np.float16).max
    assert d.iinfo(np.int64).max == np.iinfo(np.int64).max
    with numbax.enable_x64(False):  # jax.dtypes.finfo does not canonicalise
        assert d.finfo(np.float64).bits == 64
    with pytest.raises(TypeError, match="not a floating dtype"):
        d.finfo(np.int32)
    with pytest.raises(TypeError, match="not an integer dtype"):
        d.iinfo(np.float32)
    assert numbax.float0 is d.float0 and str(d.float0) == STRICT_REF["float0"]
    assert issubclass(d.TypePromotionError, ValueError)


def test_bfloat16_is_ml_dtypes_type():
    import ml_dtypes

    d = numbax.dtypes
    assert d.bfloat16 is ml_dtypes.bfloat16 and jnp.bfloat16.dtype == np.dtype(ml_dtypes.bfloat16)
    assert d.issubdtype(d.bfloat16, np.floating) and d.finfo(d.bfloat16).bits == 16
    assert jnp.ones(2, d.bfloat16).dtype == jnp.bfloat16


def test_array_is_the_type_of_arrays_and_tracers():
    assert isinstance(jnp.ones(2), numbax.Array) and not isinstance(np.ones(2), numbax.Array)
    assert isinstance(numbax.random.key(0), numbax.Array)
    seen = []

    def f(x):
        seen.append(isinstance(x, numbax.Array))
        return x * 2

    numbax.jit(f)(1.0)
    numbax.grad(f)(1.0)
    numbax.vmap(f)(jnp.ones(2))
    assert seen == [True, True, True]
    assert isinstance(jnp.ones(2), numbax.typing.ArrayLike)
    assert isinstance(np.float32(1), numbax.typing.ArrayLike)
    assert isinstance(3, numbax.typing.ArrayLike)
    assert not isinstance("a", numbax.typing.ArrayLike)

    def annotated(x: numbax.typing.ArrayLike, dt: numbax.typing.DTypeLike = None) -> numbax.Array:
        return jnp.asarray(x, dt)

    assert annotated([1, 2], np.float32).dtype == np.float32
    assert isinstance(numbax.devices()[0], numbax.Device)


def test_typeof():
    assert numbax.typeof(jnp.ones((2, 3), np.float32)) == ShapedArray((2, 3), np.float32)
    assert numbax.typeof(1.0).weak_type and numbax.typeof(np.int8(1)).dtype == np.int8
    out = []
    numbax.jit(lambda x: out.append(numbax.typeof(x)) or x)(np.ones(4, np.float32))
    assert out == [ShapedArray((4,), np.float32)]
    with pytest.raises(TypeError, match="numbax.typeof: x of type str"):
        numbax.typeof("a")
