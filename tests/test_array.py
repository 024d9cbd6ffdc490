"""numbax.Array: immutability, numpy interop, operators, methods and repr."""
import pickle

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


@pytest.fixture
def a():
    return jnp.asarray(np.arange(6.0).reshape(2, 3))


def test_attributes(a):
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6 and a.dtype == np.float64
    assert a.itemsize == 8 and a.nbytes == 48
    assert a.T.shape == (3, 2)
    assert a.devices() == {numbax.devices()[0]}
    assert a.block_until_ready() is a


def test_np_asarray_is_zero_copy_and_read_only(a):
    view = np.asarray(a)
    assert view is np.asarray(a)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = 5.0


def test_asarray_copies_numpy_input():
    src = np.ones(3)
    arr = jnp.asarray(src)
    src[0] = 7.0
    assert float(arr[0]) == 1.0
    assert src.flags.writeable


def test_item_assignment_points_to_at(a):
    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        a[0] = 1.0


def test_repr_like_jax():
    assert repr(jnp.asarray(np.array([1.0, 2.0], np.float32))) == (
        "Array([1., 2.], dtype=float32)")
    assert repr(jnp.asarray(np.array([1, 2], np.int32))) == "Array([1, 2], dtype=int32)"
    assert repr(jnp.asarray(2.0)) == "Array(2., dtype=float64, weak_type=True)"


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__",
                                "__floordiv__", "__mod__", "__pow__", "__lt__", "__le__",
                                "__gt__", "__ge__", "__eq__", "__ne__"])
def test_binary_operators_match_numpy(a, op):
    x = np.arange(6.0).reshape(2, 3) + 1
    y = np.array([1.5, -2.0, 3.0])
    got = getattr(jnp.asarray(x), op)(y)
    np.testing.assert_allclose(np.asarray(got), getattr(x, op)(y))
    r = "__r" + op[2:]
    if hasattr(np.ndarray, r) and op not in ("__lt__", "__le__", "__gt__", "__ge__",
                                             "__eq__", "__ne__"):
        np.testing.assert_allclose(np.asarray(getattr(jnp.asarray(x), r)(2.0)),
                                   getattr(x, r)(2.0))


def test_integer_and_bitwise_operators():
    x = np.array([5, -3, 8], np.int32)
    ax = jnp.asarray(x)
    for op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__",
               "__floordiv__", "__mod__"):
        np.testing.assert_array_equal(np.asarray(getattr(ax, op)(2)), getattr(x, op)(2))
    np.testing.assert_array_equal(np.asarray(~ax), ~x)
    np.testing.assert_array_equal(np.asarray(-ax), -x)
    np.testing.assert_array_equal(np.asarray(abs(ax)), abs(x))


def test_matmul_operator():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(jnp.asarray(x) @ x.T), x @ x.T)


def test_methods_match_numpy(a):
    x = np.asarray(a)
    np.testing.assert_allclose(np.asarray(a.sum(axis=0)), x.sum(axis=0))
    np.testing.assert_allclose(float(a.mean()), x.mean())
    np.testing.assert_allclose(np.asarray(a.max(axis=1)), x.max(axis=1))
    np.testing.assert_allclose(np.asarray(a.min()), x.min())
    assert int(a.argmax()) == x.argmax()
    np.testing.assert_allclose(np.asarray(a.reshape(3, 2)), x.reshape(3, 2))
    np.testing.assert_allclose(np.asarray(a.reshape((6,))), x.reshape(6))
    np.testing.assert_allclose(np.asarray(a.transpose()), x.T)
    assert a.astype(np.int32).dtype == np.int32
    assert a.tolist() == x.tolist()
    assert a[1, 2].item() == 5.0
    np.testing.assert_allclose(float(np.std(a)), np.std(x))


def test_getitem_basic(a):
    x = np.asarray(a)
    for idx in [0, -1, (1, 2), slice(None, None, -1), (Ellipsis, 1), (None, 0),
                (slice(0, 1), slice(1, None))]:
        np.testing.assert_array_equal(np.asarray(a[idx]), x[idx])
    np.testing.assert_array_equal(np.asarray(a[np.array([1, 0, 1])]), x[[1, 0, 1]])


def test_at_updates_are_out_of_place(a):
    x = np.asarray(a).copy()
    b = a.at[0, 1].set(10.0)
    assert float(a[0, 1]) == 1.0 and float(b[0, 1]) == 10.0
    np.testing.assert_array_equal(np.asarray(a.at[:, 0].add(1.0))[:, 0], x[:, 0] + 1)
    np.testing.assert_array_equal(np.asarray(a.at[1].multiply(2.0))[1], x[1] * 2)
    np.testing.assert_array_equal(np.asarray(a.at[0].min(0.5))[0], np.minimum(x[0], 0.5))
    np.testing.assert_array_equal(np.asarray(a.at[0].max(1.5))[0], np.maximum(x[0], 1.5))
    np.testing.assert_array_equal(np.asarray(a.at[1].get()), x[1])


def test_conversions_and_iteration():
    v = jnp.asarray(np.array([1.0, 2.0]))
    assert [float(e) for e in v] == [1.0, 2.0]
    assert len(v) == 2
    assert float(jnp.asarray(3.5)) == 3.5 and int(jnp.asarray(3)) == 3
    assert bool(jnp.asarray(True))
    assert f"{jnp.asarray(1.25):.1f}" == "1.2"
    with pytest.raises(TypeError, match="unhashable"):
        hash(v)


def test_pickle_round_trip():
    v = jnp.asarray(np.arange(4.0))
    w = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(np.asarray(w), np.arange(4.0))
    assert isinstance(w, numbax.Array)
