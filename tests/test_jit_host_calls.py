"""jit's fast path for calls with numpy arrays and Python/numpy scalars: from the second call of
a signature it skips the general call, and gives what the general path gives."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.jit import JitWrapped

RNG = np.random.default_rng(7)


@pytest.fixture
def general_path_forbidden(monkeypatch):
    """After the first call of a signature, a call through jit's general path fails the test."""
    calls = {"n": 0}
    general = JitWrapped._call_slow

    def counted(self, args, kwargs):
        calls["n"] += 1
        return general(self, args, kwargs)

    monkeypatch.setattr(JitWrapped, "_call_slow", counted)
    return calls


def _twice(f, *args):
    first = f(*args)
    return first, f(*args)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "readonly", "big-endian", "float32"])
def test_numpy_arguments_of_every_layout_match_numpy(layout, general_path_forbidden):
    x = RNG.normal(size=(6, 5))
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "strided":
        x = RNG.normal(size=(12, 10))[::2, ::2]
    elif layout == "readonly":
        x.setflags(write=False)
    elif layout == "big-endian":
        x = x.astype(">f8")
    elif layout == "float32":
        x = x.astype(np.float32)
    f = numbax.jit(lambda x, y: jnp.tanh(x) * y + 1.0)
    first, second = _twice(f, x, 3.0)
    expected = np.tanh(x.astype(x.dtype.newbyteorder("="))) * 3.0 + 1.0
    # tanh(x) * 3 + 1 cancels near tanh(x) = -1/3: a few float32 ulps of tanh, absolutely
    tol = 1e-6 if x.dtype == np.float32 else 1e-12
    for got in (first, second):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(got), expected, rtol=tol, atol=tol)
    assert general_path_forbidden["n"] == 1
    f(np.ascontiguousarray(x), 3.0)  # another layout of the same shape: its own signature
    assert general_path_forbidden["n"] == (2 if layout in ("F", "strided") else 1)


def test_scalar_kinds_keep_their_types(general_path_forbidden):
    f = numbax.jit(lambda x, s: x * s)
    x = np.arange(4, dtype=np.float32)
    for s in (2, 2.5, True, np.float64(2.5), np.int8(3)):
        first, second = _twice(f, x, s)
        expected = x * s  # numpy's promotion: Python scalars are weak, numpy scalars are not
        assert first.dtype == second.dtype == np.result_type(x, s)
        np.testing.assert_array_equal(np.asarray(second), expected)
    assert general_path_forbidden["n"] == 5


def test_python_ints_past_int32_take_the_general_path():
    f = numbax.jit(lambda x, s: x + s)
    x = np.arange(3)
    np.testing.assert_array_equal(np.asarray(f(x, 2**40)), x + 2**40)
    np.testing.assert_array_equal(np.asarray(f(x, 2**40)), x + 2**40)
    with pytest.raises(OverflowError):
        f(x, 2**70)


def test_results_never_alias_the_callers_numpy_arrays():
    """Identity, reshape and slice results are copied on every call, the fast path included."""
    f = numbax.jit(lambda x: (x, x.reshape(-1), x[1:], x * 2.0))
    for _ in range(3):
        x = np.arange(6.0).reshape(2, 3)
        ident, flat, tail, doubled = f(x)
        x[...] = -1.0
        np.testing.assert_array_equal(np.asarray(ident), np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal(np.asarray(flat), np.arange(6.0))
        np.testing.assert_array_equal(np.asarray(tail), np.arange(3.0, 6.0).reshape(1, 3))
        np.testing.assert_array_equal(np.asarray(doubled), 2.0 * np.arange(6.0).reshape(2, 3))


def test_arrays_and_numpy_mixed(general_path_forbidden):
    w = jnp.asarray(RNG.normal(size=(3, 2)))
    f = numbax.jit(lambda x, w: x @ w)
    x = RNG.normal(size=(4, 3))
    first, second = _twice(f, x, w)
    np.testing.assert_allclose(np.asarray(second), x @ np.asarray(w), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))
    assert general_path_forbidden["n"] == 1


def test_x64_off_converts_numpy_float64_like_the_general_path(general_path_forbidden):
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", False)
    try:
        f = numbax.jit(lambda x: x / 3.0)
        x = RNG.normal(size=5)
        first, second = _twice(f, x)
    finally:
        numbax.config.update("jax_enable_x64", prev)
    assert first.dtype == second.dtype == np.float32
    np.testing.assert_allclose(np.asarray(second), (x / 3.0).astype(np.float32), rtol=1e-6)
    assert general_path_forbidden["n"] == 1


def test_donating_functions_keep_the_general_path():
    f = numbax.jit(lambda x: x + 1.0, donate_argnums=0)
    x = np.arange(3.0)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(f(x)), x + 1.0)
    np.testing.assert_array_equal(x, np.arange(3.0))  # a numpy argument is never written
