"""Eager elementwise calls on host arrays skip the general path (numpy/eager_elementwise.py):
every result must equal the general path's (value bits, dtype, weak type, shape), every error
must be the general path's, the dtypes must be JAX's (its recorded promotion tables), and
nothing may skip a staging trace or the NaN checks."""
import functools

import ml_dtypes
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.numpy import eager_elementwise

from .jax_promotion import jax_result

BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
          "bitwise_xor", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "true_divide"]
UNARY = ["negative", "sign", "exp", "exp2", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan",
         "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "sqrt",
         "cbrt", "absolute"]
DTYPES = ["int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "float16", "float32",
          "float64", "bool", "complex64", "bfloat16"]
SCALARS = [0, 3, -1, 300, 2**40, 2**70, 0.5, -2.25, 1e30, float("nan"), float("inf")]


def _array(dtype: str, weak: bool = False):
    values = np.array([-2.5, -1.0, 0.0, 0.5, 3.0, 100.0]).astype(
        ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    return lax.convert_element_type(jnp.asarray(values), values.dtype, weak)


@pytest.fixture
def general_path(monkeypatch):
    """Calls `fn` with the shortcut switched off."""
    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(eager_elementwise, "_eager_host", lambda *operands: False)
            return _outcome(fn)
    return run


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the two paths must raise the same class
        return type(e)
    return out


def _assert_same(fast, general):
    if isinstance(general, type):
        assert fast is general, f"general path raised {general.__name__}, shortcut {fast!r}"
        return
    assert not isinstance(fast, type), f"shortcut raised {fast.__name__}"
    assert type(fast) is type(general)
    assert (fast.dtype, fast.weak_type, fast.shape) == (
        general.dtype, general.weak_type, general.shape)
    assert np.asarray(fast).tobytes() == np.asarray(general).tobytes()


def _operand_pairs(dtype):
    strong, weak = _array(dtype), _array(dtype, weak=True)
    yield strong, strong
    yield strong, weak
    yield weak, weak
    yield strong, _array(dtype)[::-1]  # another buffer, a reversed view
    yield strong[2], strong  # a 0-d array beside a vector
    yield strong, strong[:, None]  # two shapes that broadcast: the general path's
    for scalar in SCALARS:
        yield strong, scalar
        yield scalar, weak
    yield strong, np.float32(2.0)  # numpy scalars and arrays: the general path's
    yield strong, np.ones(6, np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_calls_equal_the_general_path(name, dtype, general_path):
    fn = getattr(jnp, name)
    for x1, x2 in _operand_pairs(dtype):
        call = functools.partial(fn, x1, x2)
        _assert_same(_outcome(call), general_path(call))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_calls_equal_the_general_path(name, dtype, general_path):
    fn = getattr(jnp, name)
    for x in (_array(dtype), _array(dtype, weak=True), _array(dtype)[::2], _array(dtype)[1]):
        call = functools.partial(fn, x)
        _assert_same(_outcome(call), general_path(call))


def test_operators_equal_the_general_path(general_path):
    x, i = _array("float32"), jnp.asarray(3)
    cases = [lambda: x * 0.999, lambda: 2 - x, lambda: x / 4, lambda: 1 / x, lambda: -x,
             lambda: i + 1, lambda: i < 20000, lambda: x >= 0.5, lambda: i * i,
             lambda: (x == x[3]), lambda: x / x]
    for case in cases:
        _assert_same(_outcome(case), general_path(case))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "float32",
                                   "float64"])
@pytest.mark.parametrize("scalar", ["1", "1.0"])
def test_dtypes_are_jaxs(dtype, scalar):
    x = _array(dtype)
    value = int(scalar) if scalar == "1" else float(scalar)
    for name in ("add", "multiply", "maximum", "subtract"):
        out = getattr(jnp, name)(x, value)
        assert (str(out.dtype), out.weak_type) == tuple(jax_result([dtype, scalar]))
        assert (str((value * x).dtype)) == jax_result([scalar, dtype])[0]


def test_values_are_numpys():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    a = jnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a * 0.5 + 1), x * np.float32(0.5) + np.float32(1))
    np.testing.assert_array_equal(np.asarray(a / 3), x / np.float32(3))
    np.testing.assert_array_equal(np.asarray(jnp.maximum(a, 0)), np.maximum(x, 0))
    np.testing.assert_allclose(np.asarray(jnp.tanh(a)), np.tanh(x), rtol=2e-7)
    np.testing.assert_array_equal(np.asarray(a < 1.5), x < 1.5)


def test_the_common_calls_take_the_shortcut():
    x, i = _array("float32"), jnp.asarray(3)
    assert eager_elementwise.binary(lax.mul_p, x, 0.5) is not None
    assert eager_elementwise.binary(lax.lt_p, i, 20000) is not None
    assert eager_elementwise.binary(lax.add_p, x, x) is not None
    assert eager_elementwise.unary(lax.tanh_p, x, "f") is not None
    assert eager_elementwise.unary(lax.abs_p, _array("int32"), "if") is not None
    # integers divide as floats in true_divide: not the shortcut's integer division
    assert eager_elementwise.binary(lax.div_p, i, 2, kinds="f") is None
    assert jnp.true_divide(i, 2) == 1.5


def test_an_int_too_wide_raises_as_on_the_general_path(general_path):
    x = _array("int32")
    with numbax.enable_x64(False):
        fast = _outcome(lambda: x + 2**40)
        assert isinstance(fast, type) and issubclass(fast, OverflowError)
        _assert_same(fast, general_path(lambda: x + 2**40))


def test_constants_under_jit_are_staged_not_evaluated():
    c = _array("float32")
    jaxpr = numbax.make_jaxpr(lambda: c * 2.0 + jnp.tanh(c))()
    names = [eqn.primitive.name for eqn in jaxpr.eqns]
    assert "mul" in names and "tanh" in names and "add" in names
    assert np.asarray(numbax.jit(lambda: c * 2.0)()).tolist() == (np.asarray(c) * 2).tolist()


def test_nan_checks_see_the_shortcuts_results():
    x = _array("float32")
    with numbax.debug_nans(True), pytest.raises(FloatingPointError):
        jnp.log(x)
    with numbax.debug_nans(True), pytest.raises(FloatingPointError):
        x * float("nan")
    assert np.isnan(np.asarray(jnp.log(x))[0])  # and without them, numpy's quiet NaN
